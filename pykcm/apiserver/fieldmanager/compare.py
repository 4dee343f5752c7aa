"""What changed between two versions of an object, path by path.

Role: structured-merge-diff's ``TypedValue.Compare``: three path sets.
``added`` holds paths only in the new object (a granular map or list item that
appeared is added itself, with everything under it: that is why an Update's
fieldsV1 has ``"."`` entries), ``removed`` paths only in the old one, and
``modified`` leaves (scalars, atomic maps and lists, empty containers) whose
values differ. An associative-list key that appears more than once is compared
as a whole.

Data flow: the updater compares the live object with the new one: an Update's
manager gains ``modified | added`` and loses ``removed``; other managers lose
what was removed and, on apply, conflict on what they own that changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.path_set import PathSet
from pykcm.apiserver.fieldmanager.schema import Atom, TypeSchema
from pykcm.apiserver.fieldmanager.typed import (
    MISSING,
    atom_of,
    child_node,
    item_element,
    shape_fits,
)


@dataclass
class Comparison:
    added: PathSet = field(default_factory=PathSet)
    modified: PathSet = field(default_factory=PathSet)
    removed: PathSet = field(default_factory=PathSet)

    def is_same(self) -> bool:
        return self.added.empty() and self.modified.empty() and self.removed.empty()

    def filtered(self, exclude: PathSet | None) -> Comparison:
        """Without the paths at or under ``exclude`` (the strategy's reset fields)."""
        if exclude is None or exclude.empty():
            return self
        return Comparison(self.added.recursive_difference(exclude),
                          self.modified.recursive_difference(exclude),
                          self.removed.recursive_difference(exclude))


def compare(schema: TypeSchema, old: Any, new: Any) -> Comparison:
    out = Comparison()
    _compare(schema, schema.root, old, new, (), out)
    return out


def _leaf(lhs: Any, rhs: Any, path: fp.Path, out: Comparison) -> None:
    if lhs is MISSING:
        out.added.insert(path)
    elif rhs is MISSING:
        out.removed.insert(path)
    elif not json_equal(lhs, rhs):
        out.modified.insert(path)


def json_equal(a: Any, b: Any) -> bool:
    """JSON value equality as SMD's ``value.Equals`` (``True`` is not ``1``; 1 is 1.0)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(json_equal(a[k], b[k]) for k in a))
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(json_equal(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b) and (isinstance(a, str) == isinstance(b, str))


def _compare(schema: TypeSchema, node: Any, lhs: Any, rhs: Any, path: fp.Path,
             out: Comparison) -> None:
    if lhs is MISSING:
        if rhs is not MISSING:
            _appeared(schema, node, rhs, path, out.added)
        return
    if rhs is not MISSING and (lhs is rhs or lhs == rhs):
        # an unchanged subtree has no paths in any set (deviation: Python's == takes
        # True for 1, so a bool replaced by the same number goes unseen; typed kinds
        # cannot hold either in one field). This makes an update's cost the size of
        # its change, not of the object.
        return
    atom = atom_of(schema, node, rhs if rhs is not MISSING else lhs)
    in_leaf = _compare_atom(schema, atom, lhs, rhs, path, out)
    if not in_leaf:
        if lhs is MISSING:
            out.added.insert(path)
        elif rhs is MISSING:
            out.removed.insert(path)


def _appeared(schema: TypeSchema, node: Any, rhs: Any, path: fp.Path, added: PathSet) -> None:
    """A value only in the new object: its path and everything under it are added (the
    subtree is built directly, not path by path from the root: a create's whole object)."""
    added.insert(path)
    sub = _added_under(schema, node, rhs)
    if sub is None:
        return
    at = added
    for pe in path:
        child = at.children.get(pe)
        if child is None:
            child = at.children[pe] = PathSet()
        at = child
    if at.empty():
        at.members, at.children = sub.members, sub.children
    else:
        merged = at.union(sub)
        at.members, at.children = merged.members, merged.children


def _added_under(schema: TypeSchema, node: Any, rhs: Any) -> PathSet | None:
    """The paths below a value compared with nothing (None: a leaf, nothing below)."""
    atom = atom_of(schema, node, rhs)
    if atom.kind == "scalar" or atom.atomic or not rhs or not shape_fits(atom, rhs):
        return None
    out = PathSet()
    members, children = out.members, out.children
    if atom.kind == "list":
        items: dict[fp.PathElement, list[Any]] = {}
        for i, item in enumerate(rhs):
            items.setdefault(item_element(atom, item, i), []).append(item)
        for pe, same in items.items():
            members.add(pe)
            if len(same) == 1:      # a key that appears twice is compared as a whole
                sub = _added_under(schema, atom.element, same[0])
                if sub is not None:
                    children[pe] = sub
        return out
    for k, v in rhs.items():
        pe = fp.field(k)
        members.add(pe)
        sub = _added_under(schema, child_node(atom, pe), v)
        if sub is not None:
            children[pe] = sub
    return out


def _compare_atom(schema: TypeSchema, atom: Atom, lhs: Any, rhs: Any, path: fp.Path,
                  out: Comparison) -> bool:
    """Compare under one atom; True when the node was a leaf."""
    if (atom.kind == "scalar" or atom.atomic or not shape_fits(atom, lhs)
            or not shape_fits(atom, rhs)):
        _leaf(lhs, rhs, path, out)
        return True
    l_val = None if lhs is MISSING else lhs
    r_val = None if rhs is MISSING else rhs
    if not l_val and not r_val:     # both absent, null or empty: a leaf
        _leaf(lhs, rhs, path, out)
        return True
    if atom.kind == "list":
        _compare_list(schema, atom, l_val or [], r_val or [], path, out)
    else:
        _compare_map(schema, atom, l_val or {}, r_val or {}, path, out)
    return False


def _compare_map(schema: TypeSchema, atom: Atom, lhs: dict[str, Any], rhs: dict[str, Any],
                 path: fp.Path, out: Comparison) -> None:
    for k in {**lhs, **rhs}:
        pe = fp.field(k)
        _compare(schema, child_node(atom, pe), lhs.get(k, MISSING), rhs.get(k, MISSING),
                 (*path, pe), out)


def _compare_list(schema: TypeSchema, atom: Atom, lhs: list[Any], rhs: list[Any],
                  path: fp.Path, out: Comparison) -> None:
    order: list[fp.PathElement] = []
    l_items: dict[fp.PathElement, list[Any]] = {}
    r_items: dict[fp.PathElement, list[Any]] = {}
    for i, item in enumerate(lhs):
        pe = item_element(atom, item, i)
        if pe not in l_items:
            order.append(pe)
        l_items.setdefault(pe, []).append(item)
    for i, item in enumerate(rhs):
        pe = item_element(atom, item, i)
        if pe not in r_items and pe not in l_items:
            order.append(pe)
        r_items.setdefault(pe, []).append(item)
    for pe in order:
        ll, rl = l_items.get(pe, []), r_items.get(pe, [])
        p = (*path, pe)
        if len(ll) <= 1 and len(rl) <= 1:
            _compare(schema, atom.element, ll[0] if ll else MISSING, rl[0] if rl else MISSING,
                     p, out)
        elif len(ll) >= 2 and len(rl) >= 2:
            if not json_equal(ll, rl):
                out.modified.insert(p)
        elif len(ll) >= 2:
            if rl:
                _compare(schema, atom.element, MISSING, rl[0], p, out)
            out.removed.insert(p)
        else:
            if ll:
                _compare(schema, atom.element, ll[0], MISSING, p, out)
            out.added.insert(p)
