"""DeploymentController: Deployments → ReplicaSets (upstream deployment_controller.go).

Role: make each Deployment's ReplicaSets match it. A Deployment owns one
*new* ReplicaSet (template equal to its own, named ``<name>-<pod-template-hash>``)
and any number of *old* ones; a rollout moves replicas from the old to the
new under the strategy's limits, and the ReplicaSet controller turns those
replica counts into pods.

Data flow::

    Deployment informer ── add / update / delete ───────────────┐
    ReplicaSet informer ── the controlling Deployment, or for an │
                           orphan every Deployment selecting it ─┤ enqueue "ns/name"
    Pod informer ── delete: a Recreate Deployment whose pods     │
                    are now all gone ────────────────────────────┘
                                   │ Controller("deployment"): rate-limited queue, workers
                                   ▼
    sync_deployment(key): cached Deployment (a private copy)
        ├─ empty selector → SelectingAll warning, nothing else
        ├─ claim ReplicaSets (adopt / release through RSControl), map their pods
        ├─ being deleted → status only                         (sync.py)
        ├─ paused conditions; paused → scale only              (sync.py)
        ├─ deprecated rollback annotation → rollback           (rollback.py)
        ├─ replicas changed mid-rollout → proportional scale   (sync.py)
        └─ Recreate → recreate.py, RollingUpdate → rolling.py
                                   │ ReplicaSet create / update / delete,
                                   ▼ Deployment status, ScalingReplicaSet events
                              API server                 (progress.py: conditions,
                                                          deadline re-checks)

The step modules are functions of the controller (``fn(dc, d, ...)``), as
upstream's methods are spread over files. ``d`` is always the sync's private
copy of the cached Deployment: the steps update its status in place as they
write it, so later steps see what earlier ones wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.labels import selector_from_label_selector
from pykcm.api.owner_refs import get_controller_of
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown, split_meta_namespace_key
from pykcm.client import Client
from pykcm.client.errors import ApiError, has_status_cause, is_not_found
from pykcm.controller.active_pods import add_pod_controller_indexer, filter_pods_by_owner
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.controller_ref_manager import (
    ReplicaSetControllerRefManager,
    recheck_live_controller,
)
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controller.replica_set_control import RealRSControl, RSControl
from pykcm.controllers.deployment import util
from pykcm.informers.generic import GenericInformer

__all__ = ["CONTROLLER_API_VERSION", "CONTROLLER_KIND", "MAX_RETRIES", "DeploymentController"]

log = logging.getLogger("pykcm.controllers.deployment")

MAX_RETRIES: Final = 15
"""Failed syncs of one Deployment in a row before it is dropped from the queue (upstream)."""

CONTROLLER_API_VERSION: Final = "apps/v1"
CONTROLLER_KIND: Final = "Deployment"
DEPLOYMENTS: Final = "deployments.apps"
REPLICASETS: Final = "replicasets.apps"
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"

Obj = Mapping[str, Any]


def _unwrap(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


RS_CONTROLLER_INDEX: Final = "deployment/rsController"
"""ReplicaSets by ``namespace/<controller uid>``; ``namespace/`` for orphans."""


def _rs_controller_index_func(rs: Any) -> list[str]:
    ref = get_controller_of(rs)
    ns = (rs.get("metadata") or {}).get("namespace") or ""
    return [f"{ns}/{ref.get('uid', '') if ref is not None else ''}"]


class DeploymentController(ControllerHost):
    """The Deployment controller (``name`` "deployment"): build it, start the informers, ``run``.

    ``rs_control`` sends the adoption / release patches of ReplicaSets
    (default: :class:`RealRSControl` over ``client``).
    ``enable_status_terminating_replicas`` is the
    DeploymentReplicaSetTerminatingReplicas feature gate (on by default, as
    in v1.36): ``status.terminatingReplicas`` summed over the ReplicaSets.
    Build it before the informer factory starts (it adds a pod index).
    """

    def __init__(self, *, deployment_informer: GenericInformer, rs_informer: GenericInformer,
                 pod_informer: GenericInformer, client: Client, recorder: EventRecorder,
                 rs_control: RSControl | None = None,
                 enable_status_terminating_replicas: bool = True,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.clock: Clock = self._time  # conditions' times and the progress deadline
        self.name = "deployment"
        self.enable_status_terminating_replicas = enable_status_terminating_replicas
        self.client = client
        self.event_recorder = recorder
        self.rs_control: RSControl = rs_control if rs_control is not None else RealRSControl(client)
        self.d_lister = deployment_informer.lister
        self.rs_lister = rs_informer.lister
        # ReplicaSets by controller (namespace/uid; namespace/ for orphans): a sync claims
        # from its own and the orphans, not from every ReplicaSet of the namespace.
        if RS_CONTROLLER_INDEX not in rs_informer.informer.get_indexer().get_indexers():
            rs_informer.informer.add_indexers({RS_CONTROLLER_INDEX: _rs_controller_index_func})
        self.rs_indexer = rs_informer.informer.get_indexer()
        self.pod_lister = pod_informer.lister
        # Pods by controller: the pod map of a sync is one index lookup per ReplicaSet.
        add_pod_controller_indexer(pod_informer.informer)
        self.pod_indexer = pod_informer.informer.get_indexer()
        self.controller = Controller("deployment", self.sync_deployment, max_retries=MAX_RETRIES,
                                     clock=self._time)
        self.queue = self.controller.queue

        regs = [
            deployment_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
                self.add_deployment, self.update_deployment, self.delete_deployment)),
            rs_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
                self.add_replica_set, self.update_replica_set, self.delete_replica_set)),
            pod_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
                delete_func=self.delete_pod)),
        ]
        self.controller.add_synced(*(r.has_synced for r in regs))

    # -- enqueueing --------------------------------------------------------------------------

    def enqueue(self, d: Obj) -> None:
        self.controller.enqueue(d)

    def enqueue_rate_limited(self, d: Obj) -> None:
        self.controller.enqueue_rate_limited(d)

    def enqueue_after(self, d: Obj, after: float) -> None:
        """Sync ``d`` again after ``after`` seconds (progress-deadline checks)."""
        self.controller.enqueue_after(d, after)

    # -- Deployment handlers -----------------------------------------------------------------

    def add_deployment(self, obj: Any) -> None:
        self.enqueue(obj)

    def update_deployment(self, old: Any, cur: Any) -> None:
        self.enqueue(cur)

    def delete_deployment(self, obj: Any) -> None:
        d = _unwrap(obj)
        if d is None:
            log.error("Couldn't get object from tombstone %r", obj)
            return
        # Enqueue the key: the sync finds the Deployment gone and does nothing,
        # which is what upstream does too (the garbage collector removes the rest).
        self.controller.enqueue(obj)

    # -- ReplicaSet handlers -----------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        """The cached Deployment ``ref`` names, if it is a Deployment with that UID."""
        if ref.get("kind") != CONTROLLER_KIND:
            return None
        try:
            d: Obj = self.d_lister.by_namespace(namespace).get(str(ref.get("name", "")))
        except ApiError:
            return None
        if meta_of(d).get("uid") != ref.get("uid"):
            # The controller we found isn't the same one the ControllerRef points to.
            return None
        return d

    def get_deployments_for_replica_set(self, rs: Obj) -> list[Obj]:
        """Deployments whose selector matches the ReplicaSet's labels (orphan adoption)."""
        ns = str(meta_of(rs).get("namespace", ""))
        ds = util.get_deployments_for_replica_set(self.d_lister.by_namespace(ns).list(), rs)
        if len(ds) > 1:
            log.info("user error! more than one deployment is selecting replica set %s/%s "
                     "with labels %r", ns, meta_of(rs).get("name"), meta_of(rs).get("labels"))
        return ds

    def add_replica_set(self, obj: Any) -> None:
        rs = obj
        if meta_of(rs).get("deletionTimestamp"):
            # On a restart of the controller manager an object may show up
            # already pending deletion: treat it as a delete.
            self.delete_replica_set(rs)
            return
        ref = get_controller_of(rs)
        if ref is not None:
            d = self.resolve_controller_ref(str(meta_of(rs).get("namespace", "")), ref)
            if d is not None:
                self.enqueue(d)
            return
        # An orphan: every matching Deployment syncs to see if it wants to adopt it.
        for d in self.get_deployments_for_replica_set(rs):
            self.enqueue(d)

    def update_replica_set(self, old: Any, cur: Any) -> None:
        if meta_of(cur).get("resourceVersion") == meta_of(old).get("resourceVersion"):
            # A periodic resync: two versions of one object always differ in resourceVersion.
            return
        cur_ref = get_controller_of(cur)
        old_ref = get_controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            # The ControllerRef changed: the old controller syncs to notice the loss.
            d = self.resolve_controller_ref(str(meta_of(old).get("namespace", "")), old_ref)
            if d is not None:
                self.enqueue(d)
        if cur_ref is not None:
            d = self.resolve_controller_ref(str(meta_of(cur).get("namespace", "")), cur_ref)
            if d is not None:
                self.enqueue(d)
            return
        # An orphan: if anything that matters changed, matching Deployments may adopt it.
        if ref_changed or meta_of(cur).get("labels") != meta_of(old).get("labels"):
            for d in self.get_deployments_for_replica_set(cur):
                self.enqueue(d)

    def delete_replica_set(self, obj: Any) -> None:
        rs = _unwrap(obj)
        if rs is None:
            log.error("Couldn't get object from tombstone %r", obj)
            return
        ref = get_controller_of(rs)
        if ref is None:
            # No controller cares about orphans being deleted.
            return
        d = self.resolve_controller_ref(str(meta_of(rs).get("namespace", "")), ref)
        if d is not None:
            self.enqueue(d)

    # -- Pod handler -------------------------------------------------------------------------

    def get_deployment_for_pod(self, pod: Obj) -> Obj | None:
        """The Deployment controlling the ReplicaSet controlling ``pod``, from the cache."""
        ref = get_controller_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return None
        ns = str(meta_of(pod).get("namespace", ""))
        try:
            rs: Obj = self.rs_lister.by_namespace(ns).get(str(ref.get("name", "")))
        except ApiError:
            return None
        if meta_of(rs).get("uid") != ref.get("uid"):
            return None
        rs_ref = get_controller_of(rs)
        if rs_ref is None:
            return None
        return self.resolve_controller_ref(ns, rs_ref)

    def delete_pod(self, obj: Any) -> None:
        """Enqueue a Recreate Deployment once all of its pods are gone."""
        pod = _unwrap(obj)
        if pod is None:
            log.error("Couldn't get object from tombstone %r", obj)
            return
        d = self.get_deployment_for_pod(pod)
        if d is None or ((d.get("spec") or {}).get("strategy") or {}).get("type") != util.RECREATE:
            return
        # Upstream lists the ReplicaSets from the API server here; a handler must
        # not block, so the cache's ReplicaSets controlled by ``d`` are used.
        ns = str(meta_of(d).get("namespace", ""))
        rs_list = self.rs_indexer.by_index(RS_CONTROLLER_INDEX, f"{ns}/{meta_of(d).get('uid', '')}")
        pod_map = self.get_pod_map_for_deployment(d, rs_list)
        if sum(len(p) for p in pod_map.values()) == 0:
            self.enqueue(d)

    # -- lookups used by the sync ------------------------------------------------------------

    async def get_replica_sets_for_deployment(self, d: Obj) -> list[Obj]:
        """The ReplicaSets ``d`` owns after adopting matching orphans and releasing the rest."""
        meta = meta_of(d)
        ns = str(meta.get("namespace", ""))
        # Those we control (also any that no longer match our selector, so the
        # claim releases them) and the orphans of the namespace (which it may
        # adopt). One controlled by another owner is ignored by the claim, so the
        # rest of the namespace is not read (upstream lists it all).
        rs_list = [*self.rs_indexer.by_index(RS_CONTROLLER_INDEX, f"{ns}/{meta.get('uid', '')}"),
                   *self.rs_indexer.by_index(RS_CONTROLLER_INDEX, f"{ns}/")]
        try:
            selector = selector_from_label_selector((d.get("spec") or {}).get("selector"))
        except ValueError as exc:
            raise ValueError(f"deployment {ns}/{meta.get('name')} has invalid label "
                             f"selector: {exc}") from exc

        # can_adopt: an uncached read, adopting only if the Deployment is not being
        # deleted right now, whatever the cache says.
        cm = ReplicaSetControllerRefManager(
            self.rs_control, d, selector, CONTROLLER_API_VERSION, CONTROLLER_KIND,
            recheck_live_controller(self.client, DEPLOYMENTS, d, CONTROLLER_KIND))
        return await cm.claim_replica_sets(rs_list)

    def get_pod_map_for_deployment(self, d: Obj, rs_list: list[Obj]) -> dict[str, list[Obj]]:
        """The cached pods controlled by each of ``rs_list``, by ReplicaSet UID.

        Read through the pod controller index (no scan of the namespace);
        Recreate uses it to wait until no old pod is left.
        """
        return {str(meta_of(rs).get("uid")): filter_pods_by_owner(self.pod_indexer, rs,
                                                                "ReplicaSet", False)
                for rs in rs_list}

    # -- writes shared by the steps ----------------------------------------------------------

    async def write_deployment_status(self, d: dict[str, Any]) -> dict[str, Any]:
        """PUT ``d``'s status (and, as upstream's status strategy allows, its revision annotation).

        ``d`` keeps the resourceVersion it was read with, as upstream's sync
        does (it drops what UpdateStatus returns): a second status write in
        the same sync (the rollout status after a new ReplicaSet's revision,
        or anything after DeploymentResumed) meets 409 and the sync runs
        again. What users see follows from it: after a resume, Progressing
        goes from DeploymentResumed to ReplicaSetUpdated, never through
        NewReplicaSetCreated (that write is the one refused).
        """
        got = await self.client.update_status(DEPLOYMENTS, d)
        meta = d.setdefault("metadata", {})
        want = (meta.get("annotations") or {}).get(util.REVISION_ANNOTATION)
        have = (meta_of(got).get("annotations") or {}).get(util.REVISION_ANNOTATION)
        if want is not None and want != have:
            # kube-apiserver keeps annotations from a Deployment status write; an
            # API server resetting metadata on /status drops them: write the
            # revision on the object itself, or every sync would try again.
            got = await self.client.patch(
                DEPLOYMENTS, str(meta.get("name")),
                {"metadata": {"annotations": {util.REVISION_ANNOTATION: want}}},
                "merge", str(meta.get("namespace", "")))
        return got

    async def write_deployment(self, d: dict[str, Any]) -> dict[str, Any]:
        """PUT the whole Deployment (rollback: template and annotations)."""
        got: dict[str, Any] = await self.client.update(DEPLOYMENTS, d)
        return got

    async def write_replica_set(self, rs: dict[str, Any]) -> dict[str, Any]:
        """PUT a ReplicaSet copy (replicas, annotations, minReadySeconds)."""
        rs.setdefault("apiVersion", "apps/v1")
        rs.setdefault("kind", "ReplicaSet")
        got: dict[str, Any] = await self.client.update(REPLICASETS, rs)
        return got

    # -- the sync ----------------------------------------------------------------------------

    async def sync_deployment(self, key: str) -> None:
        """Reconcile the Deployment ``key`` names (see the module docstring for the order).

        Raising sends the key back through the rate limiter (at most
        :data:`MAX_RETRIES` times in a row), except for writes refused because
        the namespace is terminating: every later one would fail the same way.
        """
        try:
            await self._sync_deployment(key)
        except ApiError as exc:
            if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                log.debug("%s: namespace terminating, not retrying: %s", key, exc)
                return
            raise

    async def _sync_deployment(self, key: str) -> None:
        # Imported here: the step modules import this one for their type hints.
        from pykcm.controllers.deployment import recreate, rollback, rolling, sync

        ns, name = split_meta_namespace_key(key)
        try:
            cached: Obj = self.d_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if is_not_found(exc):
                log.debug("Deployment %s has been deleted", key)
                return
            raise
        d = util.deep_copy(cached)
        # Cached list items may lack these; events and writes need them.
        d.setdefault("apiVersion", CONTROLLER_API_VERSION)
        d.setdefault("kind", CONTROLLER_KIND)
        spec = d.get("spec") or {}
        if not spec.get("selector") or spec.get("selector") == {}:
            self.event_recorder.eventf(d, "Warning", "SelectingAll",
                                       "This deployment is selecting all pods. "
                                       "A non-empty selector is required.")
            status = d.setdefault("status", {})
            generation = int(meta_of(d).get("generation") or 0)
            if int(status.get("observedGeneration") or 0) < generation:
                status["observedGeneration"] = generation
                await self.write_deployment_status(d)
            return

        rs_list = await self.get_replica_sets_for_deployment(d)
        # The pod map serves Recreate (no old pods may run when the new ones start).
        pod_map = self.get_pod_map_for_deployment(d, rs_list)

        if meta_of(d).get("deletionTimestamp"):
            await sync.sync_status_only(self, d, rs_list)
            return

        # Pausing and resuming set Progressing Unknown, so a long pause never
        # counts against progressDeadlineSeconds.
        await sync.check_paused_conditions(self, d)
        if spec.get("paused"):
            await sync.sync(self, d, rs_list)
            return

        # Not re-entrant: the rollback annotation must be gone before anything else moves.
        if rollback.get_rollback_to(d) is not None:
            await rollback.rollback(self, d, rs_list)
            return

        if await sync.is_scaling_event(self, d, rs_list):
            await sync.sync(self, d, rs_list)
            return

        strategy = (spec.get("strategy") or {}).get("type") or util.ROLLING_UPDATE
        if strategy == util.RECREATE:
            await recreate.rollout_recreate(self, d, rs_list, pod_map)
            return
        if strategy == util.ROLLING_UPDATE:
            await rolling.rollout_rolling(self, d, rs_list)
            return
        raise ValueError(f"unexpected deployment strategy type: {strategy}")

    def __repr__(self) -> str:
        return f"<DeploymentController queue={len(self.queue)}>"

