"""Clock: the one time source of pykcm's controllers, client, API server and simulator.

Role. Everything that reads the time or waits for it (work queue delays and
rate limiters, informer resync and reflector backoff, leader election, the
event recorder's aggregation windows, every controller's requeues, backoffs,
deadlines, schedules and TTLs; the client's token bucket and retry waits; the
API server's timestamps, deletion deadlines and watch timeouts; the simulated
kubelets' and heartbeats' delays) does it through a :class:`Clock`, never through
``time``, ``datetime`` or ``asyncio.sleep`` directly
(``tests/unit/test_clock_seams.py`` keeps it so). Wall-clock time
(:data:`REAL_CLOCK`) is the default everywhere and behaves as the process
clocks always did; a :class:`FakeClock` moves only when told to, so a test
can step a Job's backoff or a CronJob's schedule without waiting, and the
virtual time of the embedded cluster (issue 21) builds on the same seam
(:mod:`pykcm.api.virtual_clock`: one clock hosted by the API server, followed
by the simulator and the controller manager, with autojump).

Data flow. A process (the controller manager) holds one clock and hands it
down: ``ControllerContext.clock`` → informer factory → informers → reflectors;
→ event broadcasters and recorders; → leader elector; → each controller →
its work queues and rate limiters. ``APIServer(clock=)`` and
``Simulator(clock=)`` do the same for their parts (docs/architecture.md, "Time:
one clock"). Components built on their own default to :data:`REAL_CLOCK`.

Two time lines, as the process has: :meth:`Clock.now` (seconds since the
epoch: what is written into objects, compared with their timestamps, and fed
to schedules) and :meth:`Clock.monotonic` (durations, timers and deadlines;
never jumps). :meth:`Clock.call_at` takes a *monotonic* instant.

Mapping to ``k8s.io/utils/clock``: ``PassiveClock`` (``Now``, ``Since``) is
``now``/``utcnow``/``monotonic``; ``Clock`` adds ``After``/``Sleep``
(:meth:`Clock.sleep`) and ``AfterFunc`` (:meth:`Clock.call_later`, a
cancellable handle like ``Timer.Stop``); ``clock/testing.FakeClock``
(``Step``, ``SetTime``, ``HasWaiters``) is :class:`FakeClock`
(``advance``, ``advance_to``, ``pending_timers``), plus ``next_deadline``
for an autojumping virtual clock (as trio's ``MockClock``).

Deviations: Go's ``time.Time`` carries both readings in one value; here they
are two methods of the clock. ``FakeClock`` moves both lines together (the
wall line is the monotonic one plus a fixed offset). ``advance`` fires due
timers synchronously in due order, the clock standing at each timer's instant
while it runs (upstream's ``SetTime`` sets the final time first); sleepers are
futures resolved by those timers, so they resume when the loop next runs.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final, Protocol, runtime_checkable

__all__ = [
    "REAL_CLOCK",
    "Clock",
    "FakeClock",
    "RealClock",
    "TimerHandle",
    "clock_of",
    "wait_event",
]


class TimerHandle(Protocol):
    """A scheduled callback that can be cancelled (asyncio.TimerHandle fits)."""

    def cancel(self) -> None: ...


@runtime_checkable
class Clock(Protocol):
    """Wall and monotonic time, sleeping and one-shot timers."""

    def now(self) -> float:
        """Wall time, seconds since the epoch (timestamps, schedules, TTLs)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (durations, deadlines, timers)."""
        ...

    def utcnow(self) -> datetime:
        """:meth:`now` as an aware UTC datetime."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock (``<= 0``: yield to the loop once)."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once :meth:`monotonic` reaches ``when``."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` after ``delay`` seconds."""
        ...


class RealClock:
    """The process clocks (``time.time``, ``time.monotonic``) and the running loop.

    Timers are scheduled with ``loop.call_later`` computed from
    ``time.monotonic`` rather than ``loop.call_at``: ``loop.time()`` is not
    guaranteed to share ``time.monotonic``'s origin (uvloop has its own), and
    ``monotonic`` must agree with the timers.
    """

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def utcnow(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        return self.call_later(when - time.monotonic(), callback)

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)


#: The default clock of every component: the process's own time.
REAL_CLOCK: Final = RealClock()


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


# 2026-01-01T00:00:00Z: a fake wall clock starts at a plausible, fixed date.
_FAKE_EPOCH: Final = 1_767_225_600.0


