"""A first watch-list streamed into the DeltaFIFO while it arrives (issue 19's startup sync).

The Reflector hands the informer's DeltaFIFO each received chunk's new ADDED
objects of a first watch-list (begin_initial_stream / stream_initial) and the
rest at the end bookmark (end_initial_stream), instead of everything at the
bookmark. Covered: what is queued before the bookmark, has_synced and
is_in_initial_list, a DELETED or MODIFIED of a streamed object in the stream,
a stream that breaks part way followed by a LIST without a streamed object,
the FIFO's refusals; and, as a property, that popping everything the streamed
path queued leaves the consumer's cache as one replace of the collected list
would, with the same objects in the initial list.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykcm.cache.delta_fifo import DELETED, DeltaFIFO, Deltas
from tests.unit.test_reflector import HANG, FakeLW, bookmark, make, obj, page


class Known:
    """The consumer side: a known-objects store fed by popping the FIFO."""

    def __init__(self) -> None:
        self.items: dict[str, Any] = {}
        self.popped: list[tuple[str, str, bool]] = []  # (key, last delta type, initial)

    def list_keys(self) -> list[str]:
        return list(self.items)

    def get_by_key(self, key: str) -> Any:
        return self.items.get(key)

    def process(self, key: str, deltas: Deltas, initial: bool) -> None:
        for d in deltas:
            if d.type == DELETED:
                self.items.pop(key, None)
            else:
                self.items[key] = d.object
        self.popped.append((key, deltas[-1].type, initial))

    def drain(self, fifo: DeltaFIFO) -> None:
        fifo.pop_ready_many(self.process, 1 << 30, lambda e: (_ for _ in ()).throw(e))


def fifo_and_known() -> tuple[DeltaFIFO, Known]:
    known = Known()
    return DeltaFIFO(known_objects=known), known


async def until(cond: Any, timeout: float = 3.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.001)


async def test_streamed_objects_are_queued_before_the_bookmark_and_sync_after_it() -> None:
    fifo, known = fifo_and_known()
    lw = FakeLW()
    lw.watches = [[[("ADDED", obj("a", 5)), ("ADDED", obj("b", 6))],
                   ("ADDED", obj("c", 7)), HANG]]
    r, _, _, _ = make(lw, fifo, use_watch_list=True)
    task = asyncio.create_task(r.run())
    try:
        await until(lambda: len(fifo) == 3)
        assert not fifo.has_synced()
        known.drain(fifo)  # the informer takes them while the list goes on
        assert [k for k, _, initial in known.popped if initial] == ["ns/a", "ns/b", "ns/c"]
        assert not fifo.has_synced() and r.last_sync_resource_version() == ""
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_end_bookmark_lists_streamed_and_collected_objects() -> None:
    fifo, known = fifo_and_known()
    lw = FakeLW()
    lw.watches = [[("ADDED", obj("a", 5)), ("ADDED", obj("b", 6)),
                   # a later state of a streamed object, and a streamed object deleted
                   [("MODIFIED", obj("a", 8)), ("DELETED", obj("b", 9)),
                    ("ADDED", obj("c", 10)), bookmark(10, end=True)], HANG]]
    r, _, _, _ = make(lw, fifo, use_watch_list=True)
    task = asyncio.create_task(r.run())
    try:
        await until(lambda: r.last_sync_resource_version() == "10")
        assert not fifo.has_synced()
        known.drain(fifo)
        assert fifo.has_synced()
        assert {k: v["metadata"]["resourceVersion"] for k, v in known.items.items()} == {
            "ns/a": "8", "ns/c": "10"}
        assert all(initial for _, _, initial in known.popped)
        assert ("ns/b", DELETED, True) in known.popped
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_broken_stream_then_a_list_without_a_streamed_object_deletes_it() -> None:
    fifo, known = fifo_and_known()
    lw = FakeLW()
    lw.lists = [page(20, "b")]
    lw.watches = [[("ADDED", obj("a", 3)), aiohttp.ClientPayloadError("cut")], HANG]
    r, _, _, _ = make(lw, fifo, use_watch_list=True)
    task = asyncio.create_task(r.run())
    try:
        await until(lambda: r.last_sync_resource_version() == "20")
        known.drain(fifo)
        assert fifo.has_synced()
        assert list(known.items) == ["ns/b"]
        deleted = [d for d in known.popped if d[0] == "ns/a"]
        assert deleted[-1][1] == DELETED
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_the_fifo_streams_only_a_first_list() -> None:
    fifo, _ = fifo_and_known()
    with pytest.raises(RuntimeError):
        fifo.stream_initial([obj("a", 1)])  # no stream begun
    fifo.replace([obj("a", 1)], "1")
    assert not fifo.can_stream_initial()
    with pytest.raises(RuntimeError):
        fifo.begin_initial_stream()
    other, _ = fifo_and_known()
    other.add(obj("a", 1))
    assert not other.can_stream_initial()


def test_a_replace_abandons_a_stream_going_on() -> None:
    fifo, known = fifo_and_known()
    fifo.begin_initial_stream()
    fifo.stream_initial([obj("a", 1), obj("b", 1)])
    known.drain(fifo)
    fifo.replace([obj("b", 2)], "2")  # the LIST after a failed stream: a not listed
    known.drain(fifo)
    assert fifo.has_synced() and list(known.items) == ["ns/b"]
    assert [t for k, t, _ in known.popped if k == "ns/a"][-1] == DELETED


_names = st.sampled_from(["a", "b", "c", "d"])
_events = st.lists(st.tuples(st.sampled_from(["ADDED", "ADDED", "MODIFIED", "DELETED"]),
                             _names), max_size=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_events, st.lists(st.integers(0, 12), max_size=4), st.data())
def test_streaming_leaves_the_cache_of_one_replace(events: list[tuple[str, str]],
                                                  cuts: list[int], data: st.DataObject
                                                  ) -> None:
    script: list[tuple[str, dict[str, Any]]] = [
        (t, obj(n, i + 1)) for i, (t, n) in enumerate(events)]
    # What client-go's temporary store collects: the last state of each key.
    collected: dict[str, Any] = {}
    for t, o in script:
        key = f"ns/{o['metadata']['name']}"
        if t == "DELETED":
            collected.pop(key, None)
        else:
            collected[key] = o
    end = len(script) + 1
    script.append(bookmark(end, end=True))
    bounds = sorted({0, len(script), *(min(c, len(script)) for c in cuts)})
    chunks: list[Any] = [script[a:b] for a, b in itertools.pairwise(bounds)
                         if b > a]
    drain_after = data.draw(st.lists(st.booleans(), min_size=len(chunks),
                                     max_size=len(chunks)))

    async def scenario() -> None:
        fifo, known = fifo_and_known()
        lw = FakeLW()
        lw.watches = [[*chunks, HANG]]
        r, _, _, _ = make(lw, fifo, use_watch_list=True)
        task = asyncio.create_task(r.run())
        try:
            seen = 0
            while r.last_sync_resource_version() != str(end):
                await asyncio.sleep(0)
                if len(fifo) > seen and drain_after[min(seen, len(chunks) - 1)]:
                    assert not fifo.has_synced()
                    known.drain(fifo)
                seen = len(fifo)
            known.drain(fifo)
            assert fifo.has_synced()
            assert known.items == collected
            # everything popped was in the initial list
            assert all(initial for _, _, initial in known.popped)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
