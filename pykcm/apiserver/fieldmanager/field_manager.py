"""The field manager of one kind (and subresource): managedFields on every write.

Role: apimachinery's ``managedfields`` FieldManager with kube-apiserver's default
stack of managers, outermost first:

- version check (apply): the applied object's apiVersion/kind must be the kind's
  (400 ``invalid object type``);
- last-applied (apply, manager ``kubectl`` only): the client-side to server-side
  upgrade path. Conflicts on fields whose live value still equals the
  ``kubectl.kubernetes.io/last-applied-configuration`` annotation are forced;
  after an apply the annotation, when present, is rewritten to the new
  configuration;
- skip non-applied: an existing object that has no managedFields gets none on
  update; the first apply to it first records every existing field under the
  Update manager ``before-first-apply``;
- cap managers: at most 10 Update entries; the oldest are merged into
  ``ancient-changes`` entries per apiVersion;
- manager info: ``manager`` becomes the identifier (operation, apiVersion for
  Update, subresource); an empty manager is ``unknown``;
- the updater: an Update's fields are computed as ``current-operation`` then
  merged into the manager's previous set, with ``time`` set when it gained any;
  an Apply sets ``time`` only when the object changed;
- strip meta: ``apiVersion``, ``kind``, ``metadata`` itself and its
  system fields (name, namespace, uid, resourceVersion, generation,
  creationTimestamp, managedFields, ...) are owned by no one;
- structured merge: :mod:`.updater` with the strategy's reset fields.

Data flow: the handler calls :meth:`FieldManager.update` (create, update, any
non-apply patch) with the live and new objects, or :meth:`FieldManager.apply`
with the live object (``None`` to create) and the applied configuration; both
return the new object with ``metadata.managedFields`` set. The caller then runs
its strategy (status/spec split), defaulting and validation as for any write.
Errors are :class:`~pykcm.apiserver.errors.StatusError` (conflicts: 409 with
kube-apiserver's message and causes, :mod:`.conflicts`).

Deviation: managedFields from a request (allowed on update) are taken only when
they decode, as upstream; an undecodable set from the live object is dropped
silently on update and answered 500 on apply, as upstream.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from pykcm.apiserver import errors
from pykcm.apiserver.fieldmanager import fields_v1, fields_v1_edit, updater
from pykcm.apiserver.fieldmanager.compare import compare
from pykcm.apiserver.fieldmanager.conflicts import conflict_error
from pykcm.apiserver.fieldmanager.managed_fields import (
    APPLY,
    UPDATE,
    Managed,
    ManagedFieldsError,
    VersionedSet,
    decode,
    encode,
    entry_order,
    manager_identifier,
)
from pykcm.apiserver.fieldmanager.path import field
from pykcm.apiserver.fieldmanager.path_set import PathSet
from pykcm.apiserver.fieldmanager.schema import TypeSchema
from pykcm.apiserver.fieldmanager.to_field_set import to_field_set
from pykcm.apiserver.fieldmanager.typed import TypedError
from pykcm.apiserver.fieldmanager.validate import config_errors
from pykcm.apiserver.server_clock import now_rfc3339

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10
_STRIP = PathSet.of(
    [field("apiVersion")], [field("kind")], [field("metadata")],
    *[[field("metadata"), field(n)] for n in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion")])


_STRIP_PATHS = list(_STRIP.paths())


def _now() -> str:
    # managedFields times: the clock of the server running this request (server_clock.py)
    return now_rfc3339()


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    meta = dict(_meta(obj))
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _gv(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


class FieldManager:
    def __init__(self, schema: TypeSchema, group: str, version: str, kind: str, *,
                 subresource: str = "", reset_fields: PathSet | None = None,
                 defaulter: Callable[[dict[str, Any]], None] | None = None,
                 zero_fields: dict[str, Any] | None = None,
                 track_untracked: bool = True,
                 now: Callable[[], str] = _now) -> None:
        self.schema = schema
        self.group, self.version, self.kind = group, version, kind
        self.api_version = _gv(group, version)
        self.subresource = subresource
        self.reset = reset_fields
        self.defaulter = defaulter
        self.zero_fields = zero_fields or {}
        # False: upstream's skip-non-applied manager with probability 0 (pykcm's server):
        # an Update starts no tracking; objects get managedFields from their first apply
        self.track_untracked = track_untracked
        self.now = now

    # --- Update ---------------------------------------------------------------------------

    def update(self, live: dict[str, Any] | None, new: dict[str, Any], manager: str
               ) -> dict[str, Any]:
        """``new`` with the managedFields of an Update by ``manager`` (``live`` None: create)."""
        fast = (self._update_entries(live, new, manager or "unknown") if live is not None
                else self._create_entry(new, manager or "unknown"))
        if fast is not None:
            return fast
        live = live if live is not None else self._empty()
        managed = self._decode_live_or_new(live, new)
        new = _without_managed_fields(new)
        if not managed.fields and (_meta(live).get("uid") or not self.track_untracked):
            return new      # an existing object nobody tracks stays untracked
        try:
            managed = self._update(live, new, managed, manager or "unknown")
        except TypedError:
            return new      # UpdateNoErrors: an object SMD cannot type loses its managedFields
        return self._encoded(new, managed)

    def _create_entry(self, new: dict[str, Any], manager: str) -> dict[str, Any] | None:
        """A create's one entry, the set built once and trimmed in place (the general path
        copies the whole set at each step). None when the request sends managedFields."""
        if _meta(new).get("managedFields"):
            return None
        new = _without_managed_fields(new)
        try:
            cmp = compare(self.schema, self._empty(), new)
        except TypedError:
            return new
        owned = cmp.added if cmp.modified.empty() else cmp.added.union(cmp.modified)
        for p in (self.reset.paths() if self.reset is not None else ()):
            owned.discard(p, recursive=True)
        for p in _STRIP_PATHS:
            owned.discard(p)
        if owned.empty():
            return new
        entry: dict[str, Any] = {"manager": manager, "operation": UPDATE,
                                 "apiVersion": self.api_version, "time": self.now(),
                                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1.to_json(owned)}
        if self.subresource:
            entry["subresource"] = self.subresource
        new["metadata"]["managedFields"] = [entry]
        return new

    def _update_entries(self, live: dict[str, Any], new: dict[str, Any], manager: str
                        ) -> dict[str, Any] | None:
        """An Update computed on the live object's encoded entries: only the paths the
        write changed are edited (:mod:`.fields_v1_edit`), so its cost follows the size of
        the change. None when the general path must decide: a create, entries the request
        replaces, entries not as this module writes them, the cap on Update managers."""
        entries = _meta(live).get("managedFields")
        if not entries or not isinstance(entries, list):
            return None
        if not self.subresource:
            sent = _meta(new).get("managedFields")
            if sent is not None and sent is not entries and sent != entries:
                return None
        writer = (manager, UPDATE, self.api_version, self.subresource)
        idents = set()
        updaters = 0
        mine = -1
        for i, e in enumerate(entries):
            if not (isinstance(e, dict) and e.get("operation") in (APPLY, UPDATE)
                    and e.get("apiVersion") and e.get("fieldsType") == "FieldsV1"
                    and isinstance(e.get("fieldsV1"), dict) and e["fieldsV1"]):
                return None
            op = e["operation"]
            ident = (e.get("manager") or "", op, e["apiVersion"] if op == UPDATE else "",
                     e.get("subresource") or "")
            if ident in idents:
                return None
            idents.add(ident)
            if op == UPDATE:
                updaters += 1
            if ident == writer:
                mine = i
        new = _without_managed_fields(new)
        try:
            cmp = compare(self.schema, _without_managed_fields(live), new).filtered(self.reset)
        except TypedError:
            return new      # as the general path: an object SMD cannot type loses them
        changed = cmp.modified.union(cmp.added)
        gained = changed.difference(_STRIP)
        if mine < 0 and not gained.empty() and updaters >= MAX_UPDATE_MANAGERS:
            return None     # ancient-changes: the general path merges the oldest
        lost = [fields_v1_edit.keys_of(p) for p in changed.union(cmp.removed).paths()]
        out: list[dict[str, Any]] = []
        for i, e in enumerate(entries):
            tree = e["fieldsV1"]
            for keys in lost:
                tree = fields_v1_edit.remove(tree, keys)
            if i == mine and not gained.empty():
                for p in gained.paths():
                    tree = fields_v1_edit.insert(tree, fields_v1_edit.keys_of(p))
                e = {**e, "time": self.now(), "fieldsV1": tree}
            elif tree is not e["fieldsV1"]:
                e = {**e, "fieldsV1": tree}
            if tree:
                out.append(e)
        if mine < 0 and not gained.empty():
            tree = {}
            for p in gained.paths():
                tree = fields_v1_edit.insert(tree, fields_v1_edit.keys_of(p))
            entry: dict[str, Any] = {"manager": manager, "operation": UPDATE,
                                     "apiVersion": self.api_version, "time": self.now(),
                                     "fieldsType": "FieldsV1", "fieldsV1": tree}
            if self.subresource:
                entry["subresource"] = self.subresource
            out.append(entry)
        out.sort(key=entry_order)
        meta = new["metadata"]
        if out:
            meta["managedFields"] = out
        else:
            meta.pop("managedFields", None)
        return new

    def _decode_live_or_new(self, live: dict[str, Any], new: dict[str, Any]) -> Managed:
        live_mf = _meta(live).get("managedFields")
        if not self.subresource:
            new_mf = _meta(new).get("managedFields", None)
            if _is_reset(new_mf, "managedFields" in _meta(new)):
                return Managed()
            if new_mf is not None and new_mf == live_mf:
                new_mf = live_mf     # sent back unchanged: the live entries (decoded before)
            try:
                m = decode(new_mf)
                if m.fields:
                    return m
            except ManagedFieldsError:
                pass
        try:
            return decode(live_mf)
        except ManagedFieldsError:
            return Managed()

    def _update(self, live: dict[str, Any], new: dict[str, Any], managed: Managed,
                manager: str) -> Managed:
        ident = manager_identifier(manager, UPDATE, self.api_version, self.subresource)
        current = "current-operation"
        fields = updater.update(self.schema, _without_managed_fields(live), new,
                                self.api_version, managed.fields, current, self.reset)
        self._strip(fields, current)
        times = dict(managed.times)
        vs = fields.pop(current, None)
        if vs is not None:
            prev = fields.get(ident)
            fields[ident] = vs if prev is None else VersionedSet(
                vs.set.union(prev.set), vs.api_version, vs.applied)
            times[ident] = self.now()
        return self._cap(Managed(fields, times))

    def _cap(self, managed: Managed) -> Managed:
        updaters = [m for m, vs in managed.fields.items() if not vs.applied]
        if len(updaters) <= MAX_UPDATE_MANAGERS:
            return managed
        updaters.sort(key=lambda m: (_unix(managed.times.get(m)), m))
        length = len(updaters)
        first_by_version: dict[str, str] = {}
        for m in updaters:
            if length <= MAX_UPDATE_MANAGERS:
                break
            vs = managed.fields[m]
            bucket = manager_identifier("ancient-changes", UPDATE, vs.api_version)
            first = first_by_version.get(vs.api_version)
            if first is None:
                first_by_version[vs.api_version] = m
                continue
            if bucket not in managed.fields:
                managed.fields[bucket] = managed.fields.pop(first)
            managed.fields[bucket] = VersionedSet(
                vs.set.union(managed.fields[bucket].set), vs.api_version, vs.applied)
            del managed.fields[m]
            length -= 1
            managed.times[bucket] = managed.times.get(m)
        return managed

    # --- Apply ----------------------------------------------------------------------------

    def apply(self, live: dict[str, Any] | None, applied: dict[str, Any], manager: str,
              force: bool = False) -> dict[str, Any]:
        """The object after ``manager`` applies ``applied`` (``live`` None: create on apply).
        Raises StatusError: 400 for a wrong kind or version, 409 for conflicts."""
        live = live if live is not None else self._empty()
        try:
            managed = decode(_meta(live).get("managedFields"))
        except ManagedFieldsError as e:
            raise errors.internal(f"failed to decode managed fields: {e}") from e
        self.check_applied(applied)
        try:
            obj, managed = self._apply_tracking(live, applied, managed, manager, force)
        except updater.Conflicts as c:
            conflicts = c.conflicts
            if manager == "kubectl":
                allowed = self._allowed_from_last_applied(live)
                if allowed is not None:
                    rest = [x for x in conflicts if not allowed.has(x.path)]
                    if not rest:
                        obj, managed = self._apply_tracking(live, applied, managed, manager,
                                                            True)
                        return self._after_apply(obj, applied, managed, manager)
                    conflicts = rest
            raise conflict_error(conflicts) from None
        return self._after_apply(obj, applied, managed, manager)

    def check_applied(self, applied: dict[str, Any]) -> None:
        """The configuration's kind and version, no managedFields, and SMD's typed
        conversion (list keys, scalar types, shapes, undeclared fields): 400, 400, 500."""
        gv, kind = applied.get("apiVersion"), applied.get("kind")
        if gv != self.api_version or kind != self.kind:
            raise errors.bad_request(f"invalid object type: {_gvk_string(gv, kind)}")
        if _meta(applied).get("managedFields") is not None:
            raise errors.bad_request("metadata.managedFields must be nil")
        problems = config_errors(self.schema, applied)
        if problems:
            meta = _meta(applied)
            # SMD's ValidationErrors: one error alone, else a list under "errors:"
            text = problems[0] if len(problems) == 1 else "errors:\n  " + "\n  ".join(problems)
            raise errors.bare_internal(
                f"failed to create typed patch object ({meta.get('namespace') or ''}/"
                f"{meta.get('name') or ''}; {_gvk_string(gv, kind)}): {text}")

    def _after_apply(self, obj: dict[str, Any], applied: dict[str, Any], managed: Managed,
                     manager: str) -> dict[str, Any]:
        if manager == "kubectl":
            ann = _meta(obj).get("annotations") or {}
            if ann.get(LAST_APPLIED):
                config = copy.deepcopy(applied)
                cann = _meta(config).get("annotations")
                if isinstance(cann, dict):
                    cann.pop(LAST_APPLIED, None)
                meta = dict(_meta(obj))
                meta["annotations"] = {**ann, LAST_APPLIED: _go_marshal(config) + "\n"}
                obj = {**obj, "metadata": meta}
        return self._encoded(obj, managed)

    def _apply_tracking(self, live: dict[str, Any], applied: dict[str, Any], managed: Managed,
                        manager: str, force: bool) -> tuple[dict[str, Any], Managed]:
        live_plain = _without_managed_fields(live)
        if not managed.fields:
            managed = self._update(self._empty(), live_plain, managed, "before-first-apply")
        ident = manager_identifier(manager or "unknown", APPLY, "", self.subresource)
        new, fields = updater.apply(self.schema, live_plain, applied, self.api_version,
                                    managed.fields, ident, force, self.reset)
        self._strip(fields, ident)
        times = dict(managed.times)
        if new is None:
            return copy.deepcopy(live_plain), Managed(fields, times)
        times[ident] = self.now()
        if self.defaulter is not None:
            self.defaulter(new)
        return new, Managed(fields, times)

    def _allowed_from_last_applied(self, live: dict[str, Any]) -> PathSet | None:
        """The fields whose live value is still what the last client-side apply set."""
        raw = (_meta(live).get("annotations") or {}).get(LAST_APPLIED)
        if not raw:
            return None
        try:
            last = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(last, dict) or last.get("apiVersion") != self.api_version:
            return None
        live_plain = _without_managed_fields(live)
        s = to_field_set(self.schema, last)
        cmp = compare(self.schema, last, live_plain)
        return s.difference(cmp.modified).difference(cmp.added).difference(cmp.removed)

    # --- shared ---------------------------------------------------------------------------

    def _empty(self) -> dict[str, Any]:
        """A new object of the kind as Go's typed zero value reads: the structs that are
        not pointers are there, empty (so a create does not own ``spec`` itself, only
        what is under it; ``zero_fields``, e.g. defaults.zero_object_fields)."""
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": {},
                **_structs_only(self.zero_fields)}

    @staticmethod
    def _strip(fields: dict[str, VersionedSet], manager: str) -> None:
        vs = fields.get(manager)
        if vs is None:
            return
        s = vs.set.difference(_STRIP)
        if s.empty():
            del fields[manager]
        else:
            fields[manager] = VersionedSet(s, vs.api_version, vs.applied)

    @staticmethod
    def _encoded(obj: dict[str, Any], managed: Managed) -> dict[str, Any]:
        out = dict(obj)
        meta = dict(_meta(obj))
        entries = encode(managed)
        if entries is None:
            meta.pop("managedFields", None)
        else:
            meta["managedFields"] = entries
        out["metadata"] = meta
        return out


def _structs_only(fields: dict[str, Any]) -> dict[str, Any]:
    """The (nested) empty structs and nil lists of a zero object: its scalars (a
    Deployment's ``replicas: 0`` of the encoded zero value) are no value of a new object."""
    return {k: _structs_only(v) if isinstance(v, dict) else None
            for k, v in fields.items() if v is None or isinstance(v, dict)}


def _is_reset(mf: Any, present: bool) -> bool:
    """``managedFields: []`` or ``[{}]`` in a request clears the field (a missing field or
    null keeps the live entries)."""
    if not present or mf is None:
        return False
    if isinstance(mf, list) and not mf:
        return True
    return isinstance(mf, list) and len(mf) == 1 and mf[0] == {}


def _unix(t: str | None) -> int:
    from pykcm.api.timestamps import parse_time
    v = parse_time(t) if t else None
    return int(v) if v is not None else 0


def _gvk_string(gv: Any, kind: Any) -> str:
    gv = gv if isinstance(gv, str) else ""
    group, _, version = gv.rpartition("/")
    return f"{group}/{version}, Kind={kind if isinstance(kind, str) else ''}"


def _go_marshal(v: Any) -> str:
    from pykcm.apiserver.crd.schema import go_json
    return go_json(v)
