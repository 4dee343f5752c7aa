"""metav1.Condition lists: find and set a condition as apimachinery ``meta/conditions.go`` does.

The kinds with ``[]metav1.Condition`` statuses (PodDisruptionBudget, CRDs' own
types, ...) keep one condition per type; writers set one by type and the
``lastTransitionTime`` moves only when the status changes. Conditions are the
JSON wire form: ``type``, ``status``, ``observedGeneration`` (omitted when 0),
``lastTransitionTime``, ``reason``, ``message`` (always present, possibly "").
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from pykcm.api.timestamps import format_time

__all__ = ["find_status_condition", "set_status_condition"]


def find_status_condition(conditions: Sequence[Mapping[str, Any]] | None,
                          ctype: str) -> Mapping[str, Any] | None:
    """The condition of type ``ctype``, or None (``meta.FindStatusCondition``)."""
    for c in conditions or ():
        if isinstance(c, Mapping) and c.get("type") == ctype:
            return c
    return None


def set_status_condition(conditions: list[dict[str, Any]], new: Mapping[str, Any],
                         now: float | None = None) -> bool:
    """Set ``new`` in ``conditions`` in place (``meta.SetStatusCondition``); whether it changed.

    A new type is appended with ``lastTransitionTime`` now (unless given); an
    existing one takes the new status (and a new transition time only if the
    status changed), reason, message and observedGeneration.
    """
    stamp = format_time(time.time() if now is None else now)
    for c in conditions:
        if c.get("type") != new.get("type"):
            continue
        changed = False
        if c.get("status") != new.get("status"):
            c["status"] = new.get("status")
            c["lastTransitionTime"] = new.get("lastTransitionTime") or stamp
            changed = True
        for field in ("reason", "message"):
            value = new.get(field) or ""
            if (c.get(field) or "") != value:
                c[field] = value
                changed = True
        gen = int(new.get("observedGeneration") or 0)
        if int(c.get("observedGeneration") or 0) != gen:
            if gen:
                c["observedGeneration"] = gen
            else:
                c.pop("observedGeneration", None)
            changed = True
        return changed
    cond: dict[str, Any] = {"type": new.get("type"), "status": new.get("status")}
    if new.get("observedGeneration"):
        cond["observedGeneration"] = int(new["observedGeneration"])
    cond["lastTransitionTime"] = new.get("lastTransitionTime") or stamp
    cond["reason"] = new.get("reason") or ""
    cond["message"] = new.get("message") or ""
    conditions.append(cond)
    return True
