"""The PersistentVolumeClaim evaluator: ``pkg/quota/v1/evaluator/core/persistent_volume_claims.go``.

A claim counts ``persistentvolumeclaims``, ``count/persistentvolumeclaims``
and ``requests.storage`` (its request rounded up to a whole byte, or the
larger status.allocatedResources of a resize: RecoverVolumeExpansionFailure is
on in v1.36), each also per storage class as
``<class>.storageclass.storage.k8s.io/<name>``. Scopes: VolumeAttributesClass
(the class names in spec, status and a pending modification).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pykcm.api.quantity import Quantity
from pykcm.api.quota.evaluator import (
    ONE,
    Attributes,
    Evaluator,
    matches_scope_selector_values,
    object_count_resource_name,
)
from pykcm.api.quota.resources import ResourceList

__all__ = ["PersistentVolumeClaimEvaluator", "requires_quota_replenish"]

PVC_COUNT: Final = object_count_resource_name("", "persistentvolumeclaims")
_PVC_RESOURCES: Final = ("persistentvolumeclaims", "requests.storage")
STORAGE_CLASS_SUFFIX: Final = ".storageclass.storage.k8s.io/"


def _claim_class(pvc: Mapping[str, Any]) -> str:
    # storagehelpers.GetPersistentVolumeClaimClass: the beta annotation wins.
    ann = (pvc.get("metadata") or {}).get("annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in ann:
        return str(ann["volume.beta.kubernetes.io/storage-class"])
    return str((pvc.get("spec") or {}).get("storageClassName") or "")


def _volume_attributes_classes(pvc: Mapping[str, Any]) -> set[str]:
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    names = {spec.get("volumeAttributesClassName"), status.get("currentVolumeAttributesClassName"),
             (status.get("modifyVolumeStatus") or {}).get("targetVolumeAttributesClassName")}
    return {n for n in names if n}


def _allocated_storage(pvc: Mapping[str, Any]) -> Any:
    return ((pvc.get("status") or {}).get("allocatedResources") or {}).get("storage")


def requires_quota_replenish(pvc: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    if _allocated_storage(old) != _allocated_storage(pvc):
        return True
    return _volume_attributes_classes(old) != _volume_attributes_classes(pvc)


class PersistentVolumeClaimEvaluator(Evaluator):
    group, resource = "", "persistentvolumeclaims"

    def handles(self, a: Attributes) -> bool:
        if a.subresource == "":
            return a.operation in ("CREATE", "UPDATE")
        if a.subresource == "status" and a.obj is not None and a.old_obj is not None:
            return requires_quota_replenish(a.obj, a.old_obj)
        return False

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        out = []
        for n in names:
            if n == PVC_COUNT or n in _PVC_RESOURCES or any(
                    n.endswith(STORAGE_CLASS_SUFFIX + r) for r in _PVC_RESOURCES):
                out.append(n)
        return out

    def matches_scope(self, selector: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
        if selector.get("scopeName") != "VolumeAttributesClass":
            return False
        names = _volume_attributes_classes(obj)
        if selector.get("operator") == "Exists":
            return bool(names)
        if not names:
            return matches_scope_selector_values(selector, {})
        return any(matches_scope_selector_values(selector, {"VolumeAttributesClass": n})
                   for n in names)

    def matching_scopes(self, obj: Mapping[str, Any],
                        selectors: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [s for s in selectors if self.matches_scope(s, obj)]

    def usage(self, obj: Mapping[str, Any]) -> ResourceList:
        out: ResourceList = {"persistentvolumeclaims": ONE, PVC_COUNT: ONE}
        cls = _claim_class(obj)
        if cls:
            out[cls + STORAGE_CLASS_SUFFIX + "persistentvolumeclaims"] = ONE
        storage = self._storage(obj)
        if storage is not None:
            out["requests.storage"] = storage
            if cls:
                out[cls + STORAGE_CLASS_SUFFIX + "requests.storage"] = storage
        return out

    @staticmethod
    def _storage(pvc: Mapping[str, Any]) -> Quantity | None:
        requests = ((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}
        if "storage" not in requests:
            return None
        result = Quantity.of(requests["storage"]).round_up()
        allocated = _allocated_storage(pvc)
        if allocated is not None:
            a = Quantity.of(allocated)
            if a.value > result.value:
                result = a.round_up()
        return result
