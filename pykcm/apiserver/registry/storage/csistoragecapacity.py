"""storage.k8s.io/v1 CSIStorageCapacities (kube-apiserver
``pkg/registry/storage/csistoragecapacity`` and ``pkg/apis/storage/validation``):
validation and printer.

- validation: a DNS subdomain name in a namespace; nodeTopology a valid label selector;
  storageClassName a class name (DNS subdomain); capacity non-negative; nodeTopology and
  storageClassName immutable;
- capacity and maximumVolumeSize stored in canonical form, as Go's round trip writes them;
- updates need a resourceVersion;
- printer: the default Name, Created At: kube-apiserver's registry sets no table
  convertor for this kind, so its printer columns (StorageClassName, Capacity) are not
  served.

Deviation: the invalid label values an old object's selector already had are not
tolerated on update (upstream's AllowInvalidLabelValueInSelector).
"""

from __future__ import annotations

from pykcm.api.quantity import Quantity
from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    go_label_selector,
    invalid,
    is_dns1123_subdomain,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["CSIStorageCapacityStrategy"]


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=True)
    topology = obj.get("nodeTopology")
    if topology is not None:
        errs += validate_label_selector(pr.as_dict(topology), "nodeTopology")
    name = pr.as_str(obj.get("storageClassName"))
    errs += [invalid("storageClassName", name, m) for m in is_dns1123_subdomain(name)]
    capacity = obj.get("capacity")
    if capacity is not None:
        try:
            if Quantity.of(capacity).sign() < 0:
                errs.append(invalid("capacity", capacity, "must be greater than or equal to 0"))
        except (ValueError, TypeError):
            pass
    return errs


@register
class CSIStorageCapacityStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "CSIStorageCapacity"

    def default(self, obj: Obj, *, create: bool) -> None:
        for key in ("capacity", "maximumVolumeSize"):
            value = obj.get(key)
            if value is not None:
                try:
                    obj[key] = str(Quantity.of(value))
                except (ValueError, TypeError):
                    pass
        obj.setdefault("storageClassName", "")

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        if new.get("nodeTopology") != old.get("nodeTopology"):
            topology = new.get("nodeTopology")
            errs.append(invalid("nodeTopology",
                                go_label_selector(topology if isinstance(topology, dict)
                                                  else None),
                                FIELD_IMMUTABLE_ERROR_MSG))
        if new.get("storageClassName") != old.get("storageClassName"):
            errs.append(invalid("storageClassName", new.get("storageClassName"),
                                FIELD_IMMUTABLE_ERROR_MSG))
        return errs
