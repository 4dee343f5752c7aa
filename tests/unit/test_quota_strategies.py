"""Unit tests of the ResourceQuota and LimitRange strategies (registry/core): defaults,
canonical quantities, validation causes and the quota Table row. The messages are
kube-apiserver v1.36.2's (the same cases run on both servers in
tests/integration/test_resource_quota_admission.py)."""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.lookup import strategy_for_kind


def _errors(causes: list[Any]) -> list[str]:
    return [c.error() for c in causes]


def test_limit_range_defaults_follow_max_then_default_then_min() -> None:
    st = strategy_for_kind("", "LimitRange")
    lr: dict[str, Any] = {"metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2000m"}, "min": {"cpu": "100m", "memory": "1Mi"},
         "defaultRequest": {"memory": "64Mi"}},
        {"type": "Pod", "max": {"memory": "1Gi"}}]}}
    st.default(lr, create=True)
    assert lr["spec"]["limits"] == [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m", "memory": "1Mi"},
         "default": {"cpu": "2"}, "defaultRequest": {"memory": "64Mi", "cpu": "2"}},
        {"type": "Pod", "max": {"memory": "1Gi"}}]
    assert st.validate_create(lr) == []


def test_limit_range_validation() -> None:
    st = strategy_for_kind("", "LimitRange")
    lr: dict[str, Any] = {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"limits": [
        {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}, {"type": "Foo"},
        {"type": "Pod", "default": {"cpu": "1"}},
        {"type": "PersistentVolumeClaim", "max": {"memory": "1"}}]}}
    st.default(lr, create=True)
    assert _errors(st.validate_create(lr)) == [
        'spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1',
        ('spec.limits[0].defaultRequest[cpu]: Invalid value: "1": min value 2 is greater than '
        "default request value 1"),
        ('spec.limits[0].default[cpu]: Invalid value: "2": min value 2 is greater than default '
        "value 1"),
        ('spec.limits[1].type: Invalid value: "Foo": must be a standard limit type or fully '
        "qualified"),
        "spec.limits[2].default: Forbidden: may not be specified when `type` is 'Pod'",
        ("spec.limits[3].limits: Required value: either minimum or maximum storage value is "
        "required, but neither was provided")]


def test_resource_quota_canonical_status_split_and_validation() -> None:
    st = strategy_for_kind("", "ResourceQuota")
    q: dict[str, Any] = {"metadata": {"name": "q", "namespace": "ns"},
                         "spec": {"hard": {"requests.cpu": "1000m", "foo": "1",
                                           "limits.cpu": "500m"}},
                         "status": {"used": {"pods": "1"}}}
    st.prepare_for_create(q)
    st.default(q, create=True)
    assert q["status"] == {} and q["spec"]["hard"]["requests.cpu"] == "1"
    assert _errors(st.validate_create(q)) == [
        ('spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully '
        "qualified"),
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota']
    assert st.warnings_on_create(q) == [
        "ResourceQuota requests.cpu (1) should be less than limits.cpu (500m)"]
    new = {**q, "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}}
    assert _errors(st.validate_update(new, q)) == [
        'spec.scopes: Invalid value: ["BestEffort"]: field is immutable']


def test_quota_table_row_splits_requests_and_limits() -> None:
    st = strategy_for_kind("", "ResourceQuota")
    q = {"metadata": {"name": "q", "creationTimestamp": "2026-01-01T00:00:00Z"},
         "status": {"hard": {"pods": "2", "limits.memory": "1Gi", "requests.cpu": "1500m"},
                    "used": {"pods": "1", "requests.cpu": "500m"}}}
    row = st.printer.row(q, 1767225600 * 10**9 + 5 * 10**9)
    assert row.cells == ["q", "pods: 1/2, requests.cpu: 500m/1500m", "limits.memory: 0/1Gi",
                         "5s"]
