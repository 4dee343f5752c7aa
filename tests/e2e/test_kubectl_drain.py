"""``kubectl drain`` waits for a PodDisruptionBudget (issue 14's acceptance), on each
``cluster``: ``pykcm up``; pykcm's manager and sim on the real kube-apiserver; the real
kube-controller-manager (its disruption controller) on pykcm's API server.

A 2-replica Deployment and a budget ``minAvailable: 2``. ``kubectl drain NODE
--ignore-daemonsets --delete-emptydir-data`` on a node holding one of its pods cordons the
node and is refused (429 "Cannot evict pod as it would violate the pod's disruption
budget.", retried by kubectl every 5 s) while only 2 pods are healthy; scaled to 3, the
new pod lands on another node (the drained one is cordoned), the budget allows one
disruption, the eviction goes through, the ReplicaSet replaces the pod elsewhere and the
drain finishes. The node is uncordoned at the end (the cluster is shared by the session).

Deliberate: ``--pod-selector`` limits the drain to this test's pods, so pods other tests
left on the shared node (a namespace still terminating) neither block nor get evicted.
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any

import pytest

from tests.e2e.cluster_helpers import READY_AFTER, is_active, is_ready, items, wait_until
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

NS_PREFIX = "drain"
REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."


def manifests(ns: str) -> str:
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web-pdb"}},
                 "template": {"metadata": {"labels": {"app": "web-pdb"},
                                           "annotations": {READY_AFTER: "0.2"}},
                              "spec": {"terminationGracePeriodSeconds": 0,
                                       "containers": [{"name": "web", "image": "nginx:1.27"}]}}}}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "web", "namespace": ns},
           "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web-pdb"}}}}
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [deployment, pdb]})


class Output:
    """A background reader of a process's stream, so its lines can be waited for."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._t.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


def healthy(k: Kubectl, ns: str) -> list[dict[str, Any]]:
    return [p for p in items(k, ns, "pods", "-l", "app=web-pdb") if is_active(p) and is_ready(p)]


def test_drain_waits_for_the_disruption_budget(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    k.ok("apply", "--validate=false", "-f", "-", stdin=manifests(ns))
    def two() -> list[dict[str, Any]] | None:
        ps = healthy(k, ns)
        return ps if len(ps) == 2 else None
    pods = wait_until(two, "2 ready pods")

    def budget_status() -> dict[str, Any]:
        out: dict[str, Any] = json.loads(k.ok("get", "pdb", "web", "-n", ns, "-o", "json"))
        return out.get("status") or {}
    wait_until(lambda: budget_status().get("currentHealthy") == 2
               and budget_status().get("desiredHealthy") == 2, "the budget's status")
    node = pods[0]["spec"]["nodeName"]
    drained = {p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == node}
    drain = k.popen("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                    "--pod-selector=app=web-pdb", "--timeout=300s")
    try:
        assert drain.stdout is not None and drain.stderr is not None
        out, err = Output(drain.stdout), Output(drain.stderr)
        wait_until(lambda: REFUSED in err.text(), "the eviction refused by the budget")
        assert drain.poll() is None, out.text() + err.text()
        header, row = k.ok("get", "pdb", "-n", ns).splitlines()
        assert header.split()[:7] == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE",
                                      "ALLOWED", "DISRUPTIONS"]
        assert row.split()[:4] == ["web", "2", "N/A", "0"]
        # the drain holds: the pod is still there, the node cordoned
        assert drained <= {p["metadata"]["name"] for p in healthy(k, ns)}
        node_obj = json.loads(k.ok("get", "node", node, "-o", "json"))
        assert node_obj["spec"].get("unschedulable") is True
        k.ok("scale", "deployment", "web", "-n", ns, "--replicas=3")
        rc = drain.wait(timeout=300)
        assert rc == 0, out.text() + err.text()
        assert f"node/{node} drained" in out.text(), out.text()

        def replaced() -> list[dict[str, Any]] | None:
            live = healthy(k, ns)
            names = {p["metadata"]["name"] for p in live}
            if len(live) == 3 and not names & drained \
                    and all(p["spec"]["nodeName"] != node for p in live):
                return live
            return None
        wait_until(replaced, "3 ready pods, none on the drained node")
    finally:
        if drain.poll() is None:
            drain.kill()
        drain.wait(timeout=30)
        k.run("uncordon", node)


def test_eviction_of_an_uncovered_pod_is_immediate(kubectl_up: Kubectl, ns: str) -> None:
    """A pod no budget selects is evicted as at once (kubectl drain's path for it)."""
    k = kubectl_up
    k.ok("run", "solo", "-n", ns, "--image=nginx:1.27", "--labels=app=solo",
         f"--annotations={READY_AFTER}=0.1")
    wait_until(lambda: any(is_ready(p) for p in items(k, ns, "pods", "-l", "app=solo")),
               "solo ready")
    r = subprocess.run(
        [k.binary, "create", "--raw", f"/api/v1/namespaces/{ns}/pods/solo/eviction", "-f", "-"],
        input=json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "solo", "namespace": ns}}),
        capture_output=True, text=True, env=k.env, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "Success"
    wait_until(lambda: not [p for p in items(k, ns, "pods", "-l", "app=solo") if is_active(p)],
               "solo evicted")
