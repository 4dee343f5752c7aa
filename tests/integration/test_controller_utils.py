"""Controller utilities against either API server (a fresh namespace per test):
RealPodControl creates and deletes pods with events on the owner, and the claim
managers' adopt / release patches are accepted and do what upstream's do."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pykcm.api.labels import selector_from_label_selector
from pykcm.api.owner_refs import get_controller_of, new_controller_ref
from pykcm.client import Client, NotFound, load_kube_config
from pykcm.controller import (
    EventBroadcaster,
    PodControllerRefManager,
    RealPodControl,
    RealRSControl,
    ReplicaSetControllerRefManager,
    recheck_deletion_timestamp,
)
from tests.conftest import Backend, create_namespace

SELECTOR = {"matchLabels": {"app": "web"}}
POD_SPEC = {"containers": [{"name": "c", "image": "nginx:1.27"}]}


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "cu")


@pytest.fixture
async def broadcaster(client: Client) -> AsyncIterator[EventBroadcaster]:
    b = EventBroadcaster(client)
    b.start()
    yield b
    await b.shutdown()


async def eventually(cond: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Await ``cond()`` (a coroutine function) until it returns something truthy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await cond()
        if got:
            return got
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def make_replica_set(client: Client, ns: str, name: str = "web") -> dict[str, Any]:
    return await client.create("replicasets.apps", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {"replicas": 0, "selector": SELECTOR,
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}}}, ns)


async def make_pod(client: Client, ns: str, name: str, labels: dict[str, str],
                   owner_refs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner_refs:
        meta["ownerReferences"] = owner_refs
    return await client.create("pods", {"metadata": meta, "spec": POD_SPEC}, ns)


async def events_for(client: Client, ns: str, name: str) -> list[tuple[str, str, str]]:
    items = (await client.list("events", ns))["items"]
    return sorted((e["type"], e["reason"], e["message"]) for e in items
                  if e["involvedObject"]["name"] == name)


async def test_create_and_delete_pods_with_events(client: Client, ns: str,
                                                  broadcaster: EventBroadcaster) -> None:
    rs = await make_replica_set(client, ns)
    pc = RealPodControl(client, broadcaster.new_recorder("replicaset-controller"))
    ref = new_controller_ref(rs, "apps/v1", "ReplicaSet")
    await pc.create_pods(ns, rs["spec"]["template"], rs, ref)
    pods = (await client.list("pods", ns))["items"]
    assert len(pods) == 1
    created = pods[0]
    name = created["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5
    assert created["metadata"]["ownerReferences"] == [ref]
    assert created["metadata"]["labels"] == {"app": "web"}

    await pc.delete_pod(ns, name, rs)
    with pytest.raises(NotFound):
        # Already gone: NotFound is raised, and no FailedDelete event is recorded.
        await pc.delete_pod(ns, name, rs)

    # A spec the server rejects: FailedCreate with the server's message, error re-raised.
    bad = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}
    with pytest.raises(Exception) as ei:
        await pc.create_pods(ns, bad, rs, ref)
    want = sorted([("Normal", "SuccessfulCreate", f"Created pod: {name}"),
                   ("Normal", "SuccessfulDelete", f"Deleted pod: {name}"),
                   ("Warning", "FailedCreate", f"Error creating: {ei.value}")])

    async def all_events() -> bool:
        return await events_for(client, ns, "web") == want
    await eventually(all_events)
    ev = next(e for e in (await client.list("events", ns))["items"]
              if e["reason"] == "SuccessfulCreate")
    assert ev["involvedObject"]["uid"] == rs["metadata"]["uid"]
    assert ev["involvedObject"]["kind"] == "ReplicaSet"
    assert ev["source"]["component"] == "replicaset-controller"


async def test_claim_pods_adopts_orphan_and_releases_non_matching(
        client: Client, ns: str, broadcaster: EventBroadcaster) -> None:
    rs = await make_replica_set(client, ns)
    ref = new_controller_ref(rs, "apps/v1", "ReplicaSet")
    orphan = await make_pod(client, ns, "orphan", {"app": "web"})
    stale = await make_pod(client, ns, "stale", {"app": "db"}, [ref])
    mine = await make_pod(client, ns, "mine", {"app": "web"}, [ref])
    other_ref = {**ref, "name": "other", "uid": str(uuid.uuid4())}
    theirs = await make_pod(client, ns, "theirs", {"app": "web"}, [other_ref])

    async def live_rs() -> dict[str, Any]:
        return await client.get("replicasets.apps", "web", ns)

    pc = RealPodControl(client, broadcaster.new_recorder("replicaset-controller"))
    m = PodControllerRefManager(pc, rs, selector_from_label_selector(SELECTOR), "apps/v1",
                                "ReplicaSet", recheck_deletion_timestamp(live_rs))
    claimed = await m.claim_pods([orphan, stale, mine, theirs])
    assert sorted(p["metadata"]["name"] for p in claimed) == ["mine", "orphan"]

    def controller_uid(p: dict[str, Any]) -> str | None:
        r = get_controller_of(p)
        return None if r is None else str(r["uid"])

    got = {p["metadata"]["name"]: p for p in (await client.list("pods", ns))["items"]}
    assert controller_uid(got["orphan"]) == rs["metadata"]["uid"]
    assert got["orphan"]["metadata"]["ownerReferences"] == [ref]
    assert got["stale"]["metadata"].get("ownerReferences") in (None, [])
    assert controller_uid(got["mine"]) == rs["metadata"]["uid"]
    assert controller_uid(got["theirs"]) == other_ref["uid"]

    # A second pass finds nothing to do: everything is already settled.
    fresh = list(got.values())
    m2 = PodControllerRefManager(pc, rs, selector_from_label_selector(SELECTOR), "apps/v1",
                                 "ReplicaSet", recheck_deletion_timestamp(live_rs))
    claimed = await m2.claim_pods(fresh)
    assert sorted(p["metadata"]["name"] for p in claimed) == ["mine", "orphan"]


async def test_adopt_refused_when_owner_is_being_deleted(client: Client, ns: str,
                                                         broadcaster: EventBroadcaster) -> None:
    rs = await make_replica_set(client, ns)
    # A finalizer keeps the ReplicaSet around with a deletionTimestamp.
    rs = await client.patch("replicasets.apps", "web",
                            {"metadata": {"finalizers": ["example.com/hold"]}}, "merge", ns)
    await client.delete("replicasets.apps", "web", ns)
    orphan = await make_pod(client, ns, "orphan", {"app": "web"})

    async def live_rs() -> dict[str, Any]:
        return await client.get("replicasets.apps", "web", ns)

    pc = RealPodControl(client, broadcaster.new_recorder("replicaset-controller"))
    # The cached copy (rs) does not show the deletion; the live re-check does.
    m = PodControllerRefManager(pc, rs, selector_from_label_selector(SELECTOR), "apps/v1",
                                "ReplicaSet", recheck_deletion_timestamp(live_rs))
    with pytest.raises(Exception, match=rf"can't adopt Pod {ns}/orphan .* has just been deleted"):
        await m.claim_pods([orphan])
    got = await client.get("pods", "orphan", ns)
    assert got["metadata"].get("ownerReferences") in (None, [])
    await client.patch("replicasets.apps", "web", {"metadata": {"finalizers": None}}, "merge", ns)


async def test_adopting_a_pod_with_another_controller_is_an_error(
        client: Client, ns: str, broadcaster: EventBroadcaster) -> None:
    rs = await make_replica_set(client, ns)
    ref = new_controller_ref(rs, "apps/v1", "ReplicaSet")
    pod = await make_pod(client, ns, "p", {"app": "web"}, [{**ref, "uid": str(uuid.uuid4()),
                                                           "name": "other"}])
    # The cached copy still shows it as an orphan; the server refuses a second controller.
    stale_view = {**pod, "metadata": {k: v for k, v in pod["metadata"].items()
                                      if k != "ownerReferences"}}

    async def ok() -> None:
        return None

    pc = RealPodControl(client, broadcaster.new_recorder("replicaset-controller"))
    m = PodControllerRefManager(pc, rs, selector_from_label_selector(SELECTOR), "apps/v1",
                                "ReplicaSet", ok)
    with pytest.raises(Exception, match="Only one reference can have Controller set to true"):
        await m.claim_pods([stale_view])


async def test_claim_pods_with_job_finalizers(client: Client, ns: str,
                                              broadcaster: EventBroadcaster) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": ns, "uid": str(uuid.uuid4())}}
    fin = "batch.kubernetes.io/job-tracking"
    orphan = await make_pod(client, ns, "orphan", {"app": "web"})

    async def ok() -> None:
        return None

    pc = RealPodControl(client, broadcaster.new_recorder("job-controller"))
    m = PodControllerRefManager(pc, job, selector_from_label_selector(SELECTOR), "batch/v1",
                                "Job", ok, finalizers=[fin])
    assert len(await m.claim_pods([orphan])) == 1
    adopted = await client.get("pods", "orphan", ns)
    assert adopted["metadata"]["finalizers"] == [fin]
    assert get_controller_of(adopted) is not None

    relabelled = await client.patch("pods", "orphan", {"metadata": {"labels": {"app": "db"}}},
                                    "merge", ns)
    m = PodControllerRefManager(pc, job, selector_from_label_selector(SELECTOR), "batch/v1",
                                "Job", ok, finalizers=[fin])
    assert await m.claim_pods([relabelled]) == []
    released = await client.get("pods", "orphan", ns)
    assert released["metadata"].get("finalizers") in (None, [])
    assert released["metadata"].get("ownerReferences") in (None, [])


async def test_claim_replica_sets(client: Client, ns: str) -> None:
    deploy = await client.create("deployments.apps", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 0, "selector": SELECTOR,
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}}}, ns)
    orphan = await make_replica_set(client, ns, "orphan")
    ref = new_controller_ref(deploy, "apps/v1", "Deployment")
    stale = await client.create("replicasets.apps", {
        "metadata": {"name": "stale", "labels": {"app": "db"}, "ownerReferences": [ref]},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": POD_SPEC}}}, ns)

    async def live() -> dict[str, Any]:
        return await client.get("deployments.apps", "d", ns)

    m = ReplicaSetControllerRefManager(RealRSControl(client), deploy,
                                       selector_from_label_selector(SELECTOR), "apps/v1",
                                       "Deployment", recheck_deletion_timestamp(live))
    # The orphan ReplicaSet carries no labels of its own; give it the selector's.
    orphan = await client.patch("replicasets.apps", "orphan",
                                {"metadata": {"labels": {"app": "web"}}}, "merge", ns)
    claimed = await m.claim_replica_sets([orphan, stale])
    assert [s["metadata"]["name"] for s in claimed] == ["orphan"]
    got = await client.get("replicasets.apps", "orphan", ns)
    assert got["metadata"]["ownerReferences"] == [ref]
    got = await client.get("replicasets.apps", "stale", ns)
    assert got["metadata"].get("ownerReferences") in (None, [])
