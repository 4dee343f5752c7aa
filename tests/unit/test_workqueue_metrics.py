"""Workqueue metrics: the bookkeeping with a recording provider, and the Prometheus
provider's names, label and buckets (skipped without prometheus_client)."""

from __future__ import annotations

import pytest

from pykcm.workqueue import (
    DURATION_BUCKETS,
    DelayingQueue,
    FakeClock,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    Queue,
)


class Rec:
    def __init__(self) -> None:
        self.value = 0.0
        self.observed: list[float] = []

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1

    def set(self, value: float) -> None:
        self.value = value

    def observe(self, value: float) -> None:
        self.observed.append(value)


class RecordingProvider:
    def __init__(self) -> None:
        self.m: dict[tuple[str, str], Rec] = {}

    def _get(self, kind: str, name: str) -> Rec:
        return self.m.setdefault((kind, name), Rec())

    def new_depth_metric(self, name: str) -> Rec:
        return self._get("depth", name)

    def new_adds_metric(self, name: str) -> Rec:
        return self._get("adds", name)

    def new_latency_metric(self, name: str) -> Rec:
        return self._get("latency", name)

    def new_work_duration_metric(self, name: str) -> Rec:
        return self._get("work", name)

    def new_unfinished_work_seconds_metric(self, name: str) -> Rec:
        return self._get("unfinished", name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> Rec:
        return self._get("longest", name)

    def new_retries_metric(self, name: str) -> Rec:
        return self._get("retries", name)


async def test_queue_metrics_bookkeeping() -> None:
    clock = FakeClock()
    p = RecordingProvider()
    q: DelayingQueue[str] = DelayingQueue("q1", metrics_provider=p, clock=clock)
    q.add("a")
    q.add("a")  # dedup: not an add
    q.add("b")
    assert p.m["adds", "q1"].value == 2
    assert p.m["depth", "q1"].value == 2
    clock.step(0.25)
    await q.get()
    assert p.m["depth", "q1"].value == 1
    assert p.m["latency", "q1"].observed == [0.25]
    # the 500 ms refresh fires at t=0.5 (the fake clock stands at a timer's instant
    # while it runs), when "a" has been held 0.25 s
    clock.step(0.5)
    assert p.m["unfinished", "q1"].value == pytest.approx(0.25)
    assert p.m["longest", "q1"].value == pytest.approx(0.25)
    await q.get()  # "b" at t=0.75
    clock.step(0.5)  # the next refresh, at t=1.0
    assert p.m["unfinished", "q1"].value == pytest.approx(0.75 + 0.25)
    assert p.m["longest", "q1"].value == pytest.approx(0.75)
    q.done("a")
    assert p.m["work", "q1"].observed == [pytest.approx(1.0)]
    q.add_after("c", 1)
    q.add_after("c", 0)
    assert p.m["retries", "q1"].value == 2
    q.shut_down()
    assert clock.pending_timers() == 0


async def test_unnamed_or_noop_queue_has_no_metrics() -> None:
    p = RecordingProvider()
    q: Queue[str] = Queue(metrics_provider=p)
    q.add("a")
    assert p.m == {}
    q2: Queue[str] = Queue("named", metrics_provider=NoopMetricsProvider())
    q2.add("a")
    assert q2._metrics is None


def test_duration_buckets_match_component_base() -> None:
    # ExponentialBuckets(10e-9, 10, 10): 10 ns … 10 s
    assert len(DURATION_BUCKETS) == 10
    assert DURATION_BUCKETS[0] == 1e-8
    assert DURATION_BUCKETS[-1] == pytest.approx(10.0)


async def test_prometheus_provider_exposition() -> None:
    import prometheus_client as prom  # a dependency of pykcm
    registry = prom.CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue("deployment", metrics_provider=provider, clock=clock)
    q.add("a")
    await q.get()
    q.done("a")
    q.add_after("b", 0)
    text = prom.generate_latest(registry).decode()
    for line in [
        'workqueue_depth{name="deployment"} 1.0',
        'workqueue_adds_total{name="deployment"} 2.0',
        'workqueue_retries_total{name="deployment"} 1.0',
        'workqueue_queue_duration_seconds_count{name="deployment"} 1.0',
        'workqueue_work_duration_seconds_count{name="deployment"} 1.0',
        'workqueue_unfinished_work_seconds{name="deployment"} 0.0',
        'workqueue_longest_running_processor_seconds{name="deployment"} 0.0',
        'workqueue_queue_duration_seconds_bucket{le="1e-08",name="deployment"} 1.0',
    ]:
        assert line in text, line
    clock.step(0.5)
    q.shut_down()
