"""Unit tests of the HPA's replica calculator (pykcm/controllers/podautoscaler/
replica_calculator.py): upstream's replica_calculator_test cases re-stated on wire-form pods
(scale up and down, unready and missing pods, the tolerance), and properties (Hypothesis) of
the plain path."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.timestamps import format_time
from pykcm.controllers.podautoscaler.replica_calculator import (
    PodMetric,
    ReplicaCalculationError,
    Tolerances,
    plain_metric_replicas,
    resource_replicas,
)

NOW = 1_000_000.0


def _pod(name: str, *, ready: bool = True, phase: str = "Running", request: str = "1",
         started: float = NOW - 3600, ready_since: float = NOW - 3500) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {
                "cpu": request, "memory": "100Mi"}}}]},
            "status": {"phase": phase, "startTime": format_time(started), "conditions": [
                {"type": "Ready", "status": "True" if ready else "False",
                 "lastTransitionTime": format_time(ready_since)}]}}


def _metrics(values: dict[str, int]) -> dict[str, PodMetric]:
    return {k: PodMetric(v, NOW - 10, 60.0) for k, v in values.items()}


def test_scale_up() -> None:
    pods = [_pod("a"), _pod("b"), _pod("c")]
    replicas, utilization, raw = resource_replicas(
        3, 30, "cpu", Tolerances(), pods, _metrics({"a": 300, "b": 500, "c": 700}), now=NOW)
    assert (replicas, utilization, raw) == (5, 50, 500)


def test_scale_down() -> None:
    pods = [_pod(n) for n in "abcde"]
    replicas, utilization, _ = resource_replicas(
        5, 50, "cpu", Tolerances(), pods,
        _metrics({"a": 100, "b": 300, "c": 500, "d": 250, "e": 250}), now=NOW)
    assert (replicas, utilization) == (3, 28)


def test_unready_pods_count_as_zero_on_a_scale_up() -> None:
    # a never-ready pod started long ago is unready (its readiness flipped after the delay)
    pods = [_pod("a", ready=False, ready_since=NOW - 10), _pod("b"), _pod("c")]
    replicas, utilization, _ = resource_replicas(
        3, 30, "cpu", Tolerances(), pods, _metrics({"a": 300, "b": 500, "c": 700}), now=NOW,
        delay_of_initial_readiness_status=3600 * 2)
    # utilization from the ready pods (60%), the proposal with the unready one at 0: 40% → 4
    assert (replicas, utilization) == (4, 60)


def test_pending_pods_are_unready_and_missing_pods_count_against_a_scale_down() -> None:
    pods = [_pod("a"), _pod("b"), _pod("c"), _pod("d", phase="Pending")]
    # ratio 0.2 on the ready pods; the missing pod c counts as 100% of its request
    replicas, utilization, _ = resource_replicas(
        4, 50, "cpu", Tolerances(), pods, _metrics({"a": 100, "b": 100}), now=NOW)
    assert utilization == 10
    assert replicas == math.ceil(((100 + 100 + 1000) * 100 // 3000) / 50 * 3)


def test_missing_pods_count_as_zero_on_a_scale_up() -> None:
    pods = [_pod("a"), _pod("b"), _pod("c")]
    replicas, _, _ = resource_replicas(3, 50, "cpu", Tolerances(), pods,
                                       _metrics({"a": 900, "b": 900}), now=NOW)
    # 180% on two pods; with c at 0: 120% of 3 pods → 4 (not 6)
    assert replicas == 4


def test_within_tolerance_keeps_the_count() -> None:
    pods = [_pod("a"), _pod("b")]
    replicas, utilization, _ = resource_replicas(
        2, 50, "cpu", Tolerances(), pods, _metrics({"a": 520, "b": 520}), now=NOW)
    assert (replicas, utilization) == (2, 52)


def test_deleting_and_failed_pods_are_ignored() -> None:
    gone = _pod("b")
    gone["metadata"]["deletionTimestamp"] = format_time(NOW)
    pods = [_pod("a"), gone, _pod("c", phase="Failed")]
    replicas, utilization, _ = resource_replicas(
        3, 50, "cpu", Tolerances(), pods, _metrics({"a": 1000, "b": 0, "c": 0}), now=NOW)
    assert (replicas, utilization) == (2, 100)


def test_errors_have_upstreams_messages() -> None:
    with pytest.raises(ReplicaCalculationError,
                       match="^no pods returned by selector while calculating replica count$"):
        resource_replicas(1, 50, "cpu", Tolerances(), [], {}, now=NOW)
    with pytest.raises(ReplicaCalculationError, match=r"^did not receive metrics for targeted "
                                                      r"pods \(pods might be unready\)$"):
        resource_replicas(1, 50, "cpu", Tolerances(), [_pod("a", phase="Pending")],
                          _metrics({"a": 1}), now=NOW)
    no_request = _pod("a")
    del no_request["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    with pytest.raises(ReplicaCalculationError,
                       match="^missing request for cpu in container c of Pod a$"):
        resource_replicas(1, 50, "cpu", Tolerances(), [no_request], _metrics({"a": 1}), now=NOW)


def test_average_value_target() -> None:
    pods = [_pod("a"), _pod("b")]
    replicas, usage = plain_metric_replicas(2, 100, "memory", Tolerances(), pods,
                                            _metrics({"a": 300, "b": 100}), now=NOW)
    assert (replicas, usage) == (4, 200)


@given(st.lists(st.integers(min_value=0, max_value=4000), min_size=1, max_size=12),
       st.integers(min_value=1, max_value=200))
def test_plain_path_property(usages: list[int], target: int) -> None:
    """All pods ready with metrics: the count stays within the tolerance, else it is
    ceil(ratio × pods) (cpu past its initialization period, so readiness is settled)."""
    pods = [_pod(f"p{i}") for i in range(len(usages))]
    metrics = _metrics({f"p{i}": u for i, u in enumerate(usages)})
    current = len(pods)
    replicas, utilization, _ = resource_replicas(current, target, "cpu", Tolerances(), pods,
                                                 metrics, now=NOW)
    ratio = utilization / target
    assert utilization == sum(usages) * 100 // (1000 * len(usages))
    if 0.9 <= ratio <= 1.1:
        assert replicas == current
    else:
        assert replicas == math.ceil(ratio * current)
