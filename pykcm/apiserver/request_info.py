"""Request info: what a URL path and method ask for (apiserver's RequestInfoFactory).

Every request is resolved into a `RequestInfo` before anything else looks at
it: the handlers dispatch on `verb` and the resource, auth and discovery do not
have to parse paths. Paths follow kube-apiserver:

    /api/v1/namespaces/{ns}/{resource}[/{name}[/{subresource}]]
    /apis/{group}/{version}/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]
    /api/v1/watch/...  (legacy watch paths)
"""

from __future__ import annotations

from dataclasses import dataclass

_METHOD_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(slots=True)
class RequestInfo:
    is_resource_request: bool
    path: str
    verb: str = ""
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()


def resolve(method: str, path: str, query_watch: bool) -> RequestInfo:
    """Resolve a request; `query_watch` is true for ?watch=1/true."""
    parts = [p for p in path.split("/") if p]
    info = RequestInfo(is_resource_request=False, path=path, parts=tuple(parts))
    if not parts or parts[0] not in ("api", "apis"):
        return info
    info.api_prefix = parts[0]
    rest = parts[1:]
    if parts[0] == "api":
        if not rest:
            return info
        info.version = rest[0]
        rest = rest[1:]
    else:
        if len(rest) < 2:
            if rest:
                info.group = rest[0]
            return info
        info.group, info.version = rest[0], rest[1]
        rest = rest[2:]
    if not rest:
        return info
    info.is_resource_request = True
    verb = _METHOD_VERBS.get(method.upper(), method.lower())
    legacy_watch = False
    if rest[0] == "watch":
        legacy_watch = True
        rest = rest[1:]
    if not rest:
        info.is_resource_request = False
        return info
    if rest[0] == "namespaces":
        if len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            info.namespace = rest[1]
            rest = rest[2:]
        elif len(rest) >= 2:
            # The namespace object itself (namespaces/{name}[/{status|finalize}]).
            info.namespace = rest[1]
    info.resource = rest[0]
    if len(rest) >= 2:
        info.name = rest[1]
    if len(rest) >= 3:
        info.subresource = rest[2]
    if len(rest) > 3:
        info.subresource = "/".join(rest[2:])
    if info.resource == "namespaces":
        # A namespace's own namespace is empty, as upstream reports it.
        info.namespace = ""
    # ?watch=1 makes a watch of a collection only; on a named object it is a GET
    # (RequestInfoFactory); /watch/ paths watch either.
    if legacy_watch or (verb == "get" and query_watch and not info.name):
        verb = "watch"
    elif verb == "get" and not info.name:
        verb = "list"
    elif verb == "delete" and not info.name:
        verb = "deletecollection"
    info.verb = verb
    return info
