"""VirtualClock (issue 21, step 3) and the autojump rule, without any server.

- timers fire in due order (ties in scheduling order), each at its own instant, whatever
  the steps the clock is moved in (Hypothesis); cancelled ones never;
- a timer already due fires on the loop, without an advance (a real clock's behaviour);
- listeners see every move that changed the time, with a new generation; none for a
  move of zero; a failing timer callback is reported and does not stop time;
- rebase: a follower takes the host's lines, its pending timers keep their delays;
- autojump_target: jumps to the earliest deadline of anyone only when everything says
  idle on the current probe and generation; each condition alone holds it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.virtual_clock import (
    HostState,
    ParticipantState,
    VirtualClock,
    autojump_target,
    loop_is_idle,
)

START = 1_767_225_600.0


@given(delays=st.lists(st.integers(0, 100).map(float), max_size=30),
       cancel=st.sets(st.integers(0, 29)),
       steps=st.lists(st.integers(0, 40).map(float), min_size=1, max_size=10))
def test_timers_fire_in_due_order_at_their_instants(
        delays: list[float], cancel: set[int], steps: list[float]) -> None:
    clock = VirtualClock(START)
    t0 = clock.monotonic()
    fired: list[tuple[float, int, float]] = []
    handles = []

    def record(i: int, d: float) -> None:
        fired.append((d, i, clock.monotonic() - t0))

    for i, d in enumerate(delays):
        handles.append(clock.call_later(d, functools.partial(record, i, d)))
    for i in cancel:
        if i < len(handles):
            handles[i].cancel()
    for s in steps:
        clock.advance(s)
    total = sum(steps)
    expected = sorted((d, i) for i, d in enumerate(delays) if d <= total and i not in cancel)
    assert [(d, i) for d, i, _ in fired] == expected
    assert all(at == d for d, _, at in fired)  # the clock stood at each timer's instant
    assert clock.now() == pytest.approx(START + total)


def test_listeners_and_generations() -> None:
    clock = VirtualClock(START)
    seen: list[float] = []
    remove = clock.on_change(seen.append)
    clock.advance(0)
    assert seen == [] and clock.generation == 0
    clock.advance(5)
    clock.advance_to(START + 60)
    assert seen == [START + 5, START + 60] and clock.generation == 2
    remove()
    clock.advance(1)
    assert len(seen) == 2 and clock.epoch == START + 61
    with pytest.raises(ValueError):
        clock.advance(-1)


async def test_a_due_timer_fires_on_the_loop_and_a_failing_one_is_reported() -> None:
    clock = VirtualClock(START)
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx))
    try:
        fired: list[str] = []

        def boom() -> None:
            raise RuntimeError("boom")

        clock.call_later(0, boom)
        clock.call_later(0, lambda: fired.append("due"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert fired == ["due"]
        assert isinstance(reported[0]["exception"], RuntimeError)
        done = asyncio.ensure_future(clock.sleep(10))
        await asyncio.sleep(0)
        assert not done.done()
        clock.advance(10)
        await done
    finally:
        loop.set_exception_handler(None)


async def test_loop_is_idle() -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(0)
    assert loop_is_idle(loop)
    loop.call_soon(lambda: None)
    assert not loop_is_idle(loop)
    await asyncio.sleep(0)


def test_rebase_keeps_remaining_delays() -> None:
    host = VirtualClock(START)
    host.advance(1234.5)
    follower = VirtualClock()
    fired: list[float] = []
    follower.call_later(10, lambda: fired.append(follower.now()))
    follower.rebase(host.monotonic(), host.wall_offset)
    assert follower.now() == host.now() and follower.monotonic() == host.monotonic()
    follower.set_time(host.monotonic() + 10)
    assert fired == [host.now() + 10]
    with pytest.raises(ValueError):
        follower.rebase(host.monotonic(), host.wall_offset)  # back in monotonic time


def _idle_cluster() -> tuple[HostState, dict[str, ParticipantState]]:
    host = HostState(now=100.0, generation=7, probe=3, activity_at_probe=50, activity_now=50,
                     requests_in_flight=0, unsent_watch_events=0, loop_idle=True,
                     next_deadline=160.0, followers_expected=2)
    followers = {
        "sim": ParticipantState("sim", True, 3, 7, True, 110.0),
        "cm": ParticipantState("cm", True, 3, 7, True, None),
    }
    return host, followers


def test_autojump_jumps_to_the_earliest_deadline_when_all_idle() -> None:
    host, followers = _idle_cluster()
    d = autojump_target(host, followers)
    assert d.target == 110.0 and d.reason == "idle"
    # the host's own timer when it is the earliest
    d = autojump_target(dataclasses.replace(host, next_deadline=105.0), followers)
    assert d.target == 105.0
    # a deadline already passed: no step back
    d = autojump_target(dataclasses.replace(host, next_deadline=90.0), followers)
    assert d.target == 100.0


@pytest.mark.parametrize("change", [
    {"followers_expected": 3},
    {"requests_in_flight": 1},
    {"activity_now": 51},
    {"unsent_watch_events": 2},
    {"loop_idle": False},
])
def test_autojump_holds_for_the_host(change: dict[str, Any]) -> None:
    host, followers = _idle_cluster()
    d = autojump_target(dataclasses.replace(host, **change), followers)
    assert d.target is None and d.reason


@pytest.mark.parametrize("change", [
    {"idle": False},
    {"probe": 2},  # an answer to an older probe
    {"generation": 6},  # idle before the last time move reached it
])
def test_autojump_holds_for_a_follower(change: dict[str, Any]) -> None:
    host, followers = _idle_cluster()
    followers["sim"] = dataclasses.replace(followers["sim"], **change)
    d = autojump_target(host, followers)
    assert d.target is None and "sim" in d.reason


def test_autojump_never_jumps_without_a_timer() -> None:
    host, followers = _idle_cluster()
    followers = {k: dataclasses.replace(f, next_deadline=None) for k, f in followers.items()}
    d = autojump_target(dataclasses.replace(host, next_deadline=None), followers)
    assert d.target is None and d.reason == "no timer pending anywhere"
