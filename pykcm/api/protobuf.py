"""Decode Kubernetes protobuf request bodies into their JSON wire form.

Real clients do not always send JSON: ``kubectl create namespace|configmap|
deployment|job|...`` and every write of a client-go typed client send
``Content-Type: application/vnd.kubernetes.protobuf``. The embedded API server
speaks JSON only, so its request handlers turn such a body into the dict
kube-apiserver would have produced from the same object (Go struct -> JSON,
with ``omitempty``) and carry on as for a JSON request. Responses stay JSON.

Data flow::

    body = b"k8s\\x00" + runtime.Unknown{typeMeta{apiVersion, kind}, raw, ...}
      -> (apiVersion, kind) -> root message of ``_data/proto_schema.json.gz``
      -> raw decoded field by field (hand-written wire decoder: varint,
         64-bit, length-delimited, 32-bit) into a dict keyed by JSON names
      -> Go semantics applied per message: zero scalars of ``omitempty``
         fields dropped, absent non-pointer fields filled with their Go zero
         value (``{}`` for structs, ``null`` for nil slices/maps/pointers
         without ``omitempty``, ``null`` for a zero ``metav1.Time``), special
         types converted (Time/MicroTime -> RFC 3339, Duration -> "1m30s",
         Quantity -> its string, IntOrString -> int or string, RawExtension /
         FieldsV1 -> the embedded JSON, []byte -> base64)
      -> {"kind": ..., "apiVersion": ..., "metadata": {...}, "spec": ...}

The schema table is generated from the upstream Go types by
``tools/gen_proto_schema.py``. Unknown field numbers (fields newer than the
table) are skipped. Anything malformed raises :class:`ProtobufDecodeError`,
never another exception. Quantities keep the string the client sent (Go
clients already send the canonical form); JSON key order is not Go's field
order.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import math
import struct
from importlib import resources
from typing import Any, Final

from pykcm.api.timestamps import format_unix

__all__ = [
    "K8S_PROTOBUF_MAGIC",
    "PROTOBUF_CONTENT_TYPE",
    "ProtobufDecodeError",
    "ProtobufUnsupportedKindError",
    "decode_k8s_protobuf",
    "is_k8s_protobuf",
    "load_schema",
    "lookup_kind",
]

K8S_PROTOBUF_MAGIC: Final = b"k8s\x00"
PROTOBUF_CONTENT_TYPE: Final = "application/vnd.kubernetes.protobuf"

# Field flag bits of the schema table (see tools/gen_proto_schema.py).
F_POINTER: Final = 1
F_OMITEMPTY: Final = 2
F_REPEATED: Final = 4
F_MAP: Final = 8
F_INLINE: Final = 16
F_OMITZERO: Final = 32

# Value kinds, as small ints for fast dispatch.
K_STR, K_BOOL, K_I32, K_I64, K_U32, K_U64, K_F64, K_BYTES = range(8)
K_MSG, K_TIME, K_MTIME, K_DUR, K_QTY, K_IOS, K_RAW, K_FV1 = range(8, 16)
KIND_CODES: Final[dict[str, int]] = {
    "s": K_STR,
    "b": K_BOOL,
    "i32": K_I32,
    "i64": K_I64,
    "u32": K_U32,
    "u64": K_U64,
    "f64": K_F64,
    "y": K_BYTES,
    "m": K_MSG,
    "time": K_TIME,
    "mtime": K_MTIME,
    "dur": K_DUR,
    "qty": K_QTY,
    "ios": K_IOS,
    "raw": K_RAW,
    "fv1": K_FV1,
}
VARINT_KINDS: Final = frozenset({K_BOOL, K_I32, K_I64, K_U32, K_U64})

WT_VARINT, WT_FIXED64, WT_BYTES, WT_START_GROUP, WT_END_GROUP, WT_FIXED32 = range(6)

_MASK64: Final = (1 << 64) - 1
_ZERO_TIME_UNIX: Final = -62135596800  # time.Time{}.Unix(): 0001-01-01T00:00:00Z
_MAX_NESTING: Final = 64  # nested protobuf RawExtension bodies


class ProtobufDecodeError(ValueError):
    """A protobuf request body that cannot be decoded (the server answers 400)."""


class ProtobufUnsupportedKindError(ProtobufDecodeError):
    """A well-formed body of a kind the schema table lacks (answer 415, ask for JSON)."""


class Message:
    """One compiled message of the schema table."""

    __slots__ = ("defaults", "fields", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        # field number -> (json name, kind code, sub message or None, flags)
        self.fields: dict[int, tuple[str, int, Message | None, int]] = {}
        # fields to fill when absent: (json name, kind code, sub message, flags)
        self.defaults: list[tuple[str, int, Message | None, int]] = []


class Schema:
    """The compiled schema table: messages and the kind -> root message maps."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.messages: dict[str, Message] = {name: Message(name) for name in raw["messages"]}
        for name, table in raw["messages"].items():
            msg = self.messages[name]
            for num, (json_name, kind, element, flags) in table.items():
                sub = self.messages[element] if kind == "m" else None
                msg.fields[int(num)] = (json_name, KIND_CODES[kind], sub, flags)
        for msg in self.messages.values():
            msg.defaults = _collect_defaults(msg)
        self.kinds: dict[str, Message] = {k: self.messages[v] for k, v in raw["kinds"].items()}
        self.any_version_kinds: dict[str, Message] = {
            k: self.messages[v] for k, v in raw["anyVersionKinds"].items()
        }


