"""The ReplicaSet controller: keeps ``spec.replicas`` pods running for every ReplicaSet.

kube-controller-manager v1.36 ``pkg/controller/replicaset/replica_set.go``.

Data flow::

    ReplicaSet informer ── add / update / delete ──► enqueue rs key
                                                   (a delete also drops its expectations)
    Pod informer ── add (owned) ─────► creation observed, enqueue owner
                 ── add (orphan) ────► enqueue every ReplicaSet whose selector matches
                 ── update ──────────► deletionTimestamp set: as a delete; controllerRef
                 │                     changed: enqueue old owner; owned: enqueue owner (and
                 │                     again after minReadySeconds when it turned ready);
                 │                     orphan whose labels/ref changed: enqueue matching RSs
                 ── delete ──────────► deletion observed (by pod key), enqueue owner
                                               │
                        Controller("replicaset"): RateLimitingQueue, 5 workers by default
                                               ▼
    sync_replica_set(key)
        ReplicaSet from the cache (gone: forget its expectations)
        pods: podController index → the RS's pods + the namespace's orphans
        active pods → claim (adopt matching orphans, release non-matching own pods)
        expectations satisfied and not being deleted → manage_replicas:
            too few:  create min(diff, burstReplicas) in slow-start batches (1, 2, 4, ...)
            too many: delete min(diff, burstReplicas), chosen by ActivePodsWithRanks
                      (ranked by the pods of the whole family on the same node)
        status (replicas, fullyLabeled, ready, available, terminating, ReplicaFailure)
            → PUT /status if it changed
        minReadySeconds > 0 and ready != available → sync again when the next pod
            becomes available
        a manage_replicas error is raised after the status write: the key is retried
            through the rate limiter

Expectations (:class:`~pykcm.controller.UIDTrackingControllerExpectations`)
keep a sync from acting on a cache that has not yet seen its own writes:
creations are counted, deletions are tracked by pod key so that the update
setting ``deletionTimestamp`` and the final delete count once.

Events (through the PodControl, on the ReplicaSet): SuccessfulCreate,
FailedCreate, SuccessfulDelete, FailedDelete.

The consistency store (KEP-5647, StaleControllerConsistencyReplicaSet, on in
v1.36; :mod:`pykcm.controller.consistency`): the resourceVersions of the
pods this controller created or patched (RealPodControl's ``on_write``) and
of its status writes are remembered per ReplicaSet, and a sync first waits
(an error, retried by the rate limiter) until the pod and ReplicaSet caches
have reached them; a status PUT then no longer meets a 409 from its own
previous write. The ReplicationManager subclass runs without it, as upstream.

Left out: the replicaset metrics (sorting_deletion_age_ratio, the requeue
skips of the consistency store).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock, clock_of
from pykcm.api.labels import LabelSelector, SelectorParseError, selector_from_label_selector
from pykcm.api.owner_refs import get_controller_of, new_controller_ref
from pykcm.api.pod_util import is_pod_ready
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown, deleted_object, meta_namespace_key
from pykcm.client import Client, ResourceRef
from pykcm.client.errors import has_status_cause, is_not_found
from pykcm.controller.active_pods import (
    add_pod_controller_indexer,
    add_pod_orphan_labels_indexer,
    filter_claimed_pods,
    filter_pods_by_owner_and_selector,
    find_min_next_pod_availability_check,
    get_pods_ranked_by_related_pods_on_same_node,
    split_active_and_terminating,
)
from pykcm.controller.consistency import (
    ConsistencyStore,
    ConsistencyStoreLike,
    NoopConsistencyStore,
)
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.controller.controller_ref_manager import (
    PodControllerRefManager,
    recheck_live_controller,
)
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controller.expectations import UIDTrackingControllerExpectations
from pykcm.controller.owner_resolver import OwnerResolver
from pykcm.controller.pod_control import PodControl, RealPodControl
from pykcm.controller.slow_start import SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch
from pykcm.controllers.replicaset.replica_set_utils import (
    calculate_status,
    spec_replicas,
    update_replica_set_status,
)
from pykcm.informers.generic import GenericInformer

__all__ = [
    "BURST_REPLICAS",
    "CONCURRENT_RS_SYNCS",
    "CONTROLLER_NAME",
    "CONTROLLER_UID_INDEX",
    "ReplicaSetController",
    "get_pod_keys",
    "get_pods_to_delete",
]

log = logging.getLogger("pykcm.controllers.replicaset")

CONTROLLER_NAME: Final = "replicaset"
"""The controller's name (kube-controller-manager's ``--controllers`` name)."""

CONCURRENT_RS_SYNCS: Final = 5
"""Workers by default (kube-controller-manager's --concurrent-replicaset-syncs)."""

BURST_REPLICAS: Final = 500
"""At most this many pods are created or deleted by one sync (upstream BurstReplicas)."""

_SELECTORS_MAX: Final = 8192
"""Parsed selectors kept (by ReplicaSet UID and generation) before the table starts over."""

CONTROLLER_UID_INDEX: Final = "controllerUID"
"""Index of the ReplicaSet cache by the UID of each ReplicaSet's controller (its Deployment)."""

RS_API_VERSION: Final = "apps/v1"
RS_KIND: Final = "ReplicaSet"
#: The ReplicaSets' group resource as the consistency store names it (GroupResource.String()).
RS_GROUP_RESOURCE: Final = "replicasets.apps"

# v1.NamespaceTerminatingCause: creates refused because the namespace is going away.
_NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"



POD_TEMPLATE_HASH_INDEX: Final = "replicaset/podTemplateHash"
"""Pods by ``namespace/<pod-template-hash label>`` (only pods carrying the label)."""
_HASH_LABEL: Final = "pod-template-hash"


def _pod_template_hash_index_func(pod: Any) -> list[str]:
    meta = pod.get("metadata") or {}
    h = (meta.get("labels") or {}).get(_HASH_LABEL)
    return [f"{meta.get('namespace') or ''}/{h}"] if h is not None else []


def _controller_uid_index_func(rs: Any) -> list[str]:
    ref = get_controller_of(rs)
    return [str(ref.get("uid", ""))] if ref is not None else []


def _has_status_cause(exc: BaseException, cause_type: str) -> bool:
    return has_status_cause(exc, cause_type)


def get_pod_keys(pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``namespace/name`` keys of ``pods`` (upstream controller.PodKey), as expectations track them."""
    return [f"{meta_of(p).get('namespace', '')}/{meta_of(p).get('name', '')}" for p in pods]


def get_pods_to_delete(filtered_pods: list[Any], related_pods: Sequence[Any], diff: int,
                       now: float | None = None) -> list[Any]:
    """The ``diff`` pods of ``filtered_pods`` to delete first (upstream getPodsToDelete).

    ``filtered_pods`` is sorted in place into deletion order (unless all of
    them go, which needs no order); ranks count the active ``related_pods``
    on each pod's node. ``now`` defaults to the current time.
    """
    if diff < len(filtered_pods):
        ranked = get_pods_ranked_by_related_pods_on_same_node(
            filtered_pods, related_pods, REAL_CLOCK.now() if now is None else now)
        ranked.sort()
    return filtered_pods[:diff]


class ReplicaSetController(ControllerHost):
    """Creates and deletes pods so each ReplicaSet has ``spec.replicas`` of them.

    Build it before the informer factory starts: it adds its indexes and
    handlers to ``pod_informer`` and ``rs_informer`` here. ``pod_control``
    defaults to a :class:`~pykcm.controller.pod_control.RealPodControl`
    recording events with ``recorder``. ``enable_status_terminating_replicas``
    is the DeploymentReplicaSetTerminatingReplicas feature gate (on by
    default, as in v1.36); ``clock`` gives epoch seconds (tests).
    """

    default_workers = CONCURRENT_RS_SYNCS
    controller_kind: str = RS_KIND
    """The kind of the controllers this one manages (ReplicationManager: ReplicationController)."""
    controller_api_version: str = RS_API_VERSION
    resource: ResourceRef = "replicasets"
    stale_controller_consistency: bool = True
    """StaleControllerConsistencyReplicaSet (the ReplicationManager has no such store)."""

    def __init__(self, *, pod_informer: GenericInformer, rs_informer: GenericInformer,
                 client: Client, recorder: EventRecorder, burst_replicas: int = BURST_REPLICAS,
                 pod_control: PodControl | None = None,
                 enable_status_terminating_replicas: bool = True,
                 clock: Clock | Callable[[], float] | None = None,
                 name: str = CONTROLLER_NAME) -> None:
        self.name = name
        self.client = client
        self.recorder = recorder
        self.burst_replicas = burst_replicas
        self.consistency: ConsistencyStoreLike = (
            ConsistencyStore({"pods": pod_informer.informer.last_store_sync_resource_version,
                              RS_GROUP_RESOURCE:
                                  rs_informer.informer.last_store_sync_resource_version})
            if self.stale_controller_consistency else NoopConsistencyStore())
        self.pod_control: PodControl = (pod_control if pod_control is not None
                                        else RealPodControl(client, recorder, self._pod_written))
        self.enable_status_terminating_replicas = enable_status_terminating_replicas
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.now
        self.expectations = UIDTrackingControllerExpectations(clock=self._time.monotonic)
        self._selectors: dict[tuple[str, int], LabelSelector] = {}
        self.controller = Controller(name, self.sync_replica_set, clock=self._time)
        self.queue = self.controller.queue

        rs_inf = rs_informer.informer
        if CONTROLLER_UID_INDEX not in rs_inf.get_indexer().get_indexers():
            rs_inf.add_indexers({CONTROLLER_UID_INDEX: _controller_uid_index_func})
        self.rs_indexer = rs_inf.get_indexer()
        self.rs_lister = rs_informer.lister
        self.owners = OwnerResolver(self.controller_kind, rs_informer, self.selector_of)
        reg = rs_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_rs, update_func=self.update_rs, delete_func=self.delete_rs))
        self.controller.add_synced(reg.has_synced)

        pod_inf = pod_informer.informer
        add_pod_controller_indexer(pod_inf)
        add_pod_orphan_labels_indexer(pod_inf)
        if POD_TEMPLATE_HASH_INDEX not in pod_inf.get_indexer().get_indexers():
            pod_inf.add_indexers({POD_TEMPLATE_HASH_INDEX: _pod_template_hash_index_func})
        self.pod_indexer = pod_inf.get_indexer()
        self.pod_lister = pod_informer.lister
        # Every pod change reaches the owner (host assignment, status...): the
        # sync reads only the cache, so spurious syncs are cheap.
        reg = pod_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_pod, update_func=self.update_pod, delete_func=self.delete_pod))
        self.controller.add_synced(reg.has_synced)

    # -- the manager's RunnableController protocol -----------------------------------------

    # -- lookups in the caches --------------------------------------------------------------

    def selector_of(self, rs: Mapping[str, Any]) -> LabelSelector:
        """The pod selector of ``rs`` (a metav1.LabelSelector; raises SelectorParseError).

        Parsed once per ReplicaSet and generation (a spec change, the selector's
        included, bumps the generation), not at every sync and pod event.
        """
        meta = meta_of(rs)
        uid, generation = meta.get("uid"), meta.get("generation")
        if not uid or generation is None:
            return selector_from_label_selector((rs.get("spec") or {}).get("selector"))
        key = (str(uid), int(generation))
        sel = self._selectors.get(key)
        if sel is None:
            sel = selector_from_label_selector((rs.get("spec") or {}).get("selector"))
            if len(self._selectors) >= _SELECTORS_MAX:
                self._selectors.clear()
            self._selectors[key] = sel
        return sel

    def resolve_controller_ref(self, namespace: str,
                               ref: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The cached ReplicaSet ``ref`` names, if it is one and its UID matches."""
        return self.owners.resolve(namespace, ref)

    def get_pod_replica_sets(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The cached ReplicaSets of the pod's namespace whose selector matches its labels.

        A ReplicaSet with an invalid or empty selector matches nothing.
        """
        out = self.owners.selecting(pod)
        if len(out) > 1:
            # ControllerRefs keep this safe, but overlapping selectors are a user error.
            log.error("user error! more than one ReplicaSet is selecting pods with labels: %s",
                      meta_of(pod).get("labels"))
        return out

    def get_replica_sets_with_same_controller(self,
                                              rs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The ReplicaSets controlled by ``rs``'s controller (its Deployment's), ``rs`` included."""
        ref = get_controller_of(rs)
        if ref is None:
            # Upstream reports this through HandleError; for a ReplicaSet made
            # by hand it is the normal case (no family: every rank is 0).
            log.debug("ReplicaSet has no controller: %s/%s", meta_of(rs).get("namespace"),
                      meta_of(rs).get("name"))
            return []
        return list(self.rs_indexer.by_index(CONTROLLER_UID_INDEX, str(ref.get("uid", ""))))

    def get_indirectly_related_pods(self, rs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The pods of every ReplicaSet of ``rs``'s owner, each once."""
        related: list[Mapping[str, Any]] = []
        seen: set[str] = set()
        for other in self.get_replica_sets_with_same_controller(rs):
            try:
                sel = self.selector_of(other)
            except SelectorParseError:
                continue  # an invalid selector matches no pods
            ns = str(meta_of(other).get("namespace") or "")
            match_labels = (((other.get("spec") or {}).get("selector") or {})
                            .get("matchLabels") or {})
            h = match_labels.get(_HASH_LABEL)
            if isinstance(h, str):
                # Every pod the selector matches carries this label value: one index
                # bucket (the family's pods), not a scan of the namespace; same result.
                pods = [p for p in self.pod_indexer.by_index(POD_TEMPLATE_HASH_INDEX,
                                                             f"{ns}/{h}")
                        if sel.matches((p.get("metadata") or {}).get("labels"))]
            else:
                pods = self.pod_lister.by_namespace(ns).list(sel)
            for pod in pods:
                uid = str(meta_of(pod).get("uid") or "")
                if uid in seen:
                    continue
                seen.add(uid)
                related.append(pod)
        return related

    # -- ReplicaSet handlers -----------------------------------------------------------------

    def _enqueue_rs(self, rs: Mapping[str, Any]) -> None:
        self.queue.add(meta_namespace_key(rs))

    def add_rs(self, rs: Any) -> None:
        log.debug("Adding ReplicaSet %s", meta_namespace_key(rs))
        self._enqueue_rs(rs)

    def update_rs(self, old: Any, cur: Any) -> None:
        if meta_of(cur).get("uid") != meta_of(old).get("uid"):
            # Deleted and recreated under the same name while the watch
            # merged the two: the old one's expectations must go.
            self.delete_rs(DeletedFinalStateUnknown(meta_namespace_key(old), old))
        # Any update syncs (not only a change of spec.replicas): a resync then
        # retries ReplicaSets whose pod creations failed.
        if spec_replicas(old) != spec_replicas(cur):
            log.debug("ReplicaSet %s updated. Desired pod count change: %d->%d",
                      meta_namespace_key(cur), spec_replicas(old), spec_replicas(cur))
        self._enqueue_rs(cur)

    def delete_rs(self, obj: Any) -> None:
        rs = deleted_object(obj)
        if rs is None:
            return
        key = meta_namespace_key(rs)
        log.debug("Deleting ReplicaSet %s", key)
        self.consistency.clear(key, str(meta_of(rs).get("uid") or ""))
        # A ReplicaSet recreated under the same name starts clean.
        self.expectations.delete_expectations(key)
        self.queue.add(key)

    # -- Pod handlers ------------------------------------------------------------------------

    def add_pod(self, pod: Any) -> None:
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            # After a restart a pod may first appear already being deleted:
            # that is no creation to observe.
            self.delete_pod(pod)
            return
        ref = get_controller_of(pod)
        if ref is not None:
            rs = self.resolve_controller_ref(str(meta.get("namespace") or ""), ref)
            if rs is None:
                return
            rs_key = meta_namespace_key(rs)
            log.debug("Pod %s/%s created", meta.get("namespace"), meta.get("name"))
            self.expectations.creation_observed(rs_key)
            self.queue.add(rs_key)
            return
        # An orphan: whoever matches may adopt it. Not a creation anybody waits for.
        for rs in self.get_pod_replica_sets(pod):
            self._enqueue_rs(rs)

    def update_pod(self, old: Any, cur: Any) -> None:
        old_meta, cur_meta = meta_of(old), meta_of(cur)
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            # A resync: two versions of one pod always differ in resourceVersion.
            return
        if cur_meta.get("deletionTimestamp"):
            # Graceful deletion: act on the deletionTimestamp (replace the pod
            # now), not on the final delete after the grace period.
            self.delete_pod(cur)
            if (cur_meta.get("labels") or {}) != (old_meta.get("labels") or {}):
                # The old labels may have belonged to another ReplicaSet.
                self.delete_pod(old)
            return
        update = self.owners.updated(old, cur)
        if update.previous is not None:
            self._enqueue_rs(update.previous)
        rs = update.current
        if rs is not None:
            self._enqueue_rs(rs)
            min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # Nothing else will wake the ReplicaSet when the pod becomes
                # available: look again after minReadySeconds.
                log.debug("pod %s/%s will be enqueued after %ds for availability check",
                          cur_meta.get("namespace"), cur_meta.get("name"), min_ready)
                self.queue.add_after(meta_namespace_key(rs), float(min_ready))
        # An orphan that changed: someone may want to adopt it now.
        for rs in update.candidates:
            self._enqueue_rs(rs)

    def delete_pod(self, obj: Any) -> None:
        # A tombstone's pod may be stale: if its labels changed meanwhile the
        # new owner only hears of it at the next resync.
        pod = deleted_object(obj)
        if pod is None:
            return
        rs = self.owners.owner_of(pod)
        if rs is None:
            return  # nobody cares about an orphan going away (or not ours)
        meta = meta_of(pod)
        rs_key = meta_namespace_key(rs)
        log.debug("Pod %s/%s deleted (deletionTimestamp %s)", meta.get("namespace"),
                  meta.get("name"), meta.get("deletionTimestamp"))
        # By pod key, unlike the DaemonSet's and Job's counts: upstream's ReplicaSet
        # controller tracks which pods it is waiting to see deleted (UID expectations).
        self.expectations.deletion_observed(rs_key, get_pod_keys([pod])[0])
        self.queue.add(rs_key)

    # -- sync --------------------------------------------------------------------------------

    async def manage_replicas(self, active_pods: list[Any],
                              rs: Mapping[str, Any]) -> BaseException | None:
        """Create or delete pods towards ``spec.replicas``; the first error, or None.

        Does not reorder ``active_pods`` unless pods are deleted (they are
        then sorted into deletion order).
        """
        diff = len(active_pods) - spec_replicas(rs)
        rs_key = meta_namespace_key(rs)
        namespace = str(meta_of(rs).get("namespace") or "")
        if diff < 0:
            diff = min(-diff, self.burst_replicas)
            # Counted before the writes: the informer may deliver the new
            # pods before the creates return.
            self.expectations.expect_creations(rs_key, diff)
            log.debug("Too few replicas for ReplicaSet %s, need %d, creating %d", rs_key,
                      spec_replicas(rs), diff)
            template: Mapping[str, Any] = (rs.get("spec") or {}).get("template") or {}
            controller_ref = new_controller_ref(rs, self.controller_api_version,
                                                self.controller_kind)

            async def create() -> None:
                try:
                    await self.pod_control.create_pods(namespace, template, rs, controller_ref)
                except Exception as exc:
                    # Every create fails in a terminating namespace: not worth a retry.
                    if _has_status_cause(exc, _NAMESPACE_TERMINATING_CAUSE):
                        return
                    raise

            successes, err = await slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, create)
            # The pods never attempted (and the failed ones) will not be
            # observed; the next sync retries them.
            skipped = diff - successes
            if skipped > 0:
                log.debug("Slow-start failure. Skipping creation of %d pods, decrementing "
                          "expectations for ReplicaSet %s", skipped, rs_key)
                for _ in range(skipped):
                    self.expectations.creation_observed(rs_key)
            return err
        if diff > 0:
            diff = min(diff, self.burst_replicas)
            log.debug("Too many replicas for ReplicaSet %s, need %d, deleting %d", rs_key,
                      spec_replicas(rs), diff)
            related = self.get_indirectly_related_pods(rs)
            to_delete = get_pods_to_delete(active_pods, related, diff, self.clock())
            # Tracked by key, so the deletionTimestamp update and the delete
            # itself lower the count once.
            self.expectations.expect_deletions(rs_key, get_pod_keys(to_delete))

            async def delete(pod: Mapping[str, Any]) -> BaseException | None:
                try:
                    await self.pod_control.delete_pod(namespace, str(meta_of(pod).get("name")), rs)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - reported to the caller
                    # No delete will be observed for this pod.
                    self.expectations.deletion_observed(rs_key, get_pod_keys([pod])[0])
                    if not is_not_found(exc):
                        log.debug("Failed to delete pod %s/%s, decremented expectations "
                                  "for ReplicaSet %s", namespace, meta_of(pod).get("name"),
                                  rs_key)
                        return exc
                return None

            errors = await asyncio.gather(*(delete(p) for p in to_delete))
            # Likely all the same error: report the first.
            for e in errors:
                if e is not None:
                    return e
        return None

    async def claim_pods(self, rs: Mapping[str, Any], selector: LabelSelector,
                         pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """Adopt the matching orphans, release our pods that no longer match; our pods."""
        manager = PodControllerRefManager(
            self.pod_control, rs, selector, self.controller_api_version, self.controller_kind,
            recheck_live_controller(self.client, self.resource, rs, self.controller_kind))
        return await manager.claim_pods(pods)

    async def sync_replica_set(self, key: str) -> Result | None:
        """Reconcile the ReplicaSet ``key`` (``namespace/name``); raises to be retried."""
        start = time.perf_counter()  # a log of real work
        try:
            return await self._sync(key)
        finally:
            log.debug("Finished syncing ReplicaSet %s (%.1f ms)", key,
                      (time.perf_counter() - start) * 1000)

    def _pod_written(self, pod: Mapping[str, Any], ref: Mapping[str, Any] | None) -> None:
        """RealPodControl's on_write: the pod's resourceVersion, for its controller."""
        if ref is None:
            return
        meta = meta_of(pod)
        self.consistency.wrote_at(f"{meta.get('namespace')}/{ref.get('name')}",
                                  str(ref.get("uid") or ""), "pods",
                                  str(meta.get("resourceVersion") or ""))

    async def _sync(self, key: str) -> Result | None:
        namespace, _, name = key.rpartition("/")
        # Our own writes first reach the caches: acting on older ones would redo them.
        self.consistency.ensure_ready(key)
        rs: Mapping[str, Any] | None = self.rs_indexer.get_by_key(key)
        if rs is None:
            log.debug("ReplicaSet %s has been deleted", key)
            self.consistency.clear(key)
            self.expectations.delete_expectations(key)
            return None
        rs_needs_sync = self.expectations.satisfied_expectations(key)
        try:
            selector = self.selector_of(rs)
        except SelectorParseError as exc:
            # Not retried: only a new spec can fix it, and that enqueues again.
            log.error("error converting pod selector to selector for rs %s/%s: %s",
                      namespace, name, exc)
            return None

        # Its own pods and the orphans it may adopt (those its selector matches; the
        # claim ignores the others), from the index: also the pods that no longer match
        # but still carry its reference.
        all_rs_pods = filter_pods_by_owner_and_selector(self.pod_indexer, rs,
                                                        self.controller_kind, selector)
        active, terminating = split_active_and_terminating(all_rs_pods)
        active_pods = list(await self.claim_pods(rs, selector, active))
        terminating_pods: list[Any] = []
        if self.enable_status_terminating_replicas:
            terminating_pods = filter_claimed_pods(rs, selector, terminating)

        manage_err: BaseException | None = None
        if rs_needs_sync and not meta_of(rs).get("deletionTimestamp"):
            manage_err = await self.manage_replicas(active_pods, rs)

        # One instant for the status and the next availability check, so the
        # pods counted unavailable are the ones the check is planned for.
        now = self.clock()
        new_status = calculate_status(
            rs, active_pods, terminating_pods, manage_err,
            enable_status_terminating_replicas=self.enable_status_terminating_replicas, now=now)
        updated = await update_replica_set_status(self.client, rs, new_status,
                                                  resource=self.resource)
        self.consistency.wrote_at(key, str(meta_of(rs).get("uid") or ""), RS_GROUP_RESOURCE,
                                  str(meta_of(updated).get("resourceVersion") or ""))
        if manage_err is not None:
            raise manage_err

        # A last line of defence (the pod handler's delayed enqueue may have
        # been superseded): sync again when the next pod becomes available.
        spec = updated.get("spec") or {}
        status = updated.get("status") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        if min_ready > 0 and int(status.get("readyReplicas") or 0) != int(
                status.get("availableReplicas") or 0):
            delay: float = float(min_ready)
            check = find_min_next_pod_availability_check(active_pods, min_ready, now, self.clock)
            if check is not None:
                delay = check
            return Result(requeue_after=delay)
        return None
