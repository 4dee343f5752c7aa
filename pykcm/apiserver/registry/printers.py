"""Table printers: the columns and cells ``kubectl get`` shows (upstream's pkg/printers).

Role
----
Each registry strategy (``registry/<group>/<resource>.py``) names its
:class:`Printer`: column definitions plus a row function, the
``pkg/printers/internalversion/printers.go`` printer of its kind. This module
holds what those printers share: the :class:`Row` and :class:`Printer` types,
the Name/Age columns and the SwaggerDoc texts many columns reference, the
default printer (``Name``, ``Created At``: ``rest.NewDefaultTableConvertor``)
and the cell formatters (kubectl's HumanDuration, label and selector strings,
container/image lists).

Data flow: endpoints/tables.py (the Table the server answers) takes a
strategy's printer and calls ``row(obj, now_ns)`` once per object. Pure
functions over wire-form JSON; nothing here does I/O.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from pykcm.api.labels import selector_from_label_selector
from pykcm.apiserver.server_clock import CLOCK as SERVER_CLOCK

Obj = Mapping[str, Any]
Cells = list[Any]

# --- durations and timestamps -------------------------------------------------

_NS: Final = 1_000_000_000
_MINUTE: Final = 60 * _NS
_HOUR: Final = 60 * _MINUTE


def _go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Go's / on integers)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def human_duration_ns(d: int) -> str:
    seconds = _go_div(d, _NS)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = d // _MINUTE
    if minutes < 10:
        s = (d // _NS) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = d // _HOUR
    if hours < 8:
        m = (d // _MINUTE) % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration for a duration in seconds.

    "45s", "119s", "3m20s", "12m", "5h7m", "47h", "2d5h", "20d", "2y30d", "9y";
    up to 1s in the future is "0s", further is "<invalid>".
    """
    return human_duration_ns(int(seconds * _NS))


_UNIX_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_GO_ZERO_TIME: Final = _dt.datetime(1, 1, 1, tzinfo=_dt.UTC)


def parse_timestamp_ns(value: Any) -> int | None:
    """A metav1.Time / MicroTime JSON string as Unix nanoseconds; None for zero/absent."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = _dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    if t == _GO_ZERO_TIME:
        return None  # Go's zero time, IsZero()
    delta = t - _UNIX_EPOCH
    return (delta.days * 86400 + delta.seconds) * _NS + delta.microseconds * 1000


def now_ns(now: float | None) -> int:
    # None: now on the clock of the server running this request (server_clock.py)
    return int((SERVER_CLOCK.get().now() if now is None else now) * _NS)


def translate_timestamp_since(timestamp: Any, now: float | None = None) -> str:
    """printers' translateTimestampSince: HumanDuration(now - ts), "<unknown>" when unset."""
    ts = parse_timestamp_ns(timestamp)
    if ts is None:
        return "<unknown>"
    return human_duration_ns(now_ns(now) - ts)


def rfc3339_utc(value: Any) -> str:
    """time.Time.UTC().Format(time.RFC3339) of a metav1.Time (zero time when unset)."""
    ts = parse_timestamp_ns(value)
    if ts is None:
        return "0001-01-01T00:00:00Z"
    t = _UNIX_EPOCH + _dt.timedelta(microseconds=ts // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- small typed accessors over JSON -----------------------------------------

def as_dict(v: Any) -> Obj:
    return v if isinstance(v, Mapping) else {}


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def as_str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def as_int(v: Any, default: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        return default
    return v


def has(obj: Obj, key: str) -> bool:
    """A pointer field that is set (present and not null)."""
    return obj.get(key) is not None


# Go's unicode.IsSpace set, for strings.TrimSpace.
GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def format_labels(labels: Any) -> str:
    """labels.FormatLabels: sorted "k=v,..." or "<none>"."""
    m = as_dict(labels)
    if not m:
        return "<none>"
    return ",".join(f"{k}={m[k]}" for k in sorted(m))


def selector_string(selector: Any) -> str:
    """metav1.LabelSelectorAsSelector(...).String(); raises ValueError when invalid."""
    sel = selector if isinstance(selector, Mapping) else None
    try:
        return str(selector_from_label_selector(sel))
    except (ValueError, TypeError, AttributeError) as e:
        raise ValueError(str(e)) from e


def format_label_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid."""
    try:
        s = selector_string(selector)
    except ValueError:
        return "<error>"
    return s or "<none>"


def layout_container_cells(containers: Any) -> tuple[str, str]:
    names: list[str] = []
    images: list[str] = []
    for c in as_list(containers):
        c = as_dict(c)
        names.append(as_str(c.get("name")))
        images.append(as_str(c.get("image")))
    return ",".join(names), ",".join(images)


def bool_ptr(value: Any) -> str:
    if value is None:
        return "<unset>"
    return "True" if value is True else "False"


def join_host_port(host: str, port: int) -> str:
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host}:{port}"



# --- column definitions -------------------------------------------------------

def column(name: str, type_: str, description: str, *, fmt: str = "",
         priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description,
            "priority": priority}


# SwaggerDoc() texts (k8s.io/api v1.36) the upstream column definitions reference.
NAME_DESCRIPTION: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_TIMESTAMP_DESCRIPTION: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata"
)
CONTAINERS_DESCRIPTION: Final = "Names of each container in the template."
IMAGES_DESCRIPTION: Final = "Images referenced by each container in the template."
READY_PODS_DESCRIPTION: Final = "Number of the pod with ready state"
LABEL_SELECTORS_URL: Final = (
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)

NAME_COLUMN: Final = column("Name", "string", NAME_DESCRIPTION, fmt="name")
AGE_COLUMN: Final = column("Age", "string", CREATION_TIMESTAMP_DESCRIPTION)

DEFAULT_COLUMNS: Final = (
    NAME_COLUMN,
    column("Created At", "date", CREATION_TIMESTAMP_DESCRIPTION),
)


# --- printers -------------------------------------------------------------------

class Row(NamedTuple):
    """One Table row: its cells (in column order) and, for finished pods, row conditions."""

    cells: Cells
    conditions: list[dict[str, str]] | None = None


@dataclass(frozen=True, slots=True)
class Printer:
    """A kind's table printer: its column definitions and the function that prints one
    object as a row (``now`` in Unix nanoseconds, for the Age-like cells); ``metadata``,
    when set, gives an object's metadata as the table converter sees it (the internal
    object's) for the PartialObjectMetadata of includeObject=Metadata rows."""

    columns: tuple[dict[str, Any], ...]
    row: Callable[[Obj, int], Row]
    metadata: Callable[[Obj], Obj] | None = None


def object_name(obj: Obj) -> str:
    return as_str(as_dict(obj.get("metadata")).get("name"))


def age(obj: Obj, now: int) -> str:
    ts = parse_timestamp_ns(as_dict(obj.get("metadata")).get("creationTimestamp"))
    return "<unknown>" if ts is None else human_duration_ns(now - ts)


def since(value: Any, now: int) -> str:
    ts = parse_timestamp_ns(value)
    return "<unknown>" if ts is None else human_duration_ns(now - ts)


def pod_template_spec(obj: Obj) -> Obj:
    """spec.template.spec of a workload ({} when absent)."""
    return as_dict(as_dict(as_dict(obj.get("spec")).get("template")).get("spec"))


def default_row(obj: Obj, now: int) -> Row:
    return Row([object_name(obj),
                rfc3339_utc(as_dict(obj.get("metadata")).get("creationTimestamp"))])


DEFAULT_PRINTER: Final = Printer(DEFAULT_COLUMNS, default_row)
