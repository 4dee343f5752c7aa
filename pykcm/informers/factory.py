"""SharedInformerFactory: one informer per resource for a whole process.

client-go informers/factory.go (``NewSharedInformerFactoryWithOptions``:
``WithNamespace``, ``WithTweakListOptions``, ``WithTransform``,
``WithCustomResyncConfig``, ``WithInformerName``), its generated typed
accessors, and dynamicinformer's ``ForResource`` for any other resource.

Role: the controller manager owns one factory (DESIGN.md). Every controller
asks it for the informers it needs while it is being built; the factory
creates each resource's informer once, whoever asks, so each resource is
listed and watched once per process. When every controller has registered
its handlers, ``start()`` runs the informers.

Data flow::

    controller construction
      factory.core_v1.pods / factory.for_resource(g, v, r)
        │ first request for a resource: ListWatch(client, resource, namespace,
        │ tweak_list_options) → SharedIndexInformer(resync, name) + set_transform
        │ → GenericInformer(.informer, .lister), filed under its GroupVersionResource
        ▼ later requests: the same GenericInformer
      informer.add_event_handler(...), informer.add_indexers(...)
    factory.start()            one asyncio task per informer not started yet:
        │                      SharedIndexInformer.run() (Reflector → DeltaFIFO →
        │                      Indexer → handlers), on the running loop
    await factory.wait_for_cache_sync()   {ResourceInfo: synced}
        ▼
    workers read listers ... await factory.shutdown()   cancel every task, wait

Rules (client-go's):

- Exactly one informer per resource (group, version, plural) per factory.
  Accessors create informers lazily: one nobody asked for is never listed.
- ``start()`` starts only informers not started yet: calling it again after
  asking for more informers starts just those. After ``shutdown()`` it does
  nothing.
- ``wait_for_cache_sync`` waits for the started informers only.
- ``resync`` is every informer's default resync period (seconds, 0 = none);
  ``custom_resync`` overrides it per resource, keyed by the resource's
  ``plural.group`` name (``"pods"``, ``"deployments.apps"``,
  ``"leases.coordination.k8s.io"``), as ``ResourceInfo.group_resource``.
- ``transform`` is set on every informer the factory creates (e.g.
  :func:`~pykcm.informers.transforms.strip_managed_fields`).
- ``compact_objects=True`` (opt-in; needs msgspec) caches every object as a
  read-only, compact :class:`~pykcm.cache.frozen_object.FrozenObject`
  decoded straight from the server's bytes (2.3-3.4 KiB a pod instead of
  10.8, no GC-tracked objects) instead of a dict tree; consumers then
  ``thaw()`` (or ``copy.deepcopy``) an object before changing it. With
  ``transform=strip_managed_fields`` the managedFields are dropped while
  decoding.
- ``namespace`` restricts namespaced resources to one namespace;
  cluster-scoped ones (namespaces, nodes, CRDs) are always watched whole.
- Informers are named ``"<name>/<plural.group>"`` (``name`` defaults to
  ``"shared-informer-factory"``) in logs and in the informer metrics
  (``informer_queued_items{name, group, version, resource}`` ...); a second
  informer with the same name and resource in the process publishes no
  metrics, as in client-go. ``name=""`` leaves them unnamed (no metrics).

Resources outside the built-in registry (CRDs): ``for_resource`` returns an
informer whose ListWatch resolves the name through the client's discovery
when it first lists (a resource the server does not serve then fails in the
Reflector, which logs and retries with backoff); ``await
for_resource_async(...)`` resolves first and raises
:class:`~pykcm.client.NoResourceMatchError` at once.

Metadata-only informers (``PartialObjectMetadata``, client-go's
metadatainformer) are a factory of their own: metadata_factory.py, and
object_or_metadata.py for the garbage collector's and quota's mix of both.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Self

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.progress_poll import PROGRESS_POLLS
from pykcm.api.randomness import RandomSource
from pykcm.api.resources import ResourceInfo, ResourceRegistry, builtin_registry
from pykcm.cache import gc_policy
from pykcm.cache.delta_fifo import TransformFunc
from pykcm.cache.list_watch import ListWatch, TweakListOptionsFunc
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.cache.synced import SYNCED_POLL_PERIOD
from pykcm.client import Client
from pykcm.informers.generic import GenericInformer, GroupVersionResource
from pykcm.informers.transforms import strip_managed_fields
from pykcm.informers.typed import (
    AdmissionregistrationV1Informers,
    ApiextensionsV1Informers,
    ApiregistrationV1Informers,
    AppsV1Informers,
    AutoscalingV1Informers,
    AutoscalingV2Informers,
    BatchV1Informers,
    CertificatesV1Informers,
    CoordinationV1Informers,
    CoreV1Informers,
    DiscoveryV1Informers,
    EventsV1Informers,
    FlowcontrolV1Informers,
    NetworkingV1Informers,
    NodeV1Informers,
    PolicyV1Informers,
    RbacV1Informers,
    ResourceV1Informers,
    SchedulingV1Informers,
    StorageV1Informers,
)

if TYPE_CHECKING:
    from pykcm.cache.frozen_object import CompactDecoder

__all__ = [
    "DEFAULT_FACTORY_NAME",
    "NewInformerFunc",
    "SharedInformerFactory",
    "default_new_informer",
]

log = logging.getLogger("pykcm.informers.factory")

DEFAULT_FACTORY_NAME: Final = "shared-informer-factory"
"""The default name of a factory (its informers are ``"<name>/<plural.group>"``)."""

NewInformerFunc = Callable[[ListWatch, float, str], SharedIndexInformer]
"""Builds an informer from (ListWatch, resync period, name) (client-go ``NewInformerFunc``)."""


def default_new_informer(lw: ListWatch, resync: float, name: str) -> SharedIndexInformer:
    """A SharedIndexInformer with the namespace index, as client-go's generated informers."""
    return SharedIndexInformer(lw, resync_period=resync, name=name)


