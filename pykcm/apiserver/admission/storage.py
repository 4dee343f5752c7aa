"""The storage admission plugins of kube-apiserver v1.36 that pykcm's server runs.

rest_storage calls :func:`admit` after defaulting, beside ``admission.admit``,
with a lookup of the committed StorageClasses:

- **DefaultStorageClass** (PersistentVolumeClaim create): a claim without
  ``spec.storageClassName`` (and without the beta class annotation) gets the
  default class, the class annotated
  ``storageclass.kubernetes.io/is-default-class: "true"`` (or the beta
  annotation); of several defaults the newest, ties broken by name, as
  upstream's ``GetDefaultClass``. No default: the claim is left alone.
- **StorageObjectInUseProtection** (PersistentVolume and PersistentVolumeClaim
  create): the finalizers ``kubernetes.io/pv-protection`` /
  ``kubernetes.io/pvc-protection``, which the protection controllers remove
  once the object is unused; and on a new VolumeAttributesClass
  ``kubernetes.io/vac-protection`` (:func:`protect_volume_attributes_class`).
- **PersistentVolumeClaimResize** (PersistentVolumeClaim update): a larger
  ``resources.requests.storage`` of a bound claim needs a class that allows
  volume expansion; else 403 as upstream's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from pykcm.api.resources import ResourceInfo
from pykcm.apiserver import errors
from pykcm.apiserver.registry.defaults import parse_quantity

__all__ = ["PVC_PROTECTION", "PV_PROTECTION", "VAC_PROTECTION", "admit", "default_class",
           "protect_volume_attributes_class"]

PVC_PROTECTION: Final = "kubernetes.io/pvc-protection"
PV_PROTECTION: Final = "kubernetes.io/pv-protection"
VAC_PROTECTION: Final = "kubernetes.io/vac-protection"
DEFAULT_CLASS_ANNOTATIONS: Final = ("storageclass.kubernetes.io/is-default-class",
                                    "storageclass.beta.kubernetes.io/is-default-class")
BETA_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"

# name -> StorageClass, or None when missing; and all classes
ClassLookup = Callable[[str], dict[str, Any] | None]
ClassList = Callable[[], Iterable[dict[str, Any]]]


def default_class(classes: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The default StorageClass: of those annotated default, the newest (then by name)."""
    defaults = [c for c in classes
                if any(((c.get("metadata") or {}).get("annotations") or {}).get(a) == "true"
                       for a in DEFAULT_CLASS_ANNOTATIONS)]
    if not defaults:
        return None
    defaults.sort(key=lambda c: (str(c["metadata"].get("creationTimestamp") or ""),
                                 # newest first; on a tie the name that sorts first
                                 [-ord(ch) for ch in str(c["metadata"].get("name") or "")]),
                  reverse=True)
    return defaults[0]


def protect_volume_attributes_class(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """StorageObjectInUseProtection on a new VolumeAttributesClass: the
    ``kubernetes.io/vac-protection`` finalizer (the vac-protection controller removes it
    once no claim uses the class; pykcm runs no such controller, so deleting the class
    leaves it Terminating until the finalizer is removed)."""
    if old is not None:
        return
    meta = obj.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if VAC_PROTECTION not in finalizers:
        finalizers.append(VAC_PROTECTION)
        meta["finalizers"] = finalizers


def admit(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
          class_lookup: ClassLookup, class_list: ClassList) -> None:
    """Run the storage plugins on a core/v1 PersistentVolume(Claim) write."""
    if info.group or info.kind not in ("PersistentVolume", "PersistentVolumeClaim"):
        return
    meta = obj.setdefault("metadata", {})
    if old is None:
        finalizer = PVC_PROTECTION if info.kind == "PersistentVolumeClaim" else PV_PROTECTION
        finalizers = list(meta.get("finalizers") or [])
        if finalizer not in finalizers:
            finalizers.append(finalizer)
            meta["finalizers"] = finalizers
    if info.kind != "PersistentVolumeClaim":
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if old is None:
        annotations = meta.get("annotations") or {}
        if spec.get("storageClassName") is None and BETA_CLASS_ANNOTATION not in annotations:
            chosen = default_class(class_list())
            if chosen is not None:
                spec["storageClassName"] = chosen["metadata"]["name"]
        return
    _resize(obj, old, class_lookup)


def _storage(obj: dict[str, Any]) -> Any:
    return parse_quantity((((obj.get("spec") or {}).get("resources") or {}).get("requests")
                           or {}).get("storage", "0"))


def _resize(obj: dict[str, Any], old: dict[str, Any], class_lookup: ClassLookup) -> None:
    """PersistentVolumeClaimResize: only a bound claim of an expandable class grows."""
    new_size, old_size = _storage(obj), _storage(old)
    if new_size is None or old_size is None or new_size <= old_size:
        return
    name = str((obj.get("metadata") or {}).get("name") or "")
    if (old.get("status") or {}).get("phase") != "Bound":
        raise errors.forbidden("persistentvolumeclaims", "", name,
                               "Only bound persistent volume claims can be expanded")
    cls_name = ((obj.get("metadata") or {}).get("annotations") or {}).get(
        BETA_CLASS_ANNOTATION) or (obj.get("spec") or {}).get("storageClassName") or ""
    cls = class_lookup(str(cls_name)) if cls_name else None
    if cls is None or cls.get("allowVolumeExpansion") is not True:
        raise errors.forbidden(
            "persistentvolumeclaims", "", name,
            "only dynamically provisioned pvc can be resized and the storageclass that "
            "provisions the pvc must support resize")
