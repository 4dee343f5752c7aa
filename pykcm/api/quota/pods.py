"""The pod evaluator: ``k8s.io/kubernetes/pkg/quota/v1/evaluator/core/pods.go``.

A pod counts ``count/pods`` while it is stored; while it is not terminal
(Failed/Succeeded, or past its deletion grace period) it also counts ``pods``
and its compute resources: requests as ``requests.<name>`` and bare
``cpu``/``memory``/``ephemeral-storage``, limits as ``limits.<name>``,
hugepages and extended resources (``requests.<ext>``). The pod's requests and
limits are component-helpers' PodRequests/PodLimits: containers summed,
sidecar init containers added, the largest init-phase peak, spec.overhead,
pod-level ``spec.resources`` overriding cpu/memory.

Scopes: Terminating / NotTerminating (activeDeadlineSeconds), BestEffort /
NotBestEffort (QoS), PriorityClass (a selector on the class name),
CrossNamespacePodAffinity.

Deliberate deviation: InPlacePodVerticalScaling's status resources (the
larger of spec and what the kubelet reports allocated) are not read: the
simulated kubelet reports none, and a real one reports the spec's values
unless a resize is in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.pod_util import pod_has_active_deadline, pod_phase_and_ready
from pykcm.api.quantity import Quantity
from pykcm.api.quota.evaluator import (
    ONE,
    Attributes,
    Evaluator,
    ListByNamespace,
    matches_scope_selector_values,
    object_count_resource_name,
)
from pykcm.api.quota.resources import ResourceList, add
from pykcm.api.timestamps import parse_time

__all__ = ["PodEvaluator", "is_terminating", "pod_compute_usage", "quota_v1_pod"]

POD_COUNT: Final = object_count_resource_name("", "pods")
_POD_RESOURCES: Final = (POD_COUNT, "cpu", "memory", "ephemeral-storage", "requests.cpu",
                         "requests.memory", "requests.ephemeral-storage", "limits.cpu",
                         "limits.memory", "limits.ephemeral-storage", "pods")
_POD_PREFIXES: Final = ("hugepages-", "requests.hugepages-")
_VALIDATION_SET: Final = frozenset({"cpu", "memory", "requests.cpu", "requests.memory",
                                    "limits.cpu", "limits.memory"})
_POD_LEVEL: Final = frozenset({"cpu", "memory", "hugepages-"})


def _is_native(name: str) -> bool:
    # helper.IsNativeResource: no domain, or a *kubernetes.io/ domain.
    return "/" not in name or "kubernetes.io/" in name


def _is_extended_for_quota(name: str) -> bool:
    implicit = name.startswith("requests.deviceclass.resource.kubernetes.io/")
    return (not _is_native(name) or implicit) and name.startswith("requests.")


def is_terminating(pod: Mapping[str, Any]) -> bool:
    """The Terminating scope: ``spec.activeDeadlineSeconds`` set (>= 0); kept by a
    compact cached pod once read (the quota monitor asks it of both versions at every
    pod update)."""
    return pod_has_active_deadline(pod)


def quota_v1_pod(pod: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether the pod's compute resources count (not terminal, not past its grace period)."""
    if pod_phase_and_ready(pod)[0] in ("Failed", "Succeeded"):  # kept by compact pods
        return False
    meta = pod.get("metadata") or {}
    deletion, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if deletion and grace is not None:
        when = parse_time(deletion)
        if when is not None and (time.time() if now is None else now) > when + grace:
            return False
    return True


