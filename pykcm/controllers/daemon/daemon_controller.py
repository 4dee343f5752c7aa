"""The DaemonSet controller: one pod of each DaemonSet on every node that should run it.

kube-controller-manager v1.36 ``pkg/controller/daemon/daemon_controller.go``.

Data flow::

    DaemonSet informer ── add / update / delete ────────────► enqueue ds key
    ControllerRevision informer ── owned: enqueue owner; orphan: enqueue matching DSs
    Pod informer ── add (owned) ─► creation observed, enqueue owner
                 ── update ──────► deletionTimestamp: as a delete; owner (again after
                 │                 minReadySeconds + 1 s when it turned ready); orphans:
                 │                 matching DSs when labels or the reference changed
                 ── delete ──────► deletion observed, enqueue owner
    Node informer ── add, labels/taints changed ─► node-update queue
                                                   │ sync_node_update(node): enqueue the DSs
                                                   ▼ whose placement on it changes
                Controller("daemonset"): 2 workers by default (--concurrent-daemonset-syncs)
                                                   ▼
    sync_daemon_set(key)
        DaemonSet from the cache (gone: forget expectations); being deleted: nothing
        construct_history: claim revisions, find or create the one of the current template
            (name <ds>-<controller.ComputeHash(template, collisionCount)>), hash = its label
        expectations not satisfied → status only (observedGeneration unchanged)
        manage: per node, should it run a pod (nodeSelector, required node affinity,
            taints vs the template's tolerations + the daemon tolerations; template
            nodeName; memoised per template and node resourceVersion by
            placement_cache.py) vs the pods there (by nodeName or their matchFields
            affinity; claimed and grouped once while the cache hands out the same pods):
            create on nodes without one (slow start, ≤ 250 per sync; pods carry a
            required node affinity metadata.name In [node] so the scheduler binds them
            there), delete failed (with backoff) and succeeded pods, extras beyond the
            oldest, pods on nodes that should not run one, unscheduled pods of vanished nodes
        expectations satisfied → rolling update (update.py): delete old pods within
            maxUnavailable, or surge new ones within maxSurge; OnDelete: nothing
        clean up revisions beyond revisionHistoryLimit (not those live pods still use)
        status: desired/current/misscheduled/ready/available/updated/unavailable,
            observedGeneration; PUT /status (one retry after a fresh GET)

Events (source ``daemonset-controller``): SuccessfulCreate / FailedCreate /
SuccessfulDelete / FailedDelete (through the pod control), FailedDaemonPod
(Warning: a failed pod is killed), SucceededDaemonPod (a succeeded pod is
deleted), SelectingAll (an empty selector).

Deviations: nodes are walked in name order where upstream walks a Go map
(random order): which old pods a rolling update replaces first among equals
is therefore deterministic here and random upstream. Placement answers are
memoised (upstream evaluates them afresh; the answers are the same), and the
pods are read once per sync where upstream reads them up to four times: the
reads that follow the first are served from its result while the pod cache hands
out the very same objects and claiming them wrote nothing. The daemonset metrics
are not implemented, nor OpenShift's project node selectors (a fork carry).

The v1.36 consistency store (KEP-5647, StaleControllerConsistencyDaemonSet, on
in v1.36; :mod:`pykcm.controller.consistency`) is: the resourceVersions of the
pods this controller creates and of its own status writes are recorded per
DaemonSet, and a sync waits (its key retried with the rate limiter) until the
pod and DaemonSet caches have seen them. Without it a sync right after a
status write computed from the old cached object and its status PUT failed
with 409 Conflict, a GET and a retry (16 of them in the rollout of 10 nodes).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of, spec_of, status_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.deep_hash import compute_hash
from pykcm.api.labels import selector_from_label_selector
from pykcm.api.owner_refs import get_controller_of, new_controller_ref
from pykcm.api.pod_util import is_pod_available, is_pod_ready, is_pod_terminal
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown, deleted_object, meta_namespace_key
from pykcm.client import Client
from pykcm.client.errors import has_status_cause, is_not_found
from pykcm.controller.active_pods import (
    POD_NODE_NAME_INDEX,
    add_pod_controller_indexer,
    add_pod_node_name_indexer,
    filter_pods_by_owner,
)
from pykcm.controller.consistency import (
    ConsistencyStore,
    ConsistencyStoreLike,
    NoopConsistencyStore,
)
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.controller_ref_manager import (
    AggregateError,
    PodControllerRefManager,
    recheck_live_controller,
)
from pykcm.controller.event_recorder import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from pykcm.controller.expectations import ControllerExpectations
from pykcm.controller.owner_resolver import OwnerResolver
from pykcm.controller.pod_control import PodControl, RealPodControl
from pykcm.controllers.daemon.placement_cache import DaemonPlacement, PlacementCache
from pykcm.controllers.daemon.update import cleanup_history, construct_history, rolling_update
from pykcm.controllers.daemon.util import (
    DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY,
    Backoff,
    allows_surge,
    create_pod_template,
    get_target_node_name,
    get_template_generation,
    is_pod_updated,
    node_should_run_daemon_pod,
    pod_by_creation_timestamp_and_phase_key,
    replace_daemon_set_pod_node_name_node_affinity,
)
from pykcm.informers.generic import GenericInformer

__all__ = [
    "BURST_REPLICAS",
    "CONCURRENT_DAEMONSET_SYNCS",
    "CONTROLLER_NAME",
    "DaemonSetsController",
    "node_should_run_daemon_pod",
    "pod_by_creation_timestamp_and_phase_key",
]

log = logging.getLogger("pykcm.controllers.daemon")

CONTROLLER_NAME: Final = "daemonset"
CONCURRENT_DAEMONSET_SYNCS: Final = 2
"""Workers by default (kube-controller-manager's --concurrent-daemonset-syncs)."""
BURST_REPLICAS: Final = 250
"""At most this many pods are created (and deleted) by one sync."""
STATUS_UPDATE_RETRIES: Final = 1
BACKOFF_GC_INTERVAL: Final = 60.0

DS_API_VERSION: Final = "apps/v1"
DS_KIND: Final = "DaemonSet"
#: The DaemonSets' group resource as the consistency store names it (GroupResource.String()).
DS_GROUP_RESOURCE: Final = "daemonsets.apps"

SELECTING_ALL_REASON: Final = "SelectingAll"
FAILED_PLACEMENT_REASON: Final = "FailedPlacement"
FAILED_DAEMON_POD_REASON: Final = "FailedDaemonPod"
SUCCEEDED_DAEMON_POD_REASON: Final = "SucceededDaemonPod"

_NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"





def _failed_pods_backoff_key(ds: Mapping[str, Any], node_name: str) -> str:
    return f"{meta_of(ds).get('uid')}/{int(status_of(ds).get('observedGeneration') or 0)}/{node_name}"


def get_unscheduled_pods_without_node(nodes: Sequence[Mapping[str, Any]],
                                      node_to_daemon_pods: Mapping[str, Sequence[Any]]
                                      ) -> list[str]:
    """Names of the unscheduled pods meant for nodes that no longer exist."""
    running = {str(meta_of(n).get("name")) for n in nodes}
    out: list[str] = []
    for node_name, pods in node_to_daemon_pods.items():
        if node_name in running:
            continue
        out.extend(str(meta_of(p).get("name")) for p in pods if not spec_of(p).get("nodeName"))
    return out


class DaemonSetsController(ControllerHost):
    """Runs one pod of each DaemonSet on every eligible node, rolls out template changes.

    Build it before the informer factory starts (it adds its handlers and
    indexes). ``clock`` gives epoch seconds (pod availability, the failed-pod
    backoff).
    """

    default_workers = CONCURRENT_DAEMONSET_SYNCS

    def __init__(self, *, ds_informer: GenericInformer, history_informer: GenericInformer,
                 pod_informer: GenericInformer, node_informer: GenericInformer, client: Client,
                 recorder: EventRecorder, burst_replicas: int = BURST_REPLICAS,
                 pod_control: PodControl | None = None,
                 failed_pods_backoff: Backoff | None = None,
                 clock: Clock | Callable[[], float] | None = None,
                 stale_controller_consistency: bool = True) -> None:
        self.name = CONTROLLER_NAME
        self.client = client
        self.recorder = recorder
        self.burst_replicas = burst_replicas
        self.consistency: ConsistencyStoreLike = (
            ConsistencyStore({"pods": pod_informer.informer.last_store_sync_resource_version,
                              DS_GROUP_RESOURCE:
                                  ds_informer.informer.last_store_sync_resource_version})
            if stale_controller_consistency else NoopConsistencyStore())
        self.pod_control: PodControl = (pod_control if pod_control is not None
                                        else RealPodControl(client, recorder, self._pod_written))
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.now
        self.failed_pods_backoff = (failed_pods_backoff if failed_pods_backoff is not None
                                    else Backoff(1.0, 15 * 60.0, self.clock))
        self.expectations = ControllerExpectations(self._time.monotonic)
        # The revision hash's Go type layout is loaded on first use (tens of ms): now, not
        # in the first DaemonSet's sync, before its first pod.
        compute_hash({}, None)
        # Where each template's pods should run, per node version (placement_cache.py).
        self.placement = PlacementCache()
        # Per DaemonSet: (uid, include_deleted_terminal, selector), the cached pods
        # looked at, their grouping by node (get_nodes_to_daemon_pods).
        self._node_pods_memo: dict[str, tuple[tuple[Any, bool, Any], list[Mapping[str, Any]],
                                              dict[str, list[Mapping[str, Any]]]]] = {}
        self.controller = Controller(CONTROLLER_NAME, self.sync_daemon_set, clock=self._time)
        self.queue = self.controller.queue
        self.node_controller = Controller("daemonset-node-updates", self.sync_node_update,
                                          clock=self._time)
        self.node_update_queue = self.node_controller.queue

        ds_inf = ds_informer.informer
        self.ds_indexer = ds_inf.get_indexer()
        self.ds_lister = ds_informer.lister
        self.owners = OwnerResolver(DS_KIND, ds_informer)
        reg = ds_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_daemonset, update_func=self.update_daemonset,
            delete_func=self.delete_daemonset))
        synced = [reg.has_synced]

        h_inf = history_informer.informer
        self.history_indexer = h_inf.get_indexer()
        self.history_lister = history_informer.lister
        reg = h_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_history, update_func=self.update_history,
            delete_func=self.delete_history))
        synced.append(reg.has_synced)

        pod_inf = pod_informer.informer
        add_pod_node_name_indexer(pod_inf)
        add_pod_controller_indexer(pod_inf)
        self.pod_indexer = pod_inf.get_indexer()
        self.pod_lister = pod_informer.lister
        reg = pod_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_pod, update_func=self.update_pod, delete_func=self.delete_pod))
        synced.append(reg.has_synced)

        node_inf = node_informer.informer
        self.node_lister = node_informer.lister
        self.node_indexer = node_inf.get_indexer()
        reg = node_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_node, update_func=self.update_node))
        synced.append(reg.has_synced)
        self.controller.add_synced(*synced)
        self.node_controller.add_synced(*synced)

    # -- running: two queues -----------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        n = self.default_workers if workers is None else workers

        async def gc_backoff() -> None:
            while True:
                await self._time.sleep(BACKOFF_GC_INTERVAL)
                self.failed_pods_backoff.gc()

        gc_task = asyncio.create_task(gc_backoff())
        try:
            await asyncio.gather(self.controller.run(n), self.node_controller.run(n))
        finally:
            gc_task.cancel()

    def health_check(self) -> str | None:
        return self.controller.health_check() or self.node_controller.health_check()

    def shutdown(self) -> None:
        self.controller.shutdown()
        self.node_controller.shutdown()

    # -- lookups -------------------------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str,
                               ref: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return self.owners.resolve(namespace, ref)

    def _matching_daemon_sets(self, obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The DaemonSets of ``obj``'s namespace whose selector matches its labels
        (upstream GetPodDaemonSets / GetHistoryDaemonSets)."""
        return self.owners.selecting(obj)

    def _enqueue(self, ds: Mapping[str, Any]) -> None:
        self.queue.add(meta_namespace_key(ds))

    # -- DaemonSet handlers --------------------------------------------------------------------

    def add_daemonset(self, ds: Any) -> None:
        log.debug("Adding daemon set %s", meta_namespace_key(ds))
        self._enqueue(ds)

    def update_daemonset(self, old: Any, cur: Any) -> None:
        if meta_of(cur).get("uid") != meta_of(old).get("uid"):
            self.delete_daemonset(DeletedFinalStateUnknown(meta_namespace_key(old), old))
        log.debug("Updating daemon set %s", meta_namespace_key(old))
        self._enqueue(cur)

    def delete_daemonset(self, obj: Any) -> None:
        ds = deleted_object(obj)
        if ds is None:
            return
        key = meta_namespace_key(ds)
        log.debug("Deleting daemon set %s", key)
        self.consistency.clear(key, str(meta_of(ds).get("uid") or ""))
        self.expectations.delete_expectations(key)
        self._node_pods_memo.pop(key, None)
        self.queue.add(key)

    def _pod_written(self, pod: Mapping[str, Any], ref: Mapping[str, Any] | None) -> None:
        """RealPodControl's on_write: the pod's resourceVersion, for its DaemonSet."""
        if ref is None:
            return
        meta = meta_of(pod)
        self.consistency.wrote_at(f"{meta.get('namespace')}/{ref.get('name')}",
                                  str(ref.get("uid") or ""), "pods",
                                  str(meta.get("resourceVersion") or ""))

    # -- ControllerRevision handlers -----------------------------------------------------------

    def add_history(self, history: Any) -> None:
        meta = meta_of(history)
        if meta.get("deletionTimestamp"):
            self.delete_history(history)
            return
        ref = get_controller_of(history)
        if ref is not None:
            # Owned: the owner does not need to hear of its own creation.
            self.resolve_controller_ref(str(meta.get("namespace") or ""), ref)
            return
        for ds in self._matching_daemon_sets(history):
            self._enqueue(ds)

    def update_history(self, old: Any, cur: Any) -> None:
        old_meta, cur_meta = meta_of(old), meta_of(cur)
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return
        update = self.owners.updated(old, cur)
        for ds in (update.previous, update.current, *update.candidates):
            if ds is not None:
                self._enqueue(ds)

    def delete_history(self, obj: Any) -> None:
        history = deleted_object(obj)
        if history is None:
            return
        ds = self.owners.owner_of(history)
        if ds is not None:
            self._enqueue(ds)

    # -- Pod handlers --------------------------------------------------------------------------

    def add_pod(self, pod: Any) -> None:
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            self.delete_pod(pod)
            return
        ref = get_controller_of(pod)
        if ref is not None:
            ds = self.resolve_controller_ref(str(meta.get("namespace") or ""), ref)
            if ds is None:
                return
            key = meta_namespace_key(ds)
            self.expectations.creation_observed(key)
            self.queue.add(key)
            return
        for ds in self._matching_daemon_sets(pod):
            self._enqueue(ds)

    def update_pod(self, old: Any, cur: Any) -> None:
        old_meta, cur_meta = meta_of(old), meta_of(cur)
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return
        if cur_meta.get("deletionTimestamp"):
            # Unlike the ReplicaSet handler, no word to the owner of the old labels:
            # upstream's DaemonSet updatePod has none.
            self.delete_pod(cur)
            return
        update = self.owners.updated(old, cur)
        if update.previous is not None:
            self._enqueue(update.previous)
        ds = update.current
        if ds is not None:
            self._enqueue(ds)
            min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # A second more, against milliseconds of skew (as upstream).
                self.queue.add_after(meta_namespace_key(ds), float(min_ready) + 1.0)
        for ds in update.candidates:
            self._enqueue(ds)

    def delete_pod(self, obj: Any) -> None:
        pod = deleted_object(obj)
        if pod is None:
            return
        ds = self.owners.owner_of(pod)
        if ds is None:
            return
        key = meta_namespace_key(ds)
        self.expectations.deletion_observed(key)
        self.queue.add(key)

    # -- Node handlers -------------------------------------------------------------------------

    def add_node(self, node: Any) -> None:
        self.node_update_queue.add(str(meta_of(node).get("name")))

    def update_node(self, old: Any, cur: Any) -> None:
        if ((meta_of(old).get("labels") or {}) == (meta_of(cur).get("labels") or {})
                and list(spec_of(old).get("taints") or ()) == list(spec_of(cur).get("taints") or ())):
            return
        self.node_update_queue.add(str(meta_of(cur).get("name")))

    async def sync_node_update(self, node_name: str) -> None:
        """Enqueue the DaemonSets whose placement on ``node_name`` may have changed."""
        node = self.node_indexer.get_by_key(node_name)
        if node is None:
            return
        pods_by_ds: dict[str, list[Any]] = {}
        for pod in self.pod_indexer.by_index(POD_NODE_NAME_INDEX, node_name):
            ref = get_controller_of(pod)
            if ref is None or ref.get("kind") != DS_KIND:
                continue
            pods_by_ds.setdefault(f"{meta_of(pod).get('namespace')}/{ref.get('name')}",
                                  []).append(pod)
        for ds in self.ds_lister.list():
            should_run, should_continue = self.placement.should_run(node, ds)
            key = meta_namespace_key(ds)
            scheduled = bool(pods_by_ds.get(key))
            if ((should_run and not scheduled) or (not should_continue and scheduled)
                    or (scheduled and int(status_of(ds).get("numberMisscheduled") or 0) > 0)):
                self.queue.add(key)

    # -- reading the DaemonSet's pods ----------------------------------------------------------

    async def get_daemon_pods(self, ds: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The DaemonSet's pods after adopting matching orphans and releasing the rest."""
        pods = filter_pods_by_owner(self.pod_indexer, ds, DS_KIND, True)
        return (await self._claim_daemon_pods(ds, pods))[0]

    async def _claim_daemon_pods(self, ds: Mapping[str, Any], pods: list[Mapping[str, Any]]
                                 ) -> tuple[list[Mapping[str, Any]], bool]:
        """(the pods of ``pods`` claimed, whether claiming wrote nothing and could not
        have: every pod was already ours and selected)."""
        selector = selector_from_label_selector(spec_of(ds).get("selector"))
        uid = meta_of(ds).get("uid")
        # A pod controlled by us whose labels we select is claimed without a write
        # (claim_object's first case): only the others go through the claim.
        ours = [(ref := get_controller_of(p)) is not None and ref.get("uid") == uid
                and selector.matches(meta_of(p).get("labels") or {}) for p in pods]
        if all(ours):
            return pods, True
        manager = PodControllerRefManager(
            self.pod_control, ds, selector, DS_API_VERSION, DS_KIND,
            recheck_live_controller(self.client, "daemonsets", ds, DS_KIND))
        claimed = {id(p) for p in await manager.claim_pods(
            [p for p, mine in zip(pods, ours, strict=True) if not mine])}
        return [p for p, mine in zip(pods, ours, strict=True) if mine or id(p) in claimed], False

    async def get_nodes_to_daemon_pods(self, ds: Mapping[str, Any],
                                       include_deleted_terminal: bool
                                       ) -> dict[str, list[Mapping[str, Any]]]:
        """The DaemonSet's pods by the node each is for.

        A sync asks up to four times (manage, rolling update, history, status): when
        the cache hands out the very same pod objects as the last time (cached objects
        are never mutated), for the same DaemonSet UID and selector, and claiming them
        then wrote nothing, the answer is the last one."""
        key = meta_namespace_key(ds)
        pods = filter_pods_by_owner(self.pod_indexer, ds, DS_KIND, True)
        ident = (meta_of(ds).get("uid"), include_deleted_terminal, spec_of(ds).get("selector"))
        memo = self._node_pods_memo.get(key)
        if (memo is not None and memo[0] == ident and len(memo[1]) == len(pods)
                and all(a is b for a, b in zip(memo[1], pods, strict=True))):
            return {node: list(on_node) for node, on_node in memo[2].items()}
        claimed, pure = await self._claim_daemon_pods(ds, pods)
        out = self._group_by_node(ds, claimed, include_deleted_terminal)
        if pure:
            self._node_pods_memo[key] = (ident, pods,
                                         {node: list(on_node) for node, on_node in out.items()})
        else:
            self._node_pods_memo.pop(key, None)
        return out

    def _group_by_node(self, ds: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                       include_deleted_terminal: bool) -> dict[str, list[Mapping[str, Any]]]:
        out: dict[str, list[Mapping[str, Any]]] = {}
        for pod in pods:
            if (not include_deleted_terminal and is_pod_terminal(pod)
                    and meta_of(pod).get("deletionTimestamp")):
                # Being removed by the kubelet or the pod GC: nothing left to do with it.
                continue
            try:
                node_name = get_target_node_name(pod)
            except ValueError:
                log.debug("Failed to get target node name of Pod %s in DaemonSet %s",
                          meta_of(pod).get("name"), meta_namespace_key(ds))
                continue
            out.setdefault(node_name, []).append(pod)
        return out

    def _nodes(self) -> list[Mapping[str, Any]]:
        return sorted(self.node_lister.list(), key=lambda n: str(meta_of(n).get("name") or ""))

    def _forget_gone_nodes(self, ds: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]
                           ) -> None:
        """Drop the placement answers of nodes no longer listed (deleted nodes)."""
        placement = self.placement.for_daemon_set(ds)
        if len(placement) > len(nodes):
            placement.retain({str(meta_of(n).get("name") or "") for n in nodes})

    # -- manage ----------------------------------------------------------------------------------

    def pods_should_be_on_node(self, node: Mapping[str, Any],
                               node_to_daemon_pods: Mapping[str, Sequence[Mapping[str, Any]]],
                               ds: Mapping[str, Any], hash_: str,
                               placement: DaemonPlacement | None = None,
                               surge: bool | None = None) -> tuple[list[str], list[str]]:
        """(nodes needing a pod, pods to delete) for one node (upstream podsShouldBeOnNode).
        ``placement`` and ``surge`` (allows_surge(ds)): the same for every node of a sync."""
        if placement is None:
            placement = self.placement.for_daemon_set(ds)
        if surge is None:
            surge = allows_surge(ds)
        should_run, should_continue = placement.should_run(node, ds)
        node_name = str(meta_of(node).get("name") or "")
        daemon_pods = node_to_daemon_pods.get(node_name)
        needing: list[str] = []
        to_delete: list[str] = []
        if should_run and daemon_pods is None:
            needing.append(node_name)
        elif should_continue:
            running: list[Mapping[str, Any]] = []
            for pod in daemon_pods or ():
                pmeta = meta_of(pod)
                if pmeta.get("deletionTimestamp"):
                    continue
                phase = status_of(pod).get("phase")
                if phase == "Failed":
                    backoff_key = _failed_pods_backoff_key(ds, node_name)
                    now = self.clock()
                    if self.failed_pods_backoff.is_in_back_off_since_update(backoff_key, now):
                        delay = self.failed_pods_backoff.get(backoff_key)
                        log.debug("Deleting failed pod %s on node %s has been limited by "
                                  "backoff (%.1fs)", pmeta.get("name"), node_name, delay)
                        self.queue.add_after(meta_namespace_key(ds), delay)
                        continue
                    self.failed_pods_backoff.next(backoff_key, now)
                    msg = (f"Found failed daemon pod {pmeta.get('namespace')}/{pmeta.get('name')}"
                           f" on node {node_name}, will try to kill it")
                    self.recorder.event(ds, EVENT_TYPE_WARNING, FAILED_DAEMON_POD_REASON, msg)
                    to_delete.append(str(pmeta.get("name")))
                elif phase == "Succeeded":
                    msg = (f"Found succeeded daemon pod {pmeta.get('namespace')}/"
                           f"{pmeta.get('name')} on node {node_name}, will try to delete it")
                    self.recorder.event(ds, EVENT_TYPE_NORMAL, SUCCEEDED_DAEMON_POD_REASON, msg)
                    to_delete.append(str(pmeta.get("name")))
                else:
                    running.append(pod)
            if not surge:
                if len(running) > 1:
                    running.sort(key=pod_by_creation_timestamp_and_phase_key)
                    to_delete.extend(str(meta_of(p).get("name")) for p in running[1:])
            elif len(running) <= 1:
                if not running and should_run:
                    needing.append(node_name)
            else:
                # Surging: keep the oldest new pod, and the oldest old one only while the
                # new one is not available yet (and the old one still ready).
                running.sort(key=pod_by_creation_timestamp_and_phase_key)
                oldest_new: Mapping[str, Any] | None = None
                oldest_old: Mapping[str, Any] | None = None
                for pod in running:
                    if (meta_of(pod).get("labels") or {}).get(
                            DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY) == hash_:
                        if oldest_new is None:
                            oldest_new = pod
                            continue
                    elif oldest_old is None:
                        oldest_old = pod
                        continue
                    to_delete.append(str(meta_of(pod).get("name")))
                if oldest_new is not None and oldest_old is not None:
                    min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
                    if not is_pod_ready(oldest_old) or is_pod_available(
                            oldest_new, min_ready, self.clock()):
                        to_delete.append(str(meta_of(oldest_old).get("name")))
        elif daemon_pods is not None:
            for pod in daemon_pods:
                if meta_of(pod).get("deletionTimestamp"):
                    continue
                to_delete.append(str(meta_of(pod).get("name")))
        return needing, to_delete

    async def manage(self, ds: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                     hash_: str) -> None:
        """Create the missing daemon pods and delete those that should not be there."""
        node_to_daemon_pods = await self.get_nodes_to_daemon_pods(ds, False)
        placement = self.placement.for_daemon_set(ds)
        surge = allows_surge(ds)
        needing: list[str] = []
        to_delete: list[str] = []
        for node in nodes:
            n, d = self.pods_should_be_on_node(node, node_to_daemon_pods, ds, hash_, placement,
                                               surge)
            needing += n
            to_delete += d
        to_delete += get_unscheduled_pods_without_node(nodes, node_to_daemon_pods)
        await self.sync_nodes(ds, to_delete, needing, hash_)

    async def sync_nodes(self, ds: Mapping[str, Any], pods_to_delete: Sequence[str],
                         nodes_needing_daemon_pods: Sequence[str], hash_: str) -> None:
        """Delete ``pods_to_delete`` and create a pod on each of the nodes (at most
        ``burst_replicas`` of each per sync); raises the errors together."""
        key = meta_namespace_key(ds)
        create_diff = min(len(nodes_needing_daemon_pods), self.burst_replicas)
        delete_diff = min(len(pods_to_delete), self.burst_replicas)
        # Before the writes: the informer may deliver the new pods first.
        self.expectations.set_expectations(key, create_diff, delete_diff)
        errors: list[BaseException] = []
        namespace = str(meta_of(ds).get("namespace") or "")
        # Built only when a pod is to be created (most syncs create none).
        template = create_pod_template(spec_of(ds).get("template") or {},
                                       get_template_generation(ds), hash_) if create_diff else {}
        controller_ref = new_controller_ref(ds, DS_API_VERSION, DS_KIND)

        async def create(node_name: str) -> None:
            pod_template = dict(template)
            spec = dict(template.get("spec") or {})
            spec["affinity"] = replace_daemon_set_pod_node_name_node_affinity(
                spec.get("affinity"), node_name)
            pod_template["spec"] = spec
            try:
                await self.pod_control.create_pods(namespace, pod_template, ds, controller_ref)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - collected, raised together
                if has_status_cause(exc, _NAMESPACE_TERMINATING_CAUSE):
                    # Every create fails in a namespace going away (upstream does not
                    # lower the expectations here either).
                    return
                log.debug("Failed creation, decrementing expectations for daemon set %s", key)
                self.expectations.creation_observed(key)
                errors.append(exc)

        batch_size = min(create_diff, 1)
        pos = 0
        while pos < create_diff:
            error_count = len(errors)
            await asyncio.gather(*(create(nodes_needing_daemon_pods[i])
                                   for i in range(pos, pos + batch_size)))
            skipped = create_diff - (batch_size + pos)
            if error_count < len(errors) and skipped > 0:
                log.debug("Slow-start failure. Skipping creation of %d pods, decrementing "
                          "expectations for daemon set %s", skipped, key)
                self.expectations.lower_expectations(key, skipped, 0)
                break
            pos += batch_size
            batch_size = min(2 * batch_size, create_diff - pos)

        async def delete(name: str) -> None:
            try:
                await self.pod_control.delete_pod(namespace, name, ds)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - collected, raised together
                self.expectations.deletion_observed(key)
                if not is_not_found(exc):
                    log.debug("Failed deletion, decremented expectations for daemon set %s",
                              key)
                    errors.append(exc)

        await asyncio.gather(*(delete(pods_to_delete[i]) for i in range(delete_diff)))
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise AggregateError(errors)

    # -- status ----------------------------------------------------------------------------------

    async def update_daemon_set_status(self, ds: Mapping[str, Any],
                                       nodes: Sequence[Mapping[str, Any]], hash_: str,
                                       update_observed_gen: bool) -> None:
        node_to_daemon_pods = await self.get_nodes_to_daemon_pods(ds, False)
        placement = self.placement.for_daemon_set(ds)
        now = self.clock()
        min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
        generation = get_template_generation(ds)
        desired = current = misscheduled = ready = updated = available = 0
        for node in nodes:
            should_run, _ = placement.should_run(node, ds)
            pods = node_to_daemon_pods.get(str(meta_of(node).get("name") or "")) or []
            if should_run:
                desired += 1
                if not pods:
                    continue
                current += 1
                pod = pods[0] if len(pods) == 1 else min(
                    pods, key=pod_by_creation_timestamp_and_phase_key)
                if is_pod_ready(pod):
                    ready += 1
                    if is_pod_available(pod, min_ready, now):
                        available += 1
                if is_pod_updated(pod, hash_, generation):
                    updated += 1
            elif pods:
                misscheduled += 1
        written = await self._store_status(ds, {
            "desiredNumberScheduled": desired, "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled, "numberReady": ready,
            "updatedNumberScheduled": updated, "numberAvailable": available,
            "numberUnavailable": desired - available}, update_observed_gen)
        if written is not None:
            self.consistency.wrote_at(meta_namespace_key(ds),
                                      str(meta_of(written).get("uid") or ""), DS_GROUP_RESOURCE,
                                      str(meta_of(written).get("resourceVersion") or ""))
        if min_ready > 0 and ready != available:
            # A last line of defence against clock skew.
            self.queue.add_after(meta_namespace_key(ds), float(min_ready))

    async def _store_status(self, ds: Mapping[str, Any], counts: Mapping[str, int],
                            update_observed_gen: bool) -> Mapping[str, Any] | None:
        """Write the counts (None when the cached status already holds them), else the
        DaemonSet the server returned."""
        status = status_of(ds)
        generation = int(meta_of(ds).get("generation") or 0)
        if (all(int(status.get(k) or 0) == v for k, v in counts.items())
                and int(status.get("observedGeneration") or 0) >= generation):
            return None
        to_update: dict[str, Any] = dict(ds)
        meta = meta_of(ds)
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        attempt = 0
        while True:
            new_status = dict(to_update.get("status") or {})
            if update_observed_gen:
                new_status["observedGeneration"] = generation
            new_status.update(counts)
            to_update["status"] = new_status
            try:
                return await self.client.update_status("daemonsets", to_update, ns)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise RuntimeError(f"error storing status for daemon set {ns}/{name}: "
                                       f"{exc}") from exc
            attempt += 1
            to_update = dict(await self.client.get("daemonsets", name, ns))

    # -- sync ------------------------------------------------------------------------------------

    async def sync_daemon_set(self, key: str) -> None:
        """Reconcile the DaemonSet ``key``; raises to be retried."""
        start = time.perf_counter()  # a log of real work
        try:
            await self._sync(key)
        finally:
            log.debug("Finished syncing daemon set %s (%.1f ms)", key,
                      (time.perf_counter() - start) * 1000)

    async def _sync(self, key: str) -> None:
        # Our own writes first reach the caches: a status computed from an older
        # DaemonSet would be refused (409), pods created but not yet seen recreated.
        self.consistency.ensure_ready(key)
        ds: Mapping[str, Any] | None = self.ds_indexer.get_by_key(key)
        if ds is None:
            log.debug("Daemon set %s has been deleted", key)
            self.expectations.delete_expectations(key)
            self.consistency.clear(key)
            return
        nodes = self._nodes()
        selector = spec_of(ds).get("selector")
        if isinstance(selector, Mapping) and not selector.get("matchLabels") \
                and not selector.get("matchExpressions"):
            self.recorder.event(ds, EVENT_TYPE_WARNING, SELECTING_ALL_REASON,
                                "This daemon set is selecting all pods. A non-empty selector "
                                "is required.")
            return
        if meta_of(ds).get("deletionTimestamp"):
            # Its revisions may be going away with it: no status worth computing.
            return
        self._forget_gone_nodes(ds, nodes)
        cur, old = await construct_history(self, ds)
        hash_ = str((meta_of(cur).get("labels") or {}).get(DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY, ""))
        if not self.expectations.satisfied_expectations(key):
            await self.update_daemon_set_status(ds, nodes, hash_, False)
            return
        err: BaseException | None = None
        try:
            await self.manage(ds, nodes, hash_)
            if self.expectations.satisfied_expectations(key):
                strategy = (spec_of(ds).get("updateStrategy") or {}).get("type")
                if strategy == "RollingUpdate":
                    await rolling_update(self, ds, nodes, hash_)
            try:
                await cleanup_history(self, ds, old)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise RuntimeError(f"failed to clean up revisions of DaemonSet: {exc}") from exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - raised after the status write
            err = exc
        try:
            await self.update_daemon_set_status(ds, nodes, hash_, True)
        except asyncio.CancelledError:
            raise
        except Exception as status_exc:
            if err is None:
                raise
            log.error("Failed to update status of daemon set %s: %s", key, status_exc)
        if err is not None:
            raise err
