"""StatefulSetController against either API server, each test in a fresh namespace.

There is no kubelet: the tests write the pods' status (Running and Ready) themselves,
which is what lets an OrderedReady set go on. Unbound pods are deleted at once by either
server. PersistentVolumeClaims are served by the real kube-apiserver only (pykcm's serves
them later): the claim tests run there; without a provisioner the claims stay Pending,
which does not hold the controller up (it waits for pods, not claims).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, NoResourceMatchError, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.statefulset import PERSISTENT_VOLUME_CLAIMS, StatefulSetController
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
    return await create_namespace(client, apiserver, "sts")


async def serves_claims(client: Client) -> bool:
    try:
        await client.resolve("persistentvolumeclaims")
    except NoResourceMatchError:
        return False
    return True


@pytest.fixture
async def controller(client: Client, ns: str) -> AsyncIterator[StatefulSetController]:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    pvc = factory.informer_for(PERSISTENT_VOLUME_CLAIMS) if await serves_claims(client) \
        else None
    ctl = StatefulSetController(
        pod_informer=factory.core_v1.pods, set_informer=factory.apps_v1.statefulsets,
        pvc_informer=pvc, revision_informer=factory.apps_v1.controllerrevisions,
        client=client, recorder=broadcaster.new_recorder("statefulset-controller"))
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    yield ctl
    ctl.shutdown()
    await task
    await factory.shutdown()
    await broadcaster.shutdown()
    assert ctl.health_check() is None


def stateful_set(name: str, replicas: int, *, image: str = "nginx:1.27",
                 **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}],
                                           "terminationGracePeriodSeconds": 0}},
                     **spec}}


async def pod_names(client: Client, ns: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in (await client.list("pods", ns))["items"]
                  if not p["metadata"].get("deletionTimestamp"))


async def wait_names(client: Client, ns: str, names: list[str]) -> None:
    async def check() -> bool:
        return await pod_names(client, ns) == sorted(names)
    await eventually(check, what=f"pods {names}")


async def ready(client: Client, ns: str, *names: str) -> None:
    for n in names:
        await set_ready(client, ns, n, True)


async def sts_status(client: Client, ns: str, name: str) -> dict[str, Any]:
    st: dict[str, Any] = (await client.get("statefulsets", name, ns)).get("status") or {}
    return st


async def events(client: Client, ns: str) -> list[tuple[str, str]]:
    evs = sorted((await client.list("events", ns))["items"],
                 key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(e["reason"], e["message"]) for e in evs]


async def test_ordered_ready_creation_identity_and_scale_down(
        client: Client, ns: str, controller: StatefulSetController) -> None:
    await client.create("statefulsets", stateful_set("web", 3), ns)
    await wait_names(client, ns, ["web-0"])
    pod = await client.get("pods", "web-0", ns)
    await asyncio.sleep(0.3)
    assert await pod_names(client, ns) == ["web-0"]  # web-1 waits for web-0 to be ready
    assert pod["metadata"]["generateName"] == "web-"
    assert pod["spec"]["hostname"] == "web-0" and pod["spec"]["subdomain"] == "web"
    revisions = (await client.list("controllerrevisions", ns))["items"]
    assert len(revisions) == 1 and revisions[0]["revision"] == 1
    rev = revisions[0]["metadata"]["name"]
    assert rev == "web-" + revisions[0]["metadata"]["labels"]["controller.kubernetes.io/hash"]
    assert pod["metadata"]["labels"] == {
        "app": "web", "controller-revision-hash": rev,
        "statefulset.kubernetes.io/pod-name": "web-0", "apps.kubernetes.io/pod-index": "0"}
    for i in range(3):
        await ready(client, ns, f"web-{i}")
        await wait_names(client, ns, [f"web-{j}" for j in range(min(i + 2, 3))])
    await ready(client, ns, "web-2")

    async def settled() -> dict[str, Any] | None:
        st = await sts_status(client, ns, "web")
        return st if st.get("availableReplicas") == 3 else None
    st = await eventually(settled, what="3 available")
    assert st == {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3,
                  "currentReplicas": 3, "updatedReplicas": 3, "currentRevision": rev,
                  "updateRevision": rev, "collisionCount": 0, "availableReplicas": 3}
    await client.patch("statefulsets", "web", {"spec": {"replicas": 1}}, "merge", ns)
    await wait_names(client, ns, ["web-0"])

    async def all_events() -> list[str] | None:
        msgs = [m for _, m in await events(client, ns)]
        return msgs if len(msgs) >= 5 else None
    msgs = await eventually(all_events, what="5 events")
    assert msgs == ["Create Pod web-0 in StatefulSet web successful",
                    "Create Pod web-1 in StatefulSet web successful",
                    "Create Pod web-2 in StatefulSet web successful",
                    "Delete Pod web-2 in StatefulSet web successful",
                    "Delete Pod web-1 in StatefulSet web successful"]


async def test_rolling_update_in_reverse_ordinal_order_respects_the_partition(
        client: Client, ns: str, controller: StatefulSetController) -> None:
    await client.create("statefulsets", stateful_set("web", 3, podManagementPolicy="Parallel",
                                                     updateStrategy={
                                                         "type": "RollingUpdate",
                                                         "rollingUpdate": {"partition": 1}}),
                        ns)
    await wait_names(client, ns, ["web-0", "web-1", "web-2"])  # Parallel: all at once
    await ready(client, ns, "web-0", "web-1", "web-2")
    await client.patch("statefulsets", "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:1.28"}]}}}}, "strategic", ns)
    order: list[str] = []
    for _ in range(2):
        async def replaced() -> str | None:
            for p in (await client.list("pods", ns))["items"]:
                n = p["metadata"]["name"]
                if p["spec"]["containers"][0]["image"] == "nginx:1.28" and n not in order:
                    return str(n)
            return None
        n = await eventually(replaced, what="a replaced pod")
        order.append(n)
        await ready(client, ns, n)
    assert order == ["web-2", "web-1"]

    async def done() -> dict[str, Any] | None:
        st = await sts_status(client, ns, "web")
        return st if st.get("updatedReplicas") == 2 and st.get("readyReplicas") == 3 else None
    st = await eventually(done, what="2 updated")
    assert st["currentRevision"] != st["updateRevision"]  # web-0 stays behind the partition
    assert (await client.get("pods", "web-0", ns))["spec"]["containers"][0]["image"] == \
        "nginx:1.27"
    await client.patch("statefulsets", "web", {"spec": {"updateStrategy": {
        "rollingUpdate": {"partition": 0}}}}, "strategic", ns)

    async def web0_new() -> bool:
        pods = (await client.list("pods", ns))["items"]
        return any(p["metadata"]["name"] == "web-0"
                   and p["spec"]["containers"][0]["image"] == "nginx:1.28" for p in pods)
    await eventually(web0_new, what="web-0 updated")
    await ready(client, ns, "web-0")

    async def complete() -> dict[str, Any] | None:
        st = await sts_status(client, ns, "web")
        return st if st.get("currentRevision") == st.get("updateRevision") and \
            st.get("currentReplicas") == 3 else None
    await eventually(complete, what="the update complete")


async def test_on_delete_and_start_ordinal(client: Client, ns: str,
                                           controller: StatefulSetController) -> None:
    await client.create("statefulsets", stateful_set(
        "db", 2, ordinals={"start": 5}, updateStrategy={"type": "OnDelete"}), ns)
    await wait_names(client, ns, ["db-5"])
    await ready(client, ns, "db-5")
    await wait_names(client, ns, ["db-5", "db-6"])
    await ready(client, ns, "db-6")
    await client.patch("statefulsets", "db", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:1.28"}]}}}}, "strategic", ns)

    async def observed() -> dict[str, Any] | None:
        st = await sts_status(client, ns, "db")
        return st if st.get("observedGeneration") == 2 else None
    st = await eventually(observed, what="generation 2")
    assert st.get("updatedReplicas", 0) == 0 and st["currentReplicas"] == 2
    await client.delete("pods", "db-6", ns)

    async def recreated() -> bool:
        try:
            p = await client.get("pods", "db-6", ns)
        except Exception:  # noqa: BLE001 - not there yet
            return False
        return bool(p["spec"]["containers"][0]["image"] == "nginx:1.28")
    await eventually(recreated, what="db-6 from the new template")
    assert (await client.get("pods", "db-5", ns))["metadata"]["labels"][
        "apps.kubernetes.io/pod-index"] == "5"


async def test_volume_claim_templates_and_retention(client: Client, ns: str, apiserver: Backend,
                                                    controller: StatefulSetController) -> None:
    if not await serves_claims(client):
        # pykcm's server does not serve PersistentVolumeClaims yet: the claim is reported
        await client.create("statefulsets", stateful_set("web", 1, volumeClaimTemplates=[
            {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {
                                                        "storage": "1Gi"}}}}]), ns)

        async def failed() -> bool:
            return any(r == "FailedCreate" and "Claim data-web-0" in m
                       for r, m in await events(client, ns))
        await eventually(failed, what="a FailedCreate event for the claim")
        assert await pod_names(client, ns) == []
        return
    await client.create("statefulsets", stateful_set(
        "web", 2, podManagementPolicy="Parallel",
        persistentVolumeClaimRetentionPolicy={"whenScaled": "Delete", "whenDeleted": "Retain"},
        volumeClaimTemplates=[{"metadata": {"name": "data", "labels": {"tier": "db"}},
                               "spec": {"accessModes": ["ReadWriteOnce"],
                                        "resources": {"requests": {"storage": "1Gi"}}}}]), ns)
    await wait_names(client, ns, ["web-0", "web-1"])
    claims = {c["metadata"]["name"]: c
              for c in (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]}
    assert sorted(claims) == ["data-web-0", "data-web-1"]
    assert claims["data-web-0"]["metadata"]["labels"] == {"tier": "db", "app": "web"}
    assert claims["data-web-0"]["status"].get("phase") == "Pending"  # no provisioner
    assert not claims["data-web-0"]["metadata"].get("ownerReferences")
    pod = await client.get("pods", "web-1", ns)
    assert pod["spec"]["volumes"][0] == {"name": "data", "persistentVolumeClaim": {
        "claimName": "data-web-1"}}
    await ready(client, ns, "web-0", "web-1")
    await client.patch("statefulsets", "web", {"spec": {"replicas": 1}}, "merge", ns)
    # whenScaled Delete: the scaled-down pod's claim gets the pod as its owner
    await wait_names(client, ns, ["web-0"])

    async def owned() -> bool:
        c = await client.get(PERSISTENT_VOLUME_CLAIMS, "data-web-1", ns)
        refs = c["metadata"].get("ownerReferences") or []
        return [(r["kind"], r["name"]) for r in refs] == [("Pod", "web-1")]
    await eventually(owned, what="data-web-1 owned by its pod")
    msgs = [m for _, m in await events(client, ns)]
    assert "Create Claim data-web-0 Pod web-0 in StatefulSet web success" in msgs
