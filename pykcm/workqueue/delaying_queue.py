"""DelayingQueue: a Queue whose items can be added after a delay
(client-go util/workqueue/delaying_queue.go).

Role. Controllers use ``add_after(key, delay)`` to requeue a key later
("requeue after", and the rate-limited retries of RateLimitingQueue).

Data flow. ``add_after`` puts the item in a min-heap ordered by its ready
time (``clock.monotonic() + delay``); one timer, armed for the heap's earliest
ready time, moves every ready item to the queue with ``add`` (so the usual
de-duplication applies) and re-arms itself for the next one. There is no
task and no timer per item.

Rules (as client-go):

- ``delay <= 0`` adds at once.
- An item already waiting keeps the *earliest* ready time: a shorter delay
  moves it forward, a longer one is ignored.
- Each ``add_after`` counts a retry (``workqueue_retries_total``) for a named
  queue, even with ``delay <= 0``.
- Once shutting down, ``add_after`` is ignored and waiting items are dropped.

Python's heapq cannot re-position an entry (Go's heap.Fix), so moving an
item forward pushes a new entry and leaves the old one behind as stale; the
item → entry map tells the live entry from stale ones.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Generic

from pykcm.api.clock import Clock, TimerHandle
from pykcm.workqueue.metrics import (
    CounterMetric,
    MetricsProvider,
    global_provider,
    new_retries_metric,
)
from pykcm.workqueue.queue import Queue, T


class _WaitFor(Generic[T]):
    __slots__ = ("item", "ready_at", "seq")

    def __init__(self, ready_at: float, seq: int, item: T) -> None:
        self.ready_at = ready_at
        self.seq = seq  # ties broken by insertion order, and items never compared
        self.item = item

    def __lt__(self, other: _WaitFor[T]) -> bool:
        return (self.ready_at, self.seq) < (other.ready_at, other.seq)


class DelayingQueue(Queue[T]):
    """A Queue with ``add_after``. Call ``add_after`` on the event loop."""

    def __init__(
        self,
        name: str = "",
        *,
        metrics_provider: MetricsProvider | None = None,
        clock: Clock | None = None,
    ) -> None:
        provider = metrics_provider if metrics_provider is not None else global_provider()
        super().__init__(name, metrics_provider=provider, clock=clock)
        self._retries: CounterMetric | None = new_retries_metric(provider, name)
        self._waiting: list[_WaitFor[T]] = []
        self._known: dict[T, _WaitFor[T]] = {}
        self._seq = itertools.count()
        self._timer: TimerHandle | None = None
        self._timer_at = math.inf

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed."""
        if self._shutting_down:
            return
        if self._retries is not None:
            self._retries.inc()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.monotonic() + delay
        known = self._known.get(item)
        if known is not None and known.ready_at <= ready_at:
            return  # the earliest ready time wins
        entry = _WaitFor(ready_at, next(self._seq), item)
        self._known[item] = entry  # any older entry becomes stale
        heapq.heappush(self._waiting, entry)
        self._arm()

    def waiting_len(self) -> int:
        """Number of items waiting for their delay to pass (for tests and debugging)."""
        return len(self._known)

    def shut_down(self) -> None:
        super().shut_down()
        self._stop_waiting()

    async def shut_down_with_drain(self) -> None:
        self._stop_waiting()
        await super().shut_down_with_drain()

    def _stop_waiting(self) -> None:
        # Waiting items could not be added anyway (adds are ignored now).
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = math.inf
        self._waiting.clear()
        self._known.clear()

    def _head(self) -> _WaitFor[T] | None:
        while self._waiting:
            head = self._waiting[0]
            if self._known.get(head.item) is head:
                return head
            heapq.heappop(self._waiting)  # stale
        return None

    def _arm(self) -> None:
        """Keep one timer armed for the earliest live entry."""
        head = self._head()
        when = head.ready_at if head is not None else math.inf
        if when >= self._timer_at:
            return  # the armed timer fires first (or as early) anyway
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = when
        if not math.isinf(when):  # an infinite delay (a limiter's "never") needs no timer
            self._timer = self._clock.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = math.inf
        now = self._clock.monotonic()
        while (head := self._head()) is not None and head.ready_at <= now:
            heapq.heappop(self._waiting)
            del self._known[head.item]
            self.add(head.item)
        # Loop timers may fire a hair early; re-arming covers that too.
        self._arm()
