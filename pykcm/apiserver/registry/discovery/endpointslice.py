"""discovery.k8s.io/v1 EndpointSlices (pkg/registry/discovery/endpointslice): generation,
dropped v1beta1 topology and the address warnings.

- Generation: moves with any change outside the metadata, or of the labels.
- dropTopologyOnV1: a v1 write cannot set deprecatedTopology.
- Warnings: FQDN slices are deprecated; addresses in a non-standard form (of a
  slice the endpoint slice controllers do not manage) are warned about.

Defaults, validation and printer are still the flat modules'.
"""

from __future__ import annotations

from typing import Any

from pykcm.api import validation as _api_validation
from pykcm.apiserver import validation as _validation
from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register

Obj = dict[str, Any]

_HOSTNAME_LABEL = "kubernetes.io/hostname"
_ENDPOINT_SLICE_CONTROLLERS = ("endpointslice-controller.k8s.io",
                               "endpointslicemirroring-controller.k8s.io")


def drop_topology_on_v1(new: Obj, old: Obj | None) -> None:
    """dropTopologyOnV1: discovery.k8s.io/v1 writes cannot set deprecatedTopology. A changed
    endpoint without nodeName keeps the node its old topology named (a partial update)."""
    endpoints = new.get("endpoints")
    if not isinstance(endpoints, list):
        return
    if old is not None and endpoints == old.get("endpoints"):
        return
    previous = {str(n) for e in (old or {}).get("endpoints") or [] if isinstance(e, dict)
                for n in [(e.get("deprecatedTopology") or {}).get(_HOSTNAME_LABEL)] if n}
    for ep in endpoints:
        if not isinstance(ep, dict):
            continue
        topology = ep.pop("deprecatedTopology", None)
        node = (topology or {}).get(_HOSTNAME_LABEL) if isinstance(topology, dict) else None
        if (ep.get("nodeName") is None and isinstance(node, str) and node in previous
                and not _api_validation.is_dns1123_subdomain(node)):
            ep["nodeName"] = node


def endpoint_slice_warnings(obj: Obj, create: bool) -> list[str]:
    """WarningsOnCreate/WarningsOnUpdate: FQDN slices are deprecated; addresses in a
    non-standard form (not from the endpoint slice controllers) are warned about."""
    out = []
    if create and obj.get("addressType") == "FQDN":
        out.append("spec.addressType: FQDN endpoints are deprecated")
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get("endpointslice.kubernetes.io/managed-by") in _ENDPOINT_SLICE_CONTROLLERS:
        return out
    for i, ep in enumerate(obj.get("endpoints") or []):
        for j, addr in enumerate((ep or {}).get("addresses") or []):
            out.extend(_validation.ip_warnings(f"endpoints[{i}].addresses[{j}]", str(addr)))
    return out


@register
class EndpointSliceStrategy(FlatModulesStrategy):
    group = "discovery.k8s.io"
    kind = "EndpointSlice"
    has_update_warnings = True

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        drop_topology_on_v1(obj, None)

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        # everything but metadata, and the labels
        return (any(new.get(k) != old.get(k) for k in {*new, *old} - {"metadata"})
                or new["metadata"].get("labels") != old["metadata"].get("labels"))

    def finish_update(self, new: Obj, old: Obj) -> None:
        drop_topology_on_v1(new, old)  # after the generation, as upstream

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return endpoint_slice_warnings(obj, True)

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return endpoint_slice_warnings(new, False)
