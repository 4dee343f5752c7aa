"""Workqueue metrics: the provider interface, its Prometheus and no-op providers, and
the per-queue bookkeeping (client-go util/workqueue/metrics.go and
k8s.io/component-base/metrics/prometheus/workqueue).

Role. A *named* queue reports, under the label ``name``:

- ``workqueue_depth`` (gauge): items queued, not yet handed to a worker;
- ``workqueue_adds_total`` (counter): accepted adds;
- ``workqueue_queue_duration_seconds`` (histogram): add → get;
- ``workqueue_work_duration_seconds`` (histogram): get → done;
- ``workqueue_unfinished_work_seconds`` (gauge): summed age of in-flight work;
- ``workqueue_longest_running_processor_seconds`` (gauge): oldest in-flight work;
- ``workqueue_retries_total`` (counter): ``add_after`` calls (delaying queues).

Unnamed queues report nothing, as in client-go.

Data flow. ``Queue.add/get/done`` call ``QueueMetrics.add/get/done``, which
keep the add and start times per item and feed the metric objects handed out
by a ``MetricsProvider``. The two "unfinished" gauges are recomputed by
``update_unfinished_work``, which the queue calls every 500 ms while it runs.
``DelayingQueue.add_after`` calls ``RetryMetrics.retry``.

Which provider. A queue built without an explicit provider uses the global
one: the one given to ``set_provider`` (the first call wins, like client-go's
``SetProvider``), else a ``PrometheusMetricsProvider`` on prometheus_client's
default registry when prometheus_client is importable (Kubernetes registers
these metrics on its legacy registry the same way), else the no-op provider.
prometheus_client is optional: nothing here imports it unless it is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable
from typing import Any, Final, Protocol

from pykcm.api.clock import Clock

#: Seconds between two refreshes of the unfinished-work gauges (client-go: 500 ms).
UNFINISHED_WORK_UPDATE_PERIOD: Final = 0.5

SUBSYSTEM: Final = "workqueue"
DEPTH_KEY: Final = "depth"
ADDS_KEY: Final = "adds_total"
QUEUE_LATENCY_KEY: Final = "queue_duration_seconds"
WORK_DURATION_KEY: Final = "work_duration_seconds"
UNFINISHED_WORK_KEY: Final = "unfinished_work_seconds"
LONGEST_RUNNING_PROCESSOR_KEY: Final = "longest_running_processor_seconds"
RETRIES_KEY: Final = "retries_total"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Prometheus' ExponentialBuckets, multiplied step by step as Go does (same floats)."""
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return buckets


#: component-base's buckets for both histograms: 10 ns … 10 s.
DURATION_BUCKETS: Final = tuple(exponential_buckets(10e-9, 10, 10))


class CounterMetric(Protocol):
    def inc(self) -> None: ...


class GaugeMetric(Protocol):
    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, value: float) -> None: ...


class MetricsProvider(Protocol):
    """Builds the metric objects of one queue, given its name (client-go MetricsProvider)."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...

    def new_adds_metric(self, name: str) -> CounterMetric: ...

    def new_latency_metric(self, name: str) -> HistogramMetric: ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_retries_metric(self, name: str) -> CounterMetric: ...


class _NoopMetric:
    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


_NOOP_METRIC: Final = _NoopMetric()


class NoopMetricsProvider:
    """Hands out metrics that record nothing; queues using it skip metrics entirely."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC


NOOP_METRICS_PROVIDER: Final = NoopMetricsProvider()


def prometheus_available() -> bool:
    try:
        importlib.import_module("prometheus_client")
    except ImportError:
        return False
    return True


