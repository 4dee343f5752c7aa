"""Publisher: the ``kube-root-ca.crt`` ConfigMap in every namespace.

kube-controller-manager v1.36 ``pkg/controller/certificates/rootcacertpublisher``
(manager name ``root-ca-certificate-publisher-controller``, client
``root-ca-cert-publisher``).

Data flow::

    namespace informer ── add, update while Active ──► enqueue the namespace
    configmap informer ── update / delete of a kube-root-ca.crt ──► enqueue its namespace
                                  │
        Controller "root_ca_cert_publisher" (default rate limiter, 1 worker)
                                  ▼
    sync_namespace(ns)
        not in the cache ─► POST {data: {ca.crt: <root CA>}, annotations:
                            {kubernetes.io/description: ...}}  (namespace gone or
                            terminating: not an error)
        data differs, or the description annotation is empty ─► PUT with the data
                            replaced and the annotation restored (other keys kept)

The root CA is ``--root-ca-file``'s content, or the CA of the manager's own
kubeconfig (upstream's fallback). The ``root_ca_cert_publisher_sync_total``
counter and ``..._sync_duration_seconds`` histogram (by status code) are
upstream's.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Mapping
from typing import Any, Final

from prometheus_client import Counter, Histogram

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.client.errors import ApiError, has_status_cause, is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.informers.generic import GenericInformer

__all__ = ["DESCRIPTION", "DESCRIPTION_ANNOTATION", "ROOT_CA_CONFIGMAP", "Publisher"]

log = logging.getLogger("pykcm.controllers.rootcacertpublisher")

ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION: Final = "kubernetes.io/description"
DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.")
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"

SYNC_TOTAL = Counter("root_ca_cert_publisher_sync_total",
                     "Number of namespace syncs happened in root ca cert publisher.", ["code"])
SYNC_DURATION = Histogram(
    "root_ca_cert_publisher_sync_duration_seconds",
    "Number of namespace syncs happened in root ca cert publisher.", ["code"],
    buckets=[0.001 * 2 ** i for i in range(15)])


def _code(exc: BaseException | None) -> str:
    if exc is None:
        return "200"
    if isinstance(exc, ApiError) and exc.code:
        return str(exc.code)
    return "500"


class Publisher(ControllerHost):
    """Keeps ``kube-root-ca.crt`` (key ``ca.crt`` = ``root_ca``) in every namespace.

    ``configmap_name`` is upstream's constant; tests beside a cluster's own publisher
    use another."""

    name = "root_ca_cert_publisher"

    def __init__(self, *, client: Client, cm_informer: GenericInformer,
                 ns_informer: GenericInformer, root_ca: bytes,
                 configmap_name: str = ROOT_CA_CONFIGMAP, clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.client = client
        self.root_ca = root_ca.decode()
        self.configmap_name = configmap_name
        self.cm_lister = cm_informer.lister
        self.controller = Controller("root_ca_cert_publisher", self.sync_namespace,
                                     clock=self._time)
        queue = self.controller.queue

        def cm_changed(obj: Any) -> None:
            o = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            meta = o.get("metadata") or {}
            if meta.get("name") == configmap_name and meta.get("namespace"):
                queue.add(str(meta["namespace"]))

        def ns_updated(old: Any, new: Any) -> None:
            if (new.get("status") or {}).get("phase") == "Active":
                queue.add(str(new["metadata"]["name"]))

        self.controller.watch(cm_informer, ResourceEventHandlerFuncs(
            update_func=lambda old, new: cm_changed(new), delete_func=cm_changed))
        # upstream waits only for the ConfigMap cache; the namespaces fill the queue
        ns_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda obj: queue.add(str(obj["metadata"]["name"])),
            update_func=ns_updated))

    async def sync_namespace(self, ns: str) -> None:
        start = time.perf_counter()  # a metric of real work, not control-loop time
        err: BaseException | None = None
        try:
            await self._sync(ns)
        except BaseException as exc:
            err = exc
            raise
        finally:
            code = _code(err)
            SYNC_DURATION.labels(code).observe(time.perf_counter() - start)
            SYNC_TOTAL.labels(code).inc()

    async def _sync(self, ns: str) -> None:
        data = {"ca.crt": self.root_ca}
        try:
            cm: Mapping[str, Any] = self.cm_lister.by_namespace(ns).get(self.configmap_name)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            try:
                await self.client.create("configmaps", {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": self.configmap_name,
                                 "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": data}, ns)
            except ApiError as create_exc:
                # the namespace is gone or terminating: do not retry
                if is_not_found(create_exc) or has_status_cause(create_exc,
                                                                NAMESPACE_TERMINATING_CAUSE):
                    return
                raise
            return
        annotations = (cm.get("metadata") or {}).get("annotations") or {}
        if (cm.get("data") or {}) == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        fresh = copy.deepcopy(dict(cm))
        fresh["data"] = data
        fresh.setdefault("metadata", {}).setdefault("annotations", {})[
            DESCRIPTION_ANNOTATION] = DESCRIPTION
        await self.client.update("configmaps", fresh, ns)
