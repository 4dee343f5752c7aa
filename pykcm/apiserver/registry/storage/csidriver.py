"""storage.k8s.io/v1 CSIDrivers (kube-apiserver ``pkg/registry/storage/csidriver`` and
``pkg/apis/storage/validation``): defaults, validation, generation and printer.

- defaults (SetDefaults_CSIDriver): attachRequired true, podInfoOnMount, storageCapacity,
  requiresRepublish and seLinuxMount false, fsGroupPolicy ReadWriteOnceWithFSType,
  volumeLifecycleModes [Persistent]; preventPodSchedulingIfMissing dropped (its
  VolumeLimitScaling gate is off in v1.36);
- validation: the name a DNS subdomain; the defaulted booleans required, fsGroupPolicy and
  the lifecycle modes among upstream's values, token request audiences unique and their
  expirations between 10 minutes and 2^32 s, nodeAllocatableUpdatePeriodSeconds >= 10,
  serviceAccountTokenInSecrets only with tokenRequests; attachRequired (upstream's path
  ``spec.attachedRequired``) and volumeLifecycleModes immutable;
- no generation on create, any later change of the spec adds one (upstream's strategy);
  updates need a resourceVersion;
- a warning when tokenRequests come without serviceAccountTokenInSecrets;
- printer: Name, AttachRequired, PodInfoOnMount, StorageCapacity, TokenRequests,
  RequiresRepublish, Modes, Age.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    duplicate,
    invalid,
    not_supported,
    required,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.field_docs import field_doc
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["CSIDriverStrategy"]

_FS_GROUP_POLICIES: Final = ("File", "None", "ReadWriteOnceWithFSType")
_MODES: Final = ("Persistent", "Ephemeral")
_SPEC_ORDER: Final = ("attachRequired", "podInfoOnMount", "volumeLifecycleModes",
                      "storageCapacity", "fsGroupPolicy", "tokenRequests", "requiresRepublish",
                      "seLinuxMount", "nodeAllocatableUpdatePeriodSeconds",
                      "serviceAccountTokenInSecrets", "preventPodSchedulingIfMissing")
_BOOL_DEFAULTS: Final = (("attachRequired", True), ("podInfoOnMount", False),
                         ("storageCapacity", False), ("requiresRepublish", False),
                         ("seLinuxMount", False))


def _default(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    for key, value in _BOOL_DEFAULTS:
        if spec.get(key) is None:
            spec[key] = value
    if spec.get("fsGroupPolicy") is None:
        spec["fsGroupPolicy"] = "ReadWriteOnceWithFSType"
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    ordered = {k: spec[k] for k in _SPEC_ORDER if k in spec}
    ordered.update((k, v) for k, v in spec.items() if k not in ordered)
    spec.clear()
    spec.update(ordered)


def _validate_token_requests(requests: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, tr in enumerate(requests):
        tr = pr.as_dict(tr)
        p = f"{path}[{i}]"
        audience = pr.as_str(tr.get("audience"))
        if audience in seen:
            errs.append(duplicate(f"{p}.audience", audience))
            continue
        seen.add(audience)
        seconds = tr.get("expirationSeconds")
        if seconds is None:
            continue
        if seconds < 600:
            errs.append(invalid(f"{p}.expirationSeconds", seconds,
                                "may not specify a duration less than 10 minutes"))
        if seconds > 1 << 32:
            errs.append(invalid(f"{p}.expirationSeconds", seconds,
                                "may not specify a duration larger than 2^32 seconds"))
    return errs


def _validate_spec(spec: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    for key, path in (("attachRequired", "spec.attachedRequired"),
                      ("podInfoOnMount", "spec.podInfoOnMount"),
                      ("storageCapacity", "spec.storageCapacity")):
        if spec.get(key) is None:
            errs.append(required(path, ""))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in _FS_GROUP_POLICIES:
        errs.append(not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES))
    tokens = spec.get("tokenRequests")
    errs += _validate_token_requests(pr.as_list(tokens), "spec.tokenRequests")
    for mode in pr.as_list(spec.get("volumeLifecycleModes")):
        if mode not in _MODES:
            errs.append(not_supported("spec.volumeLifecycleModes", mode, _MODES))
    if spec.get("seLinuxMount") is None:
        errs.append(required("spec.seLinuxMount", ""))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if period is not None and period < 10:
        errs.append(invalid("spec.nodeAllocatableUpdatePeriodSeconds", period,
                            "must be greater than or equal to 10 seconds"))
    in_secrets = spec.get("serviceAccountTokenInSecrets")
    if in_secrets is not None and not tokens:
        errs.append(invalid("spec.serviceAccountTokenInSecrets", GoValue(f"{in_secrets}".lower()),
                            "serviceAccountTokenInSecrets is set but no tokenRequests are "
                            "specified"))
    return errs


_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("AttachRequired", "boolean", field_doc("storage.v1.CSIDriverSpec", "attachRequired")),
    pr.column("PodInfoOnMount", "boolean", field_doc("storage.v1.CSIDriverSpec", "podInfoOnMount")),
    pr.column("StorageCapacity", "boolean", field_doc("storage.v1.CSIDriverSpec", "storageCapacity")),
    pr.column("TokenRequests", "string", field_doc("storage.v1.CSIDriverSpec", "tokenRequests")),
    pr.column("RequiresRepublish", "boolean", field_doc("storage.v1.CSIDriverSpec", "requiresRepublish")),
    pr.column("Modes", "string", field_doc("storage.v1.CSIDriverSpec", "volumeLifecycleModes")),
    pr.AGE_COLUMN,
)


def _flag(spec: Mapping[str, Any], key: str, default: bool) -> bool:
    v = spec.get(key)
    return default if v is None else bool(v)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    modes = ",".join(pr.as_str(m) for m in pr.as_list(spec.get("volumeLifecycleModes")))
    tokens = spec.get("tokenRequests")
    token_cell = "<unset>" if tokens is None else ",".join(
        pr.as_str(pr.as_dict(t).get("audience")) for t in pr.as_list(tokens))
    return pr.Row([pr.object_name(obj), _flag(spec, "attachRequired", True),
                   _flag(spec, "podInfoOnMount", False), _flag(spec, "storageCapacity", False),
                   token_cell, _flag(spec, "requiresRepublish", False), modes or "<none>",
                   pr.age(obj, now)])


_TOKEN_WARNING: Final = ("spec.serviceAccountTokenInSecrets is unset; if supported by this CSI "
                         "driver, set to true to prevent possible logging of tokens in volume "
                         "attributes")


def _token_warning(spec: Mapping[str, Any]) -> list[str]:
    """CSIServiceAccountTokenSecrets (on in v1.36): token requests without the choice."""
    if pr.as_list(spec.get("tokenRequests")) and spec.get("serviceAccountTokenInSecrets") is None:
        return [_TOKEN_WARNING]
    return []


@register
class CSIDriverStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "CSIDriver"
    printer = pr.Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # the VolumeLimitScaling gate is off in v1.36: its field is dropped
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.pop("preventPodSchedulingIfMissing", None)
        # (no generation on create: upstream's strategy only moves it on updates)
        obj["metadata"].pop("generation", None)

    def prepare_kind_for_update(self, new: Obj, old: Obj) -> None:
        spec = new.get("spec")
        if isinstance(spec, dict) and "preventPodSchedulingIfMissing" not in pr.as_dict(
                old.get("spec")):
            spec.pop("preventPodSchedulingIfMissing", None)

    def finish_update(self, new: Obj, old: Obj) -> None:
        # any change of the spec is a new generation, counted from 0 (never set on create)
        meta, old_meta = new["metadata"], old["metadata"]
        generation = old_meta.get("generation", 0)
        if new.get("spec") != old.get("spec"):
            generation += 1
        if generation:
            meta["generation"] = generation
        else:
            meta.pop("generation", None)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return _token_warning(pr.as_dict(obj.get("spec")))

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        spec = pr.as_dict(new.get("spec"))
        if spec.get("tokenRequests") == pr.as_dict(old.get("spec")).get("tokenRequests"):
            return []
        return _token_warning(spec)

    def validate_create(self, obj: Obj) -> list[Cause]:
        errs = validate_object_meta(obj.get("metadata"), namespaced=False)
        return errs + _validate_spec(pr.as_dict(obj.get("spec")))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        spec, old_spec = pr.as_dict(new.get("spec")), pr.as_dict(old.get("spec"))
        errs += _validate_spec(spec)
        errs += validate_immutable(spec.get("attachRequired"), old_spec.get("attachRequired"),
                                   "spec.attachedRequired")
        modes = spec.get("volumeLifecycleModes")
        errs += validate_immutable(modes, old_spec.get("volumeLifecycleModes"),
                                   "spec.volumeLifecycleModes",
                                   rendered=GoValue(json.dumps(modes, separators=(",", ":"))))
        return errs
