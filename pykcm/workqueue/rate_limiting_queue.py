"""RateLimitingQueue: a DelayingQueue that asks a RateLimiter how long to wait
(client-go util/workqueue/rate_limiting_queue.go).

Role. The controller's queue: a worker whose sync fails calls
``add_rate_limited(key)`` (retry with backoff), and ``forget(key)`` once the
key synced, so its next failure starts the backoff again; ``num_requeues``
tells how many retries a key has had (to give up after a few).

Data flow. ``add_rate_limited(item)`` → ``rate_limiter.when(item)`` (which
also records the failure) → ``add_after(item, delay)`` → the queue.
"""

from __future__ import annotations

from pykcm.api.clock import Clock
from pykcm.workqueue.delaying_queue import DelayingQueue
from pykcm.workqueue.metrics import MetricsProvider
from pykcm.workqueue.queue import T
from pykcm.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter


class RateLimitingQueue(DelayingQueue[T]):
    """A DelayingQueue with rate-limited adds.

    ``rate_limiter`` defaults to ``default_controller_rate_limiter()`` on the queue's
    ``clock``.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter[T] | None = None,
        name: str = "",
        *,
        metrics_provider: MetricsProvider | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name, metrics_provider=metrics_provider, clock=clock)
        self.rate_limiter: RateLimiter[T] = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock=clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the rate limiter gives it."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Stop tracking ``item``'s failures (it synced). It is not removed from the queue."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
