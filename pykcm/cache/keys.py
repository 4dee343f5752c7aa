"""Store keys: how the cache names an object (client-go tools/cache store.go).

Every object in a Store, an Indexer or a DeltaFIFO lives under a string key.
For Kubernetes objects the key is ``namespace/name``, or just ``name`` for a
cluster-scoped object; listers and workqueues pass these keys around and
``split_meta_namespace_key`` turns one back into its parts.

Data flow: the Reflector feeds objects into the DeltaFIFO, which keys them
with :func:`meta_namespace_key`. When a relist shows that an object vanished
while the watch was down, the DeltaFIFO queues a :class:`DeletedFinalStateUnknown`
tombstone in place of the object; the informer's Indexer therefore keys with
:func:`deletion_handling_meta_namespace_key`, which reads the key out of a
tombstone instead of its (possibly stale) object.

Objects are Kubernetes JSON dicts and are read-only here. These functions run
for every event, so they do one dict lookup for ``metadata`` and handle the
unusual inputs (explicit string keys, objects without metadata) only on the
exception path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from pykcm.cache.errors import InvalidKeyError, NoMetaError

__all__ = [
    "DeletedFinalStateUnknown",
    "ExplicitKey",
    "KeyFunc",
    "deleted_object",
    "deletion_handling_meta_namespace_key",
    "meta_namespace_key",
    "split_meta_namespace_key",
]

log = logging.getLogger("pykcm.cache")

KeyFunc: TypeAlias = Callable[[Any], str]
"""Computes the store key of an object (client-go ``KeyFunc``)."""


class ExplicitKey(str):
    """A string that is its own key (client-go ``ExplicitKey``).

    Any ``str`` handed to :func:`meta_namespace_key` is taken as its own key;
    this subclass only documents the intent at the call site.
    """

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """Tombstone for an object whose deletion was missed (the watch was down).

    The DeltaFIFO puts it in a Deleted delta when a relist no longer contains
    a key it or its known objects still had. ``obj`` is the last state the
    cache knew, which may be stale, or ``None`` if even that is unknown.
    """

    key: str
    obj: Any


def meta_namespace_key(obj: Any) -> str:
    """Return ``namespace/name``, or ``name`` for an object without a namespace.

    A ``str`` is returned unchanged (client-go's ``ExplicitKey``). Raises
    :class:`~pykcm.cache.errors.NoMetaError` if the object has no metadata.
    A compact cached object (:class:`~pykcm.cache.frozen_object.FrozenObject`)
    carries its key, computed once when it was decoded: the DeltaFIFO, the
    store and the namespace index ask for it on every event.
    """
    if type(obj) is not dict:
        key = getattr(obj, "_meta_namespace_key", None)
        if key is not None:
            return key  # type: ignore[no-any-return]
    try:
        meta = obj["metadata"]
        namespace: str | None = meta.get("namespace")
        name: str = meta.get("name") or ""
    except (TypeError, KeyError, AttributeError):
        # The rare inputs are sorted out here so the common path stays two
        # lookups: a str key indexed by "metadata" raises TypeError.
        if isinstance(obj, str):
            return obj
        raise NoMetaError(obj) from None
    if namespace:
        return f"{namespace}/{name}"
    return name


def deletion_handling_meta_namespace_key(obj: Any) -> str:
    """Like :func:`meta_namespace_key`, but a tombstone yields the key it carries.

    The key of a :class:`DeletedFinalStateUnknown` is the one the DeltaFIFO
    recorded, which is right even when the tombstone's object is ``None``.
    """
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key(obj)


def deleted_object(obj: Any) -> Mapping[str, Any] | None:
    """The object a delete notification is about: a tombstone's last known state, or
    ``obj`` itself; None (logged) when that is no object, as client-go's handlers
    reject a tombstone holding something else."""
    found = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
    if not isinstance(found, Mapping):
        log.error("couldn't get object from tombstone %r", obj)
        return None
    return found


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a key into ``(namespace, name)``; ``namespace`` is ``""`` if absent.

    Raises :class:`~pykcm.cache.errors.InvalidKeyError` for a key with more
    than one ``/``.
    """
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", key
    if "/" in name:
        raise InvalidKeyError(key)
    return namespace, name
