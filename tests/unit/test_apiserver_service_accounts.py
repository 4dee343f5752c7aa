"""The API server's service-account pieces without a server: ServiceAccount admission, bound
token claims and JWS verification, the token authenticators and their error wording, the
TokenRequest answer. Expected values are kube-apiserver v1.36's (probed with the kit)."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import time
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pykcm.api import serviceaccount as sa_api
from pykcm.apiserver.admission import mutating as admission
from pykcm.apiserver.auth.authentication import TokenAuthenticator, TokenError, User, go_aggregate
from pykcm.apiserver.auth.service_accounts import (
    BoundTokenAuthenticator,
    LegacyTokenAuthenticator,
    ServiceAccountTokens,
    issue_token,
    self_subject_review,
    token_review,
)
from pykcm.apiserver.errors import StatusError

ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture(scope="module")
def rsa_pem() -> tuple[bytes, bytes]:
    return sa_api.generate_key_pair()


@pytest.fixture
def tokens(rsa_pem: tuple[bytes, bytes]) -> ServiceAccountTokens:
    key = sa_api.load_private_key(rsa_pem[0])
    return ServiceAccountTokens(key, [key.public_key()])


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _no_sleep(_: float) -> None:
    return None


def pod(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    base.update(spec)
    return {"metadata": {"name": "p"}, "spec": base}


def account(name: str = "default", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, **fields}


# -- ServiceAccount admission ----------------------------------------------------------------

def test_default_account_and_token_volume_in_every_container() -> None:
    p = pod(initContainers=[{"name": "i", "image": "busybox"}],
            containers=[{"name": "a", "image": "nginx"},
                        {"name": "b", "image": "nginx",
                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            volumes=[{"name": "data", "emptyDir": {}}])
    run(admission.service_account(p, "ns", "p", {"default": account()}.get, _no_sleep))
    spec = p["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    vol = spec["volumes"][-1]
    assert vol["name"].startswith("kube-api-access-") and len(vol["name"]) == 21
    assert vol["projected"] == {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}], "defaultMode": 420}
    mount = {"name": vol["name"], "readOnly": True,
             "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][1]["volumeMounts"] == [{"name": "data", "mountPath": "/data"},
                                                     mount]


def test_missing_account_is_refused_after_retrying_for_default() -> None:
    looked: list[str] = []
    slept: list[float] = []

    def lookup(name: str) -> dict[str, Any] | None:
        looked.append(name)
        return None

    async def sleep(d: float) -> None:
        slept.append(d)

    p = pod()
    with pytest.raises(StatusError) as err:
        run(admission.service_account(p, "ns", "web-7d4b9c6f5d-", lookup, sleep))
    assert err.value.code == 403 and err.value.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "web-7d4b9c6f5d-" is forbidden: error looking up service account '
                   'ns/default: serviceaccount "default" not found',
        "reason": "Forbidden", "code": 403,
        "details": {"name": "web-7d4b9c6f5d-", "kind": "pods"}}
    # the lister, then ten reads one interval (100-200 ms) apart
    assert looked == ["default"] * 11 and len(slept) == 9
    assert len(set(slept)) == 1 and 0.1 <= slept[0] <= 0.2
    looked.clear()
    slept.clear()
    with pytest.raises(StatusError):
        run(admission.service_account(pod(serviceAccountName="x"), "ns", "p", lookup, sleep))
    assert looked == ["x", "x"] and not slept


def test_a_default_created_meanwhile_is_found() -> None:
    calls = []

    def lookup(name: str) -> dict[str, Any] | None:
        calls.append(name)
        return account() if len(calls) > 3 else None

    p = pod()
    run(admission.service_account(p, "ns", "p", lookup, _no_sleep))
    assert len(calls) == 4 and p["spec"]["volumes"]


@pytest.mark.parametrize(("pod_pref", "sa_pref", "mounted"), [
    (None, None, True), (None, False, False), (True, False, True), (False, None, False),
    (False, True, False)])
def test_automount_preference(pod_pref: bool | None, sa_pref: bool | None,
                              mounted: bool) -> None:
    spec: dict[str, Any] = {} if pod_pref is None else {"automountServiceAccountToken": pod_pref}
    sa = account() if sa_pref is None else account(automountServiceAccountToken=sa_pref)
    p = pod(**spec)
    run(admission.service_account(p, "ns", "p", {"default": sa}.get, _no_sleep))
    assert ("volumes" in p["spec"]) is mounted
    assert ("volumeMounts" in p["spec"]["containers"][0]) is mounted


def test_own_mount_at_the_token_path_and_existing_token_volume() -> None:
    path = "/var/run/secrets/kubernetes.io/serviceaccount"
    p = pod(containers=[{"name": "a", "image": "x",
                         "volumeMounts": [{"name": "mine", "mountPath": path}]}])
    run(admission.service_account(p, "ns", "p", {"default": account()}.get, _no_sleep))
    assert "volumes" not in p["spec"]  # nobody needs the token volume
    p = pod(containers=[{"name": "a", "image": "x"}],
            volumes=[{"name": "kube-api-access-abcde", "emptyDir": {}}])
    run(admission.service_account(p, "ns", "p", {"default": account()}.get, _no_sleep))
    assert p["spec"]["volumes"] == [{"name": "kube-api-access-abcde", "emptyDir": {}}]
    assert p["spec"]["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-abcde"


def test_pull_secrets_come_from_the_account_unless_the_pod_has_some() -> None:
    sa = account(imagePullSecrets=[{"name": "r1"}, {"name": "r2"}])
    p = pod()
    run(admission.service_account(p, "ns", "p", {"default": sa}.get, _no_sleep))
    assert p["spec"]["imagePullSecrets"] == [{"name": "r1"}, {"name": "r2"}]
    p = pod(imagePullSecrets=[{"name": "mine"}])
    run(admission.service_account(p, "ns", "p", {"default": sa}.get, _no_sleep))
    assert p["spec"]["imagePullSecrets"] == [{"name": "mine"}]


def test_mountable_secrets_enforced_by_annotation() -> None:
    sa = account(metadata={"name": "default", "annotations": {
        "kubernetes.io/enforce-mountable-secrets": "true"}},
        secrets=[{"name": "ok"}], imagePullSecrets=[{"name": "pull"}])
    lookup = {"default": sa}.get
    ok = pod(volumes=[{"name": "v", "secret": {"secretName": "ok"}}])
    run(admission.service_account(ok, "ns", "p", lookup, _no_sleep))
    cases = [
        (pod(volumes=[{"name": "v", "secret": {"secretName": "s"}}]),
         ('volume with secret.secretName="s" is not allowed because service account default '
         "does not reference that secret")),
        (pod(initContainers=[{"name": "i", "envFrom": [{"secretRef": {"name": "s"}}]}]),
         ('init container i with envFrom referencing secret.secretName="s" is not allowed '
         "because service account default does not reference that secret")),
        (pod(containers=[{"name": "c", "env": [{"name": "X", "valueFrom": {
            "secretKeyRef": {"name": "s", "key": "k"}}}]}]),
         ('container c with envVar X referencing secret.secretName="s" is not allowed because '
         "service account default does not reference that secret")),
        (pod(imagePullSecrets=[{"name": "pull"}, {"name": "no"}]),
         ('imagePullSecrets[1].name="no" is not allowed because service account default does '
         "not reference that imagePullSecret")),
    ]
    for p, why in cases:
        with pytest.raises(StatusError) as err:
            run(admission.service_account(p, "ns", "p", lookup, _no_sleep))
        assert err.value.message == f'pods "p" is forbidden: {why}'


def test_mirror_pods_are_checked_not_mutated() -> None:
    mirror = {"kubernetes.io/config.mirror": "x"}
    p = pod()
    p["metadata"]["annotations"] = mirror
    before = copy.deepcopy(p)
    run(admission.service_account(p, "ns", "p", lambda _: None, _no_sleep))
    assert p == before
    for spec, why in [
        ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
        ({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
         "a mirror pod may not reference secrets"),
        ({"volumes": [{"name": "v", "projected": {"sources": [
            {"serviceAccountToken": {"path": "t"}}]}}]},
         "a mirror pod may not use ServiceAccountToken volume projections")]:
        p = pod(**spec)
        p["metadata"]["annotations"] = mirror
        with pytest.raises(StatusError) as err:
            run(admission.service_account(p, "ns", "p", lambda _: None, _no_sleep))
        assert err.value.message == f'pods "p" is forbidden: {why}'


# -- claims and signatures -------------------------------------------------------------------

def _payload(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def test_bound_claims_of_a_pod_token(rsa_pem: tuple[bytes, bytes]) -> None:
    sa = account()
    claims, private = sa_api.bound_claims(
        sa, audiences=[ISSUER], expiration_seconds=sa_api.EXPIRATION_EXTENSION_SECONDS,
        now=1000, jti="j", pod={"metadata": {"name": "p", "uid": "pu"}},
        node={"metadata": {"name": "n"}}, warn_after=3607)
    token = sa_api.JWTTokenGenerator(ISSUER, sa_api.load_private_key(rsa_pem[0])).generate_token(
        claims, private)
    # go-jose's serialization: sorted keys at every level, omitempty refs
    assert token.split(".")[1] == base64.urlsafe_b64encode(json.dumps({
        "aud": [ISSUER], "exp": 1000 + 31536000, "iat": 1000, "iss": ISSUER, "jti": "j",
        "kubernetes.io": {"namespace": "ns", "node": {"name": "n"},
                          "pod": {"name": "p", "uid": "pu"},
                          "serviceaccount": {"name": "default", "uid": "uid-default"},
                          "warnafter": 4607},
        "nbf": 1000, "sub": "system:serviceaccount:ns:default"},
        separators=(",", ":")).encode()).rstrip(b"=").decode()


def test_jws_verification_rsa_and_ecdsa(rsa_pem: tuple[bytes, bytes]) -> None:
    rsa_key = sa_api.load_private_key(rsa_pem[0])
    ec_key = ec.generate_private_key(ec.SECP384R1())
    for key in (rsa_key, ec_key):
        token = sa_api.JWTTokenGenerator("i", key).generate_token({"sub": "x"}, {})
        jws = sa_api.parse_jws(token)
        assert jws is not None and jws.key_id == sa_api.key_id(key)
        assert jws.verify(key.public_key())
        assert not jws.verify((ec_key if key is rsa_key else rsa_key).public_key())
        tampered = sa_api.parse_jws(token[:-4] + ("AAAA" if token[-4:] != "AAAA" else "BBBB"))
        assert tampered is not None and not tampered.verify(key.public_key())
    for bad in ("x", "a.b", "e30.e30.", "W10.e30.", "e30.e30.AA"):  # {} header has no alg
        assert sa_api.parse_jws(bad) is None


def test_public_keys_from_public_private_and_certificate_pems(rsa_pem: tuple[bytes, bytes]
                                                              ) -> None:
    private, public = rsa_pem
    key = sa_api.load_private_key(private)
    assert [k.public_numbers() for k in sa_api.load_public_keys(public)] == [
        key.public_key().public_numbers()]
    assert len(sa_api.load_public_keys(private + public)) == 2
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sa")])
    now = __import__("datetime").datetime.now(__import__("datetime").UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now).sign(key, hashes.SHA256()))
    [from_cert] = sa_api.load_public_keys(cert.public_bytes(serialization.Encoding.PEM))
    assert from_cert.public_numbers() == key.public_key().public_numbers()
    with pytest.raises(ValueError):
        sa_api.load_public_keys(b"nothing")


def test_split_username() -> None:
    assert sa_api.split_username("system:serviceaccount:ns:sa") == ("ns", "sa")
    for bad in ("system:serviceaccount:ns", "system:serviceaccount:ns:a:b", "admin",
                "system:serviceaccount:NS:sa", "system:serviceaccount::sa"):
        assert sa_api.split_username(bad) is None


# -- authenticators ----------------------------------------------------------------------------

class Objects:
    """A fake committed store: (resource, namespace, name) -> object."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}

    def add(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        m = obj["metadata"]
        self.objects[(resource, m.get("namespace", ""), m["name"])] = obj
        return obj

    def __call__(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((resource, namespace, name))


def _auth(tokens: ServiceAccountTokens, objects: Objects,
          used: list[dict[str, Any]] | None = None, cache_ttl: float = 0) -> TokenAuthenticator:
    auth = TokenAuthenticator(success_cache_ttl=cache_ttl)
    auth.add("admin-token", User("admin", "admin", ("system:masters",)))
    tokens.install(auth, objects, used.append if used is not None else None)
    return auth


def test_aggregate_wording() -> None:
    assert go_aggregate(["a"]) == "a"
    assert go_aggregate(["a", "a"]) == "a"
    assert go_aggregate(["a", "b", "a"]) == "[a, b]"


def test_bound_token_authenticates_with_upstream_groups_and_extra(
        tokens: ServiceAccountTokens) -> None:
    objects = Objects()
    sa = objects.add("serviceaccounts", account())
    objects.add("pods", {"metadata": {"name": "p", "namespace": "ns", "uid": "pu"},
                         "spec": {"serviceAccountName": "default", "nodeName": "n"}})
    objects.add("nodes", {"metadata": {"name": "n", "uid": "nu"}})
    auth = _auth(tokens, objects)
    answer = issue_token(tokens, objects, "ns", "default", {"spec": {
        "expirationSeconds": 3607, "boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                                      "name": "p"}}}, [])
    token = answer["status"]["token"]
    resp = auth.authenticate_token(token)
    assert resp.user.name == "system:serviceaccount:ns:default"
    assert resp.user.uid == sa["metadata"]["uid"]
    assert resp.user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns",
                                "system:authenticated")
    extra = resp.user.extra_dict()
    assert extra["authentication.kubernetes.io/pod-name"] == ["p"]
    assert extra["authentication.kubernetes.io/pod-uid"] == ["pu"]
    assert extra["authentication.kubernetes.io/node-name"] == ["n"]
    assert extra["authentication.kubernetes.io/node-uid"] == ["nu"]
    assert extra["authentication.kubernetes.io/credential-id"] == [
        "JTI=" + _payload(token)["jti"]]
    # the projected volume's request (3607 s, API audiences, pod-bound) is extended
    claims = _payload(token)
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    assert claims["kubernetes.io"]["warnafter"] == claims["iat"] + 3607
    assert answer["spec"]["expirationSeconds"] == 3607
    # the pod goes: the token with it
    del objects.objects[("pods", "ns", "p")]
    with pytest.raises(TokenError) as err:
        auth.authenticate_token(token)
    assert str(err.value) == "[invalid bearer token, service account token has been invalidated]"


def test_successes_are_remembered_for_a_while(tokens: ServiceAccountTokens) -> None:
    objects = Objects()
    objects.add("serviceaccounts", account())
    auth = _auth(tokens, objects, cache_ttl=10)
    token = issue_token(tokens, objects, "ns", "default", {}, [])["status"]["token"]
    assert auth.authenticate_token(token).user.name == "system:serviceaccount:ns:default"
    del objects.objects[("serviceaccounts", "ns", "default")]
    # as kube-apiserver's token cache: the account is gone, the token still works a moment
    assert auth.authenticate_token(token).user.name == "system:serviceaccount:ns:default"
    # ... for the audiences it was asked for; other audiences check again
    with pytest.raises(TokenError):
        auth.authenticate_token(token, [ISSUER, "x"])
    auth._cache.clear()
    with pytest.raises(TokenError):
        auth.authenticate_token(token)


def test_bound_token_failures_word_as_upstream(tokens: ServiceAccountTokens,
                                               rsa_pem: tuple[bytes, bytes]) -> None:
    objects = Objects()
    objects.add("serviceaccounts", account())
    auth = _auth(tokens, objects)
    key = sa_api.load_private_key(rsa_pem[0])
    gen = sa_api.JWTTokenGenerator(ISSUER, key)
    now = int(time.time())

    def token(sa: dict[str, Any] | None = None, **kw: Any) -> str:
        args: dict[str, Any] = {"audiences": [ISSUER], "expiration_seconds": 3600, "now": now,
                                "jti": "j"}
        args.update(kw)
        return gen.generate_token(*sa_api.bound_claims(sa or account(), **args))

    def error(tok: str, audiences: list[str] | None = None) -> str:
        with pytest.raises(TokenError) as err:
            auth.authenticate_token(tok, audiences)
        return str(err.value)

    assert error(token(now=now - 7200)) == (
        "[invalid bearer token, service account token has expired]")
    assert error(token(now=now + 3600)) == (
        "[invalid bearer token, service account token is not valid yet]")
    good = token()
    assert error(good[:-4] + ("AAAA" if good[-4:] != "AAAA" else "BBBB")) == (
        "[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]")
    other = sa_api.load_private_key(sa_api.generate_key_pair()[0])
    assert error(sa_api.JWTTokenGenerator(ISSUER, other).generate_token(
        *sa_api.bound_claims(account(), audiences=[ISSUER], expiration_seconds=3600, now=now,
                             jti="j"))) == "[invalid bearer token, invalid signature, no keys found]"
    wrong = account()
    wrong["metadata"]["uid"] = "wrong"
    assert error(token(wrong)) == ("[invalid bearer token, service account UID (uid-default) "
                                   "does not match claim (wrong)]")
    assert error(token(account("nosuch"))) == (
        '[invalid bearer token, serviceaccounts "nosuch" not found]')
    assert error(good, ["x"]) == (
        '[invalid bearer token, token audiences ["https://kubernetes.default.svc.cluster.local"]'
        ' is invalid for the target audiences ["x"]]')
    assert error("garbage") == "invalid bearer token"
    assert auth.authenticate_token(good, ["x", ISSUER]).audiences == (ISSUER,)
    # the static tokens answer for the API audiences only
    assert auth.authenticate_token("admin-token").audiences == (ISSUER,)
    assert error("admin-token", ["x"]) == "invalid bearer token"


def test_legacy_secret_tokens(tokens: ServiceAccountTokens, rsa_pem: tuple[bytes, bytes]) -> None:
    objects = Objects()
    sa = objects.add("serviceaccounts", account(secrets=[{"name": "tok"}]))
    gen = sa_api.JWTTokenGenerator(sa_api.LEGACY_ISSUER, sa_api.load_private_key(rsa_pem[0]))
    secret: dict[str, Any] = {"metadata": {"name": "tok", "namespace": "ns", "uid": "su"}}
    token = gen.generate_token(*sa_api.legacy_claims(sa, secret))
    secret["data"] = {"token": base64.b64encode(token.encode()).decode()}
    objects.add("secrets", secret)
    used: list[dict[str, Any]] = []
    auth = _auth(tokens, objects, used)
    resp = auth.authenticate_token(token)
    assert resp.user == User("system:serviceaccount:ns:default", "uid-default", (
        "system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"))
    assert resp.warnings == [("Use tokens from the TokenRequest API or manually created "
                             "secret-based tokens instead of auto-generated secret-based tokens.")]
    assert used == [secret]  # the last-used label is due
    secret["metadata"]["labels"] = {
        sa_api.LAST_USED_LABEL_KEY: time.strftime("%Y-%m-%d", time.gmtime())}
    used.clear()
    auth.authenticate_token(token)
    assert not used  # once a day
    secret["metadata"]["labels"][sa_api.INVALID_SINCE_LABEL_KEY] = "2026-01-01"
    with pytest.raises(TokenError) as err:
        auth.authenticate_token(token)
    assert "has been marked invalid" in str(err.value)
    secret["data"]["token"] = base64.b64encode(b"other").decode()
    with pytest.raises(TokenError) as err:
        auth.authenticate_token(token)
    assert str(err.value) == "[invalid bearer token, Token does not match server's copy]"
    del objects.objects[("secrets", "ns", "tok")]
    with pytest.raises(TokenError) as err:
        auth.authenticate_token(token)
    assert str(err.value) == "[invalid bearer token, Token has been invalidated]"
    assert isinstance(auth._others[0], LegacyTokenAuthenticator)
    assert isinstance(auth._others[1], BoundTokenAuthenticator)


# -- TokenRequest and the reviews ----------------------------------------------------------------

def test_token_request_answer_and_errors(tokens: ServiceAccountTokens) -> None:
    objects = Objects()
    objects.add("serviceaccounts", account())
    warnings: list[str] = []
    answer = issue_token(tokens, objects, "ns", "default", {}, warnings)
    assert answer["metadata"]["uid"] == "uid-default" and not warnings
    assert answer["spec"] == {"audiences": [ISSUER], "expirationSeconds": 3600,
                              "boundObjectRef": None}
    limited = ServiceAccountTokens(tokens.signing_key, tokens.public_keys,
                                   max_expiration_seconds=7200)
    answer = issue_token(limited, objects, "ns", "default",
                         {"spec": {"expirationSeconds": 10000}}, warnings)
    assert answer["spec"]["expirationSeconds"] == 7200
    assert warnings == ["requested expiration of 10000 seconds shortened to 7200 seconds"]

    def refused(body: dict[str, Any], name: str = "default") -> StatusError:
        with pytest.raises(StatusError) as err:
            issue_token(tokens, objects, "ns", name, body, [])
        return err.value

    assert refused({}, "missing").message == 'serviceaccounts "missing" not found'
    e = refused({"spec": {"expirationSeconds": 5}})
    assert (e.code, e.message) == (422, ('TokenRequest.authentication.k8s.io "" is invalid: '
                                        "spec.expirationSeconds: Invalid value: 5: may not "
                                        "specify a duration less than 10 minutes"))
    e = refused({"metadata": {"uid": "zz"}})
    assert (e.code, e.message) == (
        409, ('Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "default": '
             "the UID in the token request (zz) does not match the UID of the service account "
             "(uid-default)"))
    e = refused({"spec": {"boundObjectRef": {"kind": "Deployment", "apiVersion": "apps/v1",
                                             "name": "d"}}})
    assert (e.code, e.message) == (400, ("cannot bind token to object of type apps/v1, "
                                        "Kind=Deployment"))


def test_reviews(tokens: ServiceAccountTokens) -> None:
    objects = Objects()
    objects.add("serviceaccounts", account())
    auth = _auth(tokens, objects)
    token = issue_token(tokens, objects, "ns", "default", {}, [])["status"]["token"]
    review = token_review(auth, {"spec": {"token": token}})
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == "system:serviceaccount:ns:default"
    assert review["status"]["audiences"] == [ISSUER]
    assert token_review(auth, {"spec": {"token": "x"}})["status"] == {
        "user": {}, "error": "invalid bearer token"}
    with pytest.raises(StatusError) as err:
        token_review(auth, {"spec": {}})
    assert err.value.message == "token is required for TokenReview in authentication"
    ssr = self_subject_review(User("admin", "admin", ("system:masters",
                                                      "system:authenticated")))
    assert ssr["status"] == {"userInfo": {"username": "admin", "uid": "admin", "groups": [
        "system:masters", "system:authenticated"]}}
