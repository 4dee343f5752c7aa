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

What each controller does with the owner differs on purpose (expectations
observed or not, a minReadySeconds re-check, a deletionTimestamp taken as a
delete): that stays in each controller's handlers, as upstream's differ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pykcm.api.accessors import meta_of, spec_of
from pykcm.api.labels import LabelSelector, SelectorParseError, selector_from_label_selector
from pykcm.api.owner_refs import get_controller_of
from pykcm.informers.generic import GenericInformer

__all__ = ["OwnerResolver", "OwnerUpdate", "controller_ref_changed"]

log = logging.getLogger("pykcm.controller")

Obj = Mapping[str, Any]


def _label_selector(owner: Obj) -> LabelSelector:
    return selector_from_label_selector(spec_of(owner).get("selector"))


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

    __slots__ = ("_indexer", "_lister", "kind", "selector_of")

    def __init__(self, kind: str, owners: GenericInformer,
                 selector_of: Callable[[Obj], LabelSelector] = _label_selector) -> None:
        self.kind = kind
        self.selector_of = selector_of
        self._indexer = owners.informer.get_indexer()
        self._lister = owners.lister

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
        meta = meta_of(obj)
        labels = meta.get("labels")
        if not labels:
            return []
        out: list[Obj] = []
        for owner in self._lister.by_namespace(str(meta.get("namespace") or "")).list():
            try:
                sel = self.selector_of(owner)
            except SelectorParseError:
                continue
            if sel.empty or not sel.matches(labels):
                continue
            out.append(owner)
        return out

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
