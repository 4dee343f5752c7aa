"""DaemonSets end to end with the real kubectl (issue 13's acceptance), on each ``cluster``:
``pykcm up``, pykcm's manager and sim on the real kube-apiserver, the real
kube-controller-manager on pykcm's API server.

The cluster's 3 simulated nodes get one pod each; a node tainted NoExecute loses its pod
and gets it back when the taint goes; a 4th node (another ``pykcm sim``) gets one; a
template change rolls out (``kubectl rollout status``), ``kubectl rollout history`` lists
the revisions and ``kubectl rollout undo`` goes back. The taint and the extra node are
undone before the test ends (the cluster is shared by the session).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.cluster_helpers import READY_AFTER, get_json, items, wait_until
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

NS_PREFIX = "ds"


def daemon_set_json(name: str, image: str = "nginx:1.27") -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "updateStrategy": {"type": "RollingUpdate",
                                    "rollingUpdate": {"maxUnavailable": 1}},
                 "template": {"metadata": {"labels": {"app": name},
                                           "annotations": {READY_AFTER: "0.2"}},
                              "spec": {"containers": [{"name": "app", "image": image}],
                                       "terminationGracePeriodSeconds": 0}}}})


def running_pods_by_node(k: Kubectl, ns: str, name: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for p in items(k, ns, "pods", "-l", f"app={name}"):
        if p["metadata"].get("deletionTimestamp") or p.get("status", {}).get("phase") != \
                "Running":
            continue
        node = p["spec"].get("nodeName")
        assert node not in out, f"two pods on {node}"
        out[node] = p
    return out


def node_names(k: Kubectl) -> list[str]:
    return sorted(n["metadata"]["name"] for n in get_json(k, "nodes")["items"])


def wait_for_nodes(k: Kubectl, ns: str, name: str, nodes: list[str]) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        by_node = running_pods_by_node(k, ns, name)
        return by_node if sorted(by_node) == sorted(nodes) else None
    found: dict[str, Any] = wait_until(check, f"one running pod on each of {nodes}")
    return found


def ds_status(k: Kubectl, ns: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = get_json(k, "daemonset", name, "-n", ns).get("status") or {}
    return status


@contextlib.contextmanager
def extra_node(kubeconfig: str, prefix: str, k: Kubectl) -> Iterator[str]:
    """A 4th simulated node (``pykcm sim --nodes 1``) until the block ends."""
    proc = subprocess.Popen([sys.executable, "-m", "pykcm", "sim", "--kubeconfig", kubeconfig,
                             "--nodes", "1", "--node-prefix", prefix],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    name = f"{prefix}-0"
    try:
        yield name
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        k.run("delete", "node", name, "--wait=false")


def test_one_pod_per_node_taints_and_a_new_node(kubectl_up: Kubectl, ns: str,
                                                 cluster: Any) -> None:
    k = kubectl_up
    nodes = node_names(k)
    assert len(nodes) == 3
    k.ok("apply", "-n", ns, "-f", "-", stdin=daemon_set_json("agent"))
    by_node = wait_for_nodes(k, ns, "agent", nodes)
    r = k.run("rollout", "status", "daemonset/agent", "-n", ns, "--timeout=90s", timeout=120)
    assert r.returncode == 0, r.stderr
    assert "successfully rolled out" in r.stdout
    pod = next(iter(by_node.values()))
    assert pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In",
                          "values": [pod["spec"]["nodeName"]]}]}]
    st = ds_status(k, ns, "agent")
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"],
            st["updatedNumberScheduled"], st.get("numberMisscheduled", 0)) == (3, 3, 3, 3, 0)

    tainted = nodes[0]
    try:
        k.ok("taint", "nodes", tainted, f"e2e-{ns}=x:NoExecute")
        wait_for_nodes(k, ns, "agent", nodes[1:])
        wait_until(lambda: ds_status(k, ns, "agent").get("desiredNumberScheduled") == 2,
                   "desiredNumberScheduled 2")
    finally:
        k.run("taint", "nodes", tainted, f"e2e-{ns}=x:NoExecute-")
    wait_for_nodes(k, ns, "agent", nodes)

    with extra_node(cluster.kubeconfig_path, ns, k) as fourth:
        by_node = wait_for_nodes(k, ns, "agent", [*nodes, fourth])
        wait_until(lambda: ds_status(k, ns, "agent").get("numberAvailable") == 4,
                   "numberAvailable 4")
        # the node goes away with its kubelet: its pod would be left to the pod GC
        k.run("delete", "pod", by_node[fourth]["metadata"]["name"], "-n", ns, "--force",
              "--grace-period=0")


def test_rollout_status_history_and_undo(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    nodes = node_names(k)
    k.ok("apply", "-n", ns, "-f", "-", stdin=daemon_set_json("web"))
    wait_for_nodes(k, ns, "web", nodes)
    k.ok("set", "image", "daemonset/web", "app=nginx:1.28", "-n", ns)
    r = k.run("rollout", "status", "daemonset/web", "-n", ns, "--timeout=90s", timeout=120)
    assert r.returncode == 0, r.stderr
    by_node = wait_for_nodes(k, ns, "web", nodes)
    assert {p["spec"]["containers"][0]["image"] for p in by_node.values()} == {"nginx:1.28"}
    history = k.ok("rollout", "history", "daemonset/web", "-n", ns)
    assert [ln.split()[0] for ln in history.splitlines()[2:] if ln.strip()] == ["1", "2"]

    k.ok("rollout", "undo", "daemonset/web", "-n", ns)
    r = k.run("rollout", "status", "daemonset/web", "-n", ns, "--timeout=90s", timeout=120)
    assert r.returncode == 0, r.stderr

    def back() -> bool:
        pods = running_pods_by_node(k, ns, "web")
        return sorted(pods) == nodes and {p["spec"]["containers"][0]["image"]
                                          for p in pods.values()} == {"nginx:1.27"}
    wait_until(back, "the pods back on nginx:1.27")
    revisions = sorted((r["revision"], r["metadata"]["labels"]["controller-revision-hash"])
                       for r in items(k, ns, "controllerrevisions"))
    assert [rev for rev, _ in revisions] == [2, 3]
    hashes = {p["metadata"]["labels"]["controller-revision-hash"]
              for p in running_pods_by_node(k, ns, "web").values()}
    assert hashes == {revisions[-1][1]}
