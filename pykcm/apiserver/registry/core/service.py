"""core/v1 Services (pkg/registry/core/service): the allocated addresses an update keeps.

Defaults, validation and printer are still the flat modules'; the cluster IP and
node port allocation is the generic store's (service_allocator.py).
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register

Obj = dict[str, Any]


def _keep_service_addresses(new: Obj, old: Obj) -> None:
    """An update that leaves out the allocated addresses keeps them (upstream patches them back)."""
    spec = new.get("spec")
    old_spec = old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    if (not spec.get("clusterIP") and not spec.get("clusterIPs") and old_spec.get("clusterIP")
            and spec.get("type", "ClusterIP") != "ExternalName"):
        spec["clusterIP"] = old_spec["clusterIP"]
        if old_spec.get("clusterIPs"):
            spec["clusterIPs"] = old_spec["clusterIPs"]
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                     for p in old_spec.get("ports") or [] if isinstance(p, dict)}
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and not p.get("nodePort"):
                np = old_ports.get((p.get("port"), p.get("protocol", "TCP")))
                if np:
                    p["nodePort"] = np


@register
class ServiceStrategy(FlatModulesStrategy):
    kind = "Service"
    create_keeps_status = True

    def prepare_kind_for_update(self, new: Obj, old: Obj) -> None:
        _keep_service_addresses(new, old)
