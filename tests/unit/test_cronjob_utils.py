"""CronJob schedule arithmetic: most recent schedule time, missed counts, requeue delays,
Job names and templates."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from pykcm.api.cron import parse_standard
from pykcm.api.timestamps import format_rfc3339
from pykcm.controllers.cronjob.utils import (
    SCHEDULED_TIMESTAMP_ANNOTATION,
    MissedSchedules,
    by_job_start_time,
    delete_from_active_list,
    format_schedule,
    get_job_from_template,
    get_job_name,
    in_active_list,
    in_active_list_by_name,
    most_recent_schedule_time,
    next_schedule_time,
    next_schedule_time_duration,
)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
        second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def cronjob(schedule: str = "*/5 * * * *", created: str = "2024-05-01T10:00:00Z",
            last: str | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"schedule": schedule, "jobTemplate": {
        "metadata": {"labels": {"app": "x"}, "annotations": {"note": "y"}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}
    s.update(spec)
    cj: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "CronJob",
                          "metadata": {"name": "tick", "namespace": "ns", "uid": "cj-uid",
                                       "creationTimestamp": created},
                          "spec": s, "status": {}}
    if last is not None:
        cj["status"]["lastScheduleTime"] = last
    return cj


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def test_nothing_due_before_the_first_schedule_time() -> None:
    sched = parse_standard("*/5 * * * *")
    r = most_recent_schedule_time(cronjob(), utc(2024, 5, 1, 10, 4, 59), sched, True)
    assert r.earliest == utc(2024, 5, 1, 10) and r.most_recent is None
    assert r.missed is MissedSchedules.NONE and r.error is None


def test_one_due_time() -> None:
    sched = parse_standard("*/5 * * * *")
    r = most_recent_schedule_time(cronjob(), utc(2024, 5, 1, 10, 7), sched, True)
    assert r.most_recent == utc(2024, 5, 1, 10, 5)
    assert r.missed is MissedSchedules.NONE


def test_few_missed_gives_the_latest() -> None:
    sched = parse_standard("*/5 * * * *")
    cj = cronjob(last="2024-05-01T10:05:00Z")
    r = most_recent_schedule_time(cj, utc(2024, 5, 1, 10, 31), sched, True)
    assert r.earliest == utc(2024, 5, 1, 10, 5)
    assert r.most_recent == utc(2024, 5, 1, 10, 30)
    assert r.missed is MissedSchedules.FEW


def test_many_missed_and_the_warning() -> None:
    sched = parse_standard("* * * * *")
    cj = cronjob(created="2024-05-01T00:00:00Z")
    now = utc(2024, 5, 1, 3, 0, 30)
    r = most_recent_schedule_time(cj, now, sched, True)
    assert r.missed is MissedSchedules.MANY and r.most_recent == utc(2024, 5, 1, 3)
    rec = Recorder()
    assert next_schedule_time(cj, now, sched, rec) == (utc(2024, 5, 1, 3), None)
    assert rec.events == [("Warning", "TooManyMissedTimes",
                           ("too many missed start times. Set or decrease "
                            ".spec.startingDeadlineSeconds or check clock skew"))]


def test_starting_deadline_bounds_the_search() -> None:
    sched = parse_standard("* * * * *")
    cj = cronjob(created="2024-05-01T00:00:00Z", startingDeadlineSeconds=200)
    now = utc(2024, 5, 1, 3, 0, 30)
    r = most_recent_schedule_time(cj, now, sched, True)
    assert r.earliest == utc(2024, 5, 1, 2, 57, 10)
    assert r.most_recent == utc(2024, 5, 1, 3) and r.missed is MissedSchedules.FEW
    rec = Recorder()
    assert next_schedule_time(cj, now, sched, rec) == (utc(2024, 5, 1, 3), None)
    assert rec.events == []


def test_impossible_schedule_is_an_error() -> None:
    sched = parse_standard("0 0 30 2 *")
    r = most_recent_schedule_time(cronjob(), utc(2024, 5, 1, 10, 7), sched, True)
    assert r.error == "time difference between two schedules is less than 1 second"
    assert next_schedule_time(cronjob(), utc(2024, 5, 1, 10, 7), sched, None) == (
        None, "time difference between two schedules is less than 1 second")


def test_irregular_schedule_most_recent() -> None:
    # Weekdays at 06:30, 10:30, 14:30: missed times across a weekend.
    sched = parse_standard("30 6-16/4 * * 1-5")
    cj = cronjob(created="2024-05-03T15:00:00Z")  # a Friday
    r = most_recent_schedule_time(cj, utc(2024, 5, 6, 11), sched, True)  # Monday
    assert r.most_recent == utc(2024, 5, 6, 10, 30)


def test_requeue_delay() -> None:
    sched = parse_standard("*/5 * * * *")
    cj = cronjob(last="2024-05-01T10:05:00Z")
    # Next after the last schedule time, plus 100 ms.
    assert next_schedule_time_duration(cj, utc(2024, 5, 1, 10, 7), sched) == 180.1
    # A due time not started: from the most recent one (i.e. at once).
    assert round(next_schedule_time_duration(cj, utc(2024, 5, 1, 10, 11), sched) or 0, 3) == 240.1
    assert next_schedule_time_duration(cronjob("0 0 30 2 *"), utc(2024, 5, 1), parse_standard(
        "0 0 30 2 *")) is None


def test_requeue_delay_in_a_time_zone() -> None:
    sched = parse_standard(format_schedule(cronjob("0 9 * * *", timeZone="Europe/Paris"), None))
    cj = cronjob("0 9 * * *", last="2024-05-01T07:00:00Z", timeZone="Europe/Paris")
    # 09:00 Paris is 07:00 UTC in May.
    assert next_schedule_time_duration(cj, utc(2024, 5, 1, 8), sched) == 23 * 3600 + 0.1


def test_local_zone_schedule_uses_the_zone_of_now() -> None:
    sched = parse_standard("0 9 * * *")
    ny = ZoneInfo("America/New_York")
    cj = cronjob("0 9 * * *", created="2024-05-01T00:00:00Z")
    r = most_recent_schedule_time(cj, datetime(2024, 5, 1, 10, tzinfo=ny), sched, True)
    assert r.most_recent == utc(2024, 5, 1, 13)


def test_job_name_and_template() -> None:
    cj = cronjob(timeZone="Asia/Kolkata")
    t = utc(2024, 5, 1, 10, 5)
    assert get_job_name(cj, t) == f"tick-{int(t.timestamp()) // 60}"
    job = get_job_from_template(cj, t)
    assert job["metadata"]["name"] == "tick-28575965"
    assert job["metadata"]["namespace"] == "ns"
    assert job["metadata"]["labels"] == {"app": "x"}
    assert job["metadata"]["annotations"] == {
        "note": "y", SCHEDULED_TIMESTAMP_ANNOTATION: "2024-05-01T15:35:00+05:30"}
    assert job["metadata"]["ownerReferences"] == [{
        "apiVersion": "batch/v1", "kind": "CronJob", "name": "tick", "uid": "cj-uid",
        "controller": True, "blockOwnerDeletion": True}]
    assert job["spec"] == cj["spec"]["jobTemplate"]["spec"]
    assert job["spec"] is not cj["spec"]["jobTemplate"]["spec"]
    plain = get_job_from_template(cronjob(), t)
    assert plain["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == \
        "2024-05-01T10:05:00Z"


def test_format_rfc3339() -> None:
    assert format_rfc3339(utc(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05Z"
    ny = ZoneInfo("America/New_York")
    assert format_rfc3339(datetime(2024, 1, 2, 3, 4, 5, tzinfo=ny)) == "2024-01-02T03:04:05-05:00"
    london = ZoneInfo("Europe/London")
    assert format_rfc3339(datetime(2024, 1, 2, 3, 4, 5, tzinfo=london)) == \
        "2024-01-02T03:04:05Z"


def test_format_schedule() -> None:
    assert format_schedule(cronjob("@daily"), None) == "@daily"
    assert format_schedule(cronjob("@daily", timeZone="Europe/Paris"), None) == \
        "TZ=Europe/Paris @daily"
    assert format_schedule(cronjob("@daily", timeZone="Bad/Zone"), None) == "@daily"
    rec = Recorder()
    assert format_schedule(cronjob("TZ=UTC @daily"), rec) == "TZ=UTC @daily"
    assert rec.events[0][:2] == ("Warning", "UnsupportedSchedule")


def test_active_list_helpers() -> None:
    cj = cronjob()
    cj["status"]["active"] = [{"name": "a", "namespace": "ns", "uid": "1"},
                              {"name": "b", "namespace": "ns", "uid": "2"}]
    assert in_active_list(cj, "2") and not in_active_list(cj, "3")
    assert in_active_list_by_name(cj, "a", "ns") and not in_active_list_by_name(cj, "a", "x")
    delete_from_active_list(cj, "1")
    assert cj["status"]["active"] == [{"name": "b", "namespace": "ns", "uid": "2"}]


def test_jobs_sort_by_start_time_then_name() -> None:
    def job(name: str, start: str | None) -> dict[str, Any]:
        return {"metadata": {"name": name}, "status": {"startTime": start} if start else {}}

    jobs = [job("d", None), job("c", "2024-01-01T00:00:02Z"), job("b", "2024-01-01T00:00:01Z"),
            job("a", "2024-01-01T00:00:02Z")]
    assert [j["metadata"]["name"] for j in sorted(jobs, key=by_job_start_time)] == [
        "b", "a", "c", "d"]
