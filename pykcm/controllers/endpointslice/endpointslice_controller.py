"""EndpointSliceController: the EndpointSlices of every Service with a selector.

kube-controller-manager v1.36 ``pkg/controller/endpointslice/endpointslice_controller.go``
(manager name ``endpointslice-controller``, client ``endpointslice-controller``, label
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``, event
source ``endpoint-slice-controller``).

Data flow::

    service informer ── add / update / delete ──► enqueue ns/name
    pod informer ── add / update / delete ──► the Services concerned (util.services_to_update)
                    ─► enqueue after --endpointslice-updates-batch-period (0: at once)
    endpointslice informer ── a slice of ours changed by someone else (newer generation than
                    we wrote), its service-name or managed-by label changed, or deleted
                    when we did not delete it ─► enqueue its Service after
                    max(1 s, batch period)
    node informer: the zone of endpoints (nodes are listed, not watched for hints)
                                │
        Controller "endpoint_slice" (1 s .. 1000 s per-item backoff, 10 qps / 100 burst,
                                     15 retries, --concurrent-service-endpoint-syncs)
                                ▼
    sync_service(key)
        Service gone ─► forget it (the garbage collector deletes its slices: they are owned)
        ExternalName or no selector ─► nothing
        slices labelled with the Service and this controller, not being deleted;
        the cache misses our last writes ─► wait up to 0.25 s for them, then
        retry later (stale cache)
        Reconciler.reconcile (reconciler.py) ─► creates, updates, deletes
        a failure ─► Warning FailedToUpdateEndpointSlices on the Service, retry

Deviations: a pykcm controller manager on an API server that does not serve
discovery.k8s.io/v1 skips this controller (pykcm.manager.builtin); upstream would
start it and fail to list forever. A sync that finds the slice cache behind this
controller's own last writes waits up to STALE_CACHE_WAIT for the informer to
catch up before it gives up with upstream's error (and 1 s backoff): in one event
loop the watch events of our own writes are often still unread when the next sync
starts right after the write (a goroutine would have handled them meanwhile), and
upstream's immediate error then delayed every readiness wave by up to the 1 s
backoff (bench/endpointslices.py).
Left out: upstream's ``endpoint_slice_controller_*`` metrics and its node
topology queue (only topology-aware hints use it, see reconciler.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.endpoints import LABEL_MANAGED_BY, LABEL_SERVICE_NAME
from pykcm.api.labels import selector_from_set
from pykcm.api.progress_poll import PROGRESS_POLLS
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.client.errors import ApiError, is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.event_recorder import EVENT_TYPE_WARNING, EventRecorder
from pykcm.controllers.endpointslice.reconciler import Reconciler
from pykcm.controllers.endpointslice.util import (
    EndpointSliceTracker,
    TriggerTimeTracker,
    services_to_update,
)
from pykcm.informers.generic import GenericInformer
from pykcm.workqueue import BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter

__all__ = ["CONTROLLER_NAME", "EVENT_SOURCE", "MAX_RETRIES", "EndpointSliceController"]

log = logging.getLogger("pykcm.controllers.endpointslice")

CONTROLLER_NAME: Final = "endpointslice-controller.k8s.io"
"""The ``endpointslice.kubernetes.io/managed-by`` value of the slices it owns."""
EVENT_SOURCE: Final = "endpoint-slice-controller"
MAX_RETRIES: Final = 15
ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY: Final = 1.0
DEFAULT_SYNC_BACKOFF: Final = 1.0
MAX_SYNC_BACKOFF: Final = 1000.0
STALE_CACHE_WAIT: Final = 0.25
"""Seconds a sync waits for the slice informer to deliver this controller's own writes."""
STALE_CACHE_POLL: Final = 0.005


