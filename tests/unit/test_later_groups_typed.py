"""Protobuf and Go typed decoding of the groups added to the generated tables last:
rbac.authorization.k8s.io, certificates.k8s.io, admissionregistration.k8s.io,
flowcontrol.apiserver.k8s.io, resource.k8s.io and apiregistration.k8s.io (all v1).

Per group: an object in Go's JSON form survives a protobuf round trip unchanged (the
encoder writes what gogo-protobuf writes, the decoder reads it back as Go's JSON encoder
prints it); a value of the wrong JSON type is refused with Go's decoder message; an
``omitempty`` field at its zero value is dropped from what would be stored.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from pykcm.api.protobuf import decode_k8s_protobuf
from pykcm.api.protobuf_encode import encode_k8s_protobuf
from pykcm.apiserver.serializer.go_types import GoDecodeError, check_object, drop_go_empty

META = {"name": "x", "uid": "0b9e7c6e-0000-4000-8000-000000000001", "resourceVersion": "7",
        "creationTimestamp": "2026-12-02T07:00:00Z", "labels": {"a": "b"}}

OBJECTS: dict[str, dict[str, Any]] = {
    "role": {
        "kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {**META, "namespace": "ns"},
        "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
                   "resourceNames": ["p"]}],
    },
    "clusterrole-aggregated": {
        "kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": META,
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]},
    },
    "clusterrolebinding": {
        "kind": "ClusterRoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": META,
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                     {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                      "name": "devs"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
    },
    "csr": {
        "kind": "CertificateSigningRequest", "apiVersion": "certificates.k8s.io/v1",
        "metadata": META,
        "spec": {"request": base64.b64encode(b"-----BEGIN CERTIFICATE REQUEST-----").decode(),
                 "signerName": "example.com/signer", "expirationSeconds": 3600,
                 "usages": ["client auth", "digital signature"], "username": "jane",
                 "uid": "u1", "groups": ["system:authenticated"]},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "R",
                                   "message": "ok",
                                   "lastUpdateTime": "2026-12-02T07:00:01Z",
                                   "lastTransitionTime": "2026-12-02T07:00:01Z"}],
                   "certificate": base64.b64encode(b"cert").decode()},
    },
    "validatingwebhookconfiguration": {
        "kind": "ValidatingWebhookConfiguration",
        "apiVersion": "admissionregistration.k8s.io/v1", "metadata": META,
        "webhooks": [{
            "name": "v.example.com",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "/v",
                                         "port": 443},
                             "caBundle": base64.b64encode(b"ca").decode()},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["pods"], "scope": "*"}],
            "failurePolicy": "Fail", "matchPolicy": "Equivalent",
            "namespaceSelector": {}, "objectSelector": {}, "sideEffects": "None",
            "timeoutSeconds": 10, "admissionReviewVersions": ["v1"]}],
    },
    "validatingadmissionpolicy": {
        "kind": "ValidatingAdmissionPolicy",
        "apiVersion": "admissionregistration.k8s.io/v1", "metadata": META,
        "spec": {"failurePolicy": "Fail",
                 "validations": [{"expression": "object.spec.replicas < 5"}]},
        "status": {},
    },
    "flowschema": {
        "kind": "FlowSchema", "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "metadata": META,
        "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
                 "matchingPrecedence": 1000, "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "Group", "group": {"name": "devs"}}],
                            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                               "resources": ["*"], "clusterScope": True,
                                               "namespaces": ["*"]}]}]},
        "status": {"conditions": [{"type": "Dangling", "status": "False",
                                   "lastTransitionTime": "2026-12-02T07:00:01Z",
                                   "reason": "Found", "message": "m"}]},
    },
    "prioritylevelconfiguration": {
        "kind": "PriorityLevelConfiguration",
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "metadata": META,
        "spec": {"type": "Limited",
                 "limited": {"nominalConcurrencyShares": 0, "lendablePercent": 0,
                             "limitResponse": {"type": "Queue", "queuing": {
                                 "queues": 64, "handSize": 6, "queueLengthLimit": 50}}}},
        "status": {},
    },
    "apiservice": {
        "kind": "APIService", "apiVersion": "apiregistration.k8s.io/v1",
        "metadata": {**META, "name": "v1.example.com"},
        "spec": {"service": {"namespace": "ns", "name": "api", "port": 443},
                 "group": "example.com", "version": "v1", "insecureSkipTLSVerify": True,
                 "groupPriorityMinimum": 100, "versionPriority": 10},
        "status": {"conditions": [{"type": "Available", "status": "False",
                                   "lastTransitionTime": "2026-12-02T07:00:01Z",
                                   "reason": "ServiceNotFound", "message": "m"}]},
    },
    "resourceclaim": {
        "kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1",
        "metadata": {**META, "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2,
            "selectors": [{"cel": {"expression": "device.driver == 'x'"}}]}}]}},
        "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]},
    },
    "resourceslice": {
        "kind": "ResourceSlice", "apiVersion": "resource.k8s.io/v1", "metadata": META,
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "d0", "attributes": {"model": {"string": "a100"}},
                              "capacity": {"memory": {"value": "40Gi"}}}]},
    },
}


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_protobuf_round_trip_keeps_the_object(name: str) -> None:
    obj = OBJECTS[name]
    raw = encode_k8s_protobuf(copy.deepcopy(obj))
    assert raw.startswith(b"k8s\x00")
    assert decode_k8s_protobuf(raw) == obj


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_object_passes_the_go_type_check(name: str) -> None:
    obj = OBJECTS[name]
    group, _, version = obj["apiVersion"].rpartition("/")
    check_object(group, version, obj["kind"], copy.deepcopy(obj))


# (apiVersion, kind, body, JSON type, Go struct field (innermost struct and JSON path), Go type)
WRONG_TYPES = [
    ("rbac.authorization.k8s.io/v1", "Role", {"rules": [{"verbs": "get"}]},
     "string", "PolicyRule.rules.verbs", "[]string"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", {"roleRef": {"kind": 5}},
     "number", "RoleRef.roleRef.kind", "string"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest",
     {"spec": {"expirationSeconds": "3600"}},
     "string", "CertificateSigningRequestSpec.spec.expirationSeconds", "int32"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
     {"webhooks": [{"timeoutSeconds": "5"}]},
     "string", "ValidatingWebhook.webhooks.timeoutSeconds", "int32"),
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", {"spec": {"matchingPrecedence": "1"}},
     "string", "FlowSchemaSpec.spec.matchingPrecedence", "int32"),
    ("apiregistration.k8s.io/v1", "APIService", {"spec": {"insecureSkipTLSVerify": "yes"}},
     "string", "APIServiceSpec.spec.insecureSkipTLSVerify", "bool"),
    ("resource.k8s.io/v1", "ResourceClaim",
     {"spec": {"devices": {"requests": [{"exactly": {"count": "2"}}]}}},
     "string", "ExactDeviceRequest.spec.devices.requests.exactly.count", "int64"),
]


@pytest.mark.parametrize(("api_version", "kind", "body", "got", "field", "go_type"),
                         WRONG_TYPES)
def test_wrong_json_type_is_gos_decode_error(api_version: str, kind: str,
                                             body: dict[str, Any], got: str, field: str,
                                             go_type: str) -> None:
    group, _, version = api_version.rpartition("/")
    with pytest.raises(GoDecodeError) as exc:
        check_object(group, version, kind, {"metadata": {"name": "x"}, **body})
    assert str(exc.value) == (f"json: cannot unmarshal {got} into Go struct field {field} "
                              f"of type {go_type}")


def test_omitempty_zero_values_are_dropped() -> None:
    binding = {"metadata": {"name": "b"}, "subjects": [],
               "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"}}
    drop_go_empty(binding, "rbac/v1.RoleBinding")
    # subjects is omitempty; roleRef's fields are not
    assert binding == {"metadata": {"name": "b"},
                       "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"}}
    svc = {"metadata": {"name": "v1.a.b"},
           "spec": {"group": "a.b", "version": "v1", "insecureSkipTLSVerify": False,
                    "caBundle": "", "groupPriorityMinimum": 0, "versionPriority": 0}}
    drop_go_empty(svc, "apiregistration/v1.APIService")
    assert svc["spec"] == {"group": "a.b", "version": "v1", "groupPriorityMinimum": 0,
                           "versionPriority": 0}
