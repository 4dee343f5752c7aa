"""Go's typed decoding of a request body: what kube-apiserver's JSON decoder refuses, and how.

kube-apiserver decodes a body into the Go struct of its kind before anything
else runs; a value of the wrong JSON type never reaches defaulting,
validation or storage. pykcm keeps objects as JSON, so this module checks a
decoded body against the Go declarations (`_data/go_types.json`, generated
by `tools/gen_go_types.py` from k8s.io/api's types.go) and raises the error
Go's `encoding/json` (sigs.k8s.io/json) would report:

    json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string
    json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32

Data flow: handlers.py decodes a JSON/YAML body → :func:`check_object` (a
built-in kind: the struct of its group/version/kind) or :func:`check_struct`
(DeleteOptions, Scale, Binding) walks it in document order → the first type
error, unless a hand-written decoder (`metav1.Time`, `resource.Quantity`,
`intstr.IntOrString`, `metav1.Duration`) fails first: those end the decoding
at once, as Go's do, so their error wins. PATCH checks the patched object the
same way (rest_storage.py words it as upstream's patch error).

The table also gives Go's `omitempty` per field, which :func:`drop_go_empty`
applies to a status written by a client: Go's encoder leaves out an
`omitempty` field at its zero value (`readyReplicas: 0`), so such a field
never reaches storage on kube-apiserver.

Deliberate deviations: the literal of a refused number is Python's rendering
of the decoded value (`1e+100`), not the body's text; a base64 error in a
`[]byte` field is left to the per-kind checks in handlers.py.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
from pathlib import Path
from typing import Any, Final

from pykcm.api.go_duration import GoDurationError, parse_go_duration
from pykcm.api.go_spew import split_map_type
from pykcm.api.validation import go_quote
from pykcm.apiserver.registry.defaults import parse_quantity

__all__ = ["GoDecodeError", "check_object", "check_struct", "drop_go_empty", "go_encoding_order",
           "kind_struct", "zero_nulls"]

_DATA: Final = Path(__file__).resolve().parent.parent / "_data" / "go_types.json.gz"

QUANTITY_MESSAGE: Final = ("quantities must match the regular expression "
                           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")

_INT_RANGES: Final = {
    "int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
    "int64": (-2**63, 2**63 - 1), "int": (-2**63, 2**63 - 1), "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
    "uint": (0, 2**64 - 1),
}
_FLOATS: Final = frozenset({"float32", "float64"})
F_OMITEMPTY, F_INLINE, F_OMITZERO = 1, 2, 4


class GoDecodeError(ValueError):
    """A body Go's decoder refuses; str() is the error text Go gives."""


class _Abort(Exception):
    """A hand-written UnmarshalJSON failed: decoding stops here (its error wins)."""


# -- the table -----------------------------------------------------------------------------

class _Struct:
    """One Go struct: its JSON fields (inline structs flattened) and its short name."""

    __slots__ = ("fields", "name", "order")

    def __init__(self, name: str) -> None:
        self.name = name
        # json name -> (type, flags, Go names of the inline structs on the way)
        self.fields: dict[str, tuple[str, int, tuple[str, ...]]] = {}
        self.order: list[str] = []


class _Table:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw_structs: dict[str, list[list[Any]]] = raw["structs"]
        self.named: dict[str, str] = raw["named"]
        self.kinds: dict[str, str] = raw["kinds"]
        self._structs: dict[str, _Struct] = {}

    def struct(self, fq: str) -> _Struct:
        st = self._structs.get(fq)
        if st is None:
            st = _Struct(fq.rsplit(".", 1)[-1])
            self._flatten(fq, (), st)
            self._structs[fq] = st
        return st

    def _flatten(self, fq: str, via: tuple[str, ...], into: _Struct) -> None:
        for name, typ, flags in self.raw_structs.get(fq, ()):
            if flags & F_INLINE:
                inner = typ.lstrip("*")
                self._flatten(inner, (*via, inner.rsplit(".", 1)[-1]), into)
            elif name not in into.fields:
                into.fields[name] = (typ, flags, via)
                into.order.append(name)


@functools.cache
def _table() -> _Table:
    with gzip.open(_DATA, "rt", encoding="utf-8") as f:
        return _Table(json.load(f))


def kind_struct(group: str, version: str, kind: str) -> str | None:
    """The Go struct of a built-in kind ("core/v1.Pod"), None if pykcm has no table for it."""
    gv = f"{group}/{version}" if group else version
    return _table().kinds.get(f"{gv}/{kind}")


# -- Go type names -------------------------------------------------------------------------

