"""Request concurrency with queueing, as API Priority and Fairness presents it to clients
(k8s.io/apiserver ``pkg/server/filters/priority-and-fairness.go`` and
``pkg/util/flowcontrol``).

Data flow: ``server.py`` classifies every non-long-running request as read-only or
mutating and calls ``ConcurrencyLevel.run`` of that kind's level. A request runs at once
while fewer than ``limit`` run; otherwise it waits, first in first out, in a bounded
queue. It is rejected with kube-apiserver's 429 (plain text "Too many requests, please
try again later." and a Retry-After header) only when the queue is full or when it has
waited ``wait_limit`` seconds (kube-apiserver: a quarter of --request-timeout, 15 s).
Watches are long-running and never counted, as upstream.

Retry-After follows upstream's dropped-requests tracker: 1 s at first, doubled (at most
32 s) when at least three times as many requests were dropped in the last Retry-After
seconds, no sooner than Retry-After seconds after the previous increase, and lowered by
one when fewer were dropped than it says.

Deliberate deviations from upstream: there are no FlowSchemas or priority levels in the
request path (the stored flowcontrol.apiserver.k8s.io objects are not consulted): the two
limits of --max-requests-inflight / --max-mutating-requests-inflight are the two levels,
each with one FIFO queue instead of shuffle-sharded fair queues per flow; every request
costs one seat (no work estimation of LISTs); the queue holds ``queue_length`` requests,
by default what one flow may occupy in the global-default level (hand size 6 × queue
length limit 50). No X-Kubernetes-PF-* response headers.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

__all__ = ["TOO_MANY_REQUESTS_MESSAGE", "ConcurrencyLevel", "DroppedRequests", "Rejected"]

T = TypeVar("T")

# kube-apiserver's http.Error text for a rejected request (a text/plain body, not a Status)
TOO_MANY_REQUESTS_MESSAGE: Final = "Too many requests, please try again later."
# one flow's share of global-default's queues: handSize 6 x queueLengthLimit 50
DEFAULT_QUEUE_LENGTH: Final = 300
# kube-apiserver's default --request-timeout (60 s) / 4
DEFAULT_WAIT_LIMIT: Final = 15.0
_MAX_RETRY_AFTER: Final = 32


class Rejected(Exception):
    """A request dropped by its level; ``retry_after`` is the Retry-After to send."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(TOO_MANY_REQUESTS_MESSAGE)
        self.retry_after = retry_after


class DroppedRequests:
    """The Retry-After of one level from the history of its dropped requests (upstream's
    droppedRequestsStats: per-second counts, a TCP-like increase and decrease)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.retry_after = 1
        self._updated = 0  # the second of the last increase (0: any time after a drop)
        self._second = 0
        self._count = 0
        self._history: list[tuple[int, int]] = []  # (second, drops), closed seconds only

    def record(self) -> None:
        now = int(self._clock())
        if now == self._second:
            self._count += 1
            return
        # a new second: close the previous one, then reconsider from the closed history
        self._history.append((self._second, self._count))
        keep = min(2 * self.retry_after, _MAX_RETRY_AFTER)
        self._history = [(s, n) for s, n in self._history if self._second - s <= keep]
        self._second, self._count = now, 1
        self._adjust(now)

    def _adjust(self, now: int) -> None:
        ra = self.retry_after
        dropped = sum(n for s, n in self._history if now - s <= ra and s < now)
        if now - self._updated >= ra and dropped >= 3 * ra:
            self.retry_after = min(ra * 2, _MAX_RETRY_AFTER)
            self._updated = now
        elif dropped < ra and ra > 1:
            self.retry_after = ra - 1


class ConcurrencyLevel:
    """At most ``limit`` requests run at once (0: no limit); the rest wait in a FIFO of
    ``queue_length`` for at most ``wait_limit`` seconds."""

    def __init__(self, limit: int, *, queue_length: int = DEFAULT_QUEUE_LENGTH,
                 wait_limit: float = DEFAULT_WAIT_LIMIT,
                 dropped: DroppedRequests | None = None) -> None:
        self.limit = limit
        self.queue_length = queue_length
        self.wait_limit = wait_limit
        self.executing = 0
        self.dropped = dropped or DroppedRequests()
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` holding a seat; raises Rejected when it cannot get one."""
        await self._acquire()
        try:
            return await call()
        finally:
            self._release()

    async def _acquire(self) -> None:
        if not self.limit or (self.executing < self.limit and not self._waiting):
            self.executing += 1
            return
        if len(self._waiting) >= self.queue_length:
            raise self._reject()
        seat: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(seat)
        try:
            await asyncio.wait_for(asyncio.shield(seat), self.wait_limit)
        except (TimeoutError, asyncio.CancelledError) as exc:
            if seat.done() and not seat.cancelled():
                # the seat was handed over just as the wait ended: pass it on
                self._release()
            else:
                seat.cancel()
                self._waiting.remove(seat)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise self._reject() from None
        # the seat was handed over by _release (executing already counts it)

    def _release(self) -> None:
        while self._waiting:
            seat = self._waiting.popleft()
            if not seat.done():
                seat.set_result(None)  # the seat passes to the oldest waiter
                return
        self.executing -= 1

    def _reject(self) -> Rejected:
        self.dropped.record()
        return Rejected(self.dropped.retry_after)
