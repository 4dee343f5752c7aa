"""The applied configuration as structured-merge-diff's typed conversion checks it.

Role: SMD's ``TypeConverter.ObjectToTyped`` (without ``AllowDuplicates``) on an apply
patch: an associative list may not name the same item twice, and every item must
be nameable (a map with at least one key field, or a scalar for a set). kube-apiserver
answers such a configuration with a bare 500: ``failed to create typed patch object
(<namespace>/<name>; <gvk>): <path>: duplicate entries for key [name="c"]``.

Data flow: :meth:`~.field_manager.FieldManager.apply` calls :func:`config_errors` before
merging. Live objects are converted with duplicates allowed (Update operations, the
live side of an apply), so they are never checked here.

Deviation: scalar types are not checked (SMD's ``expected string, got ...``); pykcm's
decoding and validation refuse those objects anyway, with another message.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.schema import TypeSchema
from pykcm.apiserver.fieldmanager.typed import (
    TypedError,
    atom_of,
    child_node,
    item_element,
    shape_fits,
)


def config_errors(schema: TypeSchema, obj: Any) -> list[str]:
    """The typed conversion's errors, each ``<path>: <message>``, in walk order."""
    out: list[str] = []
    _walk(schema, schema.root, obj, (), out)
    return out


def _walk(schema: TypeSchema, node: Any, value: Any, path: fp.Path, out: list[str]) -> None:
    atom = atom_of(schema, node, value)
    if atom.kind == "scalar" or atom.atomic or value is None or not shape_fits(atom, value):
        return
    if atom.kind == "list":
        seen: set[fp.PathElement] = set()
        for i, item in enumerate(value):
            try:
                pe = item_element(atom, item, i)
            except TypedError as e:
                out.append(f"{fp.path_string(path)}: element {i}: {e}")
                continue
            if pe in seen:
                out.append(f"{fp.path_string(path)}: duplicate entries for key "
                           f"{fp.element_string(pe)}")
                continue
            seen.add(pe)
            _walk(schema, atom.element, item, (*path, pe), out)
        return
    for k, v in value.items():
        pe = fp.field(k)
        _walk(schema, child_node(atom, pe), v, (*path, pe), out)
