"""The ownership algorithm: an Update takes what it changed, an Apply merges, prunes and
may conflict.

Role: structured-merge-diff's ``merge.Updater`` for one API version (pykcm
serves one version per kind, so no conversion happens between managers).

- :func:`update`: the live object is compared with the new one; every other
  manager loses what was removed and what was changed (an update never
  conflicts: it takes the fields over); the updating manager owns its old set
  minus the removed paths plus the modified and added ones.
- :func:`apply`: the configuration is merged into the live object; the applier
  now owns exactly the configuration's field set; fields it applied last time
  and no longer applies are removed from the object unless another manager
  owns them (SMD's prune: remove the last applied set, put back what anyone
  owns, remove only what is dangling); then other managers whose fields would
  change conflict (unless ``force``, which takes the fields from them).

The strategy's reset fields (``status`` on the main resource, ``spec`` and more on
``/status``) are filtered out of what the writer gains, so a main-resource
writer never owns status. Data flow: :mod:`.field_manager` calls these with
decoded :class:`~.managed_fields.Managed` sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykcm.apiserver.fieldmanager.compare import Comparison, compare, json_equal
from pykcm.apiserver.fieldmanager.managed_fields import VersionedSet
from pykcm.apiserver.fieldmanager.merge import merge
from pykcm.apiserver.fieldmanager.path import Path
from pykcm.apiserver.fieldmanager.path_set import PathSet
from pykcm.apiserver.fieldmanager.remove_items import remove_items
from pykcm.apiserver.fieldmanager.schema import TypeSchema
from pykcm.apiserver.fieldmanager.to_field_set import to_field_set
from pykcm.apiserver.fieldmanager.typed import MISSING, ensure_named_fields_are_members


@dataclass(frozen=True)
class Conflict:
    manager: str        # the manager identifier
    path: Path


class Conflicts(Exception):
    def __init__(self, conflicts: list[Conflict]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts


def _filter(s: PathSet, reset: PathSet | None) -> PathSet:
    return s if reset is None or reset.empty() else s.recursive_difference(reset)


def _take_over(schema: TypeSchema, old: Any, new: Any, managers: dict[str, VersionedSet],
               writer: str, force: bool, reset: PathSet | None) -> Comparison:
    """Others lose what the write removed; on conflict (unless forced) raise."""
    cmp = compare(schema, old, new).filtered(reset)
    changed = cmp.modified.union(cmp.added)
    conflicts: dict[str, PathSet] = {}
    for name, vs in managers.items():
        if name == writer:
            continue
        c = vs.set.intersection(changed)
        if not c.empty():
            conflicts[name] = c
    if not force and conflicts:
        raise Conflicts([Conflict(name, p) for name, s in conflicts.items() for p in s.paths()])
    for name, c in conflicts.items():
        vs = managers[name]
        managers[name] = VersionedSet(vs.set.difference(c), vs.api_version, vs.applied)
    if not cmp.removed.empty():
        for name, vs in list(managers.items()):
            if name != writer:
                managers[name] = VersionedSet(vs.set.difference(cmp.removed), vs.api_version,
                                              vs.applied)
    for name in [n for n, vs in managers.items() if vs.set.empty()]:
        del managers[name]
    return cmp


def update(schema: TypeSchema, live: Any, new: Any, version: str,
           managers: dict[str, VersionedSet], manager: str,
           reset: PathSet | None = None) -> dict[str, VersionedSet]:
    managers = dict(managers)
    cmp = _take_over(schema, live, new, managers, manager, True, reset)
    prev = managers.get(manager)
    s = (prev.set if prev is not None else PathSet()).difference(cmp.removed)
    s = _filter(s.union(cmp.modified).union(cmp.added), reset)
    if s.empty():
        managers.pop(manager, None)
    else:
        managers[manager] = VersionedSet(s, version, False)
    return managers


def apply(schema: TypeSchema, live: Any, config: Any, version: str,
          managers: dict[str, VersionedSet], manager: str, force: bool,
          reset: PathSet | None = None) -> tuple[Any | None, dict[str, VersionedSet]]:
    """The new object (None when applying changed nothing) and the new ownership."""
    managers = dict(managers)
    merged = merge(schema, live, config)
    if merged is MISSING:
        merged = {}
    last = managers.get(manager)
    managers[manager] = VersionedSet(_filter(to_field_set(schema, config), reset), version, True)
    new = _prune(schema, merged, managers, manager, last)
    _take_over(schema, live, new, managers, manager, force, reset)
    if json_equal(live, new):
        return None, managers
    return new, managers


def _prune(schema: TypeSchema, merged: Any, managers: dict[str, VersionedSet], applier: str,
           last: VersionedSet | None) -> Any:
    if last is None or last.set.empty():
        return merged
    if last.set.difference(managers[applier].set).empty():
        # the applier still applies everything it did: whatever pruning removes, the
        # put-back of owned fields restores (a re-apply's common case, and the costly part)
        return merged

    def ensure(s: PathSet) -> PathSet:
        return ensure_named_fields_are_members(schema, s)

    last_set = ensure(last.set)
    pruned = remove_items(schema, merged, last_set)
    # put back what any manager (the applier's new set included) owns
    owned = PathSet()
    for vs in managers.values():
        owned = owned.union(vs.set)
    merged_set = ensure(to_field_set(schema, merged))
    pruned = remove_items(schema, merged, merged_set.difference(
        ensure(to_field_set(schema, pruned)).union(ensure(owned))))
    # remove only the dangling fields: applied last time, owned by nobody now
    pruned_set = ensure(to_field_set(schema, pruned))
    return remove_items(schema, merged, merged_set.difference(pruned_set).intersection(last_set))
