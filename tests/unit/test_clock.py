"""pykcm.api.clock: FakeClock fires timers and wakes sleepers in due order; RealClock
and bare reading functions fit the same protocol."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.clock import REAL_CLOCK, Clock, FakeClock, RealClock, clock_of


def test_both_lines_move_together_and_utcnow_is_aware() -> None:
    c = FakeClock(start=50.0, wall=1_000_000.0)
    assert (c.monotonic(), c.now()) == (50.0, 1_000_000.0)
    c.advance(2.5)
    assert (c.monotonic(), c.now()) == (52.5, 1_000_002.5)
    assert c.utcnow() == datetime.fromtimestamp(1_000_002.5, UTC)
    c.advance_to(1_000_010.0)
    assert c.monotonic() == 60.0
    with pytest.raises(ValueError):
        c.advance(-1)
    with pytest.raises(ValueError):
        c.advance_to(0.0)


def test_timers_fire_in_due_order_and_see_their_own_instant() -> None:
    c = FakeClock(start=0.0)
    fired: list[tuple[str, float]] = []
    c.call_later(3, lambda: fired.append(("c", c.monotonic())))
    c.call_at(1, lambda: fired.append(("a", c.monotonic())))
    c.call_later(2, lambda: fired.append(("b", c.monotonic())))
    c.call_at(1, lambda: fired.append(("a2", c.monotonic())))  # tie: scheduling order
    assert c.next_deadline() == 1
    c.advance(2)
    assert fired == [("a", 1), ("a2", 1), ("b", 2)]
    assert c.monotonic() == 2 and c.pending_timers() == 1 and c.next_deadline() == 3


def test_cancelled_timers_neither_fire_nor_count() -> None:
    c = FakeClock(start=0.0)
    fired: list[int] = []
    h = c.call_later(1, lambda: fired.append(1))
    c.call_later(5, lambda: fired.append(5))
    h.cancel()
    assert c.pending_timers() == 1 and c.next_deadline() == 5
    c.advance(10)
    assert fired == [5] and c.next_deadline() is None


def test_a_timer_scheduled_by_a_callback_runs_in_the_same_advance_when_due() -> None:
    c = FakeClock(start=0.0)
    ticks: list[float] = []

    def tick() -> None:
        ticks.append(c.monotonic())
        c.call_later(10, tick)

    c.call_later(10, tick)
    c.advance(35)  # a periodic timer fires at 10, 20, 30: each at its own instant
    assert ticks == [10, 20, 30] and c.next_deadline() == 40


@given(st.lists(st.tuples(st.floats(0, 100, allow_nan=False), st.booleans()), max_size=30),
       st.lists(st.floats(0, 60, allow_nan=False), min_size=1, max_size=5))
def test_any_schedule_fires_exactly_the_due_uncancelled_timers_in_order(
        timers: list[tuple[float, bool]], steps: list[float]) -> None:
    c = FakeClock(start=0.0)
    fired: list[int] = []
    for i, (when, cancel) in enumerate(timers):
        h = c.call_at(when, lambda i=i: fired.append(i))
        if cancel:
            h.cancel()
    for s in steps:
        c.advance(s)
    end = c.monotonic()
    due = sorted((when, i) for i, (when, cancel) in enumerate(timers)
                 if not cancel and when <= end)
    assert fired == [i for _, i in due]
    left = [when for when, cancel in timers if not cancel and when > end]
    assert c.pending_timers() == len(left)
    assert c.next_deadline() == (min(left) if left else None)


async def test_sleepers_wake_in_due_order_when_the_clock_passes_them() -> None:
    c = FakeClock(start=0.0)
    woke: list[str] = []

    async def sleeper(name: str, s: float) -> None:
        await c.sleep(s)
        woke.append(name)

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("late", 30), ("early", 10),
                                                               ("mid", 20))]
    await asyncio.sleep(0)  # let them register
    assert c.pending_timers() == 3 and c.next_deadline() == 10
    c.advance(25)
    await asyncio.sleep(0)
    assert woke == ["early", "mid"]
    c.advance(5)
    await asyncio.gather(*tasks)
    assert woke == ["early", "mid", "late"] and c.pending_timers() == 0


async def test_a_cancelled_sleeper_leaves_no_timer_and_zero_sleep_yields() -> None:
    c = FakeClock()
    t = asyncio.create_task(c.sleep(100))
    await asyncio.sleep(0)
    assert c.pending_timers() == 1
    t.cancel()
    with pytest.raises(asyncio.CancelledError):
        await t
    assert c.pending_timers() == 0 and c.next_deadline() is None
    await c.sleep(0)  # returns without anyone advancing the clock


async def test_real_clock_fits_the_protocol_and_runs_timers() -> None:
    assert isinstance(REAL_CLOCK, Clock) and isinstance(FakeClock(), Clock)
    assert isinstance(REAL_CLOCK, RealClock)
    fired = asyncio.Event()
    REAL_CLOCK.call_at(REAL_CLOCK.monotonic(), fired.set)
    await asyncio.wait_for(fired.wait(), 5)
    h = REAL_CLOCK.call_later(3600, fired.clear)
    h.cancel()
    assert fired.is_set()
    assert REAL_CLOCK.utcnow().tzinfo is UTC


def test_clock_of_wraps_bare_reading_functions() -> None:
    fake = FakeClock()
    assert clock_of(fake) is fake and clock_of(None) is REAL_CLOCK
    t = [42.0]
    c = clock_of(lambda: t[0])
    assert (c.now(), c.monotonic()) == (42.0, 42.0)
    t[0] = 43.0
    assert c.utcnow() == datetime.fromtimestamp(43.0, UTC)

    class NowOnly:  # the batch controllers' former clock: only now()
        def now(self) -> float:
            return 7.0

    assert clock_of(NowOnly()).monotonic() == 7.0
    with pytest.raises(TypeError):
        clock_of(object())  # type: ignore[arg-type]


def test_workqueue_names_are_the_shared_clock() -> None:
    from pykcm import workqueue
    from pykcm.leaderelection import Clock as LeClock
    from pykcm.leaderelection import RealClock as LeRealClock

    assert workqueue.FakeClock is FakeClock and workqueue.REAL_CLOCK is REAL_CLOCK
    assert LeClock is Clock and LeRealClock is RealClock
