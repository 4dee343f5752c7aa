"""Unit tests of the PodDisruptionBudget strategy (registry/policy): the create and update
rules, validation causes and the ``kubectl get pdb`` row. The messages are kube-apiserver
v1.36.2's (the same cases run on both servers in
tests/integration/test_poddisruptionbudgets_and_eviction.py and the differential corpus)."""

from __future__ import annotations

import copy
from typing import Any

from pykcm.apiserver.registry.lookup import strategy_for_kind


def _pdb(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "b", "namespace": "ns"}, "spec": spec}


def _errors(causes: list[Any]) -> list[str]:
    return [c.error() for c in causes]


def test_create_resets_the_status_and_update_keeps_it() -> None:
    st = strategy_for_kind("policy", "PodDisruptionBudget")
    obj = _pdb(minAvailable=1)
    obj["status"] = {"disruptionsAllowed": 5}
    st.prepare_for_create(obj)
    assert obj["status"] == {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0,
                             "expectedPods": 0}
    assert obj["metadata"]["generation"] == 1
    old = copy.deepcopy(obj)
    old["status"]["expectedPods"] = 3
    new = copy.deepcopy(obj)
    new["spec"]["minAvailable"] = 2
    st.prepare_for_update(new, old)
    assert new["status"]["expectedPods"] == 3 and new["metadata"]["generation"] == 2
    status_write = copy.deepcopy(old)
    status_write["spec"] = {"minAvailable": 9}
    status_write["status"]["expectedPods"] = 4
    stored = st.prepare_for_status_update(status_write, old)
    assert stored["spec"] == {"minAvailable": 1} and stored["status"]["expectedPods"] == 4


def test_spec_validation() -> None:
    st = strategy_for_kind("policy", "PodDisruptionBudget")
    assert st.validate_create(_pdb(minAvailable="100%")) == []
    assert _errors(st.validate_create(_pdb(minAvailable=1, maxUnavailable="120%", selector={
        "matchLabels": {"a": "b"}}))) == [
        ('spec: Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"a":"b"}},'
        '"MaxUnavailable":"120%","UnhealthyPodEvictionPolicy":null}: minAvailable and '
        "maxUnavailable cannot be both set"),
        'spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%']
    assert _errors(st.validate_create(_pdb(maxUnavailable=-2,
                                           unhealthyPodEvictionPolicy="Never"))) == [
        "spec.maxUnavailable: Invalid value: -2: must be greater than or equal to 0",
        ('spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: '
        '"AlwaysAllow", "IfHealthyBudget"')]


def test_names_need_only_fit_a_path_segment() -> None:
    st = strategy_for_kind("policy", "PodDisruptionBudget")
    odd = _pdb(minAvailable=1)
    odd["metadata"]["name"] = "Bad_Name.x"
    assert st.validate_create(odd) == []
    odd["metadata"]["name"] = "a/b"
    assert _errors(st.validate_create(odd)) == [
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"]


def test_update_keeps_accepting_a_label_value_the_old_selector_had() -> None:
    st = strategy_for_kind("policy", "PodDisruptionBudget")
    bad = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["not valid!"]}]}
    old = _pdb(minAvailable=1, selector=bad)
    assert len(st.validate_create(old)) == 1
    new = copy.deepcopy(old)
    new["spec"]["minAvailable"] = 2
    assert st.validate_update(new, old) == []


def test_status_validation() -> None:
    st = strategy_for_kind("policy", "PodDisruptionBudget")
    old = _pdb(minAvailable=1)
    new = copy.deepcopy(old)
    new["status"] = {"currentHealthy": -1, "conditions": [
        {"type": "DisruptionAllowed", "status": "True", "reason": "Sufficient Pods",
         "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "DisruptionAllowed", "status": "False", "reason": "",
         "lastTransitionTime": None}]}
    assert _errors(st.validate_status_update(new, old)) == [
        ('status.conditions[0].reason: Invalid value: "Sufficient Pods": a condition reason '
        "must start with alphabetic character, optionally followed by a string of alphanumeric "
        "characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
        "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', "
        "regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"),
        'status.conditions[1].type: Duplicate value: "DisruptionAllowed"',
        "status.conditions[1].lastTransitionTime: Required value",
        "status.conditions[1].reason: Required value",
        "status.currentHealthy: Invalid value: -1: must be greater than or equal to 0"]


def test_printer_row() -> None:
    st = strategy_for_kind("policy", "PodDisruptionBudget")
    obj = _pdb(maxUnavailable="25%")
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    obj["status"] = {"disruptionsAllowed": 2}
    row = st.printer.row(obj, 0)
    assert row.cells[:4] == ["b", "N/A", "25%", 2]
    assert [c["name"] for c in st.printer.columns] == [
        "Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"]
