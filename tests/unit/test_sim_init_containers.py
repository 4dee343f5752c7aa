"""The initialization phase: sim.pykcm.io/init-seconds keeps a pod Pending, Init:0/N,
then its init containers complete and its containers start."""

from __future__ import annotations

from typing import Any

from pykcm.sim.init_containers import ANNOTATION_INIT_SECONDS
from pykcm.sim.kubelet import PodRecord, build_pod_status, parse_script

T0 = 1_800_000_000.0


def pod() -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u",
                         "annotations": {ANNOTATION_INIT_SECONDS: "5"}},
            "spec": {"nodeName": "n0",
                     "initContainers": [{"name": "migrate", "image": "busybox"},
                                        {"name": "seed", "image": "busybox"},
                                        {"name": "proxy", "image": "envoy",
                                         "restartPolicy": "Always"}],
                     "containers": [{"name": "app", "image": "nginx"}]},
            "status": {"phase": "Pending"}}


def test_pending_while_the_init_containers_run_then_running() -> None:
    p = pod()
    s = parse_script(p)
    assert s.init_seconds == 5
    rec = PodRecord(uid="u", node="n0", ip="10.244.0.2", start_time=T0, cycle_start=T0 + 5,
                    init_until=T0 + 5)
    status, _, wake = build_pod_status(p, rec, s, "h", T0 + 1)
    assert status["phase"] == "Pending" and wake == T0 + 5
    conds = {c["type"]: (c["status"], c.get("reason"), c.get("message"))
             for c in status["conditions"]}
    assert conds["Initialized"] == ("False", "ContainersNotInitialized",
                                    "containers with incomplete status: [migrate seed]")
    states = {c["name"]: next(iter(c["state"])) for c in status["initContainerStatuses"]}
    assert states == {"migrate": "running", "seed": "waiting", "proxy": "running"}
    assert status["initContainerStatuses"][1]["state"]["waiting"]["reason"] == "PodInitializing"
    app = status["containerStatuses"][0]
    assert app["state"] == {"waiting": {"reason": "PodInitializing"}} and not app["started"]
    after, _, _ = build_pod_status(p, rec, s, "h", T0 + 5)
    assert after["phase"] == "Running"
    done = after["initContainerStatuses"][0]["state"]["terminated"]
    assert done["reason"] == "Completed" and done["finishedAt"] == "2027-01-15T08:00:05Z"
    assert "running" in after["containerStatuses"][0]["state"]
