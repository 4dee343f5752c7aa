"""The Reflector's backoff manager (apimachinery wait.NewExponentialBackoffManager).

Role: decides how long a Reflector waits before it lists and watches again
after a failure, and before it re-opens a watch refused with 429 or a
connection error. client-go builds it as
``NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0, clock)``:

- the n-th consecutive delay is ``d = min(0.8 * 2**n, 30)`` seconds, plus a
  jitter of up to ``1.0 * d`` (so the delays are in ``[d, 2d)``: with the
  cap, ``[30, 60)`` seconds, about 0.02 requests per second against an API
  server in trouble);
- when more than two minutes passed since the previous delay was handed
  out, the sequence starts again from 0.8 s: the trouble is over.

Data flow: the Reflector calls :meth:`ExponentialBackoffManager.backoff` and
sleeps for the answer; nothing else. The clock and the random source (the
reflector's :class:`~pykcm.api.randomness.RandomSource` stream) are
injectable so tests can drive the sequence, and the module constants are
the defaults a test may scale down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.randomness import REAL_RANDOM

__all__ = [
    "BACKOFF_FACTOR",
    "BACKOFF_JITTER",
    "BACKOFF_RESET",
    "INITIAL_BACKOFF",
    "MAX_BACKOFF",
    "BackoffManager",
    "ExponentialBackoffManager",
]

# client-go reflector.go: NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0).
INITIAL_BACKOFF = 0.8
MAX_BACKOFF = 30.0
BACKOFF_RESET = 120.0
BACKOFF_FACTOR = 2.0
BACKOFF_JITTER = 1.0


@runtime_checkable
class BackoffManager(Protocol):
    """Hands out the next delay (client-go wait.BackoffManager, in seconds)."""

    def backoff(self) -> float:
        """The next delay in seconds; the caller sleeps that long."""


class ExponentialBackoffManager:
    """Exponential backoff with a cap, jitter and a reset after a quiet period.

    The parameters default to the module constants read at construction, so
    a test that patches them before building a Reflector scales its delays.
    """

    __slots__ = ("_clock", "_current", "_factor", "_initial", "_jitter", "_last", "_max",
                 "_rand", "_reset")

    def __init__(
        self,
        initial: float | None = None,
        maximum: float | None = None,
        reset_after: float | None = None,
        factor: float | None = None,
        jitter: float | None = None,
        *,
        clock: Callable[[], float] = REAL_CLOCK.monotonic,
        rand: Callable[[], float] = REAL_RANDOM.random,
    ) -> None:
        self._initial = INITIAL_BACKOFF if initial is None else initial
        self._max = MAX_BACKOFF if maximum is None else maximum
        self._reset = BACKOFF_RESET if reset_after is None else reset_after
        self._factor = BACKOFF_FACTOR if factor is None else factor
        self._jitter = BACKOFF_JITTER if jitter is None else jitter
        self._clock = clock
        self._rand = rand
        self._current = self._initial
        # client-go starts the reset window at construction, not at the
        # first backoff: a failure right after start begins at `initial`
        # either way, as _current starts there.
        self._last = clock()

    def backoff(self) -> float:
        """The next delay: the current step with jitter; the step then grows.

        As wait.Backoff.Step with Steps=MaxInt32 and a Cap: once the doubled
        step passes the cap it stays at the cap (and keeps its jitter).
        """
        now = self._clock()
        if now - self._last > self._reset:
            self._current = self._initial
        self._last = now
        duration = self._current
        if self._factor:
            nxt = duration * self._factor
            self._current = self._max if self._max > 0 and nxt > self._max else nxt
        if self._jitter > 0:
            duration += self._rand() * self._jitter * duration
        return duration

    @property
    def current(self) -> float:
        """The step the next delay starts from (before jitter and reset)."""
        return self._current
