"""Typed values: a JSON value read through its schema atom.

Role: the shared pieces of structured-merge-diff's ``typed`` walks: which atom
a value has (a deduced node takes the value's own shape), how a list item is
named (:func:`item_element`: its key fields, its value, or its index), and
which paths of a set are named struct fields (:func:`ensure_named_fields_are_members`).

Data flow: :mod:`.to_field_set`, :mod:`.compare`, :mod:`.merge` and
:mod:`.remove_items` call :func:`atom_of` at each node they descend into.
"""

from __future__ import annotations

from typing import Any, Final

from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.path_set import PathSet
from pykcm.apiserver.fieldmanager.schema import DEDUCED, SCALAR, Atom, TypeSchema

MISSING: Final[Any] = object()   # a field or item absent on one side (not JSON null)

_DEDUCED_MAP = Atom("map", element={"x-kubernetes-preserve-unknown-fields": True})
_DEDUCED_LIST = Atom("list", atomic=True, element={"x-kubernetes-preserve-unknown-fields": True},
                     list_type="atomic")


class TypedError(ValueError):
    """A value that does not fit its schema (duplicate keys, a keyed item without keys)."""


def json_copy(v: Any) -> Any:
    """A copy of a JSON value (a few times faster than copy.deepcopy on JSON trees)."""
    if isinstance(v, dict):
        return {k: json_copy(x) if isinstance(x, (dict, list)) else x for k, x in v.items()}
    if isinstance(v, list):
        return [json_copy(x) if isinstance(x, (dict, list)) else x for x in v]
    return v


def atom_of(schema: TypeSchema, node: Any, value: Any) -> Atom:
    atom = schema.resolve(node)
    if atom is DEDUCED:
        if isinstance(value, dict):
            return _DEDUCED_MAP
        if isinstance(value, list):
            return _DEDUCED_LIST
        return SCALAR
    return atom


def shape_fits(atom: Atom, value: Any) -> bool:
    """Whether a present value has the atom's shape (null fits every container)."""
    if value is None or value is MISSING:
        return True
    if atom.kind == "map":
        return isinstance(value, dict)
    if atom.kind == "list":
        return isinstance(value, list)
    return not isinstance(value, (dict, list))


def item_element(atom: Atom, item: Any, i: int) -> fp.PathElement:
    """The path element of a list item (SMD's listItemToPathElement)."""
    if atom.list_type == "map" and atom.keys:
        if item is None:
            raise TypedError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise TypedError("associative list with keys may not have non-map elements")
        fields = {}
        for k in atom.keys:
            if k in item:
                fields[k] = item[k]
            elif k in atom.key_defaults and atom.key_defaults[k] is not None:
                fields[k] = atom.key_defaults[k]
        if not fields:
            raise TypedError(
                "associative list with keys has an element that omits all key fields "
                f"{_go_str_list(atom.keys)} (and doesn't have default values for any key fields)")
        return fp.key(fields)
    if atom.list_type in ("set", "map"):
        if isinstance(item, dict):
            raise TypedError("associative list without keys has an element that's a map type")
        if isinstance(item, list):
            raise TypedError("not supported: associative list with lists as elements")
        if item is None:
            raise TypedError("associative list without keys has an element that's an explicit null")
        return fp.value(item)
    return fp.index(i)


def _go_str_list(keys: tuple[str, ...]) -> str:
    return "[" + " ".join(f'"{k}"' for k in keys) + "]"


def child_node(atom: Atom, pe: fp.PathElement) -> Any:
    """The schema node below an atom for a path element (None: untyped)."""
    if atom.kind == "map" and pe[0] == "f":
        return atom.field_node(pe[1])
    if atom.kind == "list":
        return atom.element
    return None


def ensure_named_fields_are_members(schema: TypeSchema, s: PathSet, node: Any = None) -> PathSet:
    """SMD's ``EnsureNamedFieldsAreMembers``: every declared struct field that has children
    in the set becomes a member too (so removing it removes the whole field)."""
    atom = schema.resolve(schema.root if node is None else node)
    members = set(s.members)
    children = {}
    for pe, c in s.children.items():
        if pe[0] == "f" and atom.kind == "map" and pe[1] in atom.fields:
            members.add(pe)
        children[pe] = ensure_named_fields_are_members(schema, c, child_node(atom, pe) or
                                                       {"x-kubernetes-preserve-unknown-fields":
                                                        True})
    return PathSet(members, children)
