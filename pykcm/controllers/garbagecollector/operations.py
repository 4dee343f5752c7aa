"""The garbage collector's calls to the API server, and the discovery it maps kinds with.

kube-controller-manager pkg/controller/garbagecollector operations.go
(``apiResource``, ``deleteObject``, ``getObject``, ``patchObject``,
``removeFinalizer``), patch.go (the strategic-merge and JSON-merge patches
that drop or unblock ownerReferences) and ``GetDeletableResources``; the
RESTMapper upstream builds on a memory-cached discovery client.

Data flow::

    discovery (/api, /apis) ──► RESTMapper {(group, version, kind): ResourceInfo}
                                   │ api_resource(apiVersion, kind)
    GarbageCollector workers ──────┤
        get_object / delete_object (UID + resourceVersion preconditions)
        patch (strategic merge, or JSON merge when the type has no SMP: CRs)
        remove_finalizer (JSON merge patch with resourceVersion, retried on conflict)
                                   ▼
                               API server

The mapper refreshes discovery on a miss only once after each reset, as
client-go's deferred mapper does: a kind that is still unknown after a fresh
discovery is a RESTMappingError, retried by the caller with backoff, until the
garbage collector's periodic discovery sync resets the mapper.

Objects are fetched whole: pykcm has no metadata-only client (upstream reads
PartialObjectMetadata). Only metadata is read from them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, Literal

import orjson

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.owner_refs import api_group
from pykcm.api.randomness import RandomSource, random_of
from pykcm.api.resources import ResourceInfo, builtin_registry, preferred_resources
from pykcm.client import (
    Client,
    NotFound,
    is_conflict,
    is_not_found,
    is_unsupported_media_type,
)
from pykcm.controllers.garbagecollector.graph import Node, ObjectReference, OwnerReference
from pykcm.informers.generic import GroupVersionResource

__all__ = [
    "FINALIZER_DELETE_DEPENDENTS",
    "FINALIZER_ORPHAN_DEPENDENTS",
    "GCOperations",
    "RESTMapper",
    "RESTMappingError",
    "deletable_resources",
    "delete_owner_ref_strategic_merge_patch",
    "unblock_owner_references_strategic_merge_patch",
]

log = logging.getLogger("pykcm.controllers.garbagecollector")

FINALIZER_ORPHAN_DEPENDENTS: Final = "orphan"
FINALIZER_DELETE_DEPENDENTS: Final = "foregroundDeletion"

# client-go retry.DefaultBackoff: 4 steps from 10 ms, factor 5, jitter 0.1.
_RETRY_STEPS: Final = 4
_RETRY_BASE: Final = 0.01
_RETRY_FACTOR: Final = 5.0
_RETRY_JITTER: Final = 0.1

PatchType = Literal["merge", "strategic"]


class RESTMappingError(LookupError):
    """No served resource has that apiVersion and kind (yet)."""

    def __init__(self, kind: str, api_version: str) -> None:
        super().__init__(f"unable to get REST mapping for {kind}.{api_version}")
        self.kind = kind
        self.api_version = api_version



def deletable_resources(resources: Iterable[ResourceInfo]
                        ) -> dict[GroupVersionResource, ResourceInfo]:
    """The preferred resources supporting delete, list and watch (GetDeletableResources)."""
    out: dict[GroupVersionResource, ResourceInfo] = {}
    for r in preferred_resources(resources):
        verbs = set(r.verbs)
        if {"delete", "list", "watch"} <= verbs:
            out[GroupVersionResource.of(r)] = r
    return out


class RESTMapper:
    """apiVersion + kind → ResourceInfo, from discovery (a resettable deferred mapper).

    ``fetch`` returns every served resource (default: the client's
    discovery, refreshed). Until the first successful fetch the built-in
    registry answers.
    """

    def __init__(self, client: Client | None = None, *,
                 fetch: Callable[[], Awaitable[list[ResourceInfo]]] | None = None) -> None:
        if fetch is None:
            if client is None:
                raise ValueError("a client or a fetch function is required")
            fetch = client.discovery.refresh
        self._fetch = fetch
        self._by_gvk: dict[tuple[str, str, str], ResourceInfo] = {}
        self.load(builtin_registry().all())
        self._fresh = False
        self._lock = asyncio.Lock()

    def load(self, resources: Iterable[ResourceInfo]) -> None:
        """Replace the mappings with these resources (all versions)."""
        by_gvk: dict[tuple[str, str, str], ResourceInfo] = {}
        for r in resources:
            by_gvk.setdefault((r.group, r.version, r.kind), r)
        self._by_gvk = by_gvk
        self._fresh = True

    def reset(self) -> None:
        """Discovery changed: the next miss fetches again."""
        self._fresh = False

    def lookup(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The cached mapping, without I/O."""
        group = api_group(api_version)
        version = api_version.rpartition("/")[2]
        return self._by_gvk.get((group, version, kind))

    async def mapping(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource of ``kind`` at ``api_version``; RESTMappingError if none."""
        found = self.lookup(api_version, kind)
        if found is not None:
            return found
        if not self._fresh:
            async with self._lock:
                if not self._fresh:
                    try:
                        self.load(await self._fetch())
                    except Exception as exc:  # noqa: BLE001 - reported as a mapping error
                        log.info("discovery failed while mapping %s %s: %s", api_version,
                                 kind, exc)
            found = self.lookup(api_version, kind)
            if found is not None:
                return found
        raise RESTMappingError(kind, api_version)


def delete_owner_ref_strategic_merge_patch(dependent_uid: str,
                                           owner_uids: Iterable[str]) -> bytes:
    """SMP deleting the ownerReferences with these uids; the dependent's uid guards it."""
    return orjson.dumps({"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": u} for u in owner_uids],
        "uid": dependent_uid}})


