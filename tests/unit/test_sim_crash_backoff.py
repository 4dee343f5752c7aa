"""The simulated kubelet's CrashLoopBackOff: flowcontrol.Backoff's schedule and the
waiting state a crashing pod reports between its restarts."""

from __future__ import annotations

from typing import Any

from pykcm.sim.crash_backoff import (
    CrashBackoff,
    backoff_message,
    format_backoff,
    pod_description,
)
from pykcm.sim.kubelet import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_RUN_SECONDS,
    PodRecord,
    advance,
    build_pod_status,
    parse_script,
)

T0 = 1_800_000_000.0


def crashing_pod(run: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1",
                         "annotations": {ANNOTATION_RUN_SECONDS: run, ANNOTATION_EXIT_CODE: "1"}},
            "spec": {"containers": [{"name": "app", "image": "busybox"}], "nodeName": "n0"},
            "status": {"phase": "Pending"}}


def record() -> PodRecord:
    return PodRecord(uid="u1", node="n0", ip="10.244.0.2", start_time=T0, cycle_start=T0)


def test_delays_double_from_ten_seconds_to_five_minutes() -> None:
    b = CrashBackoff()
    assert not b.in_backoff_since(T0, T0)  # no entry: the first restart is immediate
    t, delays = T0, []
    for _ in range(8):
        b.next(t, t)
        delays.append(b.delay)
        t += 1  # crashes a second after each restart
        assert b.in_backoff_since(t, t) and not b.in_backoff_since(t, t + b.delay)
        t += b.delay
    assert delays == [10, 20, 40, 80, 160, 300, 300, 300]


def test_a_container_that_ran_ten_minutes_starts_over() -> None:
    b = CrashBackoff()
    b.next(T0, T0)
    b.next(T0 + 11, T0 + 11)
    assert b.delay == 20
    exit_at = T0 + 11 + 601  # ran longer than twice the cap since the last restart
    assert not b.in_backoff_since(exit_at, exit_at)
    b.next(exit_at, exit_at)
    assert b.delay == 10


def test_messages_as_the_kubelet_prints_them() -> None:
    assert [format_backoff(s) for s in (10, 80, 160, 300)] == ["10s", "1m20s", "2m40s", "5m0s"]
    who = pod_description("web", "default", "u1")
    assert who == "web_default(u1)"
    assert backoff_message(20, "app", who) == (
        "back-off 20s restarting failed container=app pod=web_default(u1)")


def test_a_crashing_pod_waits_in_crash_loop_back_off_with_growing_delays() -> None:
    p, rec = crashing_pod(), record()
    s = parse_script(p)
    build_pod_status(p, rec, s, "h", T0)  # the first sync: the containers start
    # first exit at T0+1: restarted at once
    advance(rec, s, T0 + 1)
    assert rec.restarts == 1 and rec.waiting_until is None and rec.cycle_start == T0 + 1
    # second exit at T0+2: waits 10 s
    advance(rec, s, T0 + 2)
    assert rec.restarts == 1 and rec.waiting_until == T0 + 12
    status, _, wake = build_pod_status(p, rec, s, "h", T0 + 2)
    cs = status["containerStatuses"][0]
    assert status["phase"] == "Running" and wake == T0 + 12
    assert cs["state"] == {"waiting": {
        "reason": "CrashLoopBackOff",
        "message": "back-off 10s restarting failed container=app pod=p_ns(u1)"}}
    assert cs["ready"] is False and cs["started"] is False and cs["restartCount"] == 1
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["lastState"]["terminated"]["reason"] == "Error"
    # restarted at T0+12, exits at T0+13, waits 20 s
    advance(rec, s, T0 + 20)
    assert rec.restarts == 2 and rec.waiting_until == T0 + 33 and rec.backoff.delay == 20
    advance(rec, s, T0 + 33)
    assert rec.restarts == 3 and rec.waiting_until is None and rec.cycle_start == T0 + 33
    status = build_pod_status(p, rec, s, "h", T0 + 33.1)[0]
    assert "running" in status["containerStatuses"][0]["state"]
    # a late sync replays the schedule: exit at T0+34, 40 s back-off
    advance(rec, s, T0 + 60)
    assert rec.restarts == 3 and rec.waiting_until == T0 + 74 and rec.backoff.delay == 40


def test_a_long_run_resets_the_back_off() -> None:
    p, rec = crashing_pod("700"), record()
    s = parse_script(p)
    advance(rec, s, T0 + 700)  # first exit: restart at once (delay armed: 10 s)
    advance(rec, s, T0 + 1400)  # ran 700 s: the entry is stale, restart at once again
    assert rec.restarts == 2 and rec.waiting_until is None and rec.backoff.delay == 10
