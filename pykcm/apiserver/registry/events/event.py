"""events.k8s.io/v1 Events: a view of the core/v1 Events in storage (event_view.py converts).

Writes through this view go to the core Event with this view's stricter
validation (the handlers pass :func:`validate_event_v1_create` /
:func:`validate_event_v1_update`); the view's table prints the converted object
with the core Event's columns. The strategy itself sees no writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    invalid,
    name_is_dns_subdomain,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core.event import (
    EVENT_COLUMNS,
    event_body,
    event_row,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_int, as_map, as_str, immutable

Obj = dict[str, Any]

# --- validation ------------------------------------------------------------------------

def _v1_event_body(obj: Mapping[str, Any]) -> list[Cause]:
    """legacyValidateEvent as an events.k8s.io request sees it: the reporter's field is
    named reportingController there."""
    out = []
    for e in event_body(obj):
        if e.field == "reportingComponent":
            e = dataclasses.replace(e, field="reportingController")
        out.append(e)
    return out


def validate_event_v1_create(obj: Mapping[str, Any]) -> list[Cause]:
    """The strict checks an Event created through events.k8s.io/v1 gets on top of the
    legacy ones (ValidateEventCreate); `obj` is the core/v1 form it is stored in."""
    errs = _v1_event_body(obj)
    errs += validate_object_meta(obj.get("metadata"), namespaced=True,
                                 name_validator=name_is_dns_subdomain)
    series = obj.get("series")
    if isinstance(series, dict):
        if (as_int(series.get("count")) or 0) < 2:
            errs.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            errs.append(required("series.lastObservedTime"))
    if not obj.get("eventTime"):
        errs.append(required("eventTime"))
    etype = as_str(obj.get("type"))
    if etype not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {etype}"))
    for key in ("firstTimestamp", "lastTimestamp"):
        if obj.get(key):
            errs.append(invalid(key, "", "needs to be unset"))
    if as_int(obj.get("count")):
        errs.append(invalid("count", "", "needs to be unset"))
    source = as_map(obj.get("source"))
    if source.get("component") or source.get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs


# (stored core/v1 field, the path ValidateEventUpdate names) of what may not change
_V1_EVENT_IMMUTABLE: Final = (
    ("involvedObject", "involvedObject"), ("reason", "reason"), ("message", "message"),
    ("source", "source"), ("firstTimestamp", "firstTimestamp"),
    ("lastTimestamp", "lastTimestamp"), ("count", "count"), ("reason", "reason"),
    ("type", "type"), ("eventTime", "eventTime"), ("action", "action"),
    ("related", "related"), ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"))


def validate_event_v1_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """ValidateEventUpdate for events.k8s.io/v1: what an Event's reporter wrote is fixed."""
    errs = _v1_event_body(new)
    errs += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    for key, path in _V1_EVENT_IMMUTABLE:
        errs += immutable(new.get(key), old.get(key), path)
    return errs


# --- printer ---------------------------------------------------------------------------

def _events_v1_as_core(obj: Mapping[str, Any]) -> dict[str, Any]:
    """events.k8s.io/v1 Event → the core fields the Event printer reads."""
    return {
        "metadata": obj.get("metadata"),
        "involvedObject": obj.get("regarding"),
        "message": obj.get("note"),
        "source": obj.get("deprecatedSource"),
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount"),
        "reportingComponent": obj.get("reportingController"),
        "reportingInstance": obj.get("reportingInstance"),
        "series": obj.get("series"),
        "eventTime": obj.get("eventTime"),
        "type": obj.get("type"),
        "reason": obj.get("reason"),
    }


def _events_v1_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return event_row(_events_v1_as_core(obj), now)


# --- the strategy ----------------------------------------------------------------------

@register
class EventViewStrategy(Strategy):
    group = "events.k8s.io"
    kind = "Event"
    printer = pr.Printer(EVENT_COLUMNS, _events_v1_row)

    # Writes are routed to the core Event (see the module doc): nothing to check here.
    def validate_create(self, obj: Obj) -> list[Cause]:
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return []

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return []
