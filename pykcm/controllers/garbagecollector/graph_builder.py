"""GraphBuilder: monitors on every deletable resource, the graphChanges queue, the graph.

kube-controller-manager pkg/controller/garbagecollector graph_builder.go.

Data flow::

    discovery (every 30 s) ──► sync_monitors({gvr: ResourceInfo})
                                  │ one Monitor per deletable resource: a handler on the
                                  │ shared factory's informer of that resource
                                  ▼
    informer add/update/delete ──► _MonitorHandler: GraphEvent(type, slim metadata,
                                  │                  apiVersion/kind of the resource)
                                  ▼
                        graph_changes: Queue[GraphEvent]  (+ virtual delete events from
                                  │                         the workers)
                                  ▼ one consumer: process_graph_changes
                        UIDToNode graph (graph.py) ── enqueues ──► attempt_to_delete
                                                                  attempt_to_orphan

Only the metadata the graph needs is taken from each informer event (uid,
name, namespace, ownerReferences, finalizers, whether a deletionTimestamp is
set): events queued for the graph builder never pin whole objects.

Monitors get their informers from an ObjectOrMetadataInformerFactory, as
upstream's (pykcm/informers/object_or_metadata.py): a resource some controller
already caches whole shares that informer, every other resource is watched as
PartialObjectMetadata (a metadata-only informer); a plain SharedInformerFactory
(full objects for everything) works too. Only ``metadata`` of the cached
objects is read. Removing a resource's monitor (its CRD was deleted) removes
the graph builder's handler from the informer; the shared informer itself
belongs to the factory, which has no per-informer stop.

``process_event`` is synchronous: the graph changes only between awaits of
the workers, so a worker sees a consistent graph between its own awaits.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from msgspec import UNSET

from pykcm.api.resources import ResourceInfo
from pykcm.cache.event_handlers import ResourceEventHandlerRegistration
from pykcm.cache.frozen_object import FrozenMeta
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.controller.event_recorder import EVENT_TYPE_WARNING, EventRecorder
from pykcm.controllers.garbagecollector.graph import (
    Node,
    ObjectReference,
    OwnerReference,
    ReferenceCache,
    UIDToNode,
    get_alternate_owner_identity,
    owner_reference_coordinates,
    owner_reference_matches_coordinates,
    owner_references_of,
    partition_dependents,
    references_diffs,
)
from pykcm.controllers.garbagecollector.operations import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
)
from pykcm.informers.factory import SharedInformerFactory
from pykcm.informers.generic import GenericInformer, GroupVersionResource
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory
from pykcm.workqueue import Queue, RateLimitingQueue

__all__ = [
    "DEFAULT_IGNORED_RESOURCES",
    "EventType",
    "GraphBuilder",
    "GraphEvent",
    "Monitor",
    "ObjectMeta",
]

log = logging.getLogger("pykcm.controllers.garbagecollector")

DEFAULT_IGNORED_RESOURCES: Final[frozenset[tuple[str, str]]] = frozenset({
    ("", "events"), ("events.k8s.io", "events")})
"""(group, resource) pairs the garbage collector never monitors (upstream's defaults)."""

# Monitors get no resync: the graph follows every change already.
RESOURCE_RESYNC_TIME: Final = 0.0


class EventType(enum.Enum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    """The part of an object's metadata the graph reads."""

    uid: str
    name: str
    namespace: str = ""
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()
    being_deleted: bool = False

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectMeta:
        meta = obj.get("metadata") or {}
        if type(meta) is FrozenMeta:
            return cls._of_frozen(meta)
        return cls(uid=str(meta.get("uid") or ""), name=str(meta.get("name") or ""),
                   namespace=str(meta.get("namespace") or ""),
                   owner_references=owner_references_of(meta.get("ownerReferences")),
                   finalizers=tuple(meta.get("finalizers") or ()),
                   being_deleted=meta.get("deletionTimestamp") is not None)

    @classmethod
    def _of_frozen(cls, meta: FrozenMeta) -> ObjectMeta:
        # What ``of`` reads, from a compact cached object's fields (the graph builder
        # reads both versions of every object at every event of every resource): unset
        # fields are UNSET (falsy), as a missing key; the owner references' conversion
        # is shared by the objects that share their decoded references (a ReplicaSet's
        # pods)
        dt = meta.deletionTimestamp
        refs: Any = meta.ownerReferences  # decoded: a tuple, None or UNSET
        fins = meta.finalizers
        return cls(uid=str(meta.uid or ""), name=str(meta.name or ""),
                   namespace=str(meta.namespace or ""),
                   owner_references=_shared_owner_references(refs) if type(refs) is tuple
                   else owner_references_of(meta.get("ownerReferences")),
                   finalizers=tuple(fins) if fins else (),
                   being_deleted=dt is not UNSET and dt is not None)

    def has_finalizer(self, finalizer: str) -> bool:
        return finalizer in self.finalizers


# Converted owner references by the id of the decoded tuple a compact object holds (the
# tuple is kept in the entry, so its id is not reused while the entry exists).
_converted_refs: dict[int, tuple[tuple[Any, ...], tuple[OwnerReference, ...]]] = {}
_CONVERTED_REFS_MAX: Final = 4096


def _shared_owner_references(refs: tuple[Any, ...]) -> tuple[OwnerReference, ...]:
    entry = _converted_refs.get(id(refs))
    if entry is not None and entry[0] is refs:
        return entry[1]
    out = owner_references_of(refs)
    if len(_converted_refs) >= _CONVERTED_REFS_MAX:
        _converted_refs.clear()
    _converted_refs[id(refs)] = (refs, out)
    return out


@dataclass(frozen=True, slots=True, eq=False)
class GraphEvent:
    """One change for the graph builder (distinct objects: the queue never merges two)."""

    event_type: EventType
    obj: ObjectMeta
    api_version: str
    kind: str
    old_obj: ObjectMeta | None = None
    # Made by a worker that found the object gone, not seen by an informer.
    virtual: bool = False

    def identity(self) -> ObjectReference:
        return ObjectReference(api_version=self.api_version, kind=self.kind,
                               name=self.obj.name, uid=self.obj.uid,
                               namespace=self.obj.namespace)


def _deletion_starts_with_finalizer(old: ObjectMeta | None, new: ObjectMeta,
                                    finalizer: str) -> bool:
    if not new.being_deleted or not new.has_finalizer(finalizer):
        return False
    if old is None:
        return True
    return not old.being_deleted or not old.has_finalizer(finalizer)


class _MonitorHandler:
    """Turns one resource's informer events into GraphEvents."""

    __slots__ = ("_api_version", "_kind", "_queue")

    def __init__(self, queue: Queue[GraphEvent], info: ResourceInfo) -> None:
        self._queue = queue
        self._api_version = info.api_version
        self._kind = info.kind

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._queue.add(GraphEvent(EventType.ADD, ObjectMeta.of(obj), self._api_version,
                                   self._kind))

    def on_update(self, old: Any, new: Any) -> None:
        self._queue.add(GraphEvent(EventType.UPDATE, ObjectMeta.of(new), self._api_version,
                                   self._kind, old_obj=ObjectMeta.of(old)))

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        self._queue.add(GraphEvent(EventType.DELETE, ObjectMeta.of(obj), self._api_version,
                                   self._kind))


@dataclass(slots=True)
class Monitor:
    """The graph builder's handler on one resource's informer."""

    resource: ResourceInfo
    informer: GenericInformer
    registration: ResourceEventHandlerRegistration

    def has_synced(self) -> bool:
        return self.registration.has_synced()


class GraphBuilder:
    """Keeps the dependency graph from informer events; feeds the two GC queues.

    ``recorder`` receives the OwnerRefInvalidNamespace warnings (None: logged
    only). The queues and the absent-owner cache are shared with the
    GarbageCollector, which creates them.
    """

    def __init__(self, informer_factory: SharedInformerFactory | ObjectOrMetadataInformerFactory
                 | None, *,
                 attempt_to_delete: RateLimitingQueue[Node],
                 attempt_to_orphan: RateLimitingQueue[Node],
                 absent_owner_cache: ReferenceCache,
                 recorder: EventRecorder | None = None,
                 ignored_resources: Iterable[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES
                 ) -> None:
        self._factory = informer_factory
        self.attempt_to_delete = attempt_to_delete
        self.attempt_to_orphan = attempt_to_orphan
        self.absent_owner_cache = absent_owner_cache
        self.recorder = recorder
        self.ignored_resources = frozenset(ignored_resources)
        self.graph_changes: Queue[GraphEvent] = Queue("garbage_collector_graph_changes")
        self.uid_to_node = UIDToNode()
        self.monitors: dict[GroupVersionResource, Monitor] = {}
        self.running = False

    # -- monitors ---------------------------------------------------------------------

    def sync_monitors(self, resources: Mapping[GroupVersionResource, ResourceInfo]
                      ) -> list[str]:
        """Monitor exactly these resources (minus the ignored ones); returns the errors.

        New monitors are registered but their informers are started only by
        :meth:`start_monitors`.
        """
        if self._factory is None:
            raise RuntimeError("the graph builder has no informer factory")
        to_remove = dict(self.monitors)
        current: dict[GroupVersionResource, Monitor] = {}
        errors: list[str] = []
        added = kept = 0
        for gvr, info in resources.items():
            if (gvr.group, gvr.resource) in self.ignored_resources:
                continue
            existing = to_remove.pop(gvr, None)
            if existing is not None:
                current[gvr] = existing
                kept += 1
                continue
            if not info.kind:
                errors.append(f"couldn't look up resource {gvr}: no kind")
                continue
            try:
                gi = self._factory.informer_for(info)
                reg = gi.informer.add_event_handler(_MonitorHandler(self.graph_changes, info),
                                                    RESOURCE_RESYNC_TIME)
            except Exception as exc:  # noqa: BLE001 - reported, the other monitors go on
                errors.append(f"couldn't start monitor for resource {gvr}: {exc}")
                continue
            current[gvr] = Monitor(info, gi, reg)
            added += 1
        self.monitors = current
        for m in to_remove.values():
            try:
                m.informer.informer.remove_event_handler(m.registration)
            except Exception as exc:  # noqa: BLE001 - a stopped informer
                log.debug("removing the monitor of %s: %s", m.resource.group_resource, exc)
        log.debug("synced monitors; added %d, kept %d, removed %d", added, kept, len(to_remove))
        return errors

    def start_monitors(self) -> None:
        """Start the informers of new monitors (only once the graph builder runs)."""
        if not self.running or self._factory is None:
            return
        self._factory.start()

    def is_synced(self) -> bool:
        """True if monitors exist and every one of them has synced."""
        if not self.monitors:
            return False
        return all(m.has_synced() for m in self.monitors.values())

    def is_resource_synced(self, gvr: GroupVersionResource) -> bool:
        m = self.monitors.get(gvr)
        return m is not None and m.has_synced()

    def cached_object(self, info: ResourceInfo, namespace: str, name: str
                      ) -> Mapping[str, Any] | None:
        """The object in the monitor's cache of that resource (same group and plural)."""
        m = self.monitors.get(GroupVersionResource.of(info))
        if m is None:
            for gvr, candidate in self.monitors.items():
                if gvr.group == info.group and gvr.resource == info.plural:
                    m = candidate
                    break
        if m is None:
            return None
        key = f"{namespace}/{name}" if namespace else name
        obj: Mapping[str, Any] | None = m.informer.informer.get_indexer().get_by_key(key)
        return obj

    # -- running ----------------------------------------------------------------------

    async def run(self) -> None:
        """Start the monitors, then apply graph changes until the queue shuts down."""
        self.running = True
        self.start_monitors()
        try:
            while await self.process_graph_changes():
                pass
        finally:
            self.running = False
            self.graph_changes.shut_down()

    def shut_down(self) -> None:
        self.graph_changes.shut_down()
        for m in self.monitors.values():
            try:
                m.informer.informer.remove_event_handler(m.registration)
            except Exception:  # noqa: BLE001, S110 - the informer stopped already
                pass
        self.monitors = {}

    async def process_graph_changes(self) -> bool:
        """Take one event and apply it; False once the queue is shut down."""
        event, shutdown = await self.graph_changes.get()
        if shutdown or event is None:
            return False
        try:
            self.process_event(event)
        except Exception:
            log.exception("garbage collector: processing graph event %s %s failed",
                          event.event_type.value, event.identity())
        finally:
            self.graph_changes.done(event)
        return True

    # -- the graph --------------------------------------------------------------------

    def enqueue_virtual_delete_event(self, ref: ObjectReference) -> None:
        """Tell the graph that the API server has no object for this (virtual) node."""
        self.graph_changes.add(GraphEvent(
            EventType.DELETE, ObjectMeta(uid=ref.uid, name=ref.name, namespace=ref.namespace),
            ref.api_version, ref.kind, virtual=True))

    def add_dependent_to_owners(self, n: Node, owners: Iterable[OwnerReference]) -> None:
        """Link ``n`` under each owner, creating virtual nodes for owners not in the graph."""
        # Set once a referenced owner is known and n's reference to it looks wrong.
        potentially_invalid = False
        for owner in owners:
            owner_node = self.uid_to_node.read(owner.uid)
            if owner_node is None:
                owner_node = Node(ObjectReference.of(owner_reference_coordinates(owner),
                                                     n.identity.namespace), virtual=True)
                log.debug("add virtual item %s", owner_node.identity)
                self.uid_to_node.write(owner_node)
                owner_node.add_dependent(n)
                # The worker asks the API server whether it exists.
                self.attempt_to_delete.add(owner_node)
                continue
            owner_node.add_dependent(n)
            if potentially_invalid:
                continue
            owner_ns = owner_node.identity.namespace
            if owner_ns and owner_ns != n.identity.namespace:
                if owner_node.is_observed():
                    # A namespaced owner owns only objects of its own namespace.
                    log.info("item %s references an owner %s but does not match namespaces",
                             n.identity, owner_node.identity)
                    self.report_invalid_namespace_owner_ref(n, owner.uid)
                potentially_invalid = True
            elif not owner_reference_matches_coordinates(owner,
                                                         owner_node.identity.owner_reference):
                if owner_node.is_observed():
                    log.info("item %s references an owner %s with coordinates that do not "
                             "match the observed identity", n.identity, owner_node.identity)
                potentially_invalid = True
            elif (not owner_ns and owner_node.identity.namespace != n.identity.namespace
                  and not owner_node.is_observed()):
                # A virtual cluster-scoped owner of a namespaced dependent may really be
                # a missing namespaced object referenced from a cluster-scoped child.
                potentially_invalid = True
        if potentially_invalid:
            self.attempt_to_delete.add(n)

    def report_invalid_namespace_owner_ref(self, n: Node, invalid_owner_uid: str) -> None:
        ref = next((o for o in n.owners if o.uid == invalid_owner_uid), None)
        if ref is None:
            return
        invalid = ObjectReference.of(owner_reference_coordinates(ref), n.identity.namespace)
        message = (f"ownerRef {invalid} does not exist in namespace "
                   f"\"{n.identity.namespace}\"")
        log.warning("%s %s: %s", n.identity.kind, n.identity.name, message)
        if self.recorder is not None:
            self.recorder.event(_event_target(n.identity), EVENT_TYPE_WARNING,
                                "OwnerRefInvalidNamespace", message)

    def insert_node(self, n: Node) -> None:
        self.uid_to_node.write(n)
        self.add_dependent_to_owners(n, n.owners)

    def remove_dependent_from_owners(self, n: Node, owners: Iterable[OwnerReference]) -> None:
        for owner in owners:
            owner_node = self.uid_to_node.read(owner.uid)
            if owner_node is not None:
                owner_node.delete_dependent(n)

    def remove_node(self, n: Node) -> None:
        self.uid_to_node.delete(n.identity.uid)
        self.remove_dependent_from_owners(n, n.owners)

    def add_unblocked_owners_to_delete_queue(
            self, removed: Iterable[OwnerReference],
            changed: Iterable[tuple[OwnerReference, OwnerReference]]) -> None:
        """Owners a dependent stopped blocking may now finish a foreground deletion."""
        for ref in removed:
            if ref.blocks_owner_deletion:
                node = self.uid_to_node.read(ref.uid)
                if node is not None:
                    self.attempt_to_delete.add(node)
        for old, new in changed:
            if old.blocks_owner_deletion and not new.blocks_owner_deletion:
                node = self.uid_to_node.read(new.uid)
                if node is not None:
                    self.attempt_to_delete.add(node)

    def process_transitions(self, old: ObjectMeta | None, new: ObjectMeta, n: Node) -> None:
        if _deletion_starts_with_finalizer(old, new, FINALIZER_ORPHAN_DEPENDENTS):
            log.debug("add %s to attemptToOrphan", n.identity)
            self.attempt_to_orphan.add(n)
            return
        if _deletion_starts_with_finalizer(old, new, FINALIZER_DELETE_DEPENDENTS):
            log.debug("add %s to attemptToDelete: it waits for its dependents' deletion",
                      n.identity)
            # A node created virtual has no deletingDependents yet: always set it here.
            n.mark_deleting_dependents()
            for dep in n.get_dependents():
                self.attempt_to_delete.add(dep)
            self.attempt_to_delete.add(n)

    def process_event(self, event: GraphEvent) -> None:
        """Apply one graph change (processGraphChanges' body)."""
        meta = event.obj
        existing = self.uid_to_node.read(meta.uid)
        if existing is not None and not event.virtual and not existing.is_observed():
            # An informer reports the object a virtual node stood for.
            observed = event.identity()
            if observed != existing.identity:
                # Dependents that named it by other coordinates are checked again
                # (a no-op where their owners are solid).
                _, invalid = partition_dependents(existing.get_dependents(), observed)
                for dep in invalid:
                    if observed.namespace and dep.identity.namespace != observed.namespace:
                        log.info("item %s references an owner %s but does not match "
                                 "namespaces", dep.identity, observed)
                        self.report_invalid_namespace_owner_ref(dep, observed.uid)
                    self.attempt_to_delete.add(dep)
                log.info("replacing virtual item %s with observed item %s",
                         existing.identity, observed)
                existing = existing.clone()
                existing.identity = observed
                self.uid_to_node.write(existing)
            existing.mark_observed()

        if event.event_type in (EventType.ADD, EventType.UPDATE):
            if existing is None:
                new_node = Node(event.identity(), owners=meta.owner_references,
                                being_deleted=meta.being_deleted,
                                deleting_dependents=meta.being_deleted and meta.has_finalizer(
                                    FINALIZER_DELETE_DEPENDENTS))
                self.insert_node(new_node)
                # The DeltaFIFO may fold a creation and a deletion into one event.
                self.process_transitions(event.old_obj, meta, new_node)
                return
            added, removed, changed = references_diffs(existing.owners, meta.owner_references)
            if added or removed or changed:
                self.add_unblocked_owners_to_delete_queue(removed, changed)
                existing.owners = list(meta.owner_references)
                self.add_dependent_to_owners(existing, added)
                self.remove_dependent_from_owners(existing, removed)
            if meta.being_deleted:
                existing.mark_being_deleted()
            self.process_transitions(event.old_obj, meta, existing)
            return

        # DELETE
        if existing is None:
            log.debug("item %s doesn't exist in the graph, this shouldn't happen", meta.uid)
            return
        remove_existing = True
        if event.virtual:
            deleted = event.identity()
            if existing.virtual:
                # Unsure of our coordinates: do the dependents disagree on them?
                matching, nonmatching = partition_dependents(existing.get_dependents(),
                                                             deleted)
                if nonmatching:
                    remove_existing = False
                    if matching:
                        self.absent_owner_cache.add(deleted)
                        for dep in matching:
                            self.attempt_to_delete.add(dep)
                    if existing.identity == deleted:
                        # Try the next identity the other dependents know us by.
                        replacement = get_alternate_owner_identity(nonmatching, deleted)
                        if replacement is not None:
                            node = existing.clone()
                            node.identity = replacement
                            self.uid_to_node.write(node)
                            self.attempt_to_delete.add_rate_limited(node)
            elif existing.identity != deleted:
                # A real node is never removed by a virtual event for other coordinates.
                remove_existing = False
                matching, _ = partition_dependents(existing.get_dependents(), deleted)
                if matching:
                    self.absent_owner_cache.add(deleted)
                    for dep in matching:
                        self.attempt_to_delete.add(dep)
        if not remove_existing:
            return
        self.remove_node(existing)
        if existing.dependents:
            self.absent_owner_cache.add(event.identity())
        for dep in existing.get_dependents():
            self.attempt_to_delete.add(dep)
        for owner in existing.owners:
            owner_node = self.uid_to_node.read(owner.uid)
            if owner_node is not None and owner_node.is_deleting_dependents():
                # It may have been waiting for this dependent only.
                self.attempt_to_delete.add(owner_node)


def _event_target(identity: ObjectReference) -> dict[str, Any]:
    """An object stub the event recorder builds its involvedObject from."""
    meta: dict[str, Any] = {"name": identity.name, "uid": identity.uid}
    if identity.namespace:
        meta["namespace"] = identity.namespace
    return {"apiVersion": identity.api_version, "kind": identity.kind, "metadata": meta}

