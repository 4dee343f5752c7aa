"""PartialObjectMetadata answers: only the metadata of the objects a request reads.

Role
----
Metadata-only clients (client-go's ``metadata`` client and its informers, which
the garbage collector and the quota monitors use) ask any resource for its
objects' metadata alone::

    Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1   (list)
    Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1       (get, watch)

kube-apiserver v1.36 answers these (and the ``v1beta1`` variants, still served)
with ``meta.k8s.io`` PartialObjectMetadata(List) bodies. This module is that
conversion (``asPartialObjectMetadata`` / ``asPartialObjectMetadataList`` of the
endpoint handlers) as pure functions over the stored JSON; the Accept
negotiation that picks it is ``tables.negotiate_conversion``.

Data flow
---------
::

    Accept ─► tables.negotiate_conversion ─► ("PartialObjectMetadata"|"...List", version)
    LIST  (list meta, stored raw objects) ─► partial_list()  ─► PartialObjectMetadataList
    GET   stored object                   ─► partial_object() ─► PartialObjectMetadata
    WATCH each JSON event line            ─► PartialWatchEncoder ─► the event with a
          PartialObjectMetadata object (bookmarks too; ERROR events keep their Status)
    a list asked as one object, or one object asked as a list ─► 406 (not_acceptable)

As upstream (checked against kube-apiserver v1.36.2): every item carries its
own kind/apiVersion, the whole ObjectMeta is kept (managedFields included), an
empty list has ``"items": null`` (PartialObjectMetadataList's items have no
omitempty), the list keeps resourceVersion, continue and remainingItemCount.

Deliberate deviations: the answer is JSON whatever media type the clause named
(pykcm's server encodes JSON only; a protobuf or YAML client reads it by the
Content-Type). A watch asked ``as=PartialObjectMetadataList`` ends at once with
an empty 200 body; kube-apiserver's ends the same way, but only when the first
event fails to encode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from pykcm.api.resources import ResourceInfo
from pykcm.apiserver import errors
from pykcm.apiserver.errors import StatusError

__all__ = [
    "PARTIAL_KINDS",
    "PartialWatchEncoder",
    "list_asked_as_object",
    "object_asked_as_list",
    "partial_list",
    "partial_object",
]

PARTIAL_GROUP: Final = "meta.k8s.io"
PARTIAL_KINDS: Final = ("PartialObjectMetadata", "PartialObjectMetadataList")


def _api_version(version: str) -> str:
    return f"{PARTIAL_GROUP}/{version}"


def partial_object(obj: Mapping[str, Any], version: str) -> dict[str, Any]:
    """meta.AsPartialObjectMetadata: the object's whole metadata under the meta.k8s.io kind."""
    meta = obj.get("metadata")
    return {"kind": "PartialObjectMetadata", "apiVersion": _api_version(version),
            "metadata": meta if isinstance(meta, Mapping) else {}}


def partial_list(list_meta: Mapping[str, Any], objects: list[dict[str, Any]],
                 version: str) -> dict[str, Any]:
    """The PartialObjectMetadataList of a LIST: its ListMeta and one item per object."""
    meta: dict[str, Any] = {}
    for key in ("resourceVersion", "continue"):
        if list_meta.get(key):
            meta[key] = list_meta[key]
    if list_meta.get("remainingItemCount") is not None:
        meta["remainingItemCount"] = list_meta["remainingItemCount"]
    items = [partial_object(o, version) for o in objects]
    return {"kind": "PartialObjectMetadataList", "apiVersion": _api_version(version),
            "metadata": meta,
            # Go's nil slice without omitempty: an empty list says null, not [].
            "items": items or None}


# The internal Go package of a group's types, as %T names them in the 406 message
# (kube-apiserver converts the internal object, e.g. *core.ConfigMap, *apps.Deployment).
_INTERNAL_PACKAGE: Final = {"": "core", "events.k8s.io": "core"}


def _go_type(res: ResourceInfo, custom: bool, is_list: bool) -> str:
    if custom:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    package = _INTERNAL_PACKAGE.get(res.group, res.group.split(".")[0])
    return f"*{package}.{res.kind}{'List' if is_list else ''}"


def list_asked_as_object(res: ResourceInfo, custom: bool = False) -> StatusError:
    """406 for a LIST asked ``as=PartialObjectMetadata``."""
    return errors.not_acceptable(
        "you requested PartialObjectMetadata, but the requested object is a list "
        f"({_go_type(res, custom, True)})")


def object_asked_as_list(res: ResourceInfo, custom: bool = False) -> StatusError:
    """406 for a GET asked ``as=PartialObjectMetadataList``."""
    return errors.not_acceptable(
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        f"({_go_type(res, custom, False)})")


class PartialWatchEncoder:
    """Turns JSON watch event lines into events whose object is a PartialObjectMetadata.

    A bookmark becomes a PartialObjectMetadata with the bookmark's metadata (its
    resourceVersion, the initial-events-end annotation); an ERROR event keeps its
    Status (doTransformObject passes a Status through).
    """

    def __init__(self, version: str) -> None:
        self.version = version

    def __call__(self, line: bytes) -> bytes:
        ev = orjson.loads(line)
        if ev.get("type") == "ERROR":
            return line
        obj = ev.get("object")
        ev["object"] = partial_object(obj if isinstance(obj, Mapping) else {}, self.version)
        return orjson.dumps(ev) + b"\n"
