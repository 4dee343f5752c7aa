"""Discovery and the other non-resource endpoints: /version, /api, /apis, health checks.

Clients (kubectl, client-go's RESTMapper, the Python client) read these to
learn which resources exist, their kinds, scopes, verbs, short names and
subresources. The documents are built from the `ResourceRegistry`, so a
resource added there is discoverable at once; the pods' connect subresources
(log, exec, attach, portforward), which pykcm.apiserver.endpoints.pod_proxy serves
outside the registry's routing, are added to the pods' entries as
kube-apiserver lists them (pods/proxy, services/proxy and nodes/proxy are not
served, so not listed).
"""

from __future__ import annotations

import base64
import hashlib
import platform
from typing import Any

import orjson
from aiohttp import web

from pykcm.api.resources import ResourceInfo, ResourceRegistry
from pykcm.apiserver import errors
from pykcm.apiserver.endpoints import pod_proxy
from pykcm.apiserver.endpoints.request_info import RequestInfo

KUBE_MAJOR = "1"
KUBE_MINOR = "36"
GIT_VERSION = "v1.36.0-pykcm"

_SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "finalize": ("update",),
    "token": ("create",),
    "attach": ("create", "get"),
    "exec": ("create", "get"),
    "portforward": ("create", "get"),
    "log": ("get",),
}
# Subresources answering with another group's kind: (group, version, kind).
_SUBRESOURCE_KINDS = {
    "scale": ("autoscaling", "v1", "Scale"),
    "binding": ("", "v1", "Binding"),
    "eviction": ("policy", "v1", "Eviction"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
    "attach": ("", "v1", "PodAttachOptions"),
    "exec": ("", "v1", "PodExecOptions"),
    "portforward": ("", "v1", "PodPortForwardOptions"),
}
# Connect subresources served by pod_proxy, not routed through the registry.
_CONNECT_SUBRESOURCES = {("", "v1", "pods"): tuple(sorted(pod_proxy.PROXIED_SUBRESOURCES))}


def _subresources(r: ResourceInfo) -> tuple[str, ...]:
    return tuple(sorted(r.subresources + _CONNECT_SUBRESOURCES.get((r.group, r.version,
                                                                   r.plural), ())))


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def _storage_version_hash(r: ResourceInfo) -> str:
    digest = hashlib.sha256(f"{r.group}/{r.version}/{r.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def api_resource_list(registry: ResourceRegistry, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for r in registry.all():
        if r.group != group or r.version != version:
            continue
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        if r.stored:  # the reviews have no storage version
            entry["storageVersionHash"] = _storage_version_hash(r)
        resources.append(entry)
        for sub in _subresources(r):
            s: dict[str, Any] = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(_SUBRESOURCE_VERBS.get(sub, ("get",))),
            }
            other = _SUBRESOURCE_KINDS.get(sub)
            if other is not None:
                group_, version_, kind_ = other
                if group_:
                    s.update({"group": group_, "version": version_})
                s["kind"] = kind_
            resources.append(s)
    resources.sort(key=lambda e: str(e["name"]))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str | None) -> str | None:
    """"v2" or "v2beta1" when the Accept header asks for aggregated discovery first."""
    if not accept:
        return None
    for clause in accept.split(","):
        parts = [p.strip() for p in clause.split(";")]
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if parts[0] not in ("application/json", "*/*"):
            continue
        if params.get("g") == "apidiscovery.k8s.io" and params.get(
                "as") == "APIGroupDiscoveryList" and params.get("v") in ("v2", "v2beta1"):
            return params["v"]
        if not params.get("as"):
            return None  # plain JSON is preferred over what follows
    return None