def _collect_defaults(msg: Message) -> list[tuple[str, int, Message | None, int]]:
    out: list[tuple[str, int, Message | None, int]] = []
    for json_name, kind, sub, flags in msg.fields.values():
        if flags & F_INLINE:
            assert sub is not None
            out.extend(_collect_defaults(sub))
            continue
        if flags & F_OMITEMPTY and (flags & (F_POINTER | F_REPEATED | F_MAP) or kind < K_MSG):
            continue  # nil/zero is omitted
        if flags & F_OMITZERO:
            continue
        out.append((json_name, kind, sub, flags))
    return out


@functools.cache
def load_schema() -> Schema:
    """The compiled schema table (loaded once)."""
    raw = resources.files("pykcm.api").joinpath("_data/proto_schema.json.gz").read_bytes()
    return Schema(json.loads(gzip.decompress(raw)))


def lookup_kind(api_version: str, kind: str) -> Message:
    """The root message of ``kind`` in ``api_version``, or raise ProtobufDecodeError."""
    schema = load_schema()
    msg = schema.kinds.get(f"{api_version}/{kind}")
    if msg is None:
        msg = schema.any_version_kinds.get(kind)
    if msg is None:
        raise ProtobufUnsupportedKindError(
            f"protobuf decoding of kind {kind or '<empty>'} (apiVersion "
            f"{api_version or '<empty>'}) is not supported; send JSON"
        )
    return msg