def _check_period(what: str, value: float) -> float:
    v = float(value)
    if v < 0 or math.isnan(v):
        raise ValueError(f"{what} must be >= 0 seconds, got {value!r}")
    return v


def _provisional_info(gvr: GroupVersionResource) -> ResourceInfo:
    """Stands for a resource not resolved yet (its kind and scope unknown)."""
    return ResourceInfo(group=gvr.group, version=gvr.version, kind="", plural=gvr.resource,
                        singular="", namespaced=True, verbs=())


class SharedInformerFactory:
    """Shared informers for every resource of one client, created on demand.

    ``client`` is the :class:`~pykcm.client.Client` the informers list and
    watch with (the factory does not close it). See the module docstring
    for ``resync``, ``namespace``, ``tweak_list_options``, ``transform``,
    ``custom_resync`` and ``name``.

    Use it as ``async with SharedInformerFactory(...) as factory:`` to shut
    it down on exit, or call :meth:`shutdown`.
    """

    def __init__(
        self,
        client: Client,
        resync: float = 0.0,
        *,
        namespace: str | None = None,
        tweak_list_options: TweakListOptionsFunc | None = None,
        transform: TransformFunc | None = None,
        custom_resync: Mapping[str, float] | None = None,
        name: str = DEFAULT_FACTORY_NAME,
        tune_gc: bool = True,
        compact_objects: bool = False,
        clock: Clock | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        self._client = client
        # Handed to every informer (resync, reflector backoff); None keeps theirs (real).
        self._clock = clock
        # Likewise the random source of the reflectors' jitter (None: unseeded).
        self._rng = rng
        self._default_resync = _check_period("resync", resync)
        self._custom_resync = {k: _check_period(f"custom_resync[{k!r}]", v)
                               for k, v in (custom_resync or {}).items()}
        # "" and None both mean every namespace (metav1.NamespaceAll).
        self._namespace = namespace or None
        self._tweak_list_options = tweak_list_options
        self._transform = transform
        self._name = name
        # The process-wide GC policy of pykcm.cache.gc_policy: raised thresholds
        # from start(), a freeze once wait_for_cache_sync() sees every cache
        # synced. About 3x faster syncs and watches with large caches.
        self._tune_gc = tune_gc
        self._compact: type[CompactDecoder] | None = None
        # With the usual transform, compact decoders drop managedFields themselves.
        self._compact_strip = transform is strip_managed_fields
        if compact_objects:
            # Imported only when asked for: it needs msgspec.
            from pykcm.cache.frozen_object import CompactDecoder
            self._compact = CompactDecoder
        self._frozen = False
        self._registry: ResourceRegistry = builtin_registry()
        self._informers: dict[GroupVersionResource, GenericInformer] = {}
        self._tasks: dict[GroupVersionResource, asyncio.Task[None]] = {}
        self._shutting_down = False
        self._core_v1 = CoreV1Informers(self)
        self._apps_v1 = AppsV1Informers(self)
        self._batch_v1 = BatchV1Informers(self)
        self._coordination_v1 = CoordinationV1Informers(self)
        self._events_v1 = EventsV1Informers(self)
        self._discovery_v1 = DiscoveryV1Informers(self)
        self._storage_v1 = StorageV1Informers(self)
        self._policy_v1 = PolicyV1Informers(self)
        self._admissionregistration_v1 = AdmissionregistrationV1Informers(self)
        self._apiregistration_v1 = ApiregistrationV1Informers(self)
        self._autoscaling_v1 = AutoscalingV1Informers(self)
        self._autoscaling_v2 = AutoscalingV2Informers(self)
        self._certificates_v1 = CertificatesV1Informers(self)
        self._flowcontrol_v1 = FlowcontrolV1Informers(self)
        self._networking_v1 = NetworkingV1Informers(self)
        self._node_v1 = NodeV1Informers(self)
        self._resource_v1 = ResourceV1Informers(self)
        self._scheduling_v1 = SchedulingV1Informers(self)
        self._rbac_v1 = RbacV1Informers(self)
        self._apiextensions_v1 = ApiextensionsV1Informers(self)

    # --- settings -----------------------------------------------------------

    @property
    def client(self) -> Client:
        return self._client

    @property
    def namespace(self) -> str | None:
        """The namespace namespaced resources are restricted to (None: all)."""
        return self._namespace

    @property
    def default_resync(self) -> float:
        return self._default_resync

    @property
    def name(self) -> str:
        return self._name

    def resync_period_for(self, resource: ResourceInfo | GroupVersionResource) -> float:
        """The resync period an informer of ``resource`` gets (custom, else the default)."""
        return self._custom_resync.get(resource.group_resource, self._default_resync)

    # --- typed accessors ----------------------------------------------------

    @property
    def core_v1(self) -> CoreV1Informers:
        """core/v1: ``pods``, ``namespaces``, ``nodes``, ``services``, ``configmaps`` ..."""
        return self._core_v1

    @property
    def apps_v1(self) -> AppsV1Informers:
        """apps/v1: ``deployments``, ``replicasets``, ``statefulsets``, ``daemonsets`` ..."""
        return self._apps_v1

    @property
    def batch_v1(self) -> BatchV1Informers:
        """batch/v1: ``jobs``, ``cronjobs``."""
        return self._batch_v1

    @property
    def coordination_v1(self) -> CoordinationV1Informers:
        """coordination.k8s.io/v1: ``leases``."""
        return self._coordination_v1

    @property
    def events_v1(self) -> EventsV1Informers:
        """events.k8s.io/v1: ``events``."""
        return self._events_v1

    @property
    def discovery_v1(self) -> DiscoveryV1Informers:
        """discovery.k8s.io/v1: ``endpointslices``."""
        return self._discovery_v1

    @property
    def storage_v1(self) -> StorageV1Informers:
        """storage.k8s.io/v1: ``storageclasses``, the CSI kinds, ``volumeattachments``,
        ``volumeattributesclasses``."""
        return self._storage_v1

    @property
    def policy_v1(self) -> PolicyV1Informers:
        """policy/v1: ``poddisruptionbudgets``."""
        return self._policy_v1

    @property
    def rbac_v1(self) -> RbacV1Informers:
        """rbac.authorization.k8s.io/v1: ``clusterroles``, ``clusterrolebindings``, ``roles``,
        ``rolebindings``."""
        return self._rbac_v1

    @property
    def admissionregistration_v1(self) -> AdmissionregistrationV1Informers:
        """admissionregistration.k8s.io/v1:
        ``mutatingwebhookconfigurations``, ``validatingwebhookconfigurations``."""
        return self._admissionregistration_v1

    @property
    def apiregistration_v1(self) -> ApiregistrationV1Informers:
        """apiregistration.k8s.io/v1: ``apiservices``."""
        return self._apiregistration_v1

    @property
    def autoscaling_v1(self) -> AutoscalingV1Informers:
        """autoscaling/v1: ``horizontalpodautoscalers``."""
        return self._autoscaling_v1

    @property
    def autoscaling_v2(self) -> AutoscalingV2Informers:
        """autoscaling/v2: ``horizontalpodautoscalers``."""
        return self._autoscaling_v2

    @property
    def certificates_v1(self) -> CertificatesV1Informers:
        """certificates.k8s.io/v1: ``certificatesigningrequests``."""
        return self._certificates_v1

    @property
    def flowcontrol_v1(self) -> FlowcontrolV1Informers:
        """flowcontrol.apiserver.k8s.io/v1: ``flowschemas``, ``prioritylevelconfigurations``."""
        return self._flowcontrol_v1

    @property
    def networking_v1(self) -> NetworkingV1Informers:
        """networking.k8s.io/v1:
        ``ingressclasses``, ``ingresses``, ``ipaddresses``, ``networkpolicies``,
        ``servicecidrs``."""
        return self._networking_v1

    @property
    def node_v1(self) -> NodeV1Informers:
        """node.k8s.io/v1: ``runtimeclasses``."""
        return self._node_v1

    @property
    def resource_v1(self) -> ResourceV1Informers:
        """resource.k8s.io/v1:
        ``deviceclasses``, ``resourceclaims``, ``resourceclaimtemplates``,
        ``resourceslices``."""
        return self._resource_v1

    @property
    def scheduling_v1(self) -> SchedulingV1Informers:
        """scheduling.k8s.io/v1: ``priorityclasses``."""
        return self._scheduling_v1

    @property
    def apiextensions_v1(self) -> ApiextensionsV1Informers:
        """apiextensions.k8s.io/v1: ``customresourcedefinitions``."""
        return self._apiextensions_v1

    # --- creating informers ---------------------------------------------------

    def for_resource(self, group: str, version: str, resource: str) -> GenericInformer:
        """The informer of any resource, by group ("" for core), version and plural.

        Built-in resources come from the registry; any other (a CRD) is
        resolved through the client's discovery when its informer first
        lists (see :meth:`for_resource_async` to resolve now).
        """
        return self.informer_for(GroupVersionResource(group, version, resource))

    async def for_resource_async(self, group: str, version: str,
                                 resource: str) -> GenericInformer:
        """:meth:`for_resource`, with the resource resolved through discovery first.

        Raises :class:`~pykcm.client.NoResourceMatchError` when the server
        serves no such resource (no informer is then created).
        """
        gvr = GroupVersionResource(group, version, resource)
        existing = self._informers.get(gvr)
        if existing is None and self._registry.get(group, version, resource) is None:
            info = await self._client.resolve(str(gvr))
            # Filed under the resolved plural; another task may have asked
            # for it meanwhile, and informer_for then returns that one.
            return self.informer_for(info)
        gi = self.informer_for(gvr) if existing is None else existing
        await gi.resolve()
        return gi

    def informer_for(self, resource: ResourceInfo | GroupVersionResource,
                     new_informer: NewInformerFunc | None = None) -> GenericInformer:
        """The factory's informer of ``resource``, created with ``new_informer`` if new.

        client-go's ``InformerFor``: the first caller for a resource decides
        how its informer is built (``new_informer(list_watch, resync, name)``,
        default :func:`default_new_informer`); later callers get that same
        informer, whatever they pass. The factory's transform is set on it.
        """
        if isinstance(resource, ResourceInfo):
            gvr = GroupVersionResource.of(resource)
            info: ResourceInfo | None = resource
        else:
            gvr = resource
            info = self._registry.get(gvr.group, gvr.version, gvr.resource)
        existing = self._informers.get(gvr)
        if existing is not None:
            return existing
        # One compact decoder per informer: it learns its resource's shape.
        compact: CompactDecoder | bool = False if self._compact is None else \
            self._compact(strip_managed_fields=self._compact_strip)
        if info is not None:
            namespace = self._namespace if info.namespaced else None
            lw = ListWatch(self._client, info, namespace=namespace,
                           tweak_list_options=self._tweak_list_options,
                           compact=compact)
        else:
            # Resolved through discovery by the ListWatch's first request.
            lw = ListWatch(self._client, str(gvr), namespace=self._namespace,
                           tweak_list_options=self._tweak_list_options,
                           compact=compact)
        name = f"{self._name}/{gvr.group_resource}" if self._name else ""
        build = new_informer if new_informer is not None else default_new_informer
        informer = build(lw, self.resync_period_for(gvr), name)
        if self._clock is not None:
            informer.set_clock(self._clock)
        if self._rng is not None:
            informer.set_rng(self._rng)
        if self._transform is not None and not (
                self._compact is not None and self._compact_strip):
            # (A compact decoder that strips managedFields did the transform's work.)
            informer.set_transform(self._transform)
        lister = GenericLister(informer.get_indexer(),
                               info if info is not None else gvr.group_resource)
        gi = GenericInformer(gvr, informer, lister, lw)
        self._informers[gvr] = gi
        return gi

    def informers(self) -> dict[GroupVersionResource, GenericInformer]:
        """Every informer created so far (started or not)."""
        return dict(self._informers)

    def is_started(self, resource: ResourceInfo | GroupVersionResource) -> bool:
        """True once ``start()`` has started the informer of ``resource``."""
        gvr = GroupVersionResource.of(resource) if isinstance(resource, ResourceInfo) \
            else resource
        return gvr in self._tasks

    # --- running --------------------------------------------------------------

    def start(self) -> None:
        """Start every informer not started yet, as tasks on the running event loop.

        Safe to call again: only informers created since are started. Does
        nothing once :meth:`shutdown` has been called. Raises RuntimeError
        outside a running event loop.
        """
        if self._shutting_down:
            return
        loop = asyncio.get_running_loop()
        if self._tune_gc:
            gc_policy.tune_thresholds()
        for gvr, gi in list(self._informers.items()):
            if gvr in self._tasks:
                continue
            informer = gi.informer
            task = loop.create_task(informer.run(),
                                    name=f"informer[{informer.name or gvr}]")
            task.add_done_callback(self._on_informer_done)
            self._tasks[gvr] = task

    def _on_informer_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("%s ended with an error: %s", task.get_name(), exc, exc_info=exc)
        elif not self._shutting_down:
            log.warning("%s ended before the factory was shut down", task.get_name())

    async def wait_for_cache_sync(self, timeout: float | None = None
                                  ) -> dict[ResourceInfo, bool]:
        """Wait until every started informer has synced, or ``timeout`` seconds pass.

        Returns ``{resource: has_synced}`` for the started informers. An
        informer that stopped (its task ended) is not waited for. A resource
        still unresolved (a CRD whose discovery failed) is keyed by a
        provisional ResourceInfo with an empty ``kind``.
        """
        # Waiting for lists to arrive is I/O, on real time whatever the informers'
        # clock (upstream polls cache sync on the real clock too).
        deadline = None if timeout is None else REAL_CLOCK.monotonic() + timeout
        entries = [(gvr, gi, self._tasks[gvr]) for gvr, gi in self._informers.items()
                   if gvr in self._tasks]
        def synced_all() -> bool:
            return all(task.done() or gi.informer.has_synced() for _, gi, task in entries)

        # a progress poll: on virtual time a sync already done is not slept out while the
        # cluster's clock runs on (pykcm.api.progress_poll)
        while not synced_all():
            if deadline is None:
                await PROGRESS_POLLS.sleep(synced_all, SYNCED_POLL_PERIOD)
                continue
            remaining = deadline - REAL_CLOCK.monotonic()
            if remaining <= 0:
                break
            await PROGRESS_POLLS.sleep(synced_all, min(SYNCED_POLL_PERIOD, remaining))
        out: dict[ResourceInfo, bool] = {}
        for gvr, gi, _ in entries:
            synced = gi.informer.has_synced()
            info = gi.info
            if info is None and synced:
                # The client resolved the name to list it: no I/O now.
                try:
                    info = await gi.resolve()
                except Exception:  # noqa: BLE001 - keyed provisionally below
                    info = None
            out[info if info is not None else _provisional_info(gvr)] = synced
        if self._tune_gc and out and all(out.values()) and not self._frozen:
            self._frozen = True
            gc_policy.freeze()
        return out

    async def shutdown(self) -> None:
        """Stop every informer and wait for them to end (idempotent).

        Informers requested afterwards are created but never started, as in
        client-go.
        """
        self._shutting_down = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def __repr__(self) -> str:
        return (f"<SharedInformerFactory {self._name!r} namespace={self._namespace or '*'} "
                f"informers={len(self._informers)} started={len(self._tasks)}>")
