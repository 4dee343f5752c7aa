"""Deployment controller against either API server, with the ReplicaSet controller.

Each test gets a fresh namespace, a namespaced informer factory, the
Deployment and ReplicaSet controllers, and a stand-in kubelet: a pod handler
that marks every new pod Running and Ready through pods/status (pods whose
template carries ``test.pykcm.io/never-ready`` stay unready). Unscheduled
pods are deleted at once by the API server, so scale-downs are immediate.
The real kubectl checks what users look at: ``rollout status`` (success and
ProgressDeadlineExceeded) and ``rollout undo``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pykcm.api.pod_util import is_pod_ready
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client, load_kube_config
from pykcm.client.errors import ApiError
from pykcm.controller import EventBroadcaster
from pykcm.controllers.deployment import DeploymentController
from pykcm.controllers.deployment import util as du
from pykcm.controllers.deployment.hashing import compute_hash
from pykcm.controllers.replicaset import ReplicaSetController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace

NEVER_READY = "test.pykcm.io/never-ready"
DEPLOYMENTS = "deployments.apps"
REPLICASETS = "replicasets.apps"


@dataclass
class Env:
    client: Client
    ns: str
    factory: SharedInformerFactory
    # Samples of (live pods, ready live pods) taken on every pod event.
    samples: list[tuple[int, int]] = field(default_factory=list)
    # Samples of {template image: live pods} for Recreate.
    images: list[dict[str, int]] = field(default_factory=list)
    # Samples of the sum of the ReplicaSets' spec.replicas, on every ReplicaSet event.
    rs_totals: list[int] = field(default_factory=list)

    async def create(self, d: dict[str, Any]) -> dict[str, Any]:
        got: dict[str, Any] = await self.client.create(DEPLOYMENTS, d, self.ns)
        return got

    async def get(self, name: str = "web") -> dict[str, Any]:
        got: dict[str, Any] = await self.client.get(DEPLOYMENTS, name, self.ns)
        return got

    async def patch(self, body: dict[str, Any], name: str = "web") -> dict[str, Any]:
        got: dict[str, Any] = await self.client.patch(DEPLOYMENTS, name, body, "merge", self.ns)
        return got

    async def replica_sets(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await self.client.list(REPLICASETS, self.ns))["items"]
        return sorted(items, key=lambda r: int(
            (r["metadata"].get("annotations") or {}).get(du.REVISION_ANNOTATION, "0")))

    async def events(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await self.client.list("events", self.ns))["items"]
        return items

    async def wait_events(self, messages: list[str], reason: str = "ScalingReplicaSet") -> None:
        """Until a Deployment event of ``reason`` carries each of ``messages``.

        Recording is asynchronous, and past ten similar events the recorder
        combines them ("(combined from similar events): ..."): hence ``in``.
        """
        async def seen() -> bool:
            got = [e["message"] for e in await self.events()
                   if e["reason"] == reason and e["involvedObject"]["kind"] == "Deployment"]
            return all(any(m in g for g in got) for m in messages)
        await eventually(seen)

    async def wait_complete(self, name: str = "web", timeout: float = 60) -> dict[str, Any]:
        """Until the rollout is complete (kubectl rollout status's test) and NewReplicaSetAvailable."""
        async def done() -> bool:
            d = await self.get(name)
            st = d.get("status") or {}
            reps = d["spec"]["replicas"]
            cond = du.get_deployment_condition(st, du.PROGRESSING)
            return (st.get("observedGeneration", 0) >= d["metadata"]["generation"]
                    and st.get("updatedReplicas", 0) == reps and st.get("replicas", 0) == reps
                    and st.get("availableReplicas", 0) == reps
                    and cond is not None and cond["reason"] == du.NEW_RS_AVAILABLE_REASON)
        await eventually(done, timeout)
        return await self.get(name)


async def eventually(cond: Callable[[], Any], timeout: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        r = cond()
        if asyncio.iscoroutine(r):
            r = await r
        if r:
            return
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def deployment(name: str = "web", replicas: int = 3, image: str = "nginx:1",
               strategy: dict[str, Any] | None = None, never_ready: bool = False,
               **spec: Any) -> dict[str, Any]:
    ann = {NEVER_READY: "true"} if never_ready else {}
    s: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}, "annotations": ann},
                     "spec": {"containers": [{"name": "c", "image": image}]}},
    }
    if strategy is not None:
        s["strategy"] = strategy
    s.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": s}


