"""Store and Indexer: the cache interfaces, and the key-computing cache behind them.

client-go tools/cache store.go and index.go. A :class:`Store` holds objects
under the key its key function computes; an :class:`Indexer` is a Store with
secondary indexes. :class:`Cache` (client-go's ``cache`` struct) implements
both by computing the key and delegating to a
:class:`~pykcm.cache.thread_safe_store.ThreadSafeStore`.

Data flow: the SharedIndexInformer builds its Indexer with
``new_indexer(deletion_handling_meta_namespace_key)``, which has the namespace
index; it hands that Indexer to the DeltaFIFO as its known objects, applies
each popped delta to it (``add``/``update``/``delete``), and gives it to
listers, which read it with ``get_by_key`` and ``by_index``.

Objects are shared and read-only (see ThreadSafeStore). Lookups return the
object or ``None`` where client-go returns ``(item, exists, err)``: a stored
object is never ``None``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from pykcm.cache.index import NAMESPACE_INDEX, Indexers, meta_namespace_index_func
from pykcm.cache.keys import KeyFunc
from pykcm.cache.thread_safe_store import ThreadSafeStore

__all__ = ["Cache", "Indexer", "Store", "new_indexer", "new_store"]


@runtime_checkable
class Store(Protocol):
    """A keyed object store (client-go ``Store``)."""

    def add(self, obj: Any) -> None:
        """Store ``obj`` under its key."""

    def update(self, obj: Any) -> None:
        """Store ``obj`` under its key, replacing the previous object."""

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key; an absent key is ignored."""

    def list(self) -> builtins.list[Any]:
        """All stored objects (references)."""

    def list_keys(self) -> builtins.list[str]:
        """All keys."""

    def get(self, obj: Any) -> Any | None:
        """The stored object with ``obj``'s key, or ``None``."""

    def get_by_key(self, key: str) -> Any | None:
        """The object stored under ``key``, or ``None``."""

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Replace the whole content by ``items``."""

    def resync(self) -> None:
        """Meaningless for a plain store; kept for the interface."""


@runtime_checkable
class Indexer(Store, Protocol):
    """A Store with named secondary indexes (client-go ``Indexer``)."""

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        """Stored objects sharing an indexed value with ``obj`` in the named index."""

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        """Keys of the objects having ``indexed_value`` in the named index."""

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """All indexed values of the named index."""

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        """Stored objects having ``indexed_value`` in the named index."""

    def get_indexers(self) -> Indexers:
        """The indexers (name → index function)."""

    def add_indexers(self, new_indexers: Indexers) -> None:
        """Add indexers, indexing what is already stored; a name conflict raises."""


class Cache:
    """Store/Indexer that keys objects with ``key_func`` (client-go's ``cache``).

    Key-function errors (such as :class:`~pykcm.cache.errors.NoMetaError`)
    propagate unchanged and leave the store as it was.
    """

    __slots__ = ("_key_func", "_store")

    def __init__(self, key_func: KeyFunc, indexers: Indexers | None = None) -> None:
        self._key_func = key_func
        self._store = ThreadSafeStore(indexers)

    @property
    def key_func(self) -> KeyFunc:
        return self._key_func

    @property
    def thread_safe_store(self) -> ThreadSafeStore:
        """The underlying ThreadSafeStore (reads by key skip the key function)."""
        return self._store

    def add(self, obj: Any) -> None:
        self._store.update(self._key_func(obj), obj)

    def update(self, obj: Any) -> None:
        self._store.update(self._key_func(obj), obj)

    def delete(self, obj: Any) -> None:
        self._store.delete(self._key_func(obj))

    def list(self) -> builtins.list[Any]:
        return self._store.list()

    def list_keys(self) -> builtins.list[str]:
        return self._store.list_keys()

    def get(self, obj: Any) -> Any | None:
        return self._store.get(self._key_func(obj))

    def get_by_key(self, key: str) -> Any | None:
        return self._store.get(key)

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Replace the content by ``items`` (keyed with the key function)."""
        key_func = self._key_func
        # Keys are all computed before the swap: a bad object leaves the
        # store untouched.
        self._store._replace_owned({key_func(obj): obj for obj in items})

    def resync(self) -> None:
        pass

    def __len__(self) -> int:
        return len(self._store)

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        return self._store.index(index_name, obj)

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        return self._store.index_keys(index_name, indexed_value)

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        return self._store.list_index_func_values(index_name)

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        return self._store.by_index(index_name, indexed_value)

    def get_indexers(self) -> Indexers:
        return self._store.get_indexers()

    def add_indexers(self, new_indexers: Indexers) -> None:
        self._store.add_indexers(new_indexers)


def new_store(key_func: KeyFunc) -> Store:
    """A Store without indexes (client-go ``NewStore``)."""
    return Cache(key_func)


def new_indexer(key_func: KeyFunc, indexers: Indexers | None = None) -> Indexer:
    """An Indexer (client-go ``NewIndexer``).

    ``indexers=None`` gives the namespace index (:data:`NAMESPACE_INDEX` →
    :func:`meta_namespace_index_func`), which is what every informer asks
    for; pass ``{}`` for none, or your own mapping (add the namespace index
    to it yourself if you want it as well).
    """
    if indexers is None:
        indexers = {NAMESPACE_INDEX: meta_namespace_index_func}
    return Cache(key_func, indexers)
