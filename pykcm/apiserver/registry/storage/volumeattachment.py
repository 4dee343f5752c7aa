"""storage.k8s.io/v1 VolumeAttachments (kube-apiserver
``pkg/registry/storage/volumeattachment`` and ``pkg/apis/storage/validation``): the
spec/status split, validation and printer.

- create drops the status, an update of the main resource keeps the stored one, a /status
  write keeps the stored spec (the external-attacher reports there);
- validation: the name a DNS subdomain; attacher a CSI driver name; exactly one source
  (persistentVolumeName, non-empty, a DNS subdomain; or an inlineVolumeSpec); nodeName a
  DNS subdomain; attachmentMetadata at most 256 KiB, error messages at most 1024
  characters, errorCode non-negative; the spec immutable;
- updates need a resourceVersion;
- printer: Name, Attacher, PV, Node, Attached, Age.

Deviation: an inlineVolumeSpec is checked only for being present (upstream runs the whole
PersistentVolumeSpec validation on it); the immutable-spec message prints the spec as JSON,
upstream as Go's %v of the struct.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    forbidden,
    inclusive_range_error,
    invalid,
    is_dns1123_subdomain,
    required,
    too_long,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.field_docs import field_doc
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.storage.csinode import validate_csi_driver_name
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["VolumeAttachmentStrategy"]

_MAX_METADATA: Final = 256 * 1024
_MAX_ERROR_MESSAGE: Final = 1024
_ONE_SOURCE: Final = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def _validate_source(source: Mapping[str, Any]) -> list[Cause]:
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and pv is None:
        return [required("spec.source", _ONE_SOURCE)]
    if inline is not None and pv is not None:
        return [forbidden("spec.source", _ONE_SOURCE)]
    if pv is not None and not pv:
        return [required("spec.source.persistentVolumeName",
                         "must specify non empty persistentVolumeName")]
    return []


def _validate_error(e: Any, path: str) -> list[Cause]:
    if e is None:
        return []
    e = pr.as_dict(e)
    errs: list[Cause] = []
    if len(pr.as_str(e.get("message"))) > _MAX_ERROR_MESSAGE:
        # (upstream reports the metadata limit here)
        errs.append(too_long(f"{path}.message", _MAX_METADATA))
    code = e.get("errorCode")
    if isinstance(code, int) and code < 0:
        errs.append(invalid(f"{path}.errorCode", code, inclusive_range_error(0, 2**31 - 1)))
    return errs


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    spec = pr.as_dict(obj.get("spec"))
    errs += validate_csi_driver_name(pr.as_str(spec.get("attacher")), "spec.attacher")
    source = pr.as_dict(spec.get("source"))
    errs += _validate_source(source)
    node = pr.as_str(spec.get("nodeName"))
    errs += [invalid("spec.nodeName", node, m) for m in is_dns1123_subdomain(node)]
    status = pr.as_dict(obj.get("status"))
    metadata = pr.as_dict(status.get("attachmentMetadata"))
    if sum(len(k) + len(str(v)) for k, v in metadata.items()) > _MAX_METADATA:
        errs.append(too_long("status.attachmentMetadata", _MAX_METADATA))
    errs += _validate_error(status.get("attachError"), "status.attachError")
    errs += _validate_error(status.get("detachError"), "status.detachError")
    pv = source.get("persistentVolumeName")
    if isinstance(pv, str):
        errs += [invalid("spec.source.persistentVolumeName", pv, m)
                 for m in is_dns1123_subdomain(pv)]
    return errs


_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Attacher", "string", field_doc("storage.v1.VolumeAttachmentSpec", "attacher"), fmt="name"),
    pr.column("PV", "string", field_doc("storage.v1.VolumeAttachmentSource", "persistentVolumeName")),
    pr.column("Node", "string", field_doc("storage.v1.VolumeAttachmentSpec", "nodeName")),
    pr.column("Attached", "boolean", field_doc("storage.v1.VolumeAttachmentStatus", "attached")),
    pr.AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    source = pr.as_dict(spec.get("source"))
    attached = pr.as_dict(obj.get("status")).get("attached") is True
    return pr.Row([pr.object_name(obj), pr.as_str(spec.get("attacher")),
                   pr.as_str(source.get("persistentVolumeName")),
                   pr.as_str(spec.get("nodeName")), attached, pr.age(obj, now)])


@register
class VolumeAttachmentStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "VolumeAttachment"
    printer = pr.Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        spec.setdefault("attacher", "")
        spec.setdefault("source", {})
        spec.setdefault("nodeName", "")
        status = obj.get("status")
        if isinstance(status, dict):
            status.setdefault("attached", False)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"attached": False}

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = _validate(new)
        errs += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        spec = new.get("spec")
        return errs + validate_immutable(spec, old.get("spec"), "spec",
                                         rendered=GoValue(json.dumps(spec)))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = _validate(new)
        return errs + validate_object_meta_update(new.get("metadata"), old.get("metadata"))
