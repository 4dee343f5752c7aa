"""Delegated authentication and authorization of the controller manager's HTTPS endpoints.

kube-controller-manager counterpart: k8s.io/apiserver's ``DelegatingAuthenticationOptions``
and ``DelegatingAuthorizationOptions`` (server/options/authentication.go, authorization.go),
the delegating authenticator (authenticatorfactory/delegating.go: bearer tokens checked
with a TokenReview, cached; anonymous when there is no token) and authorizer
(authorizerfactory: the privileged group ``system:masters``, the always-allowed paths,
then a SubjectAccessReview, cached), and the filters' answers
(endpoints/handlers/responsewriters: 401 ``Unauthorized``, 403 ``forbidden: User "u"
cannot get path "/metrics"``).

Data flow: request ──Authorization: Bearer T──► :meth:`DelegatedAuth.authenticate`
(cache by token, 10 s, else POST tokenreviews) ──user──► :meth:`DelegatedAuth.authorize`
(system:masters or an always-allowed path, else cache by (user, groups, verb, path), 10 s,
else POST subjectaccessreviews with nonResourceAttributes {path, verb}) ──► handler, or
the Status of the refusal.

Deliberate deviations: without ``--authentication-kubeconfig`` /
``--authorization-kubeconfig`` upstream falls back to the in-cluster config and,
outside a cluster, to no delegation at all (every request anonymous, every
non-allowed path refused); pykcm delegates with the manager's own kubeconfig then,
and says so in a warning, so that a manager started with ``--kubeconfig`` alone
serves /metrics to whoever the API server allows. No client certificates nor
request-header (front-proxy) authentication: ``--authentication-skip-lookup`` and
``--authentication-tolerate-lookup-failure`` are accepted and change nothing (there is
no ``extension-apiserver-authentication`` lookup to skip). Reviews are sent as JSON
(upstream's client asks for protobuf) and are not retried with backoff: a failed
TokenReview is a 401 (the union authenticator fails on error), a failed
SubjectAccessReview a 500 ``Internal Server Error: "<uri>": <error>`` (plain text, not
cached), as upstream's authorization filter answers an authorizer's error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pykcm.client import Client

__all__ = [
    "ANONYMOUS",
    "AuthorizerError",
    "DelegatedAuth",
    "Refusal",
    "UserInfo",
    "path_allowed",
]

log = logging.getLogger("pykcm.manager.delegated_auth")

PRIVILEGED_GROUPS = ("system:masters",)
"""``AlwaysAllowGroups`` of upstream's delegating authorization options."""


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


@dataclass(frozen=True)
class Refusal:
    """An answer instead of the handler's: the code and the metav1.Status body (or, for
    an internal error, plain text)."""

    code: int
    body: dict[str, Any] | str


UNAUTHORIZED = Refusal(401, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Failure", "message": "Unauthorized",
                             "reason": "Unauthorized", "code": 401})


def forbidden(user: UserInfo, verb: str, path: str, reason: str = "") -> Refusal:
    """responsewriters.Forbidden of a non-resource request."""
    msg = f"User {_go_quote(user.name)} cannot {verb} path {_go_quote(path)}"
    if reason:
        msg = f"{msg}: {reason}"
    return Refusal(403, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Failure", "message": f"forbidden: {msg}",
                         "reason": "Forbidden", "details": {}, "code": 403})


def _go_quote(s: str) -> str:
    import json
    return json.dumps(s, ensure_ascii=False)


def path_allowed(patterns: Sequence[str], path: str) -> bool:
    """k8s.io/apiserver's path authorizer: exact paths, or prefixes ending in ``*``
    (a leading ``/`` optional in the pattern)."""
    for p in patterns:
        p = p if p.startswith("/") else "/" + p
        if p.endswith("*"):
            if path.startswith(p[:-1]):
                return True
        elif path == p:
            return True
    return False


class AuthorizerError(Exception):
    """The SubjectAccessReview could not be made."""


