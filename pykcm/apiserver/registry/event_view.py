"""events.k8s.io/v1 Events: a second view of the core/v1 Events in storage.

kube-apiserver stores one kind of Event and serves it at both
/api/v1/.../events and /apis/events.k8s.io/v1/.../events, converting field
names on the way in and out (pkg/apis/events/v1/conversion.go). The handlers
route events.k8s.io requests to the core resource and pass bodies, list items
and watch lines through `to_core` / `to_view`.
"""

from __future__ import annotations

from typing import Any

import orjson

from pykcm.apiserver.errors import StatusError

VIEW_API_VERSION = "events.k8s.io/v1"

# events.k8s.io/v1 field ↔ core/v1 field (the rest have the same name in both).
_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
)
_TO_CORE = dict(_RENAMES)
_TO_VIEW = {core: view for view, core in _RENAMES}


def _rename(obj: dict[str, Any], names: dict[str, str], api_version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Event", "apiVersion": api_version}
    for k, v in obj.items():
        if k in ("kind", "apiVersion"):
            continue
        out[names.get(k, k)] = v
    return out


def to_core(view: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as the core/v1 Event it is stored as."""
    return _rename(view, _TO_CORE, "v1")


# events.k8s.io/v1 fields with omitempty: a zero value is left out (the core ones are not
# all omitempty: reportingComponent "" is written there, not here).
_VIEW_OMITEMPTY = ("reason", "note", "type", "action", "reportingController",
                   "reportingInstance", "deprecatedCount")


def to_view(core: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 presents it."""
    view = _rename(core, _TO_VIEW, VIEW_API_VERSION)
    for k in _VIEW_OMITEMPTY:
        if k in view and not view[k]:
            del view[k]
    # structs and metav1.Time fields Go always writes
    view.setdefault("regarding", {})
    view.setdefault("deprecatedSource", {})
    for k in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "eventTime"):
        view.setdefault(k, None)
    return view


def view_line(line: bytes) -> bytes:
    """A core watch line re-encoded for an events.k8s.io watcher."""
    ev = orjson.loads(line)
    obj = ev.get("object")
    if ev.get("type") == "BOOKMARK" and isinstance(obj, dict):
        # an empty events.k8s.io Event with the bookmark's metadata
        ev["object"] = to_view({"metadata": obj.get("metadata") or {}})
    elif ev.get("type") != "ERROR" and isinstance(obj, dict):
        ev["object"] = to_view(obj)
    return orjson.dumps(ev) + b"\n"


def view_error(err: StatusError) -> StatusError:
    """An error of the core storage as the events.k8s.io resource reports it
    (events.events.k8s.io in messages, the group in details)."""
    d = err.details
    if d is not None and d.get("kind") == "events" and not d.get("group"):
        details = {**d, "group": "events.k8s.io"}
        if "name" in details:  # group after name, as Go orders StatusDetails
            details = {"name": details.pop("name"), **details}
        return StatusError(err.code, err.reason,
                           err.message.replace('events "', 'events.events.k8s.io "', 1),
                           details=details, headers=err.headers)
    return err
