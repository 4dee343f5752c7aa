"""Queue: the work queue between event handlers and workers (client-go util/workqueue/queue.go).

Role. Event handlers ``add`` keys; N workers loop on ``get`` → sync(key) →
``done``. The queue guarantees:

- *Fair*: items are handed out in the order they were added (FIFO).
- *Stingy*: an item added several times before a worker gets it is handed
  out once (the *dirty* set holds every item that needs processing).
- *Exclusive*: an item is never held by two workers. An item added while a
  worker holds it (it is in the *processing* set) is only marked dirty, and
  goes to the back of the queue when that worker calls ``done``.
- *Draining shutdown*: after ``shut_down`` new adds are ignored, but ``get``
  keeps handing out what is queued; only an empty, shut-down queue answers
  ``(None, True)``. ``shut_down_with_drain`` also waits for the workers to
  call ``done`` on everything they hold.

Data flow. ``add`` → dirty (+ deque unless processing) → ``get`` moves the
head from the deque and dirty into processing → ``done`` removes it from
processing and re-queues it if it became dirty meanwhile.

Concurrency. asyncio only: call every method on the loop's thread. ``add``
and ``done`` are plain methods (handlers call them synchronously); ``get``
awaits while the queue is empty. Waiting workers are futures woken one per
queued item, which is cheaper than an asyncio.Condition (no lock round trip).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from pykcm.api.clock import REAL_CLOCK, Clock, TimerHandle
from pykcm.workqueue.metrics import (
    UNFINISHED_WORK_UPDATE_PERIOD,
    MetricsProvider,
    QueueMetrics,
    global_provider,
    new_queue_metrics,
)

T = TypeVar("T", bound=Hashable)


class Queue(Generic[T]):
    """A FIFO work queue with de-duplication and per-item exclusivity.

    ``name`` turns on metrics (label ``name``) through ``metrics_provider``
    (default: the package's global provider). ``clock`` is for tests.
    Items must be hashable and not None (None is ``get``'s shutdown answer).
    """

    def __init__(
        self,
        name: str = "",
        *,
        metrics_provider: MetricsProvider | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else REAL_CLOCK
        provider = metrics_provider if metrics_provider is not None else global_provider()
        self._metrics: QueueMetrics | None = new_queue_metrics(provider, name, self._clock)
        # Invariants: every element of _queue is in _dirty and not in
        # _processing; an item is in _queue at most once.
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._metrics_timer: TimerHandle | None = None

    # -- producer side ---------------------------------------------------

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing (ignored once shutting down)."""
        if self._shutting_down:
            return
        if item in self._dirty:
            # Already queued, or held and already re-marked: processed once.
            return
        if self._metrics is not None:
            self._metrics.add(item)
            self._start_metrics_timer()
        self._dirty.add(item)
        if item in self._processing:
            # A worker holds it: done() re-queues it, so no second worker
            # can get it meanwhile.
            return
        self._queue.append(item)
        self._wake_getter()

    def __len__(self) -> int:
        return len(self._queue)

    def len(self) -> int:
        """Number of queued items (not counting the ones workers hold)."""
        return len(self._queue)

    # -- consumer side ---------------------------------------------------

    async def get(self) -> tuple[T | None, bool]:
        """Wait for an item; return ``(item, False)``, or ``(None, True)`` once the
        queue is shut down and empty. Call ``done(item)`` when finished with it."""
        while not self._queue and not self._shutting_down:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                # If we had been woken for an item, pass the wake-up on so
                # the item does not sit while another worker sleeps.
                if waiter.done() and not waiter.cancelled() and self._queue:
                    self._wake_getter()
                raise
            # Woken, but a worker that did not have to wait may have taken
            # the item first: loop and check again.
        if not self._queue:
            return None, True
        item = self._queue.popleft()
        if self._metrics is not None:
            self._metrics.get(item)
            self._start_metrics_timer()
        self._processing.add(item)
        self._dirty.discard(item)
        return item, False

    def done(self, item: T) -> None:
        """Mark ``item`` as processed; re-queue it if it was added meanwhile."""
        if item not in self._processing:
            # Misuse (done twice, or on an item never got): ignoring it keeps
            # the invariant that a queued item is not also being processed.
            return
        if self._metrics is not None:
            self._metrics.done(item)
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_getter()
        if not self._processing:
            # Also after a re-queue: a drain waits for held items only (client-go's
            # Signal there may wake the drainer too; with no worker waiting it must).
            self._wake_drain_waiters()

    # -- shutdown --------------------------------------------------------

    def shut_down(self) -> None:
        """Stop accepting adds; ``get`` hands out what remains, then reports shutdown.

        Also releases a pending ``shut_down_with_drain`` (as in client-go,
        ShutDown after ShutDownWithDrain stops waiting for in-flight items).
        """
        self._drain = False
        self._shut_down()

    async def shut_down_with_drain(self) -> None:
        """Like ``shut_down``, then wait until workers have called ``done`` on every
        item they hold. Workers must keep running meanwhile, or this never returns."""
        self._drain = True
        self._shut_down()
        while self._processing and self._drain:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    def shutting_down(self) -> bool:
        return self._shutting_down

    def _shut_down(self) -> None:
        self._shutting_down = True
        # Every waiting worker re-checks: the empty ones return (None, True).
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
        self._wake_drain_waiters()
        if self._metrics_timer is not None:
            self._metrics_timer.cancel()
            self._metrics_timer = None

    # -- internals -------------------------------------------------------

    def _wake_getter(self) -> None:
        # Wake exactly one live waiter per queued item; cancelled waiters
        # stay in the deque until reached here.
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_drain_waiters(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _start_metrics_timer(self) -> None:
        # client-go refreshes the unfinished-work gauges every 500 ms from a
        # goroutine started by the constructor; here the timer starts on the
        # first add/get, because the constructor may run without a loop.
        if self._metrics_timer is not None or self._shutting_down:
            return
        try:
            self._metrics_timer = self._clock.call_at(
                self._clock.monotonic() + UNFINISHED_WORK_UPDATE_PERIOD, self._update_unfinished_work
            )
        except RuntimeError:
            # No running loop (add() called before the loop started): the
            # next add/get on the loop starts it.
            self._metrics_timer = None

    def _update_unfinished_work(self) -> None:
        self._metrics_timer = None
        if self._shutting_down or self._metrics is None:
            return
        self._metrics.update_unfinished_work()
        # Deviation: client-go's ticker runs for the queue's life; with no item being
        # processed the update is a no-op (the gauges went to 0 on this last one), so
        # the timer waits for the next get(). An idle queue then holds no timer, which
        # keeps virtual time's autojump from stepping every 500 ms for nothing.
        if self._processing:
            self._start_metrics_timer()
