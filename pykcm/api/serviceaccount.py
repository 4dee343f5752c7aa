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

    ServiceAccount (+ bound Pod / Secret / Node) ──bound_claims──► TokenRequest claims
        (sub, aud, iat, nbf, exp, jti + "kubernetes.io": namespace, serviceaccount, pod,
        node, secret, warnafter), signed the same way with the API server's issuer
    "<h>.<p>.<s>" ──parse_jws──► JWS(header, claims) ──verify(public keys)──► True/False

Tokens are byte-for-byte those of kube-controller-manager for the same key
(go-jose marshals the header and the merged claims as Go maps: sorted keys;
RSASSA-PKCS1-v1_5 is deterministic), which the differential tests check.
ECDSA signatures are randomised, as upstream's. Keys for verification
(``--service-account-key-file``) load as keyutil reads them: public keys,
certificates, or private keys whose public half is taken.
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

from pykcm.api.accessors import meta_of

__all__ = [
    "ALL_SERVICE_ACCOUNTS_GROUP",
    "EXPIRATION_EXTENSION_SECONDS",
    "INVALID_SINCE_LABEL_KEY",
    "JWS",
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
    "WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS",
    "JWTTokenGenerator",
    "PublicKey",
    "bound_claims",
    "generate_key_pair",
    "go_json",
    "is_service_account_token",
    "key_id",
    "legacy_claims",
    "load_private_key",
    "load_public_keys",
    "make_group_names",
    "make_username",
    "parse_jws",
    "pod_secret_names",
    "split_username",
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

WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: Final = 60 * 60 + 7
"""The expiration the projected token volume asks for (``kube-api-access-*``): the API server
then extends the token to :data:`EXPIRATION_EXTENSION_SECONDS` and marks when to warn."""
EXPIRATION_EXTENSION_SECONDS: Final = 24 * 365 * 60 * 60

_USERNAME_PREFIX: Final = "system:serviceaccount:"
_GROUP_PREFIX: Final = "system:serviceaccounts:"
ALL_SERVICE_ACCOUNTS_GROUP: Final = "system:serviceaccounts"


def make_username(namespace: str, name: str) -> str:
    """``system:serviceaccount:<namespace>:<name>``."""
    return f"{_USERNAME_PREFIX}{namespace}:{name}"


def make_group_names(namespace: str) -> list[str]:
    """The groups of every service account of ``namespace`` (``MakeGroupNames``)."""
    return [ALL_SERVICE_ACCOUNTS_GROUP, _GROUP_PREFIX + namespace]


def split_username(username: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of a service account user name (``SplitUsername``); None if
    it is not one or either part is not a valid name."""
    if not username.startswith(_USERNAME_PREFIX):
        return None
    parts = username[len(_USERNAME_PREFIX):].split(":")
    if len(parts) != 2 or not all(parts):
        return None
    from pykcm.api.validation import is_dns1123_label, is_dns1123_subdomain

    if is_dns1123_label(parts[0]) or is_dns1123_subdomain(parts[1]):
        return None
    return parts[0], parts[1]


def is_service_account_token(secret: Mapping[str, Any], sa: Mapping[str, Any]) -> bool:
    """A token Secret of ``sa``: its type, the account's name, and its UID when annotated."""
    if secret.get("type") != SECRET_TYPE_SERVICE_ACCOUNT_TOKEN:
        return False
    ann = meta_of(secret).get("annotations") or {}
    if ann.get(SERVICE_ACCOUNT_NAME_KEY, "") != meta_of(sa).get("name"):
        return False
    uid = ann.get(SERVICE_ACCOUNT_UID_KEY, "")
    return not uid or uid == meta_of(sa).get("uid")


def legacy_claims(sa: Mapping[str, Any], secret: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The registered and private claims of the legacy token of ``secret`` for ``sa``."""
    sm = meta_of(sa)
    ns, name = str(sm.get("namespace") or ""), str(sm.get("name") or "")
    return ({"sub": make_username(ns, name)},
            {"kubernetes.io/serviceaccount/namespace": ns,
             "kubernetes.io/serviceaccount/secret.name": str(meta_of(secret).get("name") or ""),
             "kubernetes.io/serviceaccount/service-account.name": name,
             "kubernetes.io/serviceaccount/service-account.uid": str(sm.get("uid") or "")})


PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def generate_key_pair() -> tuple[bytes, bytes]:
    """A fresh RSA 2048 service-account key pair as kubeadm makes one: (private PKCS#1 PEM,
    public SPKI PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


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


def bound_claims(sa: Mapping[str, Any], *, audiences: list[str], expiration_seconds: int,
                 now: int, jti: str, pod: Mapping[str, Any] | None = None,
                 secret: Mapping[str, Any] | None = None, node: Mapping[str, Any] | None = None,
                 warn_after: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """The registered and private claims of a TokenRequest token (upstream ``Claims``).

    ``now`` in epoch seconds; a token bound to a pod carries the pod's node when it has
    one (``node`` then names it); ``warn_after`` (seconds from now) is set for the
    extended tokens of projected volumes.
    """
    sm = meta_of(sa)
    ns, name = str(sm.get("namespace") or ""), str(sm.get("name") or "")
    claims: dict[str, Any] = {"sub": make_username(ns, name), "iat": now, "nbf": now,
                              "exp": now + expiration_seconds, "jti": jti}
    if audiences:
        claims["aud"] = list(audiences)
    k8s: dict[str, Any] = {"namespace": ns} if ns else {}
    k8s["serviceaccount"] = _ref(sm)
    if pod is not None:
        k8s["pod"] = _ref(meta_of(pod))
        if node is not None:
            k8s["node"] = _ref(meta_of(node))
    elif secret is not None:
        k8s["secret"] = _ref(meta_of(secret))
    elif node is not None:
        k8s["node"] = _ref(meta_of(node))
    if warn_after:
        k8s["warnafter"] = now + warn_after
    return claims, {"kubernetes.io": k8s}


def _ref(meta: Mapping[str, Any]) -> dict[str, str]:
    """A ``{name, uid}`` claim, both omitempty."""
    return {k: str(meta[k]) for k in ("name", "uid") if meta.get(k)}


PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


def load_public_keys(pem: bytes) -> list[PublicKey]:
    """Every RSA/ECDSA key of a PEM file as keyutil's ``ParsePublicKeysPEM`` reads them:
    public keys, certificates' keys, and the public half of private keys."""
    from cryptography import x509

    keys: list[PublicKey] = []
    for block in _pem_blocks(pem):
        kind = block.split(b"\n", 1)[0]
        key: Any
        try:
            if b"CERTIFICATE" in kind:
                key = x509.load_pem_x509_certificate(block).public_key()
            elif b"PRIVATE KEY" in kind:
                key = serialization.load_pem_private_key(block, password=None).public_key()
            elif b"PUBLIC KEY" in kind:
                key = serialization.load_pem_public_key(block)
            else:
                continue
        except (ValueError, TypeError):
            continue
        if isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
            keys.append(key)
    if not keys:
        raise ValueError("data does not contain any valid RSA or ECDSA public keys")
    return keys


def _pem_blocks(pem: bytes) -> list[bytes]:
    out: list[bytes] = []
    rest = pem
    while True:
        start = rest.find(b"-----BEGIN ")
        if start < 0:
            return out
        end_marker = rest.find(b"-----END ", start)
        if end_marker < 0:
            return out
        end = rest.find(b"-----", end_marker + 9)
        if end < 0:
            return out
        out.append(rest[start:end + 5] + b"\n")
        rest = rest[end + 5:]


def _b64decode(part: str) -> bytes:
    """base64.RawURLEncoding: no padding allowed."""
    if "=" in part:
        raise ValueError("padded")
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class JWS:
    """A compact JWS whose header and payload decode (``jwt.ParseSigned``); not yet verified."""

    __slots__ = ("claims", "header", "signature", "signing_input")

    def __init__(self, header: dict[str, Any], claims: dict[str, Any], signing_input: bytes,
                 signature: bytes) -> None:
        self.header = header
        self.claims = claims
        self.signing_input = signing_input
        self.signature = signature

    @property
    def key_id(self) -> str:
        return str(self.header.get("kid") or "")

    def verify(self, key: PublicKey) -> bool:
        """The signature checks out with ``key`` for the header's algorithm."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        alg = str(self.header.get("alg") or "")
        digest = {"256": hashes.SHA256(), "384": hashes.SHA384(),
                  "512": hashes.SHA512()}.get(alg[2:])
        if digest is None:
            return False
        try:
            if isinstance(key, rsa.RSAPublicKey) and alg[:2] in ("RS", "PS"):
                pad: padding.AsymmetricPadding = (
                    padding.PKCS1v15() if alg[:2] == "RS"
                    else padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size))
                key.verify(self.signature, self.signing_input, pad, digest)
                return True
            if isinstance(key, ec.EllipticCurvePublicKey) and alg[:2] == "ES":
                size = (key.curve.key_size + 7) // 8
                if len(self.signature) != 2 * size:
                    return False
                r = int.from_bytes(self.signature[:size], "big")
                s_ = int.from_bytes(self.signature[size:], "big")
                key.verify(encode_dss_signature(r, s_), self.signing_input, ec.ECDSA(digest))
                return True
        except InvalidSignature:
            return False
        return False


def parse_jws(token: str) -> JWS | None:
    """The compact JWS ``token`` if it is one (three base64url parts, JSON header with an
    ``alg`` and JSON object payload), else None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header = json.loads(_b64decode(parts[0]))
        claims = json.loads(_b64decode(parts[1]))
        signature = _b64decode(parts[2])
    except ValueError:
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict) or not header.get("alg"):
        return None
    return JWS(header, claims, f"{parts[0]}.{parts[1]}".encode(), signature)


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
