"""Which controller an event about a pod (or ControllerRevision) is for.

The workload controllers (ReplicaSet, ReplicationController, DaemonSet,
StatefulSet, Job) route every event about an object they may own the same
way, as upstream's ``resolveControllerRef`` and ``getPod<Kind>s`` of each
controller do:

- the object has a controller reference: the one cached owner of our kind
  whose name *and* UID match (:meth:`OwnerResolver.resolve`); a reference to
  another kind, or to a deleted owner of the same name, is nobody's;
- it has none (an orphan): every owner in its namespace whose selector
  matches its labels may adopt it (:meth:`OwnerResolver.selecting`); an
  invalid or empty selector matches nothing;
- on an update (:meth:`OwnerResolver.updated`): the former owner when the
  reference changed, the current owner, or the candidates when an orphan's
  labels or reference changed.

Data flow::

    informer event (pod) ──get_controller_of──► ref ──resolve──► owner (cache) ──► queue
                                  └── no ref ──selecting──► candidate owners ──► queue

Finding the candidate owners of an orphan: upstream lists every owner of the namespace
and matches each one's selector against the orphan's labels (O(owners) per event; at
start, with many orphans and many owners in one namespace, O(orphans x owners)). Here
the owners' informer carries an index from each owner's selector to the label pairs one
of which any object it matches must carry (:func:`selector_index_values`: one pair its
selector pins with ``=``, the pairs of an ``In``, or a key it requires); an orphan looks
up the values its labels offer (:func:`label_index_values`) and only those owners are
matched, with the same selector. An owner whose selector requires no label (only
``NotIn``/``DoesNotExist``) sits under the namespace itself and is always a candidate.
Same answer as the scan (tests/unit/test_owner_resolver_index.py compares the two on
random labels and selectors): 0 or 1 owners as the index finds them; 2 or more (a user
error of overlapping selectors, which the controllers log) from the scan, in its order.

What each controller does with the owner differs on purpose (expectations
observed or not, a minReadySeconds re-check, a deletionTimestamp taken as a
delete): that stays in each controller's handlers, as upstream's differ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pykcm.api.accessors import labels_of, meta_of, spec_of
from pykcm.api.labels import (
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    LabelSelector,
    SelectorParseError,
    selector_from_label_selector,
)
from pykcm.api.owner_refs import get_controller_of
from pykcm.cache import IndexerConflictError, InformerAlreadyStartedError
from pykcm.informers.generic import GenericInformer

__all__ = ["OwnerResolver", "OwnerUpdate", "controller_ref_changed", "label_index_values",
           "selector_index_values"]

log = logging.getLogger("pykcm.controller")

Obj = Mapping[str, Any]


def _label_selector(owner: Obj) -> LabelSelector:
    return selector_from_label_selector(spec_of(owner).get("selector"))


# The parts of an index value; a separator no valid label key or value contains (a
# collision with an invalid one would only add a candidate, which its selector rejects).
_SEP = "\x00"


def selector_index_values(namespace: str, selector: LabelSelector) -> list[str]:
    """Index values of an owner of ``namespace`` whose pod selector is ``selector``: any
    object of the namespace the selector matches offers at least one of them in
    :func:`label_index_values`. None for a selector that matches nothing or (an empty
    one) that ``OwnerResolver.selecting`` never counts."""
    if selector.empty or selector.is_nothing:
        return []
    prefix = namespace + _SEP
    for r in selector.requirements:
        # a one-value = (or ==, or In): the object must carry exactly that pair
        if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
            return [prefix + r.key + _SEP + r.values[0]]
    for r in selector.requirements:
        if r.operator == IN:
            return [prefix + r.key + _SEP + v for v in sorted(set(r.values))]
    for r in selector.requirements:
        # Exists, Gt, Lt: the object must carry the key
        if r.operator in (EXISTS, GREATER_THAN, LESS_THAN):
            return [prefix + r.key]
    return [namespace]  # nothing required: a candidate for every object of the namespace


def label_index_values(namespace: str, labels: Mapping[str, str]) -> list[str]:
    """The index values an object of ``namespace`` with ``labels`` offers: the namespace,
    and for each label its key and its key-value pair."""
    prefix = namespace + _SEP
    out = [namespace]
    for k, v in labels.items():
        out.append(prefix + k)
        out.append(prefix + k + _SEP + v)
    return out


def controller_ref_changed(old: Obj, cur: Obj) -> bool:
    """The two versions of an object name different controllers (or one has none)."""
    return _refs_differ(get_controller_of(old), get_controller_of(cur))


def _refs_differ(old_ref: Mapping[str, Any] | None, cur_ref: Mapping[str, Any] | None) -> bool:
    if old_ref is cur_ref:
        return False
    if type(old_ref) is dict and type(cur_ref) is dict:
        return old_ref != cur_ref
    return (dict(cur_ref) if cur_ref else None) != (dict(old_ref) if old_ref else None)


class OwnerUpdate(NamedTuple):
    """Whom an update of an owned object concerns (see :meth:`OwnerResolver.updated`)."""

    previous: Obj | None
    """The controller the object named before, when it names another one now."""
    current: Obj | None
    """The controller the object names now (None: none, or not ours)."""
    candidates: list[Obj]
    """An orphan whose labels or reference changed: the owners that may adopt it."""


class OwnerResolver:
    """Finds, in the owners' informer cache, the controller of kind ``kind`` an object
    belongs to. ``selector_of`` reads an owner's pod selector (default: the
    metav1.LabelSelector ``spec.selector``; raises SelectorParseError)."""

    __slots__ = ("_index", "_indexer", "_lister", "kind", "selector_of")

    def __init__(self, kind: str, owners: GenericInformer,
                 selector_of: Callable[[Obj], LabelSelector] = _label_selector) -> None:
        self.kind = kind
        self.selector_of = selector_of
        self._indexer = owners.informer.get_indexer()
        self._lister = owners.lister
        # One index per owner kind and selector reading (resolvers built alike on one
        # informer share it); None: the informer had started, :meth:`selecting` scans.
        name = f"pykcm.ownerSelector/{kind}/{getattr(selector_of, '__qualname__', '')}"
        self._index: str | None = name
        if name not in self._indexer.get_indexers():
            try:
                owners.informer.add_indexers({name: self._index_func})
            except (InformerAlreadyStartedError, IndexerConflictError):
                self._index = None

    def _index_func(self, owner: Obj) -> list[str]:
        ns = str(meta_of(owner).get("namespace") or "")
        try:
            sel = self.selector_of(owner)
        except SelectorParseError:
            return []  # matches nothing
        except Exception:  # noqa: BLE001 - a malformed owner: the scan's reading decides
            return [ns]
        return selector_index_values(ns, sel)

    def resolve(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        """The cached owner ``ref`` names, if it is of our kind and its UID matches."""
        if ref.get("kind") != self.kind:
            return None
        owner: Obj | None = self._indexer.get_by_key(f"{namespace}/{ref.get('name', '')}")
        if owner is None or meta_of(owner).get("uid") != ref.get("uid"):
            return None
        return owner

    def owner_of(self, obj: Obj) -> Obj | None:
        """The cached owner ``obj``'s controller reference names (None: none, or not ours)."""
        ref = get_controller_of(obj)
        if ref is None:
            return None
        return self.resolve(str(meta_of(obj).get("namespace") or ""), ref)

    def selecting(self, obj: Obj) -> list[Obj]:
        """The cached owners of ``obj``'s namespace whose selector matches its labels."""
        labels = labels_of(obj)
        if not labels:
            return []
        ns = str(meta_of(obj).get("namespace") or "")
        if self._index is None:
            return self.scan(ns, labels)
        by_index = self._indexer.by_index
        found: list[Obj] = []
        for value in label_index_values(ns, labels):
            for owner in by_index(self._index, value):
                if any(owner is o for o in found):
                    continue  # under two of the values (an In of two of its labels)
                if self._selects(owner, labels):
                    found.append(owner)
        if len(found) > 1:
            return self.scan(ns, labels)  # the scan's order (a rare user error)
        return found

    def scan(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]:
        """The cached owners of ``namespace`` whose selector matches ``labels``, each one
        tried in the namespace's order (what :meth:`selecting` answers, the slow way)."""
        return [owner for owner in self._lister.by_namespace(namespace).list()
                if self._selects(owner, labels)]

    def _selects(self, owner: Obj, labels: Mapping[str, str]) -> bool:
        """Whether ``owner``'s selector is valid, not empty, and matches ``labels``."""
        try:
            sel = self.selector_of(owner)
        except SelectorParseError:
            return False
        return not sel.empty and sel.matches(labels)

    def updated(self, old: Obj, cur: Obj) -> OwnerUpdate:
        """Whom the update ``old`` → ``cur`` of an object concerns: the former controller
        when the reference changed; the current one; for an orphan whose labels or
        reference changed, the owners that may adopt it now."""
        old_meta, cur_meta = meta_of(old), meta_of(cur)
        cur_ref, old_ref = get_controller_of(cur), get_controller_of(old)
        ref_changed = _refs_differ(old_ref, cur_ref)
        previous = None
        if ref_changed and old_ref is not None:
            previous = self.resolve(str(old_meta.get("namespace") or ""), old_ref)
        if cur_ref is not None:
            current = self.resolve(str(cur_meta.get("namespace") or ""), cur_ref)
            return OwnerUpdate(previous, current, [])
        label_changed = (cur_meta.get("labels") or {}) != (old_meta.get("labels") or {})
        candidates = self.selecting(cur) if label_changed or ref_changed else []
        return OwnerUpdate(previous, None, candidates)
