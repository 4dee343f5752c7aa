"""Resources served as a view of another resource's storage, converted on the way in and
out: events.k8s.io/v1 Events (stored as core/v1 Events, event_view.py) and autoscaling/v1
HorizontalPodAutoscalers (stored as autoscaling/v2, registry/autoscaling/v1_conversion.py).

kube-apiserver stores one version of a resource and converts every request of another
version through its internal type; pykcm converts directly between the served and the
stored wire forms. The handlers route a view's requests to the stored resource and pass
bodies, list items and watch lines through the view's functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.registry import event_view
from pykcm.apiserver.registry.autoscaling import v1_conversion
from pykcm.apiserver.registry.events.event import validate_event_v1_create, validate_event_v1_update

__all__ = ["VIEWS", "VersionView"]

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class VersionView:
    """How one served (group, version) of a resource maps to its storage."""

    stored: tuple[str, str, str]  # (group, version, plural) of the stored resource
    list_kind: str
    to_stored: Callable[[Obj], Obj]
    to_view: Callable[[Obj], Obj]
    # a subresource other than the main resource the view serves (HPA v1: status)
    subresources: tuple[str, ...] = ()
    # the view's own validation (None: the stored kind's strategy)
    validate_create: Callable[..., Any] | None = None
    validate_update: Callable[..., Any] | None = None
    error: Callable[[StatusError], StatusError] = lambda err: err
    # tables printed from the stored object (its printer reads fields the view lacks)
    table_of_stored: bool = False

    def view_line(self, line: bytes) -> bytes:
        """A stored watch line re-encoded for a watcher of the view."""
        ev = orjson.loads(line)
        obj = ev.get("object")
        if ev.get("type") == "BOOKMARK" and isinstance(obj, dict):
            ev["object"] = self.to_view({"metadata": obj.get("metadata") or {}})
        elif ev.get("type") != "ERROR" and isinstance(obj, dict):
            ev["object"] = self.to_view(obj)
        return orjson.dumps(ev) + b"\n"


VIEWS: Final[dict[tuple[str, str], VersionView]] = {
    ("events.k8s.io", "v1"): VersionView(
        stored=("", "v1", "events"), list_kind="EventList",
        to_stored=event_view.to_core, to_view=event_view.to_view,
        validate_create=validate_event_v1_create,
        validate_update=validate_event_v1_update,
        error=event_view.view_error),
    ("autoscaling", "v1"): VersionView(
        stored=("autoscaling", "v2", "horizontalpodautoscalers"),
        list_kind="HorizontalPodAutoscalerList",
        to_stored=v1_conversion.to_v2, to_view=v1_conversion.to_v1, subresources=("status",),
        table_of_stored=True),
}
