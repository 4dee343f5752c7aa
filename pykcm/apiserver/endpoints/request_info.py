"""Request info: what a URL path and method ask for (apiserver's RequestInfoFactory and
go-restful's route templates).

Every request is resolved into a `RequestInfo` before anything else looks at
it: the handlers dispatch on `verb` and the resource, auth and discovery do not
have to parse paths. Paths follow kube-apiserver's routes:

    /api/v1/namespaces/{ns}/{resource}[/{name}[/{subresource}]]
    /apis/{group}/{version}/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]
    /api/v1/watch/...  (legacy watch paths)

The path is the decoded URL path, split as go-restful splits it: leading and
trailing slashes trimmed, empty segments kept. A parameter (namespace, name)
may be empty (`/namespaces//configmaps` lists every namespace, as upstream);
a literal segment may not (`/api//v1/pods` and `/api/v1//pods` match no route:
404). `namespaced_path` says which route family matched, so the handlers can
refuse what kube-apiserver has no route for: a named or write request for a
namespaced resource outside a namespace (`DELETE /api/v1/configmaps` is 405),
a cluster-scoped resource under `namespaces/{ns}/` (404).
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
    # The route had a namespaces/{namespace}/ segment pair before the resource.
    namespaced_path: bool = False
    # The route matches no template at all (an empty literal segment, too many segments):
    # a 404 from the group's router.
    no_route: bool = False


def split_path(path: str) -> tuple[str, ...]:
    """go-restful's tokens: the path without leading/trailing slashes, split on "/"."""
    trimmed = path.strip("/")
    return tuple(trimmed.split("/")) if trimmed else ()


def resolve(method: str, path: str, query_watch: bool) -> RequestInfo:
    """Resolve a request; `query_watch` is true for ?watch=1/true."""
    parts = split_path(path)
    info = RequestInfo(is_resource_request=False, path=path, parts=parts)
    # kube-apiserver's director: only /api and /apis (with a path boundary) reach the API
    # groups' routers; "//api/v1" is not such a path.
    if not parts or parts[0] not in ("api", "apis") or not (
            path == "/" + parts[0] or path.startswith("/" + parts[0] + "/")):
        return info
    info.api_prefix = parts[0]
    rest = list(parts[1:])
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
    if not info.version or (parts[0] == "apis" and not info.group):
        info.no_route = True
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
            info.namespaced_path = True
            rest = rest[2:]
        elif len(rest) >= 2:
            # The namespace object itself (namespaces/{name}[/{status|finalize}]).
            info.namespace = rest[1]
    if len(rest) > 3 or not rest[0]:
        info.no_route = True
    info.resource = rest[0]
    if len(rest) >= 2:
        info.name = rest[1]
    if len(rest) >= 3:
        info.subresource = "/".join(rest[2:])
    if info.resource == "namespaces":
        # A namespace's own namespace is empty, as upstream reports it.
        info.namespace = ""
    # ?watch=1 makes a watch of a collection only; on a named object it is a GET
    # (RequestInfoFactory); /watch/ paths watch either.
    if legacy_watch or (verb == "get" and query_watch and len(rest) == 1):
        verb = "watch"
    elif verb == "get" and len(rest) == 1:
        verb = "list"
    elif verb == "delete" and len(rest) == 1:
        verb = "deletecollection"
    info.verb = verb
    info.parts = parts
    return info


# Names a storage key may not be made of (content.IsPathSegmentName).
_SEGMENT_MAY_NOT_BE = (".", "..")
_SEGMENT_MAY_NOT_CONTAIN = ("/", "%")


def path_segment_name_errors(name: str) -> list[str]:
    """Why `name` cannot be a path segment (apimachinery's IsPathSegmentName)."""
    if name in _SEGMENT_MAY_NOT_BE:
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in _SEGMENT_MAY_NOT_CONTAIN if c in name]


def invalid_storage_key(key: str) -> bool:
    """A key the storage refuses (storage.PrepareKey): "." or ".." as a segment."""
    for dots in ("..", "."):
        if (key == dots or key.startswith(dots + "/") or key.endswith("/" + dots)
                or f"/{dots}/" in key):
            return True
    return False
