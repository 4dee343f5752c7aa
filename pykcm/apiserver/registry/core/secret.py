"""core/v1 Secrets (pkg/registry/core/secret): defaults (type Opaque), validation (keys, the
1 MiB limit, the per-type required keys, immutability) and printer. The TLS
warnings are the handlers'.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    is_config_map_key,
    required,
    too_long,
    validate_immutable,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.defaulting import go_order_object
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

# --- defaults --------------------------------------------------------------------------

def _default_secret(obj: Obj, create: bool) -> None:
    # The v1 -> internal conversion folds stringData into data (stringData
    # wins) and the field is never stored.
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data")
        if not isinstance(data, dict):
            data = {}
            obj["data"] = data
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode("utf-8")).decode("ascii")
    if not obj.get("type"):
        obj["type"] = "Opaque"


# --- validation ------------------------------------------------------------------------

def _validate_secret(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_meta(obj, True)
    data = as_map(obj.get("data"))
    total = 0
    for key, value in data.items():
        errs.extend(invalid(f"data[{key}]", key, m) for m in is_config_map_key(key))
        total += base64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("data", MAX_SECRET_SIZE))
    stype = as_str(obj.get("type"))
    annotations = as_map(meta_of(obj).get("annotations"))
    if stype == "kubernetes.io/service-account-token":
        if not annotations.get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif stype == "kubernetes.io/dockercfg":
        if ".dockercfg" not in data:
            errs.append(required("data[.dockercfg]"))
    elif stype == "kubernetes.io/dockerconfigjson":
        if ".dockerconfigjson" not in data:
            errs.append(required("data[.dockerconfigjson]"))
        else:
            why = _json_content_error(data[".dockerconfigjson"])
            if why:
                errs.append(invalid("data[.dockerconfigjson]", "<secret contents redacted>", why))
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(required("data[username]"))
            errs.append(required("data[password]"))
    elif stype == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(required("data[ssh-privatekey]"))
    elif stype == "kubernetes.io/tls":
        if "tls.crt" not in data:
            errs.append(required("data[tls.crt]"))
        if "tls.key" not in data:
            errs.append(required("data[tls.key]"))
    return errs


def _json_content_error(b64: Any) -> str:
    """Go's json.Unmarshal error for base64-encoded content ("" when it is JSON)."""
    import base64 as _b64

    from pykcm.apiserver.serializer import go_json

    try:
        raw = _b64.b64decode(as_str(b64), validate=True)
    except ValueError:
        return ""
    return go_json.syntax_error(raw) or ""


def _update_secret(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_immutable(as_str(new.get("type")), as_str(old.get("type")), "type"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        if not semantic_equal(new.get("data"), old.get("data")):
            errs.append(forbidden("data", "field is immutable when `immutable` is set"))
    errs.extend(_validate_secret(new))
    return errs


# --- printer ---------------------------------------------------------------------------

_SECRET_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Type", "string",
         "Used to facilitate programmatic handling of secret data. More info: "
         "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    pr.column("Data", "string",
         "Data contains the secret data. Each key must consist of alphanumeric characters, "
         "'-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, "
         "representing the arbitrary (possibly non-string) data value here. Described in "
         "https://tools.ietf.org/html/rfc4648#section-4"),
    pr.AGE_COLUMN,
)


def _secret_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([pr.object_name(obj), pr.as_str(obj.get("type")), len(pr.as_dict(obj.get("data"))), pr.age(obj, now)])


# --- the strategy ----------------------------------------------------------------------

@register
class SecretStrategy(Strategy):
    kind = "Secret"
    printer = pr.Printer(_SECRET_COLUMNS, _secret_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_secret(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate_secret(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_secret(new, old)
