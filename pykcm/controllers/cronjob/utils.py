"""CronJob helpers: schedule times, Job construction, the active list (upstream
``pkg/controller/cronjob/utils.go``).

The CronJob controller asks three questions of a schedule:

* which scheduled time, if any, is due now and not yet started
  (:func:`next_schedule_time`, through :func:`most_recent_schedule_time`:
  from ``status.lastScheduleTime`` - or the CronJob's creation - up to now,
  not earlier than ``startingDeadlineSeconds`` ago, counting how many were
  missed; more than 100 earns a ``TooManyMissedTimes`` warning);
* how long to sleep until the next one (:func:`next_schedule_time_duration`,
  plus 100 ms against clock skew);
* what Job to create for a scheduled time (:func:`get_job_from_template`:
  the job template, named ``<cronjob>-<minutes since the epoch>``, with the
  ``batch.kubernetes.io/cronjob-scheduled-timestamp`` annotation and a
  controller reference).

Times are aware datetimes; CronJobs and Jobs are wire-form dicts. The
active-list helpers edit the status dict they are given (the caller's copy).
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final, NamedTuple, Protocol

from pykcm.api.cron import CronParseError, Schedule, load_location
from pykcm.api.owner_refs import new_controller_ref
from pykcm.api.timestamps import format_rfc3339, parse_datetime, parse_time

__all__ = [
    "NEXT_SCHEDULE_DELTA",
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "MissedSchedules",
    "MostRecentSchedule",
    "by_job_start_time",
    "delete_from_active_list",
    "format_schedule",
    "get_job_from_template",
    "get_job_name",
    "get_time_hash_in_minutes",
    "in_active_list",
    "in_active_list_by_name",
    "most_recent_schedule_time",
    "next_schedule_time",
    "next_schedule_time_duration",
]

#: Padding added to every requeue so a slightly fast clock does not wake early.
NEXT_SCHEDULE_DELTA: Final = 0.1
SCHEDULED_TIMESTAMP_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
#: More missed start times than this earns a TooManyMissedTimes warning.
_MANY_MISSED: Final = 100


class _Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None: ...


class MissedSchedules(enum.Enum):
    """How many start times were missed since the last one (missedSchedulesType)."""

    NONE = "none"
    FEW = "few"
    MANY = "many"


class MostRecentSchedule(NamedTuple):
    """What :func:`most_recent_schedule_time` found."""

    earliest: datetime
    """The last schedule time, or the creation time (raised to the starting deadline); UTC."""
    most_recent: datetime | None
    """The latest scheduled time not after now (UTC), or None."""
    missed: MissedSchedules
    error: str | None
    """Set when the schedule is valid grammar but never fires twice (e.g. Feb 30th)."""


def _next(schedule: Schedule, t: datetime, loc: tzinfo) -> datetime | None:
    """``schedule.next`` of ``t`` seen in ``loc`` (the zone of a schedule without one), in UTC.

    Arithmetic and comparisons below are done on UTC datetimes: Python
    compares and subtracts two datetimes of one zone as wall times, which is
    wrong across a daylight-saving change.
    """
    n = schedule.next(t.astimezone(loc))
    return None if n is None else n.astimezone(UTC)


def most_recent_schedule_time(cj: Mapping[str, Any], now: datetime, schedule: Schedule,
                              include_starting_deadline: bool) -> MostRecentSchedule:
    """The most recent scheduled time to start, and how many were missed (mostRecentScheduleTime).

    ``now`` is aware; its zone is the one schedules without a time zone run
    in. The times returned are UTC. The count of missed times is an
    estimate from the distance between the first two schedule times after
    the earliest time, as upstream's.
    """
    loc = now.tzinfo or UTC
    now = now.astimezone(UTC)
    meta = cj.get("metadata") or {}
    status = cj.get("status") or {}
    spec = cj.get("spec") or {}
    earliest = (parse_datetime(status.get("lastScheduleTime")) or parse_datetime(meta.get("creationTimestamp"))
                or datetime.fromtimestamp(0, tz=UTC))
    missed = MissedSchedules.NONE
    deadline = spec.get("startingDeadlineSeconds")
    if include_starting_deadline and deadline is not None:
        # Nothing older than the starting deadline will be started.
        earliest = max(earliest, now - timedelta(seconds=int(deadline)))
    t1 = _next(schedule, earliest, loc)
    if t1 is not None and now < t1:
        return MostRecentSchedule(earliest, None, missed, None)
    t2 = _next(schedule, t1, loc) if t1 is not None else None
    if t1 is not None and t2 is not None and now < t2:
        return MostRecentSchedule(earliest, t1, missed, None)
    between = round((t2 - t1).total_seconds()) if t1 is not None and t2 is not None else 0
    if t1 is None or t2 is None or between < 1:
        return MostRecentSchedule(earliest, None, missed,
                                  "time difference between two schedules is less than 1 second")
    elapsed = int((now - t1).total_seconds())
    number_missed = elapsed // between + 1
    # Start two periods before the estimate and let the schedule find the exact
    # times (irregular schedules like "30 6-16/4 * * 1-5" need it).
    most_recent: datetime | None = None
    t: datetime | None = _next(schedule, t1 + timedelta(seconds=(number_missed - 2) * between),
                               loc)
    while t is not None and not t > now:
        most_recent = t
        t = _next(schedule, t, loc)
    if number_missed > _MANY_MISSED:
        missed = MissedSchedules.MANY
    elif number_missed > 0:
        missed = MissedSchedules.FEW
    return MostRecentSchedule(earliest, most_recent, missed, None)


def next_schedule_time_duration(cj: Mapping[str, Any], now: datetime,
                                schedule: Schedule) -> float | None:
    """Seconds until the next schedule time after the last one, plus 100 ms.

    Counted from the most recent schedule time (so a due start is retried
    at once), from ``now`` when schedules were missed or the schedule is
    broken. None when the schedule never fires again.
    """
    loc = now.tzinfo or UTC
    earliest, most_recent, missed, error = most_recent_schedule_time(cj, now, schedule, False)
    if error is not None:
        most_recent = now
    elif most_recent is None:
        most_recent = earliest if missed is MissedSchedules.NONE else now
    nxt = _next(schedule, most_recent, loc)
    if nxt is None:
        return None
    return nxt.timestamp() - now.timestamp() + NEXT_SCHEDULE_DELTA


def next_schedule_time(cj: Mapping[str, Any], now: datetime, schedule: Schedule,
                       recorder: _Recorder | None) -> tuple[datetime | None, str | None]:
    """``(scheduled_time, error)``: the unmet schedule time (UTC) to start now, or None.

    Records ``TooManyMissedTimes`` when more than 100 start times were missed.
    """
    _, most_recent, missed, error = most_recent_schedule_time(cj, now, schedule, True)
    if most_recent is None or most_recent.timestamp() > now.timestamp():
        return None, error
    if missed is MissedSchedules.MANY and recorder is not None:
        recorder.event(cj, "Warning", "TooManyMissedTimes",
                       "too many missed start times. Set or decrease "
                       ".spec.startingDeadlineSeconds or check clock skew")
    return most_recent, error


def get_time_hash_in_minutes(scheduled_time: datetime) -> int:
    """Minutes since the epoch (the Job name suffix)."""
    return int(scheduled_time.timestamp()) // 60


def get_job_name(cj: Mapping[str, Any], scheduled_time: datetime) -> str:
    """``<cronjob>-<minutes since the epoch>``: one deterministic name per scheduled time."""
    return f"{(cj.get('metadata') or {}).get('name')}-{get_time_hash_in_minutes(scheduled_time)}"


def get_job_from_template(cj: Mapping[str, Any], scheduled_time: datetime) -> dict[str, Any]:
    """The Job to create for ``scheduled_time`` (getJobFromTemplate2).

    Labels and annotations from the job template, plus the scheduled
    timestamp (RFC 3339, in spec.timeZone, UTC when unset); a controller
    reference to the CronJob; the template's spec.
    Raises :class:`~pykcm.api.cron.CronParseError` for an
    unknown spec.timeZone.
    """
    spec = cj.get("spec") or {}
    template = spec.get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    annotations = dict(tmeta.get("annotations") or {})
    loc = load_location(str(spec.get("timeZone") or ""))
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = format_rfc3339(scheduled_time.astimezone(loc))
    meta = cj.get("metadata") or {}
    job_meta: dict[str, Any] = {
        "name": get_job_name(cj, scheduled_time),
        "ownerReferences": [new_controller_ref(cj, "batch/v1", "CronJob")],
        "annotations": annotations,
    }
    if meta.get("namespace"):
        job_meta["namespace"] = meta["namespace"]
    if labels:
        job_meta["labels"] = labels
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
            "spec": copy.deepcopy(template.get("spec") or {})}


def format_schedule(cj: Mapping[str, Any], recorder: _Recorder | None) -> str:
    """The schedule to parse: ``TZ=<spec.timeZone> <schedule>`` when a valid zone is set.

    A schedule carrying its own TZ= / CRON_TZ= is used as is, with an
    ``UnsupportedSchedule`` warning (when ``recorder`` is given).
    """
    spec = cj.get("spec") or {}
    schedule = str(spec.get("schedule") or "")
    if "TZ" in schedule:
        if recorder is not None:
            recorder.event(cj, "Warning", "UnsupportedSchedule",
                           f"CRON_TZ or TZ used in schedule {_go_q(schedule)} is not officially "
                           "supported, see https://kubernetes.io/docs/concepts/workloads/"
                           "controllers/cron-jobs/ for more details")
        return schedule
    tz = spec.get("timeZone")
    if tz is not None:
        try:
            load_location(str(tz))
        except CronParseError:
            return schedule
        return f"TZ={tz} {schedule}"
    return schedule


def _go_q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _active(cj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((cj.get("status") or {}).get("active") or ())


def in_active_list(cj: Mapping[str, Any], uid: str) -> bool:
    """Whether status.active references a Job with this UID."""
    return any(ref.get("uid") == uid for ref in _active(cj))


def in_active_list_by_name(cj: Mapping[str, Any], name: str, namespace: str) -> bool:
    """Whether status.active references a Job with this name and namespace."""
    return any(ref.get("name") == name and ref.get("namespace") == namespace
               for ref in _active(cj))


def delete_from_active_list(cj: dict[str, Any], uid: str) -> None:
    """Drop the reference to the Job ``uid`` from ``cj``'s status.active (in place)."""
    status = cj.setdefault("status", {})
    status["active"] = [ref for ref in status.get("active") or () if ref.get("uid") != uid]


def by_job_start_time(job: Mapping[str, Any]) -> tuple[bool, float, str]:
    """Sort key: by status.startTime, Jobs without one last, then by name (byJobStartTime)."""
    start = parse_time((job.get("status") or {}).get("startTime"))
    name = str((job.get("metadata") or {}).get("name") or "")
    return start is None, start or 0.0, name
