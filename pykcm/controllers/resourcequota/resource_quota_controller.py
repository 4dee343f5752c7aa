"""The resourcequota-controller: status.hard and status.used of every ResourceQuota.

kube-controller-manager v1.36 ``pkg/controller/resourcequota/resource_quota_controller.go``.

Data flow::

    quota informer ── add: spec.hard != status.hard, or a tracked hard name without
                   │       usage ──► priority queue ("resourcequota_priority")
                   │  add otherwise, update with a changed spec.hard, delete ──► primary queue
    QuotaMonitor ── deletes / terminal pods / ... ──► replenish(gr, ns): the namespace's
                   quotas tracking that resource ──► primary queue
    every --resource-quota-sync-period (5m) ──► every quota ──► primary queue
                                          ▼  --concurrent-resource-quota-syncs workers per queue
    sync(key): used = status.used, overwritten by what the evaluators sum over the
    informer caches (pykcm.api.quota.calculate_usage), masked to spec.hard;
    PUT /status {hard: spec.hard, used} when either differs

The same evaluation library serves the API server's quota admission, which
adds each create's usage to status.used before the object is stored; this
controller recalculates from scratch and gives back what deletes free.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.quota import (
    Registry,
    calculate_usage,
    equals,
    from_wire,
    mask,
    new_registry,
    to_wire,
)
from pykcm.api.quota.registry import UsageError
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.frozen_object import thaw
from pykcm.client import Client, NotFound
from pykcm.controller.controller import Controller
from pykcm.controllers.resourcequota.resource_quota_monitor import QuotaMonitor
from pykcm.informers.factory import SharedInformerFactory
from pykcm.informers.generic import GenericInformer
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory

__all__ = ["ResourceQuotaController"]

log = logging.getLogger("pykcm.controllers.resourcequota")


class ResourceQuotaController:
    """Keeps ResourceQuota status in line with the namespace's objects."""

    default_workers = 5

    def __init__(self, *, client: Client, quota_informer: GenericInformer,
                 informer_factory: SharedInformerFactory, resync_period: float = 300.0,
                 metadata_informers: ObjectOrMetadataInformerFactory | None = None,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.name = "resourcequota"
        self.client = client
        self.quotas = quota_informer
        self.resync_period = resync_period
        self.monitor = QuotaMonitor(client, informer_factory, self.replenish,
                                    metadata_informers, clock=self._time)
        self.registry: Registry = new_registry(self.monitor.list_for, clock=self._time.now)
        self.primary = Controller("resourcequota_primary", self.sync, clock=self._time)
        self.priority = Controller("resourcequota_priority", self.sync, clock=self._time)
        reg = quota_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_quota, update_func=self._update_quota,
            delete_func=self.primary.enqueue))
        for ctl in (self.primary, self.priority):
            ctl.add_synced(reg.has_synced)
            ctl.add_synced(self.monitor.has_synced)

    async def start_monitors(self) -> None:
        """Create the informers of the built-in evaluators' resources (idempotent; run()
        does it too, then starts those informers)."""
        await self.monitor.monitor_registry(self.registry)

    # -- handlers ------------------------------------------------------------------------

    def add_quota(self, quota: Any) -> None:
        spec_hard = from_wire((quota.get("spec") or {}).get("hard"))
        status = quota.get("status") or {}
        status_hard = from_wire(status.get("hard"))
        if not equals(spec_hard, status_hard):
            self.priority.enqueue(quota)
            return
        used = status.get("used") or {}
        for name in status_hard:
            if name not in used and any(ev.matching_resources([name])
                                        for ev in self.registry.list()):
                self.priority.enqueue(quota)
                return
        self.primary.enqueue(quota)

    def _update_quota(self, old: Any, new: Any) -> None:
        if equals(from_wire((old.get("spec") or {}).get("hard")),
                  from_wire((new.get("spec") or {}).get("hard"))):
            return
        self.add_quota(new)

    def replenish(self, group: str, resource: str, namespace: str) -> None:
        """A tracked object went away or stopped counting: recalculate the quotas tracking it."""
        ev = self.registry.get(group, resource)
        if ev is None:
            return
        for quota in self.quotas.lister.by_namespace(namespace).list():
            hard = ((quota.get("status") or {}).get("hard") or {}).keys()
            if ev.matching_resources(hard):
                self.primary.enqueue(quota)

    def enqueue_all(self) -> None:
        for quota in self.quotas.lister.list():
            self.primary.enqueue(quota)

    # -- sync ----------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        try:
            quota = self.quotas.lister.by_namespace(namespace).get(name)
        except NotFound:
            log.info("Resource quota has been deleted", extra={"key": key})
            return
        await self.sync_resource_quota(quota)

    async def sync_resource_quota(self, quota: Mapping[str, Any]) -> None:
        spec = quota.get("spec") or {}
        status = quota.get("status") or {}
        hard = from_wire(spec.get("hard"))
        old_used = from_wire(status.get("used"))
        dirty = (not equals(hard, from_wire(status.get("hard")))
                 or status.get("hard") is None or status.get("used") is None)
        await self.monitor.ensure(self.registry, hard)
        error: UsageError | None = None
        try:
            new_usage = calculate_usage(str((quota.get("metadata") or {}).get("namespace")),
                                        spec.get("scopes") or (), hard, self.registry,
                                        spec.get("scopeSelector"))
        except UsageError as exc:
            error, new_usage = exc, exc.partial
        used = mask({**old_used, **new_usage}, hard)
        dirty = dirty or not equals(used, old_used)
        if dirty:
            body = thaw(quota)
            body["status"] = {"hard": to_wire(hard), "used": to_wire(used)}
            await self.client.update_status("v1/resourcequotas", body)
        if error is not None:
            raise error.cause

    # -- running -------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Both queues' workers (``workers`` each) and the full resync, until :meth:`shutdown`."""
        n = self.default_workers if workers is None else workers
        # The monitors are resolved here, once every controller is built: an informer some
        # controller caches whole is shared rather than watched again as metadata.
        await self.start_monitors()
        self.monitor.start()
        tasks = [asyncio.create_task(self.primary.run(n), name="resourcequota-primary"),
                 asyncio.create_task(self.priority.run(n), name="resourcequota-priority")]
        resync = asyncio.create_task(self._resync_loop(), name="resourcequota-resync")
        try:
            await asyncio.gather(*tasks)
        finally:
            self.shutdown()
            resync.cancel()
            for t in tasks:
                if not t.done():
                    t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(asyncio.CancelledError):
                await resync

    async def _resync_loop(self) -> None:
        if self.resync_period <= 0:
            log.info("periodic quota controller resync disabled")
            return
        while True:
            await self._time.sleep(self.resync_period)
            self.enqueue_all()

    def health_check(self) -> str | None:
        return self.primary.health_check() or self.priority.health_check()

    def shutdown(self) -> None:
        self.primary.shutdown()
        self.priority.shutdown()
