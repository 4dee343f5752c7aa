"""Listers: read-only queries of an informer's Indexer (client-go tools/cache listers.go).

Data flow: a controller's sync reads the cache, never the API server:
``lister.by_namespace(ns).get(name)`` is one dict lookup in the Indexer;
``lister.by_namespace(ns).list(selector)`` walks only that namespace's keys
through the Indexer's namespace index (``by_index(NAMESPACE_INDEX, ns)``),
then filters by labels; ``lister.list(selector)`` walks the whole cache.

A missing object raises :class:`pykcm.client.errors.NotFound` carrying the
``metav1.Status`` apimachinery's ``NewNotFound`` builds, so callers use the
same ``is_not_found(exc)`` for the cache and the API server.

Objects returned are the cache's shared references: never mutate them.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, TypeAlias

from pykcm.api.labels import LabelSelector, parse_label_selector, selector_from_set
from pykcm.api.resources import ResourceInfo
from pykcm.cache.errors import IndexNotFoundError
from pykcm.cache.index import NAMESPACE_INDEX
from pykcm.cache.store import Indexer, Store
from pykcm.client.errors import NotFound

__all__ = [
    "GenericLister",
    "GenericNamespaceLister",
    "Lister",
    "NamespaceLister",
    "Selector",
    "list_all",
    "list_all_by_namespace",
    "new_not_found",
    "to_selector",
]

Selector: TypeAlias = LabelSelector | str | Mapping[str, str] | None
"""A label selector: parsed, its string form, a set of required labels, or None (everything)."""


def to_selector(selector: Selector) -> LabelSelector | None:
    """The LabelSelector for ``selector``, or ``None`` when it selects everything."""
    if selector is None:
        return None
    if isinstance(selector, LabelSelector):
        sel = selector
    elif isinstance(selector, str):
        sel = parse_label_selector(selector)
    else:
        sel = selector_from_set(selector)
    return None if sel.empty else sel


def _labels(obj: Any) -> Any:
    try:
        return obj["metadata"].get("labels")
    except (TypeError, KeyError, AttributeError):
        return None


def _filter(objs: builtins.list[Any], selector: LabelSelector | None) -> builtins.list[Any]:
    if selector is None:
        return objs
    matches = selector.matches
    return [o for o in objs if matches(_labels(o))]


def list_all(store: Store, selector: Selector = None) -> builtins.list[Any]:
    """Every object of ``store`` matching ``selector`` (client-go ``ListAll``)."""
    return _filter(store.list(), to_selector(selector))


def list_all_by_namespace(indexer: Indexer, namespace: str,
                          selector: Selector = None) -> builtins.list[Any]:
    """The objects of ``namespace`` matching ``selector`` (client-go ``ListAllByNamespace``).

    ``namespace == ""`` means all namespaces. Without a namespace index the
    whole cache is scanned, as client-go falls back to.
    """
    sel = to_selector(selector)
    if namespace == "":
        return _filter(indexer.list(), sel)
    try:
        objs = indexer.by_index(NAMESPACE_INDEX, namespace)
    except IndexNotFoundError:
        objs = []
        for o in indexer.list():
            try:
                if (o["metadata"].get("namespace") or "") == namespace:
                    objs.append(o)
            except (TypeError, KeyError, AttributeError):
                continue
    return _filter(objs, sel)


def _group_resource(resource: ResourceInfo | str) -> tuple[str, str]:
    """(group, resource) of a ResourceInfo or of a ``resource[.group]`` string."""
    if isinstance(resource, ResourceInfo):
        return resource.group, resource.plural
    name, _, group = resource.partition(".")
    return group, name


def new_not_found(resource: ResourceInfo | str, name: str) -> NotFound:
    """The NotFound error apimachinery's ``NewNotFound(groupResource, name)`` builds."""
    group, plural = _group_resource(resource)
    qualified = f"{plural}.{group}" if group else plural
    return NotFound({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{qualified} "{name}" not found',
        "reason": "NotFound",
        "details": {"name": name, "group": group, "kind": plural},
        "code": 404,
    })


class GenericLister:
    """Lists and gets the objects of one resource from an Indexer (client-go ``GenericLister``).

    ``resource`` (a ResourceInfo, or ``"plural"`` / ``"plural.group"``)
    only names the resource in NotFound errors.
    """

    __slots__ = ("_indexer", "_resource")

    def __init__(self, indexer: Indexer, resource: ResourceInfo | str) -> None:
        self._indexer = indexer
        self._resource = resource

    @property
    def indexer(self) -> Indexer:
        return self._indexer

    def list(self, selector: Selector = None) -> builtins.list[Any]:
        """Every cached object matching ``selector`` (all namespaces)."""
        return list_all(self._indexer, selector)

    def get(self, name: str) -> Any:
        """The object stored under ``name`` (a cluster-scoped object); NotFound otherwise."""
        obj = self._indexer.get_by_key(name)
        if obj is None:
            raise new_not_found(self._resource, name)
        return obj

    def by_namespace(self, namespace: str) -> GenericNamespaceLister:
        """A lister restricted to ``namespace``."""
        return GenericNamespaceLister(self._indexer, self._resource, namespace)


class GenericNamespaceLister:
    """Lists and gets objects of one namespace (client-go ``GenericNamespaceLister``)."""

    __slots__ = ("_indexer", "_namespace", "_resource")

    def __init__(self, indexer: Indexer, resource: ResourceInfo | str, namespace: str) -> None:
        self._indexer = indexer
        self._resource = resource
        self._namespace = namespace

    @property
    def namespace(self) -> str:
        return self._namespace

    def list(self, selector: Selector = None) -> builtins.list[Any]:
        """The namespace's cached objects matching ``selector`` (via the namespace index)."""
        return list_all_by_namespace(self._indexer, self._namespace, selector)

    def get(self, name: str) -> Any:
        """The object ``namespace/name``; NotFound otherwise."""
        obj = self._indexer.get_by_key(f"{self._namespace}/{name}")
        if obj is None:
            raise new_not_found(self._resource, name)
        return obj


Lister = GenericLister
NamespaceLister = GenericNamespaceLister
