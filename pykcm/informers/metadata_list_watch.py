"""MetadataListWatch: lists and watches a resource as PartialObjectMetadata.

Role: the ListerWatcher of metadata-only informers (client-go's
``metadatainformer.NewFilteredMetadataInformer``, whose ListWatch goes through
the ``metadata`` client). Every request asks the API server for the objects'
metadata alone::

    LIST  Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json
    WATCH Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json

and the server (kube-apiserver, or pykcm's: endpoints/partial_metadata.py)
answers ``meta.k8s.io/v1`` PartialObjectMetadata(List) bodies: a few hundred
bytes an object where a pod's whole JSON is 2-14 KiB.

Data flow::

    Reflector ─► list()  ─► client.list_raw(accept=...) ─► decode ─► {"items": [PartialObjectMetadata]}
              └► watch() ─► client.watch_raw(accept=...) ─► WatchStream decoding each line
    decode: the items keep kind PartialObjectMetadata, apiVersion meta.k8s.io/v1 (as
            client-go's cache holds them); ``strip_managed_fields`` drops
            metadata.managedFields while decoding (kube-controller-manager trims them
            with its informers' transform); ``compact`` decodes into read-only
            FrozenObjects instead (pykcm.cache.frozen_object), GC-untracked.

Deliberate deviation: client-go's metadata client asks for protobuf first; pykcm
speaks JSON. A server that cannot convert (an aggregated API server that ignores
the ``as=`` parameter) answers whole objects; their metadata is what the cache
then keeps (client-go fails such a list instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import orjson

from pykcm.cache.list_watch import ListWatch, TweakListOptionsFunc
from pykcm.client import Client, WatchStream

if TYPE_CHECKING:
    from pykcm.api.resources import ResourceInfo
    from pykcm.cache.frozen_object import CompactDecoder

__all__ = ["LIST_ACCEPT", "OBJECT_ACCEPT", "MetadataListWatch", "as_partial_object_metadata"]

LIST_ACCEPT: Final = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                      "application/json")
OBJECT_ACCEPT: Final = ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                        "application/json")
PARTIAL_API_VERSION: Final = "meta.k8s.io/v1"


def as_partial_object_metadata(obj: Any, strip_managed_fields: bool) -> dict[str, Any]:
    """The PartialObjectMetadata of a decoded object (the server's, or a whole object)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        meta = {}
    if strip_managed_fields and "managedFields" in meta:
        # Freshly decoded, not shared yet: changed in place.
        del meta["managedFields"]
    return {"kind": "PartialObjectMetadata", "apiVersion": PARTIAL_API_VERSION,
            "metadata": meta}


class MetadataListWatch(ListWatch):
    """A ListWatch whose objects are PartialObjectMetadata (see the module docstring)."""

    def __init__(self, client: Client, resource: ResourceInfo | str, *,
                 namespace: str | None = None,
                 tweak_list_options: TweakListOptionsFunc | None = None,
                 strip_managed_fields: bool = True,
                 compact: bool | CompactDecoder = False) -> None:
        if compact is True:
            from pykcm.cache.frozen_object import CompactDecoder
            compact = CompactDecoder(strip_managed_fields=strip_managed_fields)
        super().__init__(client, resource, namespace=namespace,
                         tweak_list_options=tweak_list_options, compact=compact)
        self.strip_managed_fields = strip_managed_fields

    async def list(self, *, resource_version: str = "", resource_version_match: str = "",
                   limit: int = 0, continue_: str = "") -> dict[str, Any]:
        o = self._options({"resourceVersion": resource_version,
                           "resourceVersionMatch": resource_version_match,
                           "limit": limit, "continue": continue_})
        raw = await self.client.list_raw(
            self._target(), self.namespace,
            label_selector=o.get("labelSelector") or None,
            field_selector=o.get("fieldSelector") or None,
            limit=int(o.get("limit") or 0) or None,
            continue_=o.get("continue") or None,
            resource_version=o.get("resourceVersion") or None,
            resource_version_match=o.get("resourceVersionMatch") or None,
            timeout_seconds=o.get("timeoutSeconds"), accept=LIST_ACCEPT)
        decoder = self.compact_decoder
        if decoder is not None:
            return decoder.list(raw)
        lst: dict[str, Any] = orjson.loads(raw)
        strip = self.strip_managed_fields
        # (None: an empty PartialObjectMetadataList says "items": null)
        lst["items"] = [as_partial_object_metadata(i, strip) for i in lst.get("items") or ()]
        return lst

    def _event(self, line: bytes) -> tuple[str, Any]:
        ev = orjson.loads(line)
        typ, obj = ev["type"], ev["object"]
        if typ == "ERROR":
            return typ, obj
        return typ, as_partial_object_metadata(obj, self.strip_managed_fields)

    def watch(self, *, resource_version: str, timeout_seconds: int | None,
              allow_watch_bookmarks: bool = True, send_initial_events: bool | None = None,
              resource_version_match: str = "") -> WatchStream:
        o = self._options({"resourceVersion": resource_version,
                           "resourceVersionMatch": resource_version_match,
                           "timeoutSeconds": timeout_seconds,
                           "allowWatchBookmarks": allow_watch_bookmarks,
                           "sendInitialEvents": send_initial_events})
        raw = self.client.watch_raw(
            self._target(), self.namespace,
            resource_version=o.get("resourceVersion") or None,
            allow_watch_bookmarks=bool(o.get("allowWatchBookmarks")),
            send_initial_events=o.get("sendInitialEvents"),
            resource_version_match=o.get("resourceVersionMatch") or None,
            label_selector=o.get("labelSelector") or None,
            field_selector=o.get("fieldSelector") or None,
            timeout_seconds=o.get("timeoutSeconds"), accept=OBJECT_ACCEPT)
        decoder = self.compact_decoder
        if decoder is not None:
            # A received chunk's lines decoded in one call (as ListWatch's compact watch).
            return WatchStream.decoding(raw, decoder.event, decoder.events)
        return WatchStream.decoding(raw, self._event)

    def __repr__(self) -> str:
        return f"MetadataListWatch({self})"
