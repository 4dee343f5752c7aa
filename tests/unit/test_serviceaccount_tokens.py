"""pykcm.api.serviceaccount: legacy token claims and JWT signing, token Secret matching,
the Secrets a pod references."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from pykcm.api.serviceaccount import (
    LEGACY_ISSUER,
    JWTTokenGenerator,
    is_service_account_token,
    legacy_claims,
    load_private_key,
    pod_secret_names,
)

SA = {"metadata": {"name": "robot", "namespace": "ns", "uid": "sa-uid"}}
SECRET = {"metadata": {"name": "robot-token", "namespace": "ns"},
          "type": "kubernetes.io/service-account-token"}


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _pem(key: Any) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def test_legacy_token_claims_header_and_rs256_signature(rsa_key: rsa.RSAPrivateKey) -> None:
    gen = JWTTokenGenerator(LEGACY_ISSUER, load_private_key(_pem(rsa_key)))
    token = gen.generate_token(*legacy_claims(SA, SECRET))
    header, payload, signature = token.split(".")
    spki = rsa_key.public_key().public_bytes(serialization.Encoding.DER,
                                             serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = base64.urlsafe_b64encode(hashlib.sha256(spki).digest()).rstrip(b"=").decode()
    # go-jose's header and Go's sorted, compact JSON map
    assert _unb64(header) == json.dumps({"alg": "RS256", "kid": kid},
                                        separators=(",", ":")).encode()
    assert _unb64(payload) == (
        b'{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"ns",'
        b'"kubernetes.io/serviceaccount/secret.name":"robot-token",'
        b'"kubernetes.io/serviceaccount/service-account.name":"robot",'
        b'"kubernetes.io/serviceaccount/service-account.uid":"sa-uid",'
        b'"sub":"system:serviceaccount:ns:robot"}')
    rsa_key.public_key().verify(_unb64(signature), f"{header}.{payload}".encode(),
                                padding.PKCS1v15(), hashes.SHA256())
    # deterministic: the same claims and key give the same token
    assert gen.generate_token(*legacy_claims(SA, SECRET)) == token


def test_ecdsa_keys_sign_es256() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    token = JWTTokenGenerator(LEGACY_ISSUER, load_private_key(_pem(key))).generate_token(
        {"sub": "x"}, {})
    header, payload, signature = token.split(".")
    assert json.loads(_unb64(header))["alg"] == "ES256"
    raw = _unb64(signature)
    assert len(raw) == 64
    key.public_key().verify(encode_dss_signature(int.from_bytes(raw[:32], "big"),
                                                 int.from_bytes(raw[32:], "big")),
                            f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
    with pytest.raises(ValueError, match="valid RSA or ECDSA private key"):
        load_private_key(b"not a key")


def test_token_secrets_of_an_account() -> None:
    def secret(name: str | None, uid: str | None = None, type_: str =
               "kubernetes.io/service-account-token") -> dict[str, Any]:
        ann = {k: v for k, v in (("kubernetes.io/service-account.name", name),
                                 ("kubernetes.io/service-account.uid", uid)) if v}
        return {"type": type_, "metadata": {"annotations": ann}}
    assert is_service_account_token(secret("robot"), SA)
    assert is_service_account_token(secret("robot", "sa-uid"), SA)
    assert not is_service_account_token(secret("robot", "other"), SA)
    assert not is_service_account_token(secret("other"), SA)
    assert not is_service_account_token(secret("robot", type_="Opaque"), SA)


def test_secrets_a_pod_references() -> None:
    pod = {"spec": {
        "imagePullSecrets": [{"name": "pull"}],
        "initContainers": [{"envFrom": [{"secretRef": {"name": "init-env"}}]}],
        "containers": [{"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "key"}}},
                                {"name": "B", "value": "plain"}]}],
        "volumes": [{"name": "a", "secret": {"secretName": "vol"}},
                    {"name": "b", "projected": {"sources": [{"secret": {"name": "proj"}},
                                                            {"configMap": {"name": "cm"}}]}},
                    {"name": "c", "csi": {"nodePublishSecretRef": {"name": "csi"}}},
                    {"name": "d", "rbd": {"secretRef": {"name": "rbd"}}},
                    {"name": "e", "emptyDir": {}}]}}
    assert pod_secret_names(pod) == {"pull", "init-env", "key", "vol", "proj", "csi", "rbd"}
