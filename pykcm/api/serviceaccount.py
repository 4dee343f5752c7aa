"""Service accounts: the names of their tokens, secrets and users, and legacy token signing.

kube-apiserver / kube-controller-manager counterparts: ``pkg/serviceaccount``
(``jwt.go``: ``JWTTokenGenerator``, ``keyIDFromPublicKey``; ``legacy.go``:
``LegacyClaims``, ``LegacyIssuer``, the legacy-token labels),
``k8s.io/apiserver/pkg/authentication/serviceaccount`` (``MakeUsername``,
``IsServiceAccountToken``) and the core/v1 constants of token Secrets.

Role: the one home of this vocabulary. The token controller
(``pykcm.controllers.serviceaccount``) signs the legacy tokens it puts in
``kubernetes.io/service-account-token`` Secrets with :class:`JWTTokenGenerator`;
an API server that authenticates such tokens reads the same claims.

Data flow::

    --service-account-private-key-file ──load_private_key──► RSA / ECDSA key
    ServiceAccount + Secret ──legacy_claims──► (registered claims, private claims)
    JWTTokenGenerator(LEGACY_ISSUER, key).generate_token(claims, private)
        header  {"alg": "RS256" | "ES256/384/512", "kid": base64url(sha256(SPKI DER))}
        payload the claims merged, keys sorted, Go's JSON string escaping
        ──► "<b64url header>.<b64url payload>.<b64url signature>"

Tokens are byte-for-byte those of kube-controller-manager for the same key
(go-jose marshals the header and the merged claims as Go maps: sorted keys;
RSASSA-PKCS1-v1_5 is deterministic), which the differential tests check.
ECDSA signatures are randomised, as upstream's.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

__all__ = [
    "INVALID_SINCE_LABEL_KEY",
    "LAST_USED_LABEL_KEY",
    "LEGACY_ISSUER",
    "LEGACY_TOKEN_TRACKING_CONFIGMAP",
    "LEGACY_TOKEN_TRACKING_SINCE_KEY",
    "SECRET_TYPE_SERVICE_ACCOUNT_TOKEN",
    "SERVICE_ACCOUNT_NAMESPACE_KEY",
    "SERVICE_ACCOUNT_NAME_KEY",
    "SERVICE_ACCOUNT_ROOT_CA_KEY",
    "SERVICE_ACCOUNT_TOKEN_KEY",
    "SERVICE_ACCOUNT_UID_KEY",
    "JWTTokenGenerator",
    "go_json",
    "is_service_account_token",
    "key_id",
    "legacy_claims",
    "load_private_key",
    "make_username",
    "pod_secret_names",
]

SECRET_TYPE_SERVICE_ACCOUNT_TOKEN: Final = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME_KEY: Final = "kubernetes.io/service-account.name"
SERVICE_ACCOUNT_UID_KEY: Final = "kubernetes.io/service-account.uid"
SERVICE_ACCOUNT_TOKEN_KEY: Final = "token"
SERVICE_ACCOUNT_ROOT_CA_KEY: Final = "ca.crt"
SERVICE_ACCOUNT_NAMESPACE_KEY: Final = "namespace"

LEGACY_ISSUER: Final = "kubernetes/serviceaccount"
"""The ``iss`` of secret-based (legacy) tokens."""
LAST_USED_LABEL_KEY: Final = "kubernetes.io/legacy-token-last-used"
INVALID_SINCE_LABEL_KEY: Final = "kubernetes.io/legacy-token-invalid-since"
LEGACY_TOKEN_TRACKING_CONFIGMAP: Final = "kube-apiserver-legacy-service-account-token-tracking"
"""kube-system ConfigMap the API server writes once it tracks legacy token use."""
LEGACY_TOKEN_TRACKING_SINCE_KEY: Final = "since"

_USERNAME_PREFIX: Final = "system:serviceaccount:"


def make_username(namespace: str, name: str) -> str:
    """``system:serviceaccount:<namespace>:<name>``."""
    return f"{_USERNAME_PREFIX}{namespace}:{name}"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def is_service_account_token(secret: Mapping[str, Any], sa: Mapping[str, Any]) -> bool:
    """A token Secret of ``sa``: its type, the account's name, and its UID when annotated."""
    if secret.get("type") != SECRET_TYPE_SERVICE_ACCOUNT_TOKEN:
        return False
    ann = _meta(secret).get("annotations") or {}
    if ann.get(SERVICE_ACCOUNT_NAME_KEY, "") != _meta(sa).get("name"):
        return False
    uid = ann.get(SERVICE_ACCOUNT_UID_KEY, "")
    return not uid or uid == _meta(sa).get("uid")