def go_type_name(t: str) -> str:
    """reflect.Type.String() of a qualified type expression ("v1.PullPolicy", "[]uint8")."""
    if t.startswith("*"):
        return "*" + go_type_name(t[1:])
    if t.startswith("[]"):
        return "[]" + go_type_name(t[2:])
    if t.startswith("map["):
        k, v = split_map_type(t)
        return f"map[{go_type_name(k)}]{go_type_name(v)}"
    if "." in t:
        pkg, _, name = t.rpartition(".")
        return f"{pkg.rsplit('/', 1)[-1]}.{name}"
    return t


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


# -- checking ------------------------------------------------------------------------------

class _Walk:
    """One decoding: the first saved type error, Go's error context per value.

    `unstructured`: word errors as runtime.DefaultUnstructuredConverter does (a strategic
    merge patch's result is converted from a map, not decoded from JSON).
    """

    __slots__ = ("first", "table", "unstructured")

    def __init__(self, table: _Table, unstructured: bool = False) -> None:
        self.table = table
        self.first: str | None = None
        self.unstructured = unstructured

    def type_error(self, v: Any, t: str, struct: str, path: tuple[str, ...],
                   literal: bool = False) -> str:
        if self.unstructured:
            return self._converter_error(v, t)
        what = _json_type(v)
        if literal and what == "number":
            what = f"number {_number_literal(v)}"
        if struct:
            return (f"json: cannot unmarshal {what} into Go struct field "
                    f"{struct}.{'.'.join(path)} of type {go_type_name(t)}")
        return f"json: cannot unmarshal {what} into Go value of type {go_type_name(t)}"

    def _converter_error(self, v: Any, t: str) -> str:
        u = self.table.named.get(t, t)
        src_kind = {"array": "slice", "object": "map", "number": "int64"}.get(_json_type(v),
                                                                           _json_type(v))
        if isinstance(v, float):
            src_kind = "float64"
        if u.startswith("map["):
            return f"cannot restore map from {src_kind}"
        if u.startswith("[]"):
            return f"cannot restore slice from {src_kind}"
        if u in self.table.raw_structs:
            return f"cannot restore struct from: {src_kind}"
        # scalars: Go's ConvertibleTo (an integer converts to a string, nothing else crosses)
        numeric = u in _INT_RANGES or u in _FLOATS
        if src_kind in ("int64", "float64") and (numeric or u == "string"):
            return f"cannot convert {src_kind} to {go_type_name(t)}"
        return f"unrecognized type: {u}"

    def save(self, msg: str) -> None:
        if self.first is None:
            self.first = msg

    def value(self, v: Any, t: str, struct: str, path: tuple[str, ...]) -> None:
        if v is None:
            return  # null leaves Go's zero value
        while t.startswith("*"):
            t = t[1:]
        special = _SPECIAL.get(t)
        if special is not None:
            special(self, v, struct, path)
            return
        underlying = self.table.named.get(t)
        if underlying is not None:
            self._value_of(v, t, underlying, struct, path)
            return
        self._value_of(v, t, t, struct, path)

    def _value_of(self, v: Any, shown: str, t: str, struct: str,
                  path: tuple[str, ...]) -> None:
        """`shown` is the type named in errors, `t` its underlying type."""
        special = _SPECIAL.get(t)
        if special is not None:
            special(self, v, struct, path)
            return
        if t == "string":
            if not isinstance(v, str):
                self.save(self.type_error(v, shown, struct, path))
        elif t == "bool":
            if not isinstance(v, bool):
                self.save(self.type_error(v, shown, struct, path))
        elif t in _INT_RANGES:
            lo, hi = _INT_RANGES[t]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.save(self.type_error(v, shown, struct, path))
            elif isinstance(v, float) or not lo <= v <= hi:
                if self.unstructured and not (isinstance(v, float) and v != math.trunc(v)):
                    return  # the converter converts (and truncates), as Go's Convert does
                self.save(self.type_error(v, shown, struct, path, literal=True))
        elif t in _FLOATS:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.save(self.type_error(v, shown, struct, path))
        elif t == "interface{}":
            return
        elif t == "[]uint8":
            if isinstance(v, list):  # Go decodes an array of numbers into []byte too
                for x in v:
                    self.value(x, "uint8", struct, path)
            elif not isinstance(v, str):
                self.save(self.type_error(v, shown, struct, path))
        elif t.startswith("[]"):
            if not isinstance(v, list):
                self.save(self.type_error(v, shown, struct, path))
                return
            elem = t[2:]
            for x in v:
                self.value(x, elem, struct, path)
        elif t.startswith("map["):
            if not isinstance(v, dict):
                self.save(self.type_error(v, shown, struct, path))
                return
            _, elem = split_map_type(t)
            for x in v.values():
                self.value(x, elem, struct, path)
        elif t in self.table.raw_structs:
            if not isinstance(v, dict):
                self.save(self.type_error(v, shown, struct, path))
                return
            self.struct(v, t, path)
        # an unknown type (none in the table): nothing to check

    def struct(self, v: dict[str, Any], fq: str, path: tuple[str, ...]) -> None:
        st = self.table.struct(fq)
        fields = st.fields
        for key, x in v.items():
            f = fields.get(key)
            if f is None:
                continue  # unknown fields are dropped (fieldValidation reports them)
            typ, _flags, via = f
            self.value(x, typ, st.name, (*path, *via, key))


