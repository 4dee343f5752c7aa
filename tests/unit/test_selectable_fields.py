"""Field-selector support per kind: accepted labels, errors, and object field sets."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.fields import parse_field_selector
from pykcm.api.labels import SelectorParseError
from pykcm.apiserver.registry.selectable_fields import (
    check_field_selector,
    field_set,
    normalize_field_selector,
    supported_fields,
)

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"nodeName": "node-1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
             "serviceAccountName": "default", "hostNetwork": True},
    "status": {"phase": "Running", "podIP": "10.0.0.1",
               "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "nominatedNodeName": "n2"},
}


def test_pod_field_set() -> None:
    assert field_set("Pod", POD) == {
        "metadata.name": "p",
        "metadata.namespace": "ns",
        "spec.nodeName": "node-1",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "default",
        "spec.hostNetwork": "true",
        "status.phase": "Running",
        "status.podIP": "10.0.0.1",
        "status.nominatedNodeName": "n2",
    }
    bare = field_set("Pod", {"metadata": {"name": "q", "namespace": "ns"}})
    assert bare["spec.hostNetwork"] == "false"
    assert bare["spec.nodeName"] == "" and bare["status.phase"] == ""


def test_pod_selectors_match() -> None:
    fs = field_set("Pod", POD)
    assert parse_field_selector("spec.nodeName=node-1,status.phase!=Failed").matches(fs)
    assert not parse_field_selector("spec.nodeName=").matches(fs)
    unscheduled = field_set("Pod", {"metadata": {"name": "x", "namespace": "ns"}})
    assert parse_field_selector("spec.nodeName=").matches(unscheduled)


def test_event_field_set() -> None:
    event = {"metadata": {"name": "e", "namespace": "ns"},
             "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u",
                                "apiVersion": "v1", "resourceVersion": "5",
                                "fieldPath": "spec.containers{c}"},
             "reason": "Pulled", "type": "Normal", "reportingComponent": "kubelet",
             "source": {"component": "kubelet", "host": "n"}}
    fs = field_set("Event", event)
    assert fs["involvedObject.name"] == "p"
    assert fs["involvedObject.fieldPath"] == "spec.containers{c}"
    assert fs["source"] == "kubelet" and fs["reportingComponent"] == "kubelet"
    assert fs["reason"] == "Pulled" and fs["type"] == "Normal"
    # source falls back to the reporting controller.
    no_source = dict(event, source={}, reportingComponent="ctrl")
    assert field_set("Event", no_source)["source"] == "ctrl"


def test_other_field_sets() -> None:
    assert field_set("Namespace", {"metadata": {"name": "n"}, "status": {"phase": "Active"}}) == {
        "metadata.name": "n", "status.phase": "Active", "name": "n"}
    assert field_set("Node", {"metadata": {"name": "n"}, "spec": {"unschedulable": True}}) == {
        "metadata.name": "n", "spec.unschedulable": "true"}
    assert field_set("Node", {"metadata": {"name": "n"}})["spec.unschedulable"] == "false"
    assert field_set("Secret", {"metadata": {"name": "s", "namespace": "d"},
                                "type": "Opaque"})["type"] == "Opaque"
    svc = field_set("Service", {"metadata": {"name": "s", "namespace": "d"},
                                "spec": {"clusterIP": "None", "type": "ClusterIP"}})
    assert svc["spec.clusterIP"] == "None" and svc["spec.type"] == "ClusterIP"
    assert field_set("Job", {"metadata": {"name": "j", "namespace": "d"},
                             "status": {"succeeded": 3}})["status.successful"] == "3"
    assert field_set("Job", {"metadata": {"name": "j", "namespace": "d"}})[
        "status.successful"] == "0"
    assert field_set("ReplicaSet", {"metadata": {"name": "r", "namespace": "d"},
                                    "status": {"replicas": 2}})["status.replicas"] == "2"
    assert field_set("ConfigMap", {"metadata": {"name": "c", "namespace": "d"}}) == {
        "metadata.name": "c", "metadata.namespace": "d"}


@pytest.mark.parametrize(
    ("kind", "selector", "message"),
    [
        ("Pod", "spec.nodeName=a,status.phase=Running", None),
        ("Pod", "status.podIPs=10.0.0.1", None),
        ("Pod", "spec.foo=bar", "field label not supported: spec.foo"),
        ("Node", "spec.unschedulable=false", None),
        ("Node", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("Namespace", "status.phase=Active", None),
        ("Event", "involvedObject.uid=u,reason=X", None),
        ("Event", "message=x", "field label not supported: message"),
        ("Secret", "type=Opaque", None),
        ("Service", "spec.clusterIP=None", None),
        ("Job", "status.successful=1", None),
        ("Job", "spec.x=1", 'field label "spec.x" not supported for Job'),
        ("ConfigMap", "metadata.name=a", None),
        ("ConfigMap", "data.x=a",
         '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ("Deployment", "status.replicas=1",
         ('"status.replicas" is not a known field selector: only "metadata.name", '
         '"metadata.namespace"')),
        ("ReplicaSet", "status.replicas=1",
         ('"status.replicas" is not a known field selector: only "metadata.name", '
         '"metadata.namespace"')),
        ("Lease", "", None),
    ],
)
def test_check_field_selector(kind: str, selector: str, message: str | None) -> None:
    assert check_field_selector(kind, selector) == message
    assert check_field_selector(kind, parse_field_selector(selector)) == message


def test_check_field_selector_parse_error_propagates() -> None:
    with pytest.raises(SelectorParseError):
        check_field_selector("Pod", "nonsense")


def test_spec_host_alias() -> None:
    assert "spec.host" in supported_fields("Pod")
    sel = normalize_field_selector("Pod", parse_field_selector("spec.host=n1"))
    assert sel.requirements == (("spec.nodeName", "=", "n1"),)
    same = parse_field_selector("spec.host=n1")
    assert normalize_field_selector("Node", same) is same


_KINDS = st.sampled_from(["Pod", "Node", "Namespace", "Event", "Secret", "Service", "Job",
                          "ConfigMap", "Deployment", "Lease"])


@given(_KINDS)
def test_supported_fields_are_in_field_set_or_aliases(kind: str) -> None:
    obj = {"metadata": {"name": "x", "namespace": "y"}}
    fs = field_set(kind, obj)
    # Every field label a kind accepts is something its field set can answer
    # (or an alias / a label upstream accepts but never populates).
    for label in supported_fields(kind):
        assert label in fs or label in ("spec.host", "status.podIPs")
