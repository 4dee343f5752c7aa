"""Authentication: bearer tokens, as kube-apiserver's static token file provides them.

The server always has one admin token (random, kept in the data dir); a token
file in kube-apiserver's CSV format (`token,user,uid,"group1,group2"`) adds
more users. A request with no token is anonymous and may only read the public
health and version endpoints (system:public-info-viewer); a wrong token is
always 401. Authorization beyond that (RBAC) is not implemented: every
authenticated user may do everything.
"""

from __future__ import annotations

import csv
import hmac
import os
import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()


ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


class TokenAuthenticator:
    def __init__(self, tokens: dict[str, User] | None = None) -> None:
        self._tokens: dict[str, User] = dict(tokens or {})

    def add(self, token: str, user: User) -> None:
        self._tokens[token] = user

    def authenticate(self, header: str | None) -> User | None:
        """The user for an Authorization header; None when absent; raises on a bad token."""
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise PermissionError("invalid bearer token")
        # compare bytes: compare_digest refuses str with non-ASCII characters (a hostile
        # header must get its 401, not an exception)
        given = token.encode("utf-8", "replace")
        for known, user in self._tokens.items():
            if hmac.compare_digest(known.encode("utf-8", "replace"), given):
                return user
        raise PermissionError("invalid bearer token")

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
