"""pykcm.cache.DeltaFIFO (client-go tools/cache delta_fifo.go).

The tricky mechanisms first: Deleted dedup, Replace tombstones with and
without known objects, has_synced counting, fairness of the per-key queue,
resync; then pop (sync and async process, requeue, close), the transformer
and lookups; last, a stateful Hypothesis model.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from pykcm.cache import (
    ADDED,
    DELETED,
    REPLACED,
    SYNC,
    UPDATED,
    DeletedFinalStateUnknown,
    Delta,
    DeltaFIFO,
    Deltas,
    DeltaType,
    FIFOClosedError,
    Indexer,
    KeyFuncError,
    KeyListerGetter,
    NoMetaError,
    RequeueError,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    new_indexer,
)


def obj(name: str, rv: int = 1, ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv)}}


def known_with(*objs: dict[str, Any]) -> Indexer:
    idx = new_indexer(deletion_handling_meta_namespace_key)
    for o in objs:
        idx.add(o)
    return idx


def types(deltas: Deltas | None) -> list[DeltaType]:
    assert deltas is not None
    return [d.type for d in deltas]


def noop(deltas: Deltas, is_in_initial_list: bool) -> None:
    pass


async def pop_all(fifo: DeltaFIFO) -> list[tuple[str, Deltas, bool]]:
    """Pop until empty; (key, deltas, is_in_initial_list) in pop order."""
    out: list[tuple[str, Deltas, bool]] = []

    def record(deltas: Deltas, initial: bool) -> None:
        out.append((fifo.key_of(deltas), deltas, initial))

    while len(fifo):
        await fifo.pop(record)
    return out


# --- dedup -------------------------------------------------------------------


def test_two_deletes_keep_the_real_object_over_a_tombstone() -> None:
    a = obj("a")
    fifo = DeltaFIFO(known_objects=known_with(a))
    fifo.delete(a)
    fifo.delete(DeletedFinalStateUnknown("ns/a", a))
    assert fifo.get_by_key("ns/a") == [Delta(DELETED, a)]

    fifo2 = DeltaFIFO(known_objects=known_with(a))
    fifo2.delete(DeletedFinalStateUnknown("ns/a", None))
    fifo2.delete(a)  # the newer one has more information
    assert fifo2.get_by_key("ns/a") == [Delta(DELETED, a)]


def test_two_real_deletes_keep_the_older_and_two_tombstones_the_newer() -> None:
    a1, a2 = obj("a", 1), obj("a", 2)
    fifo = DeltaFIFO(known_objects=known_with(a1))
    fifo.delete(a1)
    fifo.delete(a2)
    deltas = fifo.get_by_key("ns/a")
    assert deltas is not None and len(deltas) == 1 and deltas[0].object is a1

    t1 = DeletedFinalStateUnknown("ns/a", a1)
    t2 = DeletedFinalStateUnknown("ns/a", a2)
    fifo2 = DeltaFIFO(known_objects=known_with(a1))
    fifo2.delete(t1)
    fifo2.delete(t2)
    deltas = fifo2.get_by_key("ns/a")
    assert deltas is not None and len(deltas) == 1 and deltas[0].object is t2


def test_only_consecutive_deletes_are_deduplicated() -> None:
    a = obj("a")
    fifo = DeltaFIFO()
    fifo.add(a)
    fifo.update(a)
    fifo.update(a)  # identical updates are not duplicates
    fifo.delete(a)
    fifo.add(a)
    fifo.delete(a)
    fifo.delete(a)
    assert types(fifo.get_by_key("ns/a")) == [ADDED, UPDATED, UPDATED, DELETED, ADDED, DELETED]


# --- delete of unknown objects -----------------------------------------------


def test_delete_of_an_unknown_object_is_ignored() -> None:
    fifo = DeltaFIFO()
    fifo.delete(obj("a"))
    assert fifo.list_keys() == []
    fifo2 = DeltaFIFO(known_objects=known_with(obj("b")))
    fifo2.delete(obj("a"))
    assert fifo2.list_keys() == []
    # Known, not queued: queued.
    fifo2.delete(obj("b"))
    assert types(fifo2.get_by_key("ns/b")) == [DELETED]
    # Queued, not known: queued.
    fifo2.add(obj("c"))
    fifo2.delete(obj("c"))
    assert types(fifo2.get_by_key("ns/c")) == [ADDED, DELETED]


def test_ignored_delete_still_counts_as_populated() -> None:
    fifo = DeltaFIFO()
    assert not fifo.has_synced()
    fifo.delete(obj("a"))
    assert fifo.has_synced()  # client-go: populated by Delete too


# --- replace and tombstones --------------------------------------------------


def test_replace_queues_replaced_and_tombstones_for_known_keys_missing() -> None:
    a, b, c = obj("a"), obj("b"), obj("c")
    fifo = DeltaFIFO(known_objects=known_with(a, b, c))
    a2 = obj("a", 2)
    fifo.replace([a2], "10")
    assert fifo.list_keys() == ["ns/a", "ns/b", "ns/c"]
    assert fifo.get_by_key("ns/a") == [Delta(REPLACED, a2)]
    # The tombstone carries the last known state.
    assert fifo.get_by_key("ns/b") == [Delta(DELETED, DeletedFinalStateUnknown("ns/b", b))]
    tomb = fifo.get_by_key("ns/c")
    assert tomb is not None and tomb[0].object.obj is c


def test_replace_tombstones_for_queued_keys_without_known_objects() -> None:
    x, y = obj("x"), obj("y")
    fifo = DeltaFIFO()
    fifo.add(x)
    fifo.update(y)
    fifo.replace([y], "2")
    assert fifo.get_by_key("ns/x") == [
        Delta(ADDED, x),
        Delta(DELETED, DeletedFinalStateUnknown("ns/x", x)),
    ]
    assert types(fifo.get_by_key("ns/y")) == [UPDATED, REPLACED]


def test_replace_tombstone_for_queued_key_uses_the_queued_state_and_unwraps() -> None:
    old, new = obj("a", 1), obj("a", 2)
    fifo = DeltaFIFO(known_objects=known_with(old))
    fifo.update(new)
    fifo.replace([], "3")
    # Queued and known: one tombstone, with the newest (queued) state.
    assert fifo.get_by_key("ns/a") == [
        Delta(UPDATED, new),
        Delta(DELETED, DeletedFinalStateUnknown("ns/a", new)),
    ]
    # Replaced again: the tombstone is not nested in a tombstone, and the two
    # consecutive tombstones collapse into one.
    fifo.replace([], "4")
    deltas = fifo.get_by_key("ns/a")
    assert deltas == [Delta(UPDATED, new), Delta(DELETED, DeletedFinalStateUnknown("ns/a", new))]


def test_replace_tombstone_after_a_real_delete_is_deduplicated() -> None:
    a = obj("a")
    fifo = DeltaFIFO(known_objects=known_with(a))
    fifo.delete(a)
    fifo.replace([], "2")
    assert fifo.get_by_key("ns/a") == [Delta(DELETED, a)]


def test_replace_with_vanished_known_object_queues_a_tombstone_without_object() -> None:
    class Racy:
        """Known objects whose list and get disagree (changed in between)."""

        def list_keys(self) -> list[str]:
            return ["ns/gone"]

        def get_by_key(self, key: str) -> Any | None:
            return None

    racy = Racy()
    assert isinstance(racy, KeyListerGetter)
    fifo = DeltaFIFO(known_objects=racy)
    fifo.replace([], "1")
    assert fifo.get_by_key("ns/gone") == [Delta(DELETED, DeletedFinalStateUnknown("ns/gone", None))]


def test_replace_emits_sync_when_replaced_type_is_off() -> None:
    fifo = DeltaFIFO(emit_delta_type_replaced=False)
    fifo.replace([obj("a")], "1")
    assert types(fifo.get_by_key("ns/a")) == [SYNC]


def test_replace_key_error_queues_nothing() -> None:
    fifo = DeltaFIFO()
    with pytest.raises(NoMetaError):
        fifo.replace([obj("a"), {"kind": "Pod"}], "1")
    assert fifo.list_keys() == []
    assert not fifo.has_synced()


# --- has_synced ----------------------------------------------------------------


async def test_has_synced_after_the_initial_list_is_popped() -> None:
    known = known_with(obj("gone"))
    fifo = DeltaFIFO(known_objects=known)
    assert not fifo.has_synced()
    fifo.replace([obj("a"), obj("b"), obj("c")], "1")
    # Three listed + one tombstone = the initial population.
    assert len(fifo) == 4
    seen = []
    for _ in range(4):
        assert not fifo.has_synced()
        await fifo.pop(lambda d, initial: seen.append(initial))
    assert seen == [True, True, True, True]
    assert fifo.has_synced()
    # Later items are not part of the initial list, and a later replace does
    # not reset the count.
    fifo.add(obj("d"))
    fifo.replace([obj("e")], "2")
    assert fifo.has_synced()
    await fifo.pop(lambda d, initial: seen.append(initial))
    assert seen[-1] is False


async def test_has_synced_counts_keys_not_deltas() -> None:
    fifo = DeltaFIFO()
    fifo.replace([obj("a"), obj("a", 2), obj("b")], "1")  # "a" listed twice
    assert types(fifo.get_by_key("ns/a")) == [REPLACED, REPLACED]
    # Updates to a queued key during the initial list add no entry.
    fifo.update(obj("b", 3))
    await fifo.pop(noop)
    assert not fifo.has_synced()
    await fifo.pop(noop)
    assert fifo.has_synced()


def test_empty_initial_replace_is_synced_at_once() -> None:
    fifo = DeltaFIFO()
    fifo.replace([], "1")
    assert fifo.has_synced()


def test_add_before_replace_means_synced_and_no_initial_count() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    assert fifo.has_synced()
    fifo.replace([obj("a"), obj("b")], "1")
    assert fifo.has_synced()


async def test_requeued_initial_item_is_not_counted_twice() -> None:
    fifo = DeltaFIFO()
    fifo.replace([obj("a"), obj("b")], "1")

    def fail_a(deltas: Deltas, initial: bool) -> None:
        if fifo.key_of(deltas) == "ns/a":
            raise RequeueError()

    await fifo.pop(fail_a)  # a, requeued behind b
    assert fifo.list_keys() == ["ns/b", "ns/a"]
    await fifo.pop(fail_a)  # b
    # As client-go: the count is of pops, so the retry of a is not waited for.
    assert fifo.has_synced()


# --- queue order and fairness ----------------------------------------------


async def test_a_noisy_key_does_not_delay_the_others() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("noisy"))
    fifo.add(obj("b"))
    for rv in range(2, 1002):
        fifo.update(obj("noisy", rv))
    fifo.add(obj("c"))
    assert fifo.list_keys() == ["ns/noisy", "ns/b", "ns/c"]
    popped = await pop_all(fifo)
    assert [k for k, _, _ in popped] == ["ns/noisy", "ns/b", "ns/c"]
    noisy = popped[0][1]
    assert len(noisy) == 1001 and noisy[0].type is ADDED
    assert [int(d.object["metadata"]["resourceVersion"]) for d in noisy] == list(range(1, 1002))


async def test_a_popped_key_queued_again_goes_to_the_back() -> None:
    fifo = DeltaFIFO()
    for n in "abc":
        fifo.add(obj(n))
    await fifo.pop(noop)
    fifo.update(obj("a", 2))
    assert fifo.list_keys() == ["ns/b", "ns/c", "ns/a"]


# --- resync ------------------------------------------------------------------


def test_resync_queues_sync_only_for_known_keys_with_nothing_queued() -> None:
    a, b, c = obj("a"), obj("b"), obj("c")
    fifo = DeltaFIFO(known_objects=known_with(a, b, c))
    b2 = obj("b", 2)
    fifo.update(b2)
    fifo.resync()
    assert fifo.list_keys() == ["ns/b", "ns/a", "ns/c"]
    assert fifo.get_by_key("ns/b") == [Delta(UPDATED, b2)]  # not overtaken by stale b
    assert fifo.get_by_key("ns/a") == [Delta(SYNC, a)]
    fifo.resync()  # everything is queued now: no change
    assert types(fifo.get_by_key("ns/a")) == [SYNC]


def test_resync_without_known_objects_does_nothing() -> None:
    fifo = DeltaFIFO()
    fifo.resync()
    assert fifo.list_keys() == []
    assert not fifo.has_synced()  # resync does not populate


# --- pop -----------------------------------------------------------------------


async def test_pop_with_a_sync_process() -> None:
    fifo = DeltaFIFO()
    a = obj("a")
    fifo.add(a)
    got: list[tuple[Deltas, bool]] = []
    result = await fifo.pop(lambda d, initial: got.append((d, initial)))
    assert got == [([Delta(ADDED, a)], False)]
    assert result is got[0][0]
    assert len(fifo) == 0 and fifo.get_by_key("ns/a") is None


async def test_pop_awaits_a_coroutine_process() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    done: list[str] = []

    async def process(deltas: Deltas, initial: bool) -> None:
        await asyncio.sleep(0)
        done.append(fifo.key_of(deltas))

    await fifo.pop(process)
    assert done == ["ns/a"]


async def test_pop_waits_for_an_item() -> None:
    fifo = DeltaFIFO()
    task = asyncio.create_task(fifo.pop(noop))
    await asyncio.sleep(0.01)
    assert not task.done()
    fifo.add(obj("a"))
    deltas = await asyncio.wait_for(task, 1)
    assert types(deltas) == [ADDED]


async def test_two_waiting_pops_each_get_one_item() -> None:
    fifo = DeltaFIFO()
    t1 = asyncio.create_task(fifo.pop(noop))
    t2 = asyncio.create_task(fifo.pop(noop))
    await asyncio.sleep(0)
    fifo.add(obj("a"))
    fifo.add(obj("b"))
    r1, r2 = await asyncio.wait_for(asyncio.gather(t1, t2), 1)
    assert {fifo.key_of(r1), fifo.key_of(r2)} == {"ns/a", "ns/b"}


async def test_requeue_puts_the_item_back_at_the_end() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    fifo.add(obj("b"))

    def requeue(deltas: Deltas, initial: bool) -> None:
        raise RequeueError()

    deltas = await fifo.pop(requeue)
    assert types(deltas) == [ADDED]
    assert fifo.list_keys() == ["ns/b", "ns/a"]
    assert types(fifo.get_by_key("ns/a")) == [ADDED]


async def test_requeue_with_an_error_requeues_and_raises_it() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))

    async def requeue(deltas: Deltas, initial: bool) -> None:
        raise RequeueError(ValueError("try later"))

    with pytest.raises(ValueError, match="try later"):
        await fifo.pop(requeue)
    assert fifo.list_keys() == ["ns/a"]


async def test_requeue_does_not_overwrite_newer_deltas() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))

    async def process(deltas: Deltas, initial: bool) -> None:
        await asyncio.sleep(0)
        fifo.update(obj("a", 2))  # arrives while the old deltas are processed
        raise RequeueError()

    await fifo.pop(process)
    assert types(fifo.get_by_key("ns/a")) == [UPDATED]


async def test_other_process_errors_propagate_and_drop_the_item() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))

    def boom(deltas: Deltas, initial: bool) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await fifo.pop(boom)
    assert fifo.list_keys() == []


async def test_add_if_not_present() -> None:
    fifo = DeltaFIFO()
    a = obj("a")
    fifo.add(a)
    deltas = await fifo.pop(noop)
    fifo.add_if_not_present(deltas)
    assert fifo.get_by_key("ns/a") == [Delta(ADDED, a)]
    fifo.add_if_not_present([Delta(UPDATED, obj("a", 5))])  # already queued: ignored
    assert fifo.get_by_key("ns/a") == [Delta(ADDED, a)]


# --- close ---------------------------------------------------------------------


async def test_pop_on_a_closed_empty_queue_raises() -> None:
    fifo = DeltaFIFO()
    assert not fifo.is_closed()
    fifo.close()
    assert fifo.is_closed()
    with pytest.raises(FIFOClosedError):
        await fifo.pop(noop)


async def test_close_wakes_a_waiting_pop() -> None:
    fifo = DeltaFIFO()
    task = asyncio.create_task(fifo.pop(noop))
    await asyncio.sleep(0)
    fifo.close()
    with pytest.raises(FIFOClosedError):
        await asyncio.wait_for(task, 1)


async def test_closed_queue_drains_before_raising() -> None:
    fifo = DeltaFIFO()
    fifo.add(obj("a"))
    fifo.close()
    assert types(await fifo.pop(noop)) == [ADDED]
    with pytest.raises(FIFOClosedError):
        await fifo.pop(noop)


# --- transformer ---------------------------------------------------------------


def strip(o: Any) -> Any:
    if isinstance(o, dict):
        return {"metadata": {k: v for k, v in o["metadata"].items() if k != "managedFields"}}
    return o


def fat(name: str, rv: int = 1) -> dict[str, Any]:
    o = obj(name, rv)
    o["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    return o


def test_transformer_applies_to_incoming_objects() -> None:
    fifo = DeltaFIFO(known_objects=known_with(obj("k")), transformer=strip)
    fifo.add(fat("a"))
    fifo.update(fat("a", 2))
    fifo.delete(fat("a", 3))
    fifo.replace([fat("b")], "1")
    for key in ("ns/a", "ns/b"):
        deltas = fifo.get_by_key(key)
        assert deltas
        for d in deltas:
            if not isinstance(d.object, DeletedFinalStateUnknown):
                assert "managedFields" not in d.object["metadata"]


def test_transformer_is_not_applied_to_sync_nor_tombstones() -> None:
    seen: list[Any] = []

    def spy(o: Any) -> Any:
        seen.append(o)
        return o

    known_obj = obj("k")
    fifo = DeltaFIFO(known_objects=known_with(known_obj), transformer=spy)
    fifo.resync()
    fifo.delete(DeletedFinalStateUnknown("ns/k", known_obj))
    assert seen == []
    fifo.replace([], "1")  # tombstone for the queued/known key
    assert seen == []
    assert fifo.get_by_key("ns/k") is not None


def test_transformer_error_queues_nothing() -> None:
    def bad(o: Any) -> Any:
        if o["metadata"]["name"] == "bad":
            raise ValueError("no")
        return o

    fifo = DeltaFIFO(transformer=bad)
    with pytest.raises(ValueError):
        fifo.add(obj("bad"))
    with pytest.raises(ValueError):
        fifo.replace([obj("a"), obj("bad")], "1")
    assert fifo.list_keys() == []


# --- lookups -----------------------------------------------------------------


def test_get_returns_a_copy_and_list_the_newest_objects() -> None:
    fifo = DeltaFIFO()
    a1, a2, b = obj("a", 1), obj("a", 2), obj("b")
    fifo.add(a1)
    fifo.update(a2)
    fifo.add(b)
    got = fifo.get(a1)
    assert got == [Delta(ADDED, a1), Delta(UPDATED, a2)]
    assert got is not None
    got.clear()
    assert len(fifo.get_by_key("ns/a") or []) == 2
    assert fifo.get(obj("zzz")) is None
    assert {id(o) for o in fifo.list()} == {id(a2), id(b)}


def test_key_of() -> None:
    fifo = DeltaFIFO()
    assert fifo.key_of(obj("a")) == "ns/a"
    assert fifo.key_of(DeletedFinalStateUnknown("x/y", None)) == "x/y"
    assert fifo.key_of([Delta(ADDED, obj("a")), Delta(DELETED, obj("b"))]) == "ns/b"
    assert fifo.key_of([Delta(DELETED, DeletedFinalStateUnknown("x/y", None))]) == "x/y"
    with pytest.raises(KeyFuncError):
        fifo.key_of([])


def test_custom_key_function() -> None:
    fifo = DeltaFIFO(key_func=lambda o: o["metadata"]["name"].upper())
    fifo.add(obj("a"))
    assert fifo.list_keys() == ["A"]


# --- stateful model ----------------------------------------------------------


def _append(model: dict[str, list[tuple[DeltaType, Any]]], key: str, t: DeltaType, o: Any) -> None:
    """The naive model of queueActionLocked + dedupDeltas."""
    deltas = model.setdefault(key, [])  # dict order = first-insertion order
    deltas.append((t, o))
    if len(deltas) >= 2 and deltas[-1][0] is DELETED and deltas[-2][0] is DELETED:
        older, newer = deltas[-2], deltas[-1]
        keep = newer if isinstance(older[1], DeletedFinalStateUnknown) else older
        deltas[-2:] = [keep]


NAMES = st.sampled_from(["a", "b", "c", "d"])


class DeltaFIFOMachine(RuleBasedStateMachine):
    """DeltaFIFO + its known objects (updated by pop, as the informer does) vs a model."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.known = new_indexer(deletion_handling_meta_namespace_key)
        self.fifo = DeltaFIFO(known_objects=self.known)
        self.model: dict[str, list[tuple[DeltaType, Any]]] = {}
        self.known_model: dict[str, Any] = {}
        self.populated = False
        self.initial = 0
        self.rv = 0

    def _obj(self, name: str) -> dict[str, Any]:
        self.rv += 1
        return obj(name, self.rv)

    @initialize(names=st.lists(NAMES, max_size=3, unique=True))
    def known_before_start(self, names: list[str]) -> None:
        # An informer restarted over a filled indexer: the first replace then
        # has tombstones, which count in the initial population.
        for n in names:
            o = self._obj(n)
            self.known.add(o)
            self.known_model[f"ns/{n}"] = o

    @rule(name=NAMES)
    def add(self, name: str) -> None:
        o = self._obj(name)
        self.fifo.add(o)
        self.populated = True
        _append(self.model, f"ns/{name}", ADDED, o)

    @rule(name=NAMES)
    def update(self, name: str) -> None:
        o = self._obj(name)
        self.fifo.update(o)
        self.populated = True
        _append(self.model, f"ns/{name}", UPDATED, o)

    @rule(name=NAMES, tombstone=st.booleans())
    def delete(self, name: str, tombstone: bool) -> None:
        key = f"ns/{name}"
        o: Any = self._obj(name)
        if tombstone:
            o = DeletedFinalStateUnknown(key, o)
        self.fifo.delete(o)
        self.populated = True
        if key in self.model or key in self.known_model:
            _append(self.model, key, DELETED, o)

    @rule(names=st.lists(NAMES, max_size=5))
    def replace(self, names: list[str]) -> None:
        objs = [self._obj(n) for n in names]
        self.fifo.replace(objs, str(self.rv))
        listed = {meta_namespace_key(o) for o in objs}
        for o in objs:
            _append(self.model, meta_namespace_key(o), REPLACED, o)
        tombstones = []
        for key, deltas in self.model.items():
            if key not in listed:
                last = deltas[-1][1]
                if isinstance(last, DeletedFinalStateUnknown):
                    last = last.obj
                tombstones.append((key, last))
        # Tombstones of known keys come in the known store's own key order.
        for key in self.known.list_keys():
            if key not in listed and key not in self.model:
                tombstones.append((key, self.known_model[key]))
        for key, last in tombstones:
            _append(self.model, key, DELETED, DeletedFinalStateUnknown(key, last))
        if not self.populated:
            self.populated = True
            self.initial = len(listed) + len(tombstones)

    @rule()
    def resync(self) -> None:
        self.fifo.resync()
        for key in self.known.list_keys():
            if key not in self.model:
                _append(self.model, key, SYNC, self.known_model[key])

    @precondition(lambda self: bool(self.model))
    @rule()
    def pop(self) -> None:
        expected_key = next(iter(self.model))
        expected = self.model.pop(expected_key)
        expected_initial = not (self.populated and self.initial == 0)
        if self.initial:
            self.initial -= 1
        seen: list[tuple[Deltas, bool]] = []

        def process(deltas: Deltas, initial: bool) -> None:
            seen.append((deltas, initial))
            # What SharedIndexInformer.handle_deltas does to the indexer.
            for d in deltas:
                if d.type is DELETED:
                    self.known.delete(d.object)
                else:
                    self.known.update(d.object)

        self.loop.run_until_complete(self.fifo.pop(process))
        ((deltas, initial),) = seen
        assert self.fifo.key_of(deltas) == expected_key
        assert [(d.type, d.object) for d in deltas] == expected
        assert initial == expected_initial
        newest_type, newest_obj = expected[-1]
        if newest_type is DELETED:
            self.known_model.pop(expected_key, None)
        else:
            self.known_model[expected_key] = newest_obj

    @invariant()
    def queue_matches_model(self) -> None:
        # Queue order = first-insertion order; one entry per key.
        assert self.fifo.list_keys() == list(self.model)
        for key, expected in self.model.items():
            deltas = self.fifo.get_by_key(key)
            assert deltas  # never an empty entry
            assert [(d.type, d.object) for d in deltas] == expected
        assert self.fifo.has_synced() == (self.populated and self.initial == 0)
        assert sorted(self.known.list_keys()) == sorted(self.known_model)

    def teardown(self) -> None:
        # Popping everything yields each key's deltas in order, dedup applied.
        while self.model:
            self.pop()
        assert len(self.fifo) == 0
        self.fifo.close()
        with pytest.raises(FIFOClosedError):
            self.loop.run_until_complete(self.fifo.pop(noop))
        self.loop.close()


DeltaFIFOMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None
)
TestDeltaFIFOModel = DeltaFIFOMachine.TestCase
