"""go-spew's ``%#v`` of a Go value held in its JSON wire form: the text upstream hashes.

kube-controller-manager hashes Go structs by printing them with go-spew
(``spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true,
SpewKeys: true}.Fprintf("%#v")``) into an FNV hasher: the pod-template hash
(``pkg/util/hash`` DeepHashObject, :mod:`pykcm.api.deep_hash`) and the
orderings of Endpoints subsets and EndpointSlice ports (``...ByHash``,
:mod:`pykcm.api.endpoints`). Both need the very same text from a JSON
value, so this is the one printer; each caller gives it what it knows
about the Go side:

- ``structs``: each struct's fields in declaration order as (Go name, JSON
  key, Go type); a JSON key of ``""`` is an embedded struct (its fields are
  inlined in the same JSON object), None a field JSON never carries.
- ``named``: named types and the type they stand for (``v1.Protocol`` →
  ``string``); ``converters``: types whose JSON form is not their Go
  fields (``resource.Quantity`` → its parsed amount), converted first.
- ``packages``: how a package qualifier prints (``core/v1`` → ``v1``:
  ``reflect.Type.String()`` shows the package name, not its path).
- ``empty_is_nil``: whether an empty list or map prints as ``<nil>``.
  Objects kube-controller-manager decoded from protobuf have nil for
  every empty list (protobuf does not tell them apart): deep_hash. The
  endpoint controllers build their values and print ``[]`` for an empty
  list, ``<nil>`` only for a missing one.

Data flow::

    (Go type, JSON value) ──format──► "(v1.EndpointPort){Name:(string)http Port:(int32)80 ..."

Types spell as Go's: ``string``, ``int32``, ``*T``, ``[]T``, ``map[K]V``, a
struct name, or a named type. As spew does with ``%#v``: a type is printed
in parentheses before its value except for the elements of lists and maps,
pointers as ``(*T)`` then the value or ``<nil>``, strings raw; after a nil
pointer that is a list element spew leaves "skip the next type" set, and so
does this printer (the pod-template hash depends on it).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

__all__ = ["GoLayout", "go_float", "split_map_type"]

_INTS: Final = frozenset({"int", "int8", "int16", "int32", "int64",
                          "uint", "uint8", "uint16", "uint32", "uint64"})


def go_float(f: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``."""
    r = repr(f)
    if "e" in r:
        mant, _, exp = r.partition("e")
        sign = "-" if exp.startswith("-") else "+"
        return f"{mant}e{sign}{exp.lstrip('+-').zfill(2)}"
    return r.removesuffix(".0")


def split_map_type(t: str) -> tuple[str, str]:
    """A Go map type ``map[K]V`` as (K, V); brackets inside K are balanced."""
    depth = 0
    for j in range(3, len(t)):
        if t[j] == "[":
            depth += 1
        elif t[j] == "]":
            depth -= 1
            if depth == 0:
                return t[4:j], t[j + 1:]
    raise ValueError(f"bad map type {t!r}")


class GoLayout:
    """What the printer knows of one set of Go types (see the module docstring)."""

    __slots__ = ("_display", "converters", "empty_is_nil", "named", "structs")

    def __init__(self, structs: Mapping[str, Sequence[tuple[str, str | None, str]]],
                 *, named: Mapping[str, str] | None = None,
                 converters: Mapping[str, Callable[[Any], Any]] | None = None,
                 packages: Mapping[str, str] | None = None,
                 empty_is_nil: bool) -> None:
        self.structs = structs
        self.named = dict(named or {})
        self.converters = dict(converters or {})
        self.empty_is_nil = empty_is_nil
        renames = dict(packages or {})
        pattern = re.compile("|".join(re.escape(p + ".") for p in renames)) if renames else None

        @lru_cache(maxsize=1024)
        def display(t: str) -> str:
            # reflect.Type.String(): the package's name where the layout has its path
            if pattern is None:
                return t
            return pattern.sub(lambda m: renames[m.group()[:-1]] + ".", t)

        self._display = display

    def dump(self, go_type: str, value: Any) -> str:
        """``spew.Sprintf("%#v", value)`` for ``value`` (JSON form) of Go type ``go_type``."""
        p = _Printer(self)
        p.format(go_type, value)
        return "".join(p.out)


