"""The simulated kubelet's graceful termination plan: when a deleted pod's containers
stop, with which exit code, and the terminal status it then reports."""

from __future__ import annotations

from typing import Any

from pykcm.sim.kubelet import PodRecord, build_pod_status, parse_script
from pykcm.sim.termination import (
    ANNOTATION_TERMINATION_EXIT_CODE,
    ANNOTATION_TERMINATION_SECONDS,
    KILLED_EXIT_CODE,
    StopPlan,
    grace_period,
    plan_stop,
)

T0 = 1_800_000_000.0


def deleted_pod(grace: int | None = 30, spec_grace: int | None = None,
                annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "u1",
                            "annotations": annotations or {},
                            "deletionTimestamp": "2027-01-15T08:00:30Z"}
    if grace is not None:
        meta["deletionGracePeriodSeconds"] = grace
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}],
                            "nodeName": "n0"}
    if spec_grace is not None:
        spec["terminationGracePeriodSeconds"] = spec_grace
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def test_grace_period_from_the_delete_else_the_pod_else_thirty() -> None:
    assert grace_period(deleted_pod(5, 60)) == 5
    assert grace_period(deleted_pod(None, 60)) == 60
    assert grace_period(deleted_pod(None)) == 30


def test_containers_ignoring_sigterm_are_killed_when_the_grace_period_ends() -> None:
    assert plan_stop(deleted_pod(30), T0) == StopPlan(T0 + 30, KILLED_EXIT_CODE)
    # the kubelet never kills sooner than 2 s
    assert plan_stop(deleted_pod(1), T0) == StopPlan(T0 + 2, KILLED_EXIT_CODE)
    # a test harness's cap shortens the kill
    assert plan_stop(deleted_pod(30), T0, 0.0) == StopPlan(T0, KILLED_EXIT_CODE)
    assert plan_stop(deleted_pod(5), T0, 10.0) == StopPlan(T0 + 5, KILLED_EXIT_CODE)


def test_containers_that_exit_on_sigterm() -> None:
    p = deleted_pod(30, annotations={ANNOTATION_TERMINATION_SECONDS: "3"})
    assert plan_stop(p, T0) == StopPlan(T0 + 3, 0)
    p = deleted_pod(30, annotations={ANNOTATION_TERMINATION_SECONDS: "3",
                                     ANNOTATION_TERMINATION_EXIT_CODE: "143"})
    assert plan_stop(p, T0) == StopPlan(T0 + 3, 143)
    # the annotation wins over a cap
    p = deleted_pod(30, annotations={ANNOTATION_TERMINATION_SECONDS: "3"})
    assert plan_stop(p, T0, 0.0) == StopPlan(T0 + 3, 0)
    # garbage falls back to the default
    p = deleted_pod(30, annotations={ANNOTATION_TERMINATION_SECONDS: "soon"})
    assert plan_stop(p, T0) == StopPlan(T0 + 30, KILLED_EXIT_CODE)


def test_a_shorter_second_delete_shortens_the_plan() -> None:
    p = deleted_pod(30)
    assert plan_stop(p, T0).at == T0 + 30
    p["metadata"]["deletionGracePeriodSeconds"] = 4
    assert plan_stop(p, T0).at == T0 + 4


def test_the_stopped_pod_is_terminal_whatever_its_restart_policy() -> None:
    p = deleted_pod(30)  # restartPolicy Always (the default)
    rec = PodRecord(uid="u1", node="n0", ip="10.244.0.2", start_time=T0, cycle_start=T0)
    s = parse_script(p)
    rec.finished = (KILLED_EXIT_CODE, T0 + 30)
    status = build_pod_status(p, rec, s, "h", T0 + 30)[0]
    assert status["phase"] == "Failed"
    term = status["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 137 and term["reason"] == "Error"
    rec.finished = (0, T0 + 3)
    assert build_pod_status(p, rec, s, "h", T0 + 3)[0]["phase"] == "Succeeded"
