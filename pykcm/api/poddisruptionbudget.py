"""PodDisruptionBudget status helpers shared by the disruption controller and the eviction
subresource (k8s.io/component-helpers ``apps/poddisruptionbudget``, and policy/v1's names).

Both writers of a budget's status keep its ``DisruptionAllowed`` condition in step
with ``disruptionsAllowed``: the controller after each sync, the API server's
eviction handler when its decrement reaches 0. The condition carries no message
(reasons ``SufficientPods`` / ``InsufficientPods``); ``SyncFailed`` is the
controller's fail-safe, with the error as message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of, status_of
from pykcm.api.conditions import find_status_condition, set_status_condition

__all__ = [
    "DISRUPTION_ALLOWED_CONDITION",
    "DISRUPTION_BUDGET_CAUSE",
    "INSUFFICIENT_PODS_REASON",
    "SUFFICIENT_PODS_REASON",
    "SYNC_FAILED_REASON",
    "conditions_are_up_to_date",
    "update_disruption_allowed_condition",
]

DISRUPTION_ALLOWED_CONDITION: Final = "DisruptionAllowed"
SYNC_FAILED_REASON: Final = "SyncFailed"
SUFFICIENT_PODS_REASON: Final = "SufficientPods"
INSUFFICIENT_PODS_REASON: Final = "InsufficientPods"
DISRUPTION_BUDGET_CAUSE: Final = "DisruptionBudget"
"""The Status cause type of a refused eviction (policy/v1 ``DisruptionBudgetCause``)."""


def update_disruption_allowed_condition(status: dict[str, Any], now: float | None = None) -> None:
    """Set ``status.conditions``' DisruptionAllowed from ``status.disruptionsAllowed``
    (upstream ``UpdateDisruptionAllowedCondition``), in place."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    set_status_condition(conditions, {
        "type": DISRUPTION_ALLOWED_CONDITION,
        "status": "True" if allowed else "False",
        "reason": SUFFICIENT_PODS_REASON if allowed else INSUFFICIENT_PODS_REASON,
        "observedGeneration": int(status.get("observedGeneration") or 0)}, now)


def conditions_are_up_to_date(pdb: Mapping[str, Any]) -> bool:
    """Whether DisruptionAllowed matches ``disruptionsAllowed`` and the status observed the
    budget's generation (upstream ``ConditionsAreUpToDate``)."""
    st = status_of(pdb)
    cond = find_status_condition(st.get("conditions"), DISRUPTION_ALLOWED_CONDITION)
    if cond is None:
        return False
    if int(st.get("observedGeneration") or 0) != int(meta_of(pdb).get("generation") or 0):
        return False
    if int(st.get("disruptionsAllowed") or 0) > 0:
        return cond.get("status") == "True" and cond.get("reason") == SUFFICIENT_PODS_REASON
    return cond.get("status") == "False" and cond.get("reason") == INSUFFICIENT_PODS_REASON
