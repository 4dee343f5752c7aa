"""The garbage collector's dependency graph: nodes, owner/dependent links, virtual nodes.

kube-controller-manager pkg/controller/garbagecollector graph.go (``node``,
``objectReference``, ``concurrentUIDToNode``), absent_owner_cache.go
(``ReferenceCache``) and the pure helpers of graph_builder.go
(``referencesDiffs``, ``partitionDependents``, ``getAlternateOwnerIdentity``).

Role and data flow::

    GraphBuilder.process_graph_changes (the only writer)
        │ insert / update / remove Node, link dependents to owners,
        │ create *virtual* nodes for owners not (yet) seen by any informer
        ▼
    UIDToNode {uid: Node}  ◄── read by the attemptToDelete / attemptToOrphan workers
        │ Node.owners: the ownerReferences of the object (OwnerReference values)
        │ Node.dependents: the nodes whose ownerReferences name this node's uid
        ▼
    ReferenceCache: owners the API server said do not exist (shared by both sides)

A node keeps only what the garbage collector decides with: the object's
identity (apiVersion, kind, namespace, name, uid), its ownerReferences, and
three flags (being deleted, deleting its dependents, virtual). Nothing of the
object itself is held, so the graph costs a few hundred bytes per object
whatever the size of the objects the informers cache.

Concurrency: everything runs on one event loop; the graph builder mutates the
graph only between awaits of the workers, so no locks are needed (upstream
guards each field with its own mutex because its workers are goroutines).
Queues hold Node objects and de-duplicate them by identity, as upstream's
queues do with ``*node`` pointers: a Node compares and hashes by identity.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Node",
    "ObjectReference",
    "OwnerReference",
    "ReferenceCache",
    "UIDToNode",
    "get_alternate_owner_identity",
    "owner_reference_coordinates",
    "owner_reference_matches_coordinates",
    "partition_dependents",
    "reference_less_than",
    "references_diffs",
]


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """One entry of ``metadata.ownerReferences`` (metav1.OwnerReference), immutable."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OwnerReference:
        controller = d.get("controller")
        block = d.get("blockOwnerDeletion")
        return cls(api_version=str(d.get("apiVersion") or ""), kind=str(d.get("kind") or ""),
                   name=str(d.get("name") or ""), uid=str(d.get("uid") or ""),
                   controller=None if controller is None else bool(controller),
                   block_owner_deletion=None if block is None else bool(block))

    def to_dict(self) -> dict[str, Any]:
        """The wire form (apiVersion, kind, name, uid, then the optional flags)."""
        out: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind,
                               "name": self.name, "uid": self.uid}
        if self.controller is not None:
            out["controller"] = self.controller
        if self.block_owner_deletion is not None:
            out["blockOwnerDeletion"] = self.block_owner_deletion
        return out

    @property
    def blocks_owner_deletion(self) -> bool:
        return self.block_owner_deletion is True


def owner_references_of(refs: Iterable[Mapping[str, Any]] | None) -> tuple[OwnerReference, ...]:
    """The OwnerReference values of a raw ``ownerReferences`` list (None: none)."""
    if not refs:
        return ()
    return tuple(OwnerReference.from_dict(r) for r in refs if isinstance(r, Mapping))


def owner_reference_coordinates(ref: OwnerReference) -> OwnerReference:
    """Only the coordinates of a reference: uid, name, kind, apiVersion."""
    return OwnerReference(api_version=ref.api_version, kind=ref.kind, name=ref.name,
                          uid=ref.uid)


def owner_reference_matches_coordinates(a: OwnerReference, b: OwnerReference) -> bool:
    """Whether two references agree on uid, name, kind and apiVersion."""
    return (a.uid == b.uid and a.name == b.name and a.kind == b.kind
            and a.api_version == b.api_version)


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """An object's identity: its owner-reference coordinates plus its namespace.

    Hashable: it keys the absent-owner cache and is compared whole when a
    virtual node meets the object it stands for.
    """

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    @classmethod
    def of(cls, ref: OwnerReference, namespace: str) -> ObjectReference:
        return cls(api_version=ref.api_version, kind=ref.kind, name=ref.name, uid=ref.uid,
                   namespace=namespace)

    @property
    def owner_reference(self) -> OwnerReference:
        """The coordinates as an OwnerReference (without controller/block flags)."""
        return OwnerReference(api_version=self.api_version, kind=self.kind, name=self.name,
                              uid=self.uid)

    def with_namespace(self, namespace: str) -> ObjectReference:
        return ObjectReference(self.api_version, self.kind, self.name, self.uid, namespace)

    def __str__(self) -> str:
        return (f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, "
                f"name: {self.name}, uid: {self.uid}]")


