"""Resource names → ResourceInfo: the built-in registry first, then server discovery.

Accepted forms, as kubectl reads them: a plural, singular, short name or kind
("pods", "pod", "po", "Pod"); with a group ("deployments.apps",
"leases.coordination.k8s.io"); with a version and group
("deployments.v1.apps"); or a path-like "apps/v1/deployments", "v1/pods",
"apps/deployments".

Discovery asks for the aggregated documents (apidiscovery.k8s.io v2, then
v2beta1) of /api and /apis in two requests; a server that answers with the
legacy documents is walked group by group. The core group comes first, then
the groups in the server's order, each group's preferred version first.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from pykcm.api.resources import ALL_VERBS, ResourceInfo
from pykcm.client.errors import ApiError

log = logging.getLogger("pykcm.client")

AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)

_VERSION_RE = re.compile(r"^v\d+((alpha|beta)\d+)?$")

# GET path with an Accept header → (body, content type).
Fetch = Callable[[str, str], Awaitable[tuple[bytes, str]]]


class NoResourceMatchError(LookupError):
    """No resource of the server or the registry answers to that name."""

    def __init__(self, name: str) -> None:
        super().__init__(f'the server doesn\'t have a resource type "{name}"')
        self.name = name


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str               # lower-cased plural, singular, short name or kind
    group: str | None       # None: any group
    version: str | None     # None: any version


def parse_resource_name(text: str) -> list[Candidate]:
    """The readings of a resource name, most specific first."""
    s = text.strip()
    if not s:
        raise ValueError("empty resource name")
    if "/" in s:
        parts = s.strip("/").split("/")
        if len(parts) == 3:
            return [Candidate(parts[2].lower(), parts[0], parts[1])]
        if len(parts) == 2:
            if _VERSION_RE.match(parts[0]):
                return [Candidate(parts[1].lower(), "", parts[0])]
            return [Candidate(parts[1].lower(), parts[0], None)]
        raise ValueError(f"cannot read resource name {text!r}")
    if "." in s:
        parts = s.split(".")
        out: list[Candidate] = []
        if len(parts) >= 3 and _VERSION_RE.match(parts[1]):
            out.append(Candidate(parts[0].lower(), ".".join(parts[2:]), parts[1]))
        out.append(Candidate(parts[0].lower(), ".".join(parts[1:]), None))
        return out
    return [Candidate(s.lower(), None, None)]


def _matches(r: ResourceInfo, c: Candidate) -> bool:
    if c.group is not None and r.group != c.group:
        return False
    if c.version is not None and r.version != c.version:
        return False
    n = c.name
    return n == r.plural or n == r.singular or n == r.kind.lower() or n in r.short_names


def find(resources: Iterable[ResourceInfo], candidates: list[Candidate]) -> ResourceInfo | None:
    rs = list(resources)
    for c in candidates:
        # An exact plural wins over a kind/short-name match elsewhere.
        for r in rs:
            if _matches(r, c) and c.name == r.plural:
                return r
        for r in rs:
            if _matches(r, c):
                return r
    return None


# -- fetching --------------------------------------------------------------------------


def _from_aggregated(doc: dict[str, Any]) -> list[ResourceInfo]:
    out: list[ResourceInfo] = []
    for item in doc.get("items") or []:
        group = (item.get("metadata") or {}).get("name") or ""
        for v in item.get("versions") or []:
            version = v.get("version") or ""
            for r in v.get("resources") or []:
                rk = r.get("responseKind") or {}
                kind = rk.get("kind") or ""
                plural = r.get("resource") or ""
                if not plural or not kind:
                    continue
                out.append(ResourceInfo(
                    group=group, version=version, kind=kind, plural=plural,
                    singular=r.get("singularResource") or kind.lower(),
                    namespaced=r.get("scope") == "Namespaced",
                    short_names=tuple(r.get("shortNames") or ()),
                    categories=tuple(r.get("categories") or ()),
                    verbs=tuple(r.get("verbs") or ALL_VERBS),
                    subresources=tuple(s.get("subresource") for s in r.get("subresources") or []
                                       if s.get("subresource")),
                    status_subresource=any(s.get("subresource") == "status"
                                           for s in r.get("subresources") or []),
                ))
    return out


def _from_resource_list(group: str, version: str, doc: dict[str, Any]) -> list[ResourceInfo]:
    entries = doc.get("resources") or []
    subs: dict[str, list[str]] = {}
    for e in entries:
        name = e.get("name") or ""
        if "/" in name:
            parent, sub = name.split("/", 1)
            subs.setdefault(parent, []).append(sub)
    out: list[ResourceInfo] = []
    for e in entries:
        name = e.get("name") or ""
        kind = e.get("kind") or ""
        if not name or "/" in name or not kind:
            continue
        out.append(ResourceInfo(
            group=e.get("group") or group, version=e.get("version") or version, kind=kind,
            plural=name, singular=e.get("singularName") or kind.lower(),
            namespaced=bool(e.get("namespaced")),
            short_names=tuple(e.get("shortNames") or ()),
            categories=tuple(e.get("categories") or ()),
            verbs=tuple(e.get("verbs") or ALL_VERBS),
            subresources=tuple(subs.get(name, ())),
            status_subresource="status" in subs.get(name, ()),
        ))
    return out


def _is_aggregated(ctype: str) -> bool:
    return "as=APIGroupDiscoveryList" in ctype.replace(" ", "")


async def fetch_resources(fetch: Fetch, *, aggregated: bool = True) -> list[ResourceInfo]:
    """Every resource the server serves, core first."""
    accept = AGGREGATED_ACCEPT if aggregated else "application/json"
    (core_body, core_type), (apis_body, apis_type) = await asyncio.gather(
        fetch("/api", accept), fetch("/apis", accept))
    core_doc = orjson.loads(core_body)
    apis_doc = orjson.loads(apis_body)
    out: list[ResourceInfo] = []
    jobs: list[tuple[str, str, str]] = []
    if _is_aggregated(core_type) or core_doc.get("kind") == "APIGroupDiscoveryList":
        out.extend(_from_aggregated(core_doc))
    else:
        for v in core_doc.get("versions") or []:
            jobs.append(("", v, f"/api/{v}"))
    aggregated_apis: list[ResourceInfo] = []
    if _is_aggregated(apis_type) or apis_doc.get("kind") == "APIGroupDiscoveryList":
        aggregated_apis = _from_aggregated(apis_doc)
    else:
        for g in apis_doc.get("groups") or []:
            name = g.get("name") or ""
            preferred = (g.get("preferredVersion") or {}).get("version")
            versions = [v.get("version") for v in g.get("versions") or [] if v.get("version")]
            versions.sort(key=lambda v: v != preferred)  # preferred first, order kept
            for v in versions:
                jobs.append((name, v, f"/apis/{name}/{v}"))

    async def one(group: str, version: str, path: str) -> list[ResourceInfo]:
        try:
            body, _ = await fetch(path, "application/json")
            doc = orjson.loads(body)
        except (ApiError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            # A broken group (an aggregated API that is down): the others still count.
            log.warning("discovery of %s failed: %s", path, exc)
            return []
        return _from_resource_list(group, version, doc)

    results = await asyncio.gather(*(one(*j) for j in jobs))
    for res in results:
        out.extend(res)
    out.extend(aggregated_apis)
    return out


class DiscoveryCache:
    """The server's resources, fetched on first need and again on a miss."""

    def __init__(self, fetch: Fetch, *, aggregated: bool = True) -> None:
        self._fetch = fetch
        self.aggregated = aggregated
        self.resources: list[ResourceInfo] | None = None
        self.fetch_count = 0
        self._lock = asyncio.Lock()

    async def refresh(self) -> list[ResourceInfo]:
        generation = self.fetch_count
        async with self._lock:
            if self.fetch_count != generation and self.resources is not None:
                return self.resources  # refreshed by someone else meanwhile
            self.resources = await fetch_resources(self._fetch, aggregated=self.aggregated)
            self.fetch_count += 1
            return self.resources

    def invalidate(self) -> None:
        self.resources = None

    async def lookup(self, candidates: list[Candidate]) -> ResourceInfo | None:
        if self.resources is not None:
            found = find(self.resources, candidates)
            if found is not None:
                return found
        return find(await self.refresh(), candidates)
