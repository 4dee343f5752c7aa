"""The service evaluator: ``k8s.io/kubernetes/pkg/quota/v1/evaluator/core/services.go``.

A Service counts ``services`` and ``count/services``; a NodePort Service
counts one ``services.nodeports`` per port, a LoadBalancer one
``services.loadbalancers`` and its ports as node ports (only those with a
nodePort when ``allocateLoadBalancerNodePorts`` is false). Services have no
scopes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from pykcm.api.quantity import DECIMAL_SI, Quantity
from pykcm.api.quota.evaluator import ONE, Attributes, Evaluator, object_count_resource_name
from pykcm.api.quota.resources import ResourceList

__all__ = ["ServiceEvaluator", "quota_service_type"]

SERVICE_COUNT: Final = object_count_resource_name("", "services")
_SERVICE_RESOURCES: Final = (SERVICE_COUNT, "services", "services.nodeports",
                             "services.loadbalancers")


def quota_service_type(svc: Mapping[str, Any]) -> str:
    t = (svc.get("spec") or {}).get("type")
    return t if t in ("NodePort", "LoadBalancer") else ""


def _n(n: int) -> Quantity:
    return Quantity(Decimal(n), DECIMAL_SI)


class ServiceEvaluator(Evaluator):
    group, resource = "", "services"

    def handles(self, a: Attributes) -> bool:
        return not a.subresource and a.operation in ("CREATE", "UPDATE")

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n in _SERVICE_RESOURCES]

    def usage(self, obj: Mapping[str, Any]) -> ResourceList:
        spec = obj.get("spec") or {}
        ports = spec.get("ports") or ()
        out: ResourceList = {SERVICE_COUNT: ONE, "services": ONE,
                             "services.loadbalancers": _n(0), "services.nodeports": _n(0)}
        t = spec.get("type")
        if t == "NodePort":
            out["services.nodeports"] = _n(len(ports))
        elif t == "LoadBalancer":
            if spec.get("allocateLoadBalancerNodePorts") is False:
                out["services.nodeports"] = _n(sum(1 for p in ports if p.get("nodePort")))
            else:
                out["services.nodeports"] = _n(len(ports))
            out["services.loadbalancers"] = ONE
        return out
