"""NamespaceController: deletes the content of terminating namespaces, then finalizes them.

kube-controller-manager pkg/controller/namespace/namespace_controller.go.

Data flow::

    namespace informer (add / update / resync every resync_period)
        │ only namespaces with a deletionTimestamp, after deletion_grace_period (5 s),
        │ so last-moment creations are visible to the deletion
        ▼
    Controller "namespace" (RateLimitingQueue[str]: per-item exponential 5 ms..60 s,
        │                   overall 10 qps / burst 100; workers × N)
        ▼ reconcile(name)
    lister: gone ─► done
    NamespacedResourcesDeleter.delete(name)   (deletion.py)
        ├─ ResourcesRemainingError(estimate) ─► requeue after estimate/2 + 1 s
        ├─ other error                       ─► requeue with backoff
        └─ done: the "kubernetes" finalizer is gone; the API server removes the namespace
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.resources import ResourceInfo
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client, is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.controllers.namespace.deletion import (
    NamespacedResourcesDeleter,
    ResourcesRemainingError,
)
from pykcm.informers.generic import GenericInformer
from pykcm.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
)

__all__ = ["NAMESPACE_DELETION_GRACE_PERIOD", "NamespaceController", "ns_controller_rate_limiter"]

log = logging.getLogger("pykcm.controllers.namespace")

NAMESPACE_DELETION_GRACE_PERIOD: Final = 5.0
"""Seconds to wait before processing a namespace event (upstream's namespaceDeletionGracePeriod)."""

DEFAULT_WORKERS: Final = 10


def ns_controller_rate_limiter(clock: Clock | None = None) -> RateLimiter[str]:
    """Retry a namespace at least every minute; 10 qps / burst 100 overall."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 60.0),
                            BucketRateLimiter(10.0, 100, clock=clock))


class _EnqueueDeleting:
    """Queues the namespaces being deleted, after the grace period."""

    __slots__ = ("_c", "_delay")

    def __init__(self, c: Controller, delay: float) -> None:
        self._c = c
        self._delay = delay

    def _enqueue(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            return
        if not ((obj.get("metadata") or {}).get("deletionTimestamp")):
            return
        self._c.enqueue_after(obj, self._delay)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(new)

    def on_delete(self, obj: Any) -> None:
        pass


class NamespaceController(ControllerHost):
    """The namespace controller (manager name ``namespace``).

    ``namespace_informer`` is the shared informer of namespaces; ``resync_period``
    re-examines every namespace that often; ``finalizer_token`` is the
    spec.finalizers entry this controller owns; ``deletion_grace_period``
    delays each namespace event (upstream: 5 s); ``discover_resources``
    overrides discovery (tests).
    """

    name = "namespace"
    default_workers = DEFAULT_WORKERS

    def __init__(self, *, client: Client, namespace_informer: GenericInformer,
                 resync_period: float = 300.0, finalizer_token: str = "kubernetes",
                 deletion_grace_period: float = NAMESPACE_DELETION_GRACE_PERIOD,
                 discover_resources: Callable[[], Awaitable[list[ResourceInfo]]] | None = None,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.client = client
        self.deleter = NamespacedResourcesDeleter(client, finalizer_token=finalizer_token,
                                                  discover_resources=discover_resources,
                                                  clock=self._time.now)
        self._lister = namespace_informer.lister
        self.controller = Controller("namespace", self.sync_namespace_from_key,
                                     rate_limiter=ns_controller_rate_limiter(self._time),
                                     clock=self._time)
        self.controller.watch(namespace_informer,
                              _EnqueueDeleting(self.controller, deletion_grace_period),
                              resync_period)

    @property
    def running(self) -> bool:
        return self.controller.running

    async def sync_namespace_from_key(self, key: str) -> Result | None:
        """Delete the content of namespace ``key`` and finalize it, if it is terminating."""
        try:
            namespace = self._lister.get(key)
        except Exception as exc:
            if is_not_found(exc):
                log.info("Namespace has been deleted %s", key)
                return None
            raise
        try:
            await self.deleter.delete(str(namespace["metadata"]["name"]))
        except ResourcesRemainingError as exc:
            wait = exc.estimate // 2 + 1
            log.debug("Content remaining in namespace %s, waiting %d seconds", key, wait)
            return Result(requeue_after=float(wait))
        return None
