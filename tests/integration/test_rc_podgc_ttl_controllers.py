"""The ReplicationController, pod garbage collector and TTL controllers against an API
server, each test in a namespace of its own (nodes are cluster-wide: the tests make their
own and delete them).

Every test runs on both API servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.client.errors import NotFound
from pykcm.controller import EventBroadcaster
from pykcm.controllers.podgc import PodGCController
from pykcm.controllers.replication import REPLICATION_CONTROLLERS, ReplicationManager
from pykcm.controllers.ttl import OBJECT_TTL_ANNOTATION, TTLController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.integration.test_replicaset_controller import set_ready
from tests.polling import eventually


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "rcgc")


@contextlib.asynccontextmanager
async def running(factory: SharedInformerFactory, ctl: Any, workers: int = 1
                  ) -> AsyncIterator[None]:
    factory.start()
    task = asyncio.create_task(ctl.run(workers))
    try:
        yield
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        assert ctl.health_check() is None


async def live_pods(client: Client, ns: str) -> list[dict[str, Any]]:
    return [p for p in (await client.list("pods", ns))["items"]
            if not p["metadata"].get("deletionTimestamp")]


async def test_replication_controller_runs_the_replica_set_algorithm(
        client: Client, ns: str) -> None:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = ReplicationManager(pod_informer=factory.core_v1.pods,
                             rc_informer=factory.informer_for(REPLICATION_CONTROLLERS),
                             client=client,
                             recorder=broadcaster.new_recorder("replication-controller"))
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
          "spec": {"replicas": 3, "selector": {"app": "web"},
                   "template": {"metadata": {"labels": {"app": "web", "tier": "x"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    async with running(factory, ctl, 2):
        created = await client.create(REPLICATION_CONTROLLERS, rc, ns)

        async def three() -> list[dict[str, Any]] | None:
            pods = await live_pods(client, ns)
            return pods if len(pods) == 3 else None
        pods = await eventually(three, what="3 pods")
        ref = pods[0]["metadata"]["ownerReferences"][0]
        assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == (
            "v1", "ReplicationController", "web", created["metadata"]["uid"])
        assert pods[0]["metadata"]["generateName"] == "web-"
        for p in pods:
            await set_ready(client, ns, p["metadata"]["name"], True)

        async def status() -> dict[str, Any] | None:
            st = (await client.get(REPLICATION_CONTROLLERS, "web", ns)).get("status") or {}
            return st if st.get("availableReplicas") == 3 else None
        st = await eventually(status, what="3 available")
        assert st == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3,
                      "availableReplicas": 3, "observedGeneration": 1}
        await client.patch(REPLICATION_CONTROLLERS, "web", {"spec": {"replicas": 1}}, "merge", ns)

        async def one() -> bool:
            return len(await live_pods(client, ns)) == 1
        await eventually(one, what="scaled to 1")
        # an orphan matching the selector is adopted
        await client.create("pods", {"metadata": {"name": "stray", "labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "x"}]}}, ns)

        async def settled() -> bool:
            pods = await live_pods(client, ns)
            return len(pods) == 1 and pods[0]["metadata"].get("ownerReferences") is not None
        await eventually(settled, what="the orphan adopted and one pod deleted")
    await broadcaster.shutdown()
    events = {(e["reason"], e["source"]["component"])
              for e in (await client.list("events", ns))["items"]}
    assert events == {("SuccessfulCreate", "replication-controller"),
                      ("SuccessfulDelete", "replication-controller")}


async def make_node(client: Client, name: str) -> None:
    await client.create("nodes", {"metadata": {"name": name}})
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    await client.patch("nodes", name, {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now,
         "lastTransitionTime": now}]}}, "merge", subresource="status")


async def test_pod_gc_terminated_threshold_orphans_and_unscheduled_terminating(
        client: Client, ns: str) -> None:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    ctl = PodGCController(client=client, pod_informer=factory.core_v1.pods,
                          node_informer=factory.core_v1.nodes, terminated_pod_threshold=1,
                          gc_check_period=0.2, quarantine_time=0.2)
    node = f"{ns}-gone"
    await make_node(client, node)
    hold = ["test.pykcm.io/hold"]

    def pod(name: str, finalizers: list[str] | None = None) -> dict[str, Any]:
        return {"metadata": {"name": name, "finalizers": finalizers or []},
                "spec": {"containers": [{"name": "c", "image": "x"}]}}

    async def names() -> list[str]:
        return sorted(p["metadata"]["name"] for p in (await client.list("pods", ns))["items"])

    # two finished pods: the older goes (threshold 1)
    for i in range(2):
        if i:
            await asyncio.sleep(1.05)  # distinct creation timestamps (seconds)
        await client.create("pods", pod(f"done-{i}"), ns)
        await client.patch("pods", f"done-{i}", {"status": {"phase": "Succeeded"}}, "merge", ns,
                           subresource="status")
    async with running(factory, ctl):
        async def oldest_gone() -> bool:
            return await names() == ["done-1"]
        await eventually(oldest_gone, what="done-0 collected")
        # a pod bound to a node that goes away, and an unscheduled pod being deleted;
        # finalizers keep both visible after the pod GC's delete
        await client.create("pods", pod("orphan", hold), ns)
        await client.bind("orphan", ns, node)
        await client.patch("pods", "orphan", {"status": {"phase": "Running"}}, "merge", ns,
                           subresource="status")
        await client.create("pods", pod("held", hold), ns)
        await client.delete("pods", "held", ns)
        await client.delete("nodes", node)

        async def failed() -> dict[str, Any] | None:
            pods = {p["metadata"]["name"]: p for p in (await client.list("pods", ns))["items"]}
            done = all(pods.get(n, {}).get("status", {}).get("phase") == "Failed"
                       and pods[n]["metadata"].get("deletionTimestamp")
                       for n in ("orphan", "held"))
            return pods if done else None
        pods = await eventually(failed, what="the orphan and the held pod failed and deleted")
        conds = {c["type"]: c for c in pods["orphan"]["status"].get("conditions") or []}
        assert (conds["DisruptionTarget"]["status"], conds["DisruptionTarget"]["reason"],
                conds["DisruptionTarget"]["message"]) == (
            "True", "DeletionByPodGC", "PodGC: node no longer exists")
        assert "DisruptionTarget" not in {c["type"] for c in
                                          pods["held"]["status"].get("conditions") or []}
    for n in ("orphan", "held"):
        await client.patch("pods", n, {"metadata": {"finalizers": None}}, "merge", ns)


async def test_ttl_controller_sets_the_node_ttl_annotation(client: Client, ns: str) -> None:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    ctl = TTLController(node_informer=factory.core_v1.nodes, client=client)
    name = f"{ns}-node"
    await make_node(client, name)
    try:
        async with running(factory, ctl, 2):
            async def annotated() -> str | None:
                n = await client.get("nodes", name)
                value: str | None = (n["metadata"].get("annotations") or {}).get(
                    OBJECT_TTL_ANNOTATION)
                return value
            assert await eventually(annotated, what="the ttl annotation") == "0"
            await client.patch("nodes", name, {"metadata": {"annotations": {
                OBJECT_TTL_ANNOTATION: "300"}}}, "merge")

            async def restored() -> bool:
                return await annotated() == "0"
            await eventually(restored, what="the annotation restored to 0")
    finally:
        with contextlib.suppress(NotFound):
            await client.delete("nodes", name)
