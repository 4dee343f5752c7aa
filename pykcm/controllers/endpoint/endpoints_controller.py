"""EndpointController: the Endpoints object of every Service with a selector.

kube-controller-manager v1.36 ``pkg/controller/endpoint/endpoints_controller.go``
(manager name ``endpoints-controller``, client and event source ``endpoint-controller``).

Data flow::

    service informer ── add / update / delete ──► enqueue ns/name
    pod informer ── add / update / delete ──► the Services of the pod's namespace the
                    change concerns (util.services_to_update) ─► enqueue each after
                    --endpoint-updates-batch-period (0: at once)
    endpoints informer ── delete ──► enqueue ns/name
    at start, once synced: every Endpoints object's key (leftovers of deleted Services)
                                │
        Controller "endpoint" (default rate limiter, 15 retries, --concurrent-endpoint-syncs)
                                ▼
    sync_service(key)
        Service gone ─► DELETE endpoints/<name> (NotFound fine)
        ExternalName or no selector ─► nothing (the API server or users own those)
        pods selected, with an IP, not terminal (and not terminating unless
        publishNotReadyAddresses) ─► one subset per pod and Service port (a named
        targetPort resolved per pod; a headless Service without ports: one without)
        ready (or publishNotReadyAddresses) ─► addresses, else notReadyAddresses
        ─► repack_subsets (pykcm.api.endpoints: upstream's canonical order)
        cached Endpoints equal (subsets, labels, capacity annotation) ─► nothing
        else the Endpoints with the Service's labels, service.kubernetes.io/headless
        when no ClusterIP, endpoints.kubernetes.io/managed-by=endpoint-controller,
        the last-change-trigger-time annotation, over-capacity=truncated beyond 1000
        addresses (ready ones kept first) ─► POST or PUT
        a PUT that changed the resourceVersion marks the cached version stale: a sync
        that still reads it first waits up to 0.25 s for the informer, then fails
        (retried) as upstream's; checked before anything is computed (upstream after)
        each pod's part of the subsets is kept by its resourceVersion per Service
        version, so a sync derives only the pods changed since the last one

Events (Warning, on the Endpoints): FailedToCreateEndpoint, FailedToUpdateEndpoint.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.endpoints import (
    ENDPOINTS_LABEL_MANAGED_BY,
    ENDPOINTS_LAST_CHANGE_TRIGGER_TIME,
    ENDPOINTS_OVER_CAPACITY,
    IS_HEADLESS_SERVICE,
    LEADER_ELECTION_RECORD_ANNOTATION,
    PortNotFound,
    find_port,
    is_service_ip_set,
    parse_ip_sloppy,
    repack_subsets,
    should_pod_be_in_endpoints,
    should_set_hostname,
)
from pykcm.api.labels import selector_from_set
from pykcm.api.pod_util import is_pod_ready
from pykcm.api.progress_poll import PROGRESS_POLLS, poll_until
from pykcm.api.timestamps import format_rfc3339_nano
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown, meta_namespace_key
from pykcm.client import Client
from pykcm.client.errors import ApiError, has_status_cause, is_forbidden, is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.event_recorder import EVENT_TYPE_WARNING, EventRecorder
from pykcm.controllers.endpointslice.util import TriggerTimeTracker, services_to_update
from pykcm.informers.generic import GenericInformer

__all__ = [
    "CONTROLLER_NAME",
    "MAX_CAPACITY",
    "MAX_RETRIES",
    "EndpointController",
    "compute_subsets",
    "truncate_endpoints",
]

log = logging.getLogger("pykcm.controllers.endpoint")

CONTROLLER_NAME: Final = "endpoint-controller"
"""The managed-by label value, the event source and the client's name."""
MAX_RETRIES: Final = 15
MAX_CAPACITY: Final = 1000
"""Addresses an Endpoints object holds at most (upstream maxCapacity)."""
TRUNCATED: Final = "truncated"
STALE_CACHE_WAIT: Final = 0.25
"""Seconds a sync waits for the informer to hold our own last write (see _await_own_write)."""
STALE_CACHE_POLL: Final = 0.005
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"


