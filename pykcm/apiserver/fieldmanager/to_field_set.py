"""The field set of an object: every path it sets, as an applier owns it.

Role: structured-merge-diff's ``TypedValue.ToFieldSet``. Scalars, atomic maps and
atomic lists are leaves (members); granular maps and associative lists are
descended into and not members themselves, except that an empty or null map
value, a null value and any key of a map without a declared field (labels,
annotations, ``matchLabels`` keys of a granular map) are members. Each item of
an associative list is a member and is descended into; an item whose key
appears twice is only a member (SMD's duplicate handling).

Data flow: the updater calls :func:`to_field_set` on the applied configuration
(what the applier now owns) and on merged/pruned objects while removing fields.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.path_set import PathSet
from pykcm.apiserver.fieldmanager.schema import TypeSchema
from pykcm.apiserver.fieldmanager.typed import atom_of, child_node, item_element, shape_fits


def to_field_set(schema: TypeSchema, obj: Any) -> PathSet:
    out = PathSet()
    _walk(schema, schema.root, obj, (), out)
    return out


def _walk(schema: TypeSchema, node: Any, value: Any, path: fp.Path, out: PathSet) -> None:
    atom = atom_of(schema, node, value)
    if not shape_fits(atom, value) or atom.kind == "scalar":
        out.insert(path)
        return
    if atom.atomic:
        out.insert(path)
        return
    if value is None:
        return
    if atom.kind == "list":
        seen: set[fp.PathElement] = set()
        duplicates: set[fp.PathElement] = set()
        pes = [item_element(atom, item, i) for i, item in enumerate(value)]
        for pe in pes:
            if pe in seen and pe not in duplicates:
                out.insert((*path, pe))
                duplicates.add(pe)
            seen.add(pe)
        for pe, item in zip(pes, value, strict=True):
            if pe in duplicates:
                continue
            _walk(schema, atom.element, item, (*path, pe), out)
            out.insert((*path, pe))
        return
    for k, v in value.items():
        pe = fp.field(k)
        _walk(schema, child_node(atom, pe), v, (*path, pe), out)
        if v is None or (isinstance(v, dict) and not v) or k not in atom.fields:
            out.insert((*path, pe))
