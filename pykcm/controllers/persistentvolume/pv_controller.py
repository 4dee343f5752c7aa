"""The PersistentVolume binder (kube-controller-manager's ``persistentvolume-binder-controller``).

Upstream: ``pkg/controller/volume/persistentvolume/pv_controller.go``. Binds
PersistentVolumeClaims to PersistentVolumes and keeps both phases true:

    claims, volumes, classes (informers) ──► one queue ("claim:ns/name", "volume:name")
         ──► sync_claim / sync_volume ──► PUT volume, PUT volume/status,
                                          PUT claim, PUT claim/status, events

Claim sync (an unbound claim, without ``pv.kubernetes.io/bind-completed``):
``spec.volumeName`` empty: the best matching volume (``api.pv_helpers.find_matching_volume``)
is bound; none: a claim without a class stays Pending (FailedBinding), a class with
``volumeBindingMode: WaitForFirstConsumer`` waits for
``volume.kubernetes.io/selected-node`` (WaitForFirstConsumer), otherwise the claim is
handed to the class's external provisioner: annotations
``volume.kubernetes.io/storage-provisioner`` and its beta twin, event
ExternalProvisioning (a missing class: ProvisioningFailed). ``spec.volumeName`` set:
that volume is bound when it is free or pre-bound to the claim (else FailedBinding).
A bound claim whose volume is gone, unbound or bound elsewhere turns Lost (ClaimLost,
ClaimMisbound).

Binding, in upstream's order: the volume's claimRef (annotation
``pv.kubernetes.io/bound-by-controller`` when the controller chose it), the volume's
phase Bound, the claim's volumeName with ``pv.kubernetes.io/bind-completed`` (and
bound-by-controller when the controller set volumeName), the claim's status (Bound,
the volume's access modes and capacity).

Volume sync: no claimRef, or a claimRef without uid (pre-bound, waiting): Available;
the claim bound to it: Bound; the claim gone (or replaced: another uid): Released,
then the reclaim policy: Retain keeps it, Delete of a volume with
``pv.kubernetes.io/provisioned-by`` is left to that external provisioner (as upstream
waits for it), Delete of any other volume and Recycle fail (VolumeFailedDelete /
VolumeFailedRecycle: no in-tree volume plugins here). A volume the controller bound
to a claim that bound another volume is unbound again (Available).

Every ``sync_period`` (``--pvclaimbinder-sync-period``, 15 s) all claims and volumes
are synced again, as upstream's periodic resync.

Deviations: no in-tree provisioners or deleters, no migration annotations, no
retroactive default class for claims created before the default class existed, no
metrics. Writes go straight to the API server; the informer caches catch up on
their own (upstream also keeps its own newer copies to cut conflicts).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.pv_helpers import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    ANN_STORAGE_PROVISIONER_BETA,
    claim_class,
    find_matching_volume,
    is_volume_bound_to_claim,
)
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.frozen_object import thaw
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.client.errors import is_conflict, is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.event_recorder import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from pykcm.informers.generic import GenericInformer

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DYNAMICALLY_PROVISIONED",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "ANN_STORAGE_PROVISIONER_BETA",
    "PersistentVolumeController",
]

log = logging.getLogger("pykcm.controllers.persistentvolume")

DEFAULT_SYNC_PERIOD: Final = 15.0

_CLAIM = "claim:"
_VOLUME = "volume:"


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _ann(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _m(meta_of(obj).get("annotations"))


def _claim_key(claim: Mapping[str, Any]) -> str:
    meta = meta_of(claim)
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _set_ann(obj: dict[str, Any], key: str, value: str) -> None:
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations[key] = value
    meta["annotations"] = annotations


class PersistentVolumeController(ControllerHost):
    """Binds claims to volumes; keeps their phases (see the module docstring)."""

    default_workers = 1

    def __init__(self, *, claim_informer: GenericInformer, volume_informer: GenericInformer,
                 class_informer: GenericInformer, client: Client, recorder: EventRecorder,
                 sync_period: float = DEFAULT_SYNC_PERIOD, clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.name = "persistentvolume-binder-controller"
        self.client = client
        self.recorder = recorder
        self.sync_period = sync_period
        self.claims = claim_informer.lister
        self.volumes = volume_informer.lister
        self.classes = class_informer.lister
        self.controller = Controller(self.name, self.sync, clock=self._time)
        for inf, prefix in ((claim_informer, _CLAIM), (volume_informer, _VOLUME)):
            reg = inf.informer.add_event_handler(ResourceEventHandlerFuncs(
                add_func=functools.partial(self._enqueue, prefix),
                update_func=functools.partial(self._updated, prefix),
                delete_func=functools.partial(self._deleted, prefix)))
            self.controller.add_synced(reg.has_synced)
        self.controller.add_synced(class_informer.informer.has_synced)

    # -- queue -----------------------------------------------------------------------------

    def _enqueue(self, prefix: str, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if not isinstance(obj, Mapping):
            return
        key = _claim_key(obj) if prefix == _CLAIM else str(meta_of(obj).get("name"))
        self.controller.enqueue_key(prefix + key)

    def _updated(self, prefix: str, old: Any, new: Any) -> None:
        self._enqueue(prefix, new)

    def _deleted(self, prefix: str, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if not isinstance(obj, Mapping):
            return
        if prefix == _CLAIM:
            # its volume is released now
            name = _m(obj.get("spec")).get("volumeName")
            if name:
                self.controller.enqueue_key(_VOLUME + str(name))
        else:
            ref = _m(_m(obj.get("spec")).get("claimRef"))
            if ref.get("name"):
                self.controller.enqueue_key(f"{_CLAIM}{ref.get('namespace')}/{ref.get('name')}")

    async def run(self, workers: int | None = None) -> None:
        resync = asyncio.create_task(self._resync_loop())
        try:
            await self.controller.run(self.default_workers if workers is None else workers)
        finally:
            resync.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await resync

    async def _resync_loop(self) -> None:
        while True:
            await self._time.sleep(self.sync_period)
            for claim in self.claims.list():
                self._enqueue(_CLAIM, claim)
            for volume in self.volumes.list():
                self._enqueue(_VOLUME, volume)

    async def sync(self, key: str) -> None:
        if key.startswith(_CLAIM):
            ns, _, name = key[len(_CLAIM):].partition("/")
            claim = self.claims.indexer.get_by_key(f"{ns}/{name}")
            if claim is not None:
                await self.sync_claim(thaw(claim))
        else:
            volume = self._get_volume(key[len(_VOLUME):])
            if volume is not None:
                await self.sync_volume(thaw(volume))

    def _get_claim(self, ns: str, name: str) -> Any:
        return self.claims.indexer.get_by_key(f"{ns}/{name}")

    def _get_volume(self, name: str) -> Any:
        return self.volumes.indexer.get_by_key(name)

    def _get_class(self, name: str) -> Any:
        return self.classes.indexer.get_by_key(name)

    # -- claims ----------------------------------------------------------------------------

    async def sync_claim(self, claim: dict[str, Any]) -> None:
        if meta_of(claim).get("deletionTimestamp") and not _m(claim.get("spec")).get(
                "volumeName"):
            return
        if _ann(claim).get(ANN_BIND_COMPLETED) is None:
            await self._sync_unbound_claim(claim)
        else:
            await self._sync_bound_claim(claim)

    async def _sync_unbound_claim(self, claim: dict[str, Any]) -> None:
        spec = _m(claim.get("spec"))
        volume_name = spec.get("volumeName")
        if not volume_name:
            cls_name = claim_class(claim)
            cls = self._get_class(cls_name) if cls_name else None
            # WaitForFirstConsumer: only a volume pre-bound to the claim (by the scheduler,
            # on the node it chose) is bound here; others wait for the scheduler
            delay = cls is not None and cls.get("volumeBindingMode") == "WaitForFirstConsumer"
            volume = find_matching_volume(claim, self.volumes.list(), delay_binding=delay)
            if volume is not None:
                await self._bind(thaw(volume), claim)
                return
            if not cls_name:
                await self._claim_phase(claim, "Pending")
                self.recorder.event(claim, EVENT_TYPE_NORMAL, "FailedBinding",
                                    "no persistent volumes available for this claim and no "
                                    "storage class is set")
                return
            if delay and ANN_SELECTED_NODE not in _ann(claim):
                await self._claim_phase(claim, "Pending")
                self.recorder.event(claim, EVENT_TYPE_NORMAL, "WaitForFirstConsumer",
                                    "waiting for first consumer to be created before binding")
                return
            await self._provision(claim, cls_name, cls)
            return
        volume = self._get_volume(str(volume_name))
        if volume is None:
            await self._claim_phase(claim, "Pending")
            return
        volume = thaw(volume)
        ref = _m(_m(volume.get("spec")).get("claimRef"))
        if not ref or is_volume_bound_to_claim(volume, claim):
            await self._bind(volume, claim)
            return
        await self._claim_phase(claim, "Pending")
        self.recorder.event(claim, EVENT_TYPE_WARNING, "FailedBinding",
                            f'volume "{volume_name}" already bound to a different claim.')

    async def _provision(self, claim: dict[str, Any], cls_name: str,
                         cls: Mapping[str, Any] | None) -> None:
        await self._claim_phase(claim, "Pending")
        if cls is None:
            self.recorder.event(claim, EVENT_TYPE_WARNING, "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{cls_name}" not found')
            return
        provisioner = str(cls.get("provisioner") or "")
        if provisioner == "kubernetes.io/no-provisioner":
            self.recorder.event(claim, EVENT_TYPE_NORMAL, "FailedBinding",
                                "no persistent volumes available for this claim and no "
                                "storage class is set")
            return
        annotations = _ann(claim)
        if (annotations.get(ANN_STORAGE_PROVISIONER) != provisioner
                or annotations.get(ANN_STORAGE_PROVISIONER_BETA) != provisioner):
            _set_ann(claim, ANN_STORAGE_PROVISIONER, provisioner)
            _set_ann(claim, ANN_STORAGE_PROVISIONER_BETA, provisioner)
            meta = meta_of(claim)
            claim = await self.client.update("persistentvolumeclaims", claim,
                                             str(meta.get("namespace")))
        self.recorder.event(
            claim, EVENT_TYPE_NORMAL, "ExternalProvisioning",
            f"Waiting for a volume to be created either by the external provisioner "
            f"'{provisioner}' or manually by the system administrator. If volume creation "
            "is delayed, please verify that the provisioner is running and correctly "
            "registered.")

    async def _sync_bound_claim(self, claim: dict[str, Any]) -> None:
        volume_name = _m(claim.get("spec")).get("volumeName")
        if not volume_name:
            await self._claim_lost(claim, "ClaimLost", "Bound claim has lost reference to "
                                                       "PersistentVolume. Data on the volume "
                                                       "is lost!")
            return
        volume = self._get_volume(str(volume_name))
        if volume is None:
            await self._claim_lost(claim, "ClaimLost", "Bound claim has lost its "
                                                       "PersistentVolume. Data on the volume "
                                                       "is lost!")
            return
        volume = thaw(volume)
        ref = _m(_m(volume.get("spec")).get("claimRef"))
        if not ref or ref.get("uid") == meta_of(claim).get("uid"):
            await self._bind(volume, claim)
            return
        await self._claim_lost(claim, "ClaimMisbound",
                               "Two claims are bound to the same volume, this one is bound "
                               "incorrectly")

    async def _claim_lost(self, claim: dict[str, Any], reason: str, message: str) -> None:
        if _m(claim.get("status")).get("phase") != "Lost":
            await self._claim_phase(claim, "Lost")
            self.recorder.event(claim, EVENT_TYPE_WARNING, reason, message)

    async def _claim_phase(self, claim: dict[str, Any], phase: str,
                           volume: Mapping[str, Any] | None = None) -> dict[str, Any]:
        status = dict(_m(claim.get("status")))
        want = dict(status)
        want["phase"] = phase
        if volume is not None:
            vspec = _m(volume.get("spec"))
            want["accessModes"] = list(vspec.get("accessModes") or [])
            want["capacity"] = dict(_m(vspec.get("capacity")))
        elif phase != "Bound":
            want.pop("accessModes", None)
            want.pop("capacity", None)
        if want == status:
            return claim
        claim["status"] = want
        out: dict[str, Any] = await self.client.update_status(
            "persistentvolumeclaims", claim, str(meta_of(claim).get("namespace")))
        return out

    # -- binding ---------------------------------------------------------------------------

    async def _bind(self, volume: dict[str, Any], claim: dict[str, Any]) -> None:
        """bind(): volume claimRef, volume phase, claim volumeName, claim status."""
        cmeta = meta_of(claim)
        vspec = volume.setdefault("spec", {})
        ref = _m(vspec.get("claimRef"))
        want_ref = {"kind": "PersistentVolumeClaim", "namespace": cmeta.get("namespace"),
                    "name": cmeta.get("name"), "uid": cmeta.get("uid"), "apiVersion": "v1",
                    "resourceVersion": cmeta.get("resourceVersion")}
        if (ref.get("uid") != cmeta.get("uid") or ref.get("name") != cmeta.get("name")
                or ref.get("namespace") != cmeta.get("namespace")):
            if not ref:
                _set_ann(volume, ANN_BOUND_BY_CONTROLLER, "yes")
            vspec["claimRef"] = want_ref
            volume = await self.client.update("persistentvolumes", volume)
        if _m(volume.get("status")).get("phase") != "Bound":
            volume["status"] = {**dict(_m(volume.get("status"))), "phase": "Bound"}
            volume.get("status", {}).pop("message", None)
            volume.get("status", {}).pop("reason", None)
            volume = await self.client.update_status("persistentvolumes", volume)
        cspec = claim.setdefault("spec", {})
        vname = meta_of(volume).get("name")
        changed = False
        if cspec.get("volumeName") != vname:
            cspec["volumeName"] = vname
            _set_ann(claim, ANN_BOUND_BY_CONTROLLER, "yes")
            changed = True
        if _ann(claim).get(ANN_BIND_COMPLETED) != "yes":
            _set_ann(claim, ANN_BIND_COMPLETED, "yes")
            changed = True
        ns = str(cmeta.get("namespace"))
        if changed:
            claim = await self.client.update("persistentvolumeclaims", claim, ns)
        await self._claim_phase(claim, "Bound", volume)

    # -- volumes ---------------------------------------------------------------------------

    async def sync_volume(self, volume: dict[str, Any]) -> None:
        spec = _m(volume.get("spec"))
        ref = _m(spec.get("claimRef"))
        if not ref or not ref.get("uid"):
            await self._volume_phase(volume, "Available")
            return
        claim = self._get_claim(str(ref.get("namespace")), str(ref.get("name")))
        if claim is not None and meta_of(claim).get("uid") != ref.get("uid"):
            claim = None  # deleted and made again: not ours
        if claim is None:
            await self._released(volume)
            return
        claim = thaw(claim)
        cvol = _m(claim.get("spec")).get("volumeName")
        if not cvol:
            # being bound (the claim's write comes next): the claim's sync finishes it
            self.controller.enqueue_key(_CLAIM + _claim_key(claim))
            return
        if cvol == meta_of(volume).get("name"):
            await self._volume_phase(volume, "Bound")
            return
        # the claim bound another volume
        if _ann(volume).get(ANN_BOUND_BY_CONTROLLER):
            await self._unbind(volume)
        else:
            await self._released(volume)

    async def _released(self, volume: dict[str, Any]) -> None:
        phase = _m(volume.get("status")).get("phase")
        if phase not in ("Released", "Failed"):
            volume = await self._volume_phase(volume, "Released")
        if phase == "Failed":
            return
        policy = _m(volume.get("spec")).get("persistentVolumeReclaimPolicy") or "Retain"
        name = meta_of(volume).get("name")
        if policy == "Retain":
            return
        if policy == "Delete":
            if _ann(volume).get(ANN_DYNAMICALLY_PROVISIONED):
                return  # its external provisioner deletes it
            message = (f'error getting deleter volume plugin for volume "{name}": no deletable '
                       "volume plugin matched")
            await self._volume_phase(volume, "Failed", message)
            self.recorder.event(volume, EVENT_TYPE_WARNING, "VolumeFailedDelete", message)
            return
        message = f'No recycler plugin found for the volume "{name}"'
        await self._volume_phase(volume, "Failed", message)
        self.recorder.event(volume, EVENT_TYPE_WARNING, "VolumeFailedRecycle", message)

    async def _unbind(self, volume: dict[str, Any]) -> None:
        spec = volume.setdefault("spec", {})
        spec.pop("claimRef", None)
        annotations = dict(_ann(volume))
        annotations.pop(ANN_BOUND_BY_CONTROLLER, None)
        volume.setdefault("metadata", {})["annotations"] = annotations
        volume = await self.client.update("persistentvolumes", volume)
        await self._volume_phase(volume, "Available")

    async def _volume_phase(self, volume: dict[str, Any], phase: str,
                            message: str = "") -> dict[str, Any]:
        status = dict(_m(volume.get("status")))
        if status.get("phase") == phase and str(status.get("message") or "") == message:
            return volume
        status["phase"] = phase
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        volume["status"] = status
        try:
            out: dict[str, Any] = await self.client.update_status("persistentvolumes", volume)
        except Exception as exc:
            if is_conflict(exc) or is_not_found(exc):
                self.controller.enqueue_key(_VOLUME + str(meta_of(volume).get("name")))
                return volume
            raise
        return out

