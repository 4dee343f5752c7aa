"""An informer stand-in for controller unit tests: an indexer and a lister, no watch.

Controllers take GenericInformers; these tests fill the indexer by hand (to play a
cache that is behind or has caught up) and drive the controller's sync directly.
"""

from __future__ import annotations

from typing import Any

from pykcm.cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.listers import GenericLister
from pykcm.cache.store import new_indexer


class _Registration:
    def has_synced(self) -> bool:
        return True


class FakeInformer:
    """``informer``/``indexer``/``lister`` as a GenericInformer offers them, always synced."""

    def __init__(self, resource: str) -> None:
        self.indexer = new_indexer(meta_namespace_key,
                                   {NAMESPACE_INDEX: meta_namespace_index_func})
        self.lister = GenericLister(self.indexer, resource)

    @property
    def informer(self) -> FakeInformer:
        return self

    def has_synced(self) -> bool:
        return True

    def add_event_handler(self, handler: Any,
                          resync_period: float | None = None) -> _Registration:
        return _Registration()
