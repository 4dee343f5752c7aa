"""kube-controller-manager's ``controller.ComputeHash``: the hash of a pod template, as upstream.

Upstream (``pkg/controller`` ComputeHash over ``pkg/util/hash`` DeepHashObject)
prints the Go struct ``v1.PodTemplateSpec`` with ``go-spew`` (``%#v``, sorted
map keys, no methods) into an FNV-32a hasher, appends ``collisionCount`` (when
set) as eight little-endian bytes, and renders the 32-bit sum's decimal
digits with ``rand.SafeEncodeString``. The DaemonSet controller names its
ControllerRevisions ``<daemonset>-<hash>`` and labels its pods
``controller-revision-hash: <hash>`` with it, so pykcm must produce the very
same text from the JSON wire form to give the same names.

Data flow::

    template (wire dict) ──► Go value: the struct layout of PodTemplateSpec and every
        │                   struct it reaches (fields in declaration order, Go names and
        │                   types: _data/deep_hash_types.json, tools/gen_deep_hash_schema.py)
        │                   JSON absent → the Go zero value
        ▼
    spew's %#v text: "(v1.PodTemplateSpec){ObjectMeta:(v1.ObjectMeta){Name:(string) ..."
        │ FNV-32a (+ collisionCount as uint32 LE + 4 zero bytes)
        ▼
    decimal digits of the sum ──SafeEncodeString──► "5d8c7b9f6"

What the Go value is: the object kube-controller-manager holds came through
protobuf, so an empty list or map is nil (protobuf does not tell empty from
absent), a ``resource.Quantity`` is ``ParseQuantity`` of its string (its
internal int64/inf.Dec amount, cached string and format are printed), an
``IntOrString`` is its type and value, a ``metav1.Time`` in a template is
zero. Strings are printed raw (spew's ``%v``), pointers as ``(*T)`` before
their value or ``<nil>``, nested values of lists and maps without their type.

Deviations: a non-zero ``metav1.Time`` (never in a template the API server
accepted) and ``managedFields`` are printed approximately (upstream prints a
``time.Location``'s internals).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from typing import Any, Final

from pykcm.api.go_spew import GoLayout

__all__ = ["compute_hash", "deep_hash_text", "fnv32a", "parse_quantity", "safe_encode_string"]

SAFE_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
"""apimachinery ``util/rand`` alphabet: no vowels (no words), no 0/1/3 (no look-alikes)."""

_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193


def fnv32a(data: bytes, h: int = _FNV32_OFFSET) -> int:
    """FNV-1a, 32 bits (Go ``hash/fnv.New32a``); ``h`` continues a running sum."""
    for b in data:
        h = ((h ^ b) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode_string(s: str) -> str:
    """Map each byte of ``s`` into :data:`SAFE_ALPHANUMS` (``rand.SafeEncodeString``)."""
    n = len(SAFE_ALPHANUMS)
    return "".join(SAFE_ALPHANUMS[b % n] for b in s.encode())


# -- the Go layout ------------------------------------------------------------------------

# Types with hand-written Go code, laid out here as the structs spew sees.
_VIRTUAL_STRUCTS: Final[dict[str, list[tuple[str, str]]]] = {
    "resource.Quantity": [("i", "resource.int64Amount"), ("d", "resource.infDecAmount"),
                          ("s", "string"), ("Format", "resource.Format")],
    "resource.int64Amount": [("value", "int64"), ("scale", "resource.Scale")],
    "resource.infDecAmount": [("Dec", "*inf.Dec")],
    "inf.Dec": [("unscaled", "big.Int"), ("scale", "inf.Scale")],
    "big.Int": [("neg", "bool"), ("abs", "big.nat")],
    "intstr.IntOrString": [("Type", "intstr.Type"), ("IntVal", "int32"), ("StrVal", "string")],
    "meta/v1.Time": [("Time", "time.Time")],
    "time.Time": [("wall", "uint64"), ("ext", "int64"), ("loc", "*time.Location")],
    "time.Location": [("name", "string")],
    "meta/v1.FieldsV1": [("Raw", "[]uint8")],
}
_VIRTUAL_NAMED: Final[dict[str, str]] = {
    "resource.Format": "string", "resource.Scale": "int32", "inf.Scale": "int32",
    "big.nat": "[]big.Word", "big.Word": "uint", "intstr.Type": "int64",
}


# -- resource.Quantity as ParseQuantity leaves it ------------------------------------------

_DEC_SUFFIXES: Final = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12,
                        "P": 15, "E": 18}
_BIN_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_INT64: Final = (1 << 63) - 1


def _split_quantity(s: str) -> tuple[bool, str, str, str, str]:
    """upstream parseQuantityString: (positive, value, num, denom, suffix)."""
    positive, pos, end = True, 0, len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] != "-"
        pos += 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    i = pos
    while i < end and s[i].isdigit():
        i += 1
    num = s[pos:i] or "0"
    if i >= end:
        return positive, s, num, "", ""
    pos, denom = i, ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i].isdigit():
            i += 1
        denom = s[pos:i]
        if i >= end:
            return positive, s, num, denom, ""
        pos = i
    value = s[:pos]
    suffix = s[pos:]
    if not re.fullmatch(r"[eEinumkKMGTP]*[-+]?[0-9]*", suffix):
        raise ValueError(f"quantities must match the regular expression: {s!r}")
    return positive, value, num, denom, suffix


def _interpret_suffix(suf: str) -> tuple[int, int, str]:
    if suf in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suf], "DecimalSI"
    if suf in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suf], "BinarySI"
    if len(suf) > 1 and suf[0] in "eE":
        try:
            return 10, int(suf[1:]), "DecimalExponent"
        except ValueError:
            pass
    raise ValueError(f"unable to parse quantity's suffix {suf!r}")


def _float32_trunc_3_10(exponent: int) -> int:
    # int32(float32(exponent)*3/10): exact for the exponents that occur (<= 60)
    return int(exponent * 3 / 10)


def parse_quantity(s: str) -> dict[str, Any]:
    """The Go fields of ``resource.ParseQuantity(s)``: ``i`` (value, scale), ``d``
    (an inf.Dec as unscaled/scale or None), ``s`` (cached string) and ``Format``."""
    zero_i = {"value": 0, "scale": 0}
    if not s:
        raise ValueError("quantities must not be empty")
    if s == "0":
        return {"i": zero_i, "d": {"Dec": None}, "s": s, "Format": "DecimalSI"}
    positive, value, num, denom, suf = _split_quantity(s)
    base, exponent, fmt = _interpret_suffix(suf)
    precision, scale, mantissa = 0, 0, 1
    if fmt in ("DecimalExponent", "DecimalSI"):
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - _float32_trunc_3_10(exponent) - 1
    else:
        precision = -1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            v = int(shifted)
            if v > _MAX_INT64:
                raise ValueError("unable to parse numeric part of quantity")
            result = v * mantissa
            if -(1 << 63) <= result <= _MAX_INT64:
                if not positive:
                    result = -result
                cached = ""
                if fmt == "BinarySI":
                    if exponent % 10 == 0 and v & 0x07:
                        cached = s
                elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                    cached = s
                return {"i": {"value": result, "scale": scale}, "d": {"Dec": None},
                        "s": cached, "Format": fmt}
    # The inf.Dec path: exact decimal, suffix folded in, rounded up to nano units.
    try:
        amount = Decimal(value)
    except InvalidOperation as exc:
        raise ValueError("unable to parse numeric part of quantity") from exc
    negative = amount < 0
    amount = abs(amount)
    amount = amount.scaleb(exponent) if base == 10 else amount * (Decimal(2) ** exponent)
    unscaled = int((amount * Decimal(10) ** 9).to_integral_value(rounding="ROUND_CEILING"))
    dec_scale = 9
    if amount == 0:
        unscaled, dec_scale = 0, 9
    if fmt == "BinarySI" and amount > _MAX_INT64:
        unscaled, dec_scale = _MAX_INT64, 0
    if fmt == "BinarySI" and 0 < amount < 1:
        fmt = "DecimalSI"
    return {"i": zero_i, "d": {"Dec": {"unscaled": {"neg": negative and unscaled != 0,
                                                     "abs": _nat_words(unscaled)},
                                        "scale": dec_scale}},
            "s": "", "Format": fmt}


def _nat_words(n: int) -> list[int]:
    words = []
    while n:
        words.append(n & 0xFFFFFFFFFFFFFFFF)
        n >>= 64
    return words


def _quantity(v: Any) -> Any:
    return parse_quantity(str(v) if v is not None else "0")


def _int_or_string(v: Any) -> Any:
    if isinstance(v, str):
        return {"Type": 1, "IntVal": 0, "StrVal": v}
    return {"Type": 0, "IntVal": int(v or 0), "StrVal": ""}


def _time(v: Any) -> Any:
    # Only the zero time occurs in templates (see the module docstring).
    return {"Time": {"wall": 0, "ext": 0, "loc": None if not v else {"name": str(v)}}}


def _fields_v1(v: Any) -> Any:
    raw = json.dumps(v, separators=(",", ":"), sort_keys=True).encode()
    return {"Raw": base64.b64encode(raw).decode()}


# The JSON value of a type with hand-written Go code, as the Go fields spew prints.
_CONVERTERS: Final = {"resource.Quantity": _quantity, "intstr.IntOrString": _int_or_string,
                      "meta/v1.Time": _time, "meta/v1.FieldsV1": _fields_v1}


@cache
def _layout() -> tuple[GoLayout, str]:
    """PodTemplateSpec's Go types, as kube-controller-manager decoded them from protobuf
    (empty lists and maps are nil), and the root type's name."""
    data = json.loads(resources.files("pykcm.api").joinpath("_data/deep_hash_types.json")
                      .read_text(encoding="utf-8"))
    structs: dict[str, list[tuple[str, str | None, str]]] = {
        k: [(f[0], f[1], f[2]) for f in v] for k, v in data["structs"].items()}
    for k, fields in _VIRTUAL_STRUCTS.items():
        structs[k] = [(name, name, t) for name, t in fields]
    named = dict(data["named"])
    named.update(_VIRTUAL_NAMED)
    layout = GoLayout(structs, named=named, converters=_CONVERTERS,
                      packages={"core/v1": "v1", "meta/v1": "v1"}, empty_is_nil=True)
    return layout, str(data["root"])


def deep_hash_text(template: Mapping[str, Any]) -> str:
    """The text go-spew prints for the ``v1.PodTemplateSpec`` of ``template`` (``%#v``)."""
    layout, root = _layout()
    return layout.dump(root, template)


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """``controller.ComputeHash``: the hash of a pod template with ``collision_count``
    mixed in when not None (the pod-template-hash / controller-revision-hash)."""
    h = fnv32a(deep_hash_text(template).encode())
    if collision_count is not None:
        # binary.LittleEndian.PutUint32 into an 8-byte slice: 4 bytes, then 4 zeros.
        h = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\0\0\0\0", h)
    return safe_encode_string(str(h))
