"""core/v1 ResourceQuotas (``pkg/registry/core/resourcequota``): spec/status split, validation,
the request-over-limit warnings, and ``kubectl get quota``'s columns.

Data flow: a create starts with an empty status (the resourcequota-controller fills
``status.hard``/``status.used``; quota admission charges ``status.used``); a write of
the main resource keeps the stored status, a /status write the stored spec. Every
quantity is stored in Go's canonical form (``1000m`` → ``1``), as kube-apiserver
re-encodes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.quantity import Quantity
from pykcm.api.validation import (
    Cause,
    GoValue,
    go_string_slice,
    invalid,
    required,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core.resource_names import (
    canonical_resource_list,
    validate_quantity_value,
    validate_quota_resource_name,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["ResourceQuotaStrategy"]

_SCOPES: Final = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort",
                  "PriorityClass", "VolumeAttributesClass", "CrossNamespacePodAffinity")
_POD_COMPUTE: Final = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                                 "requests.memory"})
_STANDARD_QUOTA: Final = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
    "persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers"})
_CONFLICTS: Final = ({"BestEffort", "NotBestEffort"}, {"Terminating", "NotTerminating"})
_EXISTS_ONLY: Final = frozenset({"BestEffort", "NotBestEffort", "Terminating", "NotTerminating",
                                 "CrossNamespacePodAffinity"})


def _is_standard_quota_name(name: str) -> bool:
    return name in _STANDARD_QUOTA or name.startswith("requests.hugepages-")


def _scope_valid_for(scope: str, resource: str) -> bool:
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"):
        return resource == "pods" or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource == "pods"
    if scope == "VolumeAttributesClass":
        return resource in ("persistentvolumeclaims", "requests.storage")
    return True


def _validate_resource_list(rl: Any, path: str) -> list[Cause]:
    errs: list[Cause] = []
    for k, v in (rl or {}).items():
        p = f"{path}[{k}]"
        errs += validate_quota_resource_name(k, p)
        errs += validate_quantity_value(k, v, p)
    return errs


def _validate_scopes(spec: Mapping[str, Any]) -> list[Cause]:
    scopes = list(spec.get("scopes") or ())
    if not scopes:
        return []
    hard = sorted((spec.get("hard") or {}).keys())
    value = go_string_slice(scopes)
    errs: list[Cause] = []
    for scope in scopes:
        if scope not in _SCOPES:
            errs.append(invalid("spec.scopes", value, "unsupported scope"))
        for k in hard:
            if _is_standard_quota_name(k) and not _scope_valid_for(scope, k):
                errs.append(invalid("spec.scopes", value,
                                    "unsupported scope applied to resource"))
    errs += [invalid("spec.scopes", value, "conflicting scopes")
             for pair in _CONFLICTS if pair <= set(scopes)]
    return errs


def _validate_scope_selector(spec: Mapping[str, Any]) -> list[Cause]:
    selector = spec.get("scopeSelector")
    if selector is None:
        return []
    path = "spec.scopeSelector.matchExpressions"
    hard = sorted((spec.get("hard") or {}).keys())
    errs: list[Cause] = []
    names: set[str] = set()
    for req in selector.get("matchExpressions") or ():
        scope, op, values = req.get("scopeName") or "", req.get("operator") or "", \
            req.get("values") or []
        if scope not in _SCOPES:
            errs.append(invalid(path + ".scopeName", scope, "unsupported scope"))
        for k in hard:
            if _is_standard_quota_name(k) and not _scope_valid_for(scope, k):
                errs.append(invalid(path, _selector_value(selector),
                                    "unsupported scope applied to resource"))
        if scope in _EXISTS_ONLY and op != "Exists":
            errs.append(invalid(
                path + ".operator", op,
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
                "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(required(path + ".values",
                                     "must be at least one value when `operator` is 'In' or "
                                     "'NotIn' for scope selector"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(invalid(path + ".values", go_string_slice(values),
                                    "must be no value when `operator` is 'Exist' or "
                                    "'DoesNotExist' for scope selector"))
        else:
            errs.append(invalid(path + ".operator", op, "not a valid selector operator"))
        names.add(scope)
    errs += [invalid(path, go_string_slice(spec.get("scopes")) if spec.get("scopes") else None,
                     "conflicting scopes") for pair in _CONFLICTS if pair <= names]
    return errs


def _selector_value(selector: Mapping[str, Any]) -> GoValue:
    """A ScopeSelector as field.Error prints it: its JSON, fields in Go's order."""
    exprs = []
    for r in selector.get("matchExpressions") or ():
        e = {"scopeName": r.get("scopeName"), "operator": r.get("operator")}
        if r.get("values"):
            e["values"] = r["values"]
        exprs.append(e)
    return GoValue(json.dumps({"matchExpressions": exprs}, separators=(",", ":")))


