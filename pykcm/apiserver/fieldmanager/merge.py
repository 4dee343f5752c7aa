"""Merging an applied configuration into the live object, by schema.

Role: structured-merge-diff's ``TypedValue.Merge`` (the configuration wins):
scalars, atomic maps and atomic lists are replaced whole; granular maps merge
key by key; associative lists merge item by item (matched by key fields or
value) and keep an order that follows the configuration for the items it
names, the live order for the others (SMD's walk: a live item the
configuration also names waits for its turn in the configuration's order; a
live item it does not name stays where it was).

Data flow: the updater merges live and applied, then prunes what the applier
stopped applying (:mod:`.remove_items`). Inputs are never modified; the result
shares no containers with them.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.schema import Atom, TypeSchema
from pykcm.apiserver.fieldmanager.typed import (
    MISSING,
    TypedError,
    atom_of,
    child_node,
    item_element,
    json_copy,
    shape_fits,
)


def merge(schema: TypeSchema, live: Any, config: Any) -> Any:
    return _merge(schema, schema.root, live, config)


def _merge(schema: TypeSchema, node: Any, lhs: Any, rhs: Any) -> Any:
    """The merged value (MISSING: the field is left out)."""
    if rhs is MISSING:
        return json_copy(lhs)
    if lhs is MISSING:
        return json_copy(rhs)
    atom = atom_of(schema, node, rhs)
    if (atom.kind == "scalar" or atom.atomic or not shape_fits(atom, lhs)
            or not shape_fits(atom, rhs)):
        return json_copy(rhs)
    if not lhs and not rhs:     # both null or empty: a leaf, the configuration's
        return json_copy(rhs)
    if atom.kind == "list":
        return _merge_list(schema, atom, lhs or [], rhs or [])
    out = {}
    lmap, rmap = lhs or {}, rhs or {}
    for k in {**lmap, **rmap}:
        v = _merge(schema, child_node(atom, fp.field(k)), lmap.get(k, MISSING),
                   rmap.get(k, MISSING))
        if v is not MISSING:
            out[k] = v
    return out if out else MISSING


def _merge_list(schema: TypeSchema, atom: Atom, lhs: list[Any], rhs: list[Any]) -> Any:
    r_pes = []
    r_items: dict[fp.PathElement, Any] = {}
    for i, item in enumerate(rhs):
        pe = item_element(atom, item, i)
        if pe in r_items:
            raise TypedError(f"duplicate entries for key {fp.element_string(pe)}")
        r_items[pe] = item
        r_pes.append(pe)
    l_pes = []
    l_items: dict[fp.PathElement, Any] = {}
    for i, item in enumerate(lhs):
        pe = item_element(atom, item, i)
        # a key the live list holds twice merges as null (SMD keeps no one of them)
        l_items[pe] = None if pe in l_items else item
        l_pes.append(pe)
    shared = [pe for pe in r_pes if pe in l_items]
    next_shared = 0
    merged: set[fp.PathElement] = set()
    out: list[Any] = []

    def emit(v: Any) -> None:
        if v is not MISSING:
            out.append(v)

    li = ri = 0
    while li < len(l_pes) or ri < len(r_pes):
        if li < len(l_pes) and ri < len(r_pes):
            pe = l_pes[li]
            if pe == r_pes[ri]:
                merged.add(pe)
                emit(_merge(schema, atom.element, l_items[pe], r_items[pe]))
                li += 1
                ri += 1
                next_shared += 1 if next_shared < len(shared) else 0
                continue
            if pe in r_items and next_shared < len(shared) and shared[next_shared] != pe:
                li += 1
                continue
        if li < len(l_pes):
            pe = l_pes[li]
            if pe not in r_items:
                emit(_merge(schema, atom.element, lhs[li], MISSING))
                li += 1
                continue
            if pe in merged:
                li += 1
        if ri < len(r_pes):
            pe = r_pes[ri]
            merged.add(pe)
            emit(_merge(schema, atom.element, l_items.get(pe, MISSING), r_items[pe]))
            ri += 1
            if next_shared < len(shared) and shared[next_shared] == pe:
                next_shared += 1
    return out if out else MISSING
