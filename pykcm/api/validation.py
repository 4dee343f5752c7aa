"""Generic API validation: name formats, object metadata, and field errors.

This is apimachinery's validation layer (pkg/util/validation, pkg/api/validation
and metav1 validation) plus the field-error type that carries every finding.

Data flow: string checkers (``is_dns1123_subdomain`` ...) return lists of
plain messages, worded as upstream words them. Structural validators
(``validate_labels``, ``validate_object_meta`` ...) wrap those messages into
:class:`Cause` values, each naming the field path, the error type and the bad
value rendered the way Go's ``field.Error`` renders it. The API server's
per-kind validation (the strategies of ``pykcm.apiserver.registry``) builds on these, and the
server turns a non-empty list into a 422 ``metav1.Status`` with
:func:`invalid_status` (``details.causes`` from :meth:`Cause.to_status_cause`,
the top-level message from :func:`format_invalid_message`).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "FIELD_IMMUTABLE_ERROR_MSG",
    "IS_NEGATIVE_ERROR_MSG",
    "TOTAL_ANNOTATION_SIZE_LIMIT_B",
    "Cause",
    "GoValue",
    "NameValidator",
    "aggregate_message",
    "duplicate",
    "forbidden",
    "format_invalid_message",
    "go_int_or_string",
    "go_label_selector",
    "go_quote",
    "go_string_map",
    "go_string_slice",
    "internal_error",
    "invalid",
    "invalid_status",
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_ip",
    "is_valid_label_value",
    "is_valid_percent",
    "is_valid_port_name",
    "is_valid_port_num",
    "name_is_dns1035_label",
    "name_is_dns_label",
    "name_is_dns_subdomain",
    "not_found",
    "not_supported",
    "render_value",
    "required",
    "too_long",
    "too_many",
    "validate_annotations",
    "validate_finalizers",
    "validate_immutable",
    "validate_label_selector",
    "validate_labels",
    "validate_nonnegative",
    "validate_object_meta",
    "validate_object_meta_update",
    "validate_owner_references",
]

FIELD_IMMUTABLE_ERROR_MSG: Final = "field is immutable"
IS_NEGATIVE_ERROR_MSG: Final = "must be greater than or equal to 0"
TOTAL_ANNOTATION_SIZE_LIMIT_B: Final = 256 * (1 << 10)

NameValidator = Callable[[str, bool], list[str]]
"""A name check as upstream's ValidateNameFunc: (name, is_generate_name_prefix) -> messages."""


# --- Go value rendering -------------------------------------------------------

_GO_ESCAPES: Final = {
    "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
    "\v": "\\v", "\\": "\\\\", '"': '\\"',
}