def validate_spec(spec: Mapping[str, Any]) -> list[Cause]:
    return (_validate_resource_list(spec.get("hard"), "spec.hard") + _validate_scopes(spec)
            + _validate_scope_selector(spec))


def _validate_status(status: Mapping[str, Any]) -> list[Cause]:
    return (_validate_resource_list(status.get("hard"), "status.hard")
            + _validate_resource_list(status.get("used"), "status.used"))


def _quota_row(obj: pr.Obj, now: int) -> pr.Row:
    status = pr.as_dict(obj.get("status"))
    hard, used = pr.as_dict(status.get("hard")), pr.as_dict(status.get("used"))
    request: list[str] = []
    limit: list[str] = []
    for resource in sorted(hard):
        column = limit if resource.split(".")[0] == "limits" and "." in resource else request
        used_q = str(Quantity.of(used[resource])) if resource in used else "0"
        column.append(f"{resource}: {used_q}/{Quantity.of(hard[resource])}")
    name = pr.as_dict(obj.get("metadata")).get("name")
    return pr.Row([name, ", ".join(request), ", ".join(limit), pr.age(obj, now)])


_QUOTA_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Request", "string",
              "Request represents a minimum amount of cpu/memory that a container may consume."),
    pr.column("Limit", "string", "Limits control the maximum amount of cpu/memory that a "
              "container may use independent of contention on the node."),
    pr.AGE_COLUMN,
)


@register
class ResourceQuotaStrategy(Strategy):
    kind = "ResourceQuota"
    printer = pr.Printer(_QUOTA_COLUMNS, _quota_row)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}  # a struct: Go encodes the empty status as {}

    def default(self, obj: Obj, *, create: bool) -> None:
        spec, status = obj.get("spec"), obj.get("status")
        if isinstance(spec, dict) and isinstance(spec.get("hard"), dict):
            spec["hard"] = canonical_resource_list(spec["hard"])
        if isinstance(status, dict):
            for k in ("hard", "used"):
                if isinstance(status.get(k), dict):
                    status[k] = canonical_resource_list(status[k])

    def validate_create(self, obj: Obj) -> list[Cause]:
        return (super().validate_create(obj) + validate_spec(obj.get("spec") or {})
                + _validate_status(obj.get("status") or {}))

    def warnings_on_create(self, obj: Obj) -> list[str]:
        hard = (obj.get("spec") or {}).get("hard") or {}
        out = []
        for r in ("cpu", "memory", "storage", "ephemeral-storage"):
            req_name = f"requests.{r}"
            request = hard.get(req_name)
            if request is None and r in ("cpu", "memory") and r in hard:
                req_name, request = r, hard[r]
            lim_name = f"limits.{r}"
            limit = hard.get(lim_name)
            if request is not None and limit is not None and \
                    Quantity.of(request).value > Quantity.of(limit).value:
                out.append(f"ResourceQuota {req_name} ({Quantity.of(request)}) should be less "
                           f"than {lim_name} ({Quantity.of(limit)})")
        return out

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        spec = new.get("spec") or {}
        errs += validate_spec(spec)
        if set(spec.get("scopes") or ()) != set((old.get("spec") or {}).get("scopes") or ()):
            errs.append(invalid("spec.scopes", go_string_slice(spec.get("scopes")),
                                "field is immutable"))
        return errs

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        # (upstream also requires metadata.resourceVersion here; the store has filled it
        # in from the stored object for an update without one before validation runs)
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        return errs + _validate_status(new.get("status") or {})