class FakeClock:
    """A clock that moves only when told to (tests now; virtual time later).

    ``start`` is the initial monotonic reading, ``wall`` the initial wall
    reading; both lines move together. :meth:`advance` / :meth:`advance_to`
    run every timer that became due, synchronously, in order of due time
    (ties in order of scheduling), the clock standing at each timer's instant
    while its callback runs; timers those callbacks schedule that are due by
    the target run in the same call. Sleepers (:meth:`sleep`) are such timers
    resolving a future: the sleeping task resumes when the loop next runs.
    """

    def __init__(self, start: float = 1000.0, *, wall: float = _FAKE_EPOCH) -> None:
        self._mono = start
        self._wall_offset = wall - start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    # -- readings --------------------------------------------------------------------------

    def now(self) -> float:
        return self._mono + self._wall_offset

    def monotonic(self) -> float:
        return self._mono

    def utcnow(self) -> datetime:
        return datetime.fromtimestamp(self.now(), UTC)

    # -- waiting ---------------------------------------------------------------------------

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(when, callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return self.call_at(self._mono + max(0.0, delay), callback)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(None)

        handle = self.call_later(seconds, wake)
        try:
            await fut
        finally:
            handle.cancel()  # a cancelled sleeper leaves no pending timer

    # -- inspection ------------------------------------------------------------------------

    def _drop_cancelled(self) -> None:
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)

    def pending_timers(self) -> int:
        """Scheduled, not cancelled timers and sleepers (to assert "one timer, not one per item")."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)

    def next_deadline(self) -> float | None:
        """The monotonic instant of the earliest pending timer or sleeper, None if none."""
        self._drop_cancelled()
        return self._timers[0][0] if self._timers else None

    # -- moving ----------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move both lines forward by ``seconds`` (>= 0), firing what becomes due."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self._advance_mono(self._mono + seconds)

    def advance_to(self, wall: float) -> None:
        """Move forward until :meth:`now` reads ``wall`` (an earlier instant is an error)."""
        self.advance(wall - self.now())

    def _advance_mono(self, target: float) -> None:
        while True:
            self._drop_cancelled()
            if not self._timers or self._timers[0][0] > target:
                break
            when, _, timer = heapq.heappop(self._timers)
            self._mono = max(self._mono, when)
            self._run_timer(timer.callback)
        self._mono = max(self._mono, target)

    def _run_timer(self, callback: Callable[[], None]) -> None:
        """Fire one due timer (a subclass may guard it: see VirtualClock)."""
        callback()

    # client-go-era names the workqueue tests use (FakeClock.Step / SetTime).
    def step(self, seconds: float) -> None:
        """Alias of :meth:`advance`."""
        self.advance(seconds)

    def set_time(self, when: float) -> None:
        """Move the *monotonic* line to ``when`` (no-op if already past it)."""
        self._advance_mono(max(self._mono, when))


class _ReadingClock:
    """A :class:`Clock` around a bare reading function, as older callers and tests pass
    (``clock=lambda: t``): both lines read the function; waiting stays real."""

    def __init__(self, read: Callable[[], float]) -> None:
        self._read = read

    def now(self) -> float:
        return self._read()

    def monotonic(self) -> float:
        return self._read()

    def utcnow(self) -> datetime:
        return datetime.fromtimestamp(self._read(), UTC)

    async def sleep(self, seconds: float) -> None:
        await REAL_CLOCK.sleep(seconds)

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        return REAL_CLOCK.call_later(when - self._read(), callback)

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return REAL_CLOCK.call_later(delay, callback)


async def wait_event(clock: Clock, event: asyncio.Event, seconds: float) -> bool:
    """Wait until ``event`` is set or ``seconds`` pass on ``clock``; True if it was set
    (a periodic loop's "sleep unless stopped", instead of ``wait_for(event.wait(), s)``)."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait((waiter, sleeper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        sleeper.cancel()
    return event.is_set()


def clock_of(clock: Clock | Callable[[], float] | None) -> Clock:
    """``clock`` as a :class:`Clock`: None is :data:`REAL_CLOCK`; a bare function
    returning seconds (the ``clock=`` of constructors that predate this module), or an
    object with only such a ``now()`` (the batch controllers' former clock), reads both
    lines, with real timers."""
    if clock is None:
        return REAL_CLOCK
    if isinstance(clock, Clock):
        return clock
    if callable(clock):
        return _ReadingClock(clock)
    now = getattr(clock, "now", None)
    if callable(now):
        return _ReadingClock(now)
    raise TypeError(f"not a clock: {clock!r}")
