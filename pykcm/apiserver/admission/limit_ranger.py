"""LimitRanger admission: a namespace's LimitRanges default and bound pods' and claims' resources.

kube-apiserver v1.36 ``plugin/pkg/admission/limitranger/admission.go``.

Data flow::

    pod create ── mutate(): every container and init container gets the Container
                  limits' ``default`` (limits) and ``defaultRequest`` (requests) it
                  lacks; the annotation ``kubernetes.io/limit-ranger`` says what was set
    pod create, claim create/update ── validate(): Container limits (min/max/
                  maxLimitRequestRatio per container), Pod limits (the pod's summed
                  requests/limits), PersistentVolumeClaim limits (min/max of the
                  request) ─► 403 ``<kind> "<name>" is forbidden: <error>`` (several:
                  ``[e1, e2]``)

Comparisons are upstream's: in milli-units (Quantity.MilliValue, rounded up)
unless a value is too large for them, then in whole units.

Deliberate deviations: no live-lookup cache (the plugin reads the store, which
is always current); the ``resize`` subresource of pods is not served.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from pykcm.api.quantity import Quantity
from pykcm.api.quota.resources import ResourceList, from_wire

__all__ = ["LIMIT_RANGER_ANNOTATION", "mutate_pod", "supports", "validate"]

LIMIT_RANGER_ANNOTATION: Final = "kubernetes.io/limit-ranger"
_MAX_MILLI: Final = ((1 << 63) - 1) // 1000


def supports(kind: str, group: str, operation: str, subresource: str) -> bool:
    """Which requests the plugin looks at (SupportsAttributes): pod creates, claim writes."""
    if subresource or group:
        return False
    if kind == "Pod":
        return operation == "CREATE"
    return kind == "PersistentVolumeClaim" and operation in ("CREATE", "UPDATE")


# -- defaults ------------------------------------------------------------------------------

def _default_requirements(limit_range: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for item in (limit_range.get("spec") or {}).get("limits") or ():
        if item.get("type") == "Container":
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    return requests, limits


def _merge(container: dict[str, Any], requests: Mapping[str, Any], limits: Mapping[str, Any],
           what: str, notes: list[str]) -> None:
    res = container.setdefault("resources", {})
    have_limits = res.setdefault("limits", {})
    have_requests = res.setdefault("requests", {})
    set_limits = [k for k in limits if k not in have_limits]
    set_requests = [k for k in requests if k not in have_requests]
    for k in set_limits:
        have_limits[k] = limits[k]
    for k in set_requests:
        have_requests[k] = requests[k]
    name = container.get("name") or ""
    if set_requests:
        notes.append(f"{', '.join(sorted(set_requests))} request for {what} {name}")
    if set_limits:
        notes.append(f"{', '.join(sorted(set_limits))} limit for {what} {name}")
    # Go leaves empty maps that encode as nothing: drop them as the wire form would.
    if not have_limits:
        del res["limits"]
    if not have_requests:
        del res["requests"]
    if not res:
        del container["resources"]


def mutate_pod(pod: dict[str, Any], limit_ranges: Iterable[Mapping[str, Any]]) -> None:
    """Each LimitRange's container defaults into the pod's containers (PodMutateLimitFunc)."""
    spec = pod.get("spec") or {}
    for lr in limit_ranges:
        requests, limits = _default_requirements(lr)
        notes: list[str] = []
        for c in spec.get("containers") or ():
            _merge(c, requests, limits, "container", notes)
        for c in spec.get("initContainers") or ():
            _merge(c, requests, limits, "init container", notes)
        if notes:
            ann = pod.setdefault("metadata", {}).setdefault("annotations", {})
            ann[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


# -- validation ----------------------------------------------------------------------------

def _values(req: Quantity | None, lim: Quantity | None,
            enforced: Quantity) -> tuple[int, int, int]:
    """requestLimitEnforcedValues: milli-values unless one is too large for them."""
    qs = [q.value if q is not None else Decimal(0) for q in (req, lim)] + [enforced.value]
    whole = [math.ceil(v) for v in qs]
    if all(w <= _MAX_MILLI for w in whole):
        return tuple(math.ceil(v * 1000) for v in qs)  # type: ignore[return-value]
    return tuple(whole)  # type: ignore[return-value]


def _min(kind: str, name: str, enforced: Quantity, requests: ResourceList,
         limits: ResourceList) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, e = _values(req, lim, enforced)
    if req is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if r < e:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {req}"
    if lim is not None and li < e:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {lim}"
    return None


def _max_request(kind: str, name: str, enforced: Quantity, requests: ResourceList) -> str | None:
    req = requests.get(name)
    r, _, e = _values(req, None, enforced)
    if req is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if r > e:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req}"
    return None


def _max(kind: str, name: str, enforced: Quantity, requests: ResourceList,
         limits: ResourceList) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, e = _values(req, lim, enforced)
    if lim is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if li > e:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {lim}"
    if req is not None and r > e:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, requests: ResourceList,
           limits: ResourceList) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, _ = _values(req, lim, enforced)
    if req is None or r == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, "
                "but no request is specified or request is 0")
    if lim is None or li == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, "
                "but no limit is specified or limit is 0")
    observed = li / r
    display = observed
    enforced_whole = math.ceil(enforced.value)
    max_ratio = float(enforced_whole)
    if enforced_whole <= _MAX_MILLI:
        observed *= 1000
        max_ratio = float(math.ceil(enforced.value * 1000))
    if observed > max_ratio:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, "
                f"but provided ratio is {display:f}")
    return None


def _container_errors(item: Mapping[str, Any], c: Mapping[str, Any]) -> list[str]:
    res = c.get("resources") or {}
    requests, limits = from_wire(res.get("requests")), from_wire(res.get("limits"))
    out: list[str | None] = []
    for k, v in (item.get("min") or {}).items():
        out.append(_min("Container", k, Quantity.of(v), requests, limits))
    for k, v in (item.get("max") or {}).items():
        out.append(_max("Container", k, Quantity.of(v), requests, limits))
    for k, v in (item.get("maxLimitRequestRatio") or {}).items():
        out.append(_ratio("Container", k, Quantity.of(v), requests, limits))
    return [e for e in out if e]


def _pod_totals(spec: Mapping[str, Any], field: str) -> ResourceList:
    """The limitranger's own podRequests/podLimits: containers, sidecars, init peak, pod level
    (no overhead)."""
    total: ResourceList = {}
    sidecars: ResourceList = {}
    peak: ResourceList = {}

    def add_into(into: ResourceList, more: ResourceList) -> None:
        for k, v in more.items():
            into[k] = into[k] + v if k in into else v

    for c in spec.get("containers") or ():
        add_into(total, from_wire((c.get("resources") or {}).get(field)))
    for c in spec.get("initContainers") or ():
        own = from_wire((c.get("resources") or {}).get(field))
        if c.get("restartPolicy") == "Always":
            add_into(total, own)
            add_into(sidecars, own)
            during = dict(sidecars)
        else:
            during = dict(own)
            add_into(during, sidecars)
        for k, v in during.items():
            if k not in peak or v.value > peak[k].value:
                peak[k] = v
    for k, v in peak.items():
        if k not in total or v.value > total[k].value:
            total[k] = v
    for k, v in ((spec.get("resources") or {}).get(field) or {}).items():
        if k in ("cpu", "memory"):
            total[k] = Quantity.of(v)
    return total


def _pod_errors(limit_range: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    errs: list[str] = []
    for item in (limit_range.get("spec") or {}).get("limits") or ():
        t = item.get("type")
        if t == "Container":
            for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
                errs.extend(_container_errors(item, c))
        if t == "Pod":
            requests, limits = _pod_totals(spec, "requests"), _pod_totals(spec, "limits")
            out = [_min("Pod", k, Quantity.of(v), requests, limits)
                   for k, v in (item.get("min") or {}).items()]
            out += [_max("Pod", k, Quantity.of(v), requests, limits)
                    for k, v in (item.get("max") or {}).items()]
            out += [_ratio("Pod", k, Quantity.of(v), requests, limits)
                    for k, v in (item.get("maxLimitRequestRatio") or {}).items()]
            errs.extend(e for e in out if e)
    return errs


def _claim_errors(limit_range: Mapping[str, Any], pvc: Mapping[str, Any]) -> list[str]:
    requests = from_wire(((pvc.get("spec") or {}).get("resources") or {}).get("requests"))
    errs: list[str | None] = []
    for item in (limit_range.get("spec") or {}).get("limits") or ():
        if item.get("type") != "PersistentVolumeClaim":
            continue
        errs += [_min("PersistentVolumeClaim", k, Quantity.of(v), requests, {})
                 for k, v in (item.get("min") or {}).items()]
        errs += [_max_request("PersistentVolumeClaim", k, Quantity.of(v), requests)
                 for k, v in (item.get("max") or {}).items()]
    return [e for e in errs if e]


def validate(kind: str, obj: Mapping[str, Any],
             limit_ranges: Iterable[Mapping[str, Any]]) -> str | None:
    """The first LimitRange's errors for the object (utilerrors.NewAggregate's text), or None."""
    for lr in limit_ranges:
        errs = _pod_errors(lr, obj) if kind == "Pod" else _claim_errors(lr, obj)
        if errs:
            return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
    return None
