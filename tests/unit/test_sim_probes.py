"""Scripted probe outcomes: when a failing liveness probe kills, what the probers print."""

from __future__ import annotations

from typing import Any

from pykcm.sim.kubelet import PodRecord, advance, build_pod_status, parse_script
from pykcm.sim.probes import (
    ANNOTATION_LIVENESS_FAILS_AFTER,
    ANNOTATION_PROBE_OUTPUT,
    ANNOTATION_READINESS_FAILS,
    liveness_kill_after,
    probe_failure_message,
    readiness_fails,
)

T0 = 1_800_000_000.0


def pod(ann: dict[str, str], **probes: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": ann},
            "spec": {"containers": [{"name": "app", "image": "nginx", **probes}],
                     "nodeName": "n0"}}


def test_the_kill_comes_after_failure_threshold_periods() -> None:
    probe = {"httpGet": {"port": 80}}
    assert liveness_kill_after(pod({ANNOTATION_LIVENESS_FAILS_AFTER: "5"},
                                   livenessProbe=probe)) == 25  # 5 + (3 - 1) * 10
    assert liveness_kill_after(pod({ANNOTATION_LIVENESS_FAILS_AFTER: "5"}, livenessProbe={
        **probe, "periodSeconds": 2, "failureThreshold": 1})) == 5
    # no probe in the spec, or no annotation: nothing fails
    assert liveness_kill_after(pod({ANNOTATION_LIVENESS_FAILS_AFTER: "5"})) is None
    assert liveness_kill_after(pod({}, livenessProbe=probe)) is None


def test_a_liveness_kill_restarts_with_exit_code_137() -> None:
    p = pod({ANNOTATION_LIVENESS_FAILS_AFTER: "1"}, livenessProbe={
        "exec": {"command": ["true"]}, "failureThreshold": 1})
    rec = PodRecord(uid="u", node="n0", ip="10.244.0.2", start_time=T0, cycle_start=T0)
    s = parse_script(p)
    build_pod_status(p, rec, s, "h", T0)
    advance(rec, s, T0 + 1)
    assert rec.restarts == 1 and rec.liveness_kills == [T0 + 1]
    last = build_pod_status(p, rec, s, "h", T0 + 1)[0]["containerStatuses"][0]["lastState"]
    assert (last["terminated"]["exitCode"], last["terminated"]["reason"]) == (137, "Error")


def test_readiness_failures_and_messages() -> None:
    tcp = {"tcpSocket": {"port": 8080}}
    assert readiness_fails(pod({ANNOTATION_READINESS_FAILS: "true"}, readinessProbe=tcp))
    assert parse_script(pod({ANNOTATION_READINESS_FAILS: "true"}, readinessProbe=tcp)).never_ready
    assert not readiness_fails(pod({ANNOTATION_READINESS_FAILS: "true"}))
    p = pod({})
    assert probe_failure_message(p, tcp, "10.244.0.9") == (
        "dial tcp 10.244.0.9:8080: connect: connection refused")
    assert probe_failure_message(p, {"httpGet": {"port": 80}}, "") == (
        "HTTP probe failed with statuscode: 500")
    assert probe_failure_message(pod({ANNOTATION_PROBE_OUTPUT: "nope"}), tcp, "") == "nope"