def _endpoint_address(svc: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """upstream podToEndpointAddressForService: the pod's IP of the Service's family."""
    spec, status = svc.get("spec") or {}, pod.get("status") or {}
    families = spec.get("ipFamilies") or []
    cluster_ip = spec.get("clusterIP") or ""
    if families:
        want_v6 = families[0] == "IPv6"
    elif cluster_ip and cluster_ip != "None":
        want_v6 = ":" in cluster_ip
    else:
        want_v6 = ":" in str(status.get("podIP") or "")
    for p in status.get("podIPs") or ():
        parsed = parse_ip_sloppy(str(p.get("ip") or ""))
        if parsed is not None and parsed[1] == want_v6:
            m = meta_of(pod)
            return {"ip": parsed[0], "nodeName": (pod.get("spec") or {}).get("nodeName") or "",
                    "targetRef": {"kind": "Pod", "namespace": m.get("namespace"),
                                  "name": m.get("name"), "uid": m.get("uid")}}
    return None


def _endpoint_port(svc_port: Mapping[str, Any], number: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if svc_port.get("name"):
        out["name"] = svc_port["name"]
    out["port"] = number
    if svc_port.get("protocol"):
        out["protocol"] = svc_port["protocol"]
    if svc_port.get("appProtocol") is not None:
        out["appProtocol"] = svc_port["appProtocol"]
    return out


Entry = tuple[bool, dict[str, Any], "dict[str, Any] | None"]
"""One pod's contribution to a Service's subsets: (ready, address, port or None)."""
PodMemo = dict[str, tuple[str, tuple[Entry, ...]]]
"""Per pod name: (the pod's resourceVersion, its entries) for one Service version."""


def pod_entries(svc: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[Entry, ...]:
    """What ``pod`` adds to ``svc``'s subsets: an address per Service port it serves
    (a headless Service without ports: one without a port)."""
    spec = svc.get("spec") or {}
    tolerate_unready = bool(spec.get("publishNotReadyAddresses"))
    if not should_pod_be_in_endpoints(pod, tolerate_unready):
        return ()
    address = _endpoint_address(svc, pod)
    if address is None:
        log.debug("Failed to find endpoint for service %s on pod %s", meta_of(svc).get("name"),
                  meta_of(pod).get("name"))
        return ()
    if should_set_hostname(pod, svc):
        address["hostname"] = (pod.get("spec") or {}).get("hostname")
    ready = tolerate_unready or is_pod_ready(pod)
    ports = spec.get("ports") or []
    if not ports:
        # headless: no ports is fine
        return ((ready, address, None),) if spec.get("clusterIP") == "None" else ()
    out: list[Entry] = []
    for svc_port in ports:
        try:
            number = find_port(pod, svc_port)
        except PortNotFound as exc:
            log.debug("Failed to find port for service %s: %s", meta_of(svc).get("name"), exc)
            continue
        out.append((ready, address, _endpoint_port(svc_port, number)))
    return tuple(out)


def compute_subsets(svc: Mapping[str, Any], pods: list[Mapping[str, Any]],
                    memo: PodMemo | None = None) -> tuple[list[dict[str, Any]], int, int]:
    """(repacked subsets, ready count, not-ready count) of ``svc`` over ``pods``.

    ``memo`` (the caller's, for this version of ``svc``) keeps each pod's entries by
    its resourceVersion: a churning Service's sync then derives only the pods that
    changed since the last one, not all of them. It is rewritten to hold exactly
    ``pods``. The entries' dicts are shared between syncs: repack_subsets copies what
    it keeps and nothing below edits them.
    """
    subsets: list[dict[str, Any]] = []
    ready_n = not_ready_n = 0
    previous = dict(memo) if memo is not None else {}
    if memo is not None:
        memo.clear()
    for pod in pods:
        m = meta_of(pod)
        name, rv = str(m.get("name") or ""), str(m.get("resourceVersion") or "")
        known = previous.get(name)
        if known is not None and known[0] == rv and rv:
            entries = known[1]
        else:
            entries = pod_entries(svc, pod)
        if memo is not None:
            memo[name] = (rv, entries)
        for ready, address, port in entries:
            field = "addresses" if ready else "notReadyAddresses"
            subsets.append({field: [address], "ports": [port]} if port is not None
                           else {field: [address]})
            if ready:
                ready_n += 1
            else:
                not_ready_n += 1
    return repack_subsets(subsets), ready_n, not_ready_n


def _address_count(subsets: list[Mapping[str, Any]]) -> int:
    return sum(len(s.get("addresses") or ()) + len(s.get("notReadyAddresses") or ())
               for s in subsets)


def truncate_endpoints(endpoints: dict[str, Any]) -> bool:
    """Cut the subsets to :data:`MAX_CAPACITY` addresses, proportionally per subset and
    ready ones first (upstream truncateEndpoints); True if anything was cut."""
    subsets = endpoints.get("subsets") or []
    total_ready = sum(len(s.get("addresses") or ()) for s in subsets)
    total_not_ready = sum(len(s.get("notReadyAddresses") or ()) for s in subsets)
    if total_ready + total_not_ready <= MAX_CAPACITY:
        return False
    truncate_ready = total_ready > MAX_CAPACITY
    max_n, num_total = (MAX_CAPACITY, total_ready) if truncate_ready else \
        (MAX_CAPACITY - total_ready, total_not_ready)
    can_be_added = max_n
    for subset in subsets:
        field = "addresses" if truncate_ready else "notReadyAddresses"
        in_subset = len(subset.get(field) or ())
        to_add = min(math.ceil(in_subset / num_total * max_n), can_be_added)
        if truncate_ready:
            subset["addresses"] = (subset.get("addresses") or [])[:to_add]
            subset.pop("notReadyAddresses", None)
            can_be_added -= len(subset["addresses"])
        else:
            subset["notReadyAddresses"] = (subset.get("notReadyAddresses") or [])[:to_add]
            can_be_added -= len(subset["notReadyAddresses"])
        for key in ("addresses", "notReadyAddresses"):
            if key in subset and not subset[key]:
                del subset[key]
    return True


def _canonical_subsets(subsets: Any) -> Any:
    """Subsets for comparison: empty lists and fields dropped, targetRef without RV."""
    out = []
    for s in subsets or ():
        cs: dict[str, Any] = {}
        for key in ("addresses", "notReadyAddresses"):
            addrs = []
            for a in s.get(key) or ():
                ca = {k: v for k, v in a.items() if v not in ("", None) and k != "targetRef"}
                ref = a.get("targetRef")
                if ref:
                    ca["targetRef"] = {k: v for k, v in ref.items()
                                       if k != "resourceVersion" and v not in ("", None)}
                addrs.append(ca)
            if addrs:
                cs[key] = addrs
        ports = [{k: v for k, v in p.items() if v not in ("", None)} for p in s.get("ports") or ()]
        if ports:
            cs["ports"] = ports
        out.append(cs)
    return out


def _labels_correct(ep_labels: Mapping[str, str], svc_labels: Mapping[str, str]) -> bool:
    """upstream labelsCorrectForEndpoints."""
    if ep_labels.get(ENDPOINTS_LABEL_MANAGED_BY) != CONTROLLER_NAME:
        return False
    skipped = 0
    for k, v in ep_labels.items():
        if k in (IS_HEADLESS_SERVICE, ENDPOINTS_LABEL_MANAGED_BY):
            skipped += 1
        elif svc_labels.get(k) != v:
            return False
    return len(svc_labels) == len(ep_labels) - skipped


def _capacity_annotation_correct(annotations: Mapping[str, str],
                                 subsets: list[Mapping[str, Any]]) -> bool:
    if _address_count(subsets) > MAX_CAPACITY:
        return False
    return ENDPOINTS_OVER_CAPACITY not in annotations


class EndpointController(ControllerHost):
    """Keeps ``endpoints/<service>`` matching the ready and not-ready pods a Service selects."""

    name = "endpoint"
    default_workers = 5

    def __init__(self, *, client: Client, pod_informer: GenericInformer,
                 service_informer: GenericInformer, endpoints_informer: GenericInformer,
                 recorder: EventRecorder | None = None, batch_period: float = 0.0,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.client = client
        self.recorder = recorder
        self.batch_period = batch_period
        self.service_lister = service_informer.lister
        self.pod_lister = pod_informer.lister
        self.endpoints_lister = endpoints_informer.lister
        self.trigger_times = TriggerTimeTracker()
        self._stale: dict[tuple[str, str], str] = {}
        # per Service: (its resourceVersion, its pods' entries): compute_subsets' memo
        self._memo: dict[tuple[str, str], tuple[str, PodMemo]] = {}
        self.controller = Controller("endpoint", self.sync_service, max_retries=MAX_RETRIES,
                                     clock=self._time)
        self._endpoints_synced = endpoints_informer.informer.has_synced
        c = self.controller
        c.watch(service_informer)  # add / update / delete: the Service's key
        c.watch(pod_informer, ResourceEventHandlerFuncs(
            add_func=lambda pod: self._on_pod(None, pod),
            update_func=self._on_pod,
            delete_func=lambda pod: self._on_pod(pod, None)))
        c.watch(endpoints_informer, ResourceEventHandlerFuncs(delete_func=c.enqueue))

    def _on_pod(self, old: Any, new: Any) -> None:
        pod = new if new is not None else old
        pod = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
        ns = str(meta_of(pod).get("namespace") or "")
        services = self.service_lister.by_namespace(ns).list()
        if not services:
            # No Service in the pod's namespace: no key to queue, whatever changed (as the
            # EndpointSlice controller's handler)
            return
        for key in services_to_update(services, old, new):
            self.controller.queue.add_after(key, self.batch_period)

    async def run(self, workers: int | None = None) -> None:
        """The workers, and once the caches synced, every Endpoints' key (checkLeftoverEndpoints)."""
        leftovers = asyncio.create_task(self._check_leftover_endpoints())
        try:
            await super().run(workers)
        finally:
            leftovers.cancel()
            await asyncio.gather(leftovers, return_exceptions=True)

    async def _check_leftover_endpoints(self) -> None:
        # an informer's list: I/O progress, real time (a progress poll)
        await poll_until(self._endpoints_synced, 0.1)
        for ep in self.endpoints_lister.list():
            if LEADER_ELECTION_RECORD_ANNOTATION in (meta_of(ep).get("annotations") or {}):
                continue  # a leader-election lock of an old component
            self.controller.enqueue_key(meta_namespace_key(ep))

    def _cached_endpoints(self, ns: str, name: str) -> Mapping[str, Any] | None:
        try:
            ep: Mapping[str, Any] = self.endpoints_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            return None
        return ep

    def _is_stale(self, ns: str, name: str, cached: Mapping[str, Any] | None) -> bool:
        """The cache still holds the version our last PUT replaced (upstream's
        staleEndpointsTracker)."""
        return cached is not None and \
            self._stale.get((ns, name)) == meta_of(cached).get("resourceVersion")

    async def _await_own_write(self, ns: str, name: str, key: str) -> Mapping[str, Any] | None:
        """The cached Endpoints once it holds our last write. Upstream fails the sync at
        once and retries after the rate limiter's delay; in one event loop the watch
        event of our own PUT is usually already read, only not yet handled, so a short
        wait lets the informer catch up without a retry (the EndpointSlice controller
        does the same). Still stale after STALE_CACHE_WAIT: upstream's error, retried."""
        # Waiting for the informer to deliver our own write is I/O progress: real time
        # (a progress poll, pykcm.api.progress_poll: not slept out on virtual time).
        deadline = REAL_CLOCK.monotonic() + STALE_CACHE_WAIT
        while REAL_CLOCK.monotonic() < deadline:
            await PROGRESS_POLLS.sleep(
                lambda: not self._is_stale(ns, name, self._cached_endpoints(ns, name)),
                STALE_CACHE_POLL)
            cached = self._cached_endpoints(ns, name)
            if not self._is_stale(ns, name, cached):
                return cached
        raise RuntimeError(f"endpoints informer cache is out of date, resource version "
                           f"{self._stale.get((ns, name))} already processed for "
                           f"endpoints {key}")

    async def sync_service(self, key: str) -> None:
        ns, _, name = key.rpartition("/")
        try:
            svc: Mapping[str, Any] = self.service_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            try:
                await self.client.delete("endpoints", name, ns)
            except ApiError as del_exc:
                if not is_not_found(del_exc):
                    raise
            self.trigger_times.delete_service(ns, name)
            self._stale.pop((ns, name), None)
            self._memo.pop((ns, name), None)
            return
        spec = svc.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        # Checked before anything is computed (upstream computes the subsets first; they
        # have no side effect): a stale cache is common right after our own PUT, and
        # computing 1,000 addresses for nothing held the event loop the slices need.
        cached = self._cached_endpoints(ns, name)
        if self._is_stale(ns, name, cached):
            cached = await self._await_own_write(ns, name, key)
        pods = self.pod_lister.by_namespace(ns).list(selector_from_set(spec["selector"]))
        trigger_time = self.trigger_times.compute(ns, svc, pods)
        svc_rv = str(meta_of(svc).get("resourceVersion") or "")
        memo_rv, memo = self._memo.get((ns, name), ("", {}))
        if memo_rv != svc_rv or not svc_rv:
            memo = {}
        self._memo[(ns, name)] = (svc_rv, memo)
        subsets, ready_n, not_ready_n = compute_subsets(svc, pods, memo)
        svc_labels = dict(meta_of(svc).get("labels") or {})
        # A copy of the top level and metadata is enough: below, every change to `new`
        # assigns a fresh value (subsets, labels, annotations), never edits a cached one.
        current: dict[str, Any] | None = None if cached is None else {
            **cached, "metadata": dict(meta_of(cached))}
        if current is not None:
            cur_subsets = current.get("subsets") or []
            want = _canonical_subsets(subsets)
            # (repack_subsets copies what it keeps: the cached subsets stay untouched)
            if ((_canonical_subsets(cur_subsets) == want
                 or _canonical_subsets(repack_subsets(cur_subsets)) == want)
                    and _labels_correct(meta_of(current).get("labels") or {}, svc_labels)
                    and _capacity_annotation_correct(meta_of(current).get("annotations") or {},
                                                     cur_subsets)):
                return
            new = current
        else:
            new = {"apiVersion": "v1", "kind": "Endpoints",
                   "metadata": {"name": name, "namespace": ns}}
        new["subsets"] = subsets
        meta = new.setdefault("metadata", {})
        labels = dict(svc_labels)
        annotations = dict(meta.get("annotations") or {})
        if trigger_time is not None:
            annotations[ENDPOINTS_LAST_CHANGE_TRIGGER_TIME] = format_rfc3339_nano(trigger_time)
        else:
            annotations.pop(ENDPOINTS_LAST_CHANGE_TRIGGER_TIME, None)
        if truncate_endpoints(new):
            annotations[ENDPOINTS_OVER_CAPACITY] = TRUNCATED
        else:
            annotations.pop(ENDPOINTS_OVER_CAPACITY, None)
        if not is_service_ip_set(svc):
            labels[IS_HEADLESS_SERVICE] = ""
        else:
            labels.pop(IS_HEADLESS_SERVICE, None)
        labels[ENDPOINTS_LABEL_MANAGED_BY] = CONTROLLER_NAME
        meta["labels"] = labels
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
        if not new["subsets"]:
            new.pop("subsets")
        log.debug("Update endpoints %s: %d ready, %d not ready", key, ready_n, not_ready_n)
        try:
            if current is None:
                await self.client.create("endpoints", new, ns)
            else:
                updated = await self.client.update("endpoints", new, ns)
                old_rv = meta_of(current).get("resourceVersion")
                if meta_of(updated).get("resourceVersion") != old_rv:
                    self._stale[(ns, name)] = str(old_rv)
        except ApiError as exc:
            if current is None and is_forbidden(exc) and has_status_cause(
                    exc, NAMESPACE_TERMINATING_CAUSE):
                return
            if self.recorder is not None:
                ref = {**new, "apiVersion": "v1", "kind": "Endpoints"}
                if current is None:
                    self.recorder.event(ref, EVENT_TYPE_WARNING, "FailedToCreateEndpoint",
                                        f"Failed to create endpoint for service {ns}/{name}: "
                                        f"{exc}")
                else:
                    self.recorder.event(ref, EVENT_TYPE_WARNING, "FailedToUpdateEndpoint",
                                        f"Failed to update endpoint {ns}/{name}: {exc}")
            raise
