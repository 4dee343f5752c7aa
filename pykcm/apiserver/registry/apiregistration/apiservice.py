"""apiregistration.k8s.io/v1 APIServices (kube-aggregator's ``pkg/registry/apiservice`` and
``pkg/apis/apiregistration/validation``): stored, the local ones made at start, printer.

- the local APIServices: one per group-version pykcm serves that kube-apiserver v1.36
  registers (labelled ``kube-aggregator.kubernetes.io/automanaged: onstart``, upstream's
  group and version priorities, no service, status Available True reason Local), made at
  start by :func:`local_apiservices`'s caller (post_start_objects.py);
- validation: the name ``<version>.<group>`` (``v1.`` for the core group), group a DNS
  subdomain (empty for the legacy group), version a DNS-1035 label, groupPriorityMinimum in
  1..20000, versionPriority in 1..1000, a service's name and namespace when given;
- defaults: a service reference's port 443 (SetDefaults_ServiceReference);
- create resets the status to the zero one (``{}``, as Go encodes the struct); the main
  resource keeps it, /status writes it;
- printer: Name, Service (``Local`` or namespace/name), Available (the condition's status,
  with its reason when not True), Age.

Deviation: APIServices are stored, not acted on: pykcm's server proxies nothing to a
service an APIService names (no aggregation; its metrics.k8s.io is served directly) and the
Available condition of a user's APIService is never written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    inclusive_range_error,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["LOCAL_PRIORITIES", "APIServiceStrategy", "local_apiservice"]

# kube-apiserver v1.36's DefaultGenericAPIServicePriorities (and the kube ones):
# (group, version) -> (groupPriorityMinimum, versionPriority)
LOCAL_PRIORITIES: Final[dict[tuple[str, str], tuple[int, int]]] = {
    ("", "v1"): (18000, 1),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("apps", "v1"): (17800, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("resource.k8s.io", "v1"): (16200, 21),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
}


def local_apiservice(group: str, version: str, now: str) -> Obj:
    """The APIService kube-apiserver registers for a group-version it serves itself."""
    gpm, vp = LOCAL_PRIORITIES[(group, version)]
    spec: Obj = {"group": group} if group else {}  # (omitempty: the legacy group has none)
    spec.update(version=version, groupPriorityMinimum=gpm, versionPriority=vp)
    return {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": f"{version}.{group}",
                     "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
        "spec": spec,
        "status": {"conditions": [{
            "type": "Available", "status": "True", "lastTransitionTime": now,
            "reason": "Local", "message": "Local APIServices are always available"}]},
    }


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False,
                                name_validator=_any_name)
    spec = pr.as_dict(obj.get("spec"))
    group, version = pr.as_str(spec.get("group")), pr.as_str(spec.get("version"))
    name = pr.as_str(pr.as_dict(obj.get("metadata")).get("name"))
    expected = f"{version}.{group}"
    if name != expected:
        errs.append(invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: '
                                                   f'"{expected}"'))
    if group:
        errs += [invalid("spec.group", group, m) for m in is_dns1123_subdomain(group)]
    if not version:
        errs.append(required("spec.version", ""))
    else:
        errs += [invalid("spec.version", version, m) for m in is_dns1035_label(version)]
    gpm = spec.get("groupPriorityMinimum")
    if not isinstance(gpm, int) or not 0 < gpm <= 20000:
        errs.append(invalid("spec.groupPriorityMinimum", gpm, "must be positive and less "
                                                              "than 20000"))
    vp = spec.get("versionPriority")
    if not isinstance(vp, int) or not 0 < vp <= 1000:
        errs.append(invalid("spec.versionPriority", vp, "must be positive and less than 1000"))
    service = spec.get("service")
    if isinstance(service, dict):
        if not service.get("namespace"):
            errs.append(required("spec.service.namespace", ""))
        if not service.get("name"):
            errs.append(required("spec.service.name", ""))
        port = service.get("port")
        if isinstance(port, int) and not 0 < port <= 65535:
            errs.append(invalid("spec.service.port", port,
                                "port is not valid: " + inclusive_range_error(1, 65535)))
    return errs


def _any_name(name: str, prefix: bool) -> list[str]:
    # (the name is checked against spec.version and spec.group instead)
    return []


_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Service", "string", "The reference to the service that hosts this API "
                                   "endpoint."),
    pr.column("Available", "string", "Whether this service is available."),
    pr.AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    service = spec.get("service")
    where = "Local" if not isinstance(service, dict) else (
        f"{pr.as_str(service.get('namespace'))}/{pr.as_str(service.get('name'))}")
    available = "Unknown"
    for c in pr.as_list(pr.as_dict(obj.get("status")).get("conditions")):
        c = pr.as_dict(c)
        if c.get("type") == "Available":
            available = pr.as_str(c.get("status"))
            if available != "True":
                available += f" ({pr.as_str(c.get('reason'))})"
    return pr.Row([pr.object_name(obj), where, available, pr.age(obj, now)])


@register
class APIServiceStrategy(Strategy):
    group = "apiregistration.k8s.io"
    kind = "APIService"
    printer = pr.Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        # SetDefaults_ServiceReference: a service reference without a port means 443
        service = pr.as_dict(obj.get("spec")).get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}  # the zero APIServiceStatus: Go's omitempty never drops a struct

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _validate(new) + validate_object_meta_update(new.get("metadata"),
                                                            old.get("metadata"))
