"""What the storage kinds' strategies share: PersistentVolumes, PersistentVolumeClaims and
StorageClasses use one vocabulary (access modes, volume modes, class names, storage
quantities) and print access modes and unset fields alike.

Their rules follow kube-apiserver v1.36's ``pkg/apis/core/v1/defaults.go``,
``pkg/apis/core/validation`` (the PersistentVolume* functions) and
``pkg/apis/storage/validation``; each kind's are in its own module
(registry/core/persistentvolume.py, persistentvolumeclaim.py,
registry/storage/storageclass.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    required,
)
from pykcm.apiserver.registry.defaults import parse_quantity

Obj = dict[str, Any]

ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES: Final = ("Block", "Filesystem")
def as_map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def child_dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    v = parent.get(key)
    if not isinstance(v, dict):
        v = {}
        parent[key] = v
    return v


def go_order(d: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Go's field order (known keys first, in order; unknown ones after)."""
    items = [(k, d[k]) for k in keys if k in d] + [(k, v) for k, v in d.items() if k not in keys]
    d.clear()
    d.update(items)


RESOURCES_ORDER: Final = ("limits", "requests", "claims")


# --- defaults ------------------------------------------------------------------------------

# --- validation ----------------------------------------------------------------------------

def class_name_errors(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def access_mode_errors(modes: Any, path: str, required_detail: str) -> list[Cause]:
    errs: list[Cause] = []
    modes = modes if isinstance(modes, list) else []
    if not modes:
        errs.append(required(path, required_detail))
    rwop = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(not_supported(path, mode, ACCESS_MODES))
        if mode == "ReadWriteOncePod":
            rwop = True
        elif mode in ACCESS_MODES:
            other = True
    if rwop and other:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def quantity_str(q: Any) -> str:
    return str(q)


def positive_quantity_errors(q: Any, path: str) -> list[Cause]:
    parsed = parse_quantity(q)
    if parsed is None or parsed <= 0:
        return [invalid(path, quantity_str(q), "must be greater than zero")]
    return []


# --- strategy ------------------------------------------------------------------------------


# --- table cells -----------------------------------------------------------------------

ACCESS_MODE_SHORT: Final = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"),
                             ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))


def access_modes_cell(modes: Any) -> str:
    """GetAccessModesAsString: the short names in a fixed order, each once."""
    have = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in ACCESS_MODE_SHORT if mode in have)


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(as_map(obj.get("metadata")).get("deletionTimestamp"))


def unset_cell(v: Any) -> str:
    return "<unset>" if v is None else str(v)