def _number_literal(v: Any) -> str:
    if isinstance(v, float):
        if math.isinf(v) or math.isnan(v):
            return str(v)
        return repr(v)
    return str(v)


# -- the hand-written decoders --------------------------------------------------------------

def _time(layout_micro: bool) -> Any:
    def check(w: _Walk, v: Any, struct: str, path: tuple[str, ...]) -> None:
        if not isinstance(v, str):
            raise _Abort(w.type_error(v, "string", struct, path))
        err = parse_rfc3339_error(v, micro=layout_micro)
        if err:
            raise _Abort(err)
    return check


def _quantity(w: _Walk, v: Any, struct: str, path: tuple[str, ...]) -> None:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise _Abort(QUANTITY_MESSAGE)
    try:
        ok = parse_quantity(v) is not None
    except ArithmeticError:  # an exponent past Decimal's range
        ok = False
    if not ok:
        raise _Abort(QUANTITY_MESSAGE)


def _int_or_string(w: _Walk, v: Any, struct: str, path: tuple[str, ...]) -> None:
    if isinstance(v, str):
        return
    lo, hi = _INT_RANGES["int32"]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Abort(w.type_error(v, "int32", struct, path))
    if isinstance(v, float) or not lo <= v <= hi:
        raise _Abort(w.type_error(v, "int32", struct, path, literal=True))


def _duration(w: _Walk, v: Any, struct: str, path: tuple[str, ...]) -> None:
    if not isinstance(v, str):
        raise _Abort(w.type_error(v, "string", struct, path))
    try:
        parse_go_duration(v)  # metav1.Duration's UnmarshalJSON: time.ParseDuration's error
    except GoDurationError as e:
        raise _Abort(str(e)) from None


def _anything(w: _Walk, v: Any, struct: str, path: tuple[str, ...]) -> None:
    return


_SPECIAL: Final = {
    "meta/v1.Time": _time(False),
    "meta/v1.MicroTime": _time(True),
    "resource.Quantity": _quantity,
    "intstr.IntOrString": _int_or_string,
    "meta/v1.Duration": _duration,
    "meta/v1.FieldsV1": _anything,
    "runtime.RawExtension": _anything,
}


# -- Go's time.Parse of RFC 3339, for its error messages --------------------------------------

_RFC3339: Final = "2006-01-02T15:04:05Z07:00"
_RFC3339_MICRO: Final = "2006-01-02T15:04:05.000000Z07:00"


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_rfc3339_error(value: str, micro: bool = False) -> str:
    """"" if Go's time.Parse(RFC3339) accepts `value`, else its error text."""
    layout = _RFC3339_MICRO if micro else _RFC3339
    rest = value

    def cannot(elem: str) -> str:
        return (f"parsing time {go_quote(value)} as {go_quote(layout)}: cannot parse "
                f"{go_quote(rest)} as {go_quote(elem)}")

    def out_of_range(what: str) -> str:
        return f"parsing time {go_quote(value)}: {what} out of range"

    def digits(n: int, fixed: bool) -> tuple[int, str] | None:
        if not rest[:1].isdigit() or not rest[:1].isascii():
            return None
        if fixed or (len(rest) > 1 and rest[1].isdigit() and rest[1].isascii()):
            chunk = rest[:n]
            if len(chunk) < n or not (chunk.isdigit() and chunk.isascii()):
                return None
            return int(chunk), rest[n:]
        return int(rest[0]), rest[1:]

    steps: list[tuple[str, int, bool, str]] = [
        ("2006", 4, True, ""), ("01", 2, True, "month"), ("02", 2, True, "day"),
        ("15", 2, False, "hour"), ("04", 2, True, "minute"), ("05", 2, True, "second")]
    seps = ["", "-", "-", "T", ":", ":"]
    values: dict[str, int] = {}
    for (elem, n, fixed, name), sep in zip(steps, seps, strict=True):
        if sep:
            if not rest.startswith(sep):
                return cannot(sep)
            rest = rest[len(sep):]
        if elem == "2006":
            if len(rest) < 4 or not (rest[:4].isdigit() and rest[:4].isascii()):
                return cannot(elem)
            values["year"], rest = int(rest[:4]), rest[4:]
            continue
        got = digits(n, fixed)
        if got is None:
            return cannot(elem)
        values[name], rest = got
        limit = {"month": 12, "day": 31, "hour": 23, "minute": 59, "second": 59}[name]
        low = 1 if name in ("month", "day") else 0
        if not low <= values[name] <= limit:
            return out_of_range(name)
    if micro:
        frac = rest[:7]
        if len(frac) < 7 or frac[0] != "." or not (frac[1:].isdigit() and frac[1:].isascii()):
            return cannot(".000000")
        rest = rest[7:]
    elif len(rest) >= 2 and rest[0] in ".," and rest[1].isdigit():
        n = 2
        while n < len(rest) and rest[n].isdigit():
            n += 1
        rest = rest[n:]
    if rest[:1] == "Z":
        rest = rest[1:]
    else:
        zone = rest[:6]
        if (len(zone) < 6 or zone[3] != ":" or zone[0] not in "+-"
                or not (zone[1:3] + zone[4:6]).isdigit()):
            return cannot("Z07:00")
        rest = rest[6:]
    if rest:
        return f"parsing time {go_quote(value)}: extra text: {go_quote(rest)}"
    if values["day"] > _days_in(values["month"], values["year"]):
        return out_of_range("day")
    return ""