def aggregated_discovery(registry: ResourceRegistry, legacy: bool,
                         version: str = "v2") -> dict[str, Any]:
    """apidiscovery.k8s.io APIGroupDiscoveryList for /api (legacy) or /apis."""
    items: list[dict[str, Any]] = []
    for group, versions in registry.group_versions().items():
        if (group == "") != legacy:
            continue
        vlist = []
        for v in versions:
            resources = []
            for r in sorted(registry.all(), key=lambda r: r.plural):
                if r.group != group or r.version != v:
                    continue
                entry: dict[str, Any] = {
                    "resource": r.plural,
                    "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                    "scope": "Namespaced" if r.namespaced else "Cluster",
                    "singularResource": r.singular,
                    "verbs": list(r.verbs),
                }
                if r.short_names:
                    entry["shortNames"] = list(r.short_names)
                if r.categories:
                    entry["categories"] = list(r.categories)
                subs = []
                for sub in _subresources(r):
                    kind = {"group": r.group, "version": r.version, "kind": r.kind}
                    other = _SUBRESOURCE_KINDS.get(sub)
                    if other is not None:
                        kind = dict(zip(("group", "version", "kind"), other, strict=True))
                    if sub in _CONNECT_SUBRESOURCES.get((r.group, r.version, r.plural), ()):
                        kind["version"] = ""  # kube-apiserver leaves connect kinds' empty
                    subs.append({"subresource": sub, "responseKind": kind,
                                 "verbs": list(_SUBRESOURCE_VERBS.get(sub, ("get",)))})
                if subs:
                    entry["subresources"] = subs
                resources.append(entry)
            vlist.append({"version": v, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": group, "creationTimestamp": None},
                      "versions": vlist})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {}, "items": items}


class Discovery:
    def __init__(self, registry: ResourceRegistry) -> None:
        self.registry = registry
        self.server_address = "127.0.0.1:6443"
        self.ready = True

    def version(self) -> dict[str, Any]:
        machine = platform.machine().lower()
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
        return {
            "major": KUBE_MAJOR,
            "minor": KUBE_MINOR,
            "emulationMajor": KUBE_MAJOR,
            "emulationMinor": KUBE_MINOR,
            "minCompatibilityMajor": KUBE_MAJOR,
            "minCompatibilityMinor": str(int(KUBE_MINOR) - 1),
            "gitVersion": GIT_VERSION,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-11-29T00:00:00Z",
            "goVersion": f"python{platform.python_version()}",
            "compiler": "cpython",
            "platform": f"{platform.system().lower()}/{arch}",
        }

    async def handle(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        parts = info.parts
        if request.method not in ("GET", "HEAD"):
            if parts and parts[0] in ("api", "apis", "version", "healthz", "livez", "readyz"):
                raise errors.method_not_allowed(
                    "the server does not allow this method on the requested resource")
            raise errors.StatusError(404, "NotFound",
                                     "the server could not find the requested resource")
        if not parts:
            paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics", "/readyz",
                     "/version"]
            for g, versions in self.registry.group_versions().items():
                if g:
                    paths.append(f"/apis/{g}")
                    paths += [f"/apis/{g}/{v}" for v in versions]
            return _json({"paths": sorted(paths)})
        head = parts[0]
        if head == "version" and len(parts) == 1:
            return _json(self.version())
        if head in ("healthz", "livez", "readyz"):
            if head == "readyz" and not self.ready:
                return web.Response(text="[-]shutdown failed: reason withheld\nreadyz check "
                                         "failed", status=500, content_type="text/plain")
            return web.Response(text="ok", content_type="text/plain")
        if head in ("api", "apis") and len(parts) == 1:
            agg = wants_aggregated(request.headers.get("Accept"))
            if agg is not None:
                body = orjson.dumps(aggregated_discovery(self.registry, head == "api", agg))
                ctype = AGGREGATED_V2 if agg == "v2" else AGGREGATED_V2BETA1
                etag = '"' + hashlib.sha256(body).hexdigest()[:32].upper() + '"'
                return web.Response(body=body, headers={"Content-Type": ctype, "ETag": etag,
                                                        "Vary": "Accept"})
        if head == "api":
            if len(parts) == 1:
                return _json({
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server_address}
                    ],
                })
            if len(parts) == 2 and parts[1] == "v1":
                return _json(api_resource_list(self.registry, "", "v1"))
        if head == "apis":
            groups = self.registry.group_versions()
            if len(parts) == 1:
                return _json({
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": [self._group(g, vs) for g, vs in groups.items() if g],
                })
            g = parts[1]
            if g in groups and g:
                if len(parts) == 2:
                    group_doc = self._group(g, groups[g])
                    group_doc.update({"kind": "APIGroup", "apiVersion": "v1"})
                    return _json(group_doc)
                if len(parts) == 3 and parts[2] in groups[g]:
                    return _json(api_resource_list(self.registry, g, parts[2]))
        raise errors.PageNotFound()

    @staticmethod
    def _group(name: str, versions: list[str]) -> dict[str, Any]:
        vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        return {"name": name, "versions": vs, "preferredVersion": vs[0]}
