"""The request path's authorization steps: impersonation, then the authorizer.

kube-apiserver counterpart: the handler chain's ``WithImpersonation`` (``k8s.io/apiserver
/pkg/endpoints/filters/impersonation``) and ``WithAuthorization``, with the attributes of
``RequestInfoFactory`` (a namespace object's own name is its namespace; a list or watch
with ``fieldSelector=metadata.name=X`` names X).

Data flow: server.py authenticates a request, then calls :func:`impersonate` (the
``Impersonate-*`` headers: each impersonated user, service account, group, uid and
extra needs ``impersonate`` on it; the request then runs as the new user), then
:func:`request_attributes` + the authorizer; a denial is
``authorizer.forbidden_error``.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Final

from pykcm.api.validation import go_quote, go_sprintf_slice
from pykcm.apiserver import errors
from pykcm.apiserver.auth.authentication import AUTHENTICATED_GROUP, User
from pykcm.apiserver.endpoints.request_info import resolve
from pykcm.apiserver.rbac.authorizer import SA_PREFIX, RBACAuthorizer, forbidden_error
from pykcm.apiserver.rbac.rules import Attributes

__all__ = ["impersonate", "request_attributes"]

ANONYMOUS: Final = "system:anonymous"
UNAUTHENTICATED: Final = "system:unauthenticated"
_EXTRA_PREFIX: Final = "impersonate-extra-"


def _field_selector_name(query: Mapping[str, str]) -> str:
    sel = query.get("fieldSelector", "")
    for term in sel.split(","):
        for op in ("==", "="):
            key, found, value = term.partition(op)
            if found and key.strip() == "metadata.name" and "!" not in key:
                value = value.strip()
                if value and value not in (".", "..") and "/" not in value and "%" not in value:
                    return value
                return ""
    return ""


def request_attributes(user: User, method: str, path: str,
                       query: Mapping[str, str]) -> Attributes:
    """The authorizer's attributes of one HTTP request."""
    watch = query.get("watch", "").lower() not in ("", "false", "0")
    info = resolve(method, path, watch)
    if not info.is_resource_request:
        return Attributes(user, method.lower(), is_resource_request=False, path=path)
    namespace = info.namespace
    if info.resource == "namespaces" and info.name:
        namespace = info.name
    name = info.name
    if not name and info.verb in ("list", "watch"):
        name = _field_selector_name(query)
    return Attributes(user, info.verb, namespace=namespace, api_group=info.group,
                      resource=info.resource, subresource=info.subresource, name=name,
                      path=path)


def _sa_parts(username: str) -> tuple[str, str] | None:
    if not username.startswith(SA_PREFIX):
        return None
    ns, sep, name = username[len(SA_PREFIX):].partition(":")
    return (ns, name) if sep and ns and name and ":" not in name else None


def impersonate(authorizer: RBACAuthorizer, requestor: User,
                headers: Mapping[str, str], all_headers: list[tuple[str, str]]) -> User:
    """The user a request runs as (``requestor`` when it impersonates nobody); raises
    the 400/403 StatusError upstream's filter answers."""
    username = headers.get("Impersonate-User", "")
    groups = [v for k, v in all_headers if k.lower() == "impersonate-group"]
    uid = headers.get("Impersonate-Uid", "")
    extra: dict[str, list[str]] = {}
    for k, v in all_headers:
        if k.lower().startswith(_EXTRA_PREFIX):
            key = urllib.parse.unquote(k[len(_EXTRA_PREFIX):].lower())
            extra.setdefault(key, []).append(v)
    if not username:
        if groups or extra or uid:
            raise errors.bad_request(
                f"requested &user.DefaultInfo{{Name:\"\", UID:{go_quote(uid)}, "
                f"Groups:{go_sprintf_slice(groups) if groups else '[]string(nil)'}, "
                "Extra:map[string][]string(nil)} without impersonating a user name")
        return requestor

    def check(attrs: Attributes) -> None:
        allowed, reason = authorizer.authorize(attrs)
        if not allowed:
            raise forbidden_error(attrs, reason)

    new_groups: list[str] = []
    sa = _sa_parts(username)
    if sa is not None:
        check(Attributes(requestor, "impersonate", namespace=sa[0], resource="serviceaccounts",
                         name=sa[1]))
        if not groups:
            new_groups = ["system:serviceaccounts", f"system:serviceaccounts:{sa[0]}"]
    else:
        check(Attributes(requestor, "impersonate", resource="users", name=username))
    for g in groups:
        check(Attributes(requestor, "impersonate", resource="groups", name=g))
        new_groups.append(g)
    for key, values in extra.items():
        for v in values:
            check(Attributes(requestor, "impersonate", api_group="authentication.k8s.io",
                             resource="userextras", subresource=key, name=v))
    if uid:
        check(Attributes(requestor, "impersonate", api_group="authentication.k8s.io",
                         resource="uids", name=uid))
    if username != ANONYMOUS:
        if AUTHENTICATED_GROUP not in new_groups and UNAUTHENTICATED not in new_groups:
            new_groups.append(AUTHENTICATED_GROUP)
    elif UNAUTHENTICATED not in new_groups:
        new_groups.append(UNAUTHENTICATED)
    return User(username, uid, tuple(new_groups),
                tuple(sorted((k, tuple(v)) for k, v in extra.items())))
