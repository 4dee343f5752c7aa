"""Progress polls on real time that virtual time's idle check can see (issue 21).

- poll_until returns at once when its condition holds, False once its timeout passes;
- an idle check (``PROGRESS_POLLS.wake_satisfied``) ends the sleep of a poll whose
  condition holds, not of one whose condition does not; a condition that raises counts
  as holding and the waiter's own check raises it; a finished or cancelled sleep leaves
  nothing registered;
- a follower's idle check wakes such a poll and lets it run before it answers a probe
  idle: a sync already done is not slept out while the cluster's clock jumps (the
  node's Ready turned Unknown at start-up in a loaded CI run: the simulator slept out
  its cache-sync poll while the node lifecycle controller's monitor ran 55-65 virtual
  s past the node's registration, without a Lease renewal).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pykcm.api.progress_poll import PROGRESS_POLLS, ProgressPolls, poll_until
from pykcm.client.clock_follower import FollowerClock

# A period no test waits out: a poll ends by its condition and a wake-up, or not at all.
LONG = 3600.0


async def _yield(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_poll_until_checks_first_and_times_out() -> None:
    assert await poll_until(lambda: True, LONG)
    assert not await poll_until(lambda: False, 0.001, timeout=0.01)
    assert len(PROGRESS_POLLS) == 0


async def test_wake_satisfied_ends_only_the_sleeps_whose_condition_holds() -> None:
    flags = {"a": False, "b": False}
    a = asyncio.create_task(poll_until(lambda: flags["a"], LONG))
    b = asyncio.create_task(poll_until(lambda: flags["b"], LONG))
    await _yield()
    assert len(PROGRESS_POLLS) == 2
    assert PROGRESS_POLLS.wake_satisfied() == 0  # neither holds: both keep sleeping
    await _yield()
    assert not a.done() and not b.done()
    flags["a"] = True
    assert PROGRESS_POLLS.wake_satisfied() == 1
    async with asyncio.timeout(10):  # a bound on a hang, not a timing
        assert await a
    assert not b.done()
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    assert len(PROGRESS_POLLS) == 0


async def test_a_condition_that_raises_wakes_its_waiter_which_raises_it() -> None:
    armed = False

    def cond() -> bool:
        if armed:
            raise RuntimeError("lister broken")
        return False

    waiter = asyncio.create_task(poll_until(cond, LONG))
    await _yield()
    armed = True
    assert PROGRESS_POLLS.wake_satisfied() == 1
    with pytest.raises(RuntimeError, match="lister broken"):
        async with asyncio.timeout(10):
            await waiter


async def test_a_registry_wakes_only_its_own_loops_sleepers() -> None:
    polls = ProgressPolls()
    other = asyncio.new_event_loop()
    try:
        # a sleeper registered from another loop (another thread's) is left alone
        fut = other.create_future()
        polls._sleepers[0] = (lambda: True, fut, other)
        assert polls.wake_satisfied() == 0
        assert not fut.done()
    finally:
        other.close()


async def test_a_follower_runs_a_satisfied_poll_before_it_answers_idle() -> None:
    """The idle protocol: with a progress poll asleep on real time whose condition holds,
    the follower's answer to a probe comes only after the poll has run (without the wake,
    it answered idle at once, and autojump moved the cluster's clock meanwhile)."""
    clock = FollowerClock("test")
    answers: list[dict[str, Any]] = []
    resumed_before_answer: list[bool] = []
    synced = False
    resumed = asyncio.Event()

    async def send(msg: dict[str, Any]) -> None:
        resumed_before_answer.append(resumed.is_set())
        answers.append(msg)

    clock._send = send  # type: ignore[method-assign]

    async def sync_then_start() -> None:
        await poll_until(lambda: synced, LONG)
        resumed.set()

    waiter = asyncio.create_task(sync_then_start())
    await _yield()
    synced = True  # the lists arrived (a callback set it); the waiter still sleeps
    try:
        async with asyncio.timeout(10):  # a bound on a hang, not a timing
            await clock._answer()
        assert [a["idle"] for a in answers] == [True]
        assert resumed_before_answer == [True]
    finally:
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
    assert len(PROGRESS_POLLS) == 0
