"""core/v1 PersistentVolumes (pkg/registry/core/persistentvolume): defaults, validation,
status rules and printer.

- Defaults: Retain, Filesystem, phase Pending.
- The status is the server's on create, and a phase change is stamped
  (status.lastPhaseTransitionTime, GA in 1.31).

Deliberate deviations: of the sources only hostPath, local, nfs and csi are checked
field by field (the others only count as "a volume type"); the "spec is immutable"
message carries a short field list where upstream prints a go-cmp diff.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    GoValue,
    forbidden,
    go_string_map,
    invalid,
    not_supported,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import volume_fields as vf
from pykcm.apiserver.registry.defaulting import go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.server_clock import now_rfc3339

Obj = dict[str, Any]

# --- defaults and validation -----------------------------------------------------------

RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")


# The volume sources of a PersistentVolumeSpec in Go's field order.
PV_SOURCES: Final = (
    "gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi",
    "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte",
    "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi")


# The order validation counts them in (hostPath first, as ValidatePersistentVolumeSpec).
_PV_SOURCE_CHECK_ORDER: Final = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
    "quobyte", "cinder", "cephfs", "iscsi", "fc", "flexVolume", "azureFile", "vsphereVolume",
    "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi")


_PV_SPEC: Final = ("capacity", *PV_SOURCES, "accessModes", "claimRef",
                   "persistentVolumeReclaimPolicy", "storageClassName", "mountOptions",
                   "volumeMode", "nodeAffinity", "volumeAttributesClassName")


_PV_STATUS: Final = ("phase", "message", "reason", "lastPhaseTransitionTime")


def default_pv(obj: Obj, create: bool) -> None:
    """SetDefaults_PersistentVolume: phase Pending, Retain, Filesystem; hostPath type ""."""
    spec = vf.child_dict(obj, "spec")
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    hp = spec.get("hostPath")
    if isinstance(hp, dict) and hp.get("type") is None:
        hp["type"] = ""
    vf.go_order(spec, _PV_SPEC)
    status = vf.child_dict(obj, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
    vf.go_order(status, _PV_STATUS)


def validate_pv_create(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    spec = vf.as_map(obj.get("spec"))
    errs.extend(vf.access_mode_errors(spec.get("accessModes"), "spec.accessModes", ""))
    capacity = vf.as_map(spec.get("capacity"))
    if not capacity:
        errs.append(required("spec.capacity", ""))
    if "storage" not in capacity or len(capacity) > 1:
        shown = (GoValue("null") if spec.get("capacity") is None
                 else go_string_map({k: vf.quantity_str(v) for k, v in capacity.items()}))
        errs.append(not_supported("spec.capacity", shown, ("storage",)))
    for r, q in sorted(capacity.items()):
        errs.extend(vf.positive_quantity_errors(q, f"spec.capacity[{r}]"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    node_affinity = spec.get("nodeAffinity")
    affinity_set = bool(vf.as_map(node_affinity).get("required"))
    count = 0
    for src in _PV_SOURCE_CHECK_ORDER:
        if spec.get(src) is None:
            continue
        if count:
            errs.append(forbidden(f"spec.{src}", "may not specify more than 1 volume type"))
            continue
        count += 1
        errs.extend(_pv_source(src, vf.as_map(spec.get(src)), f"spec.{src}"))
        if src == "local" and not affinity_set:
            errs.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if count == 0:
        errs.append(required("spec", "must specify a volume type"))
    sc = spec.get("storageClassName")
    if isinstance(sc, str) and sc:
        errs.extend(vf.class_name_errors(sc, "spec.storageClassName"))
    vm = spec.get("volumeMode")
    if vm is not None and vm not in vf.VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", vm, vf.VOLUME_MODES))
    return errs


def _pv_source(src: str, s: Mapping[str, Any], path: str) -> list[Cause]:
    if src in ("hostPath", "local"):
        p = s.get("path")
        if not p:
            return [required(f"{path}.path", "")]
        if ".." in str(p).split("/"):
            return [invalid(f"{path}.path", p, "must not contain '..'")]
        if src == "hostPath":
            t = s.get("type")
            types = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                     "FileOrCreate", "Socket")
            if t is not None and t not in types:
                return [not_supported(f"{path}.type", t, types)]
        return []
    if src == "nfs":
        errs = []
        if not s.get("server"):
            errs.append(required(f"{path}.server", ""))
        if not s.get("path"):
            errs.append(required(f"{path}.path", ""))
        elif not str(s["path"]).startswith("/"):
            errs.append(invalid(f"{path}.path", s["path"], "must be an absolute path"))
        return errs
    if src == "csi":
        errs = []
        if not s.get("driver"):
            errs.append(required(f"{path}.driver", ""))
        if not s.get("volumeHandle"):
            errs.append(required(f"{path}.volumeHandle", ""))
        return errs
    return []


def validate_pv_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_pv_create(new))
    nspec, ospec = vf.as_map(new.get("spec")), vf.as_map(old.get("spec"))
    if any(nspec.get(s) != ospec.get(s) for s in PV_SOURCES):
        errs.append(forbidden("spec.persistentvolumesource",
                              "spec.persistentvolumesource is immutable after creation"))
    if nspec.get("volumeMode") != ospec.get("volumeMode"):
        errs.append(invalid("volumeMode", nspec.get("volumeMode"), FIELD_IMMUTABLE_ERROR_MSG))
    return errs


def validate_pv_status(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return []


def prepare_pv_status(new: Obj, old: Mapping[str, Any] | None, now: str) -> None:
    """PersistentVolume phase transitions are stamped (lastPhaseTransitionTime, GA in 1.31)."""
    status = vf.child_dict(new, "status")
    old_phase = vf.as_map((old or {}).get("status")).get("phase") if old is not None else None
    if old is None or status.get("phase") != old_phase:
        status["lastPhaseTransitionTime"] = now
        vf.go_order(status, _PV_STATUS)


# --- printer ---------------------------------------------------------------------------

_PERSISTENT_VOLUME_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Capacity", "string",
         "capacity is the description of the persistent volume's resources and capacity. "
         "More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#capacity"),
    pr.column("Access Modes", "string",
         "accessModes contains all ways the volume can be mounted. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
    pr.column("Reclaim Policy", "string",
         "persistentVolumeReclaimPolicy defines what happens to a persistent volume when "
         "released from its claim. Valid options are Retain (default for manually created "
         "PersistentVolumes), Delete (default for dynamically provisioned "
         "PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the "
         "volume plugin underlying this PersistentVolume. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
    pr.column("Status", "string",
         "phase indicates if a volume is available, bound to a claim, or released by a "
         "claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#phase"),
    pr.column("Claim", "string",
         "claimRef is part of a bi-directional binding between PersistentVolume and "
         "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is "
         "the authoritative bind between PV and PVC. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
    pr.column("StorageClass", "string",
         "StorageClass of the pv"),
    pr.column("VolumeAttributesClass", "string",
         "VolumeAttributesClass of the pv"),
    pr.column("Reason", "string",
         "reason is a brief CamelCase string that describes any failure and is meant for "
         "machine parsing and tidy display in the CLI."),
    pr.AGE_COLUMN,
    pr.column("VolumeMode", "string",
         "volumeMode defines if a volume is intended to be used with a formatted "
         "filesystem or to remain in raw block state. Value of Filesystem is implied when "
         "not included in spec.", priority=1),
)


def _persistent_volume_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    ref = pr.as_dict(spec.get("claimRef"))
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if spec.get("claimRef") else ""
    cls = (pr.as_dict(pr.as_dict(obj.get("metadata")).get("annotations"))
           .get("volume.beta.kubernetes.io/storage-class") or spec.get("storageClassName") or "")
    phase = "Terminating" if vf.deleting(obj) else str(status.get("phase") or "")
    return pr.Row([
        pr.object_name(obj), str(pr.as_dict(spec.get("capacity")).get("storage") or "0"),
        vf.access_modes_cell(spec.get("accessModes")),
        str(spec.get("persistentVolumeReclaimPolicy") or ""), phase, claim, str(cls),
        vf.unset_cell(spec.get("volumeAttributesClassName")), str(status.get("reason") or ""),
        pr.age(obj, now), vf.unset_cell(spec.get("volumeMode")),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class PersistentVolumeStrategy(Strategy):
    kind = "PersistentVolume"
    printer = pr.Printer(_PERSISTENT_VOLUME_COLUMNS, _persistent_volume_row)
    create_keeps_status = True  # replaced below

    def default(self, obj: Obj, *, create: bool) -> None:
        default_pv(obj, create)
        go_order_object(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # PrepareForCreate: the status is the server's (phase Pending by defaulting),
        # its first phase stamped
        obj["status"] = {}
        prepare_pv_status(obj, None, now_rfc3339())

    def prepare_for_status_update(self, new: Obj, old: Obj) -> Obj:
        result = super().prepare_for_status_update(new, old)
        prepare_pv_status(result, old, now_rfc3339())
        return result

    def validate_create(self, obj: Obj) -> list[Cause]:
        return validate_pv_create(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_pv_update(new, old)
