"""Authentication: bearer tokens, as kube-apiserver's token authenticators take them.

The chain, in kube-apiserver's order (its ``BuildAuthenticator`` plus the
loopback token's union in front)::

    Authorization: Bearer <token>
      ├─ the admin token (random, kept in the data dir) and the static token file
      │  (kube-apiserver's ``--token-auth-file`` CSV: ``token,user,uid,"group1,group2"``);
      │  audience-agnostic: they answer for the API audiences only
      ├─ further token authenticators (``add_authenticator``): the service-account
      │  ones of ``service_accounts.py`` (legacy Secret tokens, then bound tokens)
      │  (an authenticated token is remembered for 10 s, failures never: kube-apiserver's
      │  token cache and its default TTL; the static tokens need none)
      └─ the ``system:authenticated`` group added to whoever got through

A request with no token is anonymous and may only read the public health and
version endpoints (system:public-info-viewer); a wrong token is always 401.
TokenReview asks the same chain (``authenticate_token``) and reports its
error as kube-apiserver words it: Go's aggregate of ``invalid bearer token``
(the loopback authenticator's answer) and what the chain said.

What an authenticated user may do is RBAC's to say (rbac/authorizer.py, called by
server.py after this chain).
"""

from __future__ import annotations

import csv
import hmac
import os
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pykcm.api.clock import REAL_CLOCK, Clock

__all__ = [
    "ANONYMOUS_PATHS",
    "AUTHENTICATED_GROUP",
    "INVALID_BEARER_TOKEN",
    "AuthResponse",
    "TokenAuthenticator",
    "TokenError",
    "User",
    "go_aggregate",
    "load_or_create_admin_token",
]

AUTHENTICATED_GROUP = "system:authenticated"
INVALID_BEARER_TOKEN = "invalid bearer token"


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    # user.Info's Extra, sorted by key: ((key, (values...)), ...)
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def extra_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.extra}


@dataclass
class AuthResponse:
    """An authenticated token: who, for which audiences, and warnings for the response."""

    user: User
    audiences: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)


class TokenError(Exception):
    """A token authenticator recognised the token and refused it (the message is its
    error; several, an aggregate, travel as ``errors``)."""

    def __init__(self, *errors: str) -> None:
        super().__init__(go_aggregate(list(errors)))
        self.errors = list(errors)


# A token authenticator: (token, the audiences asked for, or None: the API audiences)
# -> a response, None when the token is not its kind, or TokenError.
TokenAuthenticatorFunc = Callable[[str, tuple[str, ...] | None], AuthResponse | None]

ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


def go_aggregate(messages: Sequence[str]) -> str:
    """utilerrors.Aggregate's Error(): one message as is, several deduplicated in brackets."""
    if len(messages) == 1:
        return messages[0]
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def intersect(a: Iterable[str], b: Iterable[str]) -> tuple[str, ...]:
    """authenticator.Audiences.Intersect: the values of ``a`` that ``b`` has, in a's order."""
    bs = set(b)
    return tuple(x for x in a if x in bs)


