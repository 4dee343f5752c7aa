"""Simulated storage: the default StorageClass, its provisioner, and the kubelet's volume wait.

Role: what kind's ``local-path-provisioner`` and the kubelet's volume manager do
for pods with PersistentVolumeClaims, with no disk behind them.

The provisioner (one per simulator, :class:`Provisioner`)::

    start: StorageClass "standard" created when missing (annotated
           storageclass.kubernetes.io/is-default-class: "true", provisioner
           pykcm.io/sim-provisioner, reclaimPolicy Delete, volumeBindingMode Immediate)
    claims informer ── a claim annotated volume.kubernetes.io/storage-provisioner
                       = pykcm.io/sim-provisioner, no volumeName yet, not deleted
        └─► PersistentVolume "pvc-<claim uid>": the requested size, the claim's access
            modes and volume mode, hostPath /var/local-path-provisioner/<name>,
            claimRef to the claim (uid), annotation pv.kubernetes.io/provisioned-by,
            the class's reclaim policy (the binder then binds the two)
    volumes informer ── a volume provisioned by us, Released, reclaimPolicy Delete
        └─► DELETE it (its pv-protection finalizer is gone once it is not Bound)

Binding mode: pykcm's ``standard`` class is Immediate (kind's waits for the
first consumer: the one deliberate difference, documented in the README, so
that a claim alone is Bound). A class of this provisioner with
``volumeBindingMode: WaitForFirstConsumer`` works as on kind: the simulated
scheduler (:mod:`pykcm.sim.volume_binding`) annotates the claim with
``volume.kubernetes.io/selected-node`` and the volume made for it is tied to
that node (``spec.nodeAffinity`` on ``kubernetes.io/hostname``, as
local-path-provisioner's), so later pods of the claim go there too.

The kubelet's wait (:func:`volumes_ready`, used by :mod:`pykcm.sim.kubelet`): a pod
whose claims are not all Bound stays Pending with its containers waiting
(ContainerCreating, :func:`waiting_status`); a missing claim also gets a FailedMount
event, as the kubelet's volume manager reports it (and, as the kubelet, keeps
trying).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.pod_util import new_pod_condition, pod_claim_names
from pykcm.api.pv_helpers import (
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
)
from pykcm.api.timestamps import format_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client
from pykcm.client.errors import is_already_exists, is_forbidden, is_not_found
from pykcm.controller.controller import Controller
from pykcm.informers.generic import GenericInformer

__all__ = ["DEFAULT_STORAGE_CLASS", "PROVISIONER_NAME", "Provisioner", "default_storage_class",
           "volumes_ready", "waiting_status"]

log = logging.getLogger("pykcm.sim.volumes")

PROVISIONER_NAME: Final = "pykcm.io/sim-provisioner"
DEFAULT_STORAGE_CLASS: Final = "standard"
DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
BASE_PATH: Final = "/var/local-path-provisioner"


def default_storage_class(name: str = DEFAULT_STORAGE_CLASS) -> dict[str, Any]:
    """The StorageClass ``pykcm up`` has, as kind's ``standard`` one (but Immediate)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name,
                         "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": PROVISIONER_NAME, "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate"}


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


