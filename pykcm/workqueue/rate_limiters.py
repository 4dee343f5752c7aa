"""Rate limiters: how long a failed item waits before its retry
(client-go util/workqueue/default_rate_limiters.go).

Role. ``RateLimitingQueue.add_rate_limited(item)`` asks ``when(item)`` for a
delay; ``when`` also records the failure. ``forget(item)`` clears an item's
history once it succeeded; ``num_requeues(item)`` reports it. Delays are
seconds (floats).

- ``ItemExponentialFailureRateLimiter(base, max)``: per item,
  ``base * 2**failures`` capped at ``max`` (defaults 5 ms and 1000 s).
- ``ItemFastSlowRateLimiter(fast, slow, max_fast_attempts)``: ``fast`` for
  the first attempts, then ``slow``.
- ``BucketRateLimiter(qps, burst)``: one token bucket for all items, which
  *reserves* future tokens (golang.org/x/time/rate ``Reserve().Delay()``):
  100 calls at once get 0, the 101st gets 1/qps, the 102nd 2/qps, ...
  Items are not tracked (forget is a no-op, num_requeues is 0).
- ``MaxOfRateLimiter(*limiters)``: the largest delay of all (every limiter
  records the failure).
- ``WithMaxWaitRateLimiter(limiter, max)``: caps another limiter's delay.
- ``default_controller_rate_limiter()``: the max of the exponential (5 ms,
  1000 s) and the bucket (10 qps, burst 100) limiters, as client-go's
  DefaultControllerRateLimiter.

Data flow. Pure bookkeeping: no timers, no I/O. The bucket reads its clock
(``Clock.monotonic``) to refill.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any, Generic, Protocol, TypeVar

from pykcm.api.clock import REAL_CLOCK, Clock

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """The delay before ``item``'s retry; records the failure."""
        ...

    def forget(self, item: T_contra) -> None:
        """Clear ``item``'s failure history."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures ``item`` has had since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """``base_delay * 2**failures`` per item, capped at ``max_delay``."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        try:
            # ldexp multiplies by an exact power of two: 0.005 * 2**n exactly.
            backoff = math.ldexp(self.base_delay, exp)
        except OverflowError:
            # client-go returns max when base * 2^exp overflows int64.
            return self.max_delay
        return min(backoff, self.max_delay)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)


class ItemFastSlowRateLimiter(Generic[T]):
    """``fast_delay`` for the first ``max_fast_attempts`` failures of an item, then ``slow_delay``."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        failures = self._failures.get(item, 0) + 1
        self._failures[item] = failures
        if failures <= self.max_fast_attempts:
            return self.fast_delay
        return self.slow_delay

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)


class TokenBucket:
    """golang.org/x/time/rate's Limiter, the part ``Reserve`` uses.

    ``limit`` tokens per second refill a bucket of ``burst`` tokens, which
    starts full. ``reserve()`` always takes a token, going negative if need
    be, and returns how long the caller must wait for the token to exist.
    It returns ``math.inf`` when a token can never be had (burst 0, or
    ``limit`` 0 once the initial burst is spent), where Go returns
    InfDuration. ``limit`` ``math.inf`` never delays.
    """

    def __init__(self, limit: float, burst: int, clock: Clock | None = None) -> None:
        self.limit = limit
        self.burst = burst
        self._clock: Clock = clock if clock is not None else REAL_CLOCK
        self._tokens = float(burst)
        self._last: float | None = None  # Go's zero time: the first advance fills up

    def reserve(self) -> float:
        now = self._clock.monotonic()
        if math.isinf(self.limit):
            return 0.0
        if self.limit == 0:
            # x/time/rate: with no refill, the burst is spent once, for good.
            if self.burst >= 1:
                self.burst -= 1
                return 0.0
            return math.inf
        tokens = self._advance(now) - 1
        wait = -tokens / self.limit if tokens < 0 else 0.0
        if self.burst < 1:
            return math.inf  # not ok: a reservation larger than the bucket
        self._last = now
        self._tokens = tokens
        return wait

    def _advance(self, now: float) -> float:
        last = self._last
        if last is None:
            return float(self.burst)
        last = min(last, now)
        return min(self._tokens + (now - last) * self.limit, float(self.burst))


class BucketRateLimiter:
    """One token bucket for all items (client-go BucketRateLimiter over rate.NewLimiter)."""

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        self.bucket = TokenBucket(qps, burst, clock)

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def forget(self, item: Hashable) -> None:
        pass


class MaxOfRateLimiter(Generic[T]):
    """The worst (largest) answer of several limiters; all of them see every call."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: T) -> float:
        # Every limiter must record the failure: no short-circuit.
        return max([limiter.when(item) for limiter in self.limiters])

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter(Generic[T]):
    """Caps another limiter's delay at ``max_delay``."""

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: T) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def num_requeues(self, item: T) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: T) -> None:
        self.limiter.forget(item)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter[Any]:
    """client-go's DefaultControllerRateLimiter: per-item exponential backoff (5 ms … 1000 s)
    and an overall 10 qps / burst 100 bucket, whichever is slower."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )
