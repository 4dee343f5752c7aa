"""The node lifecycle controller's per-zone tainting queue and its rate limiter.

kube-controller-manager v1.36 ``pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go``
(``RateLimitedTimedQueue``) and client-go's token bucket (``flowcontrol.NewTokenBucketRateLimiter``).

Role: nodes that turned NotReady/Unknown wait here, one queue per zone, before
the controller adds the NoExecute taint that makes the taint-eviction
controller delete their pods. The queue's limiter is what ``--node-eviction-rate``
(0.1 nodes a second) and ``--secondary-node-eviction-rate`` set: a pass takes
nodes while the bucket has a token (burst 1, as upstream's
``EvictionRateLimiterBurst``), so a healthy zone taints its first node at once
and then one every 10 s. A rate of 0 stops the zone (upstream's "never" limiter
while a zone is in partial disruption below ``--large-cluster-size-threshold`` or
all zones are fully disrupted).

Data flow: :meth:`RateLimitedTimedQueue.add` (unique per node name), then
:meth:`try_` every 100 ms calls the tainting function on the due heads. A node
processed successfully leaves the queue but stays in the queue's set, as
upstream's ``UniqueQueue.RemoveFromQueue``: adding it again is refused until
:meth:`remove` (the node is reachable again, or its taint is gone), so a tainted
node is not queued anew by every monitor pass. ``len()`` counts the nodes still
to process (the tainting loop sleeps when every zone has none).

Time comes from a ``clock`` callable (seconds), so tests step it by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["EVICTION_RATE_LIMITER_BURST", "RateLimitedTimedQueue", "TimedValue", "TokenBucket"]

log = logging.getLogger("pykcm.controllers.nodelifecycle")

EVICTION_RATE_LIMITER_BURST = 1
"""upstream scheduler.EvictionRateLimiterBurst."""


class TokenBucket:
    """A token bucket of ``qps`` refills and ``burst`` capacity; qps <= 0 never accepts."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float]) -> None:
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst) if qps > 0 else 0.0
        self._last = clock()

    def try_accept(self) -> bool:
        if self.qps <= 0:
            return False
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


@dataclass
class TimedValue:
    """A queued node: its name, UID, when it was added and when it may be processed."""

    value: str
    uid: str
    added_at: float
    process_at: float


class RateLimitedTimedQueue:
    """A unique FIFO of node names, drained at the pace of a token bucket."""

    def __init__(self, qps: float, clock: Callable[[], float],
                 burst: int = EVICTION_RATE_LIMITER_BURST) -> None:
        self._clock = clock
        self.limiter = TokenBucket(qps, burst, clock)
        self._items: dict[str, TimedValue] = {}  # insertion order is the queue order
        self._processed: set[str] = set()  # out of the queue, still in upstream's set

    def __contains__(self, value: str) -> bool:
        return value in self._items or value in self._processed

    def __len__(self) -> int:
        return len(self._items)

    def add(self, value: str, uid: str) -> bool:
        """Queue ``value`` to be processed now; False if it is in the set already
        (queued, or processed and not removed since)."""
        if value in self:
            return False
        now = self._clock()
        self._items[value] = TimedValue(value, uid, now, now)
        return True

    def remove(self, value: str) -> bool:
        """Out of the queue and the set (upstream ``Remove``)."""
        queued = self._items.pop(value, None) is not None
        if value in self._processed:
            self._processed.discard(value)
            return True
        return queued

    def clear(self) -> None:
        self._items.clear()
        self._processed.clear()

    def swap_limiter(self, qps: float) -> None:
        """Use a new rate (upstream SwapLimiter): a limiter that had no token left
        hands an empty bucket to its successor, so a swap does not burst."""
        if self.limiter.qps == qps:
            return
        new = TokenBucket(qps, self.limiter.burst, self._clock)
        if not self.limiter.try_accept():
            new.try_accept()
        self.limiter = new

    async def try_(self, fn: Callable[[TimedValue], Awaitable[tuple[bool, float]]]) -> None:
        """Process due heads while the limiter allows: ``fn`` answers (done, retry after)."""
        order = list(self._items)
        for value in order:
            item = self._items.get(value)
            if item is None:
                continue
            if not self.limiter.try_accept():
                log.debug("Try rate limited for value %s", value)
                return
            now = self._clock()
            if now < item.process_at:
                # Not due yet: to the back of the queue (upstream's Replace).
                self._items.pop(value)
                self._items[value] = item
                continue
            done, wait = await fn(item)
            if done:
                if self._items.pop(value, None) is not None:
                    self._processed.add(value)  # upstream RemoveFromQueue
            elif value in self._items:
                item.process_at = now + wait + 1e-9
                self._items.pop(value)
                self._items[value] = item
