"""Structural schemas for custom resources: pruning, defaulting and validation.

Role: the apiextensions-apiserver's ``pkg/apiserver/schema`` packages (pruning,
defaulting, objectmeta, listtype) plus the kube-openapi validator a custom
resource is checked with, for one CRD version's ``openAPIV3Schema``.

Data flow: :func:`compile_schema` turns the schema (a JSON dict) once into a
:class:`StructuralSchema`, a tree of slot nodes holding everything the hot
paths need already parsed (types, regexes, supported formats, defaults). A
write request's custom resource then goes through

1. :func:`prune` (the decoder's schema coercer): unknown fields are dropped
   in place and their paths returned (for ``unknown field "spec.foo"``
   warnings); the root ``apiVersion``/``kind``/``metadata`` are kept, unknown
   keys inside root and embedded ``metadata`` are dropped, non-nullable
   ``null`` values without a default are removed;
2. :func:`apply_defaults`: schema ``default`` values for absent (or
   non-nullable ``null``) properties, array items and map values, deep-copied;
3. :func:`validate`: kube-openapi validation with kube-apiserver's field
   paths and messages, then the embedded-resource checks, then
   ``x-kubernetes-list-type`` set/map uniqueness. The caller turns the
   returned :class:`~pykcm.api.validation.Cause` list into a 422.

On the CRD side, :func:`validate_structural` gives the schema checks
``CustomResourceDefinition`` validation runs (OpenAPI subset, structural
invariants, completeness of value validations, valid and pruned defaults),
and :func:`selectable_field_values` computes the ``selectableFields`` values
field selectors match against.

Left out: ``x-kubernetes-validations`` (CEL) rules are accepted in schemas
but never evaluated; validation ratcheting on update; the scale subresource's
replicas checks; the ``k8s-*`` name formats of newer releases; anyOf/oneOf
"best failure" selection is approximated (fewest errors instead of
kube-openapi's match count).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from pykcm.api.validation import Cause, go_quote, is_dns1035_label, validate_object_meta
from pykcm.apiserver.crd import go_regexp

__all__ = [
    "StructuralSchema",
    "apply_defaults",
    "compile_schema",
    "go_json",
    "parse_field_path",
    "prune",
    "render_bad_value",
    "selectable_field_values",
    "validate",
    "validate_structural",
]


# --- Go value rendering ---------------------------------------------------------

def _json_str(s: str) -> str:
    out = json.dumps(s, ensure_ascii=False)
    if "<" in out or ">" in out or "&" in out or "\u2028" in out or "\u2029" in out:
        out = (out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
               .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return out


def _go_json_float(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return "null"
    a = abs(v)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        s = repr(v)
        if "e-0" in s:
            s = s.replace("e-0", "e-")
        return s
    return format(Decimal(repr(v)).normalize(), "f")


def go_json(v: Any) -> str:
    """json.Marshal of an unstructured value (map keys sorted, Go's float format)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_json_float(v)
    if isinstance(v, str):
        return _json_str(v)
    if isinstance(v, Mapping):
        return "{" + ",".join(f"{_json_str(str(k))}:{go_json(v[k])}" for k in sorted(v)) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(go_json(x) for x in v) + "]"
    return _json_str(str(v))


def _go_g(v: float) -> str:
    """%v of a float64 (strconv 'g' with the shortest precision)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    sign = "-" if v < 0 else ""
    t = Decimal(repr(abs(v))).normalize().as_tuple()
    digits = "".join(map(str, t.digits))
    exp10 = len(digits) - 1 + int(t.exponent)
    if exp10 < -4 or exp10 >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        es = "-" if exp10 < 0 else "+"
        return f"{sign}{mant}e{es}{abs(exp10):02d}"
    return sign + format(Decimal(repr(abs(v))).normalize(), "f")


def render_bad_value(v: Any) -> str:
    """How field.Error renders an unstructured bad value (v1.36 ErrorBody):
    %q for strings, %v for numbers and booleans, JSON otherwise."""
    if isinstance(v, str):
        return go_quote(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_g(v)
    return go_json(v)


def _num(v: float) -> str:
    """%v of a bound that kube-openapi formats as float64."""
    return _go_g(float(v))


def _trim(name: str) -> str:
    return name.removeprefix(".")


def _join(prefix: str, name: str) -> str:
    """errPath.Child(name) of kubeOpenAPIResultToFieldErrors."""
    name = _trim(name)
    if not prefix:
        return name
    if not name:
        return prefix
    return f"{prefix}.{name}"


# --- compiled schema ----------------------------------------------------------------

_MISSING: Final[Any] = object()

# kube-openapi's registered formats CRDs may use (normalized without dashes).
_SUPPORTED_FORMATS: Final = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid",
    "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor",
    "rgbcolor", "byte", "password", "date", "duration", "datetime",
})

_OBJECTMETA_FIELDS: Final = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})
_META_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata"})


def _opt_float(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _opt_int(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return int(v)


class _Node:
    """One schema node, with everything validation needs parsed once."""

    __slots__ = (
        "additional",
        "additional_allows",
        "additional_set",
        "all_of",
        "any_of",
        "checks_type",
        "composite",
        "default",
        "default_props",
        "embedded",
        "embedded_below",
        "enum",
        "exclusive_maximum",
        "exclusive_minimum",
        "format",
        "has_defaults_below",
        "int_or_string",
        "items",
        "list_map_keys",
        "list_type",
        "lists_below",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "number_checks",
        "object_checks",
        "one_of",
        "pattern",
        "pattern_err",
        "pattern_re",
        "preserve",
        "properties",
        "required",
        "slice_checks",
        "string_checks",
        "type",
        "type_name",
        "types",
        "unique_items",
    )

    def __init__(self, raw: Any) -> None:
        if not isinstance(raw, Mapping):
            raw = {}
        t = raw.get("type")
        self.type: str = t if isinstance(t, str) else ""
        self.int_or_string: bool = raw.get("x-kubernetes-int-or-string") is True
        if self.int_or_string:
            self.types: tuple[str, ...] = ("integer", "string")
        elif self.type:
            self.types = (self.type,)
        else:
            self.types = ()
        self.type_name = ",".join(self.types)
        self.nullable: bool = raw.get("nullable") is True
        fmt = raw.get("format")
        self.format: str = (fmt if isinstance(fmt, str) and fmt.replace("-", "") in
                            _SUPPORTED_FORMATS else "")
        props = raw.get("properties")
        self.properties: dict[str, _Node] | None = (
            {str(k): _Node(v) for k, v in props.items()}
            if isinstance(props, Mapping) and props else None)
        items = raw.get("items")
        self.items: _Node | None = _Node(items) if isinstance(items, Mapping) else None
        ap = raw.get("additionalProperties", _MISSING)
        self.additional: _Node | None = None
        self.additional_set = ap is not _MISSING and ap is not None
        self.additional_allows = True
        if isinstance(ap, bool):
            self.additional_allows = ap
        elif isinstance(ap, Mapping):
            self.additional = _Node(ap)
        self.preserve: bool = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded: bool = raw.get("x-kubernetes-embedded-resource") is True
        d = raw.get("default")
        self.default: Any = _MISSING if d is None else d
        enum = raw.get("enum")
        self.enum: list[Any] | None = list(enum) if isinstance(enum, list) and enum else None
        req = raw.get("required")
        self.required: list[str] = ([r for r in req if isinstance(r, str)]
                                    if isinstance(req, list) else [])
        self.maximum = _opt_float(raw.get("maximum"))
        self.exclusive_maximum: bool = raw.get("exclusiveMaximum") is True
        self.minimum = _opt_float(raw.get("minimum"))
        self.exclusive_minimum: bool = raw.get("exclusiveMinimum") is True
        self.multiple_of = _opt_float(raw.get("multipleOf"))
        self.max_length = _opt_int(raw.get("maxLength"))
        self.min_length = _opt_int(raw.get("minLength"))
        pat = raw.get("pattern")
        self.pattern: str = pat if isinstance(pat, str) else ""
        self.pattern_re: go_regexp.GoRegexp | None = None
        self.pattern_err = ""
        if self.pattern:
            try:
                self.pattern_re = go_regexp.compile(self.pattern)
            except go_regexp.GoRegexpError as e:
                self.pattern_err = str(e)
        self.max_items = _opt_int(raw.get("maxItems"))
        self.min_items = _opt_int(raw.get("minItems"))
        self.unique_items: bool = raw.get("uniqueItems") is True
        self.max_properties = _opt_int(raw.get("maxProperties"))
        self.min_properties = _opt_int(raw.get("minProperties"))
        self.all_of = _node_list(raw.get("allOf"))
        self.any_of = _node_list(raw.get("anyOf"))
        self.one_of = _node_list(raw.get("oneOf"))
        nt = raw.get("not")
        self.not_: _Node | None = _Node(nt) if isinstance(nt, Mapping) else None
        lt = raw.get("x-kubernetes-list-type")
        self.list_type: str = lt if isinstance(lt, str) else ""
        lk = raw.get("x-kubernetes-list-map-keys")
        self.list_map_keys: list[str] = ([k for k in lk if isinstance(k, str)]
                                         if isinstance(lk, list) else [])
        # Which validators apply at all (kube-openapi's Applies()).
        self.checks_type = bool(self.types or self.format)
        self.composite = bool(self.all_of or self.any_of or self.one_of or self.not_)
        self.string_checks = (self.max_length is not None or self.min_length is not None
                              or bool(self.pattern) or bool(self.format))
        self.number_checks = (self.maximum is not None or self.minimum is not None
                              or self.multiple_of is not None)
        self.slice_checks = (self.items is not None or self.min_items is not None
                             or self.max_items is not None or self.unique_items)
        self.object_checks = (self.properties is not None or self.additional_set
                              or bool(self.required) or self.min_properties is not None
                              or self.max_properties is not None)
        children = list((self.properties or {}).values())
        if self.items is not None:
            children.append(self.items)
        if self.additional is not None:
            children.append(self.additional)
        self.has_defaults_below: bool = any(c.default is not _MISSING or c.has_defaults_below
                                            for c in children)
        self.lists_below: bool = self.list_type in ("set", "map") or any(
            c.lists_below for c in children)
        self.embedded_below: bool = self.embedded or any(c.embedded_below for c in children)
        self.default_props: list[tuple[str, _Node]] = [
            (k, p) for k, p in (self.properties or {}).items() if p.default is not _MISSING]


def _node_list(v: Any) -> list[_Node]:
    if not isinstance(v, list):
        return []
    return [_Node(x) for x in v if isinstance(x, Mapping)]


class StructuralSchema:
    """A CRD version's ``openAPIV3Schema`` compiled for prune/default/validate.

    ``raw`` is the schema dict as given; ``root`` the compiled tree.
    """

    __slots__ = ("has_embedded", "has_list_types", "raw", "root")

    def __init__(self, raw: Mapping[str, Any] | None) -> None:
        self.raw: Mapping[str, Any] = raw or {}
        self.root = _Node(self.raw)
        r = self.root
        # objectmeta.Validate runs with isResourceRoot=false: the root itself is not checked.
        self.has_embedded = any(
            c.embedded_below for c in (*(r.properties or {}).values(), r.items, r.additional)
            if c is not None)
        self.has_list_types = r.lists_below

    def __repr__(self) -> str:
        return f"StructuralSchema(type={self.root.type!r})"


def compile_schema(schema: Mapping[str, Any] | None) -> StructuralSchema:
    """Compile an ``openAPIV3Schema`` (None: an empty schema that prunes everything)."""
    return StructuralSchema(schema)


# --- pruning ----------------------------------------------------------------------

def _drop_null(x: dict[str, Any], k: str, s: _Node | None) -> None:
    """PruneNonNullableNullsWithoutDefaults for one null value under schema s."""
    if s is not None and not s.nullable and s.default is _MISSING:
        del x[k]


def _prune_map(x: dict[str, Any], s: _Node, path: str, out: list[str], *,
               keep_meta: bool, keep_unknown: bool) -> None:
    """One object level of pruning (and of dropping non-nullable nulls)."""
    props = s.properties
    ap_set = s.additional_set
    ap = s.additional
    for k in list(x):
        v = x[k]
        prop = props.get(k) if props is not None else None
        if keep_meta and k in _META_FIELDS:
            if v is None:
                _drop_null(x, k, prop if prop is not None else ap)
            continue
        if prop is not None:
            if v is None:
                _drop_null(x, k, prop)
            elif isinstance(v, (dict, list)):
                _prune(v, prop, f"{path}.{k}" if path else k, out)
        elif ap_set:
            if v is None:
                _drop_null(x, k, ap)
            elif isinstance(v, (dict, list)):
                _prune(v, ap, f"{path}.{k}" if path else k, out)
        elif not keep_unknown:
            out.append(f"{path}.{k}" if path else k)
            del x[k]


def _prune(x: Any, s: _Node | None, path: str, out: list[str]) -> None:
    if s is not None and s.preserve:
        _skip_prune(x, s, path, out)
        return
    if isinstance(x, dict):
        if s is None:
            for k in x:
                out.append(f"{path}.{k}" if path else k)
            x.clear()
            return
        _prune_map(x, s, path, out, keep_meta=s.embedded, keep_unknown=False)
    elif isinstance(x, list):
        item = s.items if s is not None else None
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)):
                _prune(v, item, f"{path}[{i}]", out)


def _skip_prune(x: Any, s: _Node | None, path: str, out: list[str]) -> None:
    if s is None:
        return
    if isinstance(x, dict):
        _prune_map(x, s, path, out, keep_meta=s.embedded, keep_unknown=True)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)):
                _skip_prune(v, s.items, f"{path}[{i}]", out)


def _is_empty(v: Any) -> bool:
    if v is None or v == "" or v == {} or v == []:
        return True
    return isinstance(v, int) and not isinstance(v, bool) and v == 0


def _coerce_meta(meta: dict[str, Any], path: str, out: list[str], *, embedded: bool) -> None:
    """ObjectMeta round trip: unknown keys dropped (and reported); for embedded
    resources also the empty values ToUnstructured omits."""
    for k in list(meta):
        if k not in _OBJECTMETA_FIELDS:
            out.append(f"{path}.{k}")
            del meta[k]
        elif embedded and _is_empty(meta[k]):
            del meta[k]


def _coerce_embedded(x: Any, s: _Node | None, path: str, out: list[str]) -> None:
    """objectmeta.Coerce below the root: metadata of embedded resources."""
    if s is None:
        return
    if isinstance(x, dict):
        if s.embedded:
            meta = x.get("metadata")
            if isinstance(meta, dict):
                _coerce_meta(meta, f"{path}.metadata" if path else "metadata", out,
                             embedded=True)
        props = s.properties
        for k, v in x.items():
            if not isinstance(v, (dict, list)) or (s.embedded and k in _META_FIELDS):
                continue
            prop = props.get(k) if props is not None else None
            if prop is not None:
                _coerce_embedded(v, prop, f"{path}.{k}" if path else k, out)
            elif s.additional is not None:
                _coerce_embedded(v, s.additional, f"{path}.{k}" if path else k, out)
    elif isinstance(x, list) and s.items is not None:
        for i, v in enumerate(x):
            if isinstance(v, (dict, list)):
                _coerce_embedded(v, s.items, f"{path}[{i}]", out)


def prune(obj: dict[str, Any], s: StructuralSchema) -> list[str]:
    """Remove fields the schema does not specify, in place; return their paths.

    As the CR decoder does: structural pruning with the root treated as an
    embedded resource (``apiVersion``/``kind``/``metadata`` kept), honouring
    ``x-kubernetes-preserve-unknown-fields`` at any level, embedded resources,
    ``additionalProperties`` and ``items``; keys that are not ObjectMeta fields
    dropped from root and embedded ``metadata``; non-nullable ``null`` values
    without a default removed (silently, as upstream). Paths look like
    ``spec.foo``, ``spec.items[0].bar``, ``spec.map.key.x``, ``metadata.foo``.
    Idempotent.
    """
    out: list[str] = []
    if not isinstance(obj, dict):
        return out
    root = s.root
    _prune_map(obj, root, "", out, keep_meta=True, keep_unknown=root.preserve)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        _coerce_meta(meta, "metadata", out, embedded=False)
    if s.has_embedded:
        for k, v in obj.items():
            if k in _META_FIELDS or not isinstance(v, (dict, list)):
                continue
            prop = root.properties.get(k) if root.properties is not None else None
            if prop is not None:
                _coerce_embedded(v, prop, k, out)
    return out


# --- defaulting --------------------------------------------------------------------

def _deepcopy_json(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _deepcopy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_deepcopy_json(x) for x in v]
    return v


def _default(x: Any, s: _Node) -> None:
    if isinstance(x, dict):
        for k, dprop in s.default_props:
            cur = x.get(k, _MISSING)
            if cur is _MISSING or (cur is None and not dprop.nullable):
                x[k] = _deepcopy_json(dprop.default)
        props = s.properties
        ap = s.additional
        for k, v in x.items():
            prop = props.get(k) if props is not None else None
            if prop is not None:
                if prop.has_defaults_below and isinstance(v, (dict, list)):
                    _default(v, prop)
            elif ap is not None:
                if v is None and not ap.nullable and ap.default is not _MISSING:
                    v = x[k] = _deepcopy_json(ap.default)
                if ap.has_defaults_below and isinstance(v, (dict, list)):
                    _default(v, ap)
    elif isinstance(x, list):
        item = s.items
        if item is None:
            return
        for i, v in enumerate(x):
            if v is None and not item.nullable and item.default is not _MISSING:
                v = x[i] = _deepcopy_json(item.default)
            if item.has_defaults_below and isinstance(v, (dict, list)):
                _default(v, item)


def apply_defaults(obj: dict[str, Any], s: StructuralSchema) -> None:
    """Apply schema defaults in place (upstream's structural defaulting).

    A property with a ``default`` that is absent from a present object, or
    ``null`` while not nullable, gets a deep copy of the default; the same
    for ``null`` array items and map values. Defaults are applied
    recursively, into values just defaulted too. Idempotent.
    """
    if s.root.has_defaults_below and isinstance(obj, dict):
        _default(obj, s.root)


# --- string formats ------------------------------------------------------------------

_UUID_RE: Final = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3_RE: Final = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4_RE: Final = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_UUID5_RE: Final = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_HOST_LABEL: Final = r"[^\W_]([^\W_]|-){0,62}"
_HOSTNAME_RE: Final = re.compile(
    rf"^([^\W_](-?[^\W_]{{0,62}})?|({_HOST_LABEL}\.)+[^\W\d_]{{2,63}})$")
_EMAIL_RE: Final = re.compile(r"^[^@\s<>]+@[^@\s<>]+$")
_EMAIL_NAMED_RE: Final = re.compile(r"^[^<>]*<[^@\s<>]+@[^@\s<>]+>$")
_HEXCOLOR_RE: Final = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGB_PART: Final = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR_RE: Final = re.compile(rf"^rgb\({_RGB_PART},{_RGB_PART},{_RGB_PART}\)$")
_SSN_RE: Final = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_BSON_RE: Final = re.compile(r"^[0-9a-fA-F]{24}$")
_MAC_RE: Final = re.compile(
    r"^([0-9A-Fa-f]{2}([:-])){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}([:-])){7}[0-9A-Fa-f]{2}$"
    r"|^([0-9A-Fa-f]{2}([:-])){19}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$"
    r"|^([0-9A-Fa-f]{4}\.){3}[0-9A-Fa-f]{4}$|^([0-9A-Fa-f]{4}\.){9}[0-9A-Fa-f]{4}$")
_DATE_RE: Final = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_DATETIME_RE: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(:(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$")
_DURATION_GO_RE: Final = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$")
_DURATION_RE: Final = re.compile(
    r"^(\d+)\s*(ns|nano(second)?s?|us|µs|micro(second)?s?|ms|milli(second)?s?|s|sec(ond)?s?"
    r"|m|min(ute)?s?|h|hours?|d|days?|w|wk|weeks?)$")


def _is_date(s: str) -> bool:
    m = _DATE_RE.match(s)
    if not m:
        return False
    try:
        datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    m = _DATETIME_RE.match(s)
    if not m:
        return False
    try:
        datetime.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                          int(m.group(4)), int(m.group(5)), int(m.group(7) or 0))
    except ValueError:
        return False
    return True


def _is_ip(s: str, sep: str) -> bool:
    """strfmt IsIPv4/IsIPv6: net.ParseIP succeeds and the text has a '.' / ':'."""
    if "%" in s:
        return False
    try:
        ipaddress.ip_address(s)
    except ValueError:
        return False
    return sep in s


def _is_cidr(s: str) -> bool:
    addr, sep, bits = s.partition("/")
    if not sep or not bits.isdigit():
        return False
    try:
        ipaddress.ip_network(f"{addr}/{bits}", strict=False)
    except ValueError:
        return False
    return True


def _is_uri(s: str) -> bool:
    # net/url.ParseRequestURI: an absolute URI or an absolute path.
    if not s or " " in s:
        return False
    if s.startswith("/"):
        return True
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", s) is not None


def _is_email(s: str) -> bool:
    return _EMAIL_RE.match(s) is not None or _EMAIL_NAMED_RE.match(s) is not None


def _is_hostname(s: str) -> bool:
    if len(s) > 255:
        return False
    return _HOSTNAME_RE.match(s) is not None


def _isbn10(d: str) -> bool:
    if not re.fullmatch(r"\d{9}[\dX]", d):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(d))
    return total % 11 == 0


def _isbn13(d: str) -> bool:
    if not re.fullmatch(r"\d{13}", d):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(d[:12]))
    return (10 - total % 10) % 10 == int(d[12])


def _isbn_digits(s: str) -> str:
    return re.sub(r"[\s-]", "", s)


def _is_creditcard(s: str) -> bool:
    d = re.sub(r"[^0-9]", "", s)
    if not re.fullmatch(
            r"(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}"
            r"|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
            r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})", d):
        return False
    total = 0
    for i, c in enumerate(reversed(d)):
        n = int(c)
        if i % 2 == 1:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


def _is_byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except (ValueError, TypeError):
        return False
    return True


_FORMAT_CHECKS: Final[dict[str, Callable[[str], bool]]] = {
    "bsonobjectid": lambda s: _BSON_RE.match(s) is not None,
    "uri": _is_uri,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": lambda s: _is_ip(s, "."),
    "ipv6": lambda s: _is_ip(s, ":"),
    "cidr": _is_cidr,
    "mac": lambda s: _MAC_RE.match(s) is not None,
    "uuid": lambda s: _UUID_RE.match(s) is not None,
    "uuid3": lambda s: _UUID3_RE.match(s) is not None,
    "uuid4": lambda s: _UUID4_RE.match(s) is not None,
    "uuid5": lambda s: _UUID5_RE.match(s) is not None,
    "isbn": lambda s: _isbn10(_isbn_digits(s)) or _isbn13(_isbn_digits(s)),
    "isbn10": lambda s: _isbn10(_isbn_digits(s)),
    "isbn13": lambda s: _isbn13(_isbn_digits(s)),
    "creditcard": _is_creditcard,
    "ssn": lambda s: _SSN_RE.match(s) is not None,
    "hexcolor": lambda s: _HEXCOLOR_RE.match(s) is not None,
    "rgbcolor": lambda s: _RGBCOLOR_RE.match(s) is not None,
    "byte": _is_byte,
    "password": lambda s: True,
    "date": _is_date,
    "duration": lambda s: (_DURATION_GO_RE.match(s) is not None or s == "0"
                           or _DURATION_RE.match(s) is not None),
    "datetime": _is_datetime,
}


# --- kube-openapi validation ----------------------------------------------------------

_TYPE_INFO: Final[dict[type, tuple[str, str]]] = {
    str: ("string", ""), bool: ("boolean", ""), int: ("integer", "int64"),
    float: ("number", "float64"), list: ("array", ""), dict: ("object", ""),
}


def _schema_type(v: Any) -> tuple[str, str]:
    """typeValidator.schemaInfoForType for unstructured values."""
    info = _TYPE_INFO.get(type(v))
    if info is not None:
        return info
    if isinstance(v, str):
        return "string", ""
    if isinstance(v, bool):
        return "boolean", ""
    if isinstance(v, int):
        return "integer", "int64"
    if isinstance(v, float):
        return "number", "float64"
    if isinstance(v, list):
        return "array", ""
    if isinstance(v, Mapping):
        return "object", ""
    return "", ""


_MAX_JSON_FLOAT: Final = float(1 << 53)


def _is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger."""
    if math.isnan(f) or math.isinf(f) or f < -_MAX_JSON_FLOAT or f > _MAX_JSON_FLOAT:
        return False
    if f == int(f):
        return True
    g = float(int(f))
    diff = abs(f - g)
    if f == 0 or g == 0:
        return diff < 1e-300
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _type_cause(prefix: str, name: str, type_name: str, got: str) -> Cause:
    msg = f"{name} in body must be of type {type_name}: {go_quote(got)}"
    return Cause("FieldValueTypeInvalid", _join(prefix, name), msg, go_quote(got))


def _invalid(prefix: str, name: str, value: Any, msg: str) -> Cause:
    return Cause("FieldValueInvalid", _join(prefix, name), msg, render_bad_value(value))


def _check_type(n: _Node, v: Any, sch: str, fmt: str, name: str, prefix: str,
                errs: list[Cause]) -> None:
    t = n.types
    is_float_int = sch == "number" and "integer" in t and _is_json_integer(v)
    is_int_float = sch == "integer" and "number" in t
    if (n.format and sch not in ("string", "array")
            and not (sch in t or fmt == n.format or is_float_int or is_int_float)):
        errs.append(_type_cause(prefix, name, n.format, fmt))
        return
    if n.format and sch in ("string", "array") and "number" not in t and "integer" not in t:
        return
    if not (sch in t or is_float_int or is_int_float):
        errs.append(_type_cause(prefix, name, n.type_name, sch))


def _go_convert_equal(data: Any, e: Any) -> bool:
    """reflect ConvertibleTo + DeepEqual, as basicCommonValidator compares enums."""
    if isinstance(e, bool):
        return isinstance(data, bool) and data == e
    if isinstance(e, str):
        if isinstance(data, str):
            return data == e
        if isinstance(data, int) and not isinstance(data, bool):
            # int64 -> string is a rune conversion in Go.
            cp = data if 0 <= data <= 0x10FFFF and not 0xD800 <= data <= 0xDFFF else 0xFFFD
            return chr(cp) == e
        return False
    if isinstance(e, int):
        if isinstance(data, bool):
            return False
        if isinstance(data, int):
            return data == e
        if isinstance(data, float):
            return not math.isnan(data) and not math.isinf(data) and int(data) == e
        return False
    if isinstance(e, float):
        if isinstance(data, bool):
            return False
        if isinstance(data, (int, float)):
            return float(data) == e
        return False
    if isinstance(e, Mapping):
        return isinstance(data, Mapping) and _deep_equal(data, e)
    if isinstance(e, list):
        return isinstance(data, list) and _deep_equal(data, e)
    return False


def _deep_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual on unstructured values (types must match exactly)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        return all(k in b and _deep_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(_deep_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, float) and isinstance(b, float):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is None and b is None


def _enum_values(enum: Sequence[Any]) -> list[str]:
    return [e if isinstance(e, str) else go_json(e) for e in enum]


def _enum_cause(prefix: str, name: str, v: Any, enum: Sequence[Any]) -> Cause:
    values = _enum_values(enum)
    detail = "supported values: " + ", ".join(go_quote(x) for x in values) if values else ""
    return Cause("FieldValueNotSupported", _join(prefix, name), detail, render_bad_value(v))


def _validate_string(n: _Node, v: str, name: str, prefix: str, errs: list[Cause]) -> None:
    if n.max_length is not None and len(v) > n.max_length:
        unit = "byte" if n.max_length == 1 else "bytes"
        errs.append(Cause("FieldValueTooLong", _join(prefix, name),
                          f"may not be more than {n.max_length} {unit}"))
        return
    if n.min_length is not None and len(v) < n.min_length:
        errs.append(_invalid(prefix, name, v,
                             f"{name} in body should be at least {n.min_length} chars long"))
        return
    if n.pattern:
        if n.pattern_re is None:
            errs.append(_invalid(prefix, name, v, f"{name} in body should match "
                                 f"'{n.pattern}, but pattern is invalid: {n.pattern_err}'"))
        elif not n.pattern_re.search(v):
            errs.append(_invalid(prefix, name, v, f"{name} in body should match '{n.pattern}'"))


def _validate_number(n: _Node, v: float, name: str, prefix: str,
                     errs: list[Cause]) -> None:
    is_int = isinstance(v, int)
    if n.multiple_of is not None:
        factor = n.multiple_of
        if is_int and int(factor) != 0:
            fi = int(factor)
            if fi < 0:
                errs.append(_invalid(prefix, name, fi, "factor MultipleOf declared for "
                                     f"{name} must be positive: {fi}"))
            elif v % fi != 0:
                errs.append(_invalid(prefix, name, v,
                                     f"{name} in body should be a multiple of {fi}"))
        elif factor < 0:
            errs.append(_invalid(prefix, name, factor, "factor MultipleOf declared for "
                                 f"{name} must be positive: {_num(factor)}"))
        elif factor != 0:
            mult = (1 / factor * v) if factor < 1 else (v / factor)
            if not _is_json_integer(mult):
                errs.append(_invalid(prefix, name, v,
                                     f"{name} in body should be a multiple of {_num(factor)}"))
    if n.minimum is not None:
        lo = n.minimum
        if is_int:
            li = int(lo)
            bad = v <= li if n.exclusive_minimum else v < li
            shown = str(li)
        else:
            bad = v <= lo if n.exclusive_minimum else v < lo
            shown = _num(lo)
        if bad:
            rel = "greater than" if n.exclusive_minimum else "greater than or equal to"
            errs.append(_invalid(prefix, name, v, f"{name} in body should be {rel} {shown}"))
    if n.maximum is not None:
        hi = n.maximum
        if is_int:
            hi_i = int(hi)
            bad = v >= hi_i if n.exclusive_maximum else v > hi_i
            shown = str(hi_i)
        else:
            bad = v >= hi if n.exclusive_maximum else v > hi
            shown = _num(hi)
        if bad:
            rel = "less than" if n.exclusive_maximum else "less than or equal to"
            errs.append(_invalid(prefix, name, v, f"{name} in body should be {rel} {shown}"))


def _unique_key(v: Any) -> Any:
    """A hashable identity with Go's notion of equal interface{} values."""
    if isinstance(v, (dict, list)):
        return ("c", go_json(v))
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, float):
        return ("f", v)
    if isinstance(v, str):
        return ("s", v)
    return ("n", None)


def _validate_slice(n: _Node, v: list[Any], name: str, prefix: str, errs: list[Cause]) -> None:
    item = n.items
    if item is not None:
        for i, x in enumerate(v):
            _validate_node(item, x, f"{name}[{i}]", prefix, errs)
    size = len(v)
    if n.min_items is not None and size < n.min_items:
        errs.append(_invalid(prefix, name, size,
                             f"{name} in body should have at least {n.min_items} items"))
    if n.max_items is not None and size > n.max_items:
        unit = "item" if n.max_items == 1 else "items"
        errs.append(Cause("FieldValueTooMany", _join(prefix, name),
                          f"must have at most {n.max_items} {unit}", str(size)))
    if n.unique_items and size > 1:
        seen: set[Any] = set()
        for x in v:
            key = _unique_key(x)
            if key in seen:
                errs.append(_invalid(prefix, name, "",
                                     f"{name} in body shouldn't contain duplicates"))
                break
            seen.add(key)


def _validate_object(n: _Node, v: Mapping[str, Any], name: str, prefix: str,
                     errs: list[Cause]) -> None:
    nk = len(v)
    if n.min_properties is not None and nk < n.min_properties:
        errs.append(_invalid(prefix, name, nk, f"{name} in body should have at least "
                             f"{n.min_properties} properties"))
        return
    if n.max_properties is not None and nk > n.max_properties:
        unit = "item" if n.max_properties == 1 else "items"
        errs.append(Cause("FieldValueTooMany", _join(prefix, name),
                          f"must have at most {n.max_properties} {unit}", str(nk)))
        return
    props = n.properties
    forbid_unknown = n.additional_set and not n.additional_allows
    ap = n.additional
    for k, x in v.items():
        prop = props.get(k) if props is not None else None
        if prop is not None:
            _validate_node(prop, x, f"{name}.{k}" if name else k, prefix, errs)
        elif forbid_unknown:
            errs.append(_invalid(prefix, name, k, f"{name}.{k} in body is a forbidden property"))
        elif ap is not None:
            _validate_node(ap, x, f"{name}.{k}", prefix, errs)
    for k in n.required:
        if k not in v:
            errs.append(Cause("FieldValueRequired", _join(prefix, f"{name}.{k}")))


def _composite_cause(prefix: str, msg: str) -> Cause:
    return Cause("FieldValueInvalid", prefix, msg, '""')


def _validate_composite(n: _Node, v: Any, name: str, prefix: str, errs: list[Cause]) -> None:
    qname = go_quote(name)
    if n.any_of:
        best: list[Cause] | None = None
        ok = False
        for sub in n.any_of:
            r: list[Cause] = []
            _validate_node(sub, v, name, prefix, r)
            if not r:
                ok = True
                break
            if best is None or len(r) < len(best):
                best = r
        if not ok:
            errs.append(_composite_cause(prefix,
                                         f"{qname} must validate at least one schema (anyOf)"))
            errs.extend(best or [])
    if n.one_of:
        validated = 0
        best = None
        for sub in n.one_of:
            r = []
            _validate_node(sub, v, name, prefix, r)
            if not r:
                validated += 1
                best = None
                continue
            if validated == 0 and (best is None or len(r) < len(best)):
                best = r
        if validated != 1:
            extra = "Found none valid" if validated == 0 else \
                f"Found {validated} valid alternatives"
            errs.append(_composite_cause(
                prefix, f"{qname} must validate one and only one schema (oneOf). {extra}"))
            if validated == 0 and best:
                errs.extend(best)
    if n.all_of:
        validated = 0
        for sub in n.all_of:
            r = []
            _validate_node(sub, v, name, prefix, r)
            if not r:
                validated += 1
            errs.extend(r)
        if validated != len(n.all_of):
            extra = ". None validated" if validated == 0 else ""
            errs.append(_composite_cause(
                prefix, f"{qname} must validate all the schemas (allOf){extra}"))
    if n.not_ is not None:
        r = []
        _validate_node(n.not_, v, name, prefix, r)
        if not r:
            errs.append(_composite_cause(prefix, f"{qname} must not validate the schema (not)"))


def _validate_node(n: _Node, v: Any, name: str, prefix: str, errs: list[Cause]) -> None:
    """kube-openapi SchemaValidator.Validate: type, composition, string, format,
    number, slice, enum, object, in that order."""
    if v is None:
        if n.types and not n.nullable:
            errs.append(_type_cause(prefix, name, n.type_name, "null"))
        if n.enum is not None and None not in n.enum:
            errs.append(_enum_cause(prefix, name, v, n.enum))
        return
    sch, fmt = _schema_type(v)
    if n.checks_type and (n.format or sch not in n.types):
        _check_type(n, v, sch, fmt, name, prefix, errs)
    if n.composite:
        _validate_composite(n, v, name, prefix, errs)
    if sch == "object":
        pass
    elif sch == "string":
        if n.string_checks:
            _validate_string(n, v, name, prefix, errs)
            if n.format:
                check = _FORMAT_CHECKS.get(n.format.replace("-", ""))
                if check is not None and not check(v):
                    errs.append(Cause("FieldValueTypeInvalid", _join(prefix, name),
                                      f"{name} in body must be of type {n.format}: "
                                      f"{go_quote(v)}", go_quote(v)))
    elif sch == "integer" or sch == "number":
        if n.number_checks:
            _validate_number(n, v, name, prefix, errs)
    elif sch == "array" and n.slice_checks:
        _validate_slice(n, v, name, prefix, errs)
    if n.enum is not None:
        for e in n.enum:
            if _go_convert_equal(v, e):
                break
        else:
            errs.append(_enum_cause(prefix, name, v, n.enum))
    if sch == "object" and n.object_checks:
        _validate_object(n, v, name, prefix, errs)


# --- embedded resources (objectmeta.Validate) ----------------------------------------------

def _path_segment_name(name: str, prefix: bool = False) -> list[str]:
    """path.ValidatePathSegmentName (path.IsValidPathSegmentName/Prefix)."""
    errs: list[str] = []
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    if "/" in name:
        errs.append("may not contain '/'")
    if "%" in name:
        errs.append("may not contain '%'")
    return errs


def _go_kind_name(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, list):
        return "array"
    if isinstance(v, Mapping):
        return "object"
    return "string"


def _validate_embedded_resource(path: str, x: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []

    def child(k: str) -> str:
        return f"{path}.{k}" if path else k

    if "apiVersion" not in x:
        errs.append(Cause("FieldValueRequired", child("apiVersion")))
    if "kind" not in x:
        errs.append(Cause("FieldValueRequired", child("kind")))
    for k, v in x.items():
        if k == "apiVersion":
            if not isinstance(v, str):
                errs.append(Cause("FieldValueInvalid", child(k), "must be a string", render_bad_value(v)))
            elif not v:
                errs.append(Cause("FieldValueInvalid", child(k), "must not be empty", '""'))
            elif v.count("/") > 1:
                errs.append(Cause("FieldValueInvalid", child(k),
                                  f"unexpected GroupVersion string: {v}", render_bad_value(v)))
        elif k == "kind":
            if not isinstance(v, str):
                errs.append(Cause("FieldValueInvalid", child(k), "must be a string", render_bad_value(v)))
            elif not v:
                errs.append(Cause("FieldValueInvalid", child(k), "must not be empty", '""'))
            else:
                msgs = is_dns1035_label(v.lower())
                if msgs:
                    errs.append(Cause("FieldValueInvalid", child(k),
                                      "may have mixed case, but should otherwise match: "
                                      + ",".join(msgs), render_bad_value(v)))
        elif k == "metadata":
            if not isinstance(v, Mapping):
                errs.append(Cause("FieldValueInvalid", child(k),
                                  f"json: cannot unmarshal {_go_kind_name(v)} into Go value of "
                                  "type v1.ObjectMeta", render_bad_value(v)))
                continue
            meta = dict(v)
            if not meta.get("name"):
                meta["name"] = "fakename"
            errs.extend(validate_object_meta(meta, namespaced=bool(meta.get("namespace")),
                                             name_validator=_path_segment_name,
                                             path=child("metadata")))
    return errs


def _validate_embedded(x: Any, s: _Node, path: str, errs: list[Cause]) -> None:
    if isinstance(x, dict):
        if s.embedded:
            errs.extend(_validate_embedded_resource(path, x))
        props = s.properties
        ap = s.additional
        for k, v in x.items():
            prop = props.get(k) if props is not None else None
            if prop is not None:
                if prop.embedded_below:
                    _validate_embedded(v, prop, f"{path}.{k}" if path else k, errs)
            elif ap is not None and ap.embedded_below:
                _validate_embedded(v, ap, f"{path}[{k}]", errs)
    elif isinstance(x, list) and s.items is not None and s.items.embedded_below:
        for i, v in enumerate(x):
            _validate_embedded(v, s.items, f"{path}[{i}]", errs)


# --- list types (listtype.ValidateListSetsAndMaps) ------------------------------------------

def _duplicates(keys: Sequence[Any]) -> list[int]:
    """validateListSet: indices of the second appearance of each repeated value."""
    if len(keys) <= 1:
        return []
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, k in enumerate(keys):
        h = _unique_key(k) if not isinstance(k, _Unspecified) else ("u", None)
        times = seen.get(h, 0)
        seen[h] = times + 1
        if times == 1:
            out.append(i)
    return out


class _Unspecified:
    __slots__ = ()


_UNSPECIFIED: Final = _Unspecified()


def _validate_list_map(path: str, s: _Node, obj: list[Any]) -> list[Cause]:
    for i, x in enumerate(obj):
        if x is not None and not isinstance(x, Mapping):
            return [Cause("FieldValueInvalid", f"{path}[{i}]",
                          "must be an object for an array of list-type map", render_bad_value(x))]
    if len(obj) <= 1:
        return []
    errs: list[Cause] = []
    if len(s.list_map_keys) == 1:
        key_field = s.list_map_keys[0]
        keys: list[Any] = []
        for x in obj:
            if x is None or key_field not in x:
                keys.append(_UNSPECIFIED)
            else:
                keys.append(x[key_field])
        for i in _duplicates(keys):
            shown: Any = {} if keys[i] is _UNSPECIFIED else {key_field: keys[i]}
            errs.append(Cause("FieldValueDuplicate", f"{path}[{i}]", "", render_bad_value(shown)))
        return errs
    mkeys: list[Any] = []
    for x in obj:
        key: dict[str, Any] = {}
        if x is not None:
            for kf in s.list_map_keys:
                if kf in x:
                    key[kf] = x[kf]
        mkeys.append(key)
    for i in _duplicates(mkeys):
        errs.append(Cause("FieldValueDuplicate", f"{path}[{i}]", "", render_bad_value(mkeys[i])))
    return errs


def _validate_lists(x: Any, s: _Node, path: str, errs: list[Cause]) -> None:
    if isinstance(x, list):
        if s.list_type == "set":
            for i in _duplicates(x):
                errs.append(Cause("FieldValueDuplicate", f"{path}[{i}]", "",
                                  render_bad_value(x[i])))
        elif s.list_type == "map":
            errs.extend(_validate_list_map(path, s, x))
        item = s.items
        if item is not None and item.lists_below:
            for i, v in enumerate(x):
                _validate_lists(v, item, f"{path}[{i}]", errs)
    elif isinstance(x, dict):
        ap = s.additional
        if ap is not None and ap.lists_below:
            for k, v in x.items():
                _validate_lists(v, ap, f"{path}[{k}]", errs)
        props = s.properties
        if props is not None:
            for k, v in x.items():
                prop = props.get(k)
                if prop is not None and prop.lists_below:
                    _validate_lists(v, prop, f"{path}.{k}" if path else k, errs)


def validate(obj: Mapping[str, Any], s: StructuralSchema) -> list[Cause]:
    """Validate a custom resource as kube-apiserver does, without CEL.

    kube-openapi schema validation (``type``/``nullable``, ``required``,
    ``enum``, numeric bounds, ``multipleOf``, string length, ``pattern``,
    ``format``, item and property counts, ``uniqueItems``,
    ``x-kubernetes-int-or-string``, ``allOf``/``anyOf``/``oneOf``/``not``),
    then ``x-kubernetes-embedded-resource`` TypeMeta/ObjectMeta checks, then
    ``x-kubernetes-list-type`` ``set``/``map`` uniqueness (``Duplicate value``).

    ``x-kubernetes-validations`` (CEL) rules are NOT evaluated. Messages
    follow kube-apiserver, e.g. ``spec.replicas: Invalid value: "string":
    spec.replicas in body must be of type integer: "string"``,
    ``spec.replicas: Required value``, ``spec.color: Unsupported value:
    "x": supported values: "a", "b"``.
    """
    errs: list[Cause] = []
    root = s.root
    _validate_node(root, obj, "", "", errs)
    if s.has_embedded and isinstance(obj, dict) and root.properties is not None:
        # isResourceRoot=false: the root's own TypeMeta/ObjectMeta are the server's.
        for k, v in obj.items():
            prop = root.properties.get(k)
            if prop is not None and prop.embedded_below:
                _validate_embedded(v, prop, k, errs)
    if s.has_list_types:
        _validate_lists(obj, root, "", errs)
    return errs


# --- CRD-side schema checks -----------------------------------------------------------------

_OPENAPI_V3_TYPES: Final = ("array", "boolean", "integer", "number", "object", "string")


def _key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def _is_int_or_string_pair(v: Any) -> bool:
    return (isinstance(v, list) and len(v) == 2 and v[0] == {"type": "integer"}
            and v[1] == {"type": "string"})


def _walk_openapi(raw: Mapping[str, Any], path: str, errs: list[Cause]) -> None:
    """specStandardValidatorV3 and ValidateCustomResourceDefinitionOpenAPISchema."""
    t = raw.get("type")
    if t is not None and t != "":
        if not isinstance(t, str) or t not in _OPENAPI_V3_TYPES:
            detail = "supported values: " + ", ".join(go_quote(x) for x in _OPENAPI_V3_TYPES)
            errs.append(Cause("FieldValueNotSupported", f"{path}.type", detail, render_bad_value(t)))
        if t == "null":
            errs.append(Cause("FieldValueForbidden", f"{path}.type",
                              "type cannot be set to null, use nullable as an alternative"))
    for key, label in (("id", "id"), ("additionalItems", "additionalItems"),
                       ("patternProperties", "patternProperties"),
                       ("definitions", "definitions"), ("dependencies", "dependencies"),
                       ("$ref", "$ref")):
        v = raw.get(key)
        if v is not None and v != "" and v != {}:
            errs.append(Cause("FieldValueForbidden", f"{path}.{key}", f"{label} is not supported"))
    items = raw.get("items")
    if isinstance(items, list):
        errs.append(Cause("FieldValueForbidden", f"{path}.items",
                          "items must be a schema object and not an array"))
    if raw.get("uniqueItems") is True:
        errs.append(Cause("FieldValueForbidden", f"{path}.uniqueItems",
                          "uniqueItems cannot be set to true since the runtime complexity "
                          "becomes quadratic"))
    ap = raw.get("additionalProperties")
    props = raw.get("properties")
    if (isinstance(props, Mapping) and props
            and (ap is False or isinstance(ap, Mapping))):
        errs.append(Cause("FieldValueForbidden", f"{path}.additionalProperties",
                          "additionalProperties and properties are mutual exclusive"))
    pu = raw.get("x-kubernetes-preserve-unknown-fields")
    if pu is False:
        errs.append(Cause("FieldValueInvalid", f"{path}.x-kubernetes-preserve-unknown-fields",
                          "must be true or undefined", "false"))
    mt = raw.get("x-kubernetes-map-type")
    if mt is not None:
        if t != "object":
            errs.append(Cause("FieldValueInvalid", f"{path}.type",
                              "must be object if x-kubernetes-map-type is specified", render_bad_value(t or "")))
        if mt not in ("atomic", "granular"):
            errs.append(Cause("FieldValueNotSupported", f"{path}.x-kubernetes-map-type",
                              'supported values: "atomic", "granular"', render_bad_value(mt)))
    lt = raw.get("x-kubernetes-list-type")
    if lt is not None:
        if t != "array":
            if not t:
                errs.append(Cause("FieldValueRequired", f"{path}.type",
                                  "must be array if x-kubernetes-list-type is specified"))
            else:
                errs.append(Cause("FieldValueInvalid", f"{path}.type",
                                  "must be array if x-kubernetes-list-type is specified", render_bad_value(t)))
        elif lt == "set" and isinstance(items, Mapping):
            it = items.get("type")
            if it == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
                errs.append(Cause("FieldValueInvalid", f"{path}.items.x-kubernetes-map-type",
                                  "must be atomic as item of a list with x-kubernetes-list-type="
                                  "set", render_bad_value(items.get("x-kubernetes-list-type"))))
            if it == "object" and items.get("x-kubernetes-map-type") != "atomic":
                errs.append(Cause("FieldValueInvalid", f"{path}.items.x-kubernetes-map-type",
                                  "must be atomic as item of a list with x-kubernetes-list-type="
                                  "set", render_bad_value(items.get("x-kubernetes-list-type"))))
        if lt not in ("atomic", "set", "map"):
            errs.append(Cause("FieldValueNotSupported", f"{path}.x-kubernetes-list-type",
                              'supported values: "atomic", "set", "map"', render_bad_value(lt)))
    keys = raw.get("x-kubernetes-list-map-keys")
    if keys and lt != "map":
        errs.append(Cause("FieldValueForbidden", f"{path}.x-kubernetes-list-map-keys",
                          "must not be specified if x-kubernetes-list-type is not map"))
    if lt == "map":
        if not keys:
            errs.append(Cause("FieldValueRequired", f"{path}.x-kubernetes-list-map-keys",
                              "must not be empty if x-kubernetes-list-type is map"))
        if not isinstance(items, Mapping):
            errs.append(Cause("FieldValueRequired", f"{path}.items",
                              "must have a schema if x-kubernetes-list-type is map"))
        else:
            it = items.get("type")
            if it != "object":
                errs.append(Cause("FieldValueInvalid", f"{path}.items.type",
                                  "must be object if parent array's x-kubernetes-list-type is "
                                  "map", render_bad_value(it or "")))
            elif isinstance(keys, list):
                iprops = items.get("properties") or {}
                ireq = items.get("required") or []
                seen: set[str] = set()
                for k in keys:
                    ks = str(k)
                    kp = iprops.get(ks) if isinstance(iprops, Mapping) else None
                    if isinstance(kp, Mapping):
                        if kp.get("type") in ("array", "object"):
                            errs.append(Cause(
                                "FieldValueInvalid", f"{_key(f'{path}.items.properties', ks)}.type",
                                "must be a scalar type if parent array's x-kubernetes-list-type "
                                "is map", render_bad_value(it)))
                        elif ks not in ireq and kp.get("default") is None:
                            errs.append(Cause(
                                "FieldValueRequired", _key(f"{path}.items.properties", ks),
                                "this property is in x-kubernetes-list-map-keys, so it must have "
                                "a default or be a required property"))
                    else:
                        errs.append(Cause("FieldValueInvalid", f"{path}.x-kubernetes-list-map-keys",
                                          "entries must all be names of item properties",
                                          render_bad_value(keys)))
                    if ks in seen:
                        errs.append(Cause("FieldValueInvalid", f"{path}.x-kubernetes-list-map-keys",
                                          "must not contain duplicate entries", render_bad_value(keys)))
                    seen.add(ks)
    # recurse
    if isinstance(props, Mapping):
        for k, v in props.items():
            if isinstance(v, Mapping):
                _walk_openapi(v, _key(f"{path}.properties", str(k)), errs)
    if isinstance(items, Mapping):
        _walk_openapi(items, f"{path}.items", errs)
    if isinstance(ap, Mapping):
        _walk_openapi(ap, f"{path}.additionalProperties", errs)
    for key in ("allOf", "anyOf", "oneOf"):
        lst = raw.get(key)
        if isinstance(lst, list):
            for i, v in enumerate(lst):
                if isinstance(v, Mapping):
                    _walk_openapi(v, f"{path}.{key}[{i}]", errs)
    nt = raw.get("not")
    if isinstance(nt, Mapping):
        _walk_openapi(nt, f"{path}.not", errs)


_ROOT, _ITEM, _FIELD = 0, 1, 2


def _structural_invariants(raw: Mapping[str, Any], lvl: int, path: str,
                           errs: list[Cause]) -> None:
    """validateStructuralInvariants."""
    t = raw.get("type") if isinstance(raw.get("type"), str) else ""
    items = raw.get("items")
    if t == "array" and not isinstance(items, Mapping):
        errs.append(Cause("FieldValueRequired", f"{path}.items", "must be specified"))
    if isinstance(items, Mapping):
        _structural_invariants(items, _ITEM, f"{path}.items", errs)
    props = raw.get("properties")
    if isinstance(props, Mapping):
        for k, v in props.items():
            if isinstance(v, Mapping):
                _structural_invariants(v, _FIELD, _key(f"{path}.properties", str(k)), errs)
    ap = raw.get("additionalProperties")
    if ap is not None:
        if lvl == _ROOT:
            errs.append(Cause("FieldValueForbidden", f"{path}.additionalProperties",
                              "must not be used at the root"))
        if isinstance(ap, Mapping):
            _structural_invariants(ap, _FIELD, f"{path}.additionalProperties", errs)
    ios = raw.get("x-kubernetes-int-or-string") is True
    pres = raw.get("x-kubernetes-preserve-unknown-fields") is True
    emb = raw.get("x-kubernetes-embedded-resource") is True
    if ios and pres:
        errs.append(Cause("FieldValueInvalid", f"{path}.x-kubernetes-preserve-unknown-fields",
                          "must be false if x-kubernetes-int-or-string is true", "true"))
    if ios and emb:
        errs.append(Cause("FieldValueInvalid", f"{path}.x-kubernetes-embedded-resource",
                          "must be false if x-kubernetes-int-or-string is true", "true"))
    skip_any_of = _is_int_or_string_pair(raw.get("anyOf"))
    all_of = raw.get("allOf")
    skip_first_all_of_any_of = (isinstance(all_of, list) and bool(all_of)
                                and isinstance(all_of[0], Mapping)
                                and _is_int_or_string_pair(all_of[0].get("anyOf")))
    _value_validation(raw, skip_any_of, skip_first_all_of_any_of, lvl, path, errs)
    check_meta = lvl == _ROOT or emb
    if emb and t != "object":
        if not t:
            errs.append(Cause("FieldValueRequired", f"{path}.type",
                              "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(Cause("FieldValueInvalid", f"{path}.type",
                              "must be object if x-kubernetes-embedded-resource is true", render_bad_value(t)))
    elif not t and not ios and not pres:
        detail = {_ROOT: "must not be empty at the root",
                  _ITEM: "must not be empty for specified array items",
                  _FIELD: "must not be empty for specified object fields"}[lvl]
        errs.append(Cause("FieldValueRequired", f"{path}.type", detail))
    if emb and ap is not None:
        errs.append(Cause("FieldValueForbidden", f"{path}.additionalProperties",
                          "must not be used if x-kubernetes-embedded-resource is set"))
    if lvl == _ROOT and t and t != "object":
        errs.append(Cause("FieldValueInvalid", f"{path}.type", "must be object at the root",
                          render_bad_value(t)))
    if isinstance(props, Mapping):
        for key in ("kind", "apiVersion"):
            p = props.get(key)
            if isinstance(p, Mapping) and check_meta and p.get("type") != "string":
                errs.append(Cause("FieldValueInvalid", f"{_key(f'{path}.properties', key)}.type",
                                  "must be string", render_bad_value(p.get("type") or "")))
        meta = props.get("metadata")
        if isinstance(meta, Mapping):
            mpath = _key(f"{path}.properties", "metadata")
            if check_meta and meta.get("type") != "object":
                errs.append(Cause("FieldValueInvalid", f"{mpath}.type", "must be object",
                                  render_bad_value(meta.get("type") or "")))
            if lvl == _ROOT:
                extra = {k for k, v in meta.items()
                         if k not in ("type", "properties", "default")
                         and v is not None and v is not False and v != "" and v != []}
                mprops = meta.get("properties")
                if isinstance(mprops, Mapping) and mprops and not set(mprops) <= {
                        "name", "generateName"}:
                    extra.add("properties")
                if extra:
                    errs.append(Cause("FieldValueForbidden", mpath,
                                      "must not specify anything other than name and "
                                      "generateName, but metadata is implicitly specified"))
    if emb and not pres and not (isinstance(props, Mapping) and props):
        errs.append(Cause("FieldValueRequired", f"{path}.properties",
                          "must not be empty if x-kubernetes-embedded-resource is true without "
                          "x-kubernetes-preserve-unknown-fields"))


def _value_validation(raw: Mapping[str, Any], skip_any_of: bool, skip_first_all_of_any_of: bool,
                      lvl: int, path: str, errs: list[Cause]) -> None:
    if not skip_any_of:
        for i, v in enumerate(_maps(raw.get("anyOf"))):
            _nested(v, False, lvl, f"{path}.anyOf[{i}]", errs)
    for i, v in enumerate(_maps(raw.get("allOf"))):
        _nested(v, skip_first_all_of_any_of and i == 0, lvl, f"{path}.allOf[{i}]", errs)
    for i, v in enumerate(_maps(raw.get("oneOf"))):
        _nested(v, False, lvl, f"{path}.oneOf[{i}]", errs)
    nt = raw.get("not")
    if isinstance(nt, Mapping):
        _nested(nt, False, lvl, f"{path}.not", errs)
    pat = raw.get("pattern")
    if isinstance(pat, str) and pat:
        try:
            go_regexp.compile(pat)
        except go_regexp.GoRegexpError as e:
            errs.append(Cause("FieldValueInvalid", f"{path}.pattern",
                              f"must be a valid regular expression, but isn't: {e}", render_bad_value(pat)))


def _maps(v: Any) -> list[Mapping[str, Any]]:
    return [x for x in v if isinstance(x, Mapping)] if isinstance(v, list) else []


_NESTED_FORBIDDEN: Final = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested(v: Mapping[str, Any], skip_any_of: bool, lvl: int, path: str,
            errs: list[Cause]) -> None:
    """validateNestedValueValidation."""
    _value_validation(v, skip_any_of, False, lvl, path, errs)
    items = v.get("items")
    if isinstance(items, Mapping):
        _nested(items, False, lvl, f"{path}.items", errs)
    props = v.get("properties")
    if isinstance(props, Mapping):
        for k, p in props.items():
            if isinstance(p, Mapping):
                _nested(p, False, _FIELD, _key(f"{path}.properties", str(k)), errs)
    for key, msg in _NESTED_FORBIDDEN:
        val = v.get(key)
        if val is None or (key != "additionalProperties"
                           and (val is False or val == "" or val == [])):
            continue
        errs.append(Cause("FieldValueForbidden", f"{path}.{key}", msg))
    if isinstance(props, Mapping) and "metadata" in props:
        errs.append(Cause("FieldValueForbidden", _key(f"{path}.properties", "metadata"),
                          "must not be specified in a nested context"))


def _completeness(raw: Mapping[str, Any], path: str, errs: list[Cause]) -> None:
    """validateStructuralCompleteness."""
    items = raw.get("items")
    if isinstance(items, Mapping):
        _completeness(items, f"{path}.items", errs)
    props = raw.get("properties")
    if isinstance(props, Mapping):
        for k, v in props.items():
            if isinstance(v, Mapping):
                _completeness(v, _key(f"{path}.properties", str(k)), errs)
    ap = raw.get("additionalProperties")
    if isinstance(ap, Mapping):
        _completeness(ap, f"{path}.additionalProperties", errs)
    _vv_completeness(raw, raw, path, path, errs)


def _vv_completeness(v: Mapping[str, Any], s: Mapping[str, Any] | None, spath: str, vpath: str,
                     errs: list[Cause]) -> None:
    nt = v.get("not")
    if isinstance(nt, Mapping):
        _nested_completeness(nt, s, spath, f"{vpath}.not", errs)
    for key in ("allOf", "anyOf", "oneOf"):
        for i, x in enumerate(_maps(v.get(key))):
            _nested_completeness(x, s, spath, f"{vpath}.{key}[{i}]", errs)


def _nested_completeness(v: Mapping[str, Any], s: Mapping[str, Any] | None, spath: str,
                         vpath: str, errs: list[Cause]) -> None:
    if s is None:
        errs.append(Cause("FieldValueRequired", spath, f"because it is defined in {vpath}"))
        return
    _vv_completeness(v, s, spath, vpath, errs)
    items = v.get("items")
    if isinstance(items, Mapping):
        sitems = s.get("items")
        _nested_completeness(items, sitems if isinstance(sitems, Mapping) else None,
                             f"{spath}.items", f"{vpath}.items", errs)
    props = v.get("properties")
    if isinstance(props, Mapping):
        sprops = s.get("properties")
        for k, p in props.items():
            if not isinstance(p, Mapping):
                continue
            sp = sprops.get(k) if isinstance(sprops, Mapping) else None
            kp_s = _key(f"{spath}.properties", str(k))
            kp_v = _key(f"{vpath}.properties", str(k))
            if not isinstance(sp, Mapping):
                errs.append(Cause("FieldValueRequired", kp_s, f"because it is defined in {kp_v}"))
            else:
                _nested_completeness(p, sp, kp_s, kp_v, errs)


def _validate_defaults(raw: Mapping[str, Any], path: str, lvl: int, in_meta: bool,
                       errs: list[Cause]) -> None:
    """defaulting.ValidateDefaults: each default valid against, and pruned by, its schema."""
    d = raw.get("default")
    if d is not None and not in_meta:
        node = _Node(raw)
        dpath = f"{path}.default"
        sub: list[Cause] = []
        _validate_node(node, d, "", dpath, sub)
        if isinstance(d, (dict, list)) and node.lists_below:
            _validate_lists(d, node, dpath, sub)
        errs.extend(sub)
        if not sub and isinstance(d, (dict, list)):
            pruned = _deepcopy_json(d)
            out: list[str] = []
            _prune(pruned, node, "", out)
            if out:
                errs.append(Cause("FieldValueInvalid", dpath, "must not have unknown fields",
                                  render_bad_value(d)))
    props = raw.get("properties")
    if isinstance(props, Mapping):
        for k, v in props.items():
            if isinstance(v, Mapping):
                _validate_defaults(v, _key(f"{path}.properties", str(k)), _FIELD,
                                   in_meta or (lvl == _ROOT and k == "metadata"), errs)
    items = raw.get("items")
    if isinstance(items, Mapping):
        _validate_defaults(items, f"{path}.items", _ITEM, in_meta, errs)
    ap = raw.get("additionalProperties")
    if isinstance(ap, Mapping):
        _validate_defaults(ap, f"{path}.additionalProperties", _FIELD, in_meta, errs)


def validate_structural(schema: Mapping[str, Any] | None,
                        path: str = "spec.validation.openAPIV3Schema") -> list[Cause]:
    """The CRD-side checks of an ``openAPIV3Schema`` (the main ones upstream runs).

    In order: the OpenAPI subset CRDs accept (types, no ``$ref``/``id``/
    ``definitions``/``patternProperties``/..., no ``uniqueItems: true``,
    ``additionalProperties`` and ``properties`` exclusive, list/map type
    extensions consistent), then structural-schema invariants (sorted by
    message as upstream: ``type`` required except with int-or-string or
    preserve-unknown-fields, ``items`` for arrays, root metadata restricted to
    name/generateName, nothing but value validations inside
    ``allOf``/``anyOf``/``oneOf``/``not``, every field those mention also
    specified structurally), then, when all that passed, defaults valid and
    pruned. `path` is where the schema sits in the CRD (upstream reports
    ``spec.validation.openAPIV3Schema`` when all versions share one schema).
    """
    if not isinstance(schema, Mapping):
        return []
    errs: list[Cause] = []
    _walk_openapi(schema, path, errs)
    structural: list[Cause] = []
    _structural_invariants(schema, _ROOT, path, structural)
    _completeness(schema, path, structural)
    structural.sort(key=lambda c: c.error())
    errs.extend(structural)
    if not errs:
        _validate_defaults(schema, path, _ROOT, False, errs)
    return errs


# --- selectable fields ---------------------------------------------------------------------

def parse_field_path(json_path: str) -> list[str] | str:
    """Split a simple JSON path (``.spec.color``, ``.spec['a.b']``) into keys.

    Returns the error text upstream's field path parser gives otherwise.
    """
    keys: list[str] = []
    i, n = 0, len(json_path)
    while i < n:
        c = json_path[i]
        if c == ".":
            j = i + 1
            while j < n and json_path[j] not in ".[]":
                j += 1
            if j == i + 1:
                if j >= n:
                    return "unexpected end of JSON path"
                return f"expected [ or . but got: {json_path[j]}"
            keys.append(json_path[i + 1:j])
            i = j
        elif c == "[":
            j = i + 1
            while j < n and json_path[j] not in "[]":
                j += 1
            tok = json_path[i + 1:j]
            if not tok and j >= n:
                return "unexpected end of JSON path"
            if len(tok) < 2 or tok[0] != "'" or tok[-1] != "'":
                return f"expected single quoted string but got {tok}"
            keys.append(tok[1:-1].replace("\\'", "'").replace("\\\\", "\\"))
            if j >= n or json_path[j] != "]":
                return "unexpected end of JSON path"
            i = j + 1
        else:
            j = i
            while j < n and json_path[j] not in ".[]":
                j += 1
            return f"expected [ or . but got: {json_path[i:j] or c}"
    return keys


def _selector_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format(Decimal(repr(v)).normalize(), "f") if math.isfinite(v) else ""
    return ""


def selectable_field_values(obj: Mapping[str, Any],
                            selectable_fields: Sequence[Mapping[str, Any]] | None
                            ) -> dict[str, str]:
    """Values of a CRD version's ``selectableFields`` for one custom resource.

    Keys are the jsonPaths without the leading dot (``spec.color``); values
    are strings as upstream renders them (``true``/``false``, decimal
    integers); an absent or ``null`` field (or one of another type) gives "".
    """
    out: dict[str, str] = {}
    for sf in selectable_fields or ():
        jp = sf.get("jsonPath") if isinstance(sf, Mapping) else None
        if not isinstance(jp, str) or not jp:
            continue
        keys = parse_field_path(jp)
        label = jp.removeprefix(".")
        if isinstance(keys, str):
            out[label] = ""
            continue
        cur: Any = obj
        for k in keys:
            if isinstance(cur, Mapping):
                cur = cur.get(k)
            else:
                cur = None
                break
        out[label] = _selector_value(cur) if cur is not None else ""
    return out