class Node:
    """One object (or a virtual stand-in for an owner never observed) in the graph.

    Compared and hashed by identity, like upstream's ``*node``: two nodes
    for the same uid (a virtual one and its replacement) are distinct
    queue items.
    """

    __slots__ = ("being_deleted", "deleting_dependents", "dependents", "identity", "owners",
                 "virtual")

    def __init__(self, identity: ObjectReference, *,
                 owners: Iterable[OwnerReference] = (), virtual: bool = False,
                 being_deleted: bool = False, deleting_dependents: bool = False) -> None:
        self.identity = identity
        # The nodes whose ownerReferences name this node's uid.
        self.dependents: set[Node] = set()
        # Set when the object has a deletionTimestamp and the foregroundDeletion finalizer.
        self.deleting_dependents = deleting_dependents
        # One way: an object being deleted never comes back.
        self.being_deleted = being_deleted
        # Created for an owner no informer has reported (yet).
        self.virtual = virtual
        # The object's ownerReferences, compared with each update's.
        self.owners: list[OwnerReference] = list(owners)

    def clone(self) -> Node:
        """A copy with the same dependents set contents (the graph builder's only)."""
        c = Node(self.identity, owners=self.owners, virtual=self.virtual,
                 being_deleted=self.being_deleted,
                 deleting_dependents=self.deleting_dependents)
        c.dependents = set(self.dependents)
        return c

    def mark_being_deleted(self) -> None:
        self.being_deleted = True

    def is_being_deleted(self) -> bool:
        return self.being_deleted

    def mark_observed(self) -> None:
        self.virtual = False

    def is_observed(self) -> bool:
        return not self.virtual

    def mark_deleting_dependents(self) -> None:
        self.deleting_dependents = True

    def is_deleting_dependents(self) -> bool:
        return self.deleting_dependents

    def add_dependent(self, dependent: Node) -> None:
        self.dependents.add(dependent)

    def delete_dependent(self, dependent: Node) -> None:
        self.dependents.discard(dependent)

    def dependents_length(self) -> int:
        return len(self.dependents)

    def get_dependents(self) -> list[Node]:
        """A snapshot of the dependents (the set may change at the next await)."""
        return list(self.dependents)

    def blocking_dependents(self) -> list[Node]:
        """Dependents whose reference to this node has ``blockOwnerDeletion: true``."""
        uid = self.identity.uid
        return [dep for dep in self.get_dependents()
                for ref in dep.owners if ref.uid == uid and ref.blocks_owner_deletion]

    def __repr__(self) -> str:
        flags = "".join(f for f, on in ((" virtual", self.virtual),
                                        (" beingDeleted", self.being_deleted),
                                        (" deletingDependents", self.deleting_dependents))
                        if on)
        return (f"<Node {self.identity}{flags} owners={len(self.owners)} "
                f"dependents={len(self.dependents)}>")


class UIDToNode:
    """The graph's index: uid → Node (upstream's ``concurrentUIDToNode``)."""

    __slots__ = ("_m",)

    def __init__(self) -> None:
        self._m: dict[str, Node] = {}

    def write(self, node: Node) -> None:
        self._m[node.identity.uid] = node

    def read(self, uid: str) -> Node | None:
        return self._m.get(uid)

    def delete(self, uid: str) -> None:
        self._m.pop(uid, None)

    def __contains__(self, uid: object) -> bool:
        return uid in self._m

    def __len__(self) -> int:
        return len(self._m)

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._m.values()))