class _TTLCache:
    def __init__(self) -> None:
        self._items: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> tuple[bool, Any]:
        hit = self._items.get(key)
        if hit is None or hit[0] < time.monotonic():
            self._items.pop(key, None)
            return False, None
        return True, hit[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        if len(self._items) > 10_000:  # bounded: drop the expired, then everything
            now = time.monotonic()
            self._items = {k: v for k, v in self._items.items() if v[0] >= now}
            if len(self._items) > 10_000:
                self._items.clear()
        self._items[key] = (time.monotonic() + ttl, value)


class DelegatedAuth:
    """Authenticates with TokenReview and authorizes with SubjectAccessReview through
    ``authn_client`` / ``authz_client`` (the manager closes them with :meth:`close`)."""

    def __init__(self, authn_client: Client, authz_client: Client, *,
                 always_allow_paths: Sequence[str] = ("/healthz", "/readyz", "/livez"),
                 token_cache_ttl: float = 10.0, allow_cache_ttl: float = 10.0,
                 deny_cache_ttl: float = 10.0) -> None:
        self.authn_client = authn_client
        self.authz_client = authz_client
        self.always_allow_paths = list(always_allow_paths)
        self.token_cache_ttl = token_cache_ttl
        self.allow_cache_ttl = allow_cache_ttl
        self.deny_cache_ttl = deny_cache_ttl
        self._tokens = _TTLCache()
        self._decisions = _TTLCache()
        self.token_reviews = 0
        self.access_reviews = 0

    async def close(self) -> None:
        await self.authn_client.close()
        if self.authz_client is not self.authn_client:
            await self.authz_client.close()

    async def check(self, authorization_header: str | None, method: str,
                    path: str, request_uri: str | None = None) -> Refusal | None:
        """None when the request may go on; else the refusal to send."""
        user = await self.authenticate(authorization_header)
        if user is None:
            return UNAUTHORIZED
        verb = method.lower()
        try:
            allowed, reason = await self.authorize(user, verb, path)
        except AuthorizerError as exc:
            return Refusal(500, f"Internal Server Error: {_go_quote(request_uri or path)}: "
                                f"{exc}\n")
        return None if allowed else forbidden(user, verb, path, reason)

    async def authenticate(self, header: str | None) -> UserInfo | None:
        """The user of a request: anonymous without a bearer token; None (401) for a
        token the API server does not accept, or when it cannot be asked."""
        if not header:
            return ANONYMOUS
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            # bearertoken.New only claims "Bearer <token>"; anything else is anonymous.
            return ANONYMOUS
        hit, cached = self._tokens.get(token)
        if hit:
            return cached  # type: ignore[no-any-return]
        try:
            self.token_reviews += 1
            review = await self.authn_client.request(
                "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                      "spec": {"token": token}})
        except Exception as exc:  # noqa: BLE001 - the union authenticator fails the request
            log.warning("Failed to make webhook authenticator request: %s", exc)
            return None
        status = review.get("status") if isinstance(review, dict) else None
        user: UserInfo | None = None
        if isinstance(status, dict) and status.get("authenticated"):
            u = status.get("user") or {}
            extra = u.get("extra") or {}
            user = UserInfo(str(u.get("username", "")), str(u.get("uid", "")),
                            tuple(u.get("groups") or ()),
                            tuple(sorted((k, tuple(v)) for k, v in extra.items())))
        # cache.New(tokenAuth, false, ttl, ttl): answers good and bad are both remembered.
        self._tokens.put(token, user, self.token_cache_ttl)
        return user

    async def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason) of the union authorizer: privileged groups, the always-allowed
        paths, then the API server's SubjectAccessReview (:class:`AuthorizerError` when it
        cannot be asked)."""
        if any(g in PRIVILEGED_GROUPS for g in user.groups):
            return True, ""
        if path_allowed(self.always_allow_paths, path):
            return True, ""
        key = (user, verb, path)
        hit, cached = self._decisions.get(key)
        if hit:
            return cached  # type: ignore[no-any-return]
        spec: dict[str, Any] = {"nonResourceAttributes": {"path": path, "verb": verb},
                                "user": user.name}
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        try:
            self.access_reviews += 1
            review = await self.authz_client.request(
                "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                body={"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                      "spec": spec})
        except Exception as exc:  # an authorizer error is the request's 500
            log.warning("Failed to make webhook authorizer request: %s", exc)
            raise AuthorizerError(str(exc) or type(exc).__name__) from exc
        status = review.get("status") if isinstance(review, dict) else None
        status = status if isinstance(status, dict) else {}
        allowed = bool(status.get("allowed")) and not status.get("denied")
        answer = (allowed, str(status.get("reason") or ""))
        self._decisions.put(key, answer,
                            self.allow_cache_ttl if allowed else self.deny_cache_ttl)
        return answer
