"""Polls for I/O progress on real time that virtual time's idle check can see (issue 21).

Role. A few waits poll a condition on the process's real clock, not on the
component's clock, because they wait for I/O progress rather than control-loop
time: an informer's caches to sync (client-go's ``WaitForCacheSync`` polls every
100 ms), the garbage collector's graph to fill, a cache to deliver our own write,
claims to be bound. :func:`poll_until` and :meth:`ProgressPolls.sleep` are those
waits; :data:`PROGRESS_POLLS` knows which of them sleep, and on what condition.

Why. On virtual time such a sleep was a hole in a follower's idle proof
(:mod:`pykcm.client.clock_follower`): once its condition holds (the list arrived
and was handled), the waiter still sleeps out its period; meanwhile nothing is
ready to run and no request is on the wire, so the process answers idle and
autojump moves the cluster's clock from timer to timer for as long as the pause
lasts (with a 5 s monitor timer, hundreds of virtual seconds in 100 ms). Seen in
a loaded CI run as a node's Ready turning Unknown at start-up, long before its
heartbeat stopped: the simulator, waiting for its caches before it starts its
heartbeats, slept out its poll while the node lifecycle controller's monitor
passes ran 55-65 virtual s past the node's registration without a Lease renewal.

Data flow. A waiter registers ``(condition, future)`` while it sleeps;
a follower's idle check calls :meth:`ProgressPolls.wake_satisfied`, which wakes
every sleeper of the running loop whose condition now holds: it runs on the next
loop iteration, as an event-driven wait would, so the process is busy, not idle.
A condition that does not hold keeps sleeping and does not hold the clock (what
it waits for may itself wait on the clock: a list retried after a backoff).

Deviations: none on real time. Without a follower nothing calls
``wake_satisfied``: the same checks at the same period as before.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Final

from pykcm.api.clock import REAL_CLOCK

__all__ = ["PROGRESS_POLLS", "ProgressPolls", "poll_until"]


class ProgressPolls:
    """The sleeping progress polls of this process (see the module doc)."""

    def __init__(self) -> None:
        self._sleepers: dict[int, tuple[Callable[[], object], asyncio.Future[None],
                                        asyncio.AbstractEventLoop]] = {}
        self._ids = itertools.count()

    def __len__(self) -> int:
        return len(self._sleepers)

    async def sleep(self, condition: Callable[[], object], seconds: float) -> None:
        """Sleep ``seconds`` of real time, or until an idle check finds ``condition()``
        true (the caller checks it again: this only ends the sleep)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        timer = REAL_CLOCK.call_later(max(0.0, seconds), lambda: _wake(fut))
        key = next(self._ids)
        self._sleepers[key] = (condition, fut, loop)
        try:
            await fut
        finally:
            timer.cancel()
            del self._sleepers[key]

    def wake_satisfied(self) -> int:
        """Wake every sleeper of the running loop whose condition holds; how many.

        A condition that raises counts as holding: its waiter's own check raises it
        where it belongs."""
        loop = asyncio.get_running_loop()
        woken = 0
        for condition, fut, owner in list(self._sleepers.values()):
            if owner is not loop or fut.done():
                continue
            try:
                holds = bool(condition())
            except Exception:  # noqa: BLE001 - the waiter's check reports it
                holds = True
            if holds:
                fut.set_result(None)
                woken += 1
        return woken


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


PROGRESS_POLLS: Final = ProgressPolls()
"""The process's registry (one per process, as ``rest_client.IN_FLIGHT``)."""


async def poll_until(condition: Callable[[], object], period: float, *,
                     timeout: float | None = None) -> bool:
    """Check ``condition`` now and every ``period`` real seconds until it holds (True),
    or ``timeout`` real seconds pass (False). Client-go's ``PollImmediateUntil``, on
    :data:`PROGRESS_POLLS` (a follower's idle check ends a sleep whose condition holds)."""
    deadline = None if timeout is None else REAL_CLOCK.monotonic() + timeout
    while True:
        if condition():
            return True
        delay = period
        if deadline is not None:
            remaining = deadline - REAL_CLOCK.monotonic()
            if remaining <= 0:
                return False
            delay = min(period, remaining)
        await PROGRESS_POLLS.sleep(condition, delay)
