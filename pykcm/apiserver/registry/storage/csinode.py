"""storage.k8s.io/v1 CSINodes (kube-apiserver ``pkg/registry/storage/csinode`` and
``pkg/apis/storage/validation``): validation and printer.

- validation: the name a node name (DNS subdomain); each driver's name a DNS subdomain
  (CSI driver names), once per node; nodeID required, at most 256 characters;
  allocatable.count non-negative; topologyKeys non-empty, unique, qualified names; an
  existing driver's entry immutable but for its allocatable (MutableCSINodeAllocatableCount),
  printed as upstream's internal struct (Go field names);
- updates need a resourceVersion;
- printer: Name, Drivers (their number), Age.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    duplicate,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    required,
    too_long,
    validate_immutable,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["CSINodeStrategy", "validate_csi_driver_name"]

_NODE_ID_MAX: Final = 256


def validate_csi_driver_name(name: str, path: str) -> list[Cause]:
    """ValidateCSIDriverName of core validation: required, at most 63 characters, a DNS
    subdomain of lower-cased text."""
    if not name:
        return [required(path, "")]
    errs: list[Cause] = []
    if len(name) > 63:
        errs.append(too_long(path, 63))
    errs += [invalid(path, name, m) for m in is_dns1123_subdomain(name.lower())]
    return errs


def _validate_driver(driver: Mapping[str, Any], seen: set[str], path: str) -> list[Cause]:
    errs = validate_csi_driver_name(pr.as_str(driver.get("name")), f"{path}.name")
    node_id = pr.as_str(driver.get("nodeID"))
    if not node_id:
        errs.append(required(f"{path}.nodeID", node_id))
    if len(node_id) > _NODE_ID_MAX:
        errs.append(invalid(f"{path}.nodeID", node_id,
                            f"must be {_NODE_ID_MAX} characters or less"))
    count = pr.as_dict(driver.get("allocatable")).get("count")
    if count is not None:
        errs += validate_nonnegative(count, f"{path}.allocatable.count")
    name = pr.as_str(driver.get("name"))
    if name in seen:
        errs.append(duplicate(f"{path}.name", name))
    seen.add(name)
    keys: set[str] = set()
    for key in pr.as_list(driver.get("topologyKeys")):
        key = pr.as_str(key)
        if not key:
            errs.append(required(path, key))
        if key in keys:
            errs.append(duplicate(path, key))
        keys.add(key)
        errs += [invalid(path, key, m) for m in is_qualified_name(key)]
    return errs


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    seen: set[str] = set()
    drivers = pr.as_list(pr.as_dict(obj.get("spec")).get("drivers"))
    for i, d in enumerate(drivers):
        errs += _validate_driver(pr.as_dict(d), seen, f"spec.drivers[{i}]")
    return errs


_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Drivers", "integer",
              "Drivers indicates the number of CSI drivers registered on the node"),
    pr.AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    drivers = pr.as_list(pr.as_dict(obj.get("spec")).get("drivers"))
    return pr.Row([pr.object_name(obj), len(drivers), pr.age(obj, now)])


def _without_allocatable(driver: Any) -> dict[str, Any]:
    d = pr.as_dict(driver)
    return {"name": d.get("name"), "nodeID": d.get("nodeID"),
            "topologyKeys": d.get("topologyKeys")}


def _go_driver(driver: Mapping[str, Any]) -> GoValue:
    """An internal storage.CSINodeDriver as field.Invalid prints it: JSON with Go's field
    names (the internal type has no json tags), the allocatable left out (nil)."""
    return GoValue(json.dumps({"Name": driver["name"] or "", "NodeID": driver["nodeID"] or "",
                               "TopologyKeys": driver["topologyKeys"], "Allocatable": None},
                              separators=(",", ":")))


@register
class CSINodeStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "CSINode"
    printer = pr.Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        # spec.drivers is required and not omitempty: Go writes null for none
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["spec"] = spec = {}
        spec.setdefault("drivers", None)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = _validate(new)
        errs += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        new_drivers = pr.as_list(pr.as_dict(new.get("spec")).get("drivers"))
        for od in pr.as_list(pr.as_dict(old.get("spec")).get("drivers")):
            for nd in new_drivers:
                if pr.as_dict(od).get("name") == pr.as_dict(nd).get("name"):
                    new_d = _without_allocatable(nd)
                    errs += validate_immutable(new_d, _without_allocatable(od), "spec.drivers",
                                               rendered=_go_driver(new_d))
        return errs
