"""DelayingQueue and RateLimitingQueue: heap order, earliest wins, one timer, shutdown."""

from __future__ import annotations

import asyncio

from pykcm.workqueue import (
    DelayingQueue,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    RateLimitingQueue,
)


async def drain_now(q: DelayingQueue[str]) -> list[str]:
    """Process the items queued now, in order (get does not wait: they are queued)."""
    out = []
    while q.len():
        item, _ = await q.get()
        assert item is not None
        out.append(item)
        q.done(item)
    return out


async def test_zero_or_negative_delay_adds_at_once() -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=FakeClock())
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert q.len() == 2
    assert q.waiting_len() == 0


async def test_items_come_out_in_ready_order() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("c", 3)
    q.add_after("a", 1)
    q.add_after("b", 2)
    assert q.len() == 0 and q.waiting_len() == 3
    clock.step(0.999)
    assert q.len() == 0
    clock.step(0.001)
    assert await drain_now(q) == ["a"]
    clock.step(5)
    assert await drain_now(q) == ["b", "c"]
    assert q.waiting_len() == 0


async def test_earliest_delay_wins() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 2)  # moves forward
    q.add_after("a", 5)  # ignored: later than 2
    assert q.waiting_len() == 1
    clock.step(2)
    assert await drain_now(q) == ["a"]
    clock.step(20)  # the stale 10 s and the ignored 5 s entries add nothing
    assert q.len() == 0


async def test_one_timer_for_many_items() -> None:
    clock = FakeClock()
    q: DelayingQueue[int] = DelayingQueue(clock=clock)
    for i in range(100):
        q.add_after(i, 100 - i)
    assert clock.pending_timers() == 1
    clock.step(50.5)
    assert q.len() == 50
    assert clock.pending_timers() == 1


async def test_waiting_item_and_queued_item_dedup() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add("a")
    q.add_after("a", 1)
    clock.step(1)
    assert q.len() == 1


async def test_shutdown_drops_waiting_items_and_ignores_add_after() -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 1)
    q.shut_down()
    q.add_after("b", 0)
    clock.step(2)
    assert q.len() == 0
    assert await q.get() == (None, True)
    assert clock.pending_timers() == 0


async def test_real_timer_delivers_to_waiting_worker() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    loop = asyncio.get_running_loop()
    start = loop.time()
    q.add_after("late", 0.05)
    q.add_after("early", 0.01)
    assert await asyncio.wait_for(q.get(), 1) == ("early", False)
    assert await asyncio.wait_for(q.get(), 1) == ("late", False)
    assert loop.time() - start >= 0.045


async def test_rate_limiting_queue_backoff_and_forget() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock
    )
    q.add_rate_limited("a")  # 1 s
    assert q.num_requeues("a") == 1
    clock.step(1)
    assert q.len() == 1
    assert await q.get() == ("a", False)
    q.done("a")
    q.add_rate_limited("a")  # 2 s
    assert q.num_requeues("a") == 2
    clock.step(1.5)
    assert q.len() == 0
    clock.step(0.5)
    assert q.len() == 1
    q.forget("a")
    assert q.num_requeues("a") == 0
    await q.get()
    q.done("a")
    q.add_rate_limited("a")  # back to 1 s
    clock.step(1)
    assert q.len() == 1


async def test_rate_limiting_queue_default_limiter() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
    q.add_rate_limited("a")
    assert q.len() == 0  # 5 ms
    clock.step(0.005)
    assert q.len() == 1
