"""Edits of an encoded ``fieldsV1`` object: add or remove one path, without decoding it.

Role: the cheap half of an Update. An Update that changes a few fields changes a
few paths of each manager's set; decoding every entry's fieldsV1 into a
:class:`~.path_set.PathSet` and encoding it back costs as much as the object is
large. These functions edit the JSON form directly and copy only the nodes on
the edited path (the rest is shared with the input, which is never mutated).

Data flow: :meth:`.field_manager.FieldManager.update` turns the paths of its
comparison into fieldsV1 keys (:func:`keys_of`) and calls :func:`insert` and
:func:`remove` on the entries of the live object.

The results are the bytes :mod:`.fields_v1` would encode for the same set: a
node's keys stay in SMD's element order (``"."`` first), a member without
children is ``{}``, a node that is no member and lost its last child goes,
a member that lost its last child becomes ``{}``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pykcm.apiserver.fieldmanager.path import Path, element_key, element_order, parse_element_key

Tree = dict[str, Any]


def keys_of(path: Path) -> tuple[str, ...]:
    return tuple(element_key(pe) for pe in path)


@lru_cache(maxsize=16384)
def _order(k: str) -> tuple[Any, ...]:
    if k == ".":
        return (-1,)
    pe = parse_element_key(k)
    return (9, k) if pe is None else element_order(pe)


def _sorted(node: Tree) -> Tree:
    return {k: node[k] for k in sorted(node, key=_order)}


def insert(tree: Tree, keys: tuple[str, ...]) -> Tree:
    """``tree`` with the path a member (the same object when it already was)."""
    return _insert(tree, keys, 0) if keys else tree


def _insert(node: Tree, keys: tuple[str, ...], i: int) -> Tree:
    k = keys[i]
    child = node.get(k)
    if i == len(keys) - 1:
        if child is not None and (not child or "." in child):
            return node
        out = dict(node)
        if child is None:
            out[k] = {}
            return _sorted(out)
        out[k] = {".": {}, **child}
        return out
    if child is None:
        new_child = _insert({}, keys, i + 1)
    else:
        # a member without children gains one: it is now written with "."
        new_child = _insert(child if child else {".": {}}, keys, i + 1)
    if new_child is child:
        return node
    out = dict(node)
    out[k] = new_child
    return out if child is not None else _sorted(out)


def remove(tree: Tree, keys: tuple[str, ...]) -> Tree:
    """``tree`` without the path as a member (its children stay, as a set difference does);
    the same object when the path was no member."""
    return _remove(tree, keys, 0) if keys else tree


def _remove(node: Tree, keys: tuple[str, ...], i: int) -> Tree:
    k = keys[i]
    child = node.get(k)
    if child is None:
        return node
    if i == len(keys) - 1:
        if child and "." not in child:
            return node
        new_child: Tree | None = {x: v for x, v in child.items() if x != "."} or None
    else:
        sub = _remove(child, keys, i + 1)
        if sub is child:
            return node
        if not sub:
            new_child = None            # neither a member nor a parent any more
        elif len(sub) == 1 and "." in sub:
            new_child = {}              # a member that lost its last child
        else:
            new_child = sub
    out = dict(node)
    if new_child is None:
        del out[k]
    else:
        out[k] = new_child
    return out