# -- entry points ---------------------------------------------------------------------------

def check_struct(obj: Any, fq: str, unstructured: bool = False) -> None:
    """Raise GoDecodeError if Go could not decode `obj` into struct `fq` ("meta/v1.DeleteOptions");
    `unstructured`: as the unstructured converter words it (strategic merge patch)."""
    table = _table()
    if fq not in table.raw_structs:
        return
    w = _Walk(table, unstructured)
    try:
        w._value_of(obj, fq, fq, "", ())
    except _Abort as exc:
        raise GoDecodeError(str(exc)) from None
    except RecursionError:
        raise GoDecodeError("exceeded max depth") from None
    if w.first is not None:
        raise GoDecodeError(w.first)


def check_object(group: str, version: str, kind: str, obj: Any) -> None:
    """check_struct for a built-in kind; kinds without a table (custom resources) pass."""
    fq = kind_struct(group, version, kind)
    if fq is not None:
        check_struct(obj, fq)


def drop_go_empty(obj: Any, fq: str) -> None:
    """Remove, in place and at any depth, the `omitempty` fields at their Go zero value
    (0, false, "", a nil or empty list or map), as Go's encoder leaves them out."""
    table = _table()
    if isinstance(obj, dict) and fq in table.raw_structs:
        _drop(_plans(table), obj, fq)


# What a field is, for omitempty: the kind of zero that empties it, and where to recurse.
_E_NEVER, _E_PTR, _E_COLL, _E_STR, _E_BOOL, _E_NUM = range(6)
# field name -> (omitempty, empty kind, child struct or "", child is: 0 struct, 1 list, 2 map)
_Plan = dict[str, tuple[bool, int, str, int]]


@functools.cache
def _plans(table: _Table) -> dict[str, _Plan]:
    return {}


def _plan(table: _Table, plans: dict[str, _Plan], fq: str) -> _Plan:
    plan = plans.get(fq)
    if plan is not None:
        return plan
    plan = plans[fq] = {}
    for key, (typ, flags, _via) in table.struct(fq).fields.items():
        u = table.named.get(typ, typ)
        if typ.startswith("*"):
            empty = _E_PTR
        elif typ in _SPECIAL or u in _SPECIAL or u in table.raw_structs:
            empty = _E_NEVER
        elif u.startswith(("[]", "map[")):
            empty = _E_COLL
        elif u == "string":
            empty = _E_STR
        elif u == "bool":
            empty = _E_BOOL
        elif u in _INT_RANGES or u in _FLOATS:
            empty = _E_NUM
        else:
            empty = _E_NEVER
        base = table.named.get(typ.lstrip("*"), typ.lstrip("*"))
        child, how = "", 0
        if base in table.raw_structs:
            child, how = base, 0
        elif base.startswith("[]"):
            elem = base[2:].lstrip("*")
            elem = table.named.get(elem, elem)
            if elem in table.raw_structs:
                child, how = elem, 1
        elif base.startswith("map["):
            elem = split_map_type(base)[1].lstrip("*")
            elem = table.named.get(elem, elem)
            if elem in table.raw_structs:
                child, how = elem, 2
        plan[key] = (bool(flags & F_OMITEMPTY), empty, child, how)
    return plan