def unblock_owner_references_strategic_merge_patch(node: Node) -> bytes:
    """SMP setting ``blockOwnerDeletion: false`` on the node's blocking ownerReferences."""
    refs = []
    for ref in node.owners:
        if ref.blocks_owner_deletion:
            d = ref.to_dict()
            d["blockOwnerDeletion"] = False
            refs.append(d)
    return orjson.dumps({"metadata": {"ownerReferences": refs, "uid": node.identity.uid}})


def _owner_refs_of(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in (obj.get("metadata") or {}).get("ownerReferences") or []]


CachedObjectLookup = Callable[[ResourceInfo, str, str], Mapping[str, Any] | None]
"""(resource, namespace, name) → the object in a monitor's cache, or None."""


class GCOperations:
    """The garbage collector's API calls, by object identity.

    ``cached`` reads an object from the monitors' caches (for the JSON merge
    patches, which need the current ownerReferences and resourceVersion);
    None means always GET.
    """

    def __init__(self, client: Client, mapper: RESTMapper,
                 cached: CachedObjectLookup | None = None, *,
                 clock: Clock | None = None, rng: RandomSource | None = None) -> None:
        self.client = client
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self._rng = random_of(rng)
        self.mapper = mapper
        self._cached = cached

    async def api_resource(self, api_version: str, kind: str) -> tuple[ResourceInfo, bool]:
        """(resource, namespaced) of a kind; RESTMappingError if not served."""
        info = await self.mapper.mapping(api_version, kind)
        return info, info.namespaced

    @staticmethod
    def _namespace(info: ResourceInfo, namespace: str) -> str | None:
        # resourceDefaultNamespace: a cluster-scoped kind ignores the namespace.
        return namespace if info.namespaced else None

    async def get_object(self, item: ObjectReference) -> dict[str, Any]:
        info, _ = await self.api_resource(item.api_version, item.kind)
        if info.namespaced and not item.namespace:
            # A namespaced kind named from a cluster-scoped object: upstream's GET of
            # /<resource>/<name> without a namespace finds nothing.
            raise NotFound({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                            "reason": "NotFound", "code": 404,
                            "message": f'{info.group_resource} "{item.name}" not found',
                            "details": {"name": item.name, "group": info.group,
                                        "kind": info.plural}})
        return await self.client.get(info, item.name, self._namespace(info, item.namespace))

    async def delete_object(self, item: ObjectReference, resource_version: str,
                            owners_at_resource_version: list[dict[str, Any]],
                            policy: str | None) -> None:
        """DELETE with UID (and resourceVersion) preconditions.

        A resourceVersion conflict caused by a change that left the
        ownerReferences alone is retried with the UID precondition only: the
        reason to delete still holds. NotFound propagates to the caller.
        """
        info, _ = await self.api_resource(item.api_version, item.kind)
        ns = self._namespace(info, item.namespace)
        preconditions: dict[str, Any] = {"uid": item.uid}
        if resource_version:
            preconditions["resourceVersion"] = resource_version
        try:
            await self.client.delete(info, item.name, ns, propagation_policy=policy,
                                     preconditions=preconditions)
            return
        except Exception as exc:
            if not (is_conflict(exc) and resource_version):
                raise
            conflict = exc
        # The precondition failed: did the ownerReferences change?
        live = await self.client.get(info, item.name, ns)  # NotFound propagates
        meta = live.get("metadata") or {}
        if (meta.get("uid") == item.uid and meta.get("resourceVersion") != resource_version
                and _owner_refs_of(live) == owners_at_resource_version):
            await self.client.delete(info, item.name, ns, propagation_policy=policy,
                                     preconditions={"uid": item.uid})
            return
        raise conflict

    async def patch_object(self, item: ObjectReference, patch: bytes,
                           patch_type: PatchType) -> dict[str, Any]:
        info, _ = await self.api_resource(item.api_version, item.kind)
        return await self.client.patch(info, item.name, patch, patch_type,
                                       self._namespace(info, item.namespace))

    async def patch(self, item: Node, smp: bytes,
                    jmp: Callable[[Node], Awaitable[bytes]]) -> dict[str, Any]:
        """Strategic merge patch; a JSON merge patch when the type has no SMP (415)."""
        try:
            return await self.patch_object(item.identity, smp, "strategic")
        except Exception as exc:
            if not is_unsupported_media_type(exc):
                raise
        return await self.patch_object(item.identity, await jmp(item), "merge")

    async def get_metadata(self, item: ObjectReference) -> Mapping[str, Any]:
        """The object from a monitor's cache, else from the API server."""
        info, _ = await self.api_resource(item.api_version, item.kind)
        ns = self._namespace(info, item.namespace) or ""
        if self._cached is not None:
            obj = self._cached(info, ns, item.name)
            if obj is not None:
                return obj
        return await self.client.get(info, item.name, ns or None)

    async def delete_owner_ref_json_merge_patch(self, item: Node,
                                                owner_uids: Iterable[str]) -> bytes:
        """JSON merge patch keeping every ownerReference but those of ``owner_uids``.

        Carries the resourceVersion the list was read at: a concurrent change
        fails it with a conflict rather than being overwritten.
        """
        obj = await self.get_metadata(item.identity)
        meta = obj.get("metadata") or {}
        drop = set(owner_uids)
        refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") not in drop]
        return orjson.dumps({"metadata": {"resourceVersion": meta.get("resourceVersion", ""),
                                          "ownerReferences": refs or None}})

    async def unblock_owner_references_json_merge_patch(self, item: Node) -> bytes:
        """JSON merge patch setting ``blockOwnerDeletion: false`` on all ownerReferences."""
        obj = await self.get_metadata(item.identity)
        meta = obj.get("metadata") or {}
        refs = [OwnerReference(r.api_version, r.kind, r.name, r.uid, r.controller, False
                               ).to_dict() for r in item.owners]
        return orjson.dumps({"metadata": {"resourceVersion": meta.get("resourceVersion", ""),
                                          "ownerReferences": refs or None}})

    async def remove_finalizer(self, owner: Node, target: str) -> None:
        """Drop ``target`` from the owner's finalizers (merge patch, retried on conflict).

        A missing owner or finalizer is success.
        """
        delay = _RETRY_BASE
        for attempt in range(_RETRY_STEPS):
            try:
                obj = await self.get_object(owner.identity)
            except Exception as exc:
                if is_not_found(exc):
                    return
                raise RuntimeError(f"cannot finalize owner {owner.identity}, because cannot "
                                   f"get it: {exc}. The garbage collector will retry "
                                   "later.") from exc
            meta = obj.get("metadata") or {}
            finalizers = list(meta.get("finalizers") or [])
            if target not in finalizers:
                log.debug("the %s finalizer is already removed from object %s", target,
                          owner.identity)
                return
            remaining = [f for f in finalizers if f != target]
            patch = orjson.dumps({"metadata": {
                "resourceVersion": meta.get("resourceVersion", ""),
                "finalizers": remaining or None}})
            try:
                await self.patch_object(owner.identity, patch, "merge")
                return
            except Exception as exc:
                if is_not_found(exc):
                    return
                if not is_conflict(exc):
                    raise
            if attempt + 1 < _RETRY_STEPS:
                await self._time.sleep(delay * (1 + self._rng.random() * _RETRY_JITTER))
                delay *= _RETRY_FACTOR
        raise RuntimeError(f"updateMaxRetries({_RETRY_STEPS}) has reached. The garbage "
                           f"collector will retry later for owner {owner.identity}.")