def go_quote(s: str) -> str:
    """strconv.Quote: a double-quoted Go string literal."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    out = ['"']
    for ch in s:
        esc = _GO_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            cp = ord(ch)
            if cp < 0x80:
                out.append(f"\\x{cp:02x}")
            elif cp < 0x10000:
                out.append(f"\\u{cp:04x}")
            else:
                out.append(f"\\U{cp:08x}")
    out.append('"')
    return "".join(out)


class GoValue(str):
    """A bad value already rendered the way Go prints it (e.g. ``map[string]string{...}``)."""

    __slots__ = ()


def _go_float(v: float) -> str:
    # %v of a float64 uses the shortest repr, with an exponent at e+21 and beyond.
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    return repr(v).replace("e+0", "e+").replace("e-0", "e-")


def render_value(v: object) -> str:
    """Render a bad value as field.Error prints it (%v / %q / %#v by type)."""
    if isinstance(v, GoValue):
        return str(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, Mapping) and all(isinstance(x, str) for x in v.values()):
        return go_string_map(v)
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return go_string_slice(v)
    return json.dumps(v, separators=(",", ":"), sort_keys=False, default=str)


def _json(v: object) -> GoValue:
    return GoValue(json.dumps(v, separators=(",", ":"), ensure_ascii=False))


# field.Error renders a structured bad value as its JSON encoding (v1.36: json.Marshal first,
# String() or %#v only for what JSON cannot encode); Go sorts map keys.

def go_string_map(m: Mapping[str, str] | None) -> GoValue:
    """A map[string]string as a field error shows it: JSON, keys sorted; nil is null."""
    if m is None:
        return GoValue("null")
    return _json({k: m[k] for k in sorted(m)})


def go_string_slice(vals: Iterable[str] | None) -> GoValue:
    """A []string as a field error shows it: a JSON array; nil is null."""
    if vals is None:
        return GoValue("null")
    return _json(list(vals))


def go_sprintf_slice(vals: Iterable[str]) -> str:
    """fmt's %#v of a []string, for messages that format one themselves."""
    return "[]string{" + ", ".join(go_quote(v) for v in vals) + "}"


def go_int_or_string(v: object) -> GoValue:
    """An intstr.IntOrString as a field error shows it: its JSON (a number or a string)."""
    if isinstance(v, bool) or v is None:
        return GoValue("0")
    if isinstance(v, int):
        return GoValue(str(v))
    return _json(str(v))


def go_label_selector(sel: Mapping[str, Any] | None) -> GoValue:
    """A *metav1.LabelSelector as a field error shows it: its JSON (omitempty fields left
    out); nil is null."""
    if sel is None:
        return GoValue("null")
    out: dict[str, Any] = {}
    ml = sel.get("matchLabels") or {}
    if ml:
        out["matchLabels"] = {k: ml[k] for k in sorted(ml)}
    exprs = []
    for e in sel.get("matchExpressions") or []:
        r: dict[str, Any] = {"key": e.get("key", ""), "operator": e.get("operator", "")}
        if e.get("values"):
            r["values"] = list(e["values"])
        exprs.append(r)
    if exprs:
        out["matchExpressions"] = exprs
    return _json(out)


# --- field errors -------------------------------------------------------------

_TYPE_TEXT: Final = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}
# Types whose message never shows the bad value.
_VALUELESS: Final = frozenset(
    {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"})


@dataclass(frozen=True, slots=True)
class Cause:
    """One field error (apimachinery field.Error), ready for a Status cause.

    ``type`` is the CauseType ("FieldValueInvalid", ...), ``field`` the path
    ("spec.template.spec.containers[0].image"), ``value`` the bad value already
    rendered as Go prints it (None when the message omits it), ``detail`` the
    explanation after the value.
    """

    type: str
    field: str
    detail: str = ""
    value: str | None = None

    def body(self) -> str:
        """field.Error.ErrorBody(): the message without the field path."""
        s = _TYPE_TEXT.get(self.type, self.type)
        if self.type not in _VALUELESS and self.value is not None:
            s = f"{s}: {self.value}"
        if self.detail:
            s = f"{s}: {self.detail}"
        return s

    def error(self) -> str:
        """field.Error.Error(): "<field>: <body>"."""
        return f"{self.field}: {self.body()}"

    def __str__(self) -> str:
        return self.error()

    def to_status_cause(self) -> dict[str, str]:
        """The metav1.StatusCause kube-apiserver sends for this error."""
        out = {"reason": self.type, "message": self.body()}
        if self.field:
            out["field"] = self.field
        return out


def invalid(field: str, value: object, detail: str) -> Cause:
    return Cause("FieldValueInvalid", field, detail, render_value(value))


def required(field: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", field, detail)


def forbidden(field: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", field, detail)


def duplicate(field: str, value: object) -> Cause:
    return Cause("FieldValueDuplicate", field, "", render_value(value))


def not_found(field: str, value: object) -> Cause:
    return Cause("FieldValueNotFound", field, "", render_value(value))


def not_supported(field: str, value: object, valid_values: Sequence[str]) -> Cause:
    detail = ""
    if valid_values:
        detail = "supported values: " + ", ".join(go_quote(v) for v in valid_values)
    return Cause("FieldValueNotSupported", field, detail, render_value(value))


def too_long(field: str, max_length: int) -> Cause:
    return Cause("FieldValueTooLong", field, f"must have at most {max_length} bytes")


def too_many(field: str, actual: int, max_quantity: int) -> Cause:
    return Cause("FieldValueTooMany", field, f"must have at most {max_quantity} items", str(actual))


def internal_error(field: str, detail: str) -> Cause:
    return Cause("InternalError", field, detail)


def aggregate_message(causes: Sequence[Cause]) -> str:
    """ErrorList.ToAggregate().Error(): deduplicated, bracketed when more than one."""
    seen: dict[str, None] = {}
    for c in causes:
        seen.setdefault(c.error(), None)
    msgs = list(seen)
    if not msgs:
        return ""
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


def _qualified_kind(kind: str, group: str | None) -> str:
    if group is None:
        from pykcm.api.resources import BUILTIN_RESOURCES

        group = next((r.group for r in BUILTIN_RESOURCES if r.kind == kind), "")
    return f"{kind}.{group}" if group else kind


def format_invalid_message(kind: str, name: str, causes: Sequence[Cause],
                           *, group: str | None = None) -> str:
    """The message of kube-apiserver's 422: ``Deployment.apps "x" is invalid: ...``.

    `group` defaults to the built-in group of `kind` ("" for core kinds).
    """
    qk = _qualified_kind(kind, group)
    agg = aggregate_message(causes)
    if not agg:
        return f"{qk} {go_quote(name)} is invalid"
    return f"{qk} {go_quote(name)} is invalid: {agg}"


def invalid_status(kind: str, name: str, causes: Sequence[Cause],
                   *, group: str | None = None) -> dict[str, Any]:
    """The full metav1.Status body kube-apiserver returns for a 422 Invalid."""
    if group is None:
        qk = _qualified_kind(kind, None)
        group = qk.partition(".")[2]
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details = {"name": name, "group": group, "kind": kind}
    details["causes"] = [c.to_status_cause() for c in causes]
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format_invalid_message(kind, name, causes, group=group),
        "reason": "Invalid",
        "details": details,
        "code": 422,
    }


# --- string formats -----------------------------------------------------------

def _blen(s: str) -> int:
    """Go's len(): the UTF-8 byte length."""
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _max_len_bytes_error(length: int) -> str:
    # The label key/value checks live in apimachinery's newer `content`
    # package, whose wording counts bytes.
    return f"must be no more than {length} bytes"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    parts = [msg, " (e.g. "]
    for i, ex in enumerate(examples):
        if i > 0:
            parts.append(" or ")
        parts.append(f"'{ex}', ")
    parts.append(f"regex used for validation is '{fmt}')")
    return "".join(parts)


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_ERR: Final = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                             "characters or '-', and must start and end with an alphanumeric character")
_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR: Final = ("a lowercase RFC 1123 subdomain must consist of lower case "
                                 "alphanumeric characters, '-' or '.', and must start and end with "
                                 "an alphanumeric character")
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_ERR: Final = ("a DNS-1035 label must consist of lower case alphanumeric characters "
                             "or '-', start with an alphabetic character, and end with an "
                             "alphanumeric character")
_DNS1035_LABEL_RE: Final = re.compile(_DNS1035_LABEL_FMT)
_LABEL_KEY_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR: Final = ("must consist of alphanumeric characters, '-', '_' or '.', and must start "
                         "and end with an alphanumeric character")
_LABEL_KEY_RE: Final = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_FMT: Final = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR: Final = ("a valid label must be an empty string or consist of alphanumeric "
                           "characters, '-', '_' or '.', and must start and end with an "
                           "alphanumeric character")
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_CONFIG_MAP_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_ERR: Final = ("a valid config key must consist of alphanumeric characters, "
                              "'-', '_' or '.'")
_CONFIG_MAP_KEY_RE: Final = re.compile(_CONFIG_MAP_KEY_FMT)
_PERCENT_FMT: Final = "[0-9]+%"
_PERCENT_RE: Final = re.compile(_PERCENT_FMT)
_PORT_NAME_CHARSET_RE: Final = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER_RE: Final = re.compile("[a-z]")

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1035_LABEL_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63
_LABEL_KEY_NAME_MAX_LENGTH: Final = 63

# Regexes here are applied with fullmatch(): Go's `^...$` on RE2 has no
# "match before a trailing newline" quirk, Python's `$` does.

_MEMO_MAX_ENTRIES: Final = 2048
_MEMO_MAX_LEN: Final = 256


_Check = Callable[[str], list[str]]
_Memo = dict[str, tuple[str, ...]]

# validate_labels reads these two memos directly: a label whose key and value
# are both known to be valid skips both calls.
_QUALIFIED_NAME_MEMO: Final[_Memo] = {}
_LABEL_VALUE_MEMO: Final[_Memo] = {}


def _memoized(memo: _Memo | None = None) -> Callable[[_Check], _Check]:
    """Decorator: remember a string check's messages for recently seen strings.

    Every write re-checks the same strings (label keys and values, container
    names, namespaces), so the checks below are memoized. Each caller gets a
    fresh list, as before. The memo (`memo`, or a new dict) is bounded: it is
    emptied when full, and long strings are checked but not kept, so clients
    cannot pin memory.
    """
    def decorate(check: _Check) -> _Check:
        cache: _Memo = {} if memo is None else memo

        @functools.wraps(check)
        def memoized_check(value: str) -> list[str]:
            if value.__class__ is not str:  # no memo for odd input (str subclasses, non-str)
                return check(value)
            hit = cache.get(value)
            if hit is not None:
                return list(hit) if hit else []
            msgs = check(value)
            if len(value) <= _MEMO_MAX_LEN:
                if len(cache) >= _MEMO_MAX_ENTRIES:
                    cache.clear()
                cache[value] = tuple(msgs)
            return msgs

        return memoized_check

    return decorate


@_memoized()
def is_dns1123_label(value: str) -> list[str]:
    """IsDNS1123Label: a lowercase RFC 1123 label (pod hostnames, namespace names)."""
    errs: list[str] = []
    if _blen(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            # A valid subdomain that is not a label can only be failing on dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_ERR, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


@_memoized()
def is_dns1123_subdomain(value: str) -> list[str]:
    """IsDNS1123Subdomain: a lowercase RFC 1123 subdomain (most object names)."""
    errs: list[str] = []
    if _blen(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


@_memoized()
def is_dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label: an RFC 1035 label (service names)."""
    errs: list[str] = []
    if _blen(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_ERR, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


@_memoized(_QUALIFIED_NAME_MEMO)
def is_qualified_name(value: str) -> list[str]:
    """IsQualifiedName (a label key): optional DNS-subdomain prefix and '/', then a name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif _blen(name) > _LABEL_KEY_NAME_MAX_LENGTH:
        errs.append("name part " + _max_len_bytes_error(_LABEL_KEY_NAME_MAX_LENGTH))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append("name part " + regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT,
                                               "MyName", "my.name", "123-abc"))
    return errs


@_memoized(_LABEL_VALUE_MEMO)
def is_valid_label_value(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 alphanumerics/'-_.' starting and ending alnum."""
    if not value:
        return []
    errs: list[str] = []
    if _blen(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len_bytes_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


@_memoized()
def is_config_map_key(value: str) -> list[str]:
    """IsConfigMapKey: a key of ConfigMap/Secret data."""
    errs: list[str] = []
    if _blen(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _CONFIG_MAP_KEY_RE.fullmatch(value):
        errs.append(regex_error(_CONFIG_MAP_KEY_ERR, _CONFIG_MAP_KEY_FMT,
                                "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    if 1 <= port <= 65535:
        return []
    return [inclusive_range_error(1, 65535)]


@_memoized()
def is_valid_port_name(port: str) -> list[str]:
    """IsValidPortName: IANA_SVC_NAME, at most 15 of [-a-z0-9] with a letter."""
    errs: list[str] = []
    if _blen(port) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER_RE.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


@_memoized()
def is_valid_percent(percent: str) -> list[str]:
    if not _PERCENT_RE.fullmatch(percent):
        return [regex_error("a valid percent string must be a numeric string followed by an "
                            "ending '%'", _PERCENT_FMT, "1%", "93%")]
    return []


@_memoized()
def is_valid_ip(value: str) -> list[str]:
    """IsValidIP (strict form: no leading zeros, no zone)."""
    try:
        if "%" in value:
            raise ValueError(value)
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


# --- name validators (ValidateNameFunc) ---------------------------------------

def _mask_trailing_dash(name: str) -> str:
    # Upstream's maskTrailingDash, quirk included (it drops two characters).
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    if prefix:
        name = _mask_trailing_dash(name)
    return is_dns1123_subdomain(name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    if prefix:
        name = _mask_trailing_dash(name)
    return is_dns1123_label(name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    if prefix:
        name = _mask_trailing_dash(name)
    return is_dns1035_label(name)


def name_is_path_segment(name: str, prefix: bool = False) -> list[str]:
    """path.ValidatePathSegmentName: the only name rule of kinds whose strategy validates no
    object metadata (PodDisruptionBudget): the name must fit in a URL path segment."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{ch}'" for ch in ("/", "%") if ch in name]


# --- structural validators ----------------------------------------------------

def validate_nonnegative(value: int, path: str) -> list[Cause]:
    if value < 0:
        return [invalid(path, value, IS_NEGATIVE_ERROR_MSG)]
    return []


def validate_immutable(new: object, old: object, path: str,
                       *, rendered: object | None = None) -> list[Cause]:
    """ValidateImmutableField: "field is immutable" when new differs from old.

    `rendered` overrides how the new value is printed (defaults to `new`).
    """
    if new != old:
        return [invalid(path, new if rendered is None else rendered, FIELD_IMMUTABLE_ERROR_MSG)]
    return []


def validate_labels(labels: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """metav1 ValidateLabels: qualified-name keys and label values, reported at `path`."""
    errs: list[Cause] = []
    if not labels:
        return errs
    for k, v in labels.items():
        sv = v if isinstance(v, str) else str(v)
        if _QUALIFIED_NAME_MEMO.get(k) == () and _LABEL_VALUE_MEMO.get(sv) == ():
            continue  # both already known to be valid
        for msg in is_qualified_name(k):
            errs.append(invalid(path, k, msg))
        for msg in is_valid_label_value(sv):
            errs.append(invalid(path, sv, msg))
    return errs


def validate_annotations(annotations: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """ValidateAnnotations: case-insensitive qualified-name keys, at most 256 KiB in total."""
    errs: list[Cause] = []
    if not annotations:
        return errs
    total = 0
    for k, v in annotations.items():
        # The rule is QualifiedName except that case doesn't matter.
        for msg in is_qualified_name(k.lower()):
            errs.append(invalid(path, k, msg))
        total += _blen(k) + _blen(v if isinstance(v, str) else str(v))
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return errs


def _json_owner_refs(refs: Sequence[Mapping[str, Any]]) -> str:
    """The references as a field error shows a structured value: JSON, Go field order."""
    out = []
    for ref in refs:
        r: dict[str, Any] = {k: str(ref.get(k) or "") for k in ("apiVersion", "kind", "name",
                                                                 "uid")}
        for k in ("controller", "blockOwnerDeletion"):  # pointers: omitted when nil
            if ref.get(k) is not None:
                r[k] = bool(ref[k])
        out.append(r)
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)


def _owner_ref_string(ref: Mapping[str, Any]) -> str:
    # The protobuf String() of a metav1.OwnerReference.
    def ptr(key: str) -> str:
        v = ref.get(key)
        return "nil" if v is None else f"*{'true' if v else 'false'}"

    return (f"&OwnerReference{{Kind:{ref.get('kind', '')},Name:{ref.get('name', '')},"
            f"UID:{ref.get('uid', '')},APIVersion:{ref.get('apiVersion', '')},"
            f"Controller:{ptr('controller')},BlockOwnerDeletion:{ptr('blockOwnerDeletion')},}}")


def validate_owner_references(refs: Sequence[Mapping[str, Any]] | None,
                              path: str = "metadata.ownerReferences") -> list[Cause]:
    """ValidateOwnerReferences: required fields, no Event owners, at most one controller."""
    errs: list[Cause] = []
    if not refs:
        return errs
    first_controller = ""
    for ref in refs:
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        # schema.FromAPIVersionAndKind: the version is what follows the last '/'.
        group, _, version = api_version.rpartition("/")
        if not version:
            errs.append(invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        if not kind:
            errs.append(invalid(f"{path}.kind", kind, "must not be empty"))
        if not ref.get("name"):
            errs.append(invalid(f"{path}.name", str(ref.get("name") or ""), "must not be empty"))
        if not ref.get("uid"):
            errs.append(invalid(f"{path}.uid", str(ref.get("uid") or ""), "must not be empty"))
        if group == "" and version == "v1" and kind == "Event":
            errs.append(invalid(path, GoValue(_owner_ref_string(ref)),
                                "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name', '')}"
            if first_controller:
                rendered = GoValue(_json_owner_refs(refs))
                errs.append(invalid(
                    path, rendered,
                    "Only one reference can have Controller set to true. Found \"true\" in "
                    f"references for {first_controller} and {current}"))
            else:
                first_controller = current
    return errs


_STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_finalizers(finalizers: Sequence[str] | None, path: str = "metadata.finalizers",
                        *, kube_names: bool = True) -> list[Cause]:
    """ValidateFinalizers, plus (for built-in kinds) the core rule that an
    unprefixed finalizer must be one of the standard names."""
    errs: list[Cause] = []
    if not finalizers:
        return errs
    for f in finalizers:
        for msg in is_qualified_name(f):
            errs.append(invalid(path, f, msg))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(invalid(path, go_string_slice(finalizers),
                            "finalizer orphan and foregroundDeletion cannot be both set"))
    if kube_names:
        # core's ValidateObjectMeta adds only validateKubeFinalizerName per index (the
        # qualified-name checks ran above, on the list's path)
        for i, f in enumerate(finalizers):
            ipath = f"{path}[{i}]"
            if "/" not in f and f not in _STANDARD_FINALIZERS:
                errs.append(invalid(ipath, f, "name is neither a standard finalizer name nor is "
                                              "it fully qualified"))
    return errs


def validate_object_meta(meta: Mapping[str, Any] | None, *, namespaced: bool,
                         name_validator: NameValidator = name_is_dns_subdomain,
                         path: str = "metadata") -> list[Cause]:
    """ValidateObjectMeta: name/generateName, namespace presence, labels,
    annotations, ownerReferences and finalizers.

    The server generates `name` from `generateName` before validating, as
    kube-apiserver does, so both may be present here.
    """
    meta = meta or {}
    errs: list[Cause] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        for msg in name_validator(generate_name, True):
            errs.append(invalid(f"{path}.generateName", generate_name, msg))
    name = meta.get("name") or ""
    if not name:
        errs.append(required(f"{path}.name", "name or generateName is required"))
    else:
        for msg in name_validator(name, False):
            errs.append(invalid(f"{path}.name", name, msg))
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(required(f"{path}.namespace"))
        else:
            for msg in name_is_dns_label(namespace, False):
                errs.append(invalid(f"{path}.namespace", namespace, msg))
    elif namespace:
        errs.append(forbidden(f"{path}.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool):
        errs.extend(validate_nonnegative(generation, f"{path}.generation"))
    _validate_meta_lists(meta, path, errs)
    return errs


def _validate_meta_lists(meta: Mapping[str, Any], path: str, errs: list[Cause]) -> None:
    # Labels, annotations, ownerReferences and finalizers; each validator
    # accepts an empty value, which most objects have for most of these, so
    # it is only called (and its path built) when there is something to check.
    labels, annotations = meta.get("labels"), meta.get("annotations")
    refs, finalizers = meta.get("ownerReferences"), meta.get("finalizers")
    if labels:
        errs.extend(validate_labels(labels, f"{path}.labels"))
    if annotations:
        errs.extend(validate_annotations(annotations, f"{path}.annotations"))
    if refs:
        errs.extend(validate_owner_references(refs, f"{path}.ownerReferences"))
    if finalizers:
        errs.extend(validate_finalizers(finalizers, f"{path}.finalizers"))


def validate_object_meta_update(new: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
                                path: str = "metadata") -> list[Cause]:
    """The parts of ValidateObjectMetaUpdate the server does not do itself.

    Name, namespace, uid, creationTimestamp and resourceVersion checks are the
    server's; this covers finalizers on a deleting object, generation going
    backwards, and the content of labels, annotations, ownerReferences and
    finalizers.
    """
    new = new or {}
    old = old or {}
    errs: list[Cause] = []
    if old.get("deletionTimestamp"):
        old_f = set(old.get("finalizers") or [])
        extra = sorted(set(new.get("finalizers") or []) - old_f)
        if extra:
            errs.append(forbidden(f"{path}.finalizers",
                                  "no new finalizers can be added if the object is being deleted, "
                                  f"found new finalizers {go_sprintf_slice(extra)}"))
    ng, og = new.get("generation") or 0, old.get("generation") or 0
    if isinstance(ng, int) and isinstance(og, int) and ng < og:
        errs.append(invalid(f"{path}.generation", ng, "must not be decremented"))
    _validate_meta_lists(new, path, errs)
    return errs


_SELECTOR_OPS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(sel: Mapping[str, Any] | None, path: str,
                            *, allow_invalid_label_value: bool = False) -> list[Cause]:
    """metav1 ValidateLabelSelector for a dict-form LabelSelector."""
    errs: list[Cause] = []
    if sel is None:
        return errs
    errs.extend(validate_labels(sel.get("matchLabels"), f"{path}.matchLabels"))
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        ipath = f"{path}.matchExpressions[{i}]"
        op = expr.get("operator", "")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(required(f"{ipath}.values",
                                     "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(f"{ipath}.values",
                                      "may not be specified when `operator` is 'Exists' or "
                                      "'DoesNotExist'"))
        else:
            errs.append(invalid(f"{ipath}.operator", op, "not a valid selector operator"))
        key = expr.get("key", "")
        for msg in is_qualified_name(key):
            errs.append(invalid(f"{ipath}.key", key, msg))
        if not allow_invalid_label_value:
            for j, v in enumerate(values):
                for msg in is_valid_label_value(v):
                    errs.append(invalid(f"{ipath}.values[{j}]", v, msg))
    return errs
