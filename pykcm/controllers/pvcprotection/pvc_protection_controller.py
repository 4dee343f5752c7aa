"""The PersistentVolumeClaim protection controller (``persistentvolumeclaim-protection-controller``).

Upstream: ``pkg/controller/volume/pvcprotection/pvc_protection_controller.go``. The
finalizer ``kubernetes.io/pvc-protection`` (put on every new claim by the API
server's StorageObjectInUseProtection admission) keeps a claim a pod still uses:

    claims ──► queue "ns/name" ◄── pods (added, updated, deleted: the claims they use)
       └─► claim being deleted, finalizer present, no scheduled pod that is not shut
           down uses it (spec.volumes[].persistentVolumeClaim, or the generic
           ephemeral volume "<pod>-<volume>"): remove the finalizer (PUT)
           claim alive without the finalizer: add it (PUT)

Deviation: the pod check reads the informer cache only (upstream asks the API
server with a live LIST before it removes the finalizer, in case the cache lags
behind a pod just created); pykcm's caches are fed by the same server's watch
and a pod cannot start with a terminating claim (the simulated kubelet checks).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.pod_util import pod_claim_names
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.frozen_object import thaw
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.client.errors import is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.informers.generic import GenericInformer

__all__ = ["PVC_PROTECTION_FINALIZER", "PVCProtectionController", "pod_claim_names"]

log = logging.getLogger("pykcm.controllers.pvcprotection")

PVC_PROTECTION_FINALIZER: Final = "kubernetes.io/pvc-protection"


def _pod_is_shut_down(pod: Mapping[str, Any]) -> bool:
    """podIsShutDown: finished, or deleted and no longer running anything."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return not any((c.get("state") or {}).get("running") is not None
                       for c in status.get("containerStatuses") or []
                       if isinstance(c, Mapping))
    return False


class PVCProtectionController(ControllerHost):
    """Removes ``kubernetes.io/pvc-protection`` from deleted claims no pod uses."""

    default_workers = 1

    def __init__(self, *, claim_informer: GenericInformer, pod_informer: GenericInformer,
                 client: Client, clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.name = "persistentvolumeclaim-protection-controller"
        self.client = client
        self.claims = claim_informer.lister
        self.pods = pod_informer.lister
        self.controller = Controller("pvcprotection", self.sync, clock=self._time)
        self.controller.watch(claim_informer)
        self.controller.watch(pod_informer, ResourceEventHandlerFuncs(
            add_func=self._pod_changed, update_func=self._pod_updated,
            delete_func=self._pod_changed))

    def _pod_updated(self, old: Any, new: Any) -> None:
        self._pod_changed(new)

    def _pod_changed(self, pod: Any) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        if not isinstance(pod, Mapping):
            return
        ns = (pod.get("metadata") or {}).get("namespace")
        for claim in pod_claim_names(pod):
            self.controller.enqueue_key(f"{ns}/{claim}")

    def _in_use(self, ns: str, name: str) -> bool:
        for pod in self.pods.by_namespace(ns).list():
            if not (pod.get("spec") or {}).get("nodeName"):
                continue  # the kubelet only sees scheduled pods
            if name in pod_claim_names(pod) and not _pod_is_shut_down(pod):
                return True
        return False

    async def sync(self, key: str) -> None:
        claim = self.claims.indexer.get_by_key(key)
        if claim is None:
            return
        meta: Mapping[str, Any] = claim.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        has = PVC_PROTECTION_FINALIZER in finalizers
        deleting = bool(meta.get("deletionTimestamp"))
        ns, _, name = key.partition("/")
        if deleting and has:
            if self._in_use(ns, name):
                log.debug("PVC %s is in use by a pod: keeping its finalizer", key)
                return
            finalizers.remove(PVC_PROTECTION_FINALIZER)
        elif not deleting and not has:
            finalizers.append(PVC_PROTECTION_FINALIZER)
        else:
            return
        obj = thaw(claim)
        obj["metadata"]["finalizers"] = finalizers
        try:
            await self.client.update("persistentvolumeclaims", obj, ns)
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
