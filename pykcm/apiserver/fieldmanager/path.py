"""Field path elements: the steps of a path into an object, as structured-merge-diff names them.

Role: sigs.k8s.io/structured-merge-diff's ``fieldpath.PathElement`` and
``value.Value`` ordering. A path element is a hashable tuple:

- ``("f", name)``: a field of a map or struct (``f:name`` in fieldsV1, ``.name`` in messages);
- ``("k", ((key, value), ...))``: the item of an associative list with those key
  fields, sorted by name (``k:{"name":"c"}``, ``[name="c"]``);
- ``("v", value)``: the item of a set list (``v:"x"``, ``[="x"]``);
- ``("i", index)``: the item of an atomic list by position (``i:0``, ``[0]``).

Values inside keys and set items are *frozen* (:func:`freeze`): tagged tuples so
that ``True`` and ``1`` stay different (Python hashes them alike) and lists and
maps become hashable. :func:`element_order` is SMD's total order (field names,
then keys, then values, then indices; values: numbers, strings, booleans, lists,
maps, null), which is the order of fieldsV1 keys and of conflict paths.

Deliberate deviation: a float that holds an integral value is written as an
integer (Go decodes such a JSON number as an int64 in the first place).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeAlias

# A frozen JSON value: ("n", number) | ("s", str) | ("b", bool) | ("l", tuple) |
# ("m", tuple of (key, frozen)) | ("z", None)
Frozen: TypeAlias = tuple[Any, ...]
PathElement: TypeAlias = tuple[Any, ...]
Path: TypeAlias = tuple[PathElement, ...]

_TYPE_RANK = {"n": 0, "s": 1, "b": 2, "l": 3, "m": 4, "z": 5}
_PE_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


def freeze(v: Any) -> Frozen:
    """A hashable, type-tagged form of a JSON value."""
    if v is None:
        return ("z", None)
    if v is True or v is False:
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, Mapping):
        return ("m", tuple(sorted((str(k), freeze(x)) for k, x in v.items())))
    if isinstance(v, (list, tuple)):
        return ("l", tuple(freeze(x) for x in v))
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def thaw(f: Frozen) -> Any:
    """The JSON value of a frozen one."""
    tag, v = f
    if tag == "l":
        return [thaw(x) for x in v]
    if tag == "m":
        return {k: thaw(x) for k, x in v}
    return v


def value_order(f: Frozen) -> tuple[Any, ...]:
    """SMD's ``value.Compare`` as a sort key."""
    tag, v = f
    if tag == "l":
        return (3, tuple(value_order(x) for x in v))
    if tag == "m":
        # Go compares maps by their sorted keys, then values, then length
        return (4, tuple((k, value_order(x)) for k, x in v))
    if tag == "z":
        return (5,)
    return (_TYPE_RANK[tag], v)


def field(name: str) -> PathElement:
    return ("f", name)


def key(fields: Mapping[str, Any]) -> PathElement:
    """The element of an associative list item by its key fields (sorted by name)."""
    return ("k", tuple(sorted((n, freeze(v)) for n, v in fields.items())))


def value(v: Any) -> PathElement:
    return ("v", freeze(v))


def index(i: int) -> PathElement:
    return ("i", i)


@lru_cache(maxsize=16384)  # the same keys recur in every object of a kind
def element_order(pe: PathElement) -> tuple[Any, ...]:
    """SMD's ``PathElement.Compare`` as a sort key."""
    kind, v = pe
    if kind == "f":
        return (0, v)
    if kind == "k":
        return (1, tuple((n, value_order(x)) for n, x in v))
    if kind == "v":
        return (2, value_order(v))
    return (3, v)


def sorted_elements(pes: Iterable[PathElement]) -> list[PathElement]:
    return sorted(pes, key=element_order)


# --- Go's JSON and %v text -------------------------------------------------------------

