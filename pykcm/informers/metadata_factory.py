"""MetadataSharedInformerFactory: shared metadata-only informers, keyed by resource.

client-go ``metadata/metadatainformer`` (``NewSharedInformerFactoryWithOptions``,
``ForResource``, ``Start``, ``WaitForCacheSync``, ``Shutdown``) and
``metadata/metadatalister``.

Role: the controllers that need only the metadata of everything (the garbage
collector's graph, the quota monitors' object counts) cache each resource as
``PartialObjectMetadata`` (kind, apiVersion ``meta.k8s.io/v1``, metadata):
one informer per resource per process, as the full-object factory does.

Data flow::

    factory.for_resource(group, version, plural) / informer_for(ResourceInfo)
        │ first request: MetadataListWatch(client, resource, namespace)
        │   → SharedIndexInformer (namespace index) → GenericInformer(.informer, .lister)
        ▼ later requests: the same GenericInformer
    start() ─► one task per informer not started yet (Reflector → DeltaFIFO → Indexer)
    wait_for_cache_sync() / shutdown()

The lister is the generic lister over the PartialObjectMetadata cache
(metadatalister's ``List(selector)``, ``Get(name)``, ``Namespace(ns)``), with
the same NotFound errors as every pykcm lister.

Rules as the full-object factory's (pykcm/informers/factory.py): one informer
per resource, lazy creation, ``start()`` starts only new informers and nothing
after ``shutdown()``; managedFields are dropped while decoding unless
``strip_managed_fields=False`` (kube-controller-manager trims them with its
factories' transform); ``compact_objects=True`` caches read-only FrozenObjects.
Informers are named ``"<name>/<plural.group>"`` (default name
``"metadata-informer-factory"``) in logs and metrics.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Final, Self

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.progress_poll import PROGRESS_POLLS
from pykcm.api.randomness import RandomSource
from pykcm.api.resources import ResourceInfo, ResourceRegistry, builtin_registry
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.informers.generic import GenericInformer, GroupVersionResource
from pykcm.informers.metadata_list_watch import MetadataListWatch

if TYPE_CHECKING:
    from pykcm.cache.list_watch import TweakListOptionsFunc
    from pykcm.client import Client

__all__ = ["DEFAULT_METADATA_FACTORY_NAME", "MetadataSharedInformerFactory"]

log = logging.getLogger("pykcm.informers")

DEFAULT_METADATA_FACTORY_NAME: Final = "metadata-informer-factory"
SYNCED_POLL_PERIOD: Final = 0.1


class MetadataSharedInformerFactory:
    """Metadata-only shared informers of one client, created on demand.

    ``resync`` is every informer's resync period (seconds, 0 = none);
    ``namespace`` restricts namespaced resources to one namespace.
    """

    def __init__(self, client: Client, resync: float = 0.0, *,
                 namespace: str | None = None,
                 tweak_list_options: TweakListOptionsFunc | None = None,
                 strip_managed_fields: bool = True, compact_objects: bool = False,
                 name: str = DEFAULT_METADATA_FACTORY_NAME,
                 clock: Clock | None = None, rng: RandomSource | None = None) -> None:
        if resync < 0:
            raise ValueError(f"resync must be >= 0 seconds, got {resync!r}")
        self._client = client
        self._resync = float(resync)
        self._namespace = namespace or None
        self._tweak = tweak_list_options
        self._strip = strip_managed_fields
        self._compact = compact_objects
        self._name = name
        self._clock = clock
        self._rng = rng  # the reflectors' jitter (None: unseeded)
        self._registry: ResourceRegistry = builtin_registry()
        self._informers: dict[GroupVersionResource, GenericInformer] = {}
        self._tasks: dict[GroupVersionResource, asyncio.Task[None]] = {}
        self._shutting_down = False

    @property
    def client(self) -> Client:
        return self._client

    def for_resource(self, group: str, version: str, resource: str) -> GenericInformer:
        """The metadata informer of any resource (a CRD is resolved when it first lists)."""
        return self.informer_for(GroupVersionResource(group, version, resource))

    def informer_for(self, resource: ResourceInfo | GroupVersionResource) -> GenericInformer:
        """The factory's metadata informer of ``resource`` (created on first request)."""
        if isinstance(resource, ResourceInfo):
            gvr = GroupVersionResource.of(resource)
            info: ResourceInfo | None = resource
        else:
            gvr = resource
            info = self._registry.get(gvr.group, gvr.version, gvr.resource)
        existing = self._informers.get(gvr)
        if existing is not None:
            return existing
        target: ResourceInfo | str = info if info is not None else str(gvr)
        namespace = self._namespace if info is None or info.namespaced else None
        lw = MetadataListWatch(self._client, target, namespace=namespace,
                               tweak_list_options=self._tweak,
                               strip_managed_fields=self._strip, compact=self._compact)
        name = f"{self._name}/{gvr.group_resource}" if self._name else ""
        informer = SharedIndexInformer(lw, resync_period=self._resync, name=name,
                                       clock=self._clock, rng=self._rng)
        lister = GenericLister(informer.get_indexer(),
                               info if info is not None else gvr.group_resource)
        gi = GenericInformer(gvr, informer, lister, lw)
        self._informers[gvr] = gi
        return gi

    def informers(self) -> dict[GroupVersionResource, GenericInformer]:
        """Every informer created so far (started or not)."""
        return dict(self._informers)

    def has(self, gvr: GroupVersionResource) -> bool:
        return gvr in self._informers

    def start(self) -> None:
        """Start every informer not started yet (nothing after :meth:`shutdown`)."""
        if self._shutting_down:
            return
        loop = asyncio.get_running_loop()
        for gvr, gi in list(self._informers.items()):
            if gvr in self._tasks:
                continue
            task = loop.create_task(gi.informer.run(),
                                    name=f"metadata-informer[{gi.informer.name or gvr}]")
            task.add_done_callback(self._on_done)
            self._tasks[gvr] = task

    def _on_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("%s ended with an error: %s", task.get_name(), exc, exc_info=exc)

    async def wait_for_cache_sync(self, timeout: float | None = None
                                  ) -> dict[GroupVersionResource, bool]:
        """Wait until every started informer has synced (or ``timeout``): {gvr: synced}."""
        # I/O progress: real time whatever the informers' clock (as factory.py).
        deadline = None if timeout is None else REAL_CLOCK.monotonic() + timeout
        def synced_all() -> bool:
            return all(task.done() or self._informers[gvr].informer.has_synced()
                       for gvr, task in self._tasks.items())

        # a progress poll (pykcm.api.progress_poll), as factory.py
        while not synced_all():
            if deadline is not None and REAL_CLOCK.monotonic() >= deadline:
                break
            await PROGRESS_POLLS.sleep(synced_all, SYNCED_POLL_PERIOD)
        return {gvr: self._informers[gvr].informer.has_synced() for gvr in self._tasks}

    async def shutdown(self) -> None:
        """Stop every informer and wait for them (idempotent)."""
        self._shutting_down = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def __repr__(self) -> str:
        return (f"<MetadataSharedInformerFactory {self._name!r} "
                f"informers={len(self._informers)} started={len(self._tasks)}>")
