"""core/v1 ConfigMaps (pkg/registry/core/configmap): validation (keys, the 1 MiB limit,
immutability) and printer. No defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    is_config_map_key,
    too_long,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    MAX_SECRET_SIZE,
    as_map,
    as_str,
    base64_len,
    semantic_equal,
    validate_meta,
)

Obj = dict[str, Any]

# --- validation ------------------------------------------------------------------------

def _validate_data_keys(data: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key in data:
        errs.extend(invalid(f"{path}[{key}]", key, m) for m in is_config_map_key(key))
    return errs


def _validate_configmap(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_meta(obj, True)
    data, binary = as_map(obj.get("data")), as_map(obj.get("binaryData"))
    total = 0
    for key, value in data.items():
        errs.extend(invalid(f"data[{key}]", key, m) for m in is_config_map_key(key))
        if key in binary:
            errs.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        total += len(as_str(value).encode("utf-8"))
    for key, value in binary.items():
        errs.extend(invalid(f"binaryData[{key}]", key, m) for m in is_config_map_key(key))
        total += base64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("[]", MAX_SECRET_SIZE))
    return errs


def _update_configmap(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        if not semantic_equal(new.get("data"), old.get("data")):
            errs.append(forbidden("data", "field is immutable when `immutable` is set"))
        if not semantic_equal(new.get("binaryData"), old.get("binaryData")):
            errs.append(forbidden("binaryData", "field is immutable when `immutable` is set"))
    errs.extend(_validate_configmap(new))
    return errs


# --- printer ---------------------------------------------------------------------------

_CONFIG_MAP_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Data", "string",
         "Data contains the configuration data. Each key must consist of alphanumeric "
         "characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the "
         "BinaryData field. The keys stored in Data must not overlap with the keys in the "
         "BinaryData field, this is enforced during validation process."),
    pr.AGE_COLUMN,
)


def _config_map_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    n = len(pr.as_dict(obj.get("data"))) + len(pr.as_dict(obj.get("binaryData")))
    return pr.Row([pr.object_name(obj), n, pr.age(obj, now)])


# --- the strategy ----------------------------------------------------------------------

@register
class ConfigMapStrategy(Strategy):
    kind = "ConfigMap"
    printer = pr.Printer(_CONFIG_MAP_COLUMNS, _config_map_row)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate_configmap(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_configmap(new, old)
