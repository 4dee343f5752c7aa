"""core/v1 LimitRanges (``pkg/registry/core/limitrange``, ``SetDefaults_LimitRangeItem``,
``ValidateLimitRange``): the Container items' defaults and the consistency of min, max,
default, defaultRequest and maxLimitRequestRatio.

Data flow: defaulting fills a Container item's ``default`` from ``max`` and its
``defaultRequest`` from ``default``, then from ``min``; validation then checks each
item (what LimitRanger admission applies to pods and claims is
``pykcm.apiserver.admission.limit_ranger``). Quantities are stored canonical, as
kube-apiserver re-encodes them. ``kubectl get limits`` shows the default table
(Name, Created At), as upstream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.quantity import Quantity
from pykcm.api.validation import (
    Cause,
    duplicate,
    forbidden,
    invalid,
    is_qualified_name,
    required,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.core.resource_names import (
    canonical_resource_list,
    validate_container_resource_name,
    validate_resource_name,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["LimitRangeStrategy", "default_limit_range_item"]

_TYPES: Final = ("Pod", "Container", "PersistentVolumeClaim")
_FIELDS: Final = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")
_MAX_MILLI: Final = ((1 << 63) - 1) // 1000


def default_limit_range_item(item: dict[str, Any]) -> None:
    """SetDefaults_LimitRangeItem: a Container item's default from max, defaultRequest from
    default, then from min."""
    if item.get("type") != "Container":
        return
    default = item.setdefault("default", {})
    default_request = item.setdefault("defaultRequest", {})
    for src, dst in ((item.get("max") or {}, default), (default, default_request),
                     (item.get("min") or {}, default_request)):
        for k, v in src.items():
            dst.setdefault(k, v)
    for k in ("default", "defaultRequest"):
        if not item[k]:
            del item[k]  # an empty map encodes as nothing


def _resource_name(limit_type: str, name: str, path: str) -> list[Cause]:
    if limit_type in ("Pod", "Container"):
        return validate_container_resource_name(name, path)
    return validate_resource_name(name, path)


def _milli(q: Quantity) -> int:
    return math.ceil(q.value * 1000)


def _validate_item(i: int, item: Mapping[str, Any], seen: set[str]) -> list[Cause]:
    path = f"spec.limits[{i}]"
    t = str(item.get("type") or "")
    errs = [invalid(f"{path}.type", t, m) for m in is_qualified_name(t)]
    if not errs and "/" not in t and t not in _TYPES:
        errs.append(invalid(f"{path}.type", t, "must be a standard limit type or fully qualified"))
    if t in seen:
        errs.append(duplicate(f"{path}.type", t))
    seen.add(t)
    values: dict[str, dict[str, Quantity]] = {f: {} for f in _FIELDS}
    keys: list[str] = []

    def take(field: str) -> None:
        for k, v in (item.get(field) or {}).items():
            errs.extend(_resource_name(t, k, f"{path}.{field}[{k}]"))
            values[field][k] = Quantity.of(v)
            if k not in keys:
                keys.append(k)

    take("max")
    take("min")
    if t == "Pod":
        if item.get("default"):
            errs.append(forbidden(f"{path}.default", "may not be specified when `type` is 'Pod'"))
        if item.get("defaultRequest"):
            errs.append(forbidden(f"{path}.defaultRequest",
                                  "may not be specified when `type` is 'Pod'"))
    else:
        take("default")
        take("defaultRequest")
    if t == "PersistentVolumeClaim" and "storage" not in (item.get("min") or {}) \
            and "storage" not in (item.get("max") or {}):
        errs.append(required(f"{path}.limits", "either minimum or maximum storage value is "
                                               "required, but neither was provided"))
    take("maxLimitRequestRatio")
    for k in keys:
        mn, mx = values["min"].get(k), values["max"].get(k)
        df, dr = values["default"].get(k), values["defaultRequest"].get(k)
        ratio = values["maxLimitRequestRatio"].get(k)
        if mn is not None and mx is not None and mn > mx:
            errs.append(invalid(f"{path}.min[{k}]", str(mn),
                                f"min value {mn} is greater than max value {mx}"))
        if dr is not None and mn is not None and mn > dr:
            errs.append(invalid(f"{path}.defaultRequest[{k}]", str(dr),
                                f"min value {mn} is greater than default request value {dr}"))
        if dr is not None and mx is not None and dr > mx:
            errs.append(invalid(f"{path}.defaultRequest[{k}]", str(dr),
                                f"default request value {dr} is greater than max value {mx}"))
        if dr is not None and df is not None and dr > df:
            errs.append(invalid(f"{path}.defaultRequest[{k}]", str(dr),
                                f"default request value {dr} is greater than default limit "
                                f"value {df}"))
        if df is not None and mn is not None and mn > df:
            errs.append(invalid(f"{path}.default[{k}]", str(mn),
                                f"min value {mn} is greater than default value {df}"))
        if df is not None and mx is not None and df > mx:
            errs.append(invalid(f"{path}.default[{k}]", str(mx),
                                f"default value {df} is greater than max value {mx}"))
        if ratio is not None and ratio.value < 1:
            errs.append(invalid(f"{path}.maxLimitRequestRatio[{k}]", str(ratio),
                                f"ratio {ratio} is less than 1"))
        if ratio is not None and mn is not None and mx is not None:
            r, lo, hi = (math.ceil(ratio.value), math.ceil(mn.value), math.ceil(mx.value))
            ratio_value = float(r)
            if r < _MAX_MILLI and lo < _MAX_MILLI and hi < _MAX_MILLI:
                ratio_value, lo, hi = _milli(ratio) / 1000, _milli(mn), _milli(mx)
            limit = hi / lo if lo else math.inf
            if ratio_value > limit:
                errs.append(invalid(f"{path}.maxLimitRequestRatio[{k}]", str(ratio),
                                    f"ratio {ratio} is greater than max/min = {limit:f}"))
        overcommit = k not in ("hugepages-",) and not k.startswith("hugepages-")
        if not overcommit and df is not None and dr is not None and df.value != dr.value:
            errs.append(invalid(f"{path}.defaultRequest[{k}]", str(dr),
                                f"default value {df} must equal to defaultRequest value {dr} "
                                f"in {k}"))
    return errs


def validate_limit_range(obj: Mapping[str, Any]) -> list[Cause]:
    seen: set[str] = set()
    errs: list[Cause] = []
    for i, item in enumerate((obj.get("spec") or {}).get("limits") or ()):
        errs += _validate_item(i, item, seen)
    return errs


@register
class LimitRangeStrategy(Strategy):
    kind = "LimitRange"

    def default(self, obj: Obj, *, create: bool) -> None:
        for item in (obj.get("spec") or {}).get("limits") or ():
            if not isinstance(item, dict):
                continue
            default_limit_range_item(item)
            for f in _FIELDS:
                if isinstance(item.get(f), dict):
                    item[f] = canonical_resource_list(item[f])
            # the fields in LimitRangeItem's Go order, as kube-apiserver encodes them
            ordered = {k: item.pop(k) for k in ("type", *_FIELDS) if k in item}
            ordered.update(item)
            item.clear()
            item.update(ordered)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return super().validate_create(obj) + validate_limit_range(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
                + validate_limit_range(new))