class ReferenceCache:
    """An LRU set of owner references known not to exist (absent_owner_cache.go).

    Keys are ObjectReferences: a namespaced owner is absent *in a namespace*;
    a cluster-scoped one is recorded with an empty namespace.
    """

    def __init__(self, max_entries: int = 500) -> None:
        self._max = max_entries
        self._cache: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, ref: ObjectReference) -> None:
        self._cache[ref] = None
        self._cache.move_to_end(ref)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)

    def has(self, ref: ObjectReference) -> bool:
        if ref in self._cache:
            self._cache.move_to_end(ref)
            return True
        return False

    def __len__(self) -> int:
        return len(self._cache)


def references_diffs(old: Iterable[OwnerReference], new: Iterable[OwnerReference]
                     ) -> tuple[list[OwnerReference], list[OwnerReference],
                                list[tuple[OwnerReference, OwnerReference]]]:
    """(added, removed, changed (old, new)) between two ownerReference lists, by uid."""
    old_by_uid = {r.uid: r for r in old}
    unmatched = dict.fromkeys(old_by_uid)  # ordered set of the old uids not seen yet
    added: list[OwnerReference] = []
    changed: list[tuple[OwnerReference, OwnerReference]] = []
    for ref in new:
        if ref.uid in unmatched:
            prev = old_by_uid[ref.uid]
            if prev != ref:
                changed.append((prev, ref))
            del unmatched[ref.uid]
        else:
            added.append(ref)
    return added, [old_by_uid[uid] for uid in unmatched], changed


def partition_dependents(dependents: Iterable[Node], match: ObjectReference
                         ) -> tuple[list[Node], list[Node]]:
    """Split dependents into those whose reference to ``match.uid`` agrees with ``match``
    and those whose reference disagrees (a dependent can land in both)."""
    owner_is_namespaced = bool(match.namespace)
    match_ref = match.owner_reference
    matching: list[Node] = []
    nonmatching: list[Node] = []
    for dep in dependents:
        found_match = found_mismatch = False
        if owner_is_namespaced and match.namespace != dep.identity.namespace:
            # A namespaced owner can only own objects of its own namespace.
            found_mismatch = True
        else:
            for ref in dep.owners:
                if ref.uid == match.uid:
                    if owner_reference_matches_coordinates(ref, match_ref):
                        found_match = True
                    else:
                        found_mismatch = True
        if found_match:
            matching.append(dep)
        if found_mismatch:
            nonmatching.append(dep)
    return matching, nonmatching


def _sort_key(r: ObjectReference) -> tuple[str, str, str, str, str]:
    # kind/apiVersion before namespace, so kinds order the same whatever their scope.
    return (r.kind, r.api_version, r.namespace, r.name, r.uid)


def reference_less_than(a: ObjectReference, b: ObjectReference) -> bool:
    return _sort_key(a) < _sort_key(b)


def get_alternate_owner_identity(deps: Iterable[Node], verified_absent: ObjectReference
                                 ) -> ObjectReference | None:
    """Another identity the dependents give the owner of ``verified_absent.uid``.

    The first one sorting after ``verified_absent`` if any, else the first
    one; None when every dependent agrees with ``verified_absent``.
    """
    absent_is_cluster_scoped = not verified_absent.namespace
    absent_ref = verified_absent.owner_reference
    seen: set[ObjectReference] = {verified_absent}
    first: ObjectReference | None = None
    first_following: ObjectReference | None = None
    for dep in deps:
        for ref in dep.owners:
            if ref.uid != verified_absent.uid:
                continue
            if owner_reference_matches_coordinates(ref, absent_ref) and (
                    absent_is_cluster_scoped
                    or verified_absent.namespace == dep.identity.namespace):
                continue
            alt = ObjectReference.of(ref, dep.identity.namespace)
            if (absent_is_cluster_scoped and alt.api_version == verified_absent.api_version
                    and alt.kind == verified_absent.kind):
                # That apiVersion/kind is known cluster-scoped: no namespace.
                alt = alt.with_namespace("")
            if alt in seen:
                continue
            seen.add(alt)
            if first is None or reference_less_than(alt, first):
                first = alt
            if reference_less_than(verified_absent, alt) and (
                    first_following is None or reference_less_than(alt, first_following)):
                first_following = alt
    return first_following if first_following is not None else first
