"""storage.k8s.io/v1 VolumeAttributesClasses (kube-apiserver
``pkg/registry/storage/volumeattributesclass`` and ``pkg/apis/storage/validation``):
validation and printer.

- validation: a class name; driverName as a StorageClass provisioner (required, at most 63
  characters, a qualified name); parameters as a StorageClass's but never empty; driverName
  and parameters may not change (upstream's Forbidden);
- printer: Name, DriverName, Age.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    required,
    too_long,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.field_docs import field_doc
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.storage.storageclass import validate_provisioner
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["VolumeAttributesClassStrategy"]


def _validate_parameters(params: Any) -> list[Cause]:
    # validateParameters(allowEmpty=false)
    params = pr.as_dict(params)
    errs: list[Cause] = []
    if len(params) > 512:
        errs.append(too_long("parameters", 512))
    if sum(len(k) + len(str(v)) for k, v in params.items()) > 256 * 1024:
        errs.append(too_long("parameters", 256 * 1024))
    for k in params:
        if not k:
            errs.append(invalid("parameters", k, "field can not be empty."))
    if not params:
        errs.append(required("parameters", "must contain at least one key/value pair"))
    return errs


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    errs += validate_provisioner(obj.get("driverName"), "driverName")
    return errs + _validate_parameters(obj.get("parameters"))


_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("DriverName", "string", field_doc("storage.v1.VolumeAttributesClass", "driverName")),
    pr.AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([pr.object_name(obj), pr.as_str(obj.get("driverName")), pr.age(obj, now)])


@register
class VolumeAttributesClassStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "VolumeAttributesClass"
    printer = pr.Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        obj.setdefault("driverName", "")

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        if new.get("driverName") != old.get("driverName"):
            errs.append(forbidden("driverName", "updates to driverName are forbidden."))
        if (new.get("parameters") or None) != (old.get("parameters") or None):
            errs.append(forbidden("parameters", "updates to parameters are forbidden."))
        return errs + _validate(new)
