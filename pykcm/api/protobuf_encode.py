"""Encode JSON-wire Kubernetes objects as Kubernetes protobuf (the inverse of decoding).

``encode_k8s_protobuf(obj)`` produces what a Go client (gogo-protobuf
generated ``Marshal``) would send for the same object: ``k8s\\x00`` +
``runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}``, the
object's fields in ascending field-number order, non-pointer scalars and
structs always written (zero included), pointers, slices and maps only when
set, map entries sorted by key. It uses the same schema table as
:mod:`pykcm.api.protobuf`, so ``decode_k8s_protobuf(encode_k8s_protobuf(o))``
is ``o`` in its Go-normalized JSON form. Used by tests today; the building
block for serving protobuf later.

Conversions (JSON -> Go -> wire): RFC 3339 strings -> Timestamp{seconds,
nanos} (``metav1.Time`` keeps whole seconds), Go duration strings -> nanoseconds,
Quantity strings as given, IntOrString ints/strings, RawExtension/FieldsV1
values -> compact JSON bytes, base64 strings -> bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from typing import Any, Final

from pykcm.api import go_duration
from pykcm.api.protobuf import (
    F_INLINE,
    F_MAP,
    F_POINTER,
    F_REPEATED,
    K8S_PROTOBUF_MAGIC,
    K_BOOL,
    K_BYTES,
    K_DUR,
    K_F64,
    K_FV1,
    K_I32,
    K_I64,
    K_IOS,
    K_MSG,
    K_MTIME,
    K_QTY,
    K_RAW,
    K_STR,
    K_TIME,
    K_U32,
    K_U64,
    Message,
    ProtobufDecodeError,
    lookup_kind,
)

__all__ = ["ProtobufEncodeError", "encode_k8s_protobuf"]

_MASK64: Final = (1 << 64) - 1
_VARINT_KINDS: Final = frozenset({K_BOOL, K_I32, K_I64, K_U32, K_U64})


class ProtobufEncodeError(ValueError):
    """An object that cannot be represented in the Kubernetes protobuf encoding."""


def encode_k8s_protobuf(obj: dict[str, Any]) -> bytes:
    """Encode a JSON-wire object (with ``apiVersion`` and ``kind``) as a protobuf body."""
    api_version = obj.get("apiVersion") or ""
    kind = obj.get("kind") or ""
    try:
        msg = lookup_kind(api_version, kind)
    except ProtobufDecodeError as e:
        raise ProtobufEncodeError(str(e).replace("decoding", "encoding")) from None
    raw = bytearray()
    _encode_message(msg, obj, raw)
    type_meta = bytearray()
    _put_bytes(type_meta, 1, api_version.encode())
    _put_bytes(type_meta, 2, kind.encode())
    out = bytearray(K8S_PROTOBUF_MAGIC)
    _put_bytes(out, 1, type_meta)
    _put_bytes(out, 2, raw)
    _put_bytes(out, 3, b"")  # contentEncoding
    _put_bytes(out, 4, b"")  # contentType
    return bytes(out)


# ---------------------------------------------------------------- wire level


def _put_varint(out: bytearray, v: int) -> None:
    v &= _MASK64
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _put_key(out: bytearray, num: int, wt: int) -> None:
    _put_varint(out, (num << 3) | wt)


def _put_bytes(out: bytearray, num: int, data: bytes | bytearray) -> None:
    _put_key(out, num, 2)
    _put_varint(out, len(data))
    out += data


# ---------------------------------------------------------------- messages


def _encode_message(msg: Message, d: Any, out: bytearray) -> None:
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise ProtobufEncodeError(f"{msg.name}: expected an object, got {type(d).__name__}")
    for num in sorted(msg.fields):
        name, kind, sub, flags = msg.fields[num]
        if flags & F_INLINE:
            assert sub is not None
            body = bytearray()
            _encode_message(sub, d, body)
            _put_bytes(out, num, body)
            continue
        value = d.get(name)
        if flags & F_MAP:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ProtobufEncodeError(f"{msg.name}.{name}: expected an object")
            for key in sorted(value):
                entry = bytearray()
                _put_bytes(entry, 1, str(key).encode())
                v = value[key]
                if not (kind == K_BYTES and v is None):
                    _encode_value(entry, 2, kind, sub, v, f"{msg.name}.{name}")
                _put_bytes(out, num, entry)
        elif flags & F_REPEATED:
            if value is None:
                continue
            if not isinstance(value, list):
                raise ProtobufEncodeError(f"{msg.name}.{name}: expected an array")
            for item in value:
                _encode_value(out, num, kind, sub, item, f"{msg.name}.{name}")
        elif (flags & F_POINTER or kind == K_BYTES) and value is None:
            continue  # nil pointer / nil []byte
        else:
            _encode_value(out, num, kind, sub, value, f"{msg.name}.{name}")


def _encode_value(
    out: bytearray, num: int, kind: int, sub: Message | None, value: Any, where: str
) -> None:
    if kind in _VARINT_KINDS:
        if value is None:
            value = False if kind == K_BOOL else 0
        if kind == K_BOOL:
            if not isinstance(value, bool):
                raise ProtobufEncodeError(f"{where}: expected a boolean, got {value!r}")
            v = int(value)
        else:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ProtobufEncodeError(f"{where}: expected an integer, got {value!r}")
            v = value
        _put_key(out, num, 0)
        _put_varint(out, v)
        return
    if kind == K_F64:
        _put_key(out, num, 1)
        out += struct.pack("<d", float(value or 0))
        return
    if kind == K_STR:
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ProtobufEncodeError(f"{where}: expected a string, got {value!r}")
        _put_bytes(out, num, value.encode("utf-8", "surrogatepass"))
        return
    if kind == K_BYTES:
        try:
            data = base64.b64decode(value or "", validate=True)
        except (binascii.Error, TypeError, ValueError) as e:
            raise ProtobufEncodeError(f"{where}: invalid base64: {e}") from None
        _put_bytes(out, num, data)
        return
    body = bytearray()
    if kind == K_MSG:
        assert sub is not None
        _encode_message(sub, value, body)
    elif kind in (K_TIME, K_MTIME):
        if value is not None:
            seconds, nanos = _parse_rfc3339(value, where)
            _put_key(body, 1, 0)
            _put_varint(body, seconds)
            _put_key(body, 2, 0)
            _put_varint(body, nanos if kind == K_MTIME else 0)
    elif kind == K_QTY:
        q = "0" if value is None else value
        if isinstance(q, bool) or not isinstance(q, (str, int, float)):
            raise ProtobufEncodeError(f"{where}: expected a quantity, got {value!r}")
        _put_bytes(body, 1, str(q).encode())
    elif kind == K_IOS:
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ProtobufEncodeError(f"{where}: expected an int or a string, got {value!r}")
        is_str = isinstance(value, str)
        _put_key(body, 1, 0)
        _put_varint(body, 1 if is_str else 0)
        _put_key(body, 2, 0)
        _put_varint(body, 0 if is_str else int(value))
        _put_bytes(body, 3, value.encode() if isinstance(value, str) else b"")
    elif kind in (K_RAW, K_FV1):
        if value is not None:
            raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
            _put_bytes(body, 1, raw)
    elif kind == K_DUR:
        _put_key(body, 1, 0)
        _put_varint(body, parse_go_duration(value or "0s"))
    else:  # pragma: no cover - the kind table is closed
        raise ProtobufEncodeError(f"{where}: unsupported kind {kind}")
    _put_bytes(out, num, body)


# ---------------------------------------------------------------- time

_RFC3339 = re.compile(
    r"^(-?\d{4,})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d\d):(\d\d))$"
)


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _parse_rfc3339(value: Any, where: str) -> tuple[int, int]:
    if not isinstance(value, str):
        raise ProtobufEncodeError(f"{where}: expected an RFC 3339 time, got {value!r}")
    m = _RFC3339.match(value)
    if not m:
        raise ProtobufEncodeError(f"{where}: invalid RFC 3339 time {value!r}")
    y, mo, d, hh, mm, ss = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    nanos = int(frac.ljust(9, "0")) if frac else 0
    seconds = _days_from_civil(y, mo, d) * 86400 + hh * 3600 + mm * 60 + ss
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    return seconds, nanos




def parse_go_duration(text: str) -> int:
    """Go's ``time.ParseDuration`` (nanoseconds; pykcm.api.go_duration) for a Duration
    field, failing as the encoder does."""
    try:
        return go_duration.parse_go_duration(text)
    except go_duration.GoDurationError:
        raise ProtobufEncodeError(f"invalid duration {text!r}") from None
