"""The ``FieldsV1`` encoding of a path set: ``managedFields[].fieldsV1``.

Role: structured-merge-diff's ``Set.ToJSON``/``FromJSON``. A set is a JSON
object whose keys are path elements (``f:``, ``k:{...}``, ``v:``, ``i:``) and
whose values are the sub-sets; ``"."`` marks an element that has children and
is also a member itself; a member without children is ``{}``.

Data flow: :func:`encode` gives the bytes kube-apiserver stores (keys in SMD's
element order; ``"."`` first; key objects with their fields sorted by name and
values as Go marshals them), :func:`to_json` the same as a dict for the
object's wire form (Python keeps the insertion order, so the dict serializes
to the same bytes); :func:`decode` reads either. Keys of an unknown kind are
skipped, as SMD does.
"""

from __future__ import annotations

import json
from typing import Any

from pykcm.apiserver.fieldmanager.path import (
    element_key,
    go_json_string,
    parse_element_key,
    sorted_elements,
)
from pykcm.apiserver.fieldmanager.path_set import PathSet


def to_json(s: PathSet) -> dict[str, Any]:
    """The fieldsV1 object of a set, keys in kube-apiserver's order."""
    return _contents(s, include_self=False)


def _contents(s: PathSet, include_self: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if include_self and (s.members or s.children):
        out["."] = {}
    for pe in sorted_elements(s.members | s.children.keys()):
        child = s.children.get(pe)
        if child is None or child.empty():
            out[element_key(pe)] = {}
        else:
            out[element_key(pe)] = _contents(child, include_self=pe in s.members)
    return out


def encode(s: PathSet) -> bytes:
    """The stored bytes of a set (compact JSON with Go's string escaping)."""
    return _dump(to_json(s)).encode()


def _dump(d: dict[str, Any]) -> str:
    return "{" + ",".join(f"{go_json_string(k)}:{_dump(v)}" for k, v in d.items()) + "}"


def decode(data: bytes | str | dict[str, Any]) -> PathSet:
    """A fieldsV1 value (bytes or parsed) back to a set; ValueError when malformed."""
    obj = json.loads(data) if isinstance(data, (bytes, str)) else data
    if not isinstance(obj, dict):
        raise ValueError("fieldsV1 must be a JSON object")  # noqa: TRY004 (a decode error)
    found, _ = _read(obj)
    return found or PathSet()


def _read(obj: dict[str, Any]) -> tuple[PathSet | None, bool]:
    children: PathSet | None = None
    is_member = False
    for k, v in obj.items():
        if k == ".":
            is_member = True
            continue
        pe = parse_element_key(k)
        if pe is None:
            continue
        if not isinstance(v, dict):
            raise ValueError(f"fieldsV1 value of {k} is not an object")  # noqa: TRY004
        grandchildren, child_is_member = _read(v)
        if children is None:
            children = PathSet()
        if child_is_member:
            children.members.add(pe)
        if grandchildren is not None:
            existing = children.children.get(pe)
            children.children[pe] = (grandchildren if existing is None
                                     else existing.union(grandchildren))
    if children is None:
        is_member = True
    return children, is_member
