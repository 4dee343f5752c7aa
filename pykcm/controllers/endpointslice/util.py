"""What the Endpoints, EndpointSlice and mirroring controllers share (``k8s.io/endpointslice/util``).

- :func:`services_to_update`: which Services a pod event concerns (upstream's
  ``GetPodUpdateProjectionKey`` + ``GetServicesToUpdate``): an update that
  changes neither labels, hostname/subdomain, deletion, readiness nor IPs
  concerns none; a label change concerns the Services that start or stop
  selecting the pod (all of both sides when something else changed too).
- :class:`TriggerTimeTracker`: the ``endpoints.kubernetes.io/last-change-trigger-time``
  value: the Service's creation on its first sync, then the earliest of the
  pods' Ready transitions seen since the previous sync.
- :class:`EndpointSliceTracker`: the generation of every slice this
  controller wrote, so a sync refuses a cache that has not seen its own
  writes yet (``StaleSlices``) and events for them are not resynced.
- :class:`EndpointSet`: desired endpoints keyed as upstream's ``hashEndpoint``
  (sorted addresses, hostname, targetRef namespace/name), insertion-ordered.

Deviation: upstream (v1.33+) hands pod events to a second queue whose workers
compute the affected Services; here the handler computes them itself (the same
Services, the same delays), as the informer runs handlers off the watch path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.pod_util import get_pod_ready_condition, is_pod_ready
from pykcm.api.timestamps import parse_datetime
from pykcm.cache.keys import DeletedFinalStateUnknown

__all__ = [
    "EndpointSet",
    "EndpointSliceTracker",
    "TriggerTimeTracker",
    "endpoint_key",
    "endpoints_equal_beyond_hash",
    "services_to_update",
]

DELETION_EXPECTED: Final = -1


def _unwrap(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


# -- pod events → services -------------------------------------------------------------------

def _selects(svc: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    selector = (svc.get("spec") or {}).get("selector")
    if not selector:
        return False
    return all(labels.get(k) == v for k, v in selector.items())


def _services_for(services: list[Mapping[str, Any]], labels: Mapping[str, str]) -> set[str]:
    return {f"{meta_of(s).get('namespace')}/{meta_of(s).get('name')}"
            for s in services if _selects(s, labels)}


def _pod_endpoints_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[bool, bool]:
    """(pod changed, labels or hostname/subdomain changed)."""
    om, nm = meta_of(old), meta_of(new)
    os_, ns_ = old.get("spec") or {}, new.get("spec") or {}
    labels_changed = ((om.get("labels") or {}) != (nm.get("labels") or {})
                      or os_.get("hostname") != ns_.get("hostname")
                      or os_.get("subdomain") != ns_.get("subdomain"))
    # Go compares the deletionTimestamp pointers: two set ones always differ
    if om.get("deletionTimestamp") or nm.get("deletionTimestamp"):
        return True, labels_changed
    if is_pod_ready(old) != is_pod_ready(new):
        return True, labels_changed
    old_ips = [p.get("ip") for p in (old.get("status") or {}).get("podIPs") or ()]
    new_ips = [p.get("ip") for p in (new.get("status") or {}).get("podIPs") or ()]
    return old_ips != new_ips, labels_changed


def services_to_update(services_in_namespace: list[Mapping[str, Any]], old: Any, new: Any
                       ) -> set[str]:
    """The keys of the Services a pod add (``old`` None), delete (``new`` None) or update
    concerns, among the Services of the pod's namespace."""
    old, new = _unwrap(old), _unwrap(new)
    if old is None and new is None:
        return set()
    if old is None or new is None:
        pod = new if new is not None else old
        return _services_for(services_in_namespace, meta_of(pod).get("labels") or {})
    if meta_of(old).get("resourceVersion") == meta_of(new).get("resourceVersion"):
        return set()
    pod_changed, labels_changed = _pod_endpoints_changed(old, new)
    if not pod_changed and not labels_changed:
        return set()
    now = _services_for(services_in_namespace, meta_of(new).get("labels") or {})
    if not labels_changed:
        return now
    before = _services_for(services_in_namespace, meta_of(old).get("labels") or {})
    return now | before if pod_changed else now ^ before


# -- the last-change trigger time ------------------------------------------------------------

class TriggerTimeTracker:
    """Per Service: its last trigger time and its pods' (upstream ``TriggerTimeTracker``)."""

    def __init__(self) -> None:
        # per pod: (the lastTransitionTime string last seen, its parsed time): a sync
        # parses only the pods whose Ready condition moved since the last one
        self._states: dict[tuple[str, str],
                           tuple[datetime | None, dict[str, tuple[str, datetime]]]] = {}

    def compute(self, namespace: str, service: Mapping[str, Any],
                pods: list[Mapping[str, Any]]) -> datetime | None:
        """The trigger time to export for this sync (None: none; remove the annotation)."""
        key = (namespace, str(meta_of(service).get("name")))
        known = key in self._states
        last_svc, last_pods = self._states.get(key, (None, {}))
        min_changed: datetime | None = None
        pod_times: dict[str, tuple[str, datetime]] = {}
        for pod in pods:
            cond = get_pod_ready_condition(pod)
            raw = cond.get("lastTransitionTime") if cond else None
            if not isinstance(raw, str):
                continue
            name = str(meta_of(pod).get("name"))
            prev = last_pods.get(name)
            if prev is not None and prev[0] == raw:
                pod_times[name] = prev  # unchanged: not newer than itself
                continue
            t = parse_datetime(raw)
            if t is None:
                continue
            pod_times[name] = (raw, t)
            if prev is None or t > prev[1]:
                min_changed = t if min_changed is None or t < min_changed else min_changed
        svc_time = parse_datetime(meta_of(service).get("creationTimestamp"))
        if svc_time is not None and (last_svc is None or svc_time > last_svc):
            min_changed = svc_time if min_changed is None or svc_time < min_changed \
                else min_changed
        self._states[key] = (svc_time, pod_times)
        if not known:
            return svc_time
        return min_changed

    def delete_service(self, namespace: str, name: str) -> None:
        self._states.pop((namespace, name), None)


