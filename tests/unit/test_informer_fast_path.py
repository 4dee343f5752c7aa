"""The informer's fast paths give what its general path gives (Hypothesis).

Two fast paths of the watch → DeltaFIFO → Indexer → handlers path:

- a compact cached object (FrozenObject) carries its ``namespace/name`` key,
  computed when decoded, which ``meta_namespace_key`` and the namespace index
  return instead of reading the metadata: an informer fed FrozenObjects ends
  with the same store, the same namespace index and the same handler calls
  as one fed the same objects as dicts;
- ``DeltaFIFO.pop_ready`` and ``pop_ready_many`` (the informer drains bursts
  with it, handing each item's key along) pop exactly what ``pop`` pops, with the
  same ``is_in_initial_list`` and ``has_synced``.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.cache import NAMESPACE_INDEX, DeletedFinalStateUnknown, DeltaFIFO, SharedIndexInformer
from pykcm.cache.frozen_object import FrozenObject
from pykcm.cache.index import meta_namespace_index_func
from pykcm.cache.keys import meta_namespace_key

# Small alphabets, so that keys collide; "/" and "" included (the precomputed key
# is not used for them, and the general path decides).
names = st.sampled_from(["a", "b", "c", "", "x/y"])
namespaces = st.sampled_from(["ns", "other", "", None, "p/q"])
ops = st.lists(st.tuples(st.sampled_from(["add", "update", "delete", "replace"]),
                         st.lists(st.tuples(namespaces, names), min_size=1, max_size=4)),
               min_size=1, max_size=12)


def make(ns: str | None, name: str, rv: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(rv), "labels": {"app": name}}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"n": rv},
            "status": {}}


@given(ns=namespaces, name=names)
def test_precomputed_key_is_the_general_key(ns: str | None, name: str) -> None:
    d = make(ns, name, 1)
    f = FrozenObject.from_dict(d)
    assert meta_namespace_key(f) == meta_namespace_key(d)
    assert meta_namespace_index_func(f) == meta_namespace_index_func(d)
    assert meta_namespace_key(f.without_managed_fields()) == meta_namespace_key(d)


class _Reflector:
    def __init__(self, lw: Any, store: DeltaFIFO, **kw: Any) -> None:
        self.store = store

    async def run(self) -> None:
        await asyncio.Event().wait()

    def last_sync_resource_version(self) -> str:
        return ""

    def set_watch_error_handler(self, handler: Any) -> None:
        pass


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    @staticmethod
    def _id(o: Any) -> Any:
        if isinstance(o, DeletedFinalStateUnknown):
            return ("tombstone", o.key, None if o.obj is None else _plain(o.obj))
        return _plain(o)

    def on_add(self, o: Any, initial: bool) -> None:
        self.calls.append(("add", self._id(o), initial))

    def on_update(self, old: Any, new: Any) -> None:
        self.calls.append(("update", self._id(old), self._id(new)))

    def on_delete(self, o: Any) -> None:
        self.calls.append(("delete", self._id(o)))


def _plain(o: Any) -> Any:
    return o.thaw() if isinstance(o, FrozenObject) else o


async def _run(program: list[tuple[str, list[tuple[str | None, str]]]], frozen: bool
               ) -> tuple[dict[str, Any], dict[str, set[str]], list[tuple[Any, ...]]]:
    reflectors: list[_Reflector] = []

    def factory(lw: Any, store: DeltaFIFO, **kw: Any) -> _Reflector:
        reflectors.append(_Reflector(lw, store))
        return reflectors[-1]

    inf = SharedIndexInformer(cast(Any, object()), reflector_factory=factory)
    rec = _Recorder()
    inf.add_event_handler(rec)
    task = asyncio.get_running_loop().create_task(inf.run())
    while not reflectors:
        await asyncio.sleep(0)
    fifo = reflectors[0].store
    rv = 1

    def conv(d: dict[str, Any]) -> Any:
        return FrozenObject.from_dict(d) if frozen else d

    for op, objs in program:
        batch = []
        for ns, name in objs:
            rv += 1
            batch.append(conv(make(ns, name, rv)))
        if op == "replace":
            fifo.replace(batch, str(rv))
        for o in batch if op != "replace" else ():
            getattr(fifo, op)(o)
        for _ in range(50):  # let the informer and the handler drain
            await asyncio.sleep(0)
    while len(fifo):
        await asyncio.sleep(0)
    store = {k: _plain(inf.get_indexer().get_by_key(k)) for k in inf.get_store().list_keys()}
    index = {v: set(inf.get_indexer().index_keys(NAMESPACE_INDEX, v))
             for v in inf.get_indexer().list_index_func_values(NAMESPACE_INDEX)}
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return store, index, rec.calls


@settings(max_examples=25, deadline=None)
@given(program=ops)
def test_frozen_objects_give_the_same_store_index_and_handler_calls(
        program: list[tuple[str, list[tuple[str | None, str]]]]) -> None:
    plain = asyncio.run(_run(program, frozen=False))
    compact = asyncio.run(_run(program, frozen=True))
    assert compact == plain


@settings(max_examples=40, deadline=None)
@given(program=ops, drain_every=st.integers(min_value=1, max_value=4),
       limit=st.integers(min_value=1, max_value=5), frozen=st.booleans())
def test_pop_ready_pops_what_pop_pops(
        program: list[tuple[str, list[tuple[str | None, str]]]], drain_every: int,
        limit: int, frozen: bool) -> None:
    async def run(mode: str) -> list[Any]:
        fifo = DeltaFIFO(meta_namespace_key)
        seen: list[Any] = []

        def process(deltas: Any, initial: bool) -> None:
            seen.append(([(d.type, d.object.key if isinstance(d.object, DeletedFinalStateUnknown)
                           else meta_namespace_key(d.object)) for d in deltas], initial))

        def process_keyed(key: str, deltas: Any, initial: bool) -> None:
            # Every delta of a popped item has the key it is handed with.
            assert {fifo.key_of(d.object) for d in deltas} == {key}
            process(deltas, initial)

        def on_error(exc: BaseException) -> None:
            raise AssertionError(f"no error expected: {exc!r}")

        rv = 1
        for step, (op, objs) in enumerate(program):
            batch = []
            for ns, name in objs:
                rv += 1
                d = make(ns, name, rv)
                batch.append(FrozenObject.from_dict(d) if frozen else d)
            if op == "replace":
                fifo.replace(batch, str(rv))
            else:
                for o in batch:
                    getattr(fifo, op)(o)
            if step % drain_every == 0:
                while len(fifo):
                    if mode == "ready":
                        assert fifo.pop_ready(process) is not None
                        seen.append(fifo.has_synced())
                    elif mode == "many":
                        before = len(fifo)
                        n = fifo.pop_ready_many(process_keyed, limit, on_error)
                        assert n == min(limit, before)
                        # Each record, then has_synced (known after the batch only).
                        records = seen[-n:]
                        del seen[-n:]
                        for i, rec in enumerate(records):
                            seen.extend((rec, fifo.has_synced() if i == n - 1 else None))
                    else:
                        await fifo.pop(process)
                        seen.append(fifo.has_synced())
        if mode == "ready" and not len(fifo):
            assert fifo.pop_ready(process) is None
        if mode == "many" and not len(fifo):
            assert fifo.pop_ready_many(process_keyed, limit, on_error) == 0
        return seen

    by_pop = asyncio.run(run("pop"))
    assert asyncio.run(run("ready")) == by_pop
    many = asyncio.run(run("many"))
    # The same records in the same order; has_synced after each batch's last item is
    # what pop gave after that item.
    assert [x if x is not None else y for x, y in zip(many, by_pop, strict=True)] == by_pop