def legacy_claims(sa: Mapping[str, Any], secret: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The registered and private claims of the legacy token of ``secret`` for ``sa``."""
    sm = _meta(sa)
    ns, name = str(sm.get("namespace") or ""), str(sm.get("name") or "")
    return ({"sub": make_username(ns, name)},
            {"kubernetes.io/serviceaccount/namespace": ns,
             "kubernetes.io/serviceaccount/secret.name": str(_meta(secret).get("name") or ""),
             "kubernetes.io/serviceaccount/service-account.name": name,
             "kubernetes.io/serviceaccount/service-account.uid": str(sm.get("uid") or "")})


PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def load_private_key(pem: bytes) -> PrivateKey:
    """An RSA or ECDSA private key from PEM (PKCS#1, SEC 1 or PKCS#8), as keyutil reads it."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"data does not contain a valid RSA or ECDSA private key: {exc}"
                         ) from None
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise TypeError(f"unknown private key type {type(key).__name__}, must be RSA or ECDSA")
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def key_id(key: PrivateKey) -> str:
    """upstream ``keyIDFromPublicKey``: base64url(sha256(the public key's SPKI DER))."""
    der = key.public_key().public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    return _b64(hashlib.sha256(der).digest())


def go_json(value: Any) -> bytes:
    """``json.Marshal`` of a map of strings: sorted keys, no spaces, Go's HTML escaping."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(a, b)
    return text.encode()


_EC_ALGS: Final = {"secp256r1": ("ES256", hashes.SHA256(), 32),
                   "secp384r1": ("ES384", hashes.SHA384(), 48),
                   "secp521r1": ("ES512", hashes.SHA512(), 66)}


class JWTTokenGenerator:
    """Signs JWTs with ``issuer`` as ``iss`` (upstream ``JWTTokenGenerator``)."""

    def __init__(self, issuer: str, key: PrivateKey) -> None:
        self.issuer = issuer
        self._key = key
        if isinstance(key, rsa.RSAPrivateKey):
            self.algorithm = "RS256"
        else:
            alg = _EC_ALGS.get(key.curve.name)
            if alg is None:
                raise ValueError("unknown private key curve, must be 256, 384, or 521")
            self.algorithm = alg[0]
        self._header = _b64(go_json({"alg": self.algorithm, "kid": key_id(key)}))

    def generate_token(self, claims: Mapping[str, Any], private_claims: Mapping[str, Any]
                       ) -> str:
        """A compact JWS of the merged claims (registered ones win, then ``iss``)."""
        merged = {**private_claims, **claims, "iss": self.issuer}
        signing_input = f"{self._header}.{_b64(go_json(merged))}".encode()
        return f"{signing_input.decode()}.{_b64(self._sign(signing_input))}"

    def _sign(self, data: bytes) -> bytes:
        key = self._key
        if isinstance(key, rsa.RSAPrivateKey):
            return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        _, digest, size = _EC_ALGS[key.curve.name]
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def pod_secret_names(pod: Mapping[str, Any]) -> set[str]:
    """Every Secret a pod references (upstream ``VisitPodSecretNames``): image pull
    secrets, containers' env and envFrom (init and ephemeral ones too), and volumes."""
    out: set[str] = set()
    spec = pod.get("spec") or {}

    def add(name: Any) -> None:
        if name:
            out.add(str(name))

    for ref in spec.get("imagePullSecrets") or ():
        add(ref.get("name"))
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or ():
            for env in c.get("envFrom") or ():
                add((env.get("secretRef") or {}).get("name"))
            for env in c.get("env") or ():
                add(((env.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name"))
    for vol in spec.get("volumes") or ():
        if "secret" in vol:
            add((vol["secret"] or {}).get("secretName"))
        elif "projected" in vol:
            for src in (vol["projected"] or {}).get("sources") or ():
                add((src.get("secret") or {}).get("name"))
        elif "azureFile" in vol:
            add((vol["azureFile"] or {}).get("secretName"))
        elif "csi" in vol:
            add(((vol["csi"] or {}).get("nodePublishSecretRef") or {}).get("name"))
        else:
            for kind in ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi",
                         "storageos"):
                if kind in vol:
                    add(((vol[kind] or {}).get("secretRef") or {}).get("name"))
                    break
    return out
