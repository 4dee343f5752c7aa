"""Differential test of the node lifecycle and taint eviction controllers.

Run under the real kube-controller-manager v1.36 and under pykcm's on the session's
real kube-apiserver (tests/e2e/differential.py), both with their default flags
(``--node-monitor-grace-period`` 50s): a Node made by hand, Ready, with a Lease that
is never renewed (no kubelet behind it), and a pod bound to it that tolerates
``unreachable`` for 1 s. Compared: the node's conditions once Unknown (status, reason,
message), its taints, the pod's conditions once evicted (Ready False,
DisruptionTarget), and the events about the node and the pod.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.testing.upstream import KubeCluster
from tests.e2e.differential import Differential, Run
from tests.e2e.differential_allowlist import ALLOWLIST

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]

CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")


@pytest.fixture(scope="module")
def differential(kube_cluster: KubeCluster) -> Iterator[Differential]:
    d = Differential(kube_cluster)
    yield d
    d.restore()


def _now(micro: bool = False) -> str:
    t = dt.datetime.now(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _cond(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or ()
                 if c.get("type") == ctype), None)


def silent_node(run: Run) -> dict[str, Any]:
    node = f"{run.ns}-node"
    api = run.api
    api.ok("POST", "/api/v1/nodes", {"metadata": {"name": node, "labels": {
        "kubernetes.io/hostname": node}}})
    try:
        now = _now()
        api.ok("PATCH", f"/api/v1/nodes/{node}/status", {"status": {"conditions": [
            {"type": t, "status": "True" if t == "Ready" else "False", "reason": "Kubelet",
             "message": "ok", "lastHeartbeatTime": now, "lastTransitionTime": now}
            for t in CONDITIONS]}}, content_type="application/merge-patch+json")
        api.ok("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
            "metadata": {"name": node}, "spec": {"holderIdentity": node,
                                                 "leaseDurationSeconds": 40,
                                                 "renewTime": _now(micro=True)}})
        run.create("pods", {"metadata": {"name": "victim"}, "spec": {
            "nodeName": node,
            "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 1}],
            "containers": [{"name": "c", "image": "nginx"}]}})
        run.patch("pods", "victim", {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}, sub="status")

        def unknown() -> dict[str, Any] | None:
            n = api.ok("GET", f"/api/v1/nodes/{node}")
            ready = _cond(n, "Ready")
            return n if ready and ready["status"] == "Unknown" else None
        n = run.wait(unknown, "the node Unknown")
        conditions = {t: {k: (_cond(n, t) or {}).get(k) for k in ("status", "reason", "message")}
                      for t in CONDITIONS}

        def tainted() -> list[dict[str, Any]] | None:
            taints = api.ok("GET", f"/api/v1/nodes/{node}")["spec"].get("taints") or []
            keys = {(t["key"], t["effect"]) for t in taints}
            want = {("node.kubernetes.io/unreachable", "NoExecute"),
                    ("node.kubernetes.io/unreachable", "NoSchedule")}
            return taints if want <= keys else None
        taints = run.wait(tainted, "the unreachable taints")

        def evicted() -> dict[str, Any] | None:
            p = run.get("pods", "victim")
            return p if p["metadata"].get("deletionTimestamp") else None
        pod = run.wait(evicted, "the pod evicted")
        pod_conditions = {t: {k: (_cond(pod, t) or {}).get(k)
                              for k in ("status", "reason", "message")}
                          for t in ("Ready", "DisruptionTarget")}
        node_events = sorted(
            {(e.get("type"), e.get("reason"), e.get("message"), (e.get("source") or {})
              .get("component"))
             for e in api.ok("GET", "/api/v1/namespaces/default/events")["items"]
             if (e.get("involvedObject") or {}).get("name") == node})
        # Any: differential.Run.list shadows the builtin in its own annotations (mypy)
        pod_events: Any = run.events(kinds=("Pod",))
        return {"node_conditions": conditions,
                "taints": sorted((t["key"], t["effect"], bool(t.get("timeAdded")))
                                 for t in taints),
                "pod_conditions": pod_conditions,
                "node_events": [list(e) for e in node_events],
                "pod_events": sorted((e["type"], e["reason"], e["message"], e["source"])
                                     for e in pod_events)}
    finally:
        # No kubelet finishes the pod: force it, then the node and its Lease go.
        api.request("DELETE", run.path("pods", "victim"),
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        api.request("DELETE", f"/api/v1/nodes/{node}")
        api.request("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/"
                    f"leases/{node}")


def test_differential(differential: Differential) -> None:
    """A silent node under kube-controller-manager and under pykcm: the same observations."""
    kube, _pykcm = differential.run("silent-node", silent_node, ALLOWLIST, prefix="diff-nlc")
    # Equal (else run() failed); and what both saw is what the scenario is about.
    assert kube["node_conditions"]["Ready"]["reason"] == "NodeStatusUnknown"
    assert ["node.kubernetes.io/unreachable", "NoExecute", True] in kube["taints"]
    assert kube["pod_conditions"]["DisruptionTarget"]["reason"] == "DeletionByTaintManager"
    assert kube["pod_conditions"]["Ready"]["status"] == "False"
    assert {e[1] for e in kube["pod_events"]} >= {"NodeNotReady", "TaintManagerEviction"}
    assert {e[1] for e in kube["node_events"]} >= {"RegisteredNode", "NodeNotReady"}
