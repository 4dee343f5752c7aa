"""The admissionregistration.k8s.io/v1 admission policy and binding strategies
(registry/admissionregistration): defaults, the status/spec split, generation, validation
causes (messages checked against kube-apiserver v1.36.2 by the differential case
``admissionregistration/admission-policies``), warnings and printers."""

from __future__ import annotations

import copy
from typing import Any

from pykcm.apiserver.registry.admissionregistration.policy_fields import param_ref_cell
from pykcm.apiserver.registry.lookup import strategy_for_kind

G = "admissionregistration.k8s.io"
RULE = {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
        "resources": ["deployments"]}


def _fields(causes: list[Any]) -> list[tuple[str, str]]:
    return [(c.field, c.body()) for c in causes]


def _vap(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {
        "matchConstraints": {"resourceRules": [dict(RULE)]},
        "validations": [{"expression": "true"}], **spec}}


def test_policy_defaults_and_empty_status_on_create() -> None:
    st = strategy_for_kind(G, "ValidatingAdmissionPolicy")
    obj = _vap()
    obj["status"] = {"typeChecking": {}}
    st.default(obj, create=True)
    st.prepare_for_create(obj)
    assert obj["spec"]["failurePolicy"] == "Fail"
    assert obj["spec"]["matchConstraints"] == {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "resourceRules": [{**RULE, "scope": "*"}]}
    assert obj["status"] == {} and obj["metadata"]["generation"] == 1
    assert st.validate_create(obj) == []
    warnings = st.warnings_on_create(obj)
    assert len(warnings) == 1 and "never enforced" in warnings[0]


def test_policy_update_keeps_status_and_moves_generation_on_spec_changes() -> None:
    st = strategy_for_kind(G, "ValidatingAdmissionPolicy")
    old = _vap()
    st.default(old, create=True)
    st.prepare_for_create(old)
    old["status"] = {"observedGeneration": 1}
    same = copy.deepcopy(old)
    same["status"] = {}
    st.prepare_for_update(same, old)
    assert same["metadata"]["generation"] == 1 and same["status"] == {"observedGeneration": 1}
    changed = copy.deepcopy(old)
    changed["spec"]["failurePolicy"] = "Ignore"
    st.prepare_for_update(changed, old)
    assert changed["metadata"]["generation"] == 2


def test_policy_validation_causes() -> None:
    st = strategy_for_kind(G, "ValidatingAdmissionPolicy")
    empty = {"metadata": {"name": "p"}, "spec": {"failurePolicy": "Fail"}}
    why = "validations or auditAnnotations must contain at least one item"
    assert _fields(st.validate_create(empty)) == [
        ("spec.matchConstraints", "Required value"),
        ("spec.validations", f"Required value: {why}"),
        ("spec.auditAnnotations", f"Required value: {why}")]
    bad = _vap(failurePolicy="Fail", variables=[{"name": "in", "expression": "1"}],
               validations=[{"expression": "x", "message": "a\nb", "reason": "Gone"}])
    bad["spec"]["matchConstraints"].update(matchPolicy="Equivalent", namespaceSelector={},
                                           objectSelector={})
    bad["spec"]["matchConstraints"]["resourceRules"] = [
        {**RULE, "resources": ["*/*", "pods"], "operations": ["*", "CREATE"]}]
    assert _fields(st.validate_create(bad)) == [
        ("spec.matchConstraints.resourceRules[0].operations",
         ("Invalid value: [\"*\",\"CREATE\"]: if '*' is present, must not specify other "
         "operations")),
        ("spec.matchConstraints.resourceRules[0].resources",
         ("Invalid value: [\"*/*\",\"pods\"]: if '*/*' is present, must not specify other "
         "resources")),
        ("spec.variables[0].name", 'Invalid value: "in": must be a valid CEL identifier'),
        ("spec.validations[0].message", 'Invalid value: "a\\nb": must not contain line breaks'),
        ("spec.validations[0].reason", ('Unsupported value: "Gone": supported values: '
                                       '"Forbidden", "Invalid", "RequestEntityTooLarge"'))]


def test_policy_status_update_validates_the_expression_warnings() -> None:
    st = strategy_for_kind(G, "ValidatingAdmissionPolicy")
    old = _vap()
    st.default(old, create=True)
    st.prepare_for_create(old)
    new = copy.deepcopy(old)
    new["status"] = {"typeChecking": {"expressionWarnings": [{"fieldRef": " "}]}}
    assert _fields(st.validate_status_update(new, old)) == [
        ("status.typeChecking.expressionWarnings[0].warning", "Required value"),
        ("status.typeChecking.expressionWarnings[0].fieldRef", "Required value")]


def test_mutating_policy_operations_mutations_and_reinvocation() -> None:
    st = strategy_for_kind(G, "MutatingAdmissionPolicy")
    obj = {"metadata": {"name": "m"}, "spec": {
        "matchConstraints": {"resourceRules": [{**RULE, "operations": ["DELETE"]}]},
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}},
                      {"patchType": "ApplyConfiguration"}]}}
    st.default(obj, create=True)
    assert _fields(st.validate_create(obj)) == [
        ("spec.matchConstraints.resourceRules.operations",
         'Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"'),
        ("spec.mutations[1].applyConfiguration",
         "Required value: must be specified when patchType is ApplyConfiguration"),
        ("spec.reinvocationPolicy", "Required value")]
    assert "status" not in obj


def test_binding_validation_and_printer() -> None:
    st = strategy_for_kind(G, "ValidatingAdmissionPolicyBinding")
    obj: dict[str, Any] = {"metadata": {"name": "b.static.k8s.io"}, "spec": {
        "policyName": "p", "validationActions": ["Deny", "Warn"],
        "paramRef": {"name": "cfg", "parameterNotFoundAction": "Deny"},
        "matchResources": {}}}
    st.default(obj, create=True)
    assert obj["spec"]["matchResources"] == {"matchPolicy": "Equivalent",
                                             "namespaceSelector": {}, "objectSelector": {}}
    [cause] = st.validate_create(obj)
    assert cause.field == "spec.validationActions"
    assert cause.body().startswith('Invalid value: ["Deny","Warn"]: must not contain both')
    assert st.warnings_on_create(obj)[0].startswith(
        'metadata.name: names ending with ".static.k8s.io" are reserved')
    row = st.printer.row(obj, 0).cells
    assert row[:3] == ["b.static.k8s.io", "p", "*/cfg"]
    mst = strategy_for_kind(G, "MutatingAdmissionPolicyBinding")
    assert [c.field for c in mst.validate_create(
        {"metadata": {"name": "m"}, "spec": {"paramRef": {}}})] == [
        "spec.policyName", "spec.paramRef", "spec.paramRef.parameterNotFoundAction"]


def test_param_ref_cells() -> None:
    assert param_ref_cell({}) == "<unset>"
    assert param_ref_cell({"paramRef": {"name": "n", "namespace": "ns"}}) == "ns/n"
    assert param_ref_cell({"paramRef": {"selector": {
        "matchLabels": {"a": "b"},
        "matchExpressions": [{"key": "c", "operator": "In", "values": ["d", "e"]}]}}}) == (
        "&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:"
        "[]LabelSelectorRequirement{LabelSelectorRequirement{Key:c,Operator:In,"
        "Values:[d e],},},}")
