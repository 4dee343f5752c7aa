"""ThreadSafeStore: the keyed, indexed object map behind every informer cache.

client-go tools/cache thread_safe_store.go. It holds ``key → object`` and, per
indexer, ``indexed value → {keys}``. It does not compute keys itself: the
:class:`~pykcm.cache.store.Cache` in front of it (what ``new_indexer``
returns) does, and hands it ``(key, object)``.

Data flow: ``DeltaFIFO.pop`` → ``SharedIndexInformer.handle_deltas`` →
``Indexer.add/update/delete`` → here, which stores the object and moves its key
between the value sets of every index. Listers and controllers then read with
``get_by_key``, ``list`` and ``by_index``.

Objects are shared and read-only: ``get``/``list``/``by_index`` return the
stored references, never copies; a caller that mutates one corrupts the
indexes (they are not recomputed) and every other reader's view.

Concurrency contract (chosen for the asyncio event loop, where all writes
happen): every mutation holds a ``threading.Lock``. An uncontended acquire
costs about 50 ns, a small fraction of an update, and it makes reads from
other threads (metrics, health checks, ``asyncio.to_thread`` workers) safe:

- ``get``, ``get_by_key``, ``list``, ``list_keys``, ``list_index_func_values``
  and ``len`` read one dict with one C-level operation and take no lock (the
  GIL, or the per-object locks of a free-threaded build, make that atomic;
  ``replace`` and ``add_indexers`` swap whole dicts rather than editing them).
- ``by_index``, ``index`` and ``index_keys`` walk a value set that a writer
  may be editing, so they take the lock.

Index functions run under the lock: they must not call back into the store.

Index maintenance follows client-go, with two refinements: the new indexed
values of every index are computed before anything is changed, so an index
function that raises leaves the store untouched; and only the values that
differ between the old and the new object are touched, so an update that
keeps the namespace (nearly all of them) costs one index-function call per
object state and no set operation. A value set that becomes empty is deleted
(kubernetes/kubernetes#84959: short-lived high-cardinality values leaked).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Mapping
from typing import Any, Final

from pykcm.cache.errors import IndexerConflictError, IndexNotFoundError
from pykcm.cache.index import Index, Indexers, IndexFunc, Indices, meta_namespace_index_func

__all__ = ["ThreadSafeStore"]

_NO_VALUES: Final[list[str]] = []  # never mutated: the indexed values of "no object"

# (index function, its index) pairs in a tuple: the per-update loop walks this
# instead of looking names up in two dicts.
_Plan = tuple[tuple[IndexFunc, Index], ...]


def _index_values(index: Index, key: str, old_values: list[str], new_values: list[str]) -> None:
    """Move ``key`` in ``index`` from ``old_values`` to ``new_values``."""
    for value in old_values:
        if value not in new_values:
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    # No empty sets left behind (client-go #84959).
                    del index[value]
    for value in new_values:
        if value not in old_values:
            keys = index.get(value)
            if keys is None:
                index[value] = {key}
            else:
                keys.add(key)


def _build_index(func: IndexFunc, items: Mapping[str, Any]) -> Index:
    index: Index = {}
    for key, obj in items.items():
        for value in func(obj):
            keys = index.get(value)
            if keys is None:
                index[value] = {key}
            else:
                keys.add(key)
    return index


class ThreadSafeStore:
    """``key → object`` with secondary indexes, safe to read from any thread.

    Objects must not be ``None`` (``None`` means "absent" in the API) and
    must not be mutated once stored.
    """

    __slots__ = ("_indexers", "_indices", "_items", "_lock", "_plan")

    def __init__(self, indexers: Indexers | None = None) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}
        self._indexers: Indexers = dict(indexers) if indexers else {}
        # Every indexer has its index from the start, so readers never need
        # to tell "no such index" from "index not built yet".
        self._indices: Indices = {name: {} for name in self._indexers}
        self._plan: _Plan = self._make_plan()

    def _make_plan(self) -> _Plan:
        return tuple((func, self._indices[name]) for name, func in self._indexers.items())

    # --- mutation --------------------------------------------------------

    def update(self, key: str, obj: Any) -> None:
        """Store ``obj`` under ``key``, replacing any previous object, and re-index it."""
        if obj is None:
            raise ValueError(f"cannot store None under key {key!r}")
        with self._lock:
            items = self._items
            if self._plan:
                self._update_indices(items.get(key), obj, key)
            items[key] = obj

    # client-go's Add is Update: storing under a key replaces what is there.
    add = update

    def swap(self, key: str, obj: Any) -> Any | None:
        """``update``, returning the object it replaced (None if the key was absent):
        the informer's get-then-update of every change in one call."""
        if obj is None:
            raise ValueError(f"cannot store None under key {key!r}")
        with self._lock:
            items = self._items
            old = items.get(key)
            if self._plan:
                self._update_indices(old, obj, key)
            items[key] = obj
        return old

    def delete(self, key: str) -> None:
        """Remove the object stored under ``key`` and its index entries; absent keys are ignored."""
        with self._lock:
            items = self._items
            old = items.get(key)
            if old is None:
                return
            if self._plan:
                self._update_indices(old, None, key)
            del items[key]

    def _update_indices(self, old: Any, new: Any, key: str) -> None:
        # Called with the lock held. All index functions run before any index
        # is touched, so one that raises leaves every index as it was.
        changes: builtins.list[tuple[Index, list[str], list[str]]] | None = None
        # Two compact objects (FrozenObject) with the same precomputed key are in the
        # same namespace: the namespace index reads it from that key. The update of a
        # compact cache's object skips the two calls.
        same_key = (old is not None and new is not None and type(new) is not dict
                    and type(old) is not dict
                    and (k := getattr(new, "_meta_namespace_key", None)) is not None
                    and k == getattr(old, "_meta_namespace_key", None))
        for func, index in self._plan:
            if same_key and func is meta_namespace_index_func:
                continue
            new_values = func(new) if new is not None else _NO_VALUES
            old_values = func(old) if old is not None else _NO_VALUES
            if old_values == new_values:
                continue  # the common update: same namespace, same labels
            if changes is None:
                changes = []
            changes.append((index, old_values, new_values))
        if changes is not None:
            for index, old_values, new_values in changes:
                _index_values(index, key, old_values, new_values)

    def replace(self, items: Mapping[str, Any], resource_version: str = "") -> None:
        """Replace the whole content by ``items`` (copied) and rebuild every index.

        ``resource_version`` is accepted for client-go's signature and ignored,
        as in client-go's threadSafeMap.
        """
        self._replace_owned(dict(items))

    def _replace_owned(self, items: dict[str, Any]) -> None:
        """:meth:`replace` with a dict the caller hands over (no copy)."""
        for key, obj in items.items():
            if obj is None:
                raise ValueError(f"cannot store None under key {key!r}")
        with self._lock:
            # Build the new indices aside and swap whole dicts, so lock-free
            # readers see either the old content or the new, never a mix.
            indices: Indices = {
                name: _build_index(func, items) for name, func in self._indexers.items()
            }
            self._items = items
            self._indices = indices
            self._plan = self._make_plan()

    def resync(self) -> None:
        """No-op (deprecated in client-go; kept for the interface)."""

    def add_indexers(self, new_indexers: Indexers) -> None:
        """Add indexers and index the objects already stored.

        Raises :class:`~pykcm.cache.errors.IndexerConflictError` if a name is
        already an indexer; then nothing is added.
        """
        with self._lock:
            conflict = sorted(set(new_indexers) & set(self._indexers))
            if conflict:
                raise IndexerConflictError(conflict)
            built = {name: _build_index(func, self._items) for name, func in new_indexers.items()}
            # Copy-on-write: lock-free readers keep a consistent dict.
            self._indexers = {**self._indexers, **new_indexers}
            self._indices = {**self._indices, **built}
            self._plan = self._make_plan()

    # --- lock-free reads (one atomic dict operation each) ----------------

    def get(self, key: str) -> Any | None:
        """The object stored under ``key``, or ``None``."""
        return self._items.get(key)

    get_by_key = get

    def list(self) -> builtins.list[Any]:
        """The stored objects themselves (references, not copies), in no particular order."""
        return builtins.list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        """The keys of the stored objects."""
        return builtins.list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every indexed value of the named index that has at least one key.

        An unknown index gives ``[]``, as in client-go.
        """
        index = self._indices.get(index_name)
        return builtins.list(index) if index is not None else []

    def get_indexers(self) -> Indexers:
        """A copy of the indexers (name → index function)."""
        return dict(self._indexers)

    # --- index reads (walk a value set: under the lock) -----------------

    def _index(self, index_name: str) -> tuple[IndexFunc, Index]:
        func = self._indexers.get(index_name)
        if func is None:
            raise IndexNotFoundError(index_name)
        return func, self._indices[index_name]

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        """The stored objects sharing at least one indexed value with ``obj``."""
        func = self._index(index_name)[0]
        values = func(obj)  # user code: outside the lock
        with self._lock:
            index = self._indices[index_name]
            items = self._items
            if len(values) == 1:
                # The common case needs no de-duplication.
                return [items[k] for k in index.get(values[0], ())]
            keys: set[str] = set()
            for value in values:
                found = index.get(value)
                if found:
                    keys.update(found)
            return [items[k] for k in keys]

    def index_keys(self, index_name: str, indexed_value: str) -> builtins.list[str]:
        """The keys of the objects having ``indexed_value`` in the named index, sorted."""
        with self._lock:
            keys = self._index(index_name)[1].get(indexed_value)
            return sorted(keys) if keys else []

    def by_index(self, index_name: str, indexed_value: str) -> builtins.list[Any]:
        """The stored objects having ``indexed_value`` in the named index."""
        with self._lock:
            keys = self._index(index_name)[1].get(indexed_value)
            if not keys:
                return []
            items = self._items
            return [items[k] for k in keys]