def _is_supported_pod_level(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _rl(m: Any) -> ResourceList:
    return {k: Quantity.of(v) for k, v in (m or {}).items()}


def _max_into(into: ResourceList, more: Mapping[str, Quantity]) -> None:
    for k, v in more.items():
        if k not in into or v.value > into[k].value:
            into[k] = v


def _aggregate(spec: Mapping[str, Any], field: str) -> ResourceList:
    """AggregateContainerRequests/Limits over containers and init containers."""
    total: ResourceList = {}
    for c in spec.get("containers") or ():
        total = add(total, _rl((c.get("resources") or {}).get(field)))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for c in spec.get("initContainers") or ():
        own = _rl((c.get("resources") or {}).get(field))
        if c.get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            during = sidecars
        else:
            during = add(own, sidecars)
        _max_into(init_peak, during)
    _max_into(total, init_peak)
    return total


def pod_level_resources_set(spec: Mapping[str, Any], field: str | None = None) -> bool:
    res = spec.get("resources") or {}
    fields = (field,) if field else ("requests", "limits")
    return any(_is_supported_pod_level(k) for f in fields for k in (res.get(f) or {}))


def pod_requests(pod: Mapping[str, Any]) -> ResourceList:
    spec = pod.get("spec") or {}
    reqs = _aggregate(spec, "requests")
    if pod_level_resources_set(spec, "requests"):
        for k, v in ((spec.get("resources") or {}).get("requests") or {}).items():
            if _is_supported_pod_level(k):
                reqs[k] = Quantity.of(v)
    return add(reqs, _rl(spec.get("overhead")))


def pod_limits(pod: Mapping[str, Any]) -> ResourceList:
    spec = pod.get("spec") or {}
    limits = _aggregate(spec, "limits")
    if pod_level_resources_set(spec):
        for k, v in ((spec.get("resources") or {}).get("limits") or {}).items():
            if _is_supported_pod_level(k):
                limits[k] = Quantity.of(v)
    for k, v in _rl(spec.get("overhead")).items():
        if k in limits and limits[k].sign() != 0:
            limits[k] = limits[k] + v
    return limits


def pod_compute_usage(requests: Mapping[str, Quantity],
                      limits: Mapping[str, Quantity]) -> ResourceList:
    """podComputeUsageHelper: the quota names a set of requests and limits fill."""
    out: ResourceList = {"pods": ONE}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = requests[name]
            out["requests." + name] = requests[name]
        if name in limits:
            out["limits." + name] = limits[name]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            out[name] = q
            out["requests." + name] = q
        elif _is_dra_extended(name):
            out["requests." + name] = q
    return out


def _is_dra_extended(name: str) -> bool:
    # schedutil.IsDRAExtendedResourceName: an extended resource or a device class one.
    if name.startswith("deviceclass.resource.kubernetes.io/"):
        return True
    return not _is_native(name) and not name.startswith("requests.")


def _is_best_effort(pod: Mapping[str, Any]) -> bool:
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return bool(qos == "BestEffort")
    spec = pod.get("spec") or {}
    if pod_level_resources_set(spec):
        res = spec.get("resources") or {}
        return not any(k in ("cpu", "memory") for f in ("requests", "limits")
                       for k in (res.get(f) or {}))
    for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        res = c.get("resources") or {}
        for f in ("requests", "limits"):
            for k, v in (res.get(f) or {}).items():
                if k in ("cpu", "memory") and Quantity.of(v).sign() > 0:
                    return False
    return True


def _cross_namespace_term(term: Mapping[str, Any]) -> bool:
    return bool(term.get("namespaces")) or term.get("namespaceSelector") is not None


def uses_cross_namespace_pod_affinity(pod: Mapping[str, Any]) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        if any(_cross_namespace_term(t)
               for t in a.get("requiredDuringSchedulingIgnoredDuringExecution") or ()):
            return True
        if any(_cross_namespace_term(t.get("podAffinityTerm") or {})
               for t in a.get("preferredDuringSchedulingIgnoredDuringExecution") or ()):
            return True
    return False


class PodEvaluator(Evaluator):
    group, resource = "", "pods"

    def __init__(self, list_by_namespace: ListByNamespace | None = None,
                 clock: Callable[[], float] = REAL_CLOCK.now) -> None:
        super().__init__(list_by_namespace)
        self.clock = clock

    def constraints(self, required: Sequence[str], obj: Mapping[str, Any]) -> str | None:
        spec = obj.get("spec") or {}
        if pod_level_resources_set(spec):
            return None
        wanted = set(required) & _VALIDATION_SET
        missing: dict[str, set[str]] = {}
        for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            res = c.get("resources") or {}
            have = set(pod_compute_usage(_rl(res.get("requests")), _rl(res.get("limits"))))
            for name in wanted - have:
                missing.setdefault(name, set()).add(c.get("name") or "")
        if not missing:
            return None
        parts = [f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing)]
        return "must specify " + "; ".join(parts)

    def handles(self, a: Attributes) -> bool:
        if a.subresource == "":
            if (a.operation == "UPDATE" and a.obj is not None and a.old_obj is not None
                    and is_terminating(a.old_obj) != is_terminating(a.obj)):
                return True
            return a.operation == "CREATE"
        return a.subresource == "resize" and a.operation == "UPDATE"

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out = []
        for n in names:
            if n in _POD_RESOURCES or n.startswith(_POD_PREFIXES) or _is_extended_for_quota(n):
                out.append(n)
        return out

    def matches_scope(self, selector: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
        scope = selector.get("scopeName")
        if scope == "Terminating":
            return is_terminating(obj)
        if scope == "NotTerminating":
            return not is_terminating(obj)
        if scope == "BestEffort":
            return _is_best_effort(obj)
        if scope == "NotBestEffort":
            return not _is_best_effort(obj)
        if scope == "PriorityClass":
            pc = (obj.get("spec") or {}).get("priorityClassName") or ""
            if selector.get("operator") == "Exists":
                return bool(pc)
            return matches_scope_selector_values(selector, {"PriorityClass": pc} if pc else {})
        if scope == "CrossNamespacePodAffinity":
            return uses_cross_namespace_pod_affinity(obj)
        return False

    def matching_scopes(self, obj: Mapping[str, Any],
                        selectors: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [s for s in selectors if self.matches_scope(s, obj)]

    def usage(self, obj: Mapping[str, Any]) -> ResourceList:
        out: ResourceList = {POD_COUNT: ONE}
        if not quota_v1_pod(obj, self.clock()):
            return out
        return add(out, pod_compute_usage(pod_requests(obj), pod_limits(obj)))
