"""Protobuf bodies of rbac.authorization.k8s.io/v1 and certificates.k8s.io/v1 on both API
servers: a Role and a CertificateSigningRequest created and listed as client-go's typed
clients (kube-controller-manager's among them) do it, with
``Content-Type: application/vnd.kubernetes.protobuf`` and its Accept list (protobuf, then
JSON).

kube-apiserver answers in protobuf; pykcm's server answers JSON, the second choice of the
same Accept (deliberate: it encodes responses as JSON only), so the test decodes whichever
came and compares the objects.
"""

from __future__ import annotations

from typing import Any

import orjson

from pykcm.api.protobuf import decode_k8s_protobuf
from pykcm.api.protobuf_encode import encode_k8s_protobuf
from tests.conftest import Api

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO_ACCEPT = f"{PROTOBUF}, application/json"
# A PEM certificate request for CN=jane, O=dev (EC P-256), base64 as in JSON
CSR_REQUEST = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIWE1IOENBUUF3SFRFTk1Bc0dBMVVFQXd3RWFtRnVaVEVNTUFvR0ExVUVDZ3dEWkdWMk1Ga3dFd1lIS29aSQp6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVFMEcxeUJBTVZHR3JzUlhyenVGdHhsR09TRHFaTkpDNGI5UElKTHZsCk8zU29BdkFYd0txc3NaOFJkKzJDdTc0QjlqWjhWSENqbHA0TFF0cGhVY0FTazZBQU1Bb0dDQ3FHU000OUJBTUMKQTBnQU1FVUNJUURvSjE1aDhXM0ZXZnBkYlp6TnNwRDY5cWlla2FkU2pibk90b0F2b25Qazl3SWdGZTBwekhXMApWaDNKYWFtR1gzUktIMUVoS3VIL2dYMFV6Y09pRVVOYklsUT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="


def _answer(api: Api, method: str, path: str, obj: dict[str, Any] | None = None
            ) -> tuple[int, dict[str, Any]]:
    """One request as client-go sends it; the answer decoded from its content type."""
    headers = {"Accept": CLIENT_GO_ACCEPT}
    data = None
    if obj is not None:
        data = encode_k8s_protobuf(obj)
        headers["Content-Type"] = PROTOBUF
    r = api.session.request(method, api.base + path, data=data, headers=headers, timeout=30)
    if r.headers["Content-Type"].startswith(PROTOBUF):
        return r.status_code, decode_k8s_protobuf(r.content)
    assert r.headers["Content-Type"] == "application/json", r.headers
    return r.status_code, orjson.loads(r.content)


def test_role_created_and_listed_with_protobuf(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    rules = [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "pb-reader", "namespace": ns}, "rules": rules}
    base = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"
    code, created = _answer(api, "POST", base, role)
    assert code == 201, created
    assert created["kind"] == "Role" and created["rules"] == rules
    code, listed = _answer(api, "GET", base)
    assert code == 200 and listed["kind"] == "RoleList"
    assert [(i["metadata"]["name"], i["rules"]) for i in listed["items"]] == [
        ("pb-reader", rules)]


def test_csr_created_and_listed_with_protobuf(apiserver_api: Api) -> None:
    api = apiserver_api
    name = f"pb-{api.ns()}"  # a fresh name: CSRs are cluster-scoped
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": name},
           "spec": {"request": CSR_REQUEST, "signerName": "example.com/signer",
                    "usages": ["client auth"], "expirationSeconds": 3600}}
    base = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    try:
        code, created = _answer(api, "POST", base, csr)
        assert code == 201, created
        spec = created["spec"]
        assert (spec["request"], spec["signerName"], spec["usages"],
                spec["expirationSeconds"]) == (CSR_REQUEST, "example.com/signer",
                                               ["client auth"], 3600)
        code, listed = _answer(api, "GET", base)
        assert code == 200 and listed["kind"] == "CertificateSigningRequestList"
        mine = [i for i in listed["items"] if i["metadata"]["name"] == name]
        assert [i["spec"]["signerName"] for i in mine] == ["example.com/signer"]
    finally:
        api.delete(f"{base}/{name}")
