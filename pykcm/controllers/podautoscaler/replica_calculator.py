"""The HPA's replica calculator (kube-controller-manager v1.36
``pkg/controller/podautoscaler/replica_calculator.go`` and ``metrics/utilization.go``).

Role: from one metric's values and the pods the target's selector matches, the replica
count that metric proposes. Pure functions over wire-form pods and
:class:`PodMetric` values (milli-units), the clock passed in as ``now`` (seconds).

- pods are grouped first (``group_pods``): deleting and Failed pods are ignored; Pending
  pods are unready; pods without a metric are missing; for cpu, a pod is also unready
  while its start is within ``cpu_initialization_period`` and it is not Ready or its
  metric predates its readiness (plus the metric's window), or after that, when it never
  became Ready within ``delay_of_initial_readiness_status`` of its start;
- the usage ratio (utilization over target, or average value over target) decides: within
  the tolerance, the current count stands; otherwise ceil(ratio × ready pods);
- with missing pods or (on a scale up) unready pods the ratio is recomputed
  conservatively: missing pods count as 100% of their request (or the target) when scaling
  down, as 0 when scaling up, unready pods as 0 on a scale up; a recomputed ratio that
  crosses 1 or lands in the tolerance, or a proposal in the wrong direction, keeps the
  current count.

Errors are :class:`ReplicaCalculationError` with upstream's messages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pykcm.api.accessors import meta_of, spec_of, status_of
from pykcm.api.pod_util import get_pod_condition, is_pod_ready
from pykcm.api.quantity import Quantity
from pykcm.api.timestamps import parse_time

__all__ = [
    "DEFAULT_TOLERANCE",
    "PodMetric",
    "ReplicaCalculationError",
    "Tolerances",
    "get_metric_usage_ratio",
    "get_resource_utilization_ratio",
    "group_pods",
    "plain_metric_replicas",
    "resource_replicas",
]

DEFAULT_TOLERANCE: Final = 0.1
MAX_INT32: Final = 2**31 - 1

Pod = Mapping[str, Any]


class ReplicaCalculationError(Exception):
    """A metric gave no proposal; the message is upstream's."""


@dataclass(frozen=True, slots=True)
class Tolerances:
    scale_down: float = DEFAULT_TOLERANCE
    scale_up: float = DEFAULT_TOLERANCE

    def is_within(self, ratio: float) -> bool:
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)


@dataclass(frozen=True, slots=True)
class PodMetric:
    """One pod's value of a metric (milli-units), with its sample time and window."""

    value: int
    timestamp: float = 0.0
    window: float = 60.0


def milli_value(q: Any) -> int:
    """Quantity.MilliValue(): rounded up to a whole milli-unit."""
    v = Quantity.of(q).value * 1000
    return int(v.to_integral_value(rounding="ROUND_CEILING"))


def _ceil(x: float) -> int:
    return MAX_INT32 if x > MAX_INT32 else math.ceil(x)


