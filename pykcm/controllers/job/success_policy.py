"""Success policy: when an Indexed Job counts as succeeded early (upstream ``success_policy.go``).

``spec.successPolicy.rules`` (Indexed Jobs only) declare the Job successful
before every index has completed: a rule with ``succeededIndexes`` ("0,2-4")
is met when all those indexes succeeded, or, with ``succeededCount`` too,
when that many of them did; a rule with only ``succeededCount`` is met when
that many indexes succeeded in total. The first rule met gives the Job the
interim ``SuccessCriteriaMet`` condition (reason ``SuccessPolicy``, message
"Matched rules at index N"); the remaining pods are then terminated and
the Job becomes ``Complete``.

Pure functions (JobSuccessPolicy is GA).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykcm.controllers.job.indexed_job_utils import OrderedIntervals, parse_indexes_from_string
from pykcm.controllers.job.utils import SUCCESS_CRITERIA_MET, find_condition_by_type

__all__ = [
    "has_success_criteria_met_condition",
    "is_success_criteria_met_condition",
    "match_succeeded_indexes_rule",
    "match_success_policy",
]


def match_success_policy(policy: Mapping[str, Any] | None, completions: int,
                         succeeded_indexes: OrderedIntervals) -> tuple[str, bool]:
    """``(message, met)`` for the first rule the succeeded indexes satisfy."""
    if policy is None or len(succeeded_indexes) == 0:
        return "", False
    for index, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes_from_string(str(rule["succeededIndexes"]), completions)
            # An unparsable (or out of range) rule never matches.
            if len(required) == 0:
                continue
            if match_succeeded_indexes_rule(required, succeeded_indexes,
                                            None if count is None else int(count)):
                return f"Matched rules at index {index}", True
        elif count is not None and succeeded_indexes.total() >= int(count):
            return f"Matched rules at index {index}", True
    return "", False


def match_succeeded_indexes_rule(rule_indexes: OrderedIntervals,
                                 succeeded_indexes: OrderedIntervals,
                                 succeeded_count: int | None) -> bool:
    """Whether all ``rule_indexes`` succeeded, or at least ``succeeded_count`` of them."""
    rules, done = rule_indexes.intervals, succeeded_indexes.intervals
    contains = 0
    r = s = 0
    while r < len(rules) and s < len(done):
        overlap = min(rules[r].last, done[s].last) - max(rules[r].first, done[s].first) + 1
        if overlap > 0:
            contains += overlap
        if done[s].last < rules[r].last:
            s += 1
        elif done[s].last > rules[r].last:
            r += 1
        else:
            s += 1
            r += 1
    return contains == rule_indexes.total() or (
        succeeded_count is not None and contains >= succeeded_count)


def has_success_criteria_met_condition(job: Mapping[str, Any]) -> Any:
    """The Job's True SuccessCriteriaMet condition, or None."""
    cond = find_condition_by_type((job.get("status") or {}).get("conditions"),
                                  SUCCESS_CRITERIA_MET)
    if cond is not None and cond.get("status") == "True":
        return cond
    return None


def is_success_criteria_met_condition(cond: Mapping[str, Any] | None) -> bool:
    """Whether ``cond`` is a True SuccessCriteriaMet condition."""
    return (cond is not None and cond.get("type") == SUCCESS_CRITERIA_MET
            and cond.get("status") == "True")
