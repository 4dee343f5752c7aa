"""Sets of field paths: what a manager owns, what a comparison found changed.

Role: structured-merge-diff's ``fieldpath.Set``. A set is a trie: ``members``
are the path elements that are themselves in the set at this level,
``children`` the sub-sets under an element. A path can be both a member and
have children (``"f:labels": {".": {}, "f:app": {}}`` in fieldsV1: the map
itself and its key are owned).

Data flow: typed walks (:mod:`.to_field_set`, :mod:`.compare`) build sets with
:meth:`PathSet.insert`; the updater combines them with the algebra (union,
intersection, difference, recursive difference); :mod:`.fields_v1` encodes
them. Sets are treated as values: every operation returns a new set and
never leaves an empty child behind (an empty child would encode as a member).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pykcm.apiserver.fieldmanager.path import Path, PathElement, sorted_elements


class PathSet:
    __slots__ = ("children", "members")

    def __init__(self, members: Iterable[PathElement] = (),
                 children: dict[PathElement, PathSet] | None = None) -> None:
        self.members: set[PathElement] = set(members)
        self.children: dict[PathElement, PathSet] = children if children is not None else {}

    @classmethod
    def of(cls, *paths: Iterable[PathElement]) -> PathSet:
        s = cls()
        for p in paths:
            s.insert(tuple(p))
        return s

    # --- building -----------------------------------------------------------------------

    def insert(self, path: Path) -> None:
        """Add a path (in place: only while building a set)."""
        if not path:
            return
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = PathSet()
            node = child
        node.members.add(path[-1])

    def discard(self, path: Path, recursive: bool = False) -> None:
        """Remove a path (``recursive``: and everything under it), in place: only on a
        set being built; a child left empty goes."""
        if not path:
            return
        head, rest = path[0], path[1:]
        if not rest:
            self.members.discard(head)
            if recursive:
                self.children.pop(head, None)
            return
        child = self.children.get(head)
        if child is not None:
            child.discard(rest, recursive)
            if child.empty():
                del self.children[head]

    def copy(self) -> PathSet:
        return PathSet(self.members, {pe: c.copy() for pe, c in self.children.items()})

    # --- queries ------------------------------------------------------------------------

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def has(self, path: Path) -> bool:
        if not path:
            return False
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                return False
            node = child
        return path[-1] in node.members

    def with_prefix(self, pe: PathElement) -> PathSet:
        """The paths under ``pe``, without it (an empty set when there are none)."""
        return self.children.get(pe) or PathSet()

    def paths(self) -> Iterator[Path]:
        """Every path, in SMD's ``Iterate`` order: a level's members, then its children."""
        yield from self._paths(())

    def _paths(self, prefix: Path) -> Iterator[Path]:
        for pe in sorted_elements(self.members):
            yield (*prefix, pe)
        for pe in sorted_elements(self.children):
            yield from self.children[pe]._paths((*prefix, pe))

    def size(self) -> int:
        return len(self.members) + sum(c.size() for c in self.children.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PathSet):
            return NotImplemented
        a, b = self._normal(), other._normal()
        return a.members == b.members and a.children.keys() == b.children.keys() and all(
            a.children[k] == b.children[k] for k in a.children)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        from pykcm.apiserver.fieldmanager.path import path_string
        return "PathSet(" + ", ".join(path_string(p) for p in self.paths()) + ")"

    def _normal(self) -> PathSet:
        return PathSet(self.members, {k: c._normal() for k, c in self.children.items()
                                      if not c.empty()})

    # --- algebra ------------------------------------------------------------------------

    def union(self, other: PathSet) -> PathSet:
        children = {pe: c.copy() for pe, c in self.children.items()}
        for pe, c in other.children.items():
            mine = children.get(pe)
            children[pe] = c.copy() if mine is None else mine.union(c)
        return PathSet(self.members | other.members, children)

    def intersection(self, other: PathSet) -> PathSet:
        children = {}
        for pe, c in self.children.items():
            o = other.children.get(pe)
            if o is not None:
                r = c.intersection(o)
                if not r.empty():
                    children[pe] = r
        return PathSet(self.members & other.members, children)

    def difference(self, other: PathSet) -> PathSet:
        """Paths of self not in other (a member removed leaves its children in place)."""
        children = {}
        for pe, c in self.children.items():
            o = other.children.get(pe)
            r = c.copy() if o is None else c.difference(o)
            if not r.empty():
                children[pe] = r
        return PathSet(self.members - other.members, children)

    def recursive_difference(self, other: PathSet) -> PathSet:
        """Paths of self neither in other nor under a member of other."""
        children = {}
        for pe, c in self.children.items():
            if pe in other.members:
                continue
            o = other.children.get(pe)
            r = c.copy() if o is None else c.recursive_difference(o)
            if not r.empty():
                children[pe] = r
        return PathSet(self.members - other.members, children)

    def ensure_named_fields_are_members(self, is_named: Callable[[Path], bool],
                                        prefix: Path = ()) -> PathSet:
        """Also make every struct field with children a member (``is_named`` says whether the
        path is a declared field of a struct, as opposed to a map key or list item)."""
        members = set(self.members)
        children = {}
        for pe, c in self.children.items():
            p = (*prefix, pe)
            if pe[0] == "f" and is_named(p):
                members.add(pe)
            children[pe] = c.ensure_named_fields_are_members(is_named, p)
        return PathSet(members, children)


def from_paths(paths: Iterable[Path]) -> PathSet:
    s = PathSet()
    for p in paths:
        s.insert(p)
    return s


def debug(s: PathSet) -> list[Any]:
    """The paths as strings (tests, messages)."""
    from pykcm.apiserver.fieldmanager.path import path_string
    return [path_string(p) for p in s.paths()]