def group_pods(pods: Iterable[Pod], metrics: Mapping[str, PodMetric], resource: str,
               cpu_initialization_period: float, delay_of_initial_readiness_status: float,
               now: float) -> tuple[int, set[str], set[str], set[str]]:
    """(ready count, unready, missing, ignored) pod names (groupPods)."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = str(meta_of(pod).get("name") or "")
        phase = status_of(pod).get("phase")
        if meta_of(pod).get("deletionTimestamp") or phase == "Failed":
            ignored.add(name)
            continue
        if phase == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            cond = get_pod_condition(pod, "Ready")
            start = parse_time(status_of(pod).get("startTime"))
            if cond is None or start is None:
                is_unready = True
            else:
                transition = parse_time(cond.get("lastTransitionTime")) or 0.0
                if start + cpu_initialization_period > now:
                    is_unready = (cond.get("status") == "False"
                                  or metric.timestamp < transition + metric.window)
                else:
                    is_unready = (cond.get("status") == "False"
                                  and start + delay_of_initial_readiness_status > transition)
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def pod_requests(pods: Iterable[Pod], container: str, resource: str) -> dict[str, int]:
    """Each pod's request of ``resource`` in milli-units (calculateRequests, from containers
    and restartable init containers)."""
    out: dict[str, int] = {}
    for pod in pods:
        spec, name = spec_of(pod), str(meta_of(pod).get("name") or "")
        containers = list(spec.get("containers") or [])
        containers += [c for c in spec.get("initContainers") or []
                       if c.get("restartPolicy") == "Always"]
        request, found = 0, False
        for c in containers:
            if not container or container == c.get("name"):
                requests = (c.get("resources") or {}).get("requests") or {}
                if resource not in requests:
                    raise ReplicaCalculationError(
                        f"missing request for {resource} in container {c.get('name')} of Pod "
                        f"{name}")
                request += milli_value(requests[resource])
            if container and container == c.get("name"):
                found = True
                break
        if container and not found:
            raise ReplicaCalculationError(f"container {container} not found in Pod {name}")
        out[name] = request
    return out


def get_resource_utilization_ratio(metrics: Mapping[str, PodMetric],
                                   requests: Mapping[str, int], target_utilization: int
                                   ) -> tuple[float, int, int]:
    """(ratio, utilization %, average raw value) (GetResourceUtilizationRatio)."""
    total = requests_total = entries = 0
    for name, metric in metrics.items():
        if name not in requests:
            continue
        total += metric.value
        requests_total += requests[name]
        entries += 1
    if requests_total == 0:
        raise ReplicaCalculationError("no metrics returned matched known pods")
    utilization = (total * 100) // requests_total
    return utilization / target_utilization, utilization, total // entries


def get_metric_usage_ratio(metrics: Mapping[str, PodMetric], target: int) -> tuple[float, int]:
    """(ratio, average value) (GetMetricUsageRatio)."""
    average = sum(m.value for m in metrics.values()) // len(metrics)
    return average / target, average


def _prepare(pods: Sequence[Pod], metrics: Mapping[str, PodMetric], resource: str,
             cpu_init: float, readiness_delay: float, now: float
             ) -> tuple[int, set[str], set[str], dict[str, PodMetric]]:
    if not pods:
        raise ReplicaCalculationError(
            "no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(pods, metrics, resource, cpu_init,
                                                  readiness_delay, now)
    kept = {k: v for k, v in metrics.items() if k not in ignored and k not in unready}
    if not kept:
        raise ReplicaCalculationError(
            "did not receive metrics for targeted pods (pods might be unready)")
    return ready, unready, missing, kept


def _conservative(current: int, ratio: float, new_ratio: float, count: int,
                  tolerances: Tolerances) -> int:
    if (tolerances.is_within(new_ratio) or (ratio < 1.0 < new_ratio)
            or (ratio > 1.0 > new_ratio)):
        return current
    proposal = _ceil(new_ratio * count)
    if (new_ratio < 1.0 and proposal > current) or (new_ratio > 1.0 and proposal < current):
        return current
    return proposal


def resource_replicas(current: int, target_utilization: int, resource: str,
                      tolerances: Tolerances, pods: Sequence[Pod],
                      metrics: Mapping[str, PodMetric], *, container: str = "",
                      cpu_initialization_period: float = 300.0,
                      delay_of_initial_readiness_status: float = 30.0, now: float
                      ) -> tuple[int, int, int]:
    """(replicas, utilization %, average raw value) for a Utilization target
    (GetResourceReplicas)."""
    ready, unready, missing, kept = _prepare(pods, metrics, resource,
                                             cpu_initialization_period,
                                             delay_of_initial_readiness_status, now)
    requests = pod_requests(pods, container, resource)
    ratio, utilization, raw = get_resource_utilization_ratio(kept, requests,
                                                             target_utilization)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.is_within(ratio):
            return current, utilization, raw
        return _ceil(ratio * ready), utilization, raw
    if missing:
        if ratio < 1.0:
            fallback = max(100, target_utilization)
            for name in missing:
                kept[name] = PodMetric(requests.get(name, 0) * fallback // 100)
        elif ratio > 1.0:
            for name in missing:
                kept[name] = PodMetric(0)
    if scale_up_with_unready:
        for name in unready:
            kept[name] = PodMetric(0)
    new_ratio, _, _ = get_resource_utilization_ratio(kept, requests, target_utilization)
    return _conservative(current, ratio, new_ratio, len(kept), tolerances), utilization, raw


def plain_metric_replicas(current: int, target: int, resource: str, tolerances: Tolerances,
                          pods: Sequence[Pod], metrics: Mapping[str, PodMetric], *,
                          cpu_initialization_period: float = 300.0,
                          delay_of_initial_readiness_status: float = 30.0, now: float
                          ) -> tuple[int, int]:
    """(replicas, average value) for an AverageValue target of a resource or a Pods metric
    (calcPlainMetricReplicas; ``resource`` "" for a Pods metric)."""
    ready, unready, missing, kept = _prepare(pods, metrics, resource,
                                             cpu_initialization_period,
                                             delay_of_initial_readiness_status, now)
    ratio, usage = get_metric_usage_ratio(kept, target)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerances.is_within(ratio):
            return current, usage
        return _ceil(ratio * ready), usage
    if missing:
        if ratio < 1.0:
            for name in missing:
                kept[name] = PodMetric(target)
        elif ratio > 1.0:
            for name in missing:
                kept[name] = PodMetric(0)
    if scale_up_with_unready:
        for name in unready:
            kept[name] = PodMetric(0)
    new_ratio, _ = get_metric_usage_ratio(kept, target)
    return _conservative(current, ratio, new_ratio, len(kept), tolerances), usage


def ready_pods_count(pods: Sequence[Pod]) -> int:
    """Running and Ready pods (getReadyPodsCount)."""
    if not pods:
        raise ReplicaCalculationError(
            "no pods returned by selector while calculating replica count")
    return sum(1 for p in pods if status_of(p).get("phase") == "Running" and is_pod_ready(p))


def usage_ratio_replicas(current: int, ratio: float, tolerances: Tolerances,
                         pods: Sequence[Pod]) -> int:
    """An Object or External Value target's proposal (getUsageRatioReplicaCount)."""
    if current == 0:
        return _ceil(ratio)
    if tolerances.is_within(ratio):
        return current
    try:
        ready = ready_pods_count(pods)
    except ReplicaCalculationError as exc:
        raise ReplicaCalculationError(f"unable to calculate ready pods: {exc}") from None
    return _ceil(ratio * ready)


def per_pod_replicas(status_replicas: int, usage: int, target_per_pod: int,
                     tolerances: Tolerances) -> tuple[int, int]:
    """(replicas, per-pod usage) of an AverageValue Object/External target
    (GetObjectPerPodMetricReplicas / GetExternalPerPodMetricReplicas)."""
    replicas = status_replicas
    ratio = usage / (target_per_pod * replicas) if replicas else math.inf
    if not tolerances.is_within(ratio):
        replicas = _ceil(usage / target_per_pod)
    per_pod = math.ceil(usage / status_replicas) if status_replicas else usage
    return replicas, per_pod
