"""Job helpers shared by the Job, TTL-after-finished and CronJob controllers.

Upstream ``pkg/controller/job/util`` (``IsJobFinished``, ``FinishedCondition``,
``IsJobSucceeded``) and the small condition and pod predicates of
``job_controller.go`` that the other modules of this package need
(``isPodFailed``, ``onlyReplaceFailedPods``, ``newCondition``,
``findConditionByType``, ``ensureJobConditionStatus``).

Jobs and pods are the JSON wire form (dicts). Nothing here mutates its
arguments except :func:`ensure_job_condition_status`, which edits the
condition list it is given (the caller's own copy of a Job's status).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableSequence
from typing import Any, Final

from pykcm.api.timestamps import format_time

__all__ = [
    "COMPLETE",
    "FAILED",
    "FAILURE_TARGET",
    "JOB_CONTROLLER_NAME",
    "SUCCESS_CRITERIA_MET",
    "SUSPENDED",
    "ensure_job_condition_status",
    "find_condition_by_type",
    "finished_condition",
    "is_job_finished",
    "is_job_succeeded",
    "is_pod_failed",
    "job_suspended",
    "managed_by_external_controller",
    "new_condition",
    "only_replace_failed_pods",
]

# Job condition types (batch/v1 JobConditionType).
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"

#: spec.managedBy value meaning "the built-in Job controller" (batch.JobControllerName).
JOB_CONTROLLER_NAME: Final = "kubernetes.io/job-controller"


def _conditions(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((job.get("status") or {}).get("conditions") or ())


def finished_condition(job: Mapping[str, Any]) -> str | None:
    """``Complete`` or ``Failed`` when that condition is True, else None (FinishedCondition)."""
    for c in _conditions(job):
        if c.get("type") in (COMPLETE, FAILED) and c.get("status") == "True":
            return str(c["type"])
    return None


def is_job_finished(job: Mapping[str, Any]) -> bool:
    """Whether the Job has a True Complete or Failed condition (IsJobFinished)."""
    return finished_condition(job) is not None


def is_job_succeeded(job: Mapping[str, Any]) -> bool:
    """Whether the Job has a True Complete condition (IsJobSucceeded)."""
    return any(c.get("type") == COMPLETE and c.get("status") == "True"
               for c in _conditions(job))


def job_suspended(job: Mapping[str, Any]) -> bool:
    """spec.suspend is true."""
    return (job.get("spec") or {}).get("suspend") is True


def managed_by_external_controller(job: Mapping[str, Any]) -> str | None:
    """The name in spec.managedBy when it is not the built-in controller (JobManagedBy, GA)."""
    name = (job.get("spec") or {}).get("managedBy")
    if name is not None and name != JOB_CONTROLLER_NAME:
        return str(name)
    return None


def only_replace_failed_pods(job: Mapping[str, Any]) -> bool:
    """Replacement pods wait for the old pod to be Failed, not merely terminating.

    True for podReplacementPolicy Failed, and whenever a podFailurePolicy is
    set (its rules need the terminal state of the pod).
    """
    spec = job.get("spec") or {}
    if spec.get("podReplacementPolicy") == "Failed":
        return True
    return spec.get("podFailurePolicy") is not None


def is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether the Job counts ``pod`` as failed (isPodFailed).

    Phase Failed; or, unless only failed pods are replaced, being deleted
    without having succeeded (an orphaned pod may never reach Failed).
    """
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase != "Succeeded"


def new_condition(type_: str, status: str, reason: str, message: str,
                  now: float) -> dict[str, Any]:
    """A JobCondition stamped ``now`` (reason and message omitted when empty, as Go does)."""
    ts = format_time(now)
    cond: dict[str, Any] = {"type": type_, "status": status,
                            "lastProbeTime": ts, "lastTransitionTime": ts}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def find_condition_by_type(conditions: Any, type_: str) -> Any:
    """The condition of ``type_`` in the list (the list's own dict), or None."""
    for c in conditions or ():
        if c.get("type") == type_:
            return c
    return None


def ensure_job_condition_status(conditions: MutableSequence[dict[str, Any]], type_: str,
                                status: str, reason: str, message: str,
                                now: float) -> bool:
    """Set the condition of ``type_`` in place; return whether the list changed.

    An existing condition is replaced when its status, reason or message
    differ; a missing one is appended unless ``status`` is False (going from
    nothing to False says nothing).
    """
    for i, c in enumerate(conditions):
        if c.get("type") == type_:
            if (c.get("status") != status or (c.get("reason") or "") != reason
                    or (c.get("message") or "") != message):
                conditions[i] = new_condition(type_, status, reason, message, now)
                return True
            return False
    if status != "False":
        conditions.append(new_condition(type_, status, reason, message, now))
        return True
    return False

