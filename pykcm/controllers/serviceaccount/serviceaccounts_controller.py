"""ServiceAccountsController: the ``default`` ServiceAccount in every active namespace.

kube-controller-manager v1.36 ``pkg/controller/serviceaccount/serviceaccounts_controller.go``
(manager name ``serviceaccount-controller``, client ``service-account-controller``).

Data flow::

    namespace informer ── add / update ──► enqueue the namespace's name
    serviceaccount informer ── delete ───► enqueue the account's namespace
                                  │
        Controller "serviceaccount" (client-go's default rate limiter, 1 worker)
                                  ▼
    sync_namespace(name)
        namespace gone, or not Active (Terminating) ─► nothing
        for each account to ensure (``default``): in the cache? nothing;
        else POST it (AlreadyExists and a refusal because the namespace is
        terminating are not errors; other failures retry the namespace)

Pods need their namespace's ``default`` account on a real kube-apiserver (its
ServiceAccount admission refuses them until it exists), so this is what makes
a new namespace usable.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.client.errors import (
    ApiError,
    has_status_cause,
    is_already_exists,
    is_not_found,
)
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.informers.generic import GenericInformer

__all__ = ["DEFAULT_SERVICE_ACCOUNTS", "ServiceAccountsController"]

log = logging.getLogger("pykcm.controllers.serviceaccount")

DEFAULT_SERVICE_ACCOUNTS: Final = ("default",)
"""The accounts ensured in every namespace (upstream DefaultServiceAccountsControllerOptions)."""

NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"


class ServiceAccountsController(ControllerHost):
    """Creates ``service_accounts`` (default: ``default``) in every active namespace."""

    name = "serviceaccount"

    def __init__(self, *, client: Client, sa_informer: GenericInformer,
                 ns_informer: GenericInformer,
                 service_accounts: Sequence[str] = DEFAULT_SERVICE_ACCOUNTS,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.client = client
        self.service_accounts = tuple(service_accounts)
        self.sa_lister = sa_informer.lister
        self.ns_lister = ns_informer.lister
        self.controller = Controller("serviceaccount", self.sync_namespace, clock=self._time)
        queue = self.controller.queue

        def sa_deleted(obj: Any) -> None:
            o = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            ns = (o.get("metadata") or {}).get("namespace")
            if ns:
                queue.add(ns)

        def ns_changed(obj: Any) -> None:
            queue.add(str(obj["metadata"]["name"]))

        self.controller.watch(sa_informer, ResourceEventHandlerFuncs(delete_func=sa_deleted))
        self.controller.watch(ns_informer, ResourceEventHandlerFuncs(
            add_func=ns_changed, update_func=lambda old, new: ns_changed(new)))

    async def sync_namespace(self, key: str) -> None:
        """Create the missing accounts of namespace ``key`` if it is active."""
        try:
            ns: Mapping[str, Any] = self.ns_lister.get(key)
        except ApiError as exc:
            if is_not_found(exc):
                return
            raise
        if (ns.get("status") or {}).get("phase") != "Active":
            return
        failures: list[str] = []
        for name in self.service_accounts:
            try:
                self.sa_lister.by_namespace(key).get(name)
                continue
            except ApiError as exc:
                if not is_not_found(exc):
                    raise
            try:
                await self.client.create("serviceaccounts", {
                    "apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": name, "namespace": key}}, key)
            except ApiError as exc:
                if is_already_exists(exc) or has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                    continue
                failures.append(str(exc))
        if failures:
            raise RuntimeError(failures[0] if len(failures) == 1
                               else "[" + ", ".join(failures) + "]")
