"""pykcm.manager.ui.metrics_window: rates over the window, histogram quantiles, readings."""

from __future__ import annotations

import math

import pytest

from pykcm.manager.ui.metrics_window import Window, quantile, read_samples
from pykcm.workqueue import RateLimitingQueue


def test_quantile_interpolates_within_a_bucket_as_prometheus_does() -> None:
    buckets = [(0.1, 0.0), (0.2, 10.0), (0.4, 20.0), (math.inf, 20.0)]
    assert quantile(0.5, buckets) == pytest.approx(0.2)
    assert quantile(0.75, buckets) == pytest.approx(0.3)
    assert quantile(0.25, buckets) == pytest.approx(0.15)
    assert quantile(0.5, [(0.1, 0.0), (math.inf, 0.0)]) is None
    assert quantile(0.99, [(0.1, 1.0), (math.inf, 5.0)]) == 0.1  # in +Inf: the last bound


def test_window_rate_and_histogram_delta() -> None:
    w = Window(span=10)
    c = ("c_total", (("name", "q"),))
    b1 = ("h_bucket", (("le", "0.1"), ("name", "q")))
    binf = ("h_bucket", (("le", "+Inf"), ("name", "q")))
    w.push(0.0, {c: 5.0, b1: 1.0, binf: 2.0})
    assert w.rate(c) == 0.0                        # one reading: no rate yet
    w.push(2.0, {c: 9.0, b1: 4.0, binf: 6.0})
    assert w.rate(c) == pytest.approx(2.0)
    assert w.histogram_delta("h", {"name": "q"}) == [(0.1, 3.0), (math.inf, 4.0)]
    w.push(20.0, {c: 1.0, b1: 4.0, binf: 6.0})    # a reset: counts from zero
    assert w.rate(c) == pytest.approx(1.0 / 18.0)


async def test_read_samples_sees_a_named_work_queue() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(name="live-view-test-queue")
    q.add("a")
    q.add("b")
    samples = read_samples()
    assert samples[("workqueue_adds_total", (("name", "live-view-test-queue"),))] == 2.0
    assert samples[("workqueue_depth", (("name", "live-view-test-queue"),))] == 2.0
    q.shut_down()
