"""storage.k8s.io/v1 StorageClasses (pkg/registry/storage/storageclass): defaults (Delete,
Immediate), validation (provisioner, parameters, reclaim policy, immutable
parameters/provisioner/reclaim policy/binding mode) and printer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    invalid,
    is_qualified_name,
    not_supported,
    required,
    too_long,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import volume_fields as vf
from pykcm.apiserver.registry.defaulting import go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]

# --- defaults and validation -----------------------------------------------------------

BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")


_SC: Final = ("kind", "apiVersion", "metadata", "provisioner", "parameters", "reclaimPolicy",
              "mountOptions", "allowVolumeExpansion", "volumeBindingMode", "allowedTopologies")


def default_storage_class(obj: Obj, create: bool) -> None:
    """SetDefaults_StorageClass: Delete, Immediate."""
    if not obj.get("reclaimPolicy"):
        obj["reclaimPolicy"] = "Delete"
    if not obj.get("volumeBindingMode"):
        obj["volumeBindingMode"] = "Immediate"
    obj.setdefault("provisioner", "")
    vf.go_order(obj, _SC)


def validate_provisioner(p: Any, path: str = "provisioner") -> list[Cause]:
    """validateProvisioner (also a VolumeAttributesClass's driverName)."""
    if not p:
        return [required(path, "")]
    p = str(p)
    errs: list[Cause] = []
    if len(p) > 63:
        errs.append(too_long(path, 63))
    # ValidateProvisionerName: a qualified name, checked lower-cased
    lower = p.lower()
    errs.extend(invalid(path, lower, msg) for msg in is_qualified_name(lower))
    return errs


def validate_storage_class_create(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    errs.extend(validate_provisioner(obj.get("provisioner")))
    params = vf.as_map(obj.get("parameters"))
    total = sum(len(k) + len(str(v)) for k, v in params.items())
    if len(params) > 512:
        errs.append(too_long("parameters", 512))
    if total > 256 * 1024:
        errs.append(too_long("parameters", 256 * 1024))
    for k in params:
        if not k:
            errs.append(invalid("parameters", k, "field can not be empty."))
    policy = obj.get("reclaimPolicy")
    if policy is not None and policy not in ("Delete", "Retain"):
        errs.append(not_supported("reclaimPolicy", policy, ("Delete", "Retain")))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(required("volumeBindingMode", ""))
    elif mode not in BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    return errs


def validate_storage_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_storage_class_create(new))
    for key in ("parameters", "provisioner", "reclaimPolicy"):
        if (new.get(key) or None) != (old.get(key) or None):
            errs.append(invalid(key, new.get(key), FIELD_IMMUTABLE_ERROR_MSG))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(invalid("volumeBindingMode", new.get("volumeBindingMode"),
                            FIELD_IMMUTABLE_ERROR_MSG))
    return errs


# --- printer ---------------------------------------------------------------------------

_STORAGE_CLASS_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Provisioner", "string",
         "provisioner indicates the type of the provisioner."),
    pr.column("ReclaimPolicy", "string",
         "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
         "PersistentVolumes of this storage class. Defaults to Delete."),
    pr.column("VolumeBindingMode", "string",
         "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and"
         " bound.  When unset, VolumeBindingImmediate is used. This field is only honored "
         "by servers that enable the VolumeScheduling feature."),
    pr.column("AllowVolumeExpansion", "string",
         "allowVolumeExpansion shows whether the storage class allow volume expand."),
    pr.AGE_COLUMN,
)


_DEFAULT_CLASS_ANNOTATIONS: Final = ("storageclass.kubernetes.io/is-default-class",
                                     "storageclass.beta.kubernetes.io/is-default-class")


def _storage_class_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    annotations = pr.as_dict(pr.as_dict(obj.get("metadata")).get("annotations"))
    name = pr.object_name(obj)
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    expansion = obj.get("allowVolumeExpansion")
    return pr.Row([
        name, str(obj.get("provisioner") or ""), str(obj.get("reclaimPolicy") or "Delete"),
        str(obj.get("volumeBindingMode") or "Immediate"),
        expansion is True, pr.age(obj, now),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class StorageClassStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "StorageClass"
    printer = pr.Printer(_STORAGE_CLASS_COLUMNS, _storage_class_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        default_storage_class(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return validate_storage_class_create(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return validate_storage_class_update(new, old)
