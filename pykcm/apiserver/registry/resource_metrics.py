"""metrics.k8s.io/v1beta1 (NodeMetrics, PodMetrics) served from the simulated kubelets' usage.

In a cluster, metrics-server scrapes every kubelet's resource usage and serves it through the
aggregation layer; ``kubectl top`` and the HPA controller read it there. The simulated
kubelets (pykcm/sim) run no containers, so a pod's usage is declared on the pod itself:

- ``sim.pykcm.io/cpu-usage`` (e.g. ``250m``) and ``sim.pykcm.io/memory-usage`` (e.g.
  ``64Mi``): the pod's usage, split evenly over its containers (the remainder to the
  first); changeable at any time, read at every request; without them a small default
  (1m cpu and 8Mi memory per container), as an idle container uses;
- a pod has metrics while it is Running on a node (metrics-server reports running pods);
- a node's usage is the sum of its running pods' plus the kubelet's own overhead (50m
  cpu, 256Mi memory).

Data flow: a GET or LIST of ``/apis/metrics.k8s.io/v1beta1/...`` reads the stored pods and
nodes (label selectors as metrics-server applies them, to the pods' and nodes' labels) and
answers metrics stamped with the request time and a 15 s window. Nothing is stored.

Deliberate deviation: metrics-server samples usage every 15 s; here a changed annotation
shows at once. Against a real kube-apiserver these metrics are not served (see README,
"Metrics").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from pykcm.api.quantity import DECIMAL_SI, Quantity
from pykcm.api.timestamps import format_time

__all__ = ["CPU_USAGE_ANNOTATION", "MEMORY_USAGE_ANNOTATION", "node_metrics", "pod_metrics",
           "pod_usage"]

CPU_USAGE_ANNOTATION: Final = "sim.pykcm.io/cpu-usage"
MEMORY_USAGE_ANNOTATION: Final = "sim.pykcm.io/memory-usage"
API_VERSION: Final = "metrics.k8s.io/v1beta1"
WINDOW: Final = "15s"
# per container without an annotation (milli-cpu, bytes)
DEFAULT_CPU_MILLI: Final = 1
DEFAULT_MEMORY: Final = 8 * 1024 * 1024
# the kubelet's and the system's own usage on every node
NODE_OVERHEAD_CPU_MILLI: Final = 50
NODE_OVERHEAD_MEMORY: Final = 256 * 1024 * 1024

Obj = dict[str, Any]


def _d(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _amount(annotation: Any, scale: int) -> int | None:
    """The annotation's value in milli-cpu (scale 1000) or bytes (scale 1); None if unset or
    not a quantity (the default then applies)."""
    q = Quantity.parse(annotation) if isinstance(annotation, str) else None
    if q is None or q.sign() < 0:
        return None
    return int((q.value * scale).to_integral_value(rounding="ROUND_CEILING"))


def _cpu(milli: int) -> str:
    return str(Quantity(Decimal(milli) / 1000, DECIMAL_SI)) if milli else "0"


def _memory(amount: int) -> str:
    # metrics-server reports memory in Ki
    return f"{(amount + 1023) // 1024}Ki" if amount else "0"


def _split(total: int, n: int) -> list[int]:
    base, rest = divmod(total, n)
    return [base + (rest if i == 0 else 0) for i in range(n)]


def is_running(pod: Mapping[str, Any]) -> bool:
    return (_d(pod.get("status")).get("phase") == "Running"
            and bool(_d(pod.get("spec")).get("nodeName"))
            and not _d(pod.get("metadata")).get("deletionTimestamp"))


def pod_usage(pod: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """(container name, milli-cpu, memory bytes) of each of the pod's containers."""
    names = [str(c.get("name") or "") for c in _d(pod.get("spec")).get("containers") or []
             if isinstance(c, Mapping)] or [""]
    annotations = _d(_d(pod.get("metadata")).get("annotations"))
    cpu = _amount(annotations.get(CPU_USAGE_ANNOTATION), 1000)
    memory = _amount(annotations.get(MEMORY_USAGE_ANNOTATION), 1)
    cpus = _split(cpu, len(names)) if cpu is not None else [DEFAULT_CPU_MILLI] * len(names)
    mems = _split(memory, len(names)) if memory is not None else [DEFAULT_MEMORY] * len(names)
    return list(zip(names, cpus, mems, strict=True))


def _meta(obj: Mapping[str, Any], namespaced: bool, now: float) -> Obj:
    meta = _d(obj.get("metadata"))
    out: Obj = {"name": meta.get("name", "")}
    if namespaced:
        out["namespace"] = meta.get("namespace", "")
    out["creationTimestamp"] = format_time(now)
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    return out


def pod_metrics(pod: Mapping[str, Any], now: float) -> Obj | None:
    """The PodMetrics of a pod (None while it is not running)."""
    if not is_running(pod):
        return None
    return {"kind": "PodMetrics", "apiVersion": API_VERSION,
            "metadata": _meta(pod, True, now), "timestamp": format_time(now), "window": WINDOW,
            "containers": [{"name": name, "usage": {"cpu": _cpu(cpu), "memory": _memory(mem)}}
                           for name, cpu, mem in pod_usage(pod)]}


def node_metrics(node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], now: float
                 ) -> Obj:
    """The NodeMetrics of a node from the pods running on it."""
    name = _d(node.get("metadata")).get("name")
    cpu, memory = NODE_OVERHEAD_CPU_MILLI, NODE_OVERHEAD_MEMORY
    for pod in pods:
        if _d(pod.get("spec")).get("nodeName") == name and is_running(pod):
            for _, c, m in pod_usage(pod):
                cpu += c
                memory += m
    return {"kind": "NodeMetrics", "apiVersion": API_VERSION,
            "metadata": _meta(node, False, now), "timestamp": format_time(now),
            "window": WINDOW, "usage": {"cpu": _cpu(cpu), "memory": _memory(memory)}}
