"""Clock: the time source and timer scheduler of the workqueue package.

Role. The queues need "now" for their metrics (how long an item waited, how
long a worker has held it), the delaying queue needs one timer for the
earliest waiting item, and the bucket rate limiter needs "now" to refill its
tokens. All of them read time through a ``Clock`` so that tests can swap the
real one for a ``FakeClock`` and step time by hand (client-go injects
``k8s.io/utils/clock`` the same way).

Data flow. ``RealClock`` reads ``time.monotonic`` and schedules callbacks on
the running asyncio loop; ``FakeClock`` keeps its own time and fires the due
callbacks synchronously inside ``step``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    """A scheduled callback that can be cancelled (asyncio.TimerHandle fits)."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic seconds and one-shot timers."""

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle: ...


class RealClock:
    """``time.monotonic`` and timers on the running event loop.

    Timers are scheduled with ``call_later`` computed from ``time.monotonic``
    rather than ``loop.call_at``: ``loop.time()`` is not guaranteed to share
    ``time.monotonic``'s origin (uvloop has its own), and ``now`` must agree
    with the timers.
    """

    def now(self) -> float:
        return time.monotonic()

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.monotonic()), callback)


REAL_CLOCK = RealClock()


class _FakeTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.cancelled = False
        self.callback = callback

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told to (for tests).

    ``step`` advances time and runs every timer that became due, in order of
    due time, synchronously; timers scheduled by those callbacks that are
    already due run in the same step.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    def pending_timers(self) -> int:
        """Number of scheduled, not cancelled timers (to assert "one timer, not one per item")."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)

    def step(self, seconds: float) -> None:
        self.set_time(self._now + seconds)

    def set_time(self, when: float) -> None:
        self._now = max(self._now, when)
        while self._timers and self._timers[0][0] <= self._now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                timer.callback()
