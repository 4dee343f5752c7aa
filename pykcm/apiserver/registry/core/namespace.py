"""core/v1 Namespaces (pkg/registry/core/namespace): defaults, validation, the status/spec
split, /finalize and printer.

A namespace's status is the server's: phase Active on create, Terminating when
deleted (the generic store's delete); a write of the main resource keeps it, a
/status write changes only the status, /finalize only spec.finalizers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.validation import (
    Cause,
    invalid,
    is_qualified_name,
    name_is_dns_label,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.defaulting import child_dict, go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_list, as_map, as_str, validate_meta

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

def _default_namespace(obj: Obj, create: bool) -> None:
    meta = child_dict(obj, "metadata")
    name = meta.get("name")
    if name:
        child_dict(meta, "labels")["kubernetes.io/metadata.name"] = name
    if create:
        # PrepareForCreate: the "kubernetes" finalizer is required at creation
        # only; /finalize may remove it later.
        spec = child_dict(obj, "spec")
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = []
            spec["finalizers"] = finalizers
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
    status = child_dict(obj, "status")
    if not status.get("phase"):
        status["phase"] = "Active"


# --- validation ------------------------------------------------------------------------

def _create_namespace(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_meta(obj, False, name_is_dns_label)
    for f in as_list(as_map(obj.get("spec")).get("finalizers")):
        fs = as_str(f)
        errs.extend(invalid("spec.finalizers", fs, m) for m in is_qualified_name(fs))
        if "/" not in fs and fs != "kubernetes":
            errs.append(invalid("spec.finalizers", fs, "name is neither a standard finalizer name "
                                                       "nor is it fully qualified"))
    return errs


def _update_namespace(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return validate_object_meta_update(new.get("metadata"), old.get("metadata"))


def _status_namespace(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    phase = as_str(as_map(new.get("status")).get("phase"))
    if not meta_of(new).get("deletionTimestamp"):
        if phase != "Active":
            return [invalid("status.Phase", phase,
                            "may only be 'Active' if `deletionTimestamp` is empty")]
    elif phase != "Terminating":
        return [invalid("status.Phase", phase,
                        "may only be 'Terminating' if `deletionTimestamp` is not empty")]
    return []


# --- printer ---------------------------------------------------------------------------

_NAMESPACE_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Status", "string", "The status of the namespace"),
    pr.AGE_COLUMN,
)


def _namespace_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([pr.object_name(obj), pr.as_str(pr.as_dict(obj.get("status")).get("phase")), pr.age(obj, now)])


# --- the strategy ----------------------------------------------------------------------

@register
class NamespaceStrategy(Strategy):
    kind = "Namespace"
    printer = pr.Printer(_NAMESPACE_COLUMNS, _namespace_row)
    create_keeps_status = True  # replaced below
    status_keeps_all_metadata = True

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_namespace(obj, create)
        go_order_object(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}

    def carry_status(self, new: Obj, old: Obj) -> None:
        # the phase moves only through delete
        if "status" in old:
            new["status"] = old["status"]

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> Obj:
        if subresource != "finalize":
            return super().prepare_for_subresource_update(subresource, new, old)
        # namespaceFinalizeStrategy: spec.finalizers and the metadata come from the request
        # (system fields kept), the status stays
        result = dict(old)
        result["metadata"] = self.status_write_metadata(new, old["metadata"])
        spec = dict(old.get("spec") or {})
        spec["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
        if not spec["finalizers"]:
            spec.pop("finalizers")
        result["spec"] = spec
        return result

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_namespace(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_namespace(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + _status_namespace(new, old)
