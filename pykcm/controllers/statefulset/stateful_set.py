"""The StatefulSet controller: pods with stable names, identities and storage, in order.

kube-controller-manager v1.36 ``pkg/controller/statefulset/stateful_set.go``.

Data flow::

    StatefulSet informer ── add / update / delete ──► enqueue key
    Pod informer ── add / update / delete of an owned pod ──► enqueue its set (again after
                    minReadySeconds when it turned ready); orphans: the sets selecting them
                                       │
                    Controller("statefulset"): 5 workers (--concurrent-statefulset-syncs)
                                       ▼
    sync(key): the set from the cache → adopt orphan ControllerRevisions it selects →
        its pods (adopting matching orphans named <set>-<n>, releasing the others) →
        DefaultStatefulSetControl.update_stateful_set (stateful_set_control.py) →
        minReadySeconds > 0 and ready != available: sync again when the next pod becomes
        available

The PersistentVolumeClaim informer feeds the claim lookups; on an API server that does
not serve claims (pykcm's embedded one, for now) the controller runs without it: sets
without volumeClaimTemplates work as upstream, those with templates fail to create
their claims (FailedCreate events) where upstream would not start at all.

The v1.36 consistency store (KEP-5647, StaleControllerConsistencyStatefulSet, on in
v1.36; :mod:`pykcm.controller.consistency`): the resourceVersions of the pods and
claims this controller writes and of its status writes are recorded per set, and a
sync first waits (the key retried with the rate limiter) until the pod, claim and
set caches have seen them. Without it a sync right after a status write computed
the next status from the older cached set, and its PUT failed with 409 Conflict.

Left out: the statefulset metrics.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.api.owner_refs import get_controller_of
from pykcm.api.pod_util import is_pod_ready
from pykcm.api.randomness import RandomSource, random_of
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown, deleted_object, meta_namespace_key
from pykcm.client import Client
from pykcm.controller.active_pods import (
    add_pod_controller_indexer,
    add_pod_orphan_labels_indexer,
    filter_pods_by_owner_and_selector,
    find_min_next_pod_availability_check,
)
from pykcm.controller.consistency import (
    ConsistencyStore,
    ConsistencyStoreLike,
    NoopConsistencyStore,
)
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.controller_ref_manager import (
    CanAdopt,
    PodControllerRefManager,
    recheck_live_controller,
)
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controller.history import History, add_controller_revision_controller_indexer
from pykcm.controller.owner_resolver import OwnerResolver
from pykcm.controller.pod_control import PodControl, RealPodControl
from pykcm.controllers.statefulset.stateful_pod_control import StatefulPodControl
from pykcm.controllers.statefulset.stateful_set_control import DefaultStatefulSetControl
from pykcm.controllers.statefulset.stateful_set_utils import (
    CLAIMS_GROUP_RESOURCE,
    SET_GROUP_RESOURCE,
    is_member_of,
    warm_up,
)
from pykcm.informers.generic import GenericInformer

__all__ = ["CONCURRENT_STATEFUL_SET_SYNCS", "CONTROLLER_NAME", "StatefulSetController"]

log = logging.getLogger("pykcm.controllers.statefulset")

CONTROLLER_NAME: Final = "statefulset"
CONCURRENT_STATEFUL_SET_SYNCS: Final = 5
SET_API_VERSION: Final = "apps/v1"
SET_KIND: Final = "StatefulSet"



class StatefulSetController(ControllerHost):
    """Keeps each StatefulSet's ordinal pods (and their claims) as its spec says.

    ``pvc_informer`` may be None (an API server without PersistentVolumeClaims).
    ``max_unavailable_stateful_set`` is the MaxUnavailableStatefulSet feature gate (beta,
    off by default in v1.36).
    """

    default_workers = CONCURRENT_STATEFUL_SET_SYNCS

    def __init__(self, *, pod_informer: GenericInformer, set_informer: GenericInformer,
                 pvc_informer: GenericInformer | None, revision_informer: GenericInformer,
                 client: Client, recorder: EventRecorder, pod_control: PodControl | None = None,
                 max_unavailable_stateful_set: bool = False,
                 clock: Clock | Callable[[], float] | None = None,
                 stale_controller_consistency: bool = True,
                 rng: RandomSource | None = None) -> None:
        self.name = CONTROLLER_NAME
        rng = random_of(rng)  # the conflict retries' jitter
        self.client = client
        self.recorder = recorder
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.now
        getters = {"pods": pod_informer.informer.last_store_sync_resource_version,
                   SET_GROUP_RESOURCE: set_informer.informer.last_store_sync_resource_version}
        if pvc_informer is not None:
            getters[CLAIMS_GROUP_RESOURCE] = \
                pvc_informer.informer.last_store_sync_resource_version
        self.consistency: ConsistencyStoreLike = (
            ConsistencyStore(getters) if stale_controller_consistency
            else NoopConsistencyStore())
        self.pod_control: PodControl = (pod_control if pod_control is not None
                                        else RealPodControl(client, recorder,
                                                            self._pod_written))
        self.controller = Controller(CONTROLLER_NAME, self.sync, clock=self._time)
        self.queue = self.controller.queue

        rev_inf = revision_informer.informer
        add_controller_revision_controller_indexer(rev_inf)
        self.revision_indexer = rev_inf.get_indexer()
        reg = rev_inf.add_event_handler(ResourceEventHandlerFuncs())
        self.controller.add_synced(reg.has_synced)

        claim_indexer = None
        if pvc_informer is not None:
            pvc_inf = pvc_informer.informer
            claim_indexer = pvc_inf.get_indexer()
            reg = pvc_inf.add_event_handler(ResourceEventHandlerFuncs())
            self.controller.add_synced(reg.has_synced)

        pod_inf = pod_informer.informer
        add_pod_controller_indexer(pod_inf)
        add_pod_orphan_labels_indexer(pod_inf)
        self.pod_indexer = pod_inf.get_indexer()
        reg = pod_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_pod, update_func=self.update_pod, delete_func=self.delete_pod))
        self.controller.add_synced(reg.has_synced)

        set_inf = set_informer.informer
        self.set_indexer = set_inf.get_indexer()
        self.set_lister = set_informer.lister
        self.owners = OwnerResolver(SET_KIND, set_informer)
        reg = set_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.enqueue, update_func=lambda old, cur: self.enqueue(cur),
            delete_func=self.enqueue))
        self.controller.add_synced(reg.has_synced)

        self.stateful_pod_control = StatefulPodControl(client, self.pod_indexer, claim_indexer,
                                                       recorder, self.consistency,
                                                       clock=self._time,
                                                       rng=rng.stream("pod-control"))
        self.history = History(client, self.revision_indexer, clock=self._time)
        # The first StatefulSet's first pod would otherwise wait for the patch schema.
        warm_up()
        self.control = DefaultStatefulSetControl(
            self.stateful_pod_control, client, self.set_indexer, self.history,
            max_unavailable_stateful_set=max_unavailable_stateful_set,
            consistency=self.consistency, clock=self._time, rng=rng.stream("set-control"))

    # -- handlers ----------------------------------------------------------------------------------

    def enqueue(self, obj: Any) -> None:
        set_ = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(obj, DeletedFinalStateUnknown):
            self.queue.add(obj.key)
            return
        self.queue.add(meta_namespace_key(set_))

    def resolve_controller_ref(self, namespace: str,
                               ref: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return self.owners.resolve(namespace, ref)

    def get_stateful_sets_for_pod(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        out = self.owners.selecting(pod)
        if len(out) > 1:
            log.error("More than one StatefulSet is selecting pods with labels %s: %s",
                      meta_of(pod).get("labels"), [meta_of(s).get("name") for s in out])
        return out

    def add_pod(self, pod: Any) -> None:
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            self.delete_pod(pod)
            return
        ref = get_controller_of(pod)
        if ref is not None:
            # Only a sync to trigger: the StatefulSet controller keeps no expectations
            # (as upstream), it creates one ordinal at a time and reads the cache.
            set_ = self.resolve_controller_ref(str(meta.get("namespace") or ""), ref)
            if set_ is not None:
                self.enqueue(set_)
            return
        for set_ in self.get_stateful_sets_for_pod(pod):
            self.enqueue(set_)

    def update_pod(self, old: Any, cur: Any) -> None:
        old_meta, cur_meta = meta_of(old), meta_of(cur)
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return
        # No deletionTimestamp check, unlike the ReplicaSet and DaemonSet handlers:
        # upstream's StatefulSet updatePod has none (a terminating pod's update goes
        # to its owner like any other), nor a second of slack on minReadySeconds.
        update = self.owners.updated(old, cur)
        if update.previous is not None:
            self.enqueue(update.previous)
        set_ = update.current
        if set_ is not None:
            self.enqueue(set_)
            min_ready = int((set_.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(old) and is_pod_ready(cur) and min_ready > 0:
                self.queue.add_after(meta_namespace_key(set_), float(min_ready))
        for set_ in update.candidates:
            self.enqueue(set_)

    def delete_pod(self, obj: Any) -> None:
        pod = deleted_object(obj)
        if pod is None:
            return
        set_ = self.owners.owner_of(pod)
        if set_ is not None:
            self.enqueue(set_)

    # -- sync --------------------------------------------------------------------------------------

    def _can_adopt(self, set_: Mapping[str, Any]) -> CanAdopt:
        return recheck_live_controller(self.client, "statefulsets", set_, SET_KIND)

    async def adopt_orphan_revisions(self, set_: Mapping[str, Any]) -> None:
        orphans = [r for r in self.control.list_revisions(set_) if get_controller_of(r) is None]
        if not orphans:
            return
        try:
            await self._can_adopt(set_)()
        except Exception as exc:
            raise RuntimeError(f"can't adopt ControllerRevisions: {exc}") from exc
        await self.control.adopt_orphan_revisions(set_, orphans)

    async def get_pods_for_stateful_set(self, set_: Mapping[str, Any]
                                        ) -> list[Mapping[str, Any]]:
        selector = selector_from_label_selector((set_.get("spec") or {}).get("selector"))
        # orphans the selector does not match would be ignored by the claim
        pods = filter_pods_by_owner_and_selector(self.pod_indexer, set_, SET_KIND, selector)
        manager = PodControllerRefManager(self.pod_control, set_, selector, SET_API_VERSION,
                                          SET_KIND, self._can_adopt(set_))
        return await manager.claim_pods(pods, lambda p: is_member_of(set_, p))

    async def sync(self, key: str) -> None:
        start = time.perf_counter()  # a log of real work
        try:
            await self._sync(key)
        finally:
            log.debug("Finished syncing statefulset %s (%.1f ms)", key,
                      (time.perf_counter() - start) * 1000)

    def _pod_written(self, pod: Mapping[str, Any], ref: Mapping[str, Any] | None) -> None:
        """RealPodControl's on_write (adoption patches): the pod's resourceVersion."""
        if ref is None:
            return
        meta = meta_of(pod)
        self.consistency.wrote_at(f"{meta.get('namespace')}/{ref.get('name')}",
                                  str(ref.get("uid") or ""), "pods",
                                  str(meta.get("resourceVersion") or ""))

    async def _sync(self, key: str) -> None:
        # Our own writes first reach the caches: acting on older ones would redo them.
        self.consistency.ensure_ready(key)
        set_: Mapping[str, Any] | None = self.set_indexer.get_by_key(key)
        if set_ is None:
            self.consistency.clear(key)
            log.info("StatefulSet %s has been deleted", key)
            return
        try:
            selector_from_label_selector((set_.get("spec") or {}).get("selector"))
        except SelectorParseError as exc:
            log.error("Error converting StatefulSet %s selector: %s", key, exc)
            return
        await self.adopt_orphan_revisions(set_)
        pods = await self.get_pods_for_stateful_set(set_)
        now = self.clock()
        status = await self.control.update_stateful_set(set_, pods, now)
        min_ready = int((set_.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready > 0 and status is not None and \
                status.get("readyReplicas") != status.get("availableReplicas"):
            delay: float = float(min_ready)
            check = find_min_next_pod_availability_check(pods, min_ready, now, self.clock)
            if check is not None:
                delay = check
            self.queue.add_after(key, delay)
