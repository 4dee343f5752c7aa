"""Differential tests of the service account and root CA controllers.

Run under the real kube-controller-manager v1.36 and under pykcm's on the
session's real kube-apiserver (tests/e2e/differential.py), both given the
control plane's ``--service-account-private-key-file`` and ``--root-ca-file``:
the ``default`` ServiceAccount and the ``kube-root-ca.crt`` ConfigMap of a new
namespace, restored when deleted or edited; a token Secret filled in (its
JWT's header and claims, ``ca.crt``, ``namespace``, annotations), deleted with
its account or when its account does not exist.

Legacy tokens are RS256 signatures of the same claims with the same key, so
they are deterministic: under the real manager, the scenario also checks that
pykcm's token generator yields the very token the real one wrote.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from pykcm.api.serviceaccount import (
    LEGACY_ISSUER,
    JWTTokenGenerator,
    legacy_claims,
    load_private_key,
)
from pykcm.testing.upstream import KubeCluster
from tests.e2e.differential import Differential, Run, Scenario
from tests.e2e.differential_allowlist import ALLOWLIST

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]


@pytest.fixture(scope="module")
def differential(kube_cluster: KubeCluster) -> Iterator[Differential]:
    d = Differential(kube_cluster)
    yield d
    d.restore()


def _b64json(part: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def sa_view(sa: dict[str, Any]) -> dict[str, Any]:
    m = sa["metadata"]
    return {"name": m["name"], "labels": m.get("labels"), "annotations": m.get("annotations"),
            "ownerReferences": m.get("ownerReferences"), "finalizers": m.get("finalizers"),
            **{k: v for k, v in sa.items() if k not in ("metadata", "apiVersion", "kind")}}


def cm_view(cm: dict[str, Any], ca: str) -> dict[str, Any]:
    m = cm["metadata"]
    return {"labels": m.get("labels"), "annotations": m.get("annotations"),
            "data": {k: ("{cluster-ca}" if v == ca else v) for k, v in
                     (cm.get("data") or {}).items()},
            "binaryData": cm.get("binaryData")}


def namespace_objects(cluster: KubeCluster) -> Scenario:
    ca = Path(cluster.ca_file).read_text()

    def scenario(run: Run) -> dict[str, Any]:
        sa = run.get("serviceaccounts", "default")
        cm = run.wait(lambda: run.api.request("GET", run.path("configmaps",
                                                              "kube-root-ca.crt"))[1]
                      if run.api.request("GET", run.path("configmaps", "kube-root-ca.crt"))[0]
                      == 200 else None, "kube-root-ca.crt")
        first = {"serviceaccount": sa_view(sa), "configmap": cm_view(cm, ca)}

        uid = sa["metadata"]["uid"]
        run.delete("serviceaccounts", "default")

        def recreated() -> dict[str, Any] | None:
            code, body = run.api.request("GET", run.path("serviceaccounts", "default"))
            return body if code == 200 and body["metadata"]["uid"] != uid else None
        sa2 = run.wait(recreated, "default ServiceAccount re-created")

        rv = cm["metadata"]["resourceVersion"]
        run.patch("configmaps", "kube-root-ca.crt", {
            "data": {"ca.crt": "tampered", "extra": "kept?"},
            "metadata": {"annotations": {"kubernetes.io/description": None, "mine": "x"},
                         "labels": {"owner": "me"}}})

        def restored() -> dict[str, Any] | None:
            c = run.get("configmaps", "kube-root-ca.crt")
            ok = c["metadata"]["resourceVersion"] != rv and c["data"].get("ca.crt") == ca \
                and "kubernetes.io/description" in (c["metadata"].get("annotations") or {})
            return c if ok else None
        cm2 = run.wait(restored, "kube-root-ca.crt restored")

        run.delete("configmaps", "kube-root-ca.crt")
        cm_uid = cm2["metadata"]["uid"]

        def cm_recreated() -> dict[str, Any] | None:
            code, body = run.api.request("GET", run.path("configmaps", "kube-root-ca.crt"))
            return body if code == 200 and body["metadata"]["uid"] != cm_uid else None
        cm3 = run.wait(cm_recreated, "kube-root-ca.crt re-created")
        return {"first": first, "sa_recreated": sa_view(sa2), "cm_restored": cm_view(cm2, ca),
                "cm_recreated": cm_view(cm3, ca),
                "events": [e for e in run.events() if e["object"].split("/")[0] in
                           ("ServiceAccount", "ConfigMap", "Namespace")]}
    return scenario


def token_secret(name: str, account: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": name,
                         "annotations": {"kubernetes.io/service-account.name": account}}}


def tokens(cluster: KubeCluster) -> Scenario:
    assert cluster.cp is not None
    ca = Path(cluster.ca_file).read_bytes()
    key_pem = (cluster.cp.pki / "sa.key").read_bytes()
    public = serialization.load_pem_public_key((cluster.cp.pki / "sa.pub").read_bytes())
    assert isinstance(public, rsa.RSAPublicKey)

    def scenario(run: Run) -> dict[str, Any]:
        sa = run.create("serviceaccounts", {"metadata": {"name": "robot"}})
        run.masker.literal(sa["metadata"]["uid"], "{uid:ServiceAccount/robot}")
        run.create("secrets", token_secret("robot-token", "robot"))
        run.create("secrets", token_secret("ghost-token", "ghost"))

        def filled() -> dict[str, Any] | None:
            s = run.get("secrets", "robot-token")
            return s if {"token", "ca.crt", "namespace"} <= set(s.get("data") or {}) else None
        secret = run.wait(filled, "robot-token filled in")
        data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
        token = data["token"].decode()
        header, payload, signature = token.split(".")
        public.verify(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)),
                      f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
        # the same token pykcm's generator makes for this account and Secret
        mine = JWTTokenGenerator(LEGACY_ISSUER, load_private_key(key_pem)).generate_token(
            *legacy_claims(sa, secret))
        assert mine == token, f"{run.manager}: token differs from pykcm's generator's"
        view = {"type": secret["type"], "annotations": secret["metadata"].get("annotations"),
                "labels": secret["metadata"].get("labels"), "keys": sorted(data),
                "ca.crt": "{cluster-ca}" if data["ca.crt"] == ca else data["ca.crt"].decode(),
                "namespace": data["namespace"].decode(),
                "jwt_header": {k: v for k, v in _b64json(header).items() if k != "kid"},
                "jwt_claims": _b64json(payload)}
        # an account that does not exist: its token Secret is deleted
        ghost = run.wait(lambda: run.api.request("GET", run.path("secrets", "ghost-token"))[0]
                         == 404 or None, "ghost-token deleted")
        # the account goes: its tokens too
        run.delete("serviceaccounts", "robot")
        gone = run.wait(lambda: run.api.request("GET", run.path("secrets", "robot-token"))[0]
                        == 404 or None, "robot-token deleted with its account")
        return {"secret": view, "ghost_deleted": ghost, "deleted_with_account": gone,
                "events": [e for e in run.events() if e["object"].split("/")[0] in
                           ("ServiceAccount", "Secret")]}
    return scenario


@pytest.mark.parametrize("name", ["namespace-serviceaccount-and-root-ca", "token-secrets"])
def test_differential(differential: Differential, name: str) -> None:
    """The scenario under kube-controller-manager and under pykcm: the same observations."""
    make = {"namespace-serviceaccount-and-root-ca": namespace_objects,
            "token-secrets": tokens}[name]
    kube, pykcm = differential.run(name, make(differential.cluster), ALLOWLIST, prefix="diff-sa")
    assert kube and pykcm, f"{name} observed nothing"
