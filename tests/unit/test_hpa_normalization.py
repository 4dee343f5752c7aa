"""Unit tests of the HPA's normalization (pykcm/controllers/podautoscaler/normalization.py):
the downscale stabilization window, the default scale-up limit, behavior windows and rate
policies (selectPolicy Max/Min/Disabled), with an injected clock instead of waiting."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pykcm.controllers.podautoscaler.normalization import Normalizer


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_downscale_is_stabilized_for_the_window() -> None:
    clock = Clock()
    n = Normalizer(downscale_stabilization=300, now=clock)
    n.record_initial("k", 4)
    d = n.normalize("k", 4, 2, 1, 10)
    assert (d.replicas, d.able_reason) == (4, "ScaleDownStabilized")
    assert (d.limited, d.limited_reason) == (False, "DesiredWithinRange")
    clock.t += 301
    d = n.normalize("k", 4, 2, 1, 10)
    assert (d.replicas, d.able_reason) == (2, "ReadyForNewScale")


def test_default_scale_up_limit_and_min_max() -> None:
    n = Normalizer(now=Clock())
    d = n.normalize("k", 1, 10, 1, 10)
    assert (d.replicas, d.limited, d.limited_reason) == (4, True, "ScaleUpLimit")
    d = n.normalize("a", 8, 30, 1, 10)
    assert (d.replicas, d.limited_reason) == (10, "TooManyReplicas")
    d = n.normalize("b", 3, 0, 2, 10)
    assert (d.replicas, d.limited_reason) == (2, "TooFewReplicas")


_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
       "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100,
                                              "periodSeconds": 15}]}


def test_behavior_rate_counts_the_events_in_the_period() -> None:
    clock = Clock()
    n = Normalizer(now=clock)
    behavior: dict[str, Any] = {"scaleUp": _UP, "scaleDown": {**_DOWN,
                                                              "stabilizationWindowSeconds": 0}}
    d = n.normalize_with_behaviors("k", 2, 20, 1, 50, behavior)
    assert (d.replicas, d.limited_reason) == (6, "ScaleUpLimit")  # max(2+4, 2×2)
    n.store_scale_event("k", behavior, 2, 6)
    clock.t += 5
    # within the same 15 s period the policies start from 2 again: still at most 6
    d = n.normalize_with_behaviors("k", 6, 20, 1, 50, behavior)
    assert (d.replicas, d.limited_reason) == (6, "ScaleUpLimit")
    clock.t += 11
    d = n.normalize_with_behaviors("k", 6, 20, 1, 50, behavior)
    assert d.replicas == 12


def test_behavior_min_and_disabled_select_policies() -> None:
    n = Normalizer(now=Clock())
    up_min = {**_UP, "selectPolicy": "Min"}
    d = n.normalize_with_behaviors("k", 10, 40, 1, 50, {"scaleUp": up_min, "scaleDown": _DOWN})
    assert d.replicas == 14  # min(10+4, 20)
    disabled = {**_DOWN, "selectPolicy": "Disabled", "stabilizationWindowSeconds": 0}
    d = n.normalize_with_behaviors("j", 10, 2, 1, 50, {"scaleUp": _UP, "scaleDown": disabled})
    assert (d.replicas, d.limited_reason) == (10, "ScaleDownLimit")


def test_scale_up_window_takes_the_lowest_recommendation() -> None:
    clock = Clock()
    n = Normalizer(now=clock)
    up = {**_UP, "stabilizationWindowSeconds": 60}
    behavior = {"scaleUp": up, "scaleDown": _DOWN}
    n.record_initial("k", 3)
    d = n.normalize_with_behaviors("k", 3, 8, 1, 50, behavior)
    assert (d.replicas, d.able_reason) == (3, "ScaleUpStabilized")
    clock.t += 61
    d = n.normalize_with_behaviors("k", 3, 8, 1, 50, behavior)
    assert d.replicas == 7  # the window's lowest is 8 now; the rate allows 3+4


@given(st.integers(1, 100), st.integers(0, 200), st.integers(1, 20), st.integers(0, 80))
def test_result_stays_within_min_and_max(current: int, desired: int, lo: int, extra: int
                                         ) -> None:
    hi = lo + extra
    n = Normalizer(now=Clock())
    for d in (n.normalize("a", current, desired, lo, hi),
              n.normalize_with_behaviors("b", current, desired, lo, hi,
                                         {"scaleUp": _UP, "scaleDown": _DOWN})):
        if lo <= current <= hi:
            assert lo <= d.replicas <= hi
        assert d.limited == (d.limited_reason != "DesiredWithinRange")
