"""The applied configuration as structured-merge-diff's typed conversion checks it.

Role: SMD's ``TypeConverter.ObjectToTyped`` (without ``AllowDuplicates``) on an apply
patch: an associative list may not name the same item twice, and every item must
be nameable (a map with at least one key field, or a scalar for a set). kube-apiserver
answers such a configuration with a bare 500: ``failed to create typed patch object
(<namespace>/<name>; <gvk>): <path>: duplicate entries for key [name="c"]``.

Data flow: :meth:`~.field_manager.FieldManager.apply` calls :func:`config_errors` before
merging. Live objects are converted with duplicates allowed (Update operations, the
live side of an apply), so they are never checked here.

Scalar types and shapes are checked as SMD's validating walk does (``expected string,
got &value.valueUnstructured{Value:1}``, ``expected numeric (int or float), got string``,
``expected boolean, got &{yes}``, ``expected map, got &{5}``), and a key a struct does not
declare is ``field not declared in schema``; kube-apiserver v1.36 answers all of them
with the same bare 500. The values are printed as Go's fmt prints the decoded
unstructured value (``%v``, ``%#v``, ``%T``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.schema import TypeSchema
from pykcm.apiserver.fieldmanager.typed import (
    TypedError,
    atom_of,
    child_node,
    item_element,
)


def config_errors(schema: TypeSchema, obj: Any) -> list[str]:
    """The typed conversion's errors, each ``<path>: <message>``, in walk order."""
    out: list[str] = []
    _walk(schema, schema.root, obj, (), out)
    return out


def _walk(schema: TypeSchema, node: Any, value: Any, path: fp.Path, out: list[str]) -> None:
    if value is None:
        return      # null fits every type
    atom = atom_of(schema, node, value)
    if atom.kind == "scalar":
        msg = _scalar_error(atom.scalar, value)
        if msg:
            out.append(f"{fp.path_string(path)}: {msg}")
        return
    if atom.kind == "list":
        if not isinstance(value, list):
            out.append(f"{fp.path_string(path)}: expected list, got &{{{go_v(value)}}}")
            return
        seen: set[fp.PathElement] = set()
        for i, item in enumerate(value):
            if atom.list_type in ("set", "map"):
                try:
                    pe = item_element(atom, item, i)
                except TypedError as e:
                    out.append(f"{fp.path_string(path)}: element {i}: {e}")
                    return  # no path to report deeper errors under: the rest is not walked
                if pe in seen:
                    out.append(f"{fp.path_string(path)}: duplicate entries for key "
                               f"{fp.element_string(pe)}")
                seen.add(pe)
            else:
                pe = fp.index(i)
            _walk(schema, atom.element, item, (*path, pe), out)
        return
    if not isinstance(value, dict):
        out.append(f"{fp.path_string(path)}: expected map, got &{{{go_v(value)}}}")
        return
    for k, v in value.items():
        pe = fp.field(k)
        child = child_node(atom, pe)
        if child is None and atom.element is None and atom.fields:
            out.append(f"{fp.path_string((*path, pe))}: field not declared in schema")
            return  # SMD stops walking the map there
        _walk(schema, child, v, (*path, pe), out)


def _scalar_error(kind: str, v: Any) -> str | None:
    if kind == "numeric":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"expected numeric (int or float), got {go_type(v)}"
    elif kind == "string":
        if not isinstance(v, str):
            return f"expected string, got &value.valueUnstructured{{Value:{go_sharp_v(v)}}}"
    elif kind == "boolean" and not isinstance(v, bool):
        return f"expected boolean, got &{{{go_v(v)}}}"
    # untyped scalars (int-or-string, formatted strings, RawExtension) take any value here
    return None


# --- Go's fmt on a decoded unstructured value --------------------------------------------

def go_type(v: Any) -> str:
    """``%T``."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    return "map[string]interface {}" if isinstance(v, dict) else "[]interface {}"


def go_v(v: Any) -> str:
    """``%v``."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_v(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(go_v(x) for x in v) + "]"
    return str(v)


def go_sharp_v(v: Any) -> str:
    """``%#v`` (of a value inside an ``interface{}``)."""
    if v is None:
        return "interface {}(nil)"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, dict):
        return ("map[string]interface {}{" +
                ", ".join(f"{json.dumps(k, ensure_ascii=False)}:{go_sharp_v(v[k])}"
                          for k in sorted(v)) + "}")
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(go_sharp_v(x) for x in v) + "}"
    return go_v(v)


def _go_float(f: float) -> str:
    """strconv's shortest ``%g`` (an exponent from 1e+06 and below 1e-04)."""
    if math.isnan(f):
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "+Inf" if f > 0 else "-Inf"
    r = repr(f)
    mant, _, exp = r.partition("e")
    x = int(exp) if exp else 0
    digits = mant.lstrip("-").replace(".", "").lstrip("0")
    if not digits:
        return "0" if not r.startswith("-") else "-0"
    whole = mant.lstrip("-").split(".")[0].lstrip("0")
    dp = x + (len(whole) if whole else -(len(mant.split(".")[1]) - len(
        mant.split(".")[1].lstrip("0"))))
    e = dp - 1
    if -4 <= e < 6:
        s = f"{f:.{max(len(digits.rstrip('0')) - dp, 0)}f}"
        return s
    d = digits.rstrip("0")
    m = d[0] + ("." + d[1:] if len(d) > 1 else "")
    return f"{'-' if f < 0 else ''}{m}e{'-' if e < 0 else '+'}{abs(e):02d}"