class PrometheusMetricsProvider:
    """The seven workqueue metric families on a prometheus_client registry.

    Each family is created and registered once per provider, with the label
    ``name``; a queue gets its children (``family.labels(name)``). Two queues
    with one name therefore share their series, as in Kubernetes.

    Raises ImportError when prometheus_client is not installed. The module is
    imported dynamically so that it stays an optional dependency (and mypy
    does not need it).
    """

    def __init__(self, registry: Any = None) -> None:
        prom: Any = importlib.import_module("prometheus_client")
        if registry is None:
            registry = prom.REGISTRY
        labels = ["name"]
        self._depth = prom.Gauge(
            DEPTH_KEY,
            "Current depth of workqueue",
            labels,
            subsystem=SUBSYSTEM,
            registry=registry,
        )
        # prometheus_client appends "_total" to counters itself.
        self._adds = prom.Counter(
            ADDS_KEY.removesuffix("_total"),
            "Total number of adds handled by workqueue",
            labels,
            subsystem=SUBSYSTEM,
            registry=registry,
        )
        self._latency = prom.Histogram(
            QUEUE_LATENCY_KEY,
            "How long in seconds an item stays in workqueue before being requested.",
            labels,
            subsystem=SUBSYSTEM,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self._work_duration = prom.Histogram(
            WORK_DURATION_KEY,
            "How long in seconds processing an item from workqueue takes.",
            labels,
            subsystem=SUBSYSTEM,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self._unfinished = prom.Gauge(
            UNFINISHED_WORK_KEY,
            "How many seconds of work has done that is in progress and hasn't been observed "
            "by work_duration. Large values indicate stuck threads. One can deduce the number "
            "of stuck threads by observing the rate at which this increases.",
            labels,
            subsystem=SUBSYSTEM,
            registry=registry,
        )
        self._longest = prom.Gauge(
            LONGEST_RUNNING_PROCESSOR_KEY,
            "How many seconds has the longest running processor for workqueue been running.",
            labels,
            subsystem=SUBSYSTEM,
            registry=registry,
        )
        self._retries = prom.Counter(
            RETRIES_KEY.removesuffix("_total"),
            "Total number of retries handled by workqueue",
            labels,
            subsystem=SUBSYSTEM,
            registry=registry,
        )

    def new_depth_metric(self, name: str) -> GaugeMetric:
        m: GaugeMetric = self._depth.labels(name)
        return m

    def new_adds_metric(self, name: str) -> CounterMetric:
        m: CounterMetric = self._adds.labels(name)
        return m

    def new_latency_metric(self, name: str) -> HistogramMetric:
        m: HistogramMetric = self._latency.labels(name)
        return m

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        m: HistogramMetric = self._work_duration.labels(name)
        return m

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        m: SettableGaugeMetric = self._unfinished.labels(name)
        return m

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        m: SettableGaugeMetric = self._longest.labels(name)
        return m

    def new_retries_metric(self, name: str) -> CounterMetric:
        m: CounterMetric = self._retries.labels(name)
        return m


_explicit_provider: MetricsProvider | None = None
_default_provider: MetricsProvider | None = None


def set_provider(provider: MetricsProvider) -> None:
    """Set the provider of queues created from now on; only the first call has an effect.

    First-call-wins mirrors client-go's ``SetProvider`` (a sync.Once): a
    library cannot steal the metrics of the process that embeds it.
    """
    global _explicit_provider
    if _explicit_provider is None:
        _explicit_provider = provider


def global_provider() -> MetricsProvider:
    """The provider for queues built without one (see the module docstring)."""
    global _default_provider
    if _explicit_provider is not None:
        return _explicit_provider
    if _default_provider is None:
        # Resolved lazily, once: registering the families twice on one
        # registry would fail, and an import at module load would make
        # prometheus_client a hard dependency of importing pykcm.
        _default_provider = (
            PrometheusMetricsProvider() if prometheus_available() else NOOP_METRICS_PROVIDER
        )
    return _default_provider


class QueueMetrics:
    """Per-queue bookkeeping behind the metrics (client-go defaultQueueMetrics).

    Only built for named queues with a real provider; the queue holds None
    otherwise, so unnamed queues pay nothing.
    """

    def __init__(self, provider: MetricsProvider, name: str, clock: Clock) -> None:
        self._clock = clock
        self._depth = provider.new_depth_metric(name)
        self._adds = provider.new_adds_metric(name)
        self._latency = provider.new_latency_metric(name)
        self._work_duration = provider.new_work_duration_metric(name)
        self._unfinished = provider.new_unfinished_work_seconds_metric(name)
        self._longest = provider.new_longest_running_processor_seconds_metric(name)
        # Keyed by item: an item is in the queue at most once, and held by at
        # most one worker, so one timestamp per item suffices.
        self._add_times: dict[Hashable, float] = {}
        self._processing_start_times: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        self._depth.inc()
        self._adds.inc()
        # An item re-added while processing keeps its first add time: the
        # queue duration measures how long the oldest request waited.
        self._add_times.setdefault(item, self._clock.monotonic())

    def get(self, item: Hashable) -> None:
        now = self._clock.monotonic()
        self._depth.dec()
        self._processing_start_times[item] = now
        start = self._add_times.pop(item, None)
        if start is not None:
            self._latency.observe(now - start)

    def done(self, item: Hashable) -> None:
        start = self._processing_start_times.pop(item, None)
        if start is not None:
            self._work_duration.observe(self._clock.monotonic() - start)

    def update_unfinished_work(self) -> None:
        now = self._clock.monotonic()
        total = 0.0
        oldest = 0.0
        for start in self._processing_start_times.values():
            age = now - start
            total += age
            oldest = max(oldest, age)
        self._unfinished.set(total)
        self._longest.set(oldest)


def new_queue_metrics(provider: MetricsProvider, name: str, clock: Clock) -> QueueMetrics | None:
    """QueueMetrics for a named queue with a real provider, else None (client-go noMetrics)."""
    if not name or isinstance(provider, NoopMetricsProvider):
        return None
    return QueueMetrics(provider, name, clock)


def new_retries_metric(provider: MetricsProvider, name: str) -> CounterMetric | None:
    if not name or isinstance(provider, NoopMetricsProvider):
        return None
    return provider.new_retries_metric(name)
