"""DaemonSetsController against either API server, each test in a fresh namespace with
nodes of its own (labelled with the namespace; the DaemonSets select them).

There is no scheduler nor kubelet: daemon pods stay unbound (the controller places them
with their matchFields node affinity, which is what it counts), and the tests write the
pods' status themselves. Unbound pods are deleted at once by either server."""

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
from pykcm.controllers.daemon import DaemonSetsController
from pykcm.controllers.daemon.util import get_target_node_name
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
    return await create_namespace(client, apiserver, "ds")


class Nodes:
    """Nodes of one test, Ready, labelled ``dstest=<namespace>``; deleted afterwards."""

    def __init__(self, client: Client, ns: str) -> None:
        self.client, self.ns, self.names = client, ns, []

    async def add(self, name: str, labels: dict[str, str] | None = None,
                  taints: list[dict[str, str]] | None = None,
                  unschedulable: bool = False) -> str:
        full = f"{self.ns}-{name}"
        body: dict[str, Any] = {"metadata": {"name": full,
                                             "labels": {"dstest": self.ns, **(labels or {})}},
                                "spec": {"taints": taints or [],
                                         "unschedulable": unschedulable}}
        await self.client.create("nodes", body)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        await self.client.patch("nodes", full, {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, "merge",
            subresource="status")
        self.names.append(full)
        return full

    async def cleanup(self) -> None:
        for n in self.names:
            with contextlib.suppress(NotFound):
                await self.client.delete("nodes", n)


@pytest.fixture
async def nodes(client: Client, ns: str) -> AsyncIterator[Nodes]:
    n = Nodes(client, ns)
    yield n
    await n.cleanup()


@pytest.fixture
async def controller(client: Client, ns: str) -> AsyncIterator[DaemonSetsController]:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = DaemonSetsController(
        ds_informer=factory.apps_v1.daemonsets,
        history_informer=factory.apps_v1.controllerrevisions,
        pod_informer=factory.core_v1.pods, node_informer=factory.core_v1.nodes,
        client=client, recorder=broadcaster.new_recorder("daemonset-controller"))
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    yield ctl
    ctl.shutdown()
    await task
    await factory.shutdown()
    await broadcaster.shutdown()
    assert ctl.health_check() is None


def daemon_set(name: str, ns: str, *, image: str = "nginx:1.27",
               strategy: dict[str, Any] | None = None,
               tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": {"dstest": ns},
                            "containers": [{"name": "c", "image": image}],
                            "terminationGracePeriodSeconds": 0}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "updateStrategy": strategy or {"type": "RollingUpdate"},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


async def live_pods(client: Client, ns: str) -> list[dict[str, Any]]:
    return [p for p in (await client.list("pods", ns))["items"]
            if not p["metadata"].get("deletionTimestamp")]


async def pods_by_node(client: Client, ns: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in await live_pods(client, ns):
        out.setdefault(get_target_node_name(p), []).append(p)
    return out


async def wait_pods_on(client: Client, ns: str, node_names: set[str],
                       image: str | None = None) -> dict[str, list[dict[str, Any]]]:
    async def check() -> dict[str, list[dict[str, Any]]] | None:
        by_node = await pods_by_node(client, ns)
        if set(by_node) != node_names or any(len(v) != 1 for v in by_node.values()):
            return None
        if image and any(v[0]["spec"]["containers"][0]["image"] != image
                         for v in by_node.values()):
            return None
        return by_node
    got: dict[str, list[dict[str, Any]]] = await eventually(
        check, what=f"one pod on each of {sorted(node_names)}")
    return got


async def ds_status(client: Client, ns: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (await client.get("daemonsets", name, ns)).get("status") or {}
    return status


async def events(client: Client, ns: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in (await client.list("events", ns))["items"]]


async def test_one_pod_per_eligible_node_with_node_affinity_and_tolerations(
        client: Client, ns: str, nodes: Nodes, controller: DaemonSetsController) -> None:
    a = await nodes.add("a")
    b = await nodes.add("b", unschedulable=True)  # daemon pods tolerate unschedulable
    await nodes.add("tainted", taints=[{"key": "dedicated", "value": "x",
                                        "effect": "NoSchedule"}])
    await nodes.add("other", labels={"dstest": "nope"})
    ds = await client.create("daemonsets", daemon_set("web", ns), ns)
    by_node = await wait_pods_on(client, ns, {a, b})
    pod = by_node[a][0]
    assert pod["metadata"]["generateName"] == "web-"
    assert pod["spec"].get("nodeName") is None
    assert pod["spec"]["affinity"] == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [a]}]}]}}}
    tolerations = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert tolerations == {("node.kubernetes.io/not-ready", "NoExecute"),
                           ("node.kubernetes.io/unreachable", "NoExecute"),
                           ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                           ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                           ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                           ("node.kubernetes.io/unschedulable", "NoSchedule")}
    ref = pod["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("DaemonSet", "web", ds["metadata"]["uid"])
    revisions = (await client.list("controllerrevisions", ns))["items"]
    assert len(revisions) == 1
    h = revisions[0]["metadata"]["labels"]["controller-revision-hash"]
    assert revisions[0]["metadata"]["name"] == f"web-{h}"
    assert revisions[0]["revision"] == 1
    assert pod["metadata"]["labels"] == {"app": "web", "controller-revision-hash": h,
                                         "pod-template-generation": "1"}

    async def counted() -> dict[str, Any] | None:
        st = await ds_status(client, ns, "web")
        return st if st.get("currentNumberScheduled") == 2 else None
    st = await eventually(counted, what="status")
    assert {k: st.get(k, 0) for k in ("desiredNumberScheduled", "currentNumberScheduled",
                                      "numberReady", "numberAvailable", "numberUnavailable",
                                      "updatedNumberScheduled", "numberMisscheduled",
                                      "observedGeneration")} == {
        "desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 0,
        "numberAvailable": 0, "numberUnavailable": 2, "updatedNumberScheduled": 2,
        "numberMisscheduled": 0, "observedGeneration": 1}
    for pods in by_node.values():
        await set_ready(client, ns, pods[0]["metadata"]["name"], True)

    async def ready() -> bool:
        return (await ds_status(client, ns, "web")).get("numberAvailable") == 2
    await eventually(ready, what="numberAvailable 2")
    created = [m for r, m in await events(client, ns) if r == "SuccessfulCreate"]
    assert len(created) == 2 and all(m.startswith("Created pod: web-") for m in created)


async def test_rolling_update_respects_max_unavailable_and_records_history(
        client: Client, ns: str, nodes: Nodes, controller: DaemonSetsController) -> None:
    names = {await nodes.add(x) for x in ("a", "b", "c")}
    await client.create("daemonsets", daemon_set("web", ns), ns)
    by_node = await wait_pods_on(client, ns, names)
    for pods in by_node.values():
        await set_ready(client, ns, pods[0]["metadata"]["name"], True)

    async def available(n: int) -> bool:
        return (await ds_status(client, ns, "web")).get("numberAvailable") == n
    await eventually(lambda: available(3), what="3 available")

    await client.patch("daemonsets", "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:1.28"}]}}}}, "strategic", ns)
    # maxUnavailable 1: one old pod replaced at a time, the others stay until the new
    # one is available.
    seen_new: set[str] = set()
    for _ in range(3):
        async def one_new() -> list[dict[str, Any]] | None:
            pods = await live_pods(client, ns)
            new = [p for p in pods if p["spec"]["containers"][0]["image"] == "nginx:1.28"
                   and p["metadata"]["name"] not in seen_new]
            old = [p for p in pods if p["spec"]["containers"][0]["image"] == "nginx:1.27"]
            return new if new and len(old) + len(seen_new) + len(new) >= 3 else None
        new = await eventually(one_new, what="a new pod")
        assert len(new) == 1, [p["metadata"]["name"] for p in new]
        await set_ready(client, ns, new[0]["metadata"]["name"], True)
        seen_new.add(new[0]["metadata"]["name"])
    await wait_pods_on(client, ns, names, image="nginx:1.28")
    await eventually(lambda: available(3), what="3 available after the update")
    revisions = sorted((await client.list("controllerrevisions", ns))["items"],
                       key=lambda r: r["revision"])
    assert [r["revision"] for r in revisions] == [1, 2]
    st = await ds_status(client, ns, "web")
    assert st["updatedNumberScheduled"] == 3 and st["observedGeneration"] == 2
    deleted = [m for r, m in await events(client, ns) if r == "SuccessfulDelete"]
    assert len(deleted) == 3


