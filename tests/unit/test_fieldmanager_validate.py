"""SMD's typed conversion of an applied configuration: scalar types, shapes, undeclared
fields, with kube-apiserver v1.36.2's messages (as it answered these configurations).

The corpus family scalar-types in tests/differential/fieldmanager compares them with the
real server; these pin the wording and Go's value printing without it.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager import FieldManager
from pykcm.apiserver.fieldmanager.schema import for_builtin
from pykcm.apiserver.fieldmanager.validate import _go_float, config_errors, go_sharp_v, go_v

_CASES = [
    ("ConfigMap", {"data": {"a": 1}},
     ".data.a: expected string, got &value.valueUnstructured{Value:1}"),
    ("ConfigMap", {"data": "x"}, ".data: expected map, got &{x}"),
    ("Deployment", {"spec": {"replicas": "abc"}},
     ".spec.replicas: expected numeric (int or float), got string"),
    ("Deployment", {"spec": 5}, ".spec: expected map, got &{5}"),
    ("Deployment", {"metadata": {"labels": ["a"]}}, ".metadata.labels: expected map, got &{[a]}"),
    ("Deployment", {"spec": {"paused": "yes"}}, ".spec.paused: expected boolean, got &{yes}"),
    ("Deployment", {"spec": {"bogus": 1}}, ".spec.bogus: field not declared in schema"),
]


def _schema(kind: str) -> Any:
    return for_builtin("apps", "v1", kind) if kind == "Deployment" else for_builtin("", "v1",
                                                                                     kind)


@pytest.mark.parametrize("kind,config,message", _CASES)
def test_kube_apiserver_s_messages(kind: str, config: dict[str, Any], message: str) -> None:
    assert config_errors(_schema(kind), config) == [message]


def test_the_500_names_the_object_and_lists_several_errors() -> None:
    fm = FieldManager(_schema("ConfigMap"), "", "v1", "ConfigMap")
    with pytest.raises(StatusError) as e:
        fm.check_applied({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "c", "namespace": "n"}, "data": {"a": 1}})
    assert e.value.code == 500
    assert e.value.message == ("failed to create typed patch object (n/c; /v1, Kind=ConfigMap): "
                               ".data.a: expected string, got "
                               "&value.valueUnstructured{Value:1}")
    with pytest.raises(StatusError) as e:
        fm.check_applied({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                          "data": {"a": 1, "b": True}})
    assert e.value.message.endswith("): errors:\n  .data.a: expected string, got "
                                    "&value.valueUnstructured{Value:1}\n  .data.b: expected "
                                    "string, got &value.valueUnstructured{Value:true}")


def test_untyped_values_and_valid_configurations_pass() -> None:
    d = _schema("Deployment")
    assert config_errors(d, {"spec": {"replicas": 1.5, "template": {"metadata": {
        "creationTimestamp": None}, "spec": {"containers": [{"name": "c", "resources": {
            "limits": {"cpu": 1}}, "ports": [{"containerPort": 80}]}]}},
        "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}}}}) == []


def test_go_printing() -> None:
    assert [_go_float(f) for f in (1.0, 1.5, 1e6, 123456.0, 1234567.0, 1e-5, -2.5)] == [
        "1", "1.5", "1e+06", "123456", "1.234567e+06", "1e-05", "-2.5"]
    assert go_v({"b": [1, "x"], "a": None}) == "map[a:<nil> b:[1 x]]"
    assert go_sharp_v({"b": [1, "x"], "a": None}) == (
        'map[string]interface {}{"a":interface {}(nil), "b":[]interface {}{1, "x"}}')
