"""pykcm.workqueue: client-go util/workqueue (see DESIGN.md for the data flow).

Event handlers add keys to a queue; workers ``get`` a key, sync it, and call
``done``; a failed sync retries with ``add_rate_limited``, a successful one
calls ``forget``.

- ``Queue``: FIFO, de-duplicating, never hands one item to two workers,
  drains on shutdown.
- ``DelayingQueue``: ``add_after`` (a heap and one timer).
- ``RateLimitingQueue``: ``add_rate_limited``, ``forget``, ``num_requeues``.
- Rate limiters with client-go's semantics and defaults, and
  ``default_controller_rate_limiter()``.
- Metrics: Kubernetes' ``workqueue_*`` metrics for named queues through a
  ``MetricsProvider`` (Prometheus when prometheus_client is installed).
- ``FakeClock`` to test code built on these queues without waiting.
"""

from pykcm.api.clock import REAL_CLOCK, Clock, FakeClock, RealClock, TimerHandle
from pykcm.workqueue.delaying_queue import DelayingQueue
from pykcm.workqueue.metrics import (
    DURATION_BUCKETS,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    MetricsProvider,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    SettableGaugeMetric,
    global_provider,
    prometheus_available,
    set_provider,
)
from pykcm.workqueue.queue import Queue
from pykcm.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    TokenBucket,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)
from pykcm.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = [
    "DURATION_BUCKETS",
    "REAL_CLOCK",
    "BucketRateLimiter",
    "Clock",
    "CounterMetric",
    "DelayingQueue",
    "FakeClock",
    "GaugeMetric",
    "HistogramMetric",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "SettableGaugeMetric",
    "TimerHandle",
    "TokenBucket",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "global_provider",
    "prometheus_available",
    "set_provider",
]
