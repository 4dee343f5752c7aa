"""The PersistentVolume protection controller (``persistentvolume-protection-controller``).

Upstream: ``pkg/controller/volume/pvprotection/pv_protection_controller.go``. The
finalizer ``kubernetes.io/pv-protection`` (which the API server's
StorageObjectInUseProtection admission puts on every new volume) keeps a volume
that is still Bound from disappearing under its claim:

    volume informer ──► queue of names ──► volume being deleted and not Bound:
                                            remove the finalizer (PUT)
                                           volume alive without it: add it (PUT)

Deviation: none in behaviour; upstream's metrics are left out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.cache.frozen_object import thaw
from pykcm.client import Client
from pykcm.client.errors import is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.informers.generic import GenericInformer

__all__ = ["PV_PROTECTION_FINALIZER", "PVProtectionController"]

log = logging.getLogger("pykcm.controllers.pvprotection")

PV_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-protection"


class PVProtectionController(ControllerHost):
    """Removes ``kubernetes.io/pv-protection`` from deleted volumes no claim holds."""

    default_workers = 1

    def __init__(self, *, volume_informer: GenericInformer, client: Client,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.name = "persistentvolume-protection-controller"
        self.client = client
        self.volumes = volume_informer.lister
        self.controller = Controller("pvprotection", self.sync, clock=self._time)
        self.controller.watch(volume_informer)

    async def sync(self, key: str) -> None:
        volume = self.volumes.indexer.get_by_key(key)
        if volume is None:
            return
        meta: Mapping[str, Any] = volume.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        has = PV_PROTECTION_FINALIZER in finalizers
        deleting = bool(meta.get("deletionTimestamp"))
        if deleting and has:
            if ((volume.get("status") or {}).get("phase")) == "Bound":
                return  # still used; the phase change brings it back here
            finalizers.remove(PV_PROTECTION_FINALIZER)
        elif not deleting and not has:
            finalizers.append(PV_PROTECTION_FINALIZER)
        else:
            return
        obj = thaw(volume)
        obj["metadata"]["finalizers"] = finalizers
        try:
            await self.client.update("persistentvolumes", obj)
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        log.debug("%s finalizer on PV %s", "Added" if not deleting else "Removed", key)
