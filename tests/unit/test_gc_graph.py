"""Graph transitions of the garbage collector's GraphBuilder, without a server.

Events are fed to ``GraphBuilder.process_event`` directly; the graph and the
attemptToDelete / attemptToOrphan queues are inspected after each.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.controllers.garbagecollector.graph import (
    Node,
    ObjectReference,
    OwnerReference,
    ReferenceCache,
    get_alternate_owner_identity,
    partition_dependents,
    reference_less_than,
    references_diffs,
)
from pykcm.controllers.garbagecollector.graph_builder import (
    EventType,
    GraphBuilder,
    GraphEvent,
    ObjectMeta,
)
from pykcm.workqueue import RateLimitingQueue


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[dict[str, Any], str, str, str]] = []

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((obj, type_, reason, message))


def builder() -> tuple[GraphBuilder, FakeRecorder]:
    rec = FakeRecorder()
    gb = GraphBuilder(None, attempt_to_delete=RateLimitingQueue(),
                      attempt_to_orphan=RateLimitingQueue(),
                      absent_owner_cache=ReferenceCache(), recorder=rec)  # type: ignore[arg-type]
    return gb, rec


async def drain(q: RateLimitingQueue[Node]) -> list[Node]:
    """What the queue holds now (ready items), emptied."""
    out: list[Node] = []
    while len(q):
        item, _ = await q.get()
        assert item is not None
        q.done(item)
        out.append(item)
    return out


def oref(name: str, uid: str, *, kind: str = "ConfigMap", api_version: str = "v1",
         block: bool | None = None) -> OwnerReference:
    return OwnerReference(api_version, kind, name, uid, None, block)


def meta(name: str, uid: str, ns: str = "ns", *owners: OwnerReference,
         finalizers: tuple[str, ...] = (), deleting: bool = False) -> ObjectMeta:
    return ObjectMeta(uid=uid, name=name, namespace=ns, owner_references=tuple(owners),
                      finalizers=finalizers, being_deleted=deleting)


def add(gb: GraphBuilder, m: ObjectMeta, kind: str = "ConfigMap",
        api_version: str = "v1") -> None:
    gb.process_event(GraphEvent(EventType.ADD, m, api_version, kind))


def update(gb: GraphBuilder, old: ObjectMeta, new: ObjectMeta, kind: str = "ConfigMap") -> None:
    gb.process_event(GraphEvent(EventType.UPDATE, new, "v1", kind, old_obj=old))


def delete(gb: GraphBuilder, m: ObjectMeta, kind: str = "ConfigMap") -> None:
    gb.process_event(GraphEvent(EventType.DELETE, m, "v1", kind))


def node(gb: GraphBuilder, uid: str) -> Node:
    n = gb.uid_to_node.read(uid)
    assert n is not None
    return n


async def test_add_owner_then_dependent_links_them() -> None:
    gb, _ = builder()
    add(gb, meta("owner", "u-owner"))
    add(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner")))
    owner = node(gb, "u-owner")
    assert owner.is_observed()
    assert owner.get_dependents() == [node(gb, "u-dep")]
    assert await drain(gb.attempt_to_delete) == []


async def test_dependent_first_creates_a_virtual_owner_then_observes_it() -> None:
    gb, _ = builder()
    add(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner")))
    virtual = node(gb, "u-owner")
    assert virtual.virtual
    assert virtual.identity == ObjectReference("v1", "ConfigMap", "owner", "u-owner", "ns")
    # The virtual owner goes to attemptToDelete: a worker checks it with a live GET.
    assert await drain(gb.attempt_to_delete) == [virtual]

    add(gb, meta("owner", "u-owner"))
    real = node(gb, "u-owner")
    assert real is virtual and real.is_observed()
    assert real.get_dependents() == [node(gb, "u-dep")]


async def test_virtual_delete_event_removes_the_virtual_owner_and_queues_dependents() -> None:
    gb, _ = builder()
    add(gb, meta("dep", "u-dep", "ns", oref("ghost", "u-ghost")))
    virtual = node(gb, "u-ghost")
    await drain(gb.attempt_to_delete)
    gb.enqueue_virtual_delete_event(virtual.identity)
    ev, _ = await gb.graph_changes.get()
    assert ev is not None
    assert ev.virtual and ev.event_type is EventType.DELETE
    gb.process_event(ev)
    assert gb.uid_to_node.read("u-ghost") is None
    assert await drain(gb.attempt_to_delete) == [node(gb, "u-dep")]
    assert gb.absent_owner_cache.has(virtual.identity)


async def test_delete_of_owner_queues_dependents_and_records_it_absent() -> None:
    gb, _ = builder()
    add(gb, meta("owner", "u-owner"))
    add(gb, meta("a", "u-a", "ns", oref("owner", "u-owner")))
    add(gb, meta("b", "u-b", "ns", oref("owner", "u-owner")))
    delete(gb, meta("owner", "u-owner"))
    assert gb.uid_to_node.read("u-owner") is None
    assert {n.identity.name for n in await drain(gb.attempt_to_delete)} == {"a", "b"}
    assert gb.absent_owner_cache.has(ObjectReference("v1", "ConfigMap", "owner", "u-owner",
                                                     "ns"))


async def test_delete_of_dependent_unlinks_it() -> None:
    gb, _ = builder()
    add(gb, meta("owner", "u-owner"))
    add(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner")))
    delete(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner")))
    assert gb.uid_to_node.read("u-dep") is None
    assert node(gb, "u-owner").dependents_length() == 0


async def test_owner_change_moves_the_dependent() -> None:
    gb, _ = builder()
    add(gb, meta("one", "u-1"))
    add(gb, meta("two", "u-2"))
    old = meta("dep", "u-dep", "ns", oref("one", "u-1"))
    add(gb, old)
    new = meta("dep", "u-dep", "ns", oref("two", "u-2"))
    update(gb, old, new)
    assert node(gb, "u-1").dependents_length() == 0
    assert node(gb, "u-2").get_dependents() == [node(gb, "u-dep")]
    assert node(gb, "u-dep").owners == [oref("two", "u-2")]


async def test_dependent_with_several_owners() -> None:
    gb, _ = builder()
    add(gb, meta("one", "u-1"))
    add(gb, meta("two", "u-2"))
    add(gb, meta("dep", "u-dep", "ns", oref("one", "u-1"), oref("two", "u-2")))
    dep = node(gb, "u-dep")
    assert node(gb, "u-1").get_dependents() == [dep]
    assert node(gb, "u-2").get_dependents() == [dep]
    delete(gb, meta("one", "u-1"))
    # Still owned by "two": the worker decides (it will drop the dangling reference).
    assert await drain(gb.attempt_to_delete) == [dep]
    assert node(gb, "u-2").get_dependents() == [dep]


async def test_unblocking_a_reference_queues_the_owner() -> None:
    gb, _ = builder()
    add(gb, meta("owner", "u-owner"))
    old = meta("dep", "u-dep", "ns", oref("owner", "u-owner", block=True))
    add(gb, old)
    assert node(gb, "u-owner").blocking_dependents() == [node(gb, "u-dep")]
    new = meta("dep", "u-dep", "ns", oref("owner", "u-owner", block=False))
    update(gb, old, new)
    assert await drain(gb.attempt_to_delete) == [node(gb, "u-owner")]
    assert node(gb, "u-owner").blocking_dependents() == []


async def test_foreground_deletion_marks_and_queues_owner_and_dependents() -> None:
    gb, _ = builder()
    live = meta("owner", "u-owner")
    add(gb, live)
    add(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner", block=True)))
    deleting = meta("owner", "u-owner", finalizers=("foregroundDeletion",), deleting=True)
    update(gb, live, deleting)
    owner = node(gb, "u-owner")
    assert owner.is_deleting_dependents() and owner.is_being_deleted()
    assert set(await drain(gb.attempt_to_delete)) == {owner, node(gb, "u-dep")}
    # The dependent's deletion sends the waiting owner back to attemptToDelete.
    delete(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner", block=True)))
    assert await drain(gb.attempt_to_delete) == [owner]


async def test_orphan_finalizer_queues_attempt_to_orphan_once() -> None:
    gb, _ = builder()
    live = meta("owner", "u-owner")
    add(gb, live)
    orphaning = meta("owner", "u-owner", finalizers=("orphan",), deleting=True)
    update(gb, live, orphaning)
    assert await drain(gb.attempt_to_orphan) == [node(gb, "u-owner")]
    # A later update with the same state is no new transition.
    update(gb, orphaning, orphaning)
    assert await drain(gb.attempt_to_orphan) == []


async def test_add_already_deleting_with_foreground_finalizer() -> None:
    gb, _ = builder()
    add(gb, meta("owner", "u-owner", finalizers=("foregroundDeletion",), deleting=True))
    owner = node(gb, "u-owner")
    assert owner.is_deleting_dependents()
    assert await drain(gb.attempt_to_delete) == [owner]


async def test_owner_in_another_namespace_is_reported() -> None:
    gb, rec = builder()
    add(gb, meta("owner", "u-owner", "other"))
    add(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner")))
    assert [n.identity.name for n in await drain(gb.attempt_to_delete)] == ["dep"]
    assert len(rec.events) == 1
    obj, type_, reason, message = rec.events[0]
    assert (type_, reason) == ("Warning", "OwnerRefInvalidNamespace")
    assert obj["metadata"]["uid"] == "u-dep"
    assert message == ('ownerRef [v1/ConfigMap, namespace: ns, name: owner, uid: u-owner] '
                       'does not exist in namespace "ns"')


async def test_virtual_owner_observed_in_another_namespace_is_reported() -> None:
    gb, rec = builder()
    add(gb, meta("dep", "u-dep", "ns", oref("owner", "u-owner")))
    await drain(gb.attempt_to_delete)
    add(gb, meta("owner", "u-owner", "other"))
    assert node(gb, "u-owner").identity.namespace == "other"
    assert [n.identity.name for n in await drain(gb.attempt_to_delete)] == ["dep"]
    assert [e[2] for e in rec.events] == ["OwnerRefInvalidNamespace"]


async def test_cluster_scoped_owner_may_own_namespaced_dependents() -> None:
    gb, rec = builder()
    add(gb, meta("node-1", "u-node", ""), kind="Node")
    add(gb, meta("dep", "u-dep", "ns", oref("node-1", "u-node", kind="Node")))
    assert await drain(gb.attempt_to_delete) == []
    assert rec.events == []


async def test_mismatched_coordinates_queue_the_dependent() -> None:
    gb, _ = builder()
    add(gb, meta("owner", "u-owner"))
    add(gb, meta("dep", "u-dep", "ns", oref("other-name", "u-owner")))
    assert [n.identity.name for n in await drain(gb.attempt_to_delete)] == ["dep"]


async def test_virtual_delete_with_disagreeing_dependents_tries_the_next_identity() -> None:
    gb, _ = builder()
    add(gb, meta("a", "u-a", "ns", oref("owner", "u-x")))
    add(gb, meta("b", "u-b", "ns", oref("owner", "u-x", kind="Secret")))
    virtual = node(gb, "u-x")
    await drain(gb.attempt_to_delete)
    gb.process_event(GraphEvent(EventType.DELETE, ObjectMeta("u-x", "owner", "ns"),
                                virtual.identity.api_version, virtual.identity.kind,
                                virtual=True))
    replacement = node(gb, "u-x")
    assert replacement is not virtual and replacement.virtual
    assert {virtual.identity.kind, replacement.identity.kind} == {"ConfigMap", "Secret"}


def test_references_diffs() -> None:
    a, b, c = oref("a", "1"), oref("b", "2"), oref("c", "3")
    b2 = oref("b", "2", block=True)
    added, removed, changed = references_diffs([a, b], [b2, c])
    assert added == [c]
    assert removed == [a]
    assert changed == [(b, b2)]
    assert references_diffs([a], [a]) == ([], [], [])


def test_partition_and_alternates() -> None:
    owner = ObjectReference("v1", "ConfigMap", "owner", "u", "ns")
    good = Node(ObjectReference("v1", "ConfigMap", "g", "ug", "ns"), owners=[oref("owner", "u")])
    bad = Node(ObjectReference("v1", "ConfigMap", "b", "ub", "ns"),
               owners=[oref("owner", "u", kind="Secret")])
    elsewhere = Node(ObjectReference("v1", "ConfigMap", "e", "ue", "other"),
                     owners=[oref("owner", "u")])
    matching, nonmatching = partition_dependents([good, bad, elsewhere], owner)
    assert matching == [good]
    assert nonmatching == [bad, elsewhere]
    alt = get_alternate_owner_identity([good, bad, elsewhere], owner)
    # ("ConfigMap", "v1", "other") sorts after the absent identity, before "Secret".
    assert alt == ObjectReference("v1", "ConfigMap", "owner", "u", "other")
    assert get_alternate_owner_identity([good], owner) is None
    assert reference_less_than(owner, ObjectReference("v1", "Secret", "a", "u", "a"))


def test_reference_cache_is_bounded_lru() -> None:
    cache = ReferenceCache(2)
    refs = [ObjectReference("v1", "ConfigMap", f"n{i}", f"u{i}", "ns") for i in range(3)]
    cache.add(refs[0])
    cache.add(refs[1])
    assert cache.has(refs[0])  # refreshed: refs[1] is now the oldest
    cache.add(refs[2])
    assert not cache.has(refs[1])
    assert cache.has(refs[0]) and cache.has(refs[2])
    assert len(cache) == 2


@pytest.mark.parametrize("finalizers, queue", [(("orphan",), "orphan"),
                                              (("foregroundDeletion",), "delete")])
async def test_creation_and_deletion_folded_into_one_event(finalizers: tuple[str, ...],
                                                     queue: str) -> None:
    gb, _ = builder()
    gb.process_event(GraphEvent(EventType.UPDATE,
                                meta("o", "u-o", finalizers=finalizers, deleting=True),
                                "v1", "ConfigMap", old_obj=None))
    q = gb.attempt_to_orphan if queue == "orphan" else gb.attempt_to_delete
    assert await drain(q) == [node(gb, "u-o")]
