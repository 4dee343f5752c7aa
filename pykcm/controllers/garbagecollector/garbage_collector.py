"""GarbageCollector: deletes objects whose owners are gone, runs foreground and orphan deletion.

kube-controller-manager pkg/controller/garbagecollector garbagecollector.go.

Data flow::

    discovery every resync_discovery_period (30 s) ──► GraphBuilder.sync_monitors
    informers ──► GraphBuilder (graph_builder.py) ──► dependency graph (graph.py)
                        │ enqueues nodes
          ┌─────────────┴──────────────────┐
          ▼                                ▼
    attempt_to_delete: RateLimitingQueue   attempt_to_orphan: RateLimitingQueue
          │ workers × N                    │ workers × N
          ▼                                ▼
    attempt_to_delete_item:                attempt_to_orphan_worker:
      GET the object (uid must match),       drop the owner's reference from every
      classify its owners (live GETs):       dependent (patch), then remove the
        solid / dangling / waiting           owner's "orphan" finalizer
      → delete it (UID precondition) in
        Background, Foreground or Orphan
        as upstream decides, or drop
        dangling references, or remove
        "foregroundDeletion" from an owner
        whose blocking dependents are gone

The API server starts every cascade (rest_storage.py adds the
``foregroundDeletion`` or ``orphan`` finalizer and the deletionTimestamp on a
DELETE with that propagationPolicy); the garbage collector completes it.

A virtual node (an owner no informer has shown) is checked with a live GET:
absent, or present with another UID, it is removed from the graph by a
virtual delete event, and its dependents whose owners are all gone are
deleted.

Upstream's metadata-only informers are not available in pykcm: the monitors
use the shared factory's full-object informers, and the graph keeps only
identities and ownerReferences.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.progress_poll import PROGRESS_POLLS
from pykcm.api.randomness import RandomSource, random_of
from pykcm.api.resources import ResourceInfo
from pykcm.client import Client, is_not_found
from pykcm.controller.event_recorder import EventBroadcaster, EventRecorder
from pykcm.controllers.garbagecollector.graph import (
    Node,
    ObjectReference,
    OwnerReference,
    ReferenceCache,
    owner_reference_coordinates,
    owner_references_of,
)
from pykcm.controllers.garbagecollector.graph_builder import (
    DEFAULT_IGNORED_RESOURCES,
    GraphBuilder,
)
from pykcm.controllers.garbagecollector.operations import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    GCOperations,
    RESTMapper,
    RESTMappingError,
    deletable_resources,
    delete_owner_ref_strategic_merge_patch,
    unblock_owner_references_strategic_merge_patch,
)
from pykcm.informers.factory import SharedInformerFactory
from pykcm.informers.generic import GroupVersionResource
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory
from pykcm.workqueue import RateLimitingQueue

__all__ = ["GarbageCollector"]

log = logging.getLogger("pykcm.controllers.garbagecollector")

DEFAULT_WORKERS: Final = 20
EVENT_SOURCE: Final = "garbage-collector-controller"
_SYNC_POLL: Final = 0.1


class _EnqueuedVirtualDeleteEvent(Exception):
    """The object is gone: a virtual delete event will update the graph; do not retry."""


class _NamespacedOwnerOfClusterScopedObject(Exception):
    """A cluster-scoped object names a namespaced owner: retrying cannot fix it."""


def _has_finalizer(obj: dict[str, Any], finalizer: str) -> bool:
    return finalizer in (meta_of(obj).get("finalizers") or ())


class GarbageCollector:
    """The garbage-collector controller (manager name ``garbage-collector``).

    ``client`` talks to the API server; ``informer_factory`` provides the
    monitors' informers (its start() is called for monitors added while
    running; the manager passes an ObjectOrMetadataInformerFactory: metadata-only
    informers for the resources no controller caches whole); ``recorder`` receives the Warning events (by default the
    collector records through its own broadcaster, as upstream does);
    ``ignored_resources`` are (group, plural) pairs never monitored;
    ``resync_discovery_period`` is how often discovery is read again so
    resources (CRDs) appearing or disappearing are monitored or dropped;
    ``initial_sync_timeout``: how long :meth:`run` waits for the monitors
    before collecting anyway.
    """

    name = "garbage-collector"

    def __init__(self, *, client: Client,
                 informer_factory: SharedInformerFactory | ObjectOrMetadataInformerFactory,
                 recorder: EventRecorder | None = None,
                 ignored_resources: Iterable[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES,
                 resync_discovery_period: float = 30.0,
                 initial_sync_timeout: float = 30.0, clock: Clock | None = None,
                 rng: RandomSource | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self._rng = random_of(rng)  # the owner-update retries' jitter
        self.client = client
        self._factory = informer_factory
        self._broadcaster: EventBroadcaster | None = None
        if recorder is None:
            self._broadcaster = EventBroadcaster(client, clock=self._time,
                                                 rng=self._rng.stream("events"))
            recorder = self._broadcaster.new_recorder(EVENT_SOURCE)
        self.recorder = recorder
        self.resync_discovery_period = resync_discovery_period
        self.initial_sync_timeout = initial_sync_timeout
        self.attempt_to_delete: RateLimitingQueue[Node] = RateLimitingQueue(
            name="garbage_collector_attempt_to_delete", clock=self._time)
        self.attempt_to_orphan: RateLimitingQueue[Node] = RateLimitingQueue(
            name="garbage_collector_attempt_to_orphan", clock=self._time)
        # Owners the API server said do not exist; shared with the graph builder.
        self.absent_owner_cache = ReferenceCache(500)
        self.graph_builder = GraphBuilder(
            informer_factory, attempt_to_delete=self.attempt_to_delete,
            attempt_to_orphan=self.attempt_to_orphan,
            absent_owner_cache=self.absent_owner_cache, recorder=recorder,
            ignored_resources=ignored_resources)
        self.rest_mapper = RESTMapper(client)
        self.ops = GCOperations(client, self.rest_mapper, self.graph_builder.cached_object,
                                clock=self._time, rng=self._rng.stream("operations"))
        self._monitored: dict[GroupVersionResource, ResourceInfo] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        self._running = False

    # -- lifecycle --------------------------------------------------------------------

    async def resync_monitors(self) -> bool:
        """Read discovery and monitor every deletable resource; False if discovery failed.

        Safe to call before :meth:`run` (the informers then start when it runs).
        """
        try:
            resources = await self.client.discovery.refresh()
        except Exception as exc:  # noqa: BLE001 - retried at the next sync
            log.warning("garbage collector: discovery failed: %s", exc)
            return False
        new = deletable_resources(resources)
        if not new:
            log.info("no resources reported by discovery, skipping garbage collector sync")
            return False
        if new == self._monitored:
            return True
        added = sorted(str(g) for g in new.keys() - self._monitored.keys())
        removed = sorted(str(g) for g in self._monitored.keys() - new.keys())
        log.info("syncing garbage collector with updated resources from discovery "
                 "(added: %s, removed: %s)", added, removed)
        self.rest_mapper.load(resources)
        for err in self.graph_builder.sync_monitors(new):
            log.warning("garbage collector: %s", err)
        self.graph_builder.start_monitors()
        self._monitored = new
        return True

    def is_synced(self) -> bool:
        return self.graph_builder.is_synced()

    def graph_has_uid(self, uid: str) -> bool:
        """Whether the graph holds a node for ``uid`` (for tests and debugging)."""
        return uid in self.graph_builder.uid_to_node

    async def run(self, workers: int = DEFAULT_WORKERS) -> None:
        """Monitor, build the graph, and run ``workers`` workers per queue until shutdown."""
        if self._running:
            raise RuntimeError("the garbage collector is already running")
        self._running = True
        log.info("Starting garbage collector controller")
        if self._broadcaster is not None:
            self._broadcaster.start()
        loop = asyncio.get_running_loop()
        try:
            await self.resync_monitors()
            builder = loop.create_task(self.graph_builder.run(), name="gc-graph-builder")
            self._tasks.append(builder)
            # Waiting for the graph's informers to list is I/O progress: real time (a
            # progress poll, pykcm.api.progress_poll: not slept out on virtual time).
            deadline = REAL_CLOCK.monotonic() + self.initial_sync_timeout

            def done() -> bool:
                return self.is_synced() or self._stop.is_set()

            while not done() and REAL_CLOCK.monotonic() < deadline:
                await PROGRESS_POLLS.sleep(done, _SYNC_POLL)
            if self.is_synced():
                log.info("garbage collector: all resource monitors have synced")
            else:
                log.info("garbage collector: not all resource monitors could be synced, "
                         "proceeding anyways")
            for i in range(max(1, workers)):
                self._tasks.append(loop.create_task(self._run_attempt_to_delete_worker(),
                                                    name=f"gc-attempt-to-delete-{i}"))
                self._tasks.append(loop.create_task(self._run_attempt_to_orphan_worker(),
                                                    name=f"gc-attempt-to-orphan-{i}"))
            self._tasks.append(loop.create_task(self._sync_loop(), name="gc-discovery-sync"))
            await self._stop.wait()
        finally:
            self._shut_down_queues()
            for t in self._tasks:
                t.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks = []
            if self._broadcaster is not None:
                await self._broadcaster.shutdown()
            self._running = False
            log.info("Shutting down garbage collector controller")

    def _shut_down_queues(self) -> None:
        self.graph_builder.shut_down()
        self.attempt_to_delete.shut_down()
        self.attempt_to_orphan.shut_down()

    def shutdown(self) -> None:
        """Stop: queues shut down, :meth:`run` returns once its tasks have ended."""
        self._stop.set()
        self._shut_down_queues()

    @property
    def running(self) -> bool:
        return self._running

    def health_check(self) -> str | None:
        """None while healthy; why not otherwise (a worker or the graph builder died)."""
        for t in self._tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                return f"{t.get_name()} died: {t.exception()!r}"
        return None

    async def _sync_loop(self) -> None:
        """Re-read discovery every period; monitor new resources, drop removed ones."""
        while not self._stop.is_set():
            await self._time.sleep(self.resync_discovery_period)
            try:
                await self.resync_monitors()
            except Exception:
                log.exception("garbage collector: failed to sync resource monitors")

    # -- attemptToDelete ----------------------------------------------------------------

    async def _run_attempt_to_delete_worker(self) -> None:
        while await self.process_attempt_to_delete_worker():
            pass

    async def process_attempt_to_delete_worker(self) -> bool:
        item, shutdown = await self.attempt_to_delete.get()
        if shutdown or item is None:
            return False
        try:
            if await self.attempt_to_delete_worker(item):
                self.attempt_to_delete.forget(item)
            else:
                self.attempt_to_delete.add_rate_limited(item)
        finally:
            self.attempt_to_delete.done(item)
        return True

    async def attempt_to_delete_worker(self, n: Node) -> bool:
        """Process one node; True to forget it, False to retry it with backoff."""
        graph = self.graph_builder.uid_to_node
        if not n.is_observed():
            from_graph = graph.read(n.identity.uid)
            if from_graph is None:
                # Requeued virtual node whose object's deletion was observed meanwhile.
                return True
            if from_graph.is_observed():
                # Requeued virtual node whose object has been observed meanwhile.
                return True
        from_graph = graph.read(n.identity.uid)
        if from_graph is not None and (
                n.identity.api_version != from_graph.identity.api_version
                or n.identity.kind != from_graph.identity.kind):
            # The queued node is outdated: use the observed apiVersion/kind.
            n = n.clone()
            n.identity = replace(n.identity, api_version=from_graph.identity.api_version,
                                 kind=from_graph.identity.kind)
        try:
            await self.attempt_to_delete_item(n)
        except (_EnqueuedVirtualDeleteEvent, _NamespacedOwnerOfClusterScopedObject):
            return True
        except asyncio.CancelledError:
            raise
        except RESTMappingError as exc:
            # A kind not served (yet): a CRD not discovered yet, or a wrong reference.
            log.error("error syncing item %s: %s", n.identity, exc)
            return False
        except Exception as exc:  # noqa: BLE001 - retried with backoff
            log.warning("error syncing item %s: %s", n.identity, exc)
            return False
        # A node not seen by an informer yet is checked again (False), or a virtual node
        # for an object added and removed while a watch was re-established would stay.
        return n.is_observed()

    async def is_dangling(self, reference: OwnerReference, item: Node
                          ) -> tuple[bool, dict[str, Any] | None]:
        """Whether ``reference`` points at nothing; the live owner when it exists."""
        key = ObjectReference.of(owner_reference_coordinates(reference), "")
        if self.absent_owner_cache.has(key):
            return True, None
        key = key.with_namespace(item.identity.namespace)
        if self.absent_owner_cache.has(key):
            return True, None
        info, namespaced = await self.ops.api_resource(reference.api_version, reference.kind)
        if not namespaced:
            key = key.with_namespace("")
        if not item.identity.namespace and namespaced:
            log.info("item %s is cluster-scoped, but refers to a namespaced owner %s",
                     item.identity, reference.to_dict())
            raise _NamespacedOwnerOfClusterScopedObject
        try:
            owner = await self.client.get(info, reference.name,
                                          item.identity.namespace if namespaced else None)
        except Exception as exc:
            if is_not_found(exc):
                self.absent_owner_cache.add(key)
                return True, None
            raise
        if meta_of(owner).get("uid") != reference.uid:
            # Same name, another object: the owner named by the reference is gone.
            self.absent_owner_cache.add(key)
            return True, None
        return False, owner

    async def classify_references(self, item: Node, refs: Iterable[OwnerReference]
                                  ) -> tuple[list[OwnerReference], list[OwnerReference],
                                             list[OwnerReference]]:
        """(solid, dangling, waitingForDependentsDeletion) owners, by live GETs."""
        solid: list[OwnerReference] = []
        dangling: list[OwnerReference] = []
        waiting: list[OwnerReference] = []
        for ref in refs:
            is_dangling, owner = await self.is_dangling(ref, item)
            if is_dangling or owner is None:
                dangling.append(ref)
            elif (meta_of(owner).get("deletionTimestamp") is not None
                  and _has_finalizer(owner, FINALIZER_DELETE_DEPENDENTS)):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def attempt_to_delete_item(self, item: Node) -> None:
        """Delete the object if all its owners are gone (or waiting for it), as upstream.

        Raises _EnqueuedVirtualDeleteEvent when the object turned out to be gone.
        """
        log.debug("processing item %s (virtual: %s)", item.identity, not item.is_observed())
        if item.is_being_deleted() and not item.is_deleting_dependents():
            # Being deleted is a one-way trip: wait for the final deletion.
            return
        try:
            latest = await self.ops.get_object(item.identity)
        except Exception as exc:
            if is_not_found(exc):
                self.graph_builder.enqueue_virtual_delete_event(item.identity)
                raise _EnqueuedVirtualDeleteEvent from None
            raise
        latest_meta = meta_of(latest)
        if latest_meta.get("uid") != item.identity.uid:
            self.graph_builder.enqueue_virtual_delete_event(item.identity)
            raise _EnqueuedVirtualDeleteEvent
        if item.is_deleting_dependents():
            await self.process_deleting_dependents_item(item)
            return
        raw_refs = [dict(r) for r in latest_meta.get("ownerReferences") or []]
        if not raw_refs:
            log.debug("item %s doesn't have an owner, continue on next item", item.identity)
            return
        solid, dangling, waiting = await self.classify_references(
            item, owner_references_of(raw_refs))
        resource_version = str(latest_meta.get("resourceVersion") or "")
        if solid:
            if not dangling and not waiting:
                return
            # Waiting owners' references go too, or those owners would wait forever.
            uids = [r.uid for r in dangling] + [r.uid for r in waiting]
            log.info("removing dangling and waiting references %s from item %s", uids,
                     item.identity)
            await self.ops.patch(
                item, delete_owner_ref_strategic_merge_patch(item.identity.uid, uids),
                lambda n: self.ops.delete_owner_ref_json_merge_patch(n, uids))
            return
        if waiting and item.dependents_length():
            for dep in item.get_dependents():
                if dep.is_deleting_dependents():
                    # A possible cycle (this check has false positives): stop blocking the
                    # owners, then delete in foreground anyway.
                    log.info("item %s: some owners and the dependent %s are deleting their "
                             "dependents; unblocking its ownerReferences", item.identity,
                             dep.identity)
                    await self.ops.patch(item, unblock_owner_references_strategic_merge_patch(
                        item), self.ops.unblock_owner_references_json_merge_patch)
                    break
            log.info("at least one owner of item %s is deleting its dependents, and the item "
                     "has dependents: deleting it in Foreground", item.identity)
            await self._delete(item, resource_version, raw_refs, "Foreground")
            return
        # No solid owner: collect it, honouring a propagation finalizer it already has.
        if _has_finalizer(latest, FINALIZER_ORPHAN_DEPENDENTS):
            policy = "Orphan"
        elif _has_finalizer(latest, FINALIZER_DELETE_DEPENDENTS):
            policy = "Foreground"
        else:
            policy = "Background"
        log.info("deleting item %s (propagationPolicy %s)", item.identity, policy)
        await self._delete(item, resource_version, raw_refs, policy)

    async def _delete(self, item: Node, resource_version: str,
                      owners: list[dict[str, Any]], policy: str) -> None:
        try:
            await self.ops.delete_object(item.identity, resource_version, owners, policy)
        except Exception as exc:
            if is_not_found(exc):
                self.graph_builder.enqueue_virtual_delete_event(item.identity)
                raise _EnqueuedVirtualDeleteEvent from None
            raise

    async def process_deleting_dependents_item(self, item: Node) -> None:
        """Foreground: drop the finalizer once no blocking dependent remains, else chase them."""
        blocking = item.blocking_dependents()
        if not blocking:
            log.info("removing the %s finalizer from item %s", FINALIZER_DELETE_DEPENDENTS,
                     item.identity)
            await self.ops.remove_finalizer(item, FINALIZER_DELETE_DEPENDENTS)
            return
        for dep in blocking:
            if not dep.is_deleting_dependents():
                self.attempt_to_delete.add(dep)

    # -- attemptToOrphan ----------------------------------------------------------------

    async def _run_attempt_to_orphan_worker(self) -> None:
        while await self.process_attempt_to_orphan_worker():
            pass

    async def process_attempt_to_orphan_worker(self) -> bool:
        item, shutdown = await self.attempt_to_orphan.get()
        if shutdown or item is None:
            return False
        try:
            if await self.attempt_to_orphan_worker(item):
                self.attempt_to_orphan.forget(item)
            else:
                self.attempt_to_orphan.add_rate_limited(item)
        finally:
            self.attempt_to_orphan.done(item)
        return True

    async def orphan_dependents(self, owner: ObjectReference, dependents: list[Node]) -> None:
        """Remove the reference to ``owner`` from every dependent, all at once."""

        async def one(dep: Node) -> str | None:
            try:
                await self.ops.patch(
                    dep, delete_owner_ref_strategic_merge_patch(dep.identity.uid, [owner.uid]),
                    lambda n: self.ops.delete_owner_ref_json_merge_patch(n, [owner.uid]))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - collected and reported together
                if not is_not_found(exc):
                    return f"orphaning {dep.identity} failed, {exc}"
            return None

        errors = [e for e in await asyncio.gather(*(one(d) for d in dependents)) if e]
        if errors:
            raise RuntimeError(f"failed to orphan dependents of owner {owner}, got errors: "
                               + ", ".join(errors))
        log.debug("successfully updated all dependents of %s", owner)

    async def attempt_to_orphan_worker(self, owner: Node) -> bool:
        """Orphan the owner's dependents, then drop its finalizer; True to forget it."""
        try:
            await self.orphan_dependents(owner.identity, owner.get_dependents())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - retried with backoff
            log.warning("orphanDependents for %s failed with %s", owner.identity, exc)
            return False
        try:
            await self.ops.remove_finalizer(owner, FINALIZER_ORPHAN_DEPENDENTS)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - retried with backoff
            log.warning("removeOrphanFinalizer for %s failed with %s", owner.identity, exc)
            return False
        return True

