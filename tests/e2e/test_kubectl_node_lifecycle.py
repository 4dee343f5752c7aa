"""End to end on ``pykcm up`` with kubectl: a node whose heartbeat is stopped
(``kubectl annotate node X sim.pykcm.io/heartbeat=stopped``) turns NotReady, is tainted
``node.kubernetes.io/unreachable``, and its Deployment's pods are evicted and replaced on
the other nodes; the annotation removed, the node is Ready and untainted again.

The cluster is this module's own, with a shortened ``--node-monitor-grace-period`` (20 s:
twice the simulated kubelets' 10 s Lease renewal) and pods that tolerate ``unreachable``
for 5 s, as upstream's tests shorten the 50 s and 300 s defaults.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.testing.cluster import Cluster
from tests.e2e.cluster_helpers import condition, get_json, is_active, is_ready, items, wait_until
from tests.e2e.conftest import Kubectl, _kubectl_path

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def k() -> Iterator[Kubectl]:
    with Cluster(nodes=3, manager_flags=["--node-monitor-grace-period=20s"]) as c:
        cache = tempfile.mkdtemp(prefix="kubectl-cache-")
        yield Kubectl(_kubectl_path(), {**os.environ, "KUBECONFIG": c.kubeconfig_path,
                                        "KUBECACHEDIR": cache})
        shutil.rmtree(cache, ignore_errors=True)


def deployment(ns: str) -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                     "tolerations": [{"key": "node.kubernetes.io/unreachable",
                                      "operator": "Exists", "effect": "NoExecute",
                                      "tolerationSeconds": 5}],
                     "containers": [{"name": "web", "image": "nginx:1.27"}]}}}})


def unreachable(node: dict[str, Any]) -> set[str]:
    return {t["effect"] for t in (node.get("spec") or {}).get("taints") or ()
            if t["key"] == "node.kubernetes.io/unreachable"}


def test_stopped_node_is_tainted_and_its_pods_replaced(k: Kubectl) -> None:
    ns = "e2e-nlc"
    k.ok("create", "namespace", ns)
    wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", ns).returncode == 0,
               "the default ServiceAccount")
    k.ok("apply", "-f", "-", stdin=deployment(ns))

    def three_ready() -> list[dict[str, Any]] | None:
        pods = [p for p in items(k, ns, "pods") if is_active(p) and is_ready(p)]
        return pods if len(pods) == 3 else None
    pods = wait_until(three_ready, "3 ready pods")
    victim = pods[0]["spec"]["nodeName"]
    old = {p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == victim}

    k.ok("annotate", "node", victim, "sim.pykcm.io/heartbeat=stopped")

    def not_ready() -> dict[str, Any] | None:
        node = get_json(k, "node", victim)
        ready = condition(node, "Ready")
        return node if ready and ready["status"] == "Unknown" and unreachable(node) == {
            "NoExecute", "NoSchedule"} else None
    node = wait_until(not_ready, "the node Unknown and tainted", timeout=120)
    assert condition(node, "Ready")["reason"] == "NodeStatusUnknown"  # type: ignore[index]
    assert "NotReady" in k.ok("get", "node", victim)

    def replaced() -> list[dict[str, Any]] | None:
        live = [p for p in items(k, ns, "pods") if is_active(p) and is_ready(p)]
        if len(live) == 3 and all(p["spec"]["nodeName"] != victim for p in live) \
                and not old & {p["metadata"]["name"] for p in live}:
            return live
        return None
    wait_until(replaced, "3 ready pods on the other nodes", timeout=120)
    events = k.ok("get", "events", "-n", ns, "--field-selector", "reason=TaintManagerEviction")
    assert all(name in events for name in old), events

    k.ok("annotate", "node", victim, "sim.pykcm.io/heartbeat-")

    def back() -> bool:
        node = get_json(k, "node", victim)
        ready = condition(node, "Ready")
        return bool(ready and ready["status"] == "True" and not unreachable(node))
    wait_until(back, "the node Ready and untainted", timeout=120)
    k.ok("delete", "namespace", ns, "--wait=false")