async def test_on_delete_strategy_waits_for_deletions(
        client: Client, ns: str, nodes: Nodes, controller: DaemonSetsController) -> None:
    a = await nodes.add("a")
    await client.create("daemonsets", daemon_set("web", ns, strategy={"type": "OnDelete"}), ns)
    first = (await wait_pods_on(client, ns, {a}))[a][0]
    await client.patch("daemonsets", "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:1.28"}]}}}}, "strategic", ns)

    async def observed() -> bool:
        return (await ds_status(client, ns, "web")).get("observedGeneration") == 2
    await eventually(observed, what="generation 2 observed")
    assert (await ds_status(client, ns, "web")).get("updatedNumberScheduled", 0) == 0
    assert [p["metadata"]["name"] for p in await live_pods(client, ns)] == \
        [first["metadata"]["name"]]
    await client.delete("pods", first["metadata"]["name"], ns)
    await wait_pods_on(client, ns, {a}, image="nginx:1.28")


async def test_node_changes_move_daemon_pods(
        client: Client, ns: str, nodes: Nodes, controller: DaemonSetsController) -> None:
    a = await nodes.add("a")
    b = await nodes.add("b", labels={"dstest": "later"})
    await client.create("daemonsets", daemon_set("web", ns), ns)
    await wait_pods_on(client, ns, {a})
    # b gets the label: a pod there; a gets an untolerated NoExecute taint: its pod goes
    await client.patch("nodes", b, {"metadata": {"labels": {"dstest": ns}}}, "merge")
    by_node = await wait_pods_on(client, ns, {a, b})
    # bound, as the scheduler would: node updates look for the pods on the node
    await client.bind(by_node[a][0]["metadata"]["name"], ns, a)
    await client.patch("nodes", a, {"spec": {"taints": [
        {"key": "evict", "value": "now", "effect": "NoExecute"}]}}, "merge")
    await wait_pods_on(client, ns, {b})

    async def status() -> bool:
        st = await ds_status(client, ns, "web")
        return st.get("desiredNumberScheduled") == 1 and st.get("currentNumberScheduled") == 1
    await eventually(status, what="status for one node")


