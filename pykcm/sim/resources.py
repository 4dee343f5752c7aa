"""Resource arithmetic for the simulated scheduler and nodes: quantities and pod requests.

Role: the scheduler compares what a pod asks for with what a node has left,
the way kube-scheduler's NodeResourcesFit plugin does
(``pkg/scheduler/framework/plugins/noderesources``, ``k8s.io/component-helpers
/resource``). Everything is reduced to integers first: cpu in millicores,
every other resource (memory, ephemeral-storage, pods, extended resources) in
whole units, rounded up as ``resource.Quantity.Value()`` / ``MilliValue()``
round.

Data flow::

    pod spec ── pod_requests() ──► {"cpu": 250, "memory": 134217728, ...}  (ints)
    node status.allocatable ── node_allocatable() ──► {"cpu": 32000, "pods": 110, ...}
                                    ▼
                        scheduler: NodeInfo.requested + request <= allocatable

A pod's effective request is upstream's (PodRequests): the sum over its
regular containers and its restartable (sidecar) init containers, or the
largest single ordinary init container if that is more (init containers run
one at a time, before the others), plus ``spec.overhead``. For scoring,
containers that request no cpu / memory count as 100m / 200Mi
(``NonZeroRequested``), so that request-less pods still spread.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pykcm.api.quantity import parse_quantity

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "Resources",
    "node_allocatable",
    "non_zero_requests",
    "parse_quantity",
    "pod_requests",
    "quantity_units",
]

Resources = dict[str, int]
"""Resource name → amount (cpu in millicores, everything else in whole units)."""

DEFAULT_MILLI_CPU_REQUEST: Final = 100
"""What a container without a cpu request counts as when scoring (upstream's 100m)."""
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024
"""What a container without a memory request counts as when scoring (upstream's 200Mi)."""

def quantity_units(name: str, q: Any) -> int:
    """A quantity as the scheduler's integer: millicores for cpu, else whole units.

    Rounded up, as Quantity.MilliValue() / Value() do; a malformed or
    negative quantity counts as 0 (the API server rejects them anyway).
    """
    v = parse_quantity(q)
    if v is None or v <= 0:
        return 0
    if name == "cpu":
        v = v * 1000
    return math.ceil(v)


def _container_requests(c: Mapping[str, Any]) -> Resources:
    res = c.get("resources") or {}
    # Upstream defaults requests to limits for resources with a limit and no request.
    merged = dict(res.get("limits") or {})
    merged.update(res.get("requests") or {})
    return {k: quantity_units(k, v) for k, v in merged.items()}


def _add(into: Resources, more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: Resources, more: Mapping[str, int]) -> None:
    for k, v in more.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """The pod's effective resource requests (upstream PodRequests, no pod-level resources)."""
    spec = pod.get("spec") or {}
    total: Resources = {}
    for c in spec.get("containers") or ():
        _add(total, _container_requests(c))
    # Init containers run one by one; a sidecar (restartPolicy Always) keeps running
    # and adds to everything started after it.
    sidecars: Resources = {}
    init_peak: Resources = {}
    for c in spec.get("initContainers") or ():
        req = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            _add(total, req)
        else:
            during = dict(sidecars)
            _add(during, req)
            _max_into(init_peak, during)
    _max_into(total, init_peak)
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, 0) + quantity_units(k, v)
    return {k: v for k, v in total.items() if v}


def non_zero_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(millicpu, memory bytes) for scoring: request-less containers count as 100m / 200Mi."""
    spec = pod.get("spec") or {}
    cpu = mem = 0

    def one(c: Mapping[str, Any]) -> tuple[int, int]:
        req = _container_requests(c)
        return (req.get("cpu") or DEFAULT_MILLI_CPU_REQUEST,
                req.get("memory") or DEFAULT_MEMORY_REQUEST)

    for c in spec.get("containers") or ():
        a, b = one(c)
        cpu += a
        mem += b
    init_cpu = init_mem = 0
    for c in _ordinary_init(spec.get("initContainers") or ()):
        a, b = one(c)
        init_cpu, init_mem = max(init_cpu, a), max(init_mem, b)
    return max(cpu, init_cpu), max(mem, init_mem)


def _ordinary_init(cs: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    return (c for c in cs if c.get("restartPolicy") != "Always")


def node_allocatable(node: Mapping[str, Any]) -> Resources:
    """status.allocatable (capacity where allocatable is missing) as integers."""
    status = node.get("status") or {}
    alloc = status.get("allocatable") or status.get("capacity") or {}
    return {k: quantity_units(k, v) for k, v in alloc.items()}
