"""GenericInformer: one resource's shared informer and its lister, as a factory hands them out.

client-go informers/generic.go (``GenericInformer``: ``Informer()`` and
``Lister()``) and the generated per-type informers, which pair the same two.

Role and data flow::

    SharedInformerFactory ── creates once per resource ──► GenericInformer
                                                             │ .informer: SharedIndexInformer
                                                             │   (list+watch → Indexer → handlers)
                                                             │ .lister: GenericLister
                                                             ▼   (reads that Indexer)
                          controller: informer.add_event_handler(...), lister.by_namespace(ns).get(n)

A GenericInformer holds no state of its own: the informer owns the cache and
the lister reads it. ``gvr`` is the key the factory files it under;
``info`` the resolved :class:`~pykcm.api.resources.ResourceInfo` (``None``
for a resource outside the built-in registry, a CRD, until its ListWatch
has been resolved through discovery: :meth:`resolve`).
"""

from __future__ import annotations

from typing import NamedTuple

from pykcm.api.resources import ResourceInfo
from pykcm.cache.list_watch import ListWatch
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer

__all__ = ["GenericInformer", "GroupVersionResource"]


class GroupVersionResource(NamedTuple):
    """A resource named by API group ("" for core), version and plural (client-go's GVR)."""

    group: str
    version: str
    resource: str

    @classmethod
    def of(cls, info: ResourceInfo) -> GroupVersionResource:
        """The GVR of a ResourceInfo."""
        return cls(info.group, info.version, info.plural)

    @property
    def group_resource(self) -> str:
        """``plural.group`` (``plural`` for the core group), as ResourceInfo names it."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def __str__(self) -> str:
        return (f"{self.group}/{self.version}/{self.resource}" if self.group
                else f"{self.version}/{self.resource}")


class GenericInformer:
    """The shared informer of one resource and a lister over its cache."""

    __slots__ = ("_gvr", "_informer", "_lister", "_lw")

    def __init__(self, gvr: GroupVersionResource, informer: SharedIndexInformer,
                 lister: GenericLister, lw: ListWatch | None = None) -> None:
        self._gvr = gvr
        self._informer = informer
        self._lister = lister
        self._lw = lw

    @property
    def informer(self) -> SharedIndexInformer:
        """The SharedIndexInformer (add handlers and indexers to it before the factory starts)."""
        return self._informer

    @property
    def lister(self) -> GenericLister:
        """A lister reading the informer's Indexer (valid once the informer has synced)."""
        return self._lister

    @property
    def gvr(self) -> GroupVersionResource:
        """The group, version and resource this informer lists and watches."""
        return self._gvr

    @property
    def info(self) -> ResourceInfo | None:
        """The resolved ResourceInfo; ``None`` while a CRD's name awaits discovery."""
        lw = self._lw
        if lw is None:
            return None
        try:
            return lw.resource
        except RuntimeError:
            return None

    async def resolve(self) -> ResourceInfo:
        """The ResourceInfo, resolving the resource through the client's discovery if needed.

        Raises :class:`~pykcm.client.NoResourceMatchError` when the server
        serves no such resource.
        """
        lw = self._lw
        if lw is None:
            raise RuntimeError(f"{self._gvr}: the informer has no ListWatch to resolve")
        return await lw.resolve()

    def has_synced(self) -> bool:
        """The informer's ``has_synced``."""
        return self._informer.has_synced()

    def __repr__(self) -> str:
        return f"<GenericInformer {self._gvr} {self._informer!r}>"
