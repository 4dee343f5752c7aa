"""Pod failure policy: what a failed pod means for its Job (upstream ``pod_failure_policy.go``).

``spec.podFailurePolicy.rules`` are tried in order against a failed pod;
the first rule whose requirement matches decides:

* ``FailJob``  - the whole Job fails at once (an interim FailureTarget
  condition carries the message below, then Failed);
* ``FailIndex`` - the pod's completion index fails (backoffLimitPerIndex);
* ``Ignore``   - the failure is not counted against any backoff limit;
* ``Count``    - counted as usual (the default when no rule matches).

A rule matches on ``onExitCodes`` (a terminated container, init containers
after regular ones, whose non-zero exit code is ``In`` / ``NotIn`` the
values, optionally of one named container) or on ``onPodConditions`` (a pod
condition with the given type and status, e.g. ``DisruptionTarget``).

Pure functions over wire-form dicts; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ACTION_COUNT",
    "ACTION_FAIL_INDEX",
    "ACTION_FAIL_JOB",
    "ACTION_IGNORE",
    "match_on_exit_codes",
    "match_on_pod_conditions",
    "match_pod_failure_policy",
]

ACTION_FAIL_JOB: Final = "FailJob"
ACTION_FAIL_INDEX: Final = "FailIndex"
ACTION_IGNORE: Final = "Ignore"
ACTION_COUNT: Final = "Count"


def _is_exit_code_operator_matching(exit_code: int, requirement: Mapping[str, Any]) -> bool:
    values = requirement.get("values") or ()
    op = requirement.get("operator")
    if op == "In":
        return exit_code in values
    if op == "NotIn":
        return exit_code not in values
    return False


def _matching_container(statuses: Any, requirement: Mapping[str, Any]
                        ) -> Mapping[str, Any] | None:
    want = requirement.get("containerName")
    for cs in statuses or ():
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is None:
            # Still terminating: there is no exit code to match yet.
            continue
        if want is not None and want != cs.get("name"):
            continue
        code = int(terminated.get("exitCode") or 0)
        if code != 0 and _is_exit_code_operator_matching(code, requirement):
            found: Mapping[str, Any] = cs
            return found
    return None


def match_on_exit_codes(pod_status: Mapping[str, Any], requirement: Mapping[str, Any]
                        ) -> Mapping[str, Any] | None:
    """The terminated container status matching ``requirement`` (containers first, then
    init containers), or None."""
    cs = _matching_container(pod_status.get("containerStatuses"), requirement)
    if cs is not None:
        return cs
    return _matching_container(pod_status.get("initContainerStatuses"), requirement)


def match_on_pod_conditions(pod_status: Mapping[str, Any], patterns: Any
                            ) -> Mapping[str, Any] | None:
    """The first pod condition equal in type and status to one of ``patterns``, or None."""
    for cond in pod_status.get("conditions") or ():
        for pattern in patterns or ():
            # The API server defaults a pattern's status to True.
            if (cond.get("type") == pattern.get("type")
                    and cond.get("status") == (pattern.get("status") or "True")):
                found: Mapping[str, Any] = cond
                return found
    return None


def match_pod_failure_policy(policy: Mapping[str, Any] | None, failed_pod: Mapping[str, Any]
                             ) -> tuple[str | None, bool, str | None]:
    """Match a failed pod against the rules (matchPodFailurePolicy).

    Returns ``(job_failure_message, count_failed, action)``: the message when
    a FailJob rule matched; whether the failure counts towards backoffLimit
    (and backoffLimitPerIndex) - False only for Ignore; the matched action,
    None when no rule matched (or no policy).
    """
    if policy is None:
        return None, True, None
    meta = failed_pod.get("metadata") or {}
    status = failed_pod.get("status") or {}
    for index, rule in enumerate(policy.get("rules") or ()):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            cs = match_on_exit_codes(status, rule["onExitCodes"])
            if cs is None:
                continue
            if action == ACTION_FAIL_JOB:
                code = int((cs.get("state") or {}).get("terminated", {}).get("exitCode") or 0)
                msg = (f"Container {cs.get('name')} for pod {meta.get('namespace')}/"
                       f"{meta.get('name')} failed with exit code {code} matching "
                       f"{action} rule at index {index}")
                return msg, True, ACTION_FAIL_JOB
        elif rule.get("onPodConditions") is not None:
            cond = match_on_pod_conditions(status, rule["onPodConditions"])
            if cond is None:
                continue
            if action == ACTION_FAIL_JOB:
                msg = (f"Pod {meta.get('namespace')}/{meta.get('name')} has condition "
                       f"{cond.get('type')} matching {action} rule at index {index}")
                return msg, True, ACTION_FAIL_JOB
        else:
            continue
        if action == ACTION_IGNORE:
            return None, False, ACTION_IGNORE
        if action == ACTION_FAIL_INDEX:
            return None, True, ACTION_FAIL_INDEX
        if action == ACTION_COUNT:
            return None, True, ACTION_COUNT
        # An unknown action falls through to the next rule, as Go's switch does.
    return None, True, None
