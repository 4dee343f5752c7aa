"""``metadata.managedFields``: who owns which fields, decoded and encoded.

Role: apimachinery's ``managedfields/internal/managedfields.go``. In memory an
object's ownership is a :class:`Managed`: per *manager identifier* (the JSON of
the entry's manager, operation, apiVersion for Update and subresource, as
kube-apiserver keys it) a :class:`VersionedSet` (the fields, the apiVersion they
were written at, whether by Apply) and the entry's time.

Data flow: :func:`decode` reads the entries of the live object (a malformed
entry raises :class:`ManagedFieldsError`), the field manager changes the
:class:`Managed`, :func:`encode` writes the entries back sorted as kube-apiserver
sorts them: Apply before Update, then by time (whole seconds), manager,
apiVersion, subresource.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

from pykcm.api.timestamps import parse_time
from pykcm.apiserver.fieldmanager import fields_v1
from pykcm.apiserver.fieldmanager.path import go_json_string
from pykcm.apiserver.fieldmanager.path_set import PathSet

APPLY = "Apply"
UPDATE = "Update"


class ManagedFieldsError(ValueError):
    pass


class _IdentityCache:
    """Results per input object, by identity (the input is held, so its id stays its own).

    Every write decodes the live object's entries and encodes the new ones; most are the
    same objects as on the previous write of that object (sets are never mutated once
    built), so this saves the fieldsV1 walks that otherwise dominate an Update."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.items: OrderedDict[int, tuple[Any, Any]] = OrderedDict()

    def get(self, key: Any) -> Any:
        hit = self.items.get(id(key))
        if hit is None or hit[0] is not key:
            return None
        self.items.move_to_end(id(key))
        return hit[1]

    def put(self, key: Any, value: Any) -> None:
        self.items[id(key)] = (key, value)
        if len(self.items) > self.size:
            self.items.popitem(last=False)


_DECODED = _IdentityCache()
_ENCODED = _IdentityCache()


@dataclass
class VersionedSet:
    set: PathSet
    api_version: str
    applied: bool


@dataclass
class Managed:
    fields: dict[str, VersionedSet] = field(default_factory=dict)
    times: dict[str, str | None] = field(default_factory=dict)

    def copy(self) -> Managed:
        return Managed(dict(self.fields), dict(self.times))


def manager_identifier(manager: str, operation: str, api_version: str = "",
                       subresource: str = "") -> str:
    """The key of an entry: json.Marshal of the entry without fieldsType, fieldsV1 and time
    (and without apiVersion for Apply: an applier owns its fields whatever the version)."""
    entry: dict[str, str] = {}
    if manager:
        entry["manager"] = manager
    if operation:
        entry["operation"] = operation
    if api_version and operation != APPLY:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return "{" + ",".join(f"{go_json_string(k)}:{go_json_string(v)}" for k, v in entry.items()) + "}"


def parse_identifier(ident: str) -> dict[str, str]:
    out = json.loads(ident)
    if not isinstance(out, dict):
        raise ManagedFieldsError(f"error unmarshalling manager identifier {ident}")
    return out


def decode(entries: list[dict[str, Any]] | None) -> Managed:
    managed = Managed()
    for i, e in enumerate(entries or ()):
        if not isinstance(e, dict):
            raise ManagedFieldsError(f"managed fields entry {i} is not an object")
        op = e.get("operation")
        if op not in (APPLY, UPDATE):
            raise ManagedFieldsError("operation must be `Apply` or `Update`")
        if not e.get("apiVersion"):
            raise ManagedFieldsError("apiVersion must not be empty")
        ft = e.get("fieldsType") or ""
        if ft == "":
            raise ManagedFieldsError(f"missing fieldsType in managed fields entry {i}")
        if ft != "FieldsV1":
            raise ManagedFieldsError(f'invalid fieldsType "{ft}" in managed fields entry {i}')
        ident = manager_identifier(e.get("manager") or "", op, e["apiVersion"],
                                   e.get("subresource") or "")
        raw = e.get("fieldsV1") or {}
        s = _DECODED.get(raw)
        if s is None:
            try:
                s = fields_v1.decode(raw)
            except (ValueError, TypeError) as err:
                raise ManagedFieldsError(f"error decoding set: {err}") from err
            if isinstance(raw, dict):
                _DECODED.put(raw, s)
        managed.fields[ident] = VersionedSet(s, e["apiVersion"], op == APPLY)
        managed.times[ident] = e.get("time")
    return managed


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    """The entries (None when nobody owns anything: the field is left out)."""
    if not managed.fields:
        return None
    out = []
    for ident, vs in managed.fields.items():
        info = parse_identifier(ident)
        entry: dict[str, Any] = {}
        if info.get("manager"):
            entry["manager"] = info["manager"]
        entry["operation"] = APPLY if vs.applied else (info.get("operation") or UPDATE)
        entry["apiVersion"] = vs.api_version
        t = managed.times.get(ident)
        if t is not None:
            entry["time"] = t
        entry["fieldsType"] = "FieldsV1"
        encoded = _ENCODED.get(vs.set)
        if encoded is None:
            encoded = fields_v1.to_json(vs.set)
            _ENCODED.put(vs.set, encoded)
        # a copy: the caller owns the object it gets (the cached dict stays pristine)
        entry["fieldsV1"] = orjson.loads(orjson.dumps(encoded))
        if info.get("subresource"):
            entry["subresource"] = info["subresource"]
        out.append(entry)
    out.sort(key=entry_order)
    return out


def _seconds(t: str | None) -> int:
    if not t:
        return 0
    v = parse_time(t)
    return int(v) if v is not None else 0


def entry_order(e: dict[str, Any]) -> tuple[str, int, str, str, str]:
    return (e.get("operation", ""), _seconds(e.get("time")), e.get("manager", ""),
            e.get("apiVersion", ""), e.get("subresource", ""))
