"""The resourcequota-controller against an API server: status.hard/used after creates and
deletes, and the API server's quota admission relying on it.

Every test runs in a namespace of its own, with the controller in-process; on the real
kube-apiserver the session's kube-controller-manager does not run its own quota
controller (``WORKLOAD_CONTROLLERS``), so what fills the status is pykcm's.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.client.errors import Forbidden
from pykcm.controllers.resourcequota import ResourceQuotaController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace, wait_served
from tests.polling import eventually


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "quota")


@contextlib.asynccontextmanager
async def quota_controller(client: Client, resync: float = 300.0
                           ) -> AsyncIterator[ResourceQuotaController]:
    factory = SharedInformerFactory(client)
    ctl = ResourceQuotaController(
        client=client, quota_informer=factory.informer_for(await client.resolve("v1/resourcequotas")),
        informer_factory=factory, resync_period=resync)
    await ctl.start_monitors()
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    try:
        yield ctl
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        assert ctl.health_check() is None


def pod(name: str, cpu: str | None = "500m", memory: str | None = "128Mi",
        **spec: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    c: dict[str, Any] = {"name": "c", "image": "nginx"}
    if requests:
        c["resources"] = {"requests": requests, "limits": dict(requests)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [c], **spec}}


def quota(name: str, hard: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": {"hard": hard, **spec}}


async def status(client: Client, ns: str, name: str) -> dict[str, Any]:
    return dict((await client.get("resourcequotas", name, ns)).get("status") or {})


async def used_becomes(client: Client, ns: str, name: str, want: dict[str, str]) -> None:
    async def check() -> Any:
        return (await status(client, ns, name)).get("used") == want
    try:
        await eventually(check, what=f"quota {name} used == {want}")
    except AssertionError:
        raise AssertionError(f"{name}: {await status(client, ns, name)} != {want}") from None


async def test_status_counts_existing_objects_and_gives_back_deletes(client: Client,
                                                                     ns: str) -> None:
    await client.create("pods", pod("a"), ns)
    await client.create("pods", pod("b", cpu="1", memory="1Gi"), ns)
    await client.create("services", {"metadata": {"name": "np"}, "spec": {
        "type": "NodePort", "ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]}}, ns)
    await client.create("secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}}, ns)
    hard = {"pods": "10", "requests.cpu": "4", "requests.memory": "4Gi", "limits.cpu": "4",
            "cpu": "4", "count/pods": "10", "services": "5", "services.nodeports": "5",
            "services.loadbalancers": "1", "count/secrets": "9", "secrets": "9",
            "count/deployments.apps": "3", "bogus.example.com/thing": "1"}
    async with quota_controller(client):
        await client.create("resourcequotas", quota("q", hard), ns)
        await used_becomes(client, ns, "q", {
            "pods": "2", "count/pods": "2", "requests.cpu": "1500m", "limits.cpu": "1500m",
            "cpu": "1500m", "requests.memory": "1152Mi", "services": "1",
            "services.nodeports": "2", "services.loadbalancers": "0", "count/secrets": "1",
            "secrets": "1", "count/deployments.apps": "0"})
        st = await status(client, ns, "q")
        assert st["hard"] == hard
        await client.delete("pods", "b", ns, grace_period_seconds=0)
        await client.delete("services", "np", ns)
        await used_becomes(client, ns, "q", {
            "pods": "1", "count/pods": "1", "requests.cpu": "500m", "limits.cpu": "500m",
            "cpu": "500m", "requests.memory": "128Mi", "services": "0",
            "services.nodeports": "0", "services.loadbalancers": "0", "count/secrets": "1",
            "secrets": "1", "count/deployments.apps": "0"})


async def test_scopes_select_the_pods_a_quota_tracks(client: Client, ns: str) -> None:
    await client.create("pods", pod("burstable"), ns)
    await client.create("pods", pod("besteffort", cpu=None, memory=None), ns)
    await client.create("pods", pod("deadline", activeDeadlineSeconds=60), ns)
    async with quota_controller(client):
        await client.create("resourcequotas", quota("be", {"pods": "5"}, scopes=["BestEffort"]), ns)
        await client.create("resourcequotas", quota(
            "nbe-nt", {"pods": "5", "requests.cpu": "5"}, scopes=["NotBestEffort", "NotTerminating"]),
            ns)
        await client.create("resourcequotas", quota("term", {"pods": "5"}, scopes=["Terminating"]),
                            ns)
        await client.create("resourcequotas", quota("prio", {"pods": "5"}, scopeSelector={
            "matchExpressions": [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}]}), ns)
        await used_becomes(client, ns, "be", {"pods": "1"})
        await used_becomes(client, ns, "nbe-nt", {"pods": "1", "requests.cpu": "500m"})
        await used_becomes(client, ns, "term", {"pods": "1"})
        await used_becomes(client, ns, "prio", {"pods": "3"})


async def test_admission_refuses_the_pod_over_quota(client: Client, ns: str) -> None:
    async with quota_controller(client):
        await client.create("resourcequotas", quota("q", {"pods": "2", "requests.cpu": "1",
                                                          "limits.cpu": "2"}), ns)
        await used_becomes(client, ns, "q", {"pods": "0", "requests.cpu": "0", "limits.cpu": "0"})
        await client.create("pods", pod("a", cpu="600m"), ns)
        with pytest.raises(Forbidden) as e:
            await client.create("pods", pod("b", cpu="600m"), ns)
        assert e.value.status["message"] == (
            'pods "b" is forbidden: exceeded quota: q, requested: requests.cpu=600m, '
            "used: requests.cpu=600m, limited: requests.cpu=1")
        with pytest.raises(Forbidden) as e:
            await client.create("pods", pod("c", cpu=None, memory=None), ns)
        assert e.value.status["message"] == (
            'pods "c" is forbidden: failed quota: q: must specify limits.cpu for: c; '
            "requests.cpu for: c")
        await client.delete("pods", "a", ns, grace_period_seconds=0)
        await used_becomes(client, ns, "q", {"pods": "0", "requests.cpu": "0", "limits.cpu": "0"})
        await client.create("pods", pod("b", cpu="600m"), ns)
        await used_becomes(client, ns, "q", {"pods": "1", "requests.cpu": "600m",
                                             "limits.cpu": "600m"})


async def test_terminal_pods_give_back_compute_and_the_full_resync_repairs_status(
        client: Client, ns: str) -> None:
    await client.create("pods", pod("a"), ns)
    await client.create("pods", pod("b"), ns)
    async with quota_controller(client, resync=1.0):
        await client.create("resourcequotas", quota("q", {"pods": "5", "count/pods": "5",
                                                          "requests.cpu": "2"}), ns)
        await used_becomes(client, ns, "q", {"pods": "2", "count/pods": "2",
                                             "requests.cpu": "1"})
        # a pod that finished stops counting its compute resources, not as an object
        b = await client.get("pods", "b", ns)
        b["status"] = {"phase": "Succeeded"}
        await client.update_status("pods", b)
        await used_becomes(client, ns, "q", {"pods": "1", "count/pods": "2",
                                             "requests.cpu": "500m"})
        # a status written wrong by someone else is put right by the periodic full resync
        # (an update that leaves spec.hard alone is not a reason to sync)
        q = await client.get("resourcequotas", "q", ns)
        q["status"]["used"] = {"pods": "4", "count/pods": "4", "requests.cpu": "0"}
        await client.update_status("resourcequotas", q)
        await used_becomes(client, ns, "q", {"pods": "1", "count/pods": "2",
                                             "requests.cpu": "500m"})


async def test_count_of_a_custom_resource_whose_crd_comes_after_the_quota(
        client: Client, ns: str) -> None:
    from tests.integration.test_garbage_collector import widget_crd

    group = uuid.uuid4().hex[:8] + ".quota.example.com"
    count = f"count/widgets.{group}"
    async with quota_controller(client, resync=0.5) as ctl:
        ctl.monitor.retry_unresolved = 0.2
        await client.create("resourcequotas", quota("q", {count: "1", "pods": "1"}), ns)
        await used_becomes(client, ns, "q", {"pods": "0"})  # widgets are not served yet
        await client.create("customresourcedefinitions", widget_crd(group))
        try:
            await wait_served(client, f"{group}/v1/widgets", ns)
            await used_becomes(client, ns, "q", {"pods": "0", count: "0"})
            widget = {"apiVersion": f"{group}/v1", "kind": "Widget"}
            await client.create(f"{group}/v1/widgets", {**widget, "metadata": {"name": "a"}}, ns)
            with pytest.raises(Forbidden):
                await client.create(f"{group}/v1/widgets", {**widget, "metadata": {"name": "b"}},
                                    ns)
            await used_becomes(client, ns, "q", {"pods": "0", count: "1"})
            await client.delete(f"{group}/v1/widgets", "a", ns)
            await used_becomes(client, ns, "q", {"pods": "0", count: "0"})
        finally:
            await client.delete("customresourcedefinitions", f"widgets.{group}")
