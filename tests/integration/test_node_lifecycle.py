"""The node lifecycle and taint eviction controllers against an API server, with the
simulator's nodes and shortened flags (a grace period of a few seconds, as upstream's
integration tests shorten them).

A node whose simulated kubelet is stopped (``sim.pykcm.io/heartbeat=stopped``) turns
Unknown, gets the ``unreachable`` taints, its pods are evicted after their (short)
tolerationSeconds and their ReplicaSet replaces them on the other nodes; back to life,
its taints go. Each test's nodes carry a label of its own and the controllers' node
informer selects it, so nodes other tests left in the cluster are not touched.

On the real kube-apiserver the session's real kube-controller-manager runs its own node
lifecycle and taint eviction controllers beside these (tests' simulated nodes need the
former to lose kube-apiserver's ``not-ready`` taint); with their 50 s grace period they
only echo what pykcm's controllers did (the same taints; an eviction either may record).
The differential test (tests/e2e/test_differential_node_lifecycle.py) runs them apart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.nodelifecycle import NodeLifecycleController
from pykcm.controllers.replicaset import ReplicaSetController
from pykcm.controllers.tainteviction import TaintEvictionController
from pykcm.informers import SharedInformerFactory
from pykcm.sim import NodeConfig, Simulator
from pykcm.sim.nodes import HEARTBEAT_ANNOTATION
from tests.conftest import Backend, create_namespace
from tests.polling import eventually


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


def _cond(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or ()
                 if c.get("type") == ctype), None)


def _taints(node: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (node.get("spec") or {}).get("taints") or ()}


@contextlib.asynccontextmanager
async def cluster(client: Client, ns: str) -> AsyncIterator[Simulator]:
    """Three simulated nodes labelled ``pykcm-test=<ns>`` and the controllers watching them."""
    label = f"pykcm-test={ns}"
    sim = Simulator(client, nodes=3, node_prefix=ns,
                    node_config=NodeConfig(labels={"pykcm-test": ns}),
                    lease_renew_interval=0.5, ready_after=0.0)

    def nodes_only(opts: dict[str, Any]) -> None:
        opts["labelSelector"] = label

    nodes_f = SharedInformerFactory(client, name="", tweak_list_options=nodes_only)
    ns_f = SharedInformerFactory(client, namespace=ns, name="")
    lease_f = SharedInformerFactory(client, namespace="kube-node-lease", name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    nlc = NodeLifecycleController(
        client=client, node_informer=nodes_f.core_v1.nodes, pod_informer=ns_f.core_v1.pods,
        lease_informer=lease_f.coordination_v1.leases,
        recorder=broadcaster.new_recorder("node-controller"),
        node_monitor_period=0.5, node_monitor_grace_period=3.0, node_startup_grace_period=3.0,
        eviction_limiter_qps=10.0)
    tec = TaintEvictionController(
        client=client, pod_informer=ns_f.core_v1.pods, node_informer=nodes_f.core_v1.nodes,
        recorder=broadcaster.new_recorder("taint-eviction-controller"))
    rsc = ReplicaSetController(pod_informer=ns_f.core_v1.pods,
                               rs_informer=ns_f.apps_v1.replicasets, client=client,
                               recorder=broadcaster.new_recorder("replicaset-controller"))
    await sim.start()
    for f in (nodes_f, ns_f, lease_f):
        f.start()
    tasks = [asyncio.create_task(c.run(2)) for c in (nlc, tec, rsc)]
    try:
        yield sim
    finally:
        for c in (nlc, tec, rsc):
            c.shutdown()
        await asyncio.gather(*tasks)
        for f in (nodes_f, ns_f, lease_f):
            await f.shutdown()
        await sim.stop()
        await broadcaster.shutdown(timeout=2.0)
        for name in sim.node_names:
            with contextlib.suppress(Exception):
                await client.delete("nodes", name)
        assert all(c.health_check() is None for c in (nlc, tec, rsc))


async def test_a_silent_node_is_tainted_its_pods_evicted_and_replaced(
        client: Client, apiserver: Backend) -> None:
    ns = await create_namespace(client, apiserver, "nlc")
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
          "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                       "nodeSelector": {"pykcm-test": ns},
                       "tolerations": [{"key": "node.kubernetes.io/unreachable",
                                        "operator": "Exists", "effect": "NoExecute",
                                        "tolerationSeconds": 2}],
                       "containers": [{"name": "c", "image": "nginx"}]}}}}
    async with cluster(client, ns) as sim:
        await client.create("replicasets", rs, ns)

        async def three_running() -> list[dict[str, Any]] | None:
            pods = [p for p in (await client.list("pods", ns))["items"]
                    if (p.get("status") or {}).get("phase") == "Running"
                    and not p["metadata"].get("deletionTimestamp")]
            return pods if len(pods) == 3 else None
        pods = await eventually(three_running, what="3 running pods")
        # The other tolerations the API server's DefaultTolerationSeconds gave them.
        tols = {(t.get("key"), t.get("tolerationSeconds")) for t in pods[0]["spec"]["tolerations"]}
        assert tols == {("node.kubernetes.io/unreachable", 2),
                        ("node.kubernetes.io/not-ready", 300)}
        victim = pods[0]["spec"]["nodeName"]
        on_victim = {p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == victim}
        assert victim in sim.node_names

        await client.patch("nodes", victim, {"metadata": {"annotations": {
            HEARTBEAT_ANNOTATION: "stopped"}}})

        async def unknown() -> dict[str, Any] | None:
            node = await client.get("nodes", victim)
            ready = _cond(node, "Ready")
            return node if ready and ready["status"] == "Unknown" else None
        node = await eventually(unknown, what="the node Unknown")
        for ctype in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            c = _cond(node, ctype)
            assert c is not None and c["status"] == "Unknown"
            assert c["reason"] == "NodeStatusUnknown"
            assert c["message"] == "Kubelet stopped posting node status."

        async def tainted() -> dict[str, Any] | None:
            node = await client.get("nodes", victim)
            want = {("node.kubernetes.io/unreachable", "NoExecute"),
                    ("node.kubernetes.io/unreachable", "NoSchedule")}
            return node if want <= _taints(node) else None
        node = await eventually(tainted, what="the unreachable taints")
        assert all(t.get("timeAdded") for t in node["spec"]["taints"])

        async def replaced() -> list[dict[str, Any]] | None:
            items = (await client.list("pods", ns))["items"]
            gone = [p for p in items if p["metadata"]["name"] in on_victim]
            live = [p for p in items if not p["metadata"].get("deletionTimestamp")
                    and (p.get("status") or {}).get("phase") == "Running"]
            if (all(p["metadata"].get("deletionTimestamp") for p in gone) and len(live) == 3
                    and all(p["spec"]["nodeName"] != victim for p in live)):
                return gone
            return None
        evicted = await eventually(replaced, timeout=60, what="pods evicted and replaced")
        for p in evicted:  # the dead kubelet leaves them Terminating, as a real one
            target = _cond(p, "DisruptionTarget")
            assert target is not None and target["reason"] == "DeletionByTaintManager"
            ready = _cond(p, "Ready")
            assert ready is not None and ready["status"] == "False"
        events = (await client.list("events", ns))["items"]
        assert {(e["reason"], e["message"]) for e in events} >= {
            ("TaintManagerEviction", f"Marking for deletion Pod {ns}/{name}")
            for name in on_victim}

        await client.patch("nodes", victim, {"metadata": {"annotations": {
            HEARTBEAT_ANNOTATION: None}}})

        async def healthy() -> dict[str, Any] | None:
            node = await client.get("nodes", victim)
            ready = _cond(node, "Ready")
            untainted = not {k for k, _ in _taints(node)} & {
                "node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"}
            return node if ready and ready["status"] == "True" and untainted else None
        await eventually(healthy, what="the node Ready and untainted")

        async def terminated() -> bool:
            names = {p["metadata"]["name"] for p in (await client.list("pods", ns))["items"]}
            return not names & on_victim
        await eventually(terminated, what="the evicted pods finished by the kubelet")
