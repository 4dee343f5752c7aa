"""Unit tests of pykcm.apiserver.endpoints.flow_control: queueing before rejection, FIFO hand-over,
the bounded queue, the wait limit and upstream's Retry-After tracker."""

from __future__ import annotations

import asyncio

import pytest

from pykcm.apiserver.endpoints.flow_control import ConcurrencyLevel, DroppedRequests, Rejected


async def _hold(level: ConcurrencyLevel, gate: asyncio.Event, out: list[str], name: str) -> None:
    async def call() -> None:
        out.append(f"start {name}")
        await gate.wait()
    await level.run(call)


def test_beyond_the_limit_requests_wait_then_run_in_order() -> None:
    async def main() -> list[str]:
        level = ConcurrencyLevel(1, queue_length=10, wait_limit=60)
        out: list[str] = []
        gates = [asyncio.Event() for _ in range(3)]
        tasks = [asyncio.create_task(_hold(level, g, out, str(i)))
                 for i, g in enumerate(gates)]
        await asyncio.sleep(0)
        assert out == ["start 0"] and level.waiting == 2 and level.executing == 1
        for g in gates:
            g.set()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        assert level.executing == 0 and level.waiting == 0
        return out
    assert asyncio.run(main()) == ["start 0", "start 1", "start 2"]


def test_a_full_queue_rejects_with_retry_after() -> None:
    async def main() -> None:
        level = ConcurrencyLevel(1, queue_length=1, wait_limit=60)
        gate = asyncio.Event()
        out: list[str] = []
        running = asyncio.create_task(_hold(level, gate, out, "a"))
        queued = asyncio.create_task(_hold(level, gate, out, "b"))
        await asyncio.sleep(0)
        with pytest.raises(Rejected) as exc:
            await level.run(lambda: asyncio.sleep(0))
        assert exc.value.retry_after == 1
        gate.set()
        await asyncio.gather(running, queued)
        assert out == ["start a", "start b"] and level.executing == 0
    asyncio.run(main())


def test_a_request_waiting_past_the_wait_limit_is_rejected_and_leaves_the_queue() -> None:
    async def main() -> None:
        level = ConcurrencyLevel(1, queue_length=5, wait_limit=0.01)
        gate = asyncio.Event()
        running = asyncio.create_task(_hold(level, gate, [], "a"))
        await asyncio.sleep(0)
        with pytest.raises(Rejected):
            await level.run(lambda: asyncio.sleep(0))
        assert level.waiting == 0
        gate.set()
        await running
        assert level.executing == 0
        assert await level.run(lambda: asyncio.sleep(0, "ran")) == "ran"
    asyncio.run(main())


def test_no_limit_never_queues() -> None:
    async def main() -> None:
        level = ConcurrencyLevel(0, queue_length=0)
        gate = asyncio.Event()
        tasks = [asyncio.create_task(_hold(level, gate, [], str(i))) for i in range(5)]
        await asyncio.sleep(0)
        assert level.waiting == 0
        gate.set()
        await asyncio.gather(*tasks)
    asyncio.run(main())


def test_retry_after_doubles_under_sustained_drops_and_decreases_after() -> None:
    now = [100.0]
    d = DroppedRequests(lambda: now[0])
    for _ in range(3):  # three drops in second 100
        d.record()
    assert d.retry_after == 1
    now[0] = 101.0
    d.record()  # second 100 closed with 3 >= 3*1 drops: doubled
    assert d.retry_after == 2
    now[0] = 102.0
    d.record()  # an increase needs retryAfter seconds since the last one
    assert d.retry_after == 2
    now[0] = 110.0
    d.record()  # nothing dropped in the last 2 s: linearly down
    assert d.retry_after == 1
    now[0] = 111.0
    d.record()
    assert d.retry_after == 1
