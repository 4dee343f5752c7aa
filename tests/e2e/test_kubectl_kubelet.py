"""The simulated kubelet seen through the real kubectl on ``pykcm up`` (issue 18's acceptance).

Graceful termination (``kubectl delete pod`` shows Terminating until the
containers stop), CrashLoopBackOff with growing back-off delays, and a Job
with ``podReplacementPolicy: Failed`` that replaces a deleted pod only once
it is terminal. The clusters' simulators run with ``--max-grace-period 0``
(pykcm.testing): the pods here ask for their grace period with
``sim.pykcm.io/termination-seconds``, which the cap does not shorten.

Nothing here asserts how long anything takes: the back-off check reads the
kubelet's own message (``back-off 10s``, then ``back-off 20s``), and times
are upper bounds on waits. About 40 s in all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.cluster_helpers import READY_AFTER, NotYet, get_json, items, wait_until
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

NS_PREFIX = "kubelet"
TERMINATION = "sim.pykcm.io/termination-seconds"
RUN_SECONDS = "sim.pykcm.io/run-seconds"
EXIT_CODE = "sim.pykcm.io/exit-code"


def apply(k: Kubectl, ns: str, obj: dict[str, Any]) -> None:
    k.ok("apply", "-n", ns, "-f", "-", stdin=json.dumps(obj))


def pod(name: str, annotations: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {READY_AFTER: "0", **annotations}},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}], **spec}}


def events(k: Kubectl, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in items(k, ns, "events", "--field-selector", f"involvedObject.name={name}")
            if e["reason"] == reason]


def gone(k: Kubectl, ns: str, what: str) -> bool:
    r = k.run("get", what, "-n", ns, "-o", "name")
    if r.returncode == 0:
        return False
    assert "NotFound" in r.stderr or "not found" in r.stderr, r.stderr
    return True


def test_a_deleted_pod_is_terminating_until_its_containers_stop(
        kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    # ignores SIGTERM for 60 s: killed when its 6 s grace period ends
    apply(k, ns, pod("slow", {TERMINATION: "60"}, terminationGracePeriodSeconds=6))
    wait_until(lambda: get_json(k, "pod", "slow", "-n", ns)["status"].get("phase") == "Running",
               "slow running")
    k.ok("delete", "pod", "slow", "-n", ns, "--wait=false")
    row = k.ok("get", "pod", "slow", "-n", ns, "--no-headers")
    assert row.split()[2] == "Terminating", row
    obj = get_json(k, "pod", "slow", "-n", ns)
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 6
    assert obj["status"]["phase"] == "Running"
    wait_until(lambda: gone(k, ns, "pod/slow"), "the kubelet's final delete")
    killing = events(k, ns, "slow", "Killing")
    assert [(e["type"], e["message"], e["involvedObject"].get("fieldPath"),
             e["source"]["component"]) for e in killing] == [
        ("Normal", "Stopping container app", "spec.containers{app}", "kubelet")]


def test_a_crashing_container_backs_off_longer_each_time(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    apply(k, ns, pod("crash", {RUN_SECONDS: "0.5", EXIT_CODE: "1"}))

    def waiting(delay: str) -> Any:
        p = get_json(k, "pod", "crash", "-n", ns)
        cs = (p["status"].get("containerStatuses") or [{}])[0]
        w = (cs.get("state") or {}).get("waiting") or {}
        return cs if w.get("message", "").startswith(f"back-off {delay} ") else NotYet(cs)

    first = wait_until(lambda: waiting("10s"), "the first back-off")
    assert first["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert first["restartCount"] == 1
    assert first["lastState"]["terminated"]["exitCode"] == 1
    row = k.ok("get", "pod", "crash", "-n", ns, "--no-headers").split()
    assert row[2] == "CrashLoopBackOff", row
    second = wait_until(lambda: waiting("20s"), "the doubled back-off")
    assert second["restartCount"] == 2
    backoffs = events(k, ns, "crash", "BackOff")
    assert backoffs and all(e["type"] == "Warning" and e["message"].startswith(
        "Back-off restarting failed container app in pod crash_") for e in backoffs)


def test_a_job_replaces_a_deleted_pod_once_it_failed(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    template = {"metadata": {"annotations": {RUN_SECONDS: "86400", TERMINATION: "60"}},
                "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 5,
                         "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    apply(k, ns, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"},
                  "spec": {"podReplacementPolicy": "Failed", "backoffLimit": 3,
                           "template": template}})

    def job_pods() -> list[dict[str, Any]]:
        return items(k, ns, "pods", "-l", "batch.kubernetes.io/job-name=work")

    def running() -> Any:
        ps = job_pods()
        return ps[0] if len(ps) == 1 and ps[0]["status"].get("phase") == "Running" else NotYet(ps)

    first = wait_until(running, "the Job's pod running")
    name = first["metadata"]["name"]
    k.ok("delete", "pod", name, "-n", ns, "--wait=false")

    def terminating_counted() -> Any:
        j = get_json(k, "job", "work", "-n", ns)
        return j if j["status"].get("terminating") == 1 else NotYet(j["status"])

    wait_until(terminating_counted, "the Job counting its terminating pod")
    pods = job_pods()
    old = [p for p in pods if p["metadata"]["name"] == name]
    if old and old[0]["status"].get("phase") == "Running":
        # still terminating: no replacement before the pod is terminal
        assert [p["metadata"]["name"] for p in pods] == [name]

    def replaced() -> Any:
        ps = [p for p in job_pods() if p["metadata"]["name"] != name]
        return ps if ps else NotYet(job_pods())

    wait_until(replaced, "the replacement pod")
    status = wait_until(lambda: (s := get_json(k, "job", "work", "-n", ns)["status"])
                        .get("failed") == 1 and s, "the deleted pod counted failed")
    assert status.get("terminating", 0) == 0
