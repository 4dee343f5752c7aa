"""Transitional: the events.k8s.io/v1 view's validation moved to registry/events/event.py
(with every kind's rules to registry/); these two names stay importable here until
their callers in flight (version_view.py) import them from there. Delete then.
"""

from __future__ import annotations

from typing import Any

from pykcm.api.validation import Cause

Obj = dict[str, Any]


def validate_event_v1_create(obj: Obj) -> list[Cause]:
    from pykcm.apiserver.registry.events import event
    return event.validate_event_v1_create(obj)


def validate_event_v1_update(new: Obj, old: Obj) -> list[Cause]:
    from pykcm.apiserver.registry.events import event
    return event.validate_event_v1_update(new, old)
