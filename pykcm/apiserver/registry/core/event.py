"""core/v1 Events (pkg/registry/core/event): defaults, validation and printer. The
events.k8s.io/v1 view of the same objects is registry/events/event.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.validation import (
    Cause,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.defaulting import child_dict, go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_map, as_str

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

def _default_event(obj: Obj, create: bool) -> None:
    """core/v1 Event: the fields Go writes even when zero (struct, Time and string fields
    without omitempty)."""
    child_dict(obj, "involvedObject")
    child_dict(obj, "source")
    for k in ("firstTimestamp", "lastTimestamp", "eventTime"):
        obj.setdefault(k, None)
    for k in ("reportingComponent", "reportingInstance"):
        if obj.get(k) is None:
            obj[k] = ""


# --- validation ------------------------------------------------------------------------

def _path_segment_name(name: str, prefix: bool) -> list[str]:
    """path.ValidatePathSegmentName: what every name must satisfy to sit in a URL."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    errs = []
    for ch in ("/", "%"):
        if ch in name:
            errs.append(f"may not contain '{ch}'")
    return errs


def _validate_event(obj: Mapping[str, Any]) -> list[Cause]:
    """legacyValidateEvent, the only Event-specific check for core/v1 Events.

    Their names are free-form: only the generic check every object passes
    (a name that can sit in a URL path) applies to the metadata.
    """
    return event_meta_errors(obj) + event_body(obj)


def event_meta_errors(obj: Mapping[str, Any]) -> list[Cause]:
    return validate_object_meta(obj.get("metadata"), namespaced=True,
                                name_validator=_path_segment_name)


def event_body(obj: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    namespace = as_str(meta_of(obj).get("namespace"))
    inv_ns = as_str(as_map(obj.get("involvedObject")).get("namespace"))
    if not obj.get("eventTime"):
        if not inv_ns:
            if namespace not in ("", "default"):
                errs.append(invalid("involvedObject.namespace", inv_ns,
                                    "does not match event.namespace"))
        elif namespace != inv_ns:
            errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
    else:
        if not inv_ns and namespace != "kube-system":
            errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
        rc = as_str(obj.get("reportingComponent"))
        if not rc:
            errs.append(required("reportingComponent"))
        errs.extend(invalid("reportingComponent", rc, m) for m in is_qualified_name(rc))
        ri = as_str(obj.get("reportingInstance"))
        if not ri:
            errs.append(required("reportingInstance"))
        if len(ri) > 128:
            errs.append(invalid("reportingInstance", "", "can have at most 128 characters"))
        action = as_str(obj.get("action"))
        if not action:
            errs.append(required("action"))
        if len(action) > 128:
            errs.append(invalid("action", "", "can have at most 128 characters"))
        reason = as_str(obj.get("reason"))
        if not reason:
            errs.append(required("reason"))
        if len(reason) > 128:
            errs.append(invalid("reason", "", "can have at most 128 characters"))
        if len(as_str(obj.get("message"))) > 1024:
            errs.append(invalid("message", "", "can have at most 1024 characters"))
    errs.extend(invalid("namespace", namespace, m) for m in is_dns1123_subdomain(namespace))
    return errs


def _update_event(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
            + event_body(new))


# --- printer ---------------------------------------------------------------------------

EVENT_COLUMNS: Final = (
    pr.column("Last Seen", "string",
         "The time at which the most recent occurrence of this event was recorded."),
    pr.column("Type", "string",
         "Type of this event (Normal, Warning), new types could be added in the future"),
    pr.column("Reason", "string",
         "This should be a short, machine understandable string that gives the reason for the "
         "transition into the object's current status."),
    pr.column("Object", "string", "The object that this event is about."),
    pr.column("Subobject", "string",
         "If referring to a piece of an object instead of an entire object, this string should "
         "contain a valid JSON/Go field access statement, such as "
         "desiredState.manifest.containers[2]. For example, if the object reference is to a "
         "container within a pod, this would take on a value like: \"spec.containers{name}\" "
         "(where \"name\" refers to the name of the container that triggered the event) or if "
         "no container name is specified \"spec.containers[2]\" (container with index 2 in "
         "this pod). This syntax is chosen only to have some well-defined way of referencing a "
         "part of an object.", priority=1),
    pr.column("Source", "string",
         "The component reporting this event. Should be a short machine understandable "
         "string.", priority=1),
    pr.column("Message", "string", "A human-readable description of the status of this operation."),
    pr.column("First Seen", "string",
         "The time at which the event was first recorded. (Time of server receipt is in "
         "TypeMeta.)", priority=1),
    pr.column("Count", "string", "The number of times this event has occurred.", priority=1),
    pr.column("Name", "string", pr.NAME_DESCRIPTION, fmt="name", priority=1),
)


def event_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    """core/v1 Event (events.k8s.io/v1 Events are mapped onto it first)."""
    first_ts = pr.parse_timestamp_ns(obj.get("firstTimestamp"))
    if first_ts is None:
        first = pr.since(obj.get("eventTime"), now)
    else:
        first = pr.human_duration_ns(now - first_ts)
    last_ts = pr.parse_timestamp_ns(obj.get("lastTimestamp"))
    last = first if last_ts is None else pr.human_duration_ns(now - last_ts)
    count = pr.as_int(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, Mapping):
        last = pr.since(series.get("lastObservedTime"), now)
        count = pr.as_int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    involved = pr.as_dict(obj.get("involvedObject"))
    kind = pr.as_str(involved.get("kind")).lower()
    target = f"{kind}/{pr.as_str(involved.get('name'))}" if pr.as_str(involved.get("name")) else kind
    source = pr.as_dict(obj.get("source"))
    component = pr.as_str(source.get("component")) or pr.as_str(obj.get("reportingComponent"))
    instance = pr.as_str(source.get("host")) or pr.as_str(obj.get("reportingInstance"))
    source_str = f"{component}, {instance}" if instance else component
    return pr.Row([
        last, pr.as_str(obj.get("type")), pr.as_str(obj.get("reason")), target,
        pr.as_str(involved.get("fieldPath")), source_str, pr.as_str(obj.get("message")).strip(pr.GO_SPACE),
        first, count, pr.object_name(obj),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class EventStrategy(Strategy):
    kind = "Event"
    printer = pr.Printer(EVENT_COLUMNS, event_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_event(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate_event(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_event(new, old)
