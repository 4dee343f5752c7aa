"""Client-side rate limiting: client-go flowcontrol's token bucket.

`TokenBucketRateLimiter(qps, burst)` behaves as client-go's
`flowcontrol.NewTokenBucketRateLimiter` (golang.org/x/time/rate underneath):
the bucket starts full with `burst` tokens and refills at `qps` tokens per
second; `wait()` reserves a token and sleeps until it is due, so over any
interval of length t at most `burst + qps * t` requests go through. A waiter
that is cancelled gives its token back (as x/time/rate's Reservation.Cancel).
With qps <= 0 the limiter is unlimited: `wait()` returns at once.

Time: a `pykcm.api.clock.Clock` (`clock=`, default `REAL_CLOCK`): its monotonic
line refills the bucket and its `sleep` waits for a token. A bare reading
function with a `sleep=` callable (the older form) still works.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

from pykcm.api.clock import REAL_CLOCK, Clock

__all__ = ["TokenBucketRateLimiter"]


class TokenBucketRateLimiter:
    """A token bucket of `burst` tokens refilled at `qps` per second."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Clock | Callable[[], float] = REAL_CLOCK,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self._qps = float(qps)
        self._unlimited = not (self._qps > 0) or math.isinf(self._qps)
        # x/time/rate with burst 0 would never admit anything; client-go's
        # callers always give >= 1.
        self._burst = max(1, int(burst))
        if isinstance(clock, Clock):
            self._clock: Callable[[], float] = clock.monotonic
            self._sleep = sleep if sleep is not None else clock.sleep
        else:
            self._clock = clock
            self._sleep = sleep if sleep is not None else REAL_CLOCK.sleep
        now = self._clock()
        self._tokens = float(self._burst)
        self._last = now         # when _tokens was last brought up to date
        self._last_event = now   # latest time a reservation is due to act

    @property
    def qps(self) -> float:
        return 0.0 if self._unlimited else self._qps

    @property
    def burst(self) -> int:
        return self._burst

    @property
    def unlimited(self) -> bool:
        return self._unlimited

    def _advance(self, now: float) -> float:
        last = min(self._last, now)
        return min(float(self._burst), self._tokens + (now - last) * self._qps)

    def reserve(self) -> tuple[float, float]:
        """Take a token now: (seconds to wait before acting, the time it is due)."""
        now = self._clock()
        if self._unlimited:
            return 0.0, now
        tokens = self._advance(now) - 1.0
        wait = -tokens / self._qps if tokens < 0 else 0.0
        self._tokens = tokens
        self._last = now
        act = now + wait
        self._last_event = act
        return wait, act

    def cancel(self, act: float) -> None:
        """Give back a reservation due at `act` that will not be used."""
        if self._unlimited:
            return
        now = self._clock()
        if act < now:
            return  # already acted upon
        # Tokens reserved after this one were counted behind it: restore less.
        restore = 1.0 - (self._last_event - act) * self._qps
        if restore <= 0:
            return
        tokens = min(float(self._burst), self._advance(now) + restore)
        self._tokens = tokens
        self._last = now
        if act == self._last_event:
            prev = act - 1.0 / self._qps
            if prev >= now:
                self._last_event = prev

    def try_accept(self) -> bool:
        """Take a token if one is available now (client-go TryAccept)."""
        if self._unlimited:
            return True
        now = self._clock()
        tokens = self._advance(now)
        if tokens < 1.0:
            return False
        self._tokens = tokens - 1.0
        self._last = now
        self._last_event = now
        return True

    async def wait(self) -> None:
        """Block until a token is available and take it (client-go Wait/Accept)."""
        if self._unlimited:
            return
        delay, act = self.reserve()
        if delay <= 0:
            return
        try:
            await self._sleep(delay)
        except BaseException:
            self.cancel(act)
            raise

    def stop(self) -> None:
        """Nothing to release (client-go's Stop is a no-op for the token bucket)."""
