"""pykcm's API server as a service-account token issuer and authenticator, over HTTP, and the
objects a fresh cluster's API server keeps of itself.

The key pair kept in the data dir (as kubeadm's sa.key/sa.pub) signs tokens that survive a
restart; the kube-apiserver flags choose other keys; a legacy Secret token authenticates and
gets its last-used label; the kubernetes Service's endpoints follow the server; its identity
Lease is renewed.
"""

from __future__ import annotations

import base64
import os
import stat
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pykcm.api import serviceaccount as sa_api
from pykcm.testing.server_thread import ServerThread
from tests.conftest import Api

Factory = Callable[..., ServerThread]


def whoami(st: ServerThread, token: str) -> tuple[int, Any]:
    """SelfSubjectReview with ``token`` (kubectl auth whoami)."""
    r = requests.post(st.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews", json={},
                      headers={"Authorization": f"Bearer {token}"}, timeout=30,
                      verify=_ca(st))
    return r.status_code, r.json()


def _ca(st: ServerThread) -> str:
    path = os.path.join(os.path.dirname(st.kubeconfig_path), "pki", "ca.crt")
    return path


def _token(api: Api, ns: str, name: str = "default", **spec: Any) -> str:
    code, body = api.post(f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
                          {"spec": spec})
    assert code == 201, body
    token: str = body["status"]["token"]
    return token


def test_key_pair_in_the_data_dir_signs_tokens_across_restarts(
        pykcm_apiserver_factory: Factory, tmp_path: Any) -> None:
    data = str(tmp_path / "state")
    st = pykcm_apiserver_factory(data_dir=data)
    key, pub = (os.path.join(data, "pki", f) for f in ("sa.key", "sa.pub"))
    for path in (key, pub):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(key, "rb") as f:
        private = sa_api.load_private_key(f.read())
    with open(pub, "rb") as f:
        [public] = sa_api.load_public_keys(f.read())
    assert public.public_numbers() == private.public_key().public_numbers()
    api = Api(st)
    ns = api.ns()
    token = _token(api, ns, expirationSeconds=3600)
    jws = sa_api.parse_jws(token)
    assert jws is not None and jws.key_id == sa_api.key_id(private)
    assert jws.claims["iss"] == "https://kubernetes.default.svc.cluster.local"
    st.stop()
    st2 = pykcm_apiserver_factory(data_dir=data)
    code, review = whoami(st2, token)
    assert code == 201 and review["status"]["userInfo"]["username"] == (
        f"system:serviceaccount:{ns}:default")
    with open(key, "rb") as f:  # the same key, not a new one
        assert sa_api.key_id(sa_api.load_private_key(f.read())) == jws.key_id


def test_signing_and_verification_keys_from_flags(pykcm_apiserver_factory: Factory,
                                                  tmp_path: Any) -> None:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    signing = tmp_path / "signing.key"
    signing.write_bytes(ec_key.private_bytes(serialization.Encoding.PEM,
                                             serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))
    other = tmp_path / "other.pub"
    other.write_bytes(sa_api.generate_key_pair()[1])
    st = pykcm_apiserver_factory(
        service_account_signing_key_file=str(signing),
        service_account_issuers=["https://issuer.example", "https://old.example"],
        api_audiences=["api"])
    api = Api(st)
    ns = api.ns()
    token = _token(api, ns)
    jws = sa_api.parse_jws(token)
    assert jws is not None and jws.header["alg"] == "ES256"
    assert jws.claims["iss"] == "https://issuer.example" and jws.claims["aud"] == ["api"]
    assert whoami(st, token)[0] == 201
    # verification keys that do not include the signer's: its tokens are refused
    st2 = pykcm_apiserver_factory(service_account_signing_key_file=str(signing),
                                  service_account_key_files=[str(other)],
                                  service_account_issuers=["https://issuer.example"])
    api2 = Api(st2)
    ns2 = api2.ns()
    code, body = whoami(st2, _token(api2, ns2))
    assert code == 401 and body["reason"] == "Unauthorized"


