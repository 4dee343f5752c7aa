"""core/v1 PersistentVolumeClaims (pkg/registry/core/persistentvolumeclaim): defaults,
validation, status rules and printer.

- Defaults: Filesystem, phase Pending; the status is the server's on create.
- Validation: access modes, a positive storage request, class names; a bound
  claim's spec is immutable but for a larger request (resize) and the
  volume attributes class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import volume_fields as vf
from pykcm.apiserver.registry.defaulting import go_order_object
from pykcm.apiserver.registry.defaults import parse_quantity
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]

# --- defaults and validation -----------------------------------------------------------

_PVC_SPEC: Final = ("accessModes", "selector", "resources", "volumeName", "storageClassName",
                    "volumeMode", "dataSource", "dataSourceRef", "volumeAttributesClassName")


_PVC_STATUS: Final = ("phase", "accessModes", "capacity", "conditions", "allocatedResources",
                      "allocatedResourceStatuses", "currentVolumeAttributesClassName",
                      "modifyVolumeStatus")


def default_pvc(obj: Obj, create: bool) -> None:
    """SetDefaults_PersistentVolumeClaim(Spec): Filesystem mode, phase Pending."""
    spec = vf.child_dict(obj, "spec")
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    if isinstance(spec.get("resources"), dict):
        vf.go_order(spec["resources"], vf.RESOURCES_ORDER)
    else:
        spec["resources"] = {}
    vf.go_order(spec, _PVC_SPEC)
    status = vf.child_dict(obj, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
    vf.go_order(status, _PVC_STATUS)


def _pvc_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    errs = vf.access_mode_errors(spec.get("accessModes"), f"{path}.accessModes",
                         "at least 1 access mode is required")
    sel = spec.get("selector")
    if sel is not None:
        errs.extend(validate_label_selector(vf.as_map(sel), f"{path}.selector"))
    requests = vf.as_map(vf.as_map(spec.get("resources")).get("requests"))
    storage_path = f"{path}.resources[storage]"
    if "storage" not in requests:
        errs.append(required(storage_path, ""))
    else:
        errs.extend(vf.positive_quantity_errors(requests["storage"], storage_path))
    sc = spec.get("storageClassName")
    if isinstance(sc, str) and sc:
        errs.extend(vf.class_name_errors(sc, f"{path}.storageClassName"))
    vm = spec.get("volumeMode")
    if vm is not None and vm not in vf.VOLUME_MODES:
        errs.append(not_supported(f"{path}.volumeMode", vm, vf.VOLUME_MODES))
    vac = spec.get("volumeAttributesClassName")
    if isinstance(vac, str) and vac:
        errs.extend(vf.class_name_errors(vac, f"{path}.volumeAttributesClassName"))
    return errs


def validate_pvc_create(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=True)
    errs.extend(_pvc_spec(vf.as_map(obj.get("spec")), "spec"))
    return errs


def _without(d: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys and v not in (None, "", [], {})}


def validate_pvc_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_pvc_create(new))
    nspec, ospec = dict(vf.as_map(new.get("spec"))), dict(vf.as_map(old.get("spec")))
    if not ospec.get("volumeName"):
        # the binder sets volumeName once
        ospec["volumeName"] = nspec.get("volumeName")
    bound = vf.as_map(new.get("status")).get("phase") == "Bound"
    # resources.requests.storage may change (expansion), and volumeAttributesClassName once bound
    nres = dict(vf.as_map(nspec.get("resources")))
    nreq = dict(vf.as_map(nres.get("requests")))
    if bound and nreq:
        nreq["storage"] = vf.as_map(vf.as_map(ospec.get("resources")).get("requests")).get("storage")
        nres["requests"] = nreq
        nspec["resources"] = nres
    if bound:
        nspec["volumeAttributesClassName"] = ospec.get("volumeAttributesClassName")
    if _without(nspec) != _without(ospec) or _without(vf.as_map(nspec.get("resources"))) != _without(
            vf.as_map(ospec.get("resources"))):
        errs.append(forbidden("spec", "spec is immutable after creation except resources.requests "
                                      "and volumeAttributesClassName for bound claims"))
    new_size = parse_quantity(vf.as_map(vf.as_map(vf.as_map(new.get("spec")).get("resources")).get("requests"))
                              .get("storage", "0"))
    old_size = parse_quantity(vf.as_map(vf.as_map(ospec.get("resources")).get("requests")).get("storage", "0"))
    status_size = parse_quantity(vf.as_map(vf.as_map(old.get("status")).get("capacity")).get("storage", "0"))
    if new_size is not None and old_size is not None and new_size < old_size and (
            status_size is None or new_size <= status_size):
        errs.append(forbidden("spec.resources.requests.storage",
                              "field can not be less than status.capacity"))
    return errs


def validate_pvc_status(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    status = vf.as_map(new.get("status"))
    for key in ("capacity", "allocatedResources"):
        for r, q in vf.as_map(status.get(key)).items():
            if r == "storage":
                parsed = parse_quantity(q)
                if parsed is None or parsed < 0:
                    errs.append(invalid(f"status.{key}[{r}]", vf.quantity_str(q),
                                        "must be greater than or equal to 0"))
    return errs


# --- printer ---------------------------------------------------------------------------

_PERSISTENT_VOLUME_CLAIM_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Status", "string",
         "phase represents the current phase of PersistentVolumeClaim."),
    pr.column("Volume", "string",
         "volumeName is the binding reference to the PersistentVolume backing this claim."),
    pr.column("Capacity", "string",
         "capacity represents the actual resources of the underlying volume."),
    pr.column("Access Modes", "string",
         "accessModes contains the actual access modes the volume backing the PVC has. "
         "More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#access-modes-1"),
    pr.column("StorageClass", "string",
         "StorageClass of the pvc"),
    pr.column("VolumeAttributesClass", "string",
         "VolumeAttributesClass of the pvc"),
    pr.AGE_COLUMN,
    pr.column("VolumeMode", "string",
         "volumeMode defines what type of volume is required by the claim. Value of "
         "Filesystem is implied when not included in claim spec.", priority=1),
)


def _persistent_volume_claim_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    phase = "Terminating" if vf.deleting(obj) else str(status.get("phase") or "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = vf.access_modes_cell(status.get("accessModes"))
        capacity = str(pr.as_dict(status.get("capacity")).get("storage") or "0")
    cls = (pr.as_dict(pr.as_dict(obj.get("metadata")).get("annotations"))
           .get("volume.beta.kubernetes.io/storage-class") or spec.get("storageClassName") or "")
    return pr.Row([
        pr.object_name(obj), phase, str(spec.get("volumeName") or ""), capacity, modes, str(cls),
        vf.unset_cell(spec.get("volumeAttributesClassName")), pr.age(obj, now),
        vf.unset_cell(spec.get("volumeMode")),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class PersistentVolumeClaimStrategy(Strategy):
    kind = "PersistentVolumeClaim"
    printer = pr.Printer(_PERSISTENT_VOLUME_CLAIM_COLUMNS, _persistent_volume_claim_row)
    create_keeps_status = True  # replaced below

    def default(self, obj: Obj, *, create: bool) -> None:
        default_pvc(obj, create)
        go_order_object(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}

    def validate_create(self, obj: Obj) -> list[Cause]:
        return validate_pvc_create(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_pvc_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + validate_pvc_status(new, old)