def _unwrap(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class StaleInformerCache(RuntimeError):
    """The EndpointSlice cache has not seen this controller's last writes yet."""


class EndpointSliceController(ControllerHost):
    """Keeps each selector Service's EndpointSlices matching its pods."""

    name = "endpoint_slice"
    default_workers = 5

    def __init__(self, *, client: Client, pod_informer: GenericInformer,
                 service_informer: GenericInformer, node_informer: GenericInformer,
                 endpointslice_informer: GenericInformer, max_endpoints_per_slice: int = 100,
                 batch_period: float = 0.0, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.client = client
        self.recorder = recorder
        self.batch_period = batch_period
        self.service_lister = service_informer.lister
        self.pod_lister = pod_informer.lister
        self.slice_lister = endpointslice_informer.lister
        self.tracker = EndpointSliceTracker()
        self.trigger_times = TriggerTimeTracker()
        self.reconciler = Reconciler(client=client, node_lister=node_informer.lister,
                                     max_endpoints_per_slice=max_endpoints_per_slice,
                                     tracker=self.tracker, controller_name=CONTROLLER_NAME)
        self.controller = Controller(
            "endpoint_slice", self.sync_service, max_retries=MAX_RETRIES,
            rate_limiter=MaxOfRateLimiter(
                ItemExponentialFailureRateLimiter(DEFAULT_SYNC_BACKOFF, MAX_SYNC_BACKOFF),
                BucketRateLimiter(10.0, 100, clock=self._time)),
            clock=self._time)
        c = self.controller
        c.watch(service_informer)
        c.watch(pod_informer, ResourceEventHandlerFuncs(
            add_func=lambda pod: self._on_pod(None, pod), update_func=self._on_pod,
            delete_func=lambda pod: self._on_pod(pod, None)))
        c.watch(endpointslice_informer, ResourceEventHandlerFuncs(
            add_func=self._on_slice_add, update_func=self._on_slice_update,
            delete_func=self._on_slice_delete))
        c.watch(node_informer, ResourceEventHandlerFuncs())

    # -- handlers ------------------------------------------------------------------------

    def _on_pod(self, old: Any, new: Any) -> None:
        pod = _unwrap(new if new is not None else old)
        ns = str(meta_of(pod).get("namespace") or "")
        services = self.service_lister.by_namespace(ns).list()
        if not services:
            # No Service in the pod's namespace: no key to queue, whatever changed
            # (upstream computes the change first; the answer is the same empty set, and
            # this handler sees every pod event of the cluster)
            return
        for key in services_to_update(services, old, new):
            self.controller.queue.add_after(key, self.batch_period)

    def _queue_service_for(self, slice_: Mapping[str, Any]) -> None:
        m = meta_of(slice_)
        svc = (m.get("labels") or {}).get(LABEL_SERVICE_NAME)
        if not svc:
            log.warning("EndpointSlice %s/%s missing %s label", m.get("namespace"),
                        m.get("name"), LABEL_SERVICE_NAME)
            return
        self.controller.queue.add_after(f"{m.get('namespace')}/{svc}",
                                        max(ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY,
                                            self.batch_period))

    def _on_slice_add(self, s: Any) -> None:
        if self.reconciler.managed_by_controller(s) and self.tracker.should_sync(s):
            self._queue_service_for(s)

    def _on_slice_update(self, old: Any, new: Any) -> None:
        svc = (meta_of(new).get("labels") or {}).get(LABEL_SERVICE_NAME)
        prev = (meta_of(old).get("labels") or {}).get(LABEL_SERVICE_NAME)
        if svc != prev:
            self._queue_service_for(new)
            self._queue_service_for(old)
            return
        managed_changed = (self.reconciler.managed_by_controller(old)
                           != self.reconciler.managed_by_controller(new))
        if managed_changed or (self.reconciler.managed_by_controller(new)
                               and self.tracker.should_sync(new)):
            self._queue_service_for(new)

    def _on_slice_delete(self, s: Any) -> None:
        s = _unwrap(s)
        if self.reconciler.managed_by_controller(s) and self.tracker.has(s) \
                and not self.tracker.handle_deletion(s):
            self._queue_service_for(s)

    # -- sync ----------------------------------------------------------------------------

    async def sync_service(self, key: str) -> None:
        ns, _, name = key.rpartition("/")
        try:
            svc: Mapping[str, Any] = self.service_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            self.trigger_times.delete_service(ns, name)
            self.tracker.delete_service(ns, name)
            return
        spec = svc.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        slices = self._slices(ns, name)
        if self.tracker.stale_slices(ns, name, slices):
            slices = await self._await_own_writes(ns, name)
        pods = self.pod_lister.by_namespace(ns).list(selector_from_set(spec["selector"]))
        trigger_time = self.trigger_times.compute(ns, svc, pods)
        try:
            await self.reconciler.reconcile(svc, pods, slices, trigger_time)
        except Exception as exc:
            if self.recorder is not None:
                self.recorder.event({**svc, "apiVersion": "v1", "kind": "Service"},
                                    EVENT_TYPE_WARNING, "FailedToUpdateEndpointSlices",
                                    f"Error updating Endpoint Slices for Service {ns}/{name}: "
                                    f"{exc}")
            raise

    def _slices(self, ns: str, name: str) -> list[Mapping[str, Any]]:
        """The Service's slices of this controller in the cache, not being deleted."""
        return [s for s in self.slice_lister.by_namespace(ns).list(selector_from_set(
            {LABEL_SERVICE_NAME: name, LABEL_MANAGED_BY: CONTROLLER_NAME}))
            if not meta_of(s).get("deletionTimestamp")]

    async def _await_own_writes(self, ns: str, name: str) -> list[Mapping[str, Any]]:
        """The slices once the cache holds our last writes; StaleInformerCache if it still
        does not after STALE_CACHE_WAIT (module doc: sleeping lets the informer read the
        watch events already on their way)."""
        # Waiting for the informer to deliver our own write is I/O progress: real time
        # (a progress poll, pykcm.api.progress_poll: not slept out on virtual time).
        deadline = REAL_CLOCK.monotonic() + STALE_CACHE_WAIT
        while REAL_CLOCK.monotonic() < deadline:
            await PROGRESS_POLLS.sleep(lambda: not self.tracker.stale_slices(
                ns, name, self._slices(ns, name)), STALE_CACHE_POLL)
            slices = self._slices(ns, name)
            if not self.tracker.stale_slices(ns, name, slices):
                return slices
        raise StaleInformerCache("EndpointSlice informer cache is out of date")