def test_legacy_secret_token_authenticates_and_is_labelled(pykcm_apiserver: ServerThread,
                                                           api: Api) -> None:
    ns = api.ns()
    code, sa = api.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default")
    assert code == 200
    tokens = pykcm_apiserver.server.service_accounts
    assert tokens is not None
    gen = sa_api.JWTTokenGenerator(sa_api.LEGACY_ISSUER, tokens.signing_key)
    secret = {"metadata": {"name": "legacy", "namespace": ns}}
    token = gen.generate_token(*sa_api.legacy_claims(sa, secret))
    code, _ = api.post(f"/api/v1/namespaces/{ns}/secrets", {
        "metadata": {"name": "legacy", "annotations": {
            "kubernetes.io/service-account.name": "default"}},
        "type": "kubernetes.io/service-account-token",
        "data": {"token": base64.b64encode(token.encode()).decode()}})
    assert code == 201
    code, review = whoami(pykcm_apiserver, token)
    assert code == 201 and review["status"]["userInfo"] == {
        "username": f"system:serviceaccount:{ns}:default", "uid": sa["metadata"]["uid"],
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                   "system:authenticated"]}
    today = time.strftime("%Y-%m-%d", time.gmtime())
    deadline = time.monotonic() + 10
    while True:
        labels = api.get(f"/api/v1/namespaces/{ns}/secrets/legacy")[1]["metadata"].get(
            "labels") or {}
        if labels.get(sa_api.LAST_USED_LABEL_KEY) in (today, time.strftime(
                "%Y-%m-%d", time.gmtime(time.time() + 86400))):
            break
        assert time.monotonic() < deadline, labels
        time.sleep(0.05)


def test_pods_need_their_account(api: Api) -> None:
    ns = "no-sa-" + uuid.uuid4().hex[:8]
    assert api.post("/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    pod = {"metadata": {"generateName": "web-"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods", pod)
    assert (code, body["message"]) == (
        403, (f'pods "web-" is forbidden: error looking up service account {ns}/default: '
             'serviceaccount "default" not found'))
    api.default_service_account(ns)
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods", pod)
    assert code == 201 and body["spec"]["serviceAccountName"] == "default"
    assert body["spec"]["volumes"][0]["name"].startswith("kube-api-access-")


def test_kubernetes_service_endpoints_follow_the_server(pykcm_apiserver_factory: Factory
                                                        ) -> None:
    st = pykcm_apiserver_factory(advertise_address="10.20.30.40")
    api = Api(st)
    code, svc = api.get("/api/v1/namespaces/default/services/kubernetes")
    assert code == 200 and svc["spec"]["ports"] == [
        {"name": "https", "protocol": "TCP", "port": 443, "targetPort": st.server.port}]
    code, ep = api.get("/api/v1/namespaces/default/endpoints/kubernetes")
    assert code == 200 and ep["subsets"] == [{
        "addresses": [{"ip": "10.20.30.40"}],
        "ports": [{"name": "https", "port": st.server.port, "protocol": "TCP"}]}]
    code, eps = api.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/"
                        "kubernetes")
    assert code == 200 and eps["endpoints"] == [
        {"addresses": ["10.20.30.40"], "conditions": {"ready": True}}]
    code, apis = api.get("/api")
    assert apis["serverAddressByClientCIDRs"][0]["serverAddress"] == (
        f"10.20.30.40:{st.server.port}")
    # deleted: back within a reconcile (every 10 s; here at once)
    assert api.delete("/api/v1/namespaces/default/endpoints/kubernetes")[0] == 200
    controller = st.server.kubernetes_service
    assert controller is not None
    st.call(controller.reconcile())
    assert api.get("/api/v1/namespaces/default/endpoints/kubernetes")[1]["subsets"][0][
        "addresses"] == [{"ip": "10.20.30.40"}]
    # the server's stop takes its address out
    st.call(controller.stop())
    code, ep = api.get("/api/v1/namespaces/default/endpoints/kubernetes")
    assert code == 200 and "subsets" not in ep
    eps = api.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")[1]
    assert eps["endpoints"] is None and eps["ports"] is None


def test_a_loopback_advertise_address_gets_no_endpoints(pykcm_apiserver_factory: Factory
                                                        ) -> None:
    st = pykcm_apiserver_factory(advertise_address="127.0.0.1")
    controller = st.server.kubernetes_service
    assert controller is not None
    with pytest.raises(Exception, match="may not be in the loopback range"):
        st.call(controller.reconcile())
    assert Api(st).get("/api/v1/namespaces/default/endpoints/kubernetes")[0] == 404


def test_identity_lease_is_kept_and_renewed(pykcm_apiserver_factory: Factory) -> None:
    st = pykcm_apiserver_factory()
    lease_ctl = st.server.identity_lease
    assert lease_ctl is not None
    path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease_ctl.name}"
    api = Api(st)
    code, lease = api.get(path)
    assert code == 200
    assert lease["metadata"]["labels"] == {"apiserver.kubernetes.io/identity": "kube-apiserver",
                                           "kubernetes.io/hostname": lease_ctl.hostname}
    assert lease["spec"]["holderIdentity"].startswith(lease_ctl.name + "_")
    assert lease["spec"]["leaseDurationSeconds"] == 3600
    st.call(lease_ctl.renew())
    renewed = api.get(path)[1]
    assert renewed["spec"]["renewTime"] >= lease["spec"]["renewTime"]
    assert int(renewed["metadata"]["resourceVersion"]) > int(lease["metadata"]["resourceVersion"])