async def kubectl(st: Backend, ns: str, *args: str) -> tuple[int, str]:
    """Run the real kubectl against the test server: (exit code, stdout + stderr)."""
    exe = shutil.which("kubectl") or os.path.join(os.path.dirname(sys.executable), "kubectl")
    proc = await asyncio.create_subprocess_exec(
        exe, "--kubeconfig", st.kubeconfig_path, "-n", ns, *args,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def rolling(surge: int | str, unavailable: int | str) -> dict[str, Any]:
    return {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def env(client: Client, apiserver: Backend) -> AsyncIterator[Env]:
    ns = await create_namespace(client, apiserver, "dep")
    factory = SharedInformerFactory(client, namespace=ns)
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    pods = factory.core_v1.pods
    e = Env(client, ns, factory)
    dc = DeploymentController(
        deployment_informer=factory.apps_v1.deployments, rs_informer=factory.apps_v1.replicasets,
        pod_informer=pods, client=client,
        recorder=broadcaster.new_recorder("deployment-controller"))
    rsc = ReplicaSetController(pod_informer=pods, rs_informer=factory.apps_v1.replicasets,
                               client=client,
                               recorder=broadcaster.new_recorder("replicaset-controller"))

    async def kubelet(pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if (meta.get("annotations") or {}).get(NEVER_READY) or meta.get("deletionTimestamp"):
            return
        now = du.now_rfc3339()
        try:
            await client.patch("pods", meta["name"], {"status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
            }}, "merge", ns, subresource="status")
        except ApiError:
            pass  # deleted meanwhile

    def sample(*_: Any) -> None:
        live = [p for p in pods.lister.list() if not p["metadata"].get("deletionTimestamp")]
        e.samples.append((len(live), sum(1 for p in live if is_pod_ready(p))))
        by_image: dict[str, int] = {}
        for p in live:
            img = p["spec"]["containers"][0]["image"]
            by_image[img] = by_image.get(img, 0) + 1
        e.images.append(by_image)

    pods.informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=kubelet, update_func=sample, delete_func=sample))
    pods.informer.add_event_handler(ResourceEventHandlerFuncs(add_func=sample))
    rs_inf = factory.apps_v1.replicasets

    def rs_sample(*_: Any) -> None:
        e.rs_totals.append(sum(r["spec"].get("replicas", 1) for r in rs_inf.lister.list()))
    rs_inf.informer.add_event_handler(ResourceEventHandlerFuncs(rs_sample, rs_sample, rs_sample))
    factory.start()
    tasks = [asyncio.create_task(dc.run(2)), asyncio.create_task(rsc.run(2))]
    try:
        yield e
    finally:
        dc.shutdown()
        rsc.shutdown()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert dc.health_check() is None
        await broadcaster.shutdown()
        await factory.shutdown()
        await client.delete("namespaces", ns)


def _progressing(d: dict[str, Any]) -> tuple[str, str, str]:
    c = du.get_deployment_condition(d.get("status"), du.PROGRESSING)
    assert c is not None
    return c["status"], c["reason"], c["message"]


