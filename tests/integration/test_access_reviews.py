"""authorization.k8s.io/v1 reviews on pykcm's API server, answered by its RBAC authorizer as
kube-apiserver v1.36.2 (``--authorization-mode=Node,RBAC``) answers them (the expected bodies
below are that server's, managedFields aside), never stored; ``kubectl auth can-i``
(protobuf bodies) works. tests/integration/test_rbac.py compares the two servers' answers
for bindings of its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import requests

from pykcm.testing.server_thread import ServerThread

KUBECTL = str(Path(sys.executable).parent / "kubectl")
AUTHZ = "/apis/authorization.k8s.io/v1"


def _post(st: ServerThread, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    r = requests.post(st.url + AUTHZ + path, json=body, timeout=30,
                      headers={"Authorization": f"Bearer {st.token}"},
                      verify=_ca(st))
    return r.status_code, r.json()


def _ca(st: ServerThread) -> str | bool:
    """The server's CA as a file for requests (the session server's is in its kubeconfig's
    directory)."""
    if not st.ca_pem:
        return False
    path = Path(st.kubeconfig_path).with_name("pykcm-test-ca.crt")
    if not path.exists():
        path.write_bytes(st.ca_pem)
    return str(path)


def test_subject_access_review_denied_without_reason(pykcm_apiserver: ServerThread) -> None:
    """No binding grants alice /metrics: RBAC has no opinion, and says nothing."""
    spec = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}, "user": "alice"}
    code, body = _post(pykcm_apiserver, "/subjectaccessreviews",
                       {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                        "spec": spec})
    assert (code, body) == (201, {"kind": "SubjectAccessReview",
                                  "apiVersion": "authorization.k8s.io/v1", "metadata": {},
                                  "spec": spec, "status": {"allowed": False}})


def test_subject_access_review_in_a_privileged_group(pykcm_apiserver: ServerThread) -> None:
    spec = {"resourceAttributes": {"verb": "delete", "resource": "nodes"}, "user": "x",
            "groups": ["system:masters"]}
    code, body = _post(pykcm_apiserver, "/subjectaccessreviews", {"spec": spec})
    assert (code, body["status"]) == (201, {"allowed": True})


def test_self_subject_access_review(pykcm_apiserver: ServerThread) -> None:
    spec = {"resourceAttributes": {"verb": "get", "resource": "pods"}}
    code, body = _post(pykcm_apiserver, "/selfsubjectaccessreviews", {"spec": spec})
    assert (code, body["kind"], body["spec"], body["status"]) == (
        201, "SelfSubjectAccessReview", spec, {"allowed": True})


def test_review_errors_as_kube_apiserver(pykcm_apiserver: ServerThread) -> None:
    code, body = _post(pykcm_apiserver, "/subjectaccessreviews", {"spec": {
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}})
    assert code == 422
    assert body["message"] == ('.authorization.k8s.io "" is invalid: spec.user: Invalid value: '
                               '"": at least one of user or group must be specified')
    assert body["details"] == {"group": "authorization.k8s.io", "causes": [{
        "reason": "FieldValueInvalid", "field": "spec.user",
        "message": 'Invalid value: "": at least one of user or group must be specified'}]}
    code, body = _post(pykcm_apiserver, "/subjectaccessreviews", {"spec": {"user": "a"}})
    assert (code, body["message"]) == (
        422, ('.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: '
             'null: exactly one of nonResourceAttributes or resourceAttributes must be specified'))
    code, body = _post(pykcm_apiserver, "/subjectaccessreviews", {
        "metadata": {"name": "x"},
        "spec": {"user": "a", "resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert (code, body["message"]) == (
        422, ('.authorization.k8s.io "" is invalid: metadata: Invalid value: {"name":"x"}: '
             'must be empty'))
    for ns_attr in ({}, {"namespace": "other"}):
        code, body = _post(pykcm_apiserver, "/namespaces/default/localsubjectaccessreviews", {
            "spec": {"user": "a", "resourceAttributes": {"verb": "get", "resource": "pods",
                                                         **ns_attr}}})
        value = '"other"' if ns_attr else '""'
        assert (code, body["message"]) == (
            422, ('.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: '
                 f'Invalid value: {value}: must match metadata.namespace'))
    code, body = _post(pykcm_apiserver, "/selfsubjectrulesreviews", {"spec": {}})
    assert (code, body["message"], body["reason"]) == (400, "no namespace on request",
                                                       "BadRequest")


def test_local_review_and_rules_review(pykcm_apiserver: ServerThread) -> None:
    spec = {"user": "a", "resourceAttributes": {"namespace": "default", "verb": "get",
                                                "resource": "pods"}}
    code, body = _post(pykcm_apiserver, "/namespaces/default/localsubjectaccessreviews",
                       {"spec": spec})
    assert (code, body["metadata"], body["status"]) == (201, {"namespace": "default"},
                                                        {"allowed": False})
    code, body = _post(pykcm_apiserver, "/selfsubjectrulesreviews",
                       {"spec": {"namespace": "default"}})
    assert code == 201
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} in \
        body["status"]["resourceRules"]
    assert {"verbs": ["*"], "nonResourceURLs": ["*"]} in body["status"]["nonResourceRules"]
    assert body["status"]["incomplete"] is False


def test_reviews_are_not_stored(pykcm_apiserver: ServerThread) -> None:
    r = requests.get(pykcm_apiserver.url + AUTHZ + "/subjectaccessreviews", timeout=30,
                     headers={"Authorization": f"Bearer {pykcm_apiserver.token}"},
                     verify=_ca(pykcm_apiserver))
    assert r.status_code == 405


def test_kubectl_auth_can_i(pykcm_apiserver: ServerThread) -> None:
    def can_i(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, "--kubeconfig", pykcm_apiserver.kubeconfig_path,
                               "auth", "can-i", *args], capture_output=True, text=True,
                              timeout=60, check=False)

    for args in (("get", "pods"), ("delete", "nodes"), ("get", "/metrics")):
        r = can_i(*args)
        assert (r.returncode, r.stdout.strip()) == (0, "yes"), r.stderr
    r = can_i("--list", "-n", "default")
    assert r.returncode == 0, r.stderr
    assert "selfsubjectaccessreviews.authorization.k8s.io" in r.stdout


def test_public_paths_are_granted_to_every_group(pykcm_apiserver: ServerThread) -> None:
    """system:public-info-viewer is bound to system:authenticated and
    system:unauthenticated: a subject in neither group is granted nothing."""
    def review(path: str, **subject: Any) -> dict[str, Any]:
        code, body = _post(pykcm_apiserver, "/subjectaccessreviews", {"spec": {
            "nonResourceAttributes": {"path": path, "verb": "get"}, **subject}})
        assert code == 201
        status: dict[str, Any] = body["status"]
        return status

    assert review("/healthz", user="system:anonymous") == {"allowed": False}
    assert review("/healthz", user="system:anonymous",
                  groups=["system:unauthenticated"]) == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of '
                  'ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"'}
    assert review("/metrics", user="alice", groups=["system:authenticated"]) == {
        "allowed": False}
