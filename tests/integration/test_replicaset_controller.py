"""ReplicaSetController against either API server, each test in a fresh namespace
with its own namespaced informer factory, controller and event broadcaster.

There is no kubelet: the tests make pods Ready by writing their status themselves.
Unscheduled pods are deleted at once by the server (no grace period)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.client.errors import Conflict
from pykcm.controller import EventBroadcaster
from pykcm.controllers.replicaset import ReplicaSetController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.polling import eventually


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "rs")


@pytest.fixture
async def controller(client: Client, ns: str) -> AsyncIterator[ReplicaSetController]:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = ReplicaSetController(pod_informer=factory.core_v1.pods,
                               rs_informer=factory.apps_v1.replicasets, client=client,
                               recorder=broadcaster.new_recorder("replicaset-controller"))
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    yield ctl
    ctl.shutdown()
    await task
    await factory.shutdown()
    await broadcaster.shutdown()
    assert ctl.health_check() is None


def replica_set(name: str, replicas: int, *, min_ready: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {"replicas": replicas, "minReadySeconds": min_ready,
                 "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
    }


async def pods_of(client: Client, ns: str, rs: dict[str, Any]) -> list[dict[str, Any]]:
    """The live pods controlled by ``rs``, not being deleted."""
    uid = rs["metadata"]["uid"]
    items = (await client.list("pods", ns))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")
            and any(r.get("uid") == uid and r.get("controller")
                    for r in p["metadata"].get("ownerReferences") or ())]


async def wait_pods(client: Client, ns: str, rs: dict[str, Any], n: int) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        pods = await pods_of(client, ns, rs)
        return pods if len(pods) == n else None
    result: list[dict[str, Any]] = await eventually(check, what=f"{n} pods")
    return result


async def set_ready(client: Client, ns: str, name: str, ready: bool, *,
                    since: float | None = None) -> None:
    t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if since is None else since))
    status = "True" if ready else "False"
    await client.patch("pods", name, {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": status, "lastTransitionTime": t},
        {"type": "ContainersReady", "status": status, "lastTransitionTime": t}]}},
        "merge", ns, subresource="status")


async def rs_status(client: Client, ns: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (await client.get("replicasets", name, ns)).get("status") or {}
    return status


async def scale(client: Client, ns: str, name: str, replicas: int) -> None:
    await client.patch("replicasets", name, {"spec": {"replicas": replicas}}, "merge", ns)


async def test_creates_pods_with_controller_refs_and_status(
        client: Client, ns: str, controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("web", 3), ns)
    pods = await wait_pods(client, ns, rs, 3)
    for p in pods:
        assert p["metadata"]["name"].startswith("web-")
        assert p["metadata"]["labels"] == {"app": "web"}
        ref = p["metadata"]["ownerReferences"][0]
        assert ref == {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                       "uid": rs["metadata"]["uid"], "controller": True,
                       "blockOwnerDeletion": True}

    async def status_ok() -> bool:
        st = await rs_status(client, ns, "web")
        return (st.get("replicas"), st.get("fullyLabeledReplicas"), st.get("readyReplicas", 0),
                st.get("availableReplicas", 0), st.get("terminatingReplicas"),
                st.get("observedGeneration")) == (3, 3, 0, 0, 0, rs["metadata"]["generation"])
    await eventually(status_ok, what="status replicas=3")
    # No more than asked for, once the expectations are met.
    await asyncio.sleep(0.3)
    assert len(await pods_of(client, ns, rs)) == 3


async def test_ready_and_available_replicas_follow_pod_readiness(
        client: Client, ns: str, controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("app", 2), ns)
    pods = await wait_pods(client, ns, rs, 2)
    await set_ready(client, ns, pods[0]["metadata"]["name"], True)

    async def one_ready() -> bool:
        st = await rs_status(client, ns, "app")
        return (st.get("readyReplicas"), st.get("availableReplicas")) == (1, 1)
    await eventually(one_ready, what="1 ready")
    await set_ready(client, ns, pods[1]["metadata"]["name"], True)

    async def two_ready() -> bool:
        st = await rs_status(client, ns, "app")
        return (st.get("readyReplicas"), st.get("availableReplicas")) == (2, 2)
    await eventually(two_ready, what="2 ready")
    await set_ready(client, ns, pods[0]["metadata"]["name"], False)

    async def back_to_one() -> bool:
        st = await rs_status(client, ns, "app")
        return (st.get("readyReplicas"), st.get("availableReplicas")) == (1, 1)
    await eventually(back_to_one, what="1 ready again")


async def test_available_after_min_ready_seconds(
        client: Client, ns: str, controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("slow", 1, min_ready=1), ns)
    (p,) = await wait_pods(client, ns, rs, 1)
    await set_ready(client, ns, p["metadata"]["name"], True)

    async def ready_not_available() -> dict[str, Any] | None:
        st = await rs_status(client, ns, "slow")
        return st if st.get("readyReplicas") == 1 else None
    await eventually(ready_not_available, what="ready")

    # Nothing changes in the cluster from now on: only the controller's own
    # delayed sync can count the pod available.
    async def available() -> bool:
        return (await rs_status(client, ns, "slow")).get("availableReplicas") == 1
    await eventually(available, what="available after minReadySeconds")


async def test_scale_down_deletes_not_ready_pods_first(
        client: Client, ns: str, controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("down", 3), ns)
    pods = await wait_pods(client, ns, rs, 3)
    names = sorted(p["metadata"]["name"] for p in pods)
    ready, not_ready = names[:2], names[2]
    for n in ready:
        await set_ready(client, ns, n, True)
    await set_ready(client, ns, not_ready, False)

    async def two_ready() -> bool:
        return (await rs_status(client, ns, "down")).get("readyReplicas") == 2
    await eventually(two_ready, what="2 ready")

    await scale(client, ns, "down", 2)
    left = await wait_pods(client, ns, rs, 2)
    assert sorted(p["metadata"]["name"] for p in left) == ready

    # Of two ready pods, the more recently ready one goes.
    await set_ready(client, ns, ready[0], True, since=time.time() - 3600)
    await set_ready(client, ns, ready[1], True, since=time.time() - 5)

    async def synced() -> bool:
        st = await rs_status(client, ns, "down")
        return st.get("replicas") == 2 and st.get("readyReplicas") == 2
    await eventually(synced, what="status of 2")
    await scale(client, ns, "down", 1)
    (survivor,) = await wait_pods(client, ns, rs, 1)
    assert survivor["metadata"]["name"] == ready[0]

    async def status_one() -> bool:
        st = await rs_status(client, ns, "down")
        return (st.get("replicas"), st.get("readyReplicas")) == (1, 1)
    await eventually(status_one, what="status replicas=1")


async def test_deleted_pod_is_replaced(client: Client, ns: str,
                                       controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("keep", 2), ns)
    pods = await wait_pods(client, ns, rs, 2)
    victim = pods[0]["metadata"]["name"]
    await client.delete("pods", victim, ns)

    async def replaced() -> bool:
        now = await pods_of(client, ns, rs)
        return len(now) == 2 and victim not in {p["metadata"]["name"] for p in now}
    await eventually(replaced, what="replacement")


async def test_orphan_matching_the_selector_is_adopted(
        client: Client, ns: str, controller: ReplicaSetController) -> None:
    orphan = await client.create("pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stray", "labels": {"app": "adopt"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}, ns)
    rs = await client.create("replicasets", replica_set("adopt", 2), ns)
    pods = await wait_pods(client, ns, rs, 2)
    assert "stray" in {p["metadata"]["name"] for p in pods}
    adopted = await client.get("pods", "stray", ns)
    assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
    # One adopted, one created: still 2 once everything settled.
    await asyncio.sleep(0.3)
    assert len((await client.list("pods", ns))["items"]) == 2


async def test_orphan_created_later_is_adopted_and_extra_pod_removed(
        client: Client, ns: str, controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("late", 1), ns)
    await wait_pods(client, ns, rs, 1)
    await client.create("pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stray", "labels": {"app": "late"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}, ns)

    # Adopted, then one of the two deleted (both are young: the age buckets may tie).
    async def settled() -> list[dict[str, Any]] | None:
        items = (await client.list("pods", ns))["items"]
        live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        if len(live) != 1:
            return None
        refs = live[0]["metadata"].get("ownerReferences") or []
        return live if refs and refs[0]["uid"] == rs["metadata"]["uid"] else None
    await eventually(settled, what="adopted and scaled back to 1")


async def test_relabeled_pod_is_released_and_replaced(
        client: Client, ns: str, controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("rel", 1), ns)
    (p,) = await wait_pods(client, ns, rs, 1)
    name = p["metadata"]["name"]
    await client.patch("pods", name, {"metadata": {"labels": {"app": "elsewhere"}}}, "merge", ns)

    async def released() -> bool:
        pod = await client.get("pods", name, ns)
        return not pod["metadata"].get("ownerReferences")
    await eventually(released, what="release")
    (replacement,) = await wait_pods(client, ns, rs, 1)
    assert replacement["metadata"]["name"] != name


async def test_events_record_creates_and_deletes(client: Client, ns: str,
                                                 controller: ReplicaSetController) -> None:
    rs = await client.create("replicasets", replica_set("ev", 2), ns)
    await wait_pods(client, ns, rs, 2)
    await scale(client, ns, "ev", 1)
    await wait_pods(client, ns, rs, 1)

    async def events() -> dict[str, list[dict[str, Any]]] | None:
        items = (await client.list("events", ns))["items"]
        by_reason: dict[str, list[dict[str, Any]]] = {}
        for e in items:
            by_reason.setdefault(e["reason"], []).append(e)
        return by_reason if {"SuccessfulCreate", "SuccessfulDelete"} <= set(by_reason) else None
    found = await eventually(events, what="events")
    create = found["SuccessfulCreate"][0]
    assert create["involvedObject"]["kind"] == "ReplicaSet"
    assert create["involvedObject"]["name"] == "ev"
    assert create["involvedObject"]["uid"] == rs["metadata"]["uid"]
    assert create["source"]["component"] == "replicaset-controller"
    assert create["message"].startswith("Created pod: ev-")
    assert sum(e.get("count", 1) for e in found["SuccessfulCreate"]) == 2
    assert found["SuccessfulDelete"][0]["message"].startswith("Deleted pod: ev-")
    assert found["SuccessfulDelete"][0]["type"] == "Normal"


class ConflictCountingClient:
    """The client, counting the ReplicaSet status writes the API server refused with 409."""

    def __init__(self, inner: Client) -> None:
        self._inner = inner
        self.status_conflicts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def update_status(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await self._inner.update_status(*args, **kwargs)
        except Conflict:
            self.status_conflicts += 1
            raise


async def test_status_writes_wait_for_the_cache_instead_of_conflicting(
        client: Client, ns: str) -> None:
    # KEP-5647's consistency store: a sync right after the controller's own status write
    # waits until the ReplicaSet cache has it, so, with no other writer of the ReplicaSet,
    # no status write of the controller is refused for an old resourceVersion (without the
    # store, pods turning ready one after another make such 409s and their retries).
    counting = ConflictCountingClient(client)
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = ReplicaSetController(pod_informer=factory.core_v1.pods,
                               rs_informer=factory.apps_v1.replicasets,
                               client=cast(Client, counting),
                               recorder=broadcaster.new_recorder("replicaset-controller"))
    factory.start()
    task = asyncio.create_task(ctl.run(5))
    try:
        rs = await client.create("replicasets", replica_set("busy", 20), ns)
        pods = await wait_pods(client, ns, rs, 20)
        for p in pods:
            await set_ready(client, ns, p["metadata"]["name"], True)

        async def all_ready() -> bool:
            st = await rs_status(client, ns, "busy")
            return (st.get("readyReplicas"), st.get("availableReplicas")) == (20, 20)
        await eventually(all_ready, what="20 ready")
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        await broadcaster.shutdown()
    assert counting.status_conflicts == 0
