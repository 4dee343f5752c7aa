"""Unit tests of the HorizontalPodAutoscaler strategy (registry/autoscaling) and the
autoscaling/v1 ⇄ v2 conversion. Messages and shapes are kube-apiserver v1.36.2's (checked
against the real server; the same objects run on both servers in
tests/integration/test_horizontal_pod_autoscaler.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

from pykcm.apiserver.registry.autoscaling import v1_conversion
from pykcm.apiserver.registry.autoscaling.horizontalpodautoscaler import format_hpa_metrics
from pykcm.apiserver.registry.lookup import strategy_for_kind


def _hpa(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                               "name": "web"}, "maxReplicas": 10}
    base.update(spec)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "ns"}, "spec": base}


def test_defaults_min_replicas_cpu_metric_and_behavior_rules() -> None:
    st = strategy_for_kind("autoscaling", "HorizontalPodAutoscaler")
    obj = _hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}})
    st.default(obj, create=True)
    spec = obj["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]
    assert spec["behavior"]["scaleUp"] == {
        "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                     {"type": "Percent", "value": 100, "periodSeconds": 15}]}
    # the scale-down window given is kept; unset it stays unset (the controller's flag)
    assert spec["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 60, "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def test_status_split() -> None:
    st = strategy_for_kind("autoscaling", "HorizontalPodAutoscaler")
    obj = _hpa()
    obj["status"] = {"currentReplicas": 3}
    st.prepare_for_create(obj)
    assert obj["status"] == {"currentMetrics": None, "desiredReplicas": 0}
    old = copy.deepcopy(obj)
    old["status"] = {"currentReplicas": 2, "desiredReplicas": 2}
    new = copy.deepcopy(old)
    new["status"] = {"currentReplicas": 7}
    new["spec"]["maxReplicas"] = 5
    st.prepare_for_update(new, old)
    assert new["status"] == {"currentReplicas": 2, "desiredReplicas": 2}
    write = copy.deepcopy(old)
    write["spec"]["maxReplicas"] = 99
    write["status"] = {"currentReplicas": 4, "desiredReplicas": 4}
    stored = st.prepare_for_status_update(write, old)
    assert stored["spec"]["maxReplicas"] == 10 and stored["status"]["currentReplicas"] == 4


def test_validation_messages() -> None:
    st = strategy_for_kind("autoscaling", "HorizontalPodAutoscaler")
    obj = _hpa(minReplicas=5, maxReplicas=2, metrics=[
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 0}}},
        {"type": "Pods", "pods": {"metric": {"name": ""}, "target": {"type": "AverageValue"}}}],
        behavior={"scaleUp": {"selectPolicy": "Bogus", "policies": [
            {"type": "Pods", "value": 0, "periodSeconds": 2000}]}, "scaleDown": {"policies": []}})
    obj["spec"]["scaleTargetRef"]["apiVersion"] = ""
    errs = [c.error() for c in st.validate_create(obj)]
    assert errs == [
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        'spec.scaleTargetRef.apiVersion: Invalid value: "": apiVersion must specify API group',
        ("spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater "
        "than 0"),
        "spec.metrics[1].pods.metric.name: Required value: must specify a metric name",
        ("spec.metrics[1].pods.target.averageValue: Required value: must specify a positive "
        "target averageValue"),
        ('spec.behavior.scaleUp.selectPolicy: Unsupported value: "Bogus": supported values: '
        '"Disabled", "Max", "Min"'),
        "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
        ("spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 2000: must be less "
        "than or equal to 1800"),
        "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
    ]
    # a ReplicationController target needs no API group
    rc = _hpa()
    rc["spec"]["scaleTargetRef"] = {"apiVersion": "v1", "kind": "ReplicationController",
                                    "name": "r"}
    assert st.validate_create(rc) == []


def test_targets_cell() -> None:
    specs = [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 50}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {
            "type": "AverageValue", "averageValue": "64Mi"}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {
            "type": "AverageValue", "averageValue": "1k"}}}]
    assert format_hpa_metrics(specs[:1], []) == "cpu: <unknown>/50%"
    statuses = [{"type": "Resource", "resource": {"name": "cpu", "current": {
        "averageUtilization": 40, "averageValue": "40m"}}},
        {"type": "Resource", "resource": {"name": "memory", "current": {
            "averageValue": "32Mi"}}}]
    assert format_hpa_metrics(specs, statuses) == (
        "cpu: 40%/50%, memory: 32Mi/64Mi + 1 more...")
    assert format_hpa_metrics([], []) == "<none>"


def test_v1_view_carries_other_metrics_behavior_and_conditions_in_annotations() -> None:
    v2 = _hpa(minReplicas=2, metrics=[
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {
            "type": "AverageValue", "averageValue": "10"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 50}}}],
        behavior={"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                              "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}})
    v2["status"] = {"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": 70, "averageValue": "70m"}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                        "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    v1 = v1_conversion.to_v1(v2)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": v2["spec"]["scaleTargetRef"], "minReplicas": 2,
                          "maxReplicas": 10, "targetCPUUtilizationPercentage": 50}
    assert v1["status"] == {"currentReplicas": 2, "desiredReplicas": 3,
                            "currentCPUUtilizationPercentage": 70}
    ann = v1["metadata"]["annotations"]
    assert json.loads(ann[v1_conversion.METRICS]) == [
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]
    assert ann[v1_conversion.BEHAVIOR].startswith('{"ScaleUp":{"StabilizationWindowSeconds":0,')
    back = v1_conversion.to_v2(v1)
    assert back["spec"]["metrics"] == v2["spec"]["metrics"]
    assert back["spec"]["behavior"] == {"scaleUp": v2["spec"]["behavior"]["scaleUp"]}
    assert back["status"]["conditions"] == v2["status"]["conditions"]
    assert "annotations" not in back["metadata"]


def test_v1_body_without_target_gets_the_default_cpu_metric() -> None:
    v2 = v1_conversion.to_v2({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                              "metadata": {"name": "h"}, "spec": {
                                  "scaleTargetRef": {"kind": "Deployment", "name": "web",
                                                     "apiVersion": "apps/v1"},
                                  "maxReplicas": 3}})
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]