class TokenAuthenticator:
    SUCCESS_CACHE_SIZE = 4096

    def __init__(self, tokens: dict[str, User] | None = None,
                 api_audiences: Sequence[str] = (), success_cache_ttl: float = 10.0,
                 clock: Clock = REAL_CLOCK) -> None:
        # the server's clock: a cached success expires with the tokens it validated
        self.clock = clock
        self._tokens: dict[str, User] = dict(tokens or {})
        self.api_audiences: tuple[str, ...] = tuple(api_audiences)
        self._others: list[TokenAuthenticatorFunc] = []
        self.success_cache_ttl = success_cache_ttl
        # (token, audiences) -> (expiry, response) of the token union's successes
        self._cache: dict[tuple[str, tuple[str, ...] | None], tuple[float, AuthResponse]] = {}

    def add(self, token: str, user: User) -> None:
        self._tokens[token] = user

    def add_authenticator(self, fn: TokenAuthenticatorFunc) -> None:
        """A further token authenticator, asked after the static tokens (in order added)."""
        self._others.append(fn)

    def authenticate(self, header: str | None) -> User | None:
        """The user for an Authorization header; None when absent; raises on a bad token."""
        resp = self.authenticate_request(header)
        return resp.user if resp is not None else None

    def authenticate_request(self, header: str | None) -> AuthResponse | None:
        """The authenticated response for an Authorization header (None when absent);
        raises PermissionError on a bad one."""
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise PermissionError(INVALID_BEARER_TOKEN)
        try:
            return self.authenticate_token(token)
        except TokenError as exc:
            raise PermissionError(str(exc)) from None

    def authenticate_token(self, token: str,
                           audiences: Sequence[str] | None = None) -> AuthResponse:
        """Run the chain on ``token`` for ``audiences`` (None: the API audiences); raises
        :class:`TokenError` with kube-apiserver's aggregate message when nobody takes it."""
        auds = tuple(audiences) if audiences else None
        now = self.clock.monotonic()
        static = self._static(token, auds)
        cached = self._cache.get((token, auds)) if static is None else None
        if static is not None:
            resp = static  # fixed for the server's life (upstream): no cache needed
        elif cached is not None and cached[0] > now:
            resp = cached[1]
        else:
            resp = self._union(token, auds)
            if self.success_cache_ttl > 0:
                if len(self._cache) >= self.SUCCESS_CACHE_SIZE:
                    self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                    if len(self._cache) >= self.SUCCESS_CACHE_SIZE:
                        self._cache.clear()
                self._cache[(token, auds)] = (now + self.success_cache_ttl, resp)
        user = resp.user
        groups = user.groups if AUTHENTICATED_GROUP in user.groups else (
            *user.groups, AUTHENTICATED_GROUP)
        return AuthResponse(User(user.name, user.uid, groups, user.extra), resp.audiences,
                            list(resp.warnings))

    def _union(self, token: str, auds: tuple[str, ...] | None) -> AuthResponse:
        """The token authenticators after the static tokens, in order: the first that takes
        the token answers."""
        errors: list[str] = []
        resp: AuthResponse | None = None
        for fn in self._others:
            try:
                resp = fn(token, auds)
            except TokenError as exc:
                errors.extend(exc.errors)
                continue
            if resp is not None:
                break
        if resp is None:
            # the loopback token's bearer authenticator fails first, then the main one
            raise TokenError(INVALID_BEARER_TOKEN, *(errors or [INVALID_BEARER_TOKEN]))
        return resp

    def _static(self, token: str, audiences: tuple[str, ...] | None) -> AuthResponse | None:
        """The static tokens, audience-agnostic (WrapAudienceAgnosticToken)."""
        # compare bytes: compare_digest refuses str with non-ASCII characters (a hostile
        # header must get its 401, not an exception)
        given = token.encode("utf-8", "replace")
        found: User | None = None
        for known, user in self._tokens.items():
            if hmac.compare_digest(known.encode("utf-8", "replace"), given):
                found = user
                break
        if found is None:
            return None
        if audiences is None:
            return AuthResponse(found, self.api_audiences)
        auds = intersect(self.api_audiences, audiences)
        if not auds:
            return None
        return AuthResponse(found, auds)

    def load_csv(self, path: str) -> None:
        """kube-apiserver --token-auth-file format: token,user,uid[,"group1,group2"]."""
        with open(path, newline="") as f:
            for lineno, row in enumerate(csv.reader(f), 1):
                if not row or row[0].startswith("#"):
                    continue
                if len(row) < 3:
                    raise ValueError(f"{path}:{lineno}: expected token,user,uid[,groups]")
                groups = tuple(g for g in (row[3].split(",") if len(row) > 3 else []) if g)
                self.add(row[0].strip(), User(row[1].strip(), row[2].strip(), groups))


def user_info(user: User) -> dict[str, object]:
    """authentication.k8s.io/v1 UserInfo of a user (its fields omitempty)."""
    out: dict[str, object] = {}
    if user.name:
        out["username"] = user.name
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = user.extra_dict()
    return out


def sorted_extra(extra: Mapping[str, Sequence[str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((k, tuple(extra[k])) for k in sorted(extra))


def load_or_create_admin_token(directory: str | None) -> str:
    """The admin token, persisted 0600 in the data dir so kubeconfigs stay valid."""
    if directory is None:
        return secrets.token_urlsafe(32)
    path = os.path.join(directory, "admin.token")
    try:
        with open(path) as f:
            tok = f.read().strip()
            if tok:
                return tok
    except FileNotFoundError:
        pass
    tok = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(tok + "\n")
    return tok
