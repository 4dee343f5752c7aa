"""networking.k8s.io/v1 IPAddresses (kube-apiserver ``pkg/registry/networking/ipaddress``):
validation and printer.

- the name is the address: a strict IP in canonical form;
- ``spec.parentRef`` required (``resource`` and ``name`` path segments, ``group`` a DNS
  subdomain, ``namespace`` a path segment) and immutable;
- printer: Name, ParentRef (``resource[.group]/[namespace/]name``); the rows carry a
  third cell, the age, as upstream's printer does with its two columns.

Deviations: upstream's no-op name generator takes a ``generateName`` as the name itself;
here the generic store appends its random suffix (the name then fails validation).
kube-apiserver's service IP allocator records every Service ClusterIP as an
IPAddress (``ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io``); pykcm's allocator
(service_allocator.py) keeps its bitmap to itself, so only IPAddresses clients create
are listed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    GoValue,
    invalid,
    is_dns1123_subdomain,
    name_is_path_segment,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.networking.ip_fields import is_valid_ip
from pykcm.apiserver.registry.printers import (
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_str,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["IPAddressStrategy"]


def _name_errors(name: str, prefix: bool = False) -> list[str]:
    """ValidateIPAddressName: the name is an IP address in canonical form."""
    return [c.detail for c in is_valid_ip("", name)]


def _validate_parent_ref(ref: Any) -> list[Cause]:
    path = "spec.parentRef"
    if ref is None:
        return [required(path)]
    ref = as_dict(ref)
    errs: list[Cause] = []
    group = as_str(ref.get("group"))
    if group:
        errs += [invalid(f"{path}.group", group, m) for m in is_dns1123_subdomain(group)]
    for key in ("resource", "name"):
        value = as_str(ref.get(key))
        if not value:
            errs.append(required(f"{path}.{key}"))
        else:
            errs += [invalid(f"{path}.{key}", value, m) for m in name_is_path_segment(value)]
    namespace = as_str(ref.get("namespace"))
    if namespace:
        errs += [invalid(f"{path}.namespace", namespace, m)
                 for m in name_is_path_segment(namespace)]
    return errs


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False,
                                name_validator=_name_errors)
    return errs + _validate_parent_ref(as_dict(obj.get("spec")).get("parentRef"))


def _go_parent_ref(ref: Any) -> GoValue:
    """The internal *ParentReference as field.Invalid prints it: JSON with Go's field names
    (the internal type has no json tags), null for nil."""
    if ref is None:
        return GoValue("null")
    ref = as_dict(ref)
    return GoValue(json.dumps({k.capitalize(): as_str(ref.get(k))
                               for k in ("group", "resource", "namespace", "name")},
                              separators=(",", ":")))


def parent_ref_string(ref: Mapping[str, Any] | None) -> str:
    if ref is None:
        return "<none>"
    group = as_str(ref.get("group"))
    text = as_str(ref.get("resource")).lower() + (f".{group.lower()}" if group else "")
    if ref.get("namespace"):
        text += "/" + as_str(ref.get("namespace"))
    return text + "/" + as_str(ref.get("name"))


_COLUMNS: Final = (
    NAME_COLUMN,
    column("ParentRef", "string",
           "ParentRef references the resource that an IPAddress is attached to. An IPAddress "
           "must reference a parent object."),
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    ref = as_dict(obj.get("spec")).get("parentRef")
    return Row([object_name(obj), parent_ref_string(as_dict(ref) if ref is not None else None),
                age(obj, now)])


@register
class IPAddressStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "IPAddress"
    printer = Printer(_COLUMNS, _row)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = _validate(new)
        errs += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        new_ref = as_dict(new.get("spec")).get("parentRef")
        if new_ref != as_dict(old.get("spec")).get("parentRef"):
            errs.append(invalid("spec.parentRef", _go_parent_ref(new_ref),
                                FIELD_IMMUTABLE_ERROR_MSG))
        return errs
