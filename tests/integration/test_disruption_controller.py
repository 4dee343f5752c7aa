"""The disruption controller against an API server: PodDisruptionBudget statuses as pods come
and go, expected counts from controllers' scales, disruptedPods expiry, the fail-safe
status, and the stale DisruptionTarget cleanup.

Every test runs on both API servers (the real one leaves the disruption controller to the
tests: pykcm.testing.upstream.WORKLOAD_CONTROLLERS). No workload controller runs: pods,
ReplicaSets and Deployments are written by hand, their readiness too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.disruption import DisruptionController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace, ensure_default_service_account, wait_served
from tests.integration.test_replicaset_controller import set_ready
from tests.polling import eventually

PDBS = "policy/v1/poddisruptionbudgets"


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    ns = await create_namespace(client, apiserver, "pdb")
    await ensure_default_service_account(client, ns)
    return ns


@contextlib.asynccontextmanager
async def running(client: Client, ns: str, **kw: Any) -> AsyncIterator[EventBroadcaster]:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = DisruptionController(
        client=client, pod_informer=factory.core_v1.pods,
        pdb_informer=factory.for_resource("policy", "v1", "poddisruptionbudgets"),
        rc_informer=factory.core_v1.replicationcontrollers,
        rs_informer=factory.apps_v1.replicasets,
        deployment_informer=factory.apps_v1.deployments,
        statefulset_informer=factory.apps_v1.statefulsets,
        recorder=broadcaster.new_recorder("controllermanager"), **kw)
    factory.start()
    task = asyncio.create_task(ctl.run())
    try:
        yield broadcaster
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        await broadcaster.shutdown()
        assert ctl.health_check() is None


def pod(name: str, owner: dict[str, Any] | None = None, app: str = "web") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app": app}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"], "controller": True}]
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def pdb(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name}, "spec": spec}


def counts(p: dict[str, Any]) -> tuple[int, int, int, int] | None:
    st = p.get("status") or {}
    if "expectedPods" not in st:
        return None
    return (st["expectedPods"], st["desiredHealthy"], st["currentHealthy"],
            st["disruptionsAllowed"])


def condition(p: dict[str, Any]) -> tuple[str, str, str] | None:
    for c in (p.get("status") or {}).get("conditions") or ():
        if c["type"] == "DisruptionAllowed":
            return c["status"], c["reason"], c["message"]
    return None


async def wait_status(client: Client, ns: str, name: str, want: tuple[int, int, int, int],
                      what: str) -> dict[str, Any]:
    async def ok() -> dict[str, Any] | None:
        p = await client.get(PDBS, name, ns)
        return p if counts(p) == want else None
    found: dict[str, Any] = await eventually(ok, what=what)
    return found


async def events(client: Client, ns: str) -> set[tuple[str, str, str, str]]:
    return {(e["involvedObject"]["kind"], e["type"], e["reason"], e["message"])
            for e in (await client.list("events", ns))["items"]}


async def test_min_available_status_follows_ready_pods(client: Client, ns: str) -> None:
    async with running(client, ns):
        await client.create(PDBS, pdb("budget", minAvailable=2), ns)
        p = await wait_status(client, ns, "budget", (0, 2, 0, 0), "no pods yet")
        assert condition(p) == ("False", "InsufficientPods", "")
        assert p["status"]["observedGeneration"] == 1
        for i in range(3):
            await client.create("pods", pod(f"web-{i}"), ns)
            await set_ready(client, ns, f"web-{i}", True)
        p = await wait_status(client, ns, "budget", (3, 2, 3, 1), "3 healthy, 1 allowed")
        assert condition(p) == ("True", "SufficientPods", "")
        await set_ready(client, ns, "web-0", False)
        p = await wait_status(client, ns, "budget", (3, 2, 2, 0), "web-0 unready")
        assert condition(p) == ("False", "InsufficientPods", "")
        # a pod being deleted is not healthy (a finalizer keeps it around)
        await set_ready(client, ns, "web-0", True)
        await wait_status(client, ns, "budget", (3, 2, 3, 1), "web-0 ready again")
        await client.patch("pods", "web-1", {"metadata": {"finalizers": ["test.pykcm.io/x"]}},
                           "merge", ns)
        await client.delete("pods", "web-1", ns)
        await wait_status(client, ns, "budget", (3, 2, 2, 0), "web-1 terminating")
        await client.patch("pods", "web-1", {"metadata": {"finalizers": None}}, "merge", ns)
        await wait_status(client, ns, "budget", (2, 2, 2, 0), "web-1 gone")
        # a spec change bumps the generation; the status observes it
        await client.patch(PDBS, "budget", {"spec": {"minAvailable": 1}}, "merge", ns)
        p = await wait_status(client, ns, "budget", (2, 1, 2, 1), "minAvailable 1")
        assert p["metadata"]["generation"] == 2 and p["status"]["observedGeneration"] == 2
    assert ("PodDisruptionBudget", "Normal", "NoPods", "No matching pods found") in \
        await events(client, ns)


async def test_percentages_and_max_unavailable_use_the_controllers_scale(
        client: Client, ns: str) -> None:
    d = await client.create("deployments", {
        "metadata": {"name": "d"}, "spec": {
            "replicas": 5, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}, ns)
    rs = await client.create("replicasets", {
        "metadata": {"name": "d-1", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
             "uid": d["metadata"]["uid"], "controller": True}]},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}, ns)
    rs.setdefault("apiVersion", "apps/v1")
    rs.setdefault("kind", "ReplicaSet")
    for i in range(3):
        await client.create("pods", pod(f"web-{i}", rs), ns)
        await set_ready(client, ns, f"web-{i}", True)
    async with running(client, ns):
        # the Deployment's 5 count, not the ReplicaSet's 3; 30% of 5 rounds up to 2
        await client.create(PDBS, pdb("max", maxUnavailable="30%"), ns)
        await wait_status(client, ns, "max", (5, 3, 3, 0), "maxUnavailable 30% of 5")
        await client.create(PDBS, pdb("min", minAvailable="30%"), ns)
        await wait_status(client, ns, "min", (5, 2, 3, 1), "minAvailable 30% of 5")
        # a pod's events wake only the first budget selecting it: one budget from now on
        await client.delete(PDBS, "min", ns)
        await client.patch("deployments", "d", {"spec": {"replicas": 3}}, "merge", ns)
        # a Deployment's scale change alone does not wake the controller (as upstream):
        # a pod change does
        await set_ready(client, ns, "web-2", False)
        await wait_status(client, ns, "max", (3, 2, 2, 0), "maxUnavailable 30% of 3")
        # an unmanaged pod is skipped, with a warning
        await client.create("pods", pod("stray"), ns)
        await set_ready(client, ns, "stray", True)
        await wait_status(client, ns, "max", (3, 2, 3, 1), "the stray pod counted healthy")

    async def warned() -> bool:
        return any(e[2] == "UnmanagedPods" for e in await events(client, ns))
    await eventually(warned, what="UnmanagedPods event")
    messages = {e[3] for e in await events(client, ns) if e[2] == "UnmanagedPods"}
    assert messages == {(
        "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:"
        "map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) were "
        "found to be unmanaged. As a result, the status of the PDB cannot be calculated "
        "correctly, which may result in undefined behavior. To account for these pods please "
        "set \".spec.minAvailable\" field of the PDB to an integer value.")}


async def test_a_pod_without_a_known_controller_fails_safe(client: Client, ns: str) -> None:
    ghost = {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000001"}}
    await client.create("pods", pod("orphan", ghost), ns)
    await set_ready(client, ns, "orphan", True)
    async with running(client, ns):
        await client.create(PDBS, pdb("budget", maxUnavailable=1), ns)

        async def failed() -> dict[str, Any] | None:
            p = await client.get(PDBS, "budget", ns)
            c = condition(p)
            return p if c and c[1] == "SyncFailed" else None
        p = await eventually(failed, what="SyncFailed")
    assert condition(p) == ("False", "SyncFailed", 'found no controllers for pod "orphan"')
    assert p["status"]["disruptionsAllowed"] == 0
    message = 'Failed to calculate the number of expected pods: found no controllers for pod "orphan"'
    assert ("PodDisruptionBudget", "Warning", "CalculateExpectedPodCountFailed", message) in \
        await events(client, ns)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


async def test_disrupted_pods_are_not_healthy_until_they_expire(
        client: Client, ns: str) -> None:
    for i in range(3):
        await client.create("pods", pod(f"web-{i}"), ns)
        await set_ready(client, ns, f"web-{i}", True)
    async with running(client, ns, deletion_timeout=3.0):
        await client.create(PDBS, pdb("budget", minAvailable=1), ns)
        p = await wait_status(client, ns, "budget", (3, 1, 3, 2), "3 healthy")
        # as the eviction handler records an approved eviction
        p["status"]["disruptedPods"] = {"web-0": _stamp(time.time()),
                                        "web-1": _stamp(time.time() - 600)}
        p["status"]["disruptionsAllowed"] = 1
        await client.update_status(PDBS, p, ns)
        # web-1's entry is long expired: dropped, with a warning; web-0 waits for its
        # deletion, then for the (shortened) timeout
        p = await wait_status(client, ns, "budget", (3, 1, 2, 1), "web-0 disrupted")
        assert list(p["status"]["disruptedPods"]) == ["web-0"]
        p = await wait_status(client, ns, "budget", (3, 1, 3, 2), "web-0's entry expired")
        assert "disruptedPods" not in p["status"]
    got = await events(client, ns)
    assert ("Pod", "Warning", "NotDeleted",
            f"Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't") in got


async def test_a_stale_disruption_target_condition_is_reset(client: Client, ns: str) -> None:
    await client.create("pods", pod("evictee"), ns)
    now = time.time()
    await client.patch("pods", "evictee", {"status": {"phase": "Running", "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
         "message": "Eviction API: evicting", "lastTransitionTime": _stamp(now)}]}},
        "merge", ns, subresource="status")
    async with running(client, ns, stale_pod_disruption_timeout=2.0):
        async def reset() -> dict[str, Any] | None:
            p = await client.get("pods", "evictee", ns)
            c = next(c for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget")
            return c if c["status"] == "False" else None
        c = await eventually(reset, what="DisruptionTarget reset")
    assert "reason" not in c and "message" not in c
    assert c["observedGeneration"] == 1


def _crd(group: str, scale: bool) -> dict[str, Any]:
    sub: dict[str, Any] = {"status": {}}
    if scale:
        sub["scale"] = {"specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas"}
    kind, plural = ("Flock", "flocks") if scale else ("Herd", "herds")
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": sub,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}]}}


async def test_any_controller_with_a_scale_subresource(client: Client, ns: str) -> None:
    """A custom resource controlling the pods: its /scale gives the expected count; a kind
    without /scale fails the sync with upstream's message."""
    group = f"{ns}.pdb.example.com"
    crds = "apiextensions.k8s.io/v1/customresourcedefinitions"
    for scale in (True, False):
        await client.create(crds, _crd(group, scale))
    try:
        for plural in ("flocks", "herds"):
            await wait_served(client, f"{group}/v1/{plural}", ns)
        flock = await client.create(f"{group}/v1/flocks", {
            "apiVersion": f"{group}/v1", "kind": "Flock", "metadata": {"name": "f"},
            "spec": {"replicas": 4}}, ns)
        herd = await client.create(f"{group}/v1/herds", {
            "apiVersion": f"{group}/v1", "kind": "Herd", "metadata": {"name": "h"},
            "spec": {"replicas": 4}}, ns)
        for i in range(2):
            await client.create("pods", pod(f"sheep-{i}", flock, app="sheep"), ns)
            await set_ready(client, ns, f"sheep-{i}", True)
        await client.create("pods", pod("cow", herd, app="cow"), ns)
        async with running(client, ns):
            await client.create(PDBS, pdb("sheep", maxUnavailable="50%",
                                          selector={"matchLabels": {"app": "sheep"}}), ns)
            await wait_status(client, ns, "sheep", (4, 2, 2, 0), "the Flock's scale of 4")
            await client.create(PDBS, pdb("cow", minAvailable="50%",
                                          selector={"matchLabels": {"app": "cow"}}), ns)

            async def failed() -> dict[str, Any] | None:
                p = await client.get(PDBS, "cow", ns)
                c = condition(p)
                return p if c and c[1] == "SyncFailed" else None
            p = await eventually(failed, what="SyncFailed for the Herd")
        assert condition(p) == ("False", "SyncFailed",
                                f"herds.{group} does not implement the scale subresource")
    finally:
        for plural in ("flocks", "herds"):
            await client.delete(crds, f"{plural}.{group}")
