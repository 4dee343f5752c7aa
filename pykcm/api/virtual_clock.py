"""Virtual time of the embedded cluster (issue 21, step 3): the clock and the autojump rule.

Role. :class:`VirtualClock` is the :class:`~pykcm.api.clock.Clock` of every
process of ``pykcm up --virtual-time``: the API server *hosts* one (its time
is the cluster's), the simulator and the controller manager *follow* it
(``pykcm.client.clock_follower``: a VirtualClock moved by the host's pushes).
Time stands still unless moved: ``advance``/``advance_to`` (a test, or
``POST /pykcm/v1/clock/advance``), or the host's autojump, which
:func:`autojump_target` decides from every participant's state.

Data flow. host: ``VirtualClock.advance_to`` → its due timers fire in order →
its ``on_change`` listeners push ``{epoch, generation}`` to each follower →
the follower's ``advance_to(epoch)`` fires its due timers. Autojump: the host
probes; each follower answers once its loop is idle (``loop_is_idle``) with its
``next_deadline_epoch``; the host jumps to the earliest deadline of anyone
(itself included) when :func:`autojump_target` finds the whole cluster quiet.

Deviations. No upstream counterpart (kube components all read the wall
clock); the autojump rule is trio's ``MockClock(autojump_threshold=...)``
spread over processes. Unlike :class:`~pykcm.api.clock.FakeClock`, a timer
scheduled at or before the current instant fires on the loop soon after
(``call_soon``), as a real clock's would, not at the next advance; a timer
callback that raises is reported to the loop's exception handler instead of
breaking the advance.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pykcm.api.clock import FakeClock, TimerHandle

__all__ = [
    "Decision",
    "HostState",
    "ParticipantState",
    "VirtualClock",
    "autojump_target",
    "loop_is_idle",
]

# The monotonic line of a virtual clock starts here (any value does; a fixed one keeps
# two runs alike).
_MONO_START: Final = 1_000_000.0


class VirtualClock(FakeClock):
    """A clock that moves only when told to, with timers firing on the asyncio loop.

    ``start_epoch`` is the initial :meth:`now` (default: the real time at
    construction). :attr:`generation` counts the moves that changed the time;
    :meth:`on_change` listeners run after each such move (after the due timers
    fired), with the new epoch.
    """

    def __init__(self, start_epoch: float | None = None) -> None:
        super().__init__(_MONO_START, wall=time.time() if start_epoch is None else start_epoch)
        self.generation = 0
        self._listeners: list[Callable[[float], None]] = []
        self._kicked = False

    @property
    def epoch(self) -> float:
        """:meth:`now`, as the cluster's clock channel names it."""
        return self.now()

    def wall_of(self, mono: float) -> float:
        """The wall reading at the monotonic instant ``mono``."""
        return mono + self._wall_offset

    def next_deadline_epoch(self) -> float | None:
        """The earliest pending timer as a wall instant (the unit shared by processes)."""
        d = self.next_deadline()
        return None if d is None else self.wall_of(d)

    @property
    def wall_offset(self) -> float:
        """:meth:`now` minus :meth:`monotonic` (shared by the host and its followers)."""
        return self._wall_offset

    def rebase(self, monotonic: float, wall_offset: float) -> None:
        """Take another clock's lines (a follower joining its host): pending timers keep
        their remaining delays. The monotonic line never goes back; the wall line takes
        the host's, whatever this clock read before."""
        delta = monotonic - self._mono
        if delta < 0:
            raise ValueError("a clock does not go back")
        self._timers = [(w + delta, seq, t) for w, seq, t in self._timers]
        heapq.heapify(self._timers)
        self._mono = monotonic
        self._wall_offset = wall_offset
        self.generation += 1

    def next_timer(self) -> str:
        """What the earliest pending timer will call (for "why is time crawling")."""
        self._drop_cancelled()
        if not self._timers:
            return ""
        return repr(self._timers[0][2].callback)[:300]

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        handle = self.call_later(seconds, _Wake(fut, asyncio.current_task()))
        try:
            await fut
        finally:
            handle.cancel()  # a cancelled sleeper leaves no pending timer

    def on_change(self, listener: Callable[[float], None]) -> Callable[[], None]:
        """Call ``listener(epoch)`` after every move; returns its remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners \
            else None

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = super().call_at(when, callback)
        if when <= self._mono and not self._kicked:
            # Already due: fire on the loop soon, as a real clock would (FakeClock waits
            # for the next advance). Outside a loop (a test's setup) the next advance does.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return timer
            self._kicked = True
            loop.call_soon(self._fire_due)
        return timer

    def _fire_due(self) -> None:
        self._kicked = False
        self._advance_mono(self._mono)

    def _run_timer(self, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception as exc:  # noqa: BLE001 - one timer's bug must not stop time
            _report(exc, callback)

    def _advance_mono(self, target: float) -> None:
        before = self._mono
        super()._advance_mono(target)
        if self._mono != before:
            self.generation += 1
            now = self.now()
            for listener in list(self._listeners):
                try:
                    listener(now)
                except Exception as exc:  # noqa: BLE001
                    _report(exc, listener)


class _Wake:
    """A sleeper's timer callback, named after the sleeping task (``next_timer``)."""

    __slots__ = ("fut", "task")

    def __init__(self, fut: asyncio.Future[None], task: asyncio.Task[Any] | None) -> None:
        self.fut = fut
        self.task = task

    def __call__(self) -> None:
        if not self.fut.done():
            self.fut.set_result(None)

    def __repr__(self) -> str:
        t = self.task
        if t is None:
            return "sleep"
        coro = t.get_coro()
        return f"sleep in {t.get_name()} ({getattr(coro, '__qualname__', coro)})"