class _Printer:
    """go-spew's formatState for ``%#v`` with SortKeys and DisableMethods."""

    __slots__ = ("ignore_next_type", "layout", "out")

    def __init__(self, layout: GoLayout) -> None:
        self.layout = layout
        self.out: list[str] = []
        self.ignore_next_type = False

    def format(self, t: str, v: Any) -> None:
        if t.startswith("*"):
            self._format_ptr(t, v)
            return
        if not self.ignore_next_type:
            self.out.append(f"({self.layout._display(t)})")
        self.ignore_next_type = False
        self._format_value(t, v)

    def _format_ptr(self, t: str, v: Any) -> None:
        if v is None:
            if self.ignore_next_type:
                self.out.append("<nil>")
                return  # spew leaves ignoreNextType set here
            self.out.append(f"({self.layout._display(t)})<nil>")
            return
        if self.ignore_next_type:
            self.out.append("<*>")
        else:
            self.out.append(f"({self.layout._display(t)})")
        self.ignore_next_type = True
        self.format(t[1:], v)

    def _format_value(self, t: str, v: Any) -> None:
        layout = self.layout
        while t in layout.named:
            t = layout.named[t]
        convert = layout.converters.get(t)
        if convert is not None:
            v = convert(v)
        if t == "string":
            self.out.append("" if v is None else str(v))
        elif t in _INTS:
            self.out.append(str(int(v or 0)))
        elif t == "bool":
            self.out.append("true" if v else "false")
        elif t in ("float32", "float64"):
            self.out.append(go_float(float(v or 0.0)))
        elif t.startswith("[]"):
            self._format_slice(t[2:], v)
        elif t.startswith("map["):
            self._format_map(t, v)
        elif t in layout.structs:
            self._format_struct(t, v)
        else:
            raise ValueError(f"go-spew: no layout for Go type {t!r}")

    def _format_slice(self, elem: str, v: Any) -> None:
        if elem == "uint8" and isinstance(v, str):
            v = list(base64.b64decode(v))  # []byte travels as base64
        if not isinstance(v, list | tuple):
            v = None  # not a list: as absent
        if v is None or (not v and self.layout.empty_is_nil):
            self.out.append("<nil>")
            return
        self.out.append("[")
        for i, item in enumerate(v):
            if i:
                self.out.append(" ")
            self.ignore_next_type = True
            self.format(elem, item)
        self.out.append("]")

    def _format_map(self, t: str, v: Any) -> None:
        key_t, val_t = split_map_type(t)
        if not isinstance(v, Mapping):
            v = None
        if v is None or (not v and self.layout.empty_is_nil):
            self.out.append("<nil>")
            return
        self.out.append("map[")
        for i, k in enumerate(sorted(v)):
            if i:
                self.out.append(" ")
            self.ignore_next_type = True
            self.format(key_t, k)
            self.out.append(":")
            self.ignore_next_type = True
            self.format(val_t, v[k])
        self.out.append("]")

    def _format_struct(self, t: str, v: Any) -> None:
        obj: Mapping[str, Any] = v if isinstance(v, Mapping) else {}
        self.out.append("{")
        for i, (go_name, json_name, ft) in enumerate(self.layout.structs[t]):
            if i:
                self.out.append(" ")
            self.out.append(go_name)
            self.out.append(":")
            if json_name is None:
                fv = None
            elif json_name == "":
                fv = obj  # embedded, fields inlined in the same JSON object
            else:
                fv = obj.get(json_name)
            self.format(ft, fv)
        self.out.append("}")