def is_k8s_protobuf(content_type: str) -> bool:
    """Whether a Content-Type header names the Kubernetes protobuf encoding."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == PROTOBUF_CONTENT_TYPE


def decode_k8s_protobuf(body: bytes) -> dict[str, Any]:
    """Decode a ``k8s\\x00``-prefixed protobuf body into its JSON wire form.

    The result carries ``kind`` and ``apiVersion`` from the envelope's
    typeMeta. Raises :class:`ProtobufDecodeError` for a bad magic, truncated
    or malformed data, wire-type mismatches and kinds the table does not know.
    """
    return _decode_envelope(bytes(body), 0)


def _decode_envelope(body: bytes, depth: int) -> dict[str, Any]:
    if depth > _MAX_NESTING:
        raise ProtobufDecodeError("protobuf objects nested too deeply")
    if not body.startswith(K8S_PROTOBUF_MAGIC):
        raise ProtobufDecodeError(
            "not a Kubernetes protobuf body: missing the 4-byte prefix 'k8s\\x00'"
        )
    try:
        api_version, kind, raw, encoding = _decode_unknown(body, len(K8S_PROTOBUF_MAGIC))
        if encoding:
            raise ProtobufDecodeError(f"unsupported protobuf contentEncoding {encoding!r}")
        msg = lookup_kind(api_version, kind)
        out: dict[str, Any] = {}
        if kind:
            out["kind"] = kind
        if api_version:
            out["apiVersion"] = api_version
        if raw is None:
            _finish(msg, out)
        else:
            _decode_into(raw, 0, len(raw), msg, out, depth)
        return out
    except ProtobufDecodeError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, struct.error, RecursionError) as e:
        raise ProtobufDecodeError(f"malformed protobuf body: {e}") from e


def _decode_unknown(buf: bytes, pos: int) -> tuple[str, str, bytes | None, str]:
    """runtime.Unknown: 1 typeMeta{1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding."""
    end = len(buf)
    api_version = kind = encoding = ""
    raw: bytes | None = None
    while pos < end:
        key, pos = _varint(buf, pos, end)
        num, wt = key >> 3, key & 7
        if num == 1 and wt == WT_BYTES:
            start, pos = _length(buf, pos, end)
            p = start
            while p < pos:
                k2, p = _varint(buf, p, pos)
                if k2 == 0x0A:
                    s, p = _length(buf, p, pos)
                    api_version = _str(buf, s, p)
                elif k2 == 0x12:
                    s, p = _length(buf, p, pos)
                    kind = _str(buf, s, p)
                else:
                    p = _skip(buf, p, pos, k2)
        elif num == 2 and wt == WT_BYTES:
            start, pos = _length(buf, pos, end)
            raw = buf[start:pos]
        elif num == 3 and wt == WT_BYTES:
            start, pos = _length(buf, pos, end)
            encoding = _str(buf, start, pos)
        elif num in (1, 2, 3, 4) and wt != WT_BYTES:
            raise ProtobufDecodeError(
                f"runtime.Unknown field {num}: wire type {wt}, expected length-delimited"
            )
        else:
            pos = _skip(buf, pos, end, key)
    return api_version, kind, raw, encoding


# ---------------------------------------------------------------- wire level


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos < end:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ProtobufDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise ProtobufDecodeError("varint longer than 10 bytes")


def _length(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read a length prefix; return (start, end) of the delimited bytes."""
    n, pos = _varint(buf, pos, end)
    stop = pos + n
    if stop > end:
        raise ProtobufDecodeError(
            f"truncated length-delimited field: {n} bytes declared, {end - pos} left"
        )
    return pos, stop


def _skip(buf: bytes, pos: int, end: int, key: int) -> int:
    """Skip the value of an unknown field; return the position after it."""
    wt = key & 7
    if key >> 3 == 0:
        raise ProtobufDecodeError("invalid protobuf field number 0")
    if wt == WT_VARINT:
        return _varint(buf, pos, end)[1]
    if wt == WT_FIXED64:
        if pos + 8 > end:
            raise ProtobufDecodeError("truncated 64-bit field")
        return pos + 8
    if wt == WT_BYTES:
        return _length(buf, pos, end)[1]
    if wt == WT_FIXED32:
        if pos + 4 > end:
            raise ProtobufDecodeError("truncated 32-bit field")
        return pos + 4
    if wt == WT_START_GROUP:
        group = key >> 3
        while True:
            if pos >= end:
                raise ProtobufDecodeError("unterminated protobuf group")
            k, pos = _varint(buf, pos, end)
            if k & 7 == WT_END_GROUP:
                if k >> 3 != group:
                    raise ProtobufDecodeError("mismatched protobuf end-group")
                return pos
            pos = _skip(buf, pos, end, k)
    raise ProtobufDecodeError(f"invalid protobuf wire type {wt}")


def _str(buf: bytes, start: int, stop: int) -> str:
    # Go strings may hold any bytes; encoding/json writes U+FFFD for invalid UTF-8.
    return buf[start:stop].decode("utf-8", "replace")


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


# ---------------------------------------------------------------- messages


def _decode_into(
    buf: bytes, pos: int, end: int, msg: Message, out: dict[str, Any], depth: int
) -> None:
    fields = msg.fields
    while pos < end:
        b = buf[pos]
        if b < 0x80:
            key = b
            pos += 1
        else:
            key, pos = _varint(buf, pos, end)
        num = key >> 3
        f = fields.get(num)
        if f is None:
            pos = _skip(buf, pos, end, key)
            continue
        name, kind, sub, flags = f
        wt = key & 7
        if flags & F_MAP:
            _expect(wt, WT_BYTES, msg, name)
            start, pos = _length(buf, pos, end)
            mk, mv = _decode_map_entry(buf, start, pos, kind, sub, msg, name, depth)
            m = out.get(name)
            if not isinstance(m, dict):
                m = out[name] = {}
            m[mk] = mv
        elif flags & F_REPEATED:
            lst = out.get(name)
            if not isinstance(lst, list):
                lst = out[name] = []
            if kind in VARINT_KINDS and wt == WT_BYTES:  # packed
                start, pos = _length(buf, pos, end)
                p = start
                while p < pos:
                    v, p = _varint(buf, p, pos)
                    lst.append(_varint_value(kind, v))
            else:
                v, pos = _decode_value(buf, pos, end, wt, kind, sub, msg, name, depth)
                lst.append(v)
        elif kind == K_MSG:
            _expect(wt, WT_BYTES, msg, name)
            start, pos = _length(buf, pos, end)
            assert sub is not None
            if flags & F_INLINE:
                _decode_into(buf, start, pos, sub, out, depth)
            else:
                d = out.get(name)
                if not isinstance(d, dict):
                    d = out[name] = {}
                _decode_into(buf, start, pos, sub, d, depth)
        else:
            v, pos = _decode_value(buf, pos, end, wt, kind, sub, msg, name, depth)
            if (flags & F_OMITEMPTY and not flags & F_POINTER and not v and kind < K_MSG) or (
                flags & F_OMITZERO and v is None
            ):
                out.pop(name, None)
            else:
                out[name] = v
    _finish(msg, out)


def _finish(msg: Message, out: dict[str, Any]) -> None:
    """Fill absent fields with the JSON of their Go zero value."""
    for name, kind, sub, flags in msg.defaults:
        if name not in out:
            out[name] = _zero_json(kind, sub, flags)


def _zero_json(kind: int, sub: Message | None, flags: int) -> Any:
    if flags & (F_POINTER | F_REPEATED | F_MAP) or kind == K_BYTES:
        return None  # nil pointer / slice / map
    if kind == K_STR:
        return ""
    if kind == K_BOOL:
        return False
    if kind == K_F64:
        return 0.0
    if kind < K_MSG:
        return 0
    if kind == K_MSG:
        assert sub is not None
        d: dict[str, Any] = {}
        _finish(sub, d)
        return d
    if kind == K_QTY:
        return "0"
    if kind == K_IOS:
        return 0
    if kind == K_DUR:
        return "0s"
    return None  # zero Time / MicroTime, nil RawExtension / FieldsV1


def _expect(wt: int, want: int, msg: Message, name: str) -> None:
    if wt != want:
        raise ProtobufDecodeError(
            f"wire type mismatch for {msg.name}.{name or '<inline>'}: got {wt}, expected {want}"
        )


def _varint_value(kind: int, v: int) -> int | bool:
    if kind == K_BOOL:
        return v != 0
    if kind == K_I32:
        return _signed(v, 32)
    if kind == K_I64:
        return _signed(v, 64)
    if kind == K_U32:
        return v & 0xFFFFFFFF
    return v


def _decode_value(
    buf: bytes,
    pos: int,
    end: int,
    wt: int,
    kind: int,
    sub: Message | None,
    msg: Message,
    name: str,
    depth: int,
) -> tuple[Any, int]:
    """Decode one (non-map) value of ``kind`` at ``pos``; return (json value, new pos)."""
    if kind in VARINT_KINDS:
        _expect(wt, WT_VARINT, msg, name)
        v, pos = _varint(buf, pos, end)
        return _varint_value(kind, v), pos
    if kind == K_F64:
        _expect(wt, WT_FIXED64, msg, name)
        if pos + 8 > end:
            raise ProtobufDecodeError("truncated 64-bit field")
        (f,) = struct.unpack_from("<d", buf, pos)
        if not math.isfinite(f):
            raise ProtobufDecodeError(f"{msg.name}.{name}: {f} has no JSON form")
        return f, pos + 8
    _expect(wt, WT_BYTES, msg, name)
    start, stop = _length(buf, pos, end)
    return _decode_delimited(buf, start, stop, kind, sub, depth), stop


def _decode_delimited(
    buf: bytes, start: int, stop: int, kind: int, sub: Message | None, depth: int
) -> Any:
    if kind == K_STR:
        return _str(buf, start, stop)
    if kind == K_MSG:
        assert sub is not None
        d: dict[str, Any] = {}
        _decode_into(buf, start, stop, sub, d, depth)
        return d
    if kind == K_BYTES:
        return base64.b64encode(buf[start:stop]).decode("ascii")
    if kind == K_TIME or kind == K_MTIME:
        return _decode_time(buf, start, stop, kind == K_MTIME)
    if kind == K_QTY:
        s = _single_string(buf, start, stop)
        return "0" if s is None else s
    if kind == K_IOS:
        return _decode_int_or_string(buf, start, stop)
    if kind == K_RAW or kind == K_FV1:
        raw = _single_bytes(buf, start, stop)
        return None if not raw else _embedded_json(raw, depth)
    if kind == K_DUR:
        fields = _scalar_fields(buf, start, stop)
        return format_go_duration(_signed(fields.get(1, 0), 64))
    raise ProtobufDecodeError(f"unsupported value kind {kind}")


def _decode_map_entry(
    buf: bytes,
    pos: int,
    end: int,
    kind: int,
    sub: Message | None,
    msg: Message,
    name: str,
    depth: int,
) -> tuple[str, Any]:
    key = ""
    value: Any = _MISSING
    while pos < end:
        k, pos = _varint(buf, pos, end)
        if k == 0x0A:
            start, pos = _length(buf, pos, end)
            key = _str(buf, start, pos)
        elif k >> 3 == 2:
            value, pos = _decode_value(buf, pos, end, k & 7, kind, sub, msg, name, depth)
        elif k >> 3 == 1:
            raise ProtobufDecodeError(f"wire type mismatch for the key of map {msg.name}.{name}")
        else:
            pos = _skip(buf, pos, end, k)
    if value is _MISSING:
        value = _zero_json(kind, sub, 0)
    return key, value


_MISSING: Final = object()


def _scalar_fields(buf: bytes, pos: int, end: int) -> dict[int, int]:
    """Varint fields of a small message (Timestamp, Duration); others skipped."""
    out: dict[int, int] = {}
    while pos < end:
        k, pos = _varint(buf, pos, end)
        if k & 7 == WT_VARINT and k >> 3:
            out[k >> 3], pos = _varint(buf, pos, end)
        else:
            pos = _skip(buf, pos, end, k)
    return out


def _single_bytes(buf: bytes, pos: int, end: int) -> bytes | None:
    """Field 1 (bytes) of a one-field message, or None when absent."""
    value: bytes | None = None
    while pos < end:
        k, pos = _varint(buf, pos, end)
        if k == 0x0A:
            start, pos = _length(buf, pos, end)
            value = buf[start:pos]
        elif k >> 3 == 1:
            raise ProtobufDecodeError("wire type mismatch in a one-field message")
        else:
            pos = _skip(buf, pos, end, k)
    return value


def _single_string(buf: bytes, pos: int, end: int) -> str | None:
    b = _single_bytes(buf, pos, end)
    return None if b is None else b.decode("utf-8", "replace")


def _decode_int_or_string(buf: bytes, pos: int, end: int) -> int | str:
    """intstr.IntOrString: 1 type (0 int, 1 string), 2 intVal, 3 strVal."""
    typ, ival, sval = 0, 0, ""
    while pos < end:
        k, pos = _varint(buf, pos, end)
        if k == 0x08:
            typ, pos = _varint(buf, pos, end)
        elif k == 0x10:
            v, pos = _varint(buf, pos, end)
            ival = _signed(v, 32)
        elif k == 0x1A:
            start, pos = _length(buf, pos, end)
            sval = _str(buf, start, pos)
        elif k >> 3 in (1, 2, 3):
            raise ProtobufDecodeError("wire type mismatch in an IntOrString")
        else:
            pos = _skip(buf, pos, end, k)
    typ = _signed(typ, 64)
    if typ == 0:
        return ival
    if typ == 1:
        return sval
    raise ProtobufDecodeError(f"impossible IntOrString type {typ}")


def _embedded_json(raw: bytes, depth: int) -> Any:
    """RawExtension / FieldsV1 bytes: embedded JSON, or a nested protobuf object."""
    if raw.startswith(K8S_PROTOBUF_MAGIC):
        return _decode_envelope(raw, depth + 1)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise ProtobufDecodeError(f"embedded object is neither JSON nor protobuf: {e}") from e


# ---------------------------------------------------------------- time


def _decode_time(buf: bytes, start: int, stop: int, micro: bool) -> str | None:
    """metav1.Time / MicroTime: Timestamp{1 seconds, 2 nanos}; empty means zero."""
    if start == stop:
        return None
    fields = _scalar_fields(buf, start, stop)
    seconds = _signed(fields.get(1, 0), 64)
    nanos = _signed(fields.get(2, 0), 32) if micro else 0  # Time drops nanoseconds
    seconds += nanos // 1_000_000_000
    nanos %= 1_000_000_000
    if seconds == _ZERO_TIME_UNIX and nanos == 0:
        return None  # time.Time{}: encoding/json writes null
    return format_unix(seconds, nanos // 1000 if micro else None)


def format_go_duration(d: int) -> str:
    """Go's ``time.Duration.String()`` of ``d`` nanoseconds ("1m30s", "1.5s", "0s")."""
    if d == 0:
        return "0s"
    sign = "-" if d < 0 else ""
    u = -d if d < 0 else d
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{_frac(u, 3)}µs"
        return f"{sign}{_frac(u, 6)}ms"
    secs = _frac(u, 9)  # "<int seconds>[.fraction]"
    whole, _, fraction = secs.partition(".")
    total = int(whole)
    out = f"{total % 60}" + (f".{fraction}" if fraction else "") + "s"
    minutes = total // 60
    if minutes:
        out = f"{minutes % 60}m" + out
        hours = minutes // 60
        if hours:
            out = f"{hours}h" + out
    return sign + out


def _frac(v: int, prec: int) -> str:
    scale = 10**prec
    ip, fp = divmod(v, scale)
    fs = f"{fp:0{prec}d}".rstrip("0")
    return f"{ip}.{fs}" if fs else str(ip)