def _report(exc: BaseException, where: object) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise exc from None
    loop.call_exception_handler({"message": f"virtual clock callback {where!r} failed",
                                 "exception": exc})


def loop_is_idle(loop: asyncio.AbstractEventLoop, *, own: int = 0) -> bool:
    """True if ``loop`` has no ready callback besides ``own`` ones (the caller's).

    ``loop._ready`` is private to asyncio's own loops (uvloop has no equivalent
    visible from Python: virtual mode runs on asyncio's loop); it is the only way
    to see that nothing is about to run. Read in a callback, it holds what the
    current iteration has still to run and what was made ready for the next.
    """
    ready = getattr(loop, "_ready", None)
    if ready is None:
        raise RuntimeError("virtual time needs asyncio's own event loop (not uvloop)")
    return len(ready) <= own


# -- autojump -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ParticipantState:
    """A follower's last answer to the host's probes."""

    name: str
    # started (its controllers, its nodes). Informative only: a starting process waits on
    # the clock too (its client's token bucket), so holding time until it has started
    # would deadlock; its idleness counts as anyone's.
    ready: bool
    probe: int  # the probe this answers (0: none yet)
    generation: int  # the host's time generation it had applied when it answered
    idle: bool
    next_deadline: float | None  # monotonic instant of its earliest timer


@dataclass(frozen=True)
class HostState:
    """What the host sees of itself when deciding."""

    now: float  # monotonic (every participant shares the host's monotonic line)
    generation: int
    probe: int  # the probe being decided on
    activity_at_probe: int  # requests started + finished + store revision, at the probe
    activity_now: int
    requests_in_flight: int  # non-watch, non-clock requests being served
    unsent_watch_events: int  # queued in watchers or being written; writes not committed
    loop_idle: bool
    next_deadline: float | None  # monotonic instant of its own earliest timer
    followers_expected: int


@dataclass(frozen=True)
class Decision:
    """``target``: the monotonic instant to jump to, or None with ``reason``."""

    target: float | None
    reason: str


def autojump_target(host: HostState, followers: Mapping[str, ParticipantState]) -> Decision:
    """The autojump rule: jump to the earliest pending timer of anyone when all are idle.

    All idle means: the expected followers are connected, each
    answered the current probe on the current time generation, idle; the host
    served no request and committed nothing since the probe (so nothing a
    follower answered before can have changed), has none in flight, no watch
    event unsent, and its own loop is idle. Never a jump without a timer.
    """
    if len(followers) < host.followers_expected:
        return Decision(None, f"waiting for followers ({len(followers)} of "
                              f"{host.followers_expected} connected)")
    for f in followers.values():
        if f.probe != host.probe or f.generation != host.generation:
            return Decision(None, f"{f.name} has not answered the probe")
        if not f.idle:
            return Decision(None, f"{f.name} is busy")
    if host.requests_in_flight:
        return Decision(None, f"{host.requests_in_flight} requests in flight")
    if host.activity_now != host.activity_at_probe:
        return Decision(None, "requests or writes since the probe")
    if host.unsent_watch_events:
        return Decision(None, "watch events not yet sent")
    if not host.loop_idle:
        return Decision(None, "the API server is busy")
    deadlines = [d for d in (host.next_deadline,
                             *(f.next_deadline for f in followers.values())) if d is not None]
    if not deadlines:
        return Decision(None, "no timer pending anywhere")
    return Decision(max(host.now, min(deadlines)), "idle")
