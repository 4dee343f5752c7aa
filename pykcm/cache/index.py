"""Index functions and index types of the Indexer (client-go tools/cache index.go).

An *index function* maps an object to the list of *indexed values* under
which the Indexer files its key; an *indexer* is a named index function; an
*index* maps each indexed value to the set of store keys having it.

Data flow: the informer builds its Indexer with the namespace index
(:data:`NAMESPACE_INDEX` → :func:`meta_namespace_index_func`); every add,
update and delete of the Indexer recomputes the object's indexed values and
moves its key between value sets; listers answer ``by_namespace(ns).list()``
with ``by_index(NAMESPACE_INDEX, ns)`` instead of scanning the whole cache.

Three kinds of strings meet here, as in client-go: the store key
(``ns/name``), the index name (``"namespace"``), and the indexed value
(``"kube-system"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

from pykcm.cache.errors import NoMetaError

__all__ = [
    "NAMESPACE_INDEX",
    "Index",
    "IndexFunc",
    "Indexers",
    "Indices",
    "meta_namespace_index_func",
]

IndexFunc: TypeAlias = Callable[[Any], list[str]]
"""Computes the indexed values of an object. It must be deterministic: the
Indexer recomputes the values of the old object to un-index it."""

Indexers: TypeAlias = dict[str, IndexFunc]
"""Index name → index function."""

Index: TypeAlias = dict[str, set[str]]
"""Indexed value → the store keys of the objects having that value."""

Indices: TypeAlias = dict[str, Index]
"""Index name → its index."""

NAMESPACE_INDEX: Final = "namespace"
"""The name of the namespace index that informers and listers use."""


def meta_namespace_index_func(obj: Any) -> list[str]:
    """Index an object by its namespace (``""`` for a cluster-scoped object)."""
    if type(obj) is not dict:
        # A compact cached object's precomputed key (keys.meta_namespace_key) is
        # "namespace/name", or "name" without a namespace; neither part holds a "/".
        key = getattr(obj, "_meta_namespace_key", None)
        if key is not None:
            head, sep, _ = key.partition("/")
            return [head if sep else ""]
    try:
        namespace: str = obj["metadata"].get("namespace") or ""
    except (TypeError, KeyError, AttributeError):
        raise NoMetaError(obj) from None
    return [namespace]