class Provisioner:
    """The external provisioner of the ``standard`` class (see the module docstring)."""

    def __init__(self, client: Client, claims: GenericInformer, volumes: GenericInformer,
                 classes: GenericInformer, *, name: str = PROVISIONER_NAME,
                 storage_class: str | None = DEFAULT_STORAGE_CLASS,
                 clock: Clock = REAL_CLOCK) -> None:
        self._client = client
        self.name = name
        self.storage_class = storage_class
        self._claims = claims.informer.get_indexer()
        self._volumes = volumes.informer.get_indexer()
        self._classes = classes.informer.get_indexer()
        self.provisioned = 0
        self.deleted = 0
        # its queue's retries are on the simulator's clock
        self.controller = Controller("sim-provisioner", self._sync, clock=clock)
        self.controller.watch(claims, ResourceEventHandlerFuncs(
            add_func=self._claim, update_func=self._claim_updated))
        self.controller.watch(volumes, ResourceEventHandlerFuncs(
            add_func=self._volume, update_func=self._volume_updated))
        self.controller.watch(classes)

    def _claim_updated(self, old: Any, new: Any) -> None:
        self._claim(new)

    def _claim(self, claim: Any) -> None:
        if _m(_m(_m(claim).get("metadata")).get("annotations")).get(
                ANN_STORAGE_PROVISIONER) == self.name:
            meta = claim["metadata"]
            self.controller.enqueue_key(f"claim:{meta.get('namespace')}/{meta.get('name')}")

    def _volume_updated(self, old: Any, new: Any) -> None:
        self._volume(new)

    def _volume(self, volume: Any) -> None:
        meta = _m(_m(volume).get("metadata"))
        if _m(meta.get("annotations")).get(ANN_DYNAMICALLY_PROVISIONED) == self.name:
            self.controller.enqueue_key(f"volume:{meta.get('name')}")

    async def ensure_storage_class(self) -> None:
        """Create the default class when it is missing (a restart finds it in place)."""
        if self.storage_class is None:
            return
        try:
            await self._client.create("storageclasses",
                                      default_storage_class(self.storage_class))
            log.info("created the default StorageClass %s", self.storage_class)
        except Exception as exc:
            if is_forbidden(exc):
                # an identity that may not create classes (pykcm up's simulator: the
                # cluster's installer, pykcm up as the admin, made it)
                log.info("may not create the default StorageClass %s: %s",
                         self.storage_class, exc)
            elif not is_already_exists(exc):
                raise

    async def run(self, workers: int = 2) -> None:
        await self.controller.run(workers)

    def shutdown(self) -> None:
        self.controller.shutdown()

    async def _sync(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "claim":
            claim = self._claims.get_by_key(rest)
            if claim is not None:
                await self._provision(claim)
        elif kind == "volume":
            volume = self._volumes.get_by_key(rest)
            if volume is not None:
                await self._delete_if_released(volume)

    async def _provision(self, claim: Mapping[str, Any]) -> None:
        meta = _m(claim.get("metadata"))
        spec = _m(claim.get("spec"))
        if meta.get("deletionTimestamp") or spec.get("volumeName"):
            return
        if _m(meta.get("annotations")).get(ANN_STORAGE_PROVISIONER) != self.name:
            return
        uid = str(meta.get("uid") or "")
        pv_name = f"pvc-{uid}"
        if self._volumes.get_by_key(pv_name) is not None:
            return  # made already; the binder binds it
        cls_name = str(spec.get("storageClassName") or "")
        cls = self._classes.get_by_key(cls_name) if cls_name else None
        if cls is None or cls.get("provisioner") != self.name:
            return
        requests = _m(_m(spec.get("resources")).get("requests"))
        pv: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolume",
                              "metadata": {"name": pv_name,
                                           "annotations": {ANN_DYNAMICALLY_PROVISIONED: self.name}}}
        pv["spec"] = {"capacity": {"storage": requests.get("storage", "0")},
                       "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                       "hostPath": {"path": f"{BASE_PATH}/{pv_name}_{meta.get('namespace')}_"
                                            f"{meta.get('name')}",
                                    "type": "DirectoryOrCreate"},
                       "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                    "namespace": meta.get("namespace"),
                                    "name": meta.get("name"), "uid": uid,
                                    "resourceVersion": meta.get("resourceVersion")},
                       "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
                       "storageClassName": cls_name,
                       "volumeMode": spec.get("volumeMode") or "Filesystem"}
        if cls.get("mountOptions"):
            pv["spec"]["mountOptions"] = list(cls["mountOptions"])
        node = _m(meta.get("annotations")).get(ANN_SELECTED_NODE)
        if node:  # provisioned for the node its first consumer was scheduled to
            pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                      "values": [node]}]}]}}
        try:
            await self._client.create("persistentvolumes", pv)
            self.provisioned += 1
        except Exception as exc:
            if not is_already_exists(exc):
                raise

    async def _delete_if_released(self, volume: Mapping[str, Any]) -> None:
        meta = _m(volume.get("metadata"))
        if meta.get("deletionTimestamp"):
            return
        if _m(volume.get("status")).get("phase") != "Released":
            return
        if _m(volume.get("spec")).get("persistentVolumeReclaimPolicy") != "Delete":
            return
        try:
            await self._client.delete("persistentvolumes", str(meta.get("name")),
                                      preconditions={"uid": meta.get("uid")})
            self.deleted += 1
        except Exception as exc:
            if not is_not_found(exc):
                raise


def volumes_ready(pod: Mapping[str, Any], claims: Any) -> tuple[bool, list[str]]:
    """(every claim of the pod is Bound, the claims that do not exist).

    ``claims`` is the claims informer's indexer (``get_by_key("ns/name")``).
    """
    ns = _m(pod.get("metadata")).get("namespace")
    ready = True
    missing: list[str] = []
    for name in pod_claim_names(pod):
        claim = claims.get_by_key(f"{ns}/{name}")
        if claim is None:
            missing.append(name)
            ready = False
        elif _m(claim.get("status")).get("phase") != "Bound" or _m(
                claim.get("metadata")).get("deletionTimestamp"):
            ready = False
    return ready, missing


def waiting_status(pod: Mapping[str, Any], host_ip: str, now: float,
                   start_time: float) -> dict[str, Any]:
    """The status the kubelet reports while a pod's volumes are not ready: Pending,
    every container waiting (ContainerCreating), not ready, no pod IP yet."""
    spec = _m(pod.get("spec"))
    old = {c.get("type"): c for c in _m(pod.get("status")).get("conditions") or ()
           if isinstance(c, Mapping)}
    names = [str(c.get("name", "")) for c in spec.get("containers") or ()]

    def cond(ctype: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
        return new_pod_condition(ctype, status, now, old.get(ctype), reason, message)

    unready = f"containers with unready status: [{' '.join(names)}]"
    conditions = [
        cond("PodReadyToStartContainers", "False"),
        cond("Initialized", "True"),
        cond("Ready", "False", "ContainersNotReady", unready),
        cond("ContainersReady", "False", "ContainersNotReady", unready),
        dict(old["PodScheduled"]) if "PodScheduled" in old else cond("PodScheduled", "True"),
    ]
    conditions += [dict(c) for t, c in old.items()
                   if t not in ("PodReadyToStartContainers", "Initialized", "Ready",
                                "ContainersReady", "PodScheduled")]
    statuses = [{"name": str(c.get("name", "")), "image": str(c.get("image", "")),
                 "imageID": "", "ready": False, "started": False, "restartCount": 0,
                 "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}
                for c in spec.get("containers") or ()]
    return {"phase": "Pending", "conditions": conditions, "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}], "startTime": format_time(start_time),
            "containerStatuses": statuses}