def _drop(plans: dict[str, _Plan], obj: dict[str, Any], fq: str) -> None:
    plan = plans.get(fq) or _plan(_table(), plans, fq)
    dead = None
    for key, x in obj.items():
        f = plan.get(key)
        if f is None:
            continue
        omit, empty, child, how = f
        if omit and empty:
            if x is None:
                gone = True
            elif empty == _E_COLL:
                gone = x.__class__ in (list, dict, str) and not x
            elif empty == _E_STR:
                gone = x == ""
            elif empty == _E_BOOL:
                gone = x is False
            elif empty == _E_NUM:
                gone = x == 0 and x.__class__ is not bool
            else:
                gone = False
            if gone:
                if dead is None:
                    dead = [key]
                else:
                    dead.append(key)
                continue
        if child:
            if how == 0:
                if x.__class__ is dict:
                    _drop(plans, x, child)
            elif how == 1:
                if x.__class__ is list:
                    for e in x:
                        if e.__class__ is dict:
                            _drop(plans, e, child)
            elif x.__class__ is dict:
                for e in x.values():
                    if e.__class__ is dict:
                        _drop(plans, e, child)
    if dead:
        for key in dead:
            del obj[key]


def go_encoding_order(obj: Any, fq: str, touched: set[tuple[str, ...]]) -> Any:
    """`obj` with its keys in the order Go's encoder writes them: a struct's fields in
    declaration order, a map's keys sorted; a container at a path in `touched` (one a patch
    library decoded into a Go map) sorted too. Builds new dicts, shares the leaves."""
    table = _table()
    return _order(table, obj, fq, (), touched)


def _order(table: _Table, v: Any, t: str, path: tuple[str, ...],
           touched: set[tuple[str, ...]]) -> Any:
    t = t.lstrip("*")
    u = table.named.get(t, t)
    if isinstance(v, list):
        elem = u[2:] if u.startswith("[]") else ""
        return [_order(table, x, elem, (*path, str(i)), touched) for i, x in enumerate(v)]
    if not isinstance(v, dict):
        return v
    if u in table.raw_structs and path not in touched:
        st = table.struct(u)
        keys = [k for k in st.order if k in v] + [k for k in v if k not in st.fields]
        return {k: _order(table, v[k], st.fields[k][0] if k in st.fields else "",
                          (*path, k), touched) for k in keys}
    elem = ""
    if u.startswith("map["):
        elem = split_map_type(u)[1]
    elif u in table.raw_structs:
        st = table.struct(u)
        return {k: _order(table, v[k], st.fields[k][0] if k in st.fields else "", (*path, k),
                          touched) for k in sorted(v)}
    return {k: _order(table, v[k], elem, (*path, k), touched) for k in sorted(v)}


def zero_nulls(obj: Any, fq: str) -> None:
    """Replace, in place, a null list element or map value by the Go zero value of its type
    (`finalizers: [null]` decodes to `[""]`, `ownerReferences: [null]` to `[{}]`): Go's
    decoder leaves a zero value there, never a null. Call after check_struct."""
    table = _table()
    if isinstance(obj, dict) and fq in table.raw_structs:
        _zero(table, obj, fq)


def _zero_value(table: _Table, t: str) -> Any:
    if t.startswith(("*", "[]", "map[")) or t in ("interface{}",) or t in _SPECIAL:
        return None  # a nil pointer, slice or map (and the hand-decoded types) stays null
    u = table.named.get(t, t)
    if u.startswith(("[]", "map[")) or u in _SPECIAL:
        return None
    if u == "string":
        return ""
    if u == "bool":
        return False
    if u in _INT_RANGES or u in _FLOATS:
        return 0
    if u in table.raw_structs:
        return {}
    return None


def _zero(table: _Table, v: Any, t: str) -> None:
    t = t.lstrip("*")
    u = table.named.get(t, t)
    if isinstance(v, dict) and u in table.raw_structs:
        st = table.struct(u)
        for key, x in v.items():
            f = st.fields.get(key)
            if f is not None and x is not None:
                _zero(table, x, f[0])
    elif isinstance(v, list) and u.startswith("[]"):
        elem = u[2:]
        for i, x in enumerate(v):
            if x is None:
                v[i] = _zero_value(table, elem)
            else:
                _zero(table, x, elem)
    elif isinstance(v, dict) and u.startswith("map["):
        _, elem = split_map_type(u)
        for key, x in v.items():
            if x is None:
                v[key] = _zero_value(table, elem)
            else:
                _zero(table, x, elem)
