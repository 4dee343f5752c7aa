"""The disruption controller's status computation (pure functions) and the shared
PodDisruptionBudget condition helpers."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.conditions import set_status_condition
from pykcm.api.poddisruptionbudget import (
    conditions_are_up_to_date,
    update_disruption_allowed_condition,
)
from pykcm.api.timestamps import format_time
from pykcm.controllers.disruption.disruption import (
    build_disrupted_pod_map,
    count_healthy_pods,
    desired_healthy,
    disruptions_allowed,
    go_label_selector_string,
    needs_scale,
)

NOW = 1_800_000_000.0


def pod(name: str, ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = format_time(NOW)
    return {"metadata": meta, "status": {"conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}


@given(st.integers(0, 100), st.integers(0, 10_000))
def test_percentages_round_up_as_get_scaled_value_from_int_or_percent(
        pct: int, expected: int) -> None:
    # upstream: math.Ceil(float64(value) * float64(total) / 100) for both fields
    scaled = math.ceil(float(pct) * float(expected) / 100)
    assert desired_healthy({"minAvailable": f"{pct}%"}, expected) == scaled
    assert desired_healthy({"maxUnavailable": f"{pct}%"}, expected) == max(0, expected - scaled)


@given(st.integers(0, 50), st.integers(0, 50))
def test_integers_are_taken_as_they_are(n: int, expected: int) -> None:
    assert desired_healthy({"minAvailable": n}, expected) == n
    assert desired_healthy({"maxUnavailable": n}, expected) == max(0, expected - n)


def test_max_unavailable_wins_and_which_specs_need_the_scale() -> None:
    assert desired_healthy({"minAvailable": 1, "maxUnavailable": 1}, 5) == 4
    assert desired_healthy({}, 5) == 0
    assert needs_scale({"maxUnavailable": 1}) and needs_scale({"minAvailable": "50%"})
    assert not needs_scale({"minAvailable": 2}) and not needs_scale({})


@given(st.integers(0, 20), st.integers(0, 20), st.integers(-1, 20))
def test_disruptions_allowed_never_negative_and_zero_without_expected_pods(
        current: int, desired: int, expected: int) -> None:
    allowed = disruptions_allowed(current, desired, expected)
    assert allowed >= 0
    assert allowed == (max(0, current - desired) if expected > 0 else 0)


def test_healthy_pods_exclude_unready_deleting_and_recently_disrupted() -> None:
    pods = [pod("a"), pod("b", ready=False), pod("c", deleting=True), pod("d"), pod("e")]
    disrupted = {"d": format_time(NOW - 10), "e": format_time(NOW - 200)}
    # d was evicted 10 s ago (within the 120 s timeout); e's entry is stale and counts again
    assert count_healthy_pods(pods, disrupted, NOW) == 2


def test_disrupted_pod_map_keeps_fresh_entries_and_reports_expired_ones() -> None:
    pods = [pod("fresh"), pod("old"), pod("gone-soon", deleting=True), pod("other")]
    disrupted = {"fresh": format_time(NOW - 30), "old": format_time(NOW - 121),
                 "gone-soon": format_time(NOW - 5), "missing": format_time(NOW)}
    kept, recheck, expired = build_disrupted_pod_map(pods, disrupted, NOW)
    assert kept == {"fresh": format_time(NOW - 30)}
    assert recheck == NOW - 30 + 120
    assert [p["metadata"]["name"] for p in expired] == ["old"]
    assert build_disrupted_pod_map(pods, None, NOW) == ({}, None, [])


def test_the_disruption_allowed_condition_follows_disruptions_allowed() -> None:
    status: dict[str, Any] = {"disruptionsAllowed": 1, "observedGeneration": 3}
    update_disruption_allowed_condition(status, NOW)
    assert status["conditions"] == [{"type": "DisruptionAllowed", "status": "True",
                                     "observedGeneration": 3,
                                     "lastTransitionTime": format_time(NOW),
                                     "reason": "SufficientPods", "message": ""}]
    pdb = {"metadata": {"generation": 3}, "status": status}
    assert conditions_are_up_to_date(pdb)
    status["disruptionsAllowed"] = 0
    assert not conditions_are_up_to_date(pdb)
    update_disruption_allowed_condition(status, NOW + 60)
    assert status["conditions"][0]["status"] == "False"
    assert status["conditions"][0]["reason"] == "InsufficientPods"
    assert status["conditions"][0]["lastTransitionTime"] == format_time(NOW + 60)
    assert conditions_are_up_to_date(pdb)
    pdb["metadata"]["generation"] = 4
    assert not conditions_are_up_to_date(pdb)


def test_set_status_condition_keeps_the_transition_time_while_the_status_holds() -> None:
    conds: list[dict[str, Any]] = []
    assert set_status_condition(conds, {"type": "X", "status": "False", "reason": "A"}, NOW)
    assert not set_status_condition(conds, {"type": "X", "status": "False", "reason": "A"},
                                    NOW + 5)
    assert set_status_condition(conds, {"type": "X", "status": "False", "reason": "B",
                                         "message": "m"}, NOW + 5)
    assert conds == [{"type": "X", "status": "False", "lastTransitionTime": format_time(NOW),
                      "reason": "B", "message": "m"}]


def test_label_selector_as_go_prints_it() -> None:
    assert go_label_selector_string(None) == "nil"
    assert go_label_selector_string({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
        {"key": "k", "operator": "In", "values": ["x", "y"]}]}) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:"
        "[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}")
