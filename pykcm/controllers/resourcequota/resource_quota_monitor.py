"""QuotaMonitor: the informers whose changes give quota back (``resource_quota_monitor.go``).

Role: usage only grows through quota admission (the API server adds a
create's usage to status.used before it stores the object); what gives usage
back is a delete, a pod turning terminal, a Service leaving the NodePort /
LoadBalancer types, a claim's allocated size changing. The monitor watches
each quota-tracked resource and hands such events to the controller's
``replenish(group, resource, namespace)``.

Data flow::

    informer (pods, services, claims, configmaps, secrets, RCs, quotas, count/ kinds)
        update passing update_filter, delete ──► replenish(gr, namespace)
        lister ──► the evaluators' list_by_namespace (usage sums)

Where each informer comes from: pods, services and claims (their evaluators read
spec and status) from the full-object factory; every other resource, counted
only, from ``metadata_informers`` when given (an ObjectOrMetadataInformerFactory,
as upstream's monitors: a full informer some controller already has, else a
PartialObjectMetadata one), else from the full-object factory.

Deliberate deviation: upstream discovers every resource that supports
create/list/watch/delete and starts an informer for each (and re-discovers
every 30 s). pykcm monitors the built-in evaluators' resources from the start
and any other ``count/<resource>.<group>`` when a quota first names it
(``ensure``), resolving it through discovery then: the same usage, without an
informer per resource type of the cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.quota import Evaluator, ObjectCountEvaluator, Registry
from pykcm.api.quota.persistent_volume_claims import requires_quota_replenish
from pykcm.api.quota.pods import is_terminating, quota_v1_pod
from pykcm.api.quota.services import quota_service_type
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client, NoResourceMatchError
from pykcm.informers.factory import SharedInformerFactory
from pykcm.informers.generic import GenericInformer
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory

__all__ = ["QuotaMonitor", "parse_count_name", "update_filter"]

log = logging.getLogger("pykcm.controllers.resourcequota")

Replenish = Callable[[str, str, str], None]

RETRY_UNRESOLVED: Final = 30.0
"""Seconds before a resource discovery did not know is looked up again (upstream
re-discovers every 30 s): a quota may name ``count/`` of a CRD created after it."""


FULL_OBJECT_RESOURCES: Final = frozenset({("", "pods"), ("", "services"),
                                          ("", "persistentvolumeclaims")})
"""The resources whose evaluators and update filter read more than metadata."""


class NotSyncedError(Exception):
    """A lister was asked before its informer synced (upstream: "<gvr> not yet synced")."""


def update_filter(group: str, resource: str, old: Mapping[str, Any],
                  new: Mapping[str, Any]) -> bool:
    """Whether an update may give quota back (install.DefaultUpdateFilter)."""
    if (group, resource) == ("", "pods"):
        if is_terminating(old) != is_terminating(new):
            return True
        return quota_v1_pod(old) and not quota_v1_pod(new)
    if (group, resource) == ("", "services"):
        return quota_service_type(old) != quota_service_type(new)
    if (group, resource) == ("", "persistentvolumeclaims"):
        return requires_quota_replenish(new, old)
    return False


def parse_count_name(name: str) -> tuple[str, str] | None:
    """(group, resource) of ``count/<resource>[.<group>]``; None for other names."""
    if not name.startswith("count/"):
        return None
    resource, _, group = name[len("count/"):].partition(".")
    return (group, resource) if resource else None


class QuotaMonitor:
    """One informer per quota-tracked resource, feeding usage lists and replenishment."""

    def __init__(self, client: Client, factory: SharedInformerFactory, replenish: Replenish,
                 metadata_informers: ObjectOrMetadataInformerFactory | None = None,
                 clock: Clock | None = None) -> None:
        self.client = client
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.factory = factory
        self.metadata_informers = metadata_informers
        self.replenish = replenish
        self.informers: dict[tuple[str, str], GenericInformer] = {}
        # (group, resource) -> when discovery last did not serve it (or not namespaced)
        self._unresolvable: dict[tuple[str, str], float] = {}
        self.retry_unresolved = RETRY_UNRESOLVED

    def list_for(self, group: str, resource: str) -> Callable[[str], Iterable[Mapping[str, Any]]]:
        """The evaluators' lister: the namespace's objects once the informer has synced."""
        def list_by_namespace(namespace: str) -> Iterable[Mapping[str, Any]]:
            gi = self.informers.get((group, resource))
            if gi is None and (group, resource) in self._unresolvable:
                return ()  # not served: there are none
            if gi is None or not gi.informer.has_synced():
                raise NotSyncedError(f"{resource}.{group or 'core'} not yet synced")
            return list(gi.lister.by_namespace(namespace).list())
        return list_by_namespace

    async def monitor(self, group: str, resource: str) -> bool:
        """Start watching a resource (idempotent); False where it is not served or not namespaced."""
        key = (group, resource)
        if key in self.informers:
            return True
        missed = self._unresolvable.get(key)
        if missed is not None and self._time.monotonic() - missed < self.retry_unresolved:
            return False
        ref = f"v1/{resource}" if not group else f"{resource}.{group}"
        try:
            info = await self.client.resolve(ref)
        except (NoResourceMatchError, ValueError):
            self._unresolvable[key] = self._time.monotonic()
            return False
        if not info.namespaced or not {"list", "watch"} <= set(info.verbs):
            self._unresolvable[key] = self._time.monotonic()
            return False
        self._unresolvable.pop(key, None)
        if self.metadata_informers is None or key in FULL_OBJECT_RESOURCES:
            gi = self.factory.informer_for(info)
        else:
            gi = self.metadata_informers.informer_for(info)
        gi.informer.add_event_handler(ResourceEventHandlerFuncs(
            update_func=lambda old, new: self._on_update(group, resource, old, new),
            delete_func=lambda obj: self._on_delete(group, resource, obj)))
        self.informers[key] = gi
        return True

    async def monitor_registry(self, registry: Registry) -> None:
        for ev in registry.list():
            await self.monitor(*ev.group_resource())

    async def ensure(self, registry: Registry, names: Iterable[str]) -> list[Evaluator]:
        """Object-count evaluators (and monitors) for the ``count/`` names no evaluator has."""
        added: list[Evaluator] = []
        for name in names:
            gr = parse_count_name(name)
            if gr is None or registry.get(*gr) is not None:
                continue
            if await self.monitor(*gr):
                ev = ObjectCountEvaluator(gr[0], gr[1], self.list_for(*gr))
                registry.add(ev)
                added.append(ev)
                self.start()  # only the new informer starts
        return added

    def start(self) -> None:
        """Start the informers not started yet (of either factory)."""
        if self.metadata_informers is not None:
            self.metadata_informers.start()
        else:
            self.factory.start()

    def has_synced(self) -> bool:
        return all(gi.informer.has_synced() for gi in self.informers.values())

    def _on_update(self, group: str, resource: str, old: Any, new: Any) -> None:
        if update_filter(group, resource, old, new):
            self.replenish(group, resource, _namespace_of(new))

    def _on_delete(self, group: str, resource: str, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if isinstance(obj, Mapping):
            self.replenish(group, resource, _namespace_of(obj))


def _namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")