def go_json_string(s: str) -> str:
    """A JSON string as Go's encoding/json (and json-iterator's standard config) writes it."""
    out = json.dumps(s, ensure_ascii=False)
    if "<" in out or ">" in out or "&" in out or "\u2028" in out or "\u2029" in out:
        out = (out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
               .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return out


def _json_number(v: float) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        r = repr(v)
        return r.replace("e-0", "e-").replace("e+", "e+")
    return str(v)


def go_json_value(f: Frozen) -> str:
    """A frozen value as compact JSON (map keys sorted, as Go writes a map)."""
    tag, v = f
    if tag == "z":
        return "null"
    if tag == "b":
        return "true" if v else "false"
    if tag == "n":
        return _json_number(v)
    if tag == "s":
        return go_json_string(v)
    if tag == "l":
        return "[" + ",".join(go_json_value(x) for x in v) + "]"
    return "{" + ",".join(f"{go_json_string(k)}:{go_json_value(x)}" for k, x in v) + "}"


def _go_quote(s: str) -> str:
    """Go's %q (strconv.Quote): printable runes kept, the rest escaped."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                        "\t": "\\t", "\v": "\\v"}[ch])
        elif o < 0x80:
            out.append(f"\\x{o:02x}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


def _go_float_v(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    r = repr(v)
    if "e" in r:
        mant, _, exp = r.partition("e")
        sign = "-" if exp.startswith("-") else "+"
        return f"{mant}e{sign}{abs(int(exp)):02d}"
    r = r.removesuffix(".0")
    if abs(v) >= 1e21:
        return f"{v:e}"
    return r


def value_string(f: Frozen) -> str:
    """SMD's ``value.ToString``: %q strings, %v numbers and booleans."""
    tag, v = f
    if tag == "z":
        return "null"
    if tag == "s":
        return _go_quote(v)
    if tag == "b":
        return "true" if v else "false"
    if tag == "n":
        return _go_float_v(v) if isinstance(v, float) else str(v)
    if tag == "l":
        return "[" + ",".join(value_string(x) for x in v) + "]"
    return "".join(f"{k}={value_string(x)}" for k, x in v)


def element_string(pe: PathElement) -> str:
    """A path element as SMD prints it in messages (``.name``, ``[k="v"]``, ``[="x"]``, ``[0]``)."""
    kind, v = pe
    if kind == "f":
        return "." + str(v)
    if kind == "k":
        return "[" + ",".join(f"{n}={value_string(x)}" for n, x in v) + "]"
    if kind == "v":
        return f"[={value_string(v)}]"
    return f"[{v}]"


def path_string(path: Sequence[PathElement]) -> str:
    """A path as SMD prints it in conflict messages (``.spec.containers[name="c"].image``)."""
    return "".join(element_string(pe) for pe in path)


@lru_cache(maxsize=16384)  # the same keys recur in every object of a kind
def element_key(pe: PathElement) -> str:
    """The fieldsV1 key of a path element (``f:name``, ``k:{...}``, ``v:...``, ``i:N``)."""
    kind, v = pe
    if kind == "f":
        return "f:" + str(v)
    if kind == "k":
        return "k:{" + ",".join(f"{go_json_string(n)}:{go_json_value(x)}" for n, x in v) + "}"
    if kind == "v":
        return "v:" + go_json_value(v)
    return f"i:{v}"


def parse_element_key(s: str) -> PathElement | None:
    """A fieldsV1 key back to a path element; None for an unknown kind (SMD skips those)."""
    if len(s) < 2 or s[1] != ":":
        raise ValueError(f"missing colon: {s}")
    kind, rest = s[0], s[2:]
    if kind == "f":
        return ("f", rest)
    if kind == "v":
        return ("v", freeze(json.loads(rest)))
    if kind == "k":
        fields = json.loads(rest)
        if not isinstance(fields, dict):
            raise ValueError(f"key is not an object: {s}")
        return key(fields)
    if kind == "i":
        return ("i", int(rest))
    return None
