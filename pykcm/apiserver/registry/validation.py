"""Field checks every strategy's validation shares (upstream's apimachinery validation
helpers and the small pieces of ``pkg/apis/<group>/validation`` many kinds use).

Validation runs on every write. Objects are wire-form dicts (JSON-decoded:
dict, list, str, int, float, bool, None), so the helpers test those exact
types first; isinstance against the Mapping ABC costs several times more
and is left for the other Mappings callers pass. String checks
(pykcm.api.validation) are memoized, and field paths are built only when
there is an error to report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    GoValue,
    NameValidator,
    go_int_or_string,
    go_string_map,
    invalid,
    is_valid_percent,
    name_is_dns_subdomain,
    validate_nonnegative,
    validate_object_meta,
)

Obj = Mapping[str, Any]
EMPTY: Final[Mapping[str, Any]] = {}
# The size limit of a ConfigMap's or Secret's data (MaxSecretSize).
MAX_SECRET_SIZE: Final = 1 * 1024 * 1024

def as_map(v: Any) -> Mapping[str, Any]:
    if v.__class__ is dict:
        return v  # the common case, without the slower Mapping ABC check
    return v if isinstance(v, Mapping) else EMPTY


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def as_int(v: Any) -> int | None:
    if v.__class__ is int:  # the common case (bool is a subclass, not int itself)
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    return v


def as_str(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else str(v))


def is_zero(v: Any) -> bool:
    """Whether Go would see the (normalized) value as unset."""
    return v is None or v == "" or v is False or v == {} or v == [] or (
        v == 0 and not isinstance(v, bool) and isinstance(v, (int, float)))


# Exact types a JSON decoder produces; for them Go's zero values are exactly
# the falsy ones.
_JSON_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_JSON_TYPES: Final = _JSON_SCALARS | {dict, list}


def normalize(v: Any) -> Any:
    """Go's semantic equality treats unset, nil and zero values alike.

    Drop None, "", 0, False, {} and [] (recursively) so two wire dicts
    compare equal when the Go structs they decode to would.
    """
    cls = v.__class__
    if cls in _JSON_SCALARS:
        return v
    if cls is dict or (cls is not list and isinstance(v, Mapping)):
        out = {}
        for k, x in v.items():
            nx = x if x.__class__ in _JSON_SCALARS else normalize(x)
            # For the JSON types the zero values are exactly the falsy ones.
            if (not nx) if nx.__class__ in _JSON_TYPES else is_zero(nx):
                continue
            out[k] = nx
        return out
    if isinstance(v, list):
        return [normalize(x) for x in v]
    return v


def semantic_equal(a: Any, b: Any) -> bool:
    # Equal wire (JSON) values normalize equally, and most comparisons are of
    # a field an update left alone: compare as is first, normalize only when
    # that fails.
    if a == b:
        return True
    return bool(normalize(a) == normalize(b))


def go_labels(labels: Any) -> GoValue:
    return go_string_map(labels if isinstance(labels, Mapping) else None)



def immutable(new: Any, old: Any, path: str, rendered: Any = None) -> list[Cause]:
    if semantic_equal(new, old):
        return []
    return [invalid(path, new if rendered is None else rendered, FIELD_IMMUTABLE_ERROR_MSG)]


def nonnegative_field(obj: Mapping[str, Any], key: str, path: str) -> list[Cause]:
    v = as_int(obj.get(key))
    return validate_nonnegative(v, path) if v is not None else []


# --- int-or-percent -------------------------------------------------------------

def percent_value(v: Any) -> int | None:
    if isinstance(v, str) and not is_valid_percent(v):
        return int(v[:-1])
    return None


def int_or_percent_value(v: Any) -> int:
    p = percent_value(v)
    if p is not None:
        return p
    if isinstance(v, bool):
        return 0
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        # intstr.IntValue() of a string: Atoi, 0 when not a number.
        try:
            return int(v)
        except ValueError:
            return 0
    return 0


def validate_positive_int_or_percent(v: Any, path: str) -> list[Cause]:
    if isinstance(v, str):
        return [invalid(path, go_int_or_string(v), m) for m in is_valid_percent(v)]
    if isinstance(v, int) and not isinstance(v, bool):
        return validate_nonnegative(v, path)
    if v is None:
        return []
    return [invalid(path, go_int_or_string(v), "must be an integer or percentage (e.g '5%')")]


def not_more_than_100_percent(v: Any, path: str) -> list[Cause]:
    p = percent_value(v)
    if p is None or p <= 100:
        return []
    return [invalid(path, go_int_or_string(v), "must not be greater than 100%")]


def validate_meta(obj: Obj, namespaced: bool,
                  name_validator: NameValidator = name_is_dns_subdomain) -> list[Cause]:
    """ValidateObjectMeta of an object of a kind (namespaced or not) whose names are checked
    by ``name_validator`` (DNS subdomains unless the kind says otherwise)."""
    return validate_object_meta(obj.get("metadata"), namespaced=namespaced,
                                name_validator=name_validator)


def base64_len(v: Any) -> int:
    s = as_str(v)
    return (len(s) * 3) // 4 - s.count("=", max(0, len(s) - 2))