async def test_deployment_creates_its_replica_set(env: Env,
                                                  apiserver: Backend) -> None:
    d = deployment(replicas=3)
    d["metadata"]["annotations"] = {"team": "web", du.LAST_APPLIED_CONFIG_ANNOTATION: "{}"}
    created = await env.create(d)
    code, out = await kubectl(apiserver, env.ns, "rollout", "status", "deployment/web",
                              "--timeout=60s")
    assert code == 0 and 'deployment "web" successfully rolled out' in out, out
    done = await env.wait_complete()

    (rs,) = await env.replica_sets()
    h = compute_hash(created["spec"]["template"], None)
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": h}
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": h}}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", "pod-template-hash": h}
    assert rs["spec"]["replicas"] == 3
    assert rs["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
        "uid": created["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    # Deployment annotations are copied, except kubectl's last-applied; 25% of 3 surges 1.
    assert rs["metadata"]["annotations"] == {
        "team": "web", du.REVISION_ANNOTATION: "1", du.DESIRED_REPLICAS_ANNOTATION: "3",
        du.MAX_REPLICAS_ANNOTATION: "4"}

    assert done["metadata"]["annotations"][du.REVISION_ANNOTATION] == "1"
    st = done["status"]
    assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"],
            st["availableReplicas"]) == (3, 3, 3, 3)
    assert "unavailableReplicas" not in st
    assert st["observedGeneration"] == done["metadata"]["generation"]
    assert _progressing(done) == ("True", du.NEW_RS_AVAILABLE_REASON,
                                  f'ReplicaSet "web-{h}" has successfully progressed.')
    avail = du.get_deployment_condition(st, du.AVAILABLE)
    assert avail is not None and (avail["status"], avail["reason"]) == (
        "True", du.MINIMUM_REPLICAS_AVAILABLE)
    await env.wait_events([f"Scaled up replica set web-{h} from 0 to 3"])


async def test_rolling_update_stays_within_surge_and_unavailable(env: Env) -> None:
    await env.create(deployment(replicas=4, strategy=rolling(1, 1)))
    await env.wait_complete()
    env.samples.clear()
    env.rs_totals.clear()
    await env.patch({"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}}})
    done = await env.wait_complete()

    # The controller's own bound (ReplicaSet sizes), then what the pods saw.
    assert env.rs_totals and max(env.rs_totals) <= 4 + 1
    assert env.samples
    assert max(n for n, _ in env.samples) <= 4 + 1
    assert min(r for _, r in env.samples) >= 4 - 1
    old, new = await env.replica_sets()
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 4)
    assert new["metadata"]["annotations"][du.REVISION_ANNOTATION] == "2"
    assert done["metadata"]["annotations"][du.REVISION_ANNOTATION] == "2"
    # maxUnavailable 1: the first step takes the old one from 4 to 3; maxSurge 1: the
    # new one is created with 1.
    await env.wait_events([f"Scaled down replica set {old['metadata']['name']} from 4 to 3",
                           f"Scaled up replica set {new['metadata']['name']} from 0 to 1"])


async def test_recreate_removes_old_pods_before_new_ones(env: Env) -> None:
    await env.create(deployment(replicas=3, strategy={"type": "Recreate"}))
    await env.wait_complete()
    env.images.clear()
    await env.patch({"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}}})
    await env.wait_complete()

    # Never old and new pods at once.
    assert env.images
    assert all(len(s) <= 1 for s in env.images)
    assert {"nginx:2": 3} in env.images
    old, new = await env.replica_sets()
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 3)


async def test_pause_and_resume(env: Env) -> None:
    await env.create(deployment(replicas=2))
    await env.wait_complete()
    await env.patch({"spec": {"paused": True}})

    async def paused() -> bool:
        return _progressing(await env.get())[:2] == ("Unknown", du.PAUSED_DEPLOY_REASON)
    await eventually(paused)
    # A template change while paused starts no rollout; scaling still applies.
    await env.patch({"spec": {"replicas": 3, "template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}}})

    async def scaled() -> bool:
        d = await env.get()
        rss = await env.replica_sets()
        return (d["status"].get("observedGeneration") == d["metadata"]["generation"]
                and len(rss) == 1 and rss[0]["spec"]["replicas"] == 3)
    await eventually(scaled)
    assert _progressing(await env.get())[:2] == ("Unknown", du.PAUSED_DEPLOY_REASON)

    await env.patch({"spec": {"paused": False}})
    done = await env.wait_complete()
    old, new = await env.replica_sets()
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 3)
    assert _progressing(done)[:2] == ("True", du.NEW_RS_AVAILABLE_REASON)


async def test_scaling_mid_rollout_is_proportional(env: Env) -> None:
    await env.create(deployment(replicas=10, strategy=rolling(3, 2)))
    await env.wait_complete()
    # The new pods never become ready: the rollout stops at old 8 / new 5.
    await env.patch({"spec": {"template": {"metadata": {"annotations": {NEVER_READY: "1"}}}}})

    async def sizes(want: tuple[int, int]) -> bool:
        rss = await env.replica_sets()
        return len(rss) == 2 and (rss[0]["spec"]["replicas"], rss[1]["spec"]["replicas"]) == want
    await eventually(lambda: sizes((8, 5)))

    # Allowed 20 + 3 = 23 from 13: old 8 * 23 / 13 → 14, new 5 * 23 / 13 → 9.
    await env.patch({"spec": {"replicas": 20}})
    await eventually(lambda: sizes((14, 9)))
    old, new = await env.replica_sets()
    for r in (old, new):
        assert r["metadata"]["annotations"][du.DESIRED_REPLICAS_ANNOTATION] == "20"
        assert r["metadata"]["annotations"][du.MAX_REPLICAS_ANNOTATION] == "23"

    # And back down, proportionally too: 23 → 8 allowed (5 + 3): old 14 → 5, new 9 → 3.
    # Then the rollout goes on (old 5 available, 3 needed): old 3, new 5, stuck again.
    await env.patch({"spec": {"replicas": 5}})
    await eventually(lambda: sizes((3, 5)))
    await env.wait_events([
        f"Scaled up replica set {old['metadata']['name']} from 8 to 14",
        f"Scaled up replica set {new['metadata']['name']} from 5 to 9",
        f"Scaled down replica set {old['metadata']['name']} from 14 to 5",
        f"Scaled down replica set {new['metadata']['name']} from 9 to 3"])


async def test_revision_history_limit_cleans_up(env: Env) -> None:
    await env.create(deployment(replicas=1, revisionHistoryLimit=1))
    await env.wait_complete()
    for image in ("nginx:2", "nginx:3", "nginx:4"):
        await env.patch({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": image}]}}}})
        await env.wait_complete()

    async def pruned() -> bool:
        return len(await env.replica_sets()) == 2
    await eventually(pruned)
    old, new = await env.replica_sets()
    assert old["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:3"
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:4"
    assert new["metadata"]["annotations"][du.REVISION_ANNOTATION] == "4"


async def test_progress_deadline_exceeded(env: Env, apiserver: Backend) -> None:
    await env.create(deployment(replicas=2, never_ready=True, progressDeadlineSeconds=2))
    code, out = await kubectl(apiserver, env.ns, "rollout", "status", "deployment/web",
                              "--timeout=60s")
    assert code != 0 and 'deployment "web" exceeded its progress deadline' in out, out

    async def timed_out() -> bool:
        d = await env.get()
        c = du.get_deployment_condition(d.get("status"), du.PROGRESSING)
        return c is not None and c["reason"] == du.TIMED_OUT_REASON
    await eventually(timed_out, 30)
    d = await env.get()
    (rs,) = await env.replica_sets()
    assert _progressing(d) == ("False", du.TIMED_OUT_REASON,
                               f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.')
    avail = du.get_deployment_condition(d["status"], du.AVAILABLE)
    assert avail is not None and (avail["status"], avail["reason"]) == (
        "False", du.MINIMUM_REPLICAS_UNAVAILABLE)
    assert d["status"]["unavailableReplicas"] == 2


async def test_rollout_undo_returns_to_the_previous_replica_set(
        env: Env, apiserver: Backend) -> None:
    await env.create(deployment(replicas=2))
    await env.wait_complete()
    await env.patch({"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}}})
    await env.wait_complete()
    first, second = await env.replica_sets()

    code, out = await kubectl(apiserver, env.ns, "rollout", "undo", "deployment/web")
    assert code == 0, out
    done = await env.wait_complete()

    rss = await env.replica_sets()
    assert len(rss) == 2
    assert rss[-1]["metadata"]["uid"] == first["metadata"]["uid"]       # reused, not new
    ann = rss[-1]["metadata"]["annotations"]
    assert (ann[du.REVISION_ANNOTATION], ann[du.REVISION_HISTORY_ANNOTATION]) == ("3", "1")
    assert rss[-1]["spec"]["replicas"] == 2
    assert done["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
    assert done["metadata"]["annotations"][du.REVISION_ANNOTATION] == "3"
    assert second["metadata"]["uid"] == rss[0]["metadata"]["uid"]


async def test_hash_collision_bumps_collision_count(env: Env) -> None:
    # Created paused: no ReplicaSet yet, and the server's defaulted template to hash.
    created = await env.create(deployment(replicas=1, paused=True))
    name = f"web-{compute_hash(created['spec']['template'], None)}"
    # A foreign ReplicaSet (another template, labels the Deployment does not select) takes it.
    await env.client.create(REPLICASETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"other": "x"}},
                 "template": {"metadata": {"labels": {"other": "x"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }, env.ns)
    await env.patch({"spec": {"paused": False}})
    done = await env.wait_complete()

    assert done["status"]["collisionCount"] == 1
    names = {r["metadata"]["name"] for r in await env.replica_sets()}
    assert names == {name, f"web-{compute_hash(created['spec']['template'], 1)}"}


async def test_adopts_an_orphan_and_releases_it(env: Env) -> None:
    d = deployment(replicas=1)
    orphan_template = {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
                       "spec": d["spec"]["template"]["spec"]}
    orphan = await env.client.create(REPLICASETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "orphan", "labels": {"app": "web", "pod-template-hash": "abc"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web",
                                                             "pod-template-hash": "abc"}},
                 "template": orphan_template},
    }, env.ns)
    created = await env.create(d)
    await env.wait_complete()
    # Its template equals the Deployment's (the hash aside): adopted and used as the new one.
    (rs,) = await env.replica_sets()
    assert rs["metadata"]["uid"] == orphan["metadata"]["uid"]
    assert [r["uid"] for r in rs["metadata"]["ownerReferences"]] == [created["metadata"]["uid"]]
    assert rs["metadata"]["annotations"][du.REVISION_ANNOTATION] == "1"

    # Labels no longer selected: released.
    await env.client.patch(REPLICASETS, "orphan", {"metadata": {"labels": {"app": "gone"}}},
                           "merge", env.ns)

    async def released() -> bool:
        got = await env.client.get(REPLICASETS, "orphan", env.ns)
        return not got["metadata"].get("ownerReferences")
    await eventually(released)


async def test_deployment_being_deleted_only_syncs_status(env: Env) -> None:
    d = deployment(replicas=1)
    d["metadata"]["finalizers"] = ["test.pykcm.io/hold"]
    await env.create(d)
    await env.wait_complete()
    await env.client.delete(DEPLOYMENTS, "web", env.ns)
    got = await env.patch({"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}}})
    assert got["metadata"].get("deletionTimestamp")

    async def observed() -> bool:
        cur = await env.get()
        return bool(cur["status"].get("observedGeneration") == cur["metadata"]["generation"])
    await eventually(observed)
    assert len(await env.replica_sets()) == 1                 # no rollout
    await env.patch({"metadata": {"finalizers": None}})
