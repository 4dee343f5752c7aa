"""Removing the paths of a set from an object.

Role: structured-merge-diff's ``TypedValue.RemoveItems``: a member path is
dropped with everything under it; a path with children is descended into
(granular maps by key, associative lists by item element). A container emptied
this way stays as an empty map or list rather than vanishing; atomic values are
never descended into.

Data flow: the updater's pruning removes what an applier stopped applying, then
puts back what others own (:mod:`.updater`).
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.path_set import PathSet
from pykcm.apiserver.fieldmanager.schema import TypeSchema
from pykcm.apiserver.fieldmanager.typed import (
    MISSING,
    atom_of,
    child_node,
    item_element,
    json_copy,
)


def remove_items(schema: TypeSchema, obj: Any, to_remove: PathSet) -> Any:
    out = _remove(schema, schema.root, obj, to_remove)
    return None if out is MISSING else out


def _remove(schema: TypeSchema, node: Any, value: Any, to_remove: PathSet) -> Any:
    atom = atom_of(schema, node, value)
    if atom.kind == "scalar":
        return json_copy(value)
    if atom.kind == "list":
        if not isinstance(value, list) or not value or atom.atomic:
            return MISSING
        items = []
        had_matches = False
        for i, item in enumerate(value):
            pe = item_element(atom, item, i)
            if pe in to_remove.members:
                continue
            sub = to_remove.children.get(pe)
            if sub is not None and not sub.empty():
                had_matches = True
                new = _remove(schema, atom.element, item, sub)
                if new is MISSING or new is None:
                    new = {} if isinstance(item, dict) else [] if isinstance(item, list) else new
                items.append(None if new is MISSING else new)
            else:
                items.append(json_copy(item))
        return items if items or had_matches else MISSING
    if not isinstance(value, dict) or not value or atom.atomic:
        return MISSING
    out = {}
    had_matches = False
    for k, v in value.items():
        pe = fp.field(k)
        if pe in to_remove.members:
            continue
        sub = to_remove.children.get(pe)
        if sub is not None and not sub.empty():
            had_matches = True
            new = _remove(schema, child_node(atom, pe), v, sub)
            if new is MISSING or new is None:
                new = {} if isinstance(v, dict) else [] if isinstance(v, list) else None
            out[k] = new
        else:
            out[k] = json_copy(v)
    return out if out or had_matches else MISSING