# -- EndpointSlices this controller wrote ----------------------------------------------------

def _service_of(slice_: Mapping[str, Any]) -> tuple[str, str]:
    m = meta_of(slice_)
    return (str(m.get("namespace") or ""),
            str((m.get("labels") or {}).get("kubernetes.io/service-name") or ""))


def _generation(slice_: Mapping[str, Any]) -> int:
    return int(meta_of(slice_).get("generation") or 0)


class EndpointSliceTracker:
    """Generations of the slices written, by Service (upstream ``EndpointSliceTracker``)."""

    def __init__(self) -> None:
        self._by_service: dict[tuple[str, str], dict[str, int]] = {}

    def has(self, slice_: Mapping[str, Any]) -> bool:
        gens = self._by_service.get(_service_of(slice_))
        return gens is not None and str(meta_of(slice_).get("uid")) in gens

    def should_sync(self, slice_: Mapping[str, Any]) -> bool:
        """Not written by us, or newer than what we wrote."""
        gens = self._by_service.get(_service_of(slice_))
        if gens is None:
            return True
        g = gens.get(str(meta_of(slice_).get("uid")))
        return g is None or _generation(slice_) > g

    def stale_slices(self, namespace: str, name: str, slices: list[Mapping[str, Any]]) -> bool:
        """The cache misses a slice we wrote, holds an older one, or one we deleted."""
        gens = self._by_service.get((namespace, name))
        if gens is None:
            return False
        provided: dict[str, int] = {}
        for s in slices:
            uid = str(meta_of(s).get("uid"))
            provided[uid] = _generation(s)
            g = gens.get(uid)
            if g is not None and (g == DELETION_EXPECTED or g > _generation(s)):
                return True
        return any(g != DELETION_EXPECTED and uid not in provided for uid, g in gens.items())

    def update(self, slice_: Mapping[str, Any]) -> None:
        self._by_service.setdefault(_service_of(slice_), {})[
            str(meta_of(slice_).get("uid"))] = _generation(slice_)

    def expect_deletion(self, slice_: Mapping[str, Any]) -> None:
        self._by_service.setdefault(_service_of(slice_), {})[
            str(meta_of(slice_).get("uid"))] = DELETION_EXPECTED

    def handle_deletion(self, slice_: Mapping[str, Any]) -> bool:
        """Forget the slice; True if its deletion was ours (expected)."""
        gens = self._by_service.get(_service_of(slice_))
        if gens is not None:
            g = gens.pop(str(meta_of(slice_).get("uid")), None)
            if g is not None and g != DELETION_EXPECTED:
                return False
        return True

    def delete_service(self, namespace: str, name: str) -> None:
        self._by_service.pop((namespace, name), None)


# -- desired endpoints -------------------------------------------------------------------------

def endpoint_key(endpoint: Mapping[str, Any]) -> tuple[Any, ...]:
    """upstream ``hashEndpoint``: sorted addresses, hostname, targetRef namespace and name."""
    ref = endpoint.get("targetRef") or {}
    return (tuple(sorted(endpoint.get("addresses") or ())), endpoint.get("hostname") or "",
            ref.get("namespace") or "", ref.get("name") or "")


class EndpointSet:
    """Endpoints by :func:`endpoint_key`; ``pop_any`` takes them in insertion order
    (upstream's map order is random: the order of a slice's endpoints is not part of
    what it means)."""

    def __init__(self) -> None:
        self._items: dict[tuple[Any, ...], dict[str, Any]] = {}

    def insert(self, endpoint: dict[str, Any]) -> None:
        self._items[endpoint_key(endpoint)] = endpoint

    def get(self, endpoint: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._items.get(endpoint_key(endpoint))

    def delete(self, endpoint: Mapping[str, Any]) -> None:
        self._items.pop(endpoint_key(endpoint), None)

    def pop_any(self) -> dict[str, Any]:
        key = next(iter(self._items))
        return self._items.pop(key)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self._items.values()))


def _ref_without_rv(ref: Any) -> Any:
    if not isinstance(ref, Mapping):
        return ref
    return {k: v for k, v in ref.items() if k != "resourceVersion" and v not in ("", None)}


def endpoints_equal_beyond_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """upstream ``EndpointsEqualBeyondHash``: nodeName, zone, the three conditions (set or
    not, and value) and the targetRef (its resourceVersion aside)."""
    if a.get("nodeName") != b.get("nodeName") or a.get("zone") != b.get("zone"):
        return False
    ca, cb = a.get("conditions") or {}, b.get("conditions") or {}
    if any(ca.get(k) != cb.get(k) for k in ("ready", "serving", "terminating")):
        return False
    return bool(_ref_without_rv(a.get("targetRef")) == _ref_without_rv(b.get("targetRef")))
