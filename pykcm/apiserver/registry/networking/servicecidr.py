"""networking.k8s.io/v1 ServiceCIDRs (kube-apiserver ``pkg/registry/networking/servicecidr``):
status/spec split, validation, printer, and the default ``kubernetes`` ServiceCIDR.

- create: the status is reset to the zero one (ServiceCIDRStatusFieldWiping); update: the status kept;
  a /status write keeps the spec and the metadata a status write may not change
  (``ResetObjectMetaForStatus``: labels, annotations, finalizers, owner references);
- validation: one or two ``spec.cidrs``, each a strict CIDR in canonical form, two of
  them of different IP families; on update the CIDRs are immutable but for a second
  CIDR added to a single-stack one (dual stack conversion);
- printer: Name, CIDRs, Age;
- :func:`default_service_cidr`: the ``kubernetes`` object kube-apiserver's default
  ServiceCIDR controller keeps for ``--service-cluster-ip-range`` (Ready condition with
  its message), created at start by the server.

No generation (the kind has no observedGeneration) and no finalizer: kube-controller-
manager's servicecidrs controller adds ``networking.k8s.io/service-cidr-finalizer`` and
the Ready conditions of user-made ServiceCIDRs; pykcm has no such controller.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    GoValue,
    invalid,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.networking.ip_fields import ip_family, is_valid_cidr
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_list,
    as_str,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["DEFAULT_SERVICE_CIDR_NAME", "ServiceCIDRStrategy", "default_service_cidr"]

DEFAULT_SERVICE_CIDR_NAME: Final = "kubernetes"


def default_service_cidr(cidrs: list[str], now: str) -> Obj:
    """The default ServiceCIDR as kube-apiserver creates it (its status written at once)."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": DEFAULT_SERVICE_CIDR_NAME},
            "spec": {"cidrs": list(cidrs)},
            "status": {"conditions": [{
                "type": "Ready", "status": "True", "lastTransitionTime": now, "reason": "",
                "message": "Kubernetes default Service CIDR is ready"}]}}


def _go_strings(values: list[Any]) -> GoValue:
    return GoValue(json.dumps([as_str(v) for v in values], separators=(",", ":")))


def _validate_cidrs(cidrs: list[Any]) -> list[Cause]:
    path = "spec.cidrs"
    if not cidrs:
        return [required(path, "at least one CIDR required")]
    if len(cidrs) > 2:
        # (the internal ServiceCIDRSpec as JSON: its Go field name, no json tag)
        return [invalid(path, GoValue('{"CIDRs":' + str(_go_strings(cidrs)) + "}"),
                        "may only hold up to 2 values")]
    errs: list[Cause] = []
    for i, cidr in enumerate(cidrs):
        errs += is_valid_cidr(f"{path}[{i}]", as_str(cidr))
    if len(cidrs) == 2:
        first = ip_family(as_str(cidrs[0]))
        if first and first == ip_family(as_str(cidrs[1])):
            errs.append(invalid(path, _go_strings(cidrs),
                                "may specify no more than one IP for each IP family, i.e "
                                "192.168.0.0/24 and 2001:db8::/64"))
    return errs


def _validate_update_cidrs(new: list[Any], old: list[Any]) -> list[Cause]:
    path = "spec.cidrs"
    if len(new) == len(old):
        return [invalid(f"{path}[{i}]", as_str(new[i]), FIELD_IMMUTABLE_ERROR_MSG)
                for i, cidr in enumerate(old) if cidr != new[i]]
    if len(old) == 1 and len(new) == 2:
        errs = []
        if new[0] != old[0]:
            errs.append(invalid(f"{path}[0]", as_str(new[0]), FIELD_IMMUTABLE_ERROR_MSG))
        return errs + _validate_cidrs(new)
    return [invalid(path, _go_strings(new), FIELD_IMMUTABLE_ERROR_MSG)]


_COLUMNS: Final = (
    NAME_COLUMN,
    column("CIDRs", "string",
           'CIDRs defines the IP blocks in CIDR notation (e.g. "192.168.0.0/24" or '
           '"2001:db8::/64") from which to assign service cluster IPs. Max of two CIDRs is '
           "allowed, one of each IP family. This field is immutable."),
    AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    cidrs = as_list(as_dict(obj.get("spec")).get("cidrs"))
    return Row([object_name(obj), ",".join(as_str(c) for c in cidrs), age(obj, now)])


@register
class ServiceCIDRStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "ServiceCIDR"
    printer = Printer(_COLUMNS, _row)
    status_keeps_metadata = ("labels", "annotations", "finalizers", "ownerReferences")

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}  # the zero ServiceCIDRStatus, as Go encodes it

    def validate_create(self, obj: Obj) -> list[Cause]:
        errs = validate_object_meta(obj.get("metadata"), namespaced=False)
        return errs + _validate_cidrs(as_list(as_dict(obj.get("spec")).get("cidrs")))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        return errs + _validate_update_cidrs(as_list(as_dict(new.get("spec")).get("cidrs")),
                                             as_list(as_dict(old.get("spec")).get("cidrs")))