async def test_failed_pod_is_replaced_with_an_event(
        client: Client, ns: str, nodes: Nodes, controller: DaemonSetsController) -> None:
    a = await nodes.add("a")
    await client.create("daemonsets", daemon_set("web", ns), ns)
    pod = (await wait_pods_on(client, ns, {a}))[a][0]
    name = pod["metadata"]["name"]
    await client.patch("pods", name, {"status": {"phase": "Failed"}}, "merge", ns,
                       subresource="status")

    async def replaced() -> bool:
        pods = await live_pods(client, ns)
        return len(pods) == 1 and pods[0]["metadata"]["name"] != name
    await eventually(replaced, what="a replacement pod")
    msgs = [m for r, m in await events(client, ns) if r == "FailedDaemonPod"]
    assert msgs == [f"Found failed daemon pod {ns}/{name} on node {a}, will try to kill it"]


async def test_rollback_to_an_earlier_revision_reuses_it(
        client: Client, ns: str, nodes: Nodes, controller: DaemonSetsController) -> None:
    a = await nodes.add("a")
    await client.create("daemonsets", daemon_set("web", ns), ns)
    await wait_pods_on(client, ns, {a})
    await client.patch("daemonsets", "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:1.28"}]}}}}, "strategic", ns)
    await wait_pods_on(client, ns, {a}, image="nginx:1.28")
    revisions = (await client.list("controllerrevisions", ns))["items"]
    first = next(r for r in revisions if r["revision"] == 1)
    # what `kubectl rollout undo` does: apply the revision's patch to the DaemonSet
    await client.patch("daemonsets", "web", first["data"], "strategic", ns)
    await wait_pods_on(client, ns, {a}, image="nginx:1.27")

    async def renumbered() -> list[tuple[str, int]] | None:
        revs = (await client.list("controllerrevisions", ns))["items"]
        got = sorted((r["metadata"]["name"], r["revision"]) for r in revs)
        return got if (first["metadata"]["name"], 3) in got and len(got) == 2 else None
    await eventually(renumbered, what="the first revision renumbered 3")
