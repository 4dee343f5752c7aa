"""Pod failure backoff: how long a Job waits before replacing failed pods (upstream
``backoff_utils.go``).

After consecutive pod failures a Job does not create replacement pods at
once: the delay is ``10 s * 2^(failures-1)``, capped at 10 minutes
(``DefaultJobPodFailureBackOff`` / ``MaxJobPodFailureBackOff``), counted
from the finish time of the last failed pod. A success resets the count.

Data flow: each sync turns the pods newly finished since the last status
update into a :class:`BackoffRecord` (:meth:`BackoffStore.new_backoff_record`:
failures after the last success, and when the last one happened); the
controller asks :meth:`BackoffRecord.get_remaining_time` before creating
pods and requeues the Job for that long; once the status update carrying
those pods succeeded the record is stored (:meth:`BackoffStore.update_backoff_record`).
With backoffLimitPerIndex the count comes instead from the failure-count
annotation of the index's last failed pod
(``indexed_job_utils.get_remaining_time_per_index``).

Times are epoch seconds (floats); "now" is passed in so a test clock can
drive everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pykcm.api.pod_util import get_pod_condition, parse_time

__all__ = [
    "DEFAULT_JOB_POD_FAILURE_BACKOFF",
    "MAX_JOB_POD_FAILURE_BACKOFF",
    "BackoffRecord",
    "BackoffStore",
    "get_finished_time",
    "get_remaining_time_for_failures_count",
]

#: First pod-failure backoff delay, seconds (DefaultJobPodFailureBackOff).
DEFAULT_JOB_POD_FAILURE_BACKOFF: Final = 10.0
#: Longest pod-failure backoff delay, seconds (MaxJobPodFailureBackOff: 10 minutes).
MAX_JOB_POD_FAILURE_BACKOFF: Final = 600.0


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    """Consecutive pod failures of one Job since its last success, and the last one's time."""

    key: str
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def get_remaining_time(self, now: float, default_backoff: float = DEFAULT_JOB_POD_FAILURE_BACKOFF,
                           max_backoff: float = MAX_JOB_POD_FAILURE_BACKOFF) -> float:
        """Seconds left before replacement pods may be created (0 when none)."""
        return get_remaining_time_for_failures_count(
            now, default_backoff, max_backoff, self.failures_after_last_success,
            self.last_failure_time)


class BackoffStore:
    """The backoff record of each Job key (upstream backoffStore, a plain dict here:
    one event loop, no locking needed)."""

    def __init__(self) -> None:
        self._records: dict[str, BackoffRecord] = {}

    def get(self, key: str) -> BackoffRecord | None:
        """The stored record of ``key``, if any."""
        return self._records.get(key)

    def update_backoff_record(self, record: BackoffRecord) -> None:
        """Store ``record`` (replacing the Job's previous one)."""
        self._records[record.key] = record

    def remove_backoff_record(self, key: str) -> None:
        """Forget the Job (finished or deleted)."""
        self._records.pop(key, None)

    def new_backoff_record(self, key: str, new_succeeded_pods: Iterable[Mapping[str, Any]],
                           new_failed_pods: Iterable[Mapping[str, Any]]) -> BackoffRecord:
        """The record after the newly finished pods, from the stored one (not stored yet).

        Only failures after the latest new success count; with no new
        success they add to the stored count.
        """
        old = self._records.get(key)
        failures = old.failures_after_last_success if old else 0
        last_failure = old.last_failure_time if old else None
        succeeded = sorted(get_finished_time(p) for p in new_succeeded_pods)
        failed = sorted(get_finished_time(p) for p in new_failed_pods)
        if not succeeded:
            if not failed:
                return BackoffRecord(key, failures, last_failure)
            return BackoffRecord(key, failures + len(failed), failed[-1])
        last_success = succeeded[-1]
        failures, last_failure = 0, None
        for t in reversed(failed):
            if not t > last_success:
                break
            if last_failure is None:
                last_failure = t
            failures += 1
        return BackoffRecord(key, failures, last_failure)


def _latest_finish_time(prev: float | None, statuses: Iterable[Mapping[str, Any]],
                        names: set[str] | None = None) -> float | None:
    """The latest finishedAt over ``statuses`` (those named in ``names``, all when None)
    and ``prev``; None as soon as one of them has not terminated (latestFinishTime)."""
    finish = prev
    for cs in statuses:
        if names is not None and cs.get("name") not in names:
            continue
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is None:
            return None
        t = parse_time(terminated.get("finishedAt"))
        if t is None:
            return None
        if finish is None or finish < t:
            finish = t
    return finish


def _finish_time_from_containers(pod: Mapping[str, Any]) -> float | None:
    """The regular containers' latest finish, then the sidecars' (restartable init
    containers, SidecarContainers is GA): they stop after the regular containers, so the
    pod finished when its last sidecar did. As upstream, a regular container still
    running leaves only the sidecars to decide (the result is then theirs, or None)."""
    status = pod.get("status") or {}
    finish = _latest_finish_time(None, status.get("containerStatuses") or ())
    sidecars = {str(c.get("name")) for c in (pod.get("spec") or {}).get("initContainers") or ()
                if c.get("restartPolicy") == "Always"}
    return _latest_finish_time(finish, status.get("initContainerStatuses") or (), sidecars)


def get_finished_time(pod: Mapping[str, Any]) -> float:
    """When the pod finished (getFinishedTime), the first of these that is known:

    1. the latest finishedAt of its containers and sidecar (restartable init)
       containers, when all terminated;
    2. the lastTransitionTime of a Ready=False condition;
    3. deletionTimestamp minus deletionGracePeriodSeconds;
    4. its creationTimestamp (0 when even that is missing).
    """
    t = _finish_time_from_containers(pod)
    if t is not None:
        return t
    cond = get_pod_condition(pod, "Ready")
    if cond is not None and cond.get("status") == "False":
        t = parse_time(cond.get("lastTransitionTime"))
        if t is not None:
            return t
    meta = pod.get("metadata") or {}
    deleted = parse_time(meta.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - float(meta.get("deletionGracePeriodSeconds") or 0)
    return parse_time(meta.get("creationTimestamp")) or 0.0


def get_remaining_time_for_failures_count(now: float, default_backoff: float,
                                          max_backoff: float, failures: int,
                                          last_failure_time: float | None) -> float:
    """``min(default * 2^(failures-1), max)`` minus the time since the last failure, >= 0."""
    if failures == 0 or last_failure_time is None:
        return 0.0
    backoff = default_backoff
    for _ in range(1, failures):
        backoff *= 2
        if backoff >= max_backoff:
            backoff = max_backoff
            break
    elapsed = now - last_failure_time
    if backoff < elapsed:
        return 0.0
    return backoff - elapsed

