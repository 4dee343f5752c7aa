"""The Endpoints, EndpointSlice and mirroring controllers in process.

Each runs on both API servers (pykcm's serves discovery.k8s.io/v1 EndpointSlices). The
session's real server runs no endpoint controller of its own (they are workload
controllers in pykcm.testing.upstream). There is no kubelet: the tests bind pods
to a Node object of their own and write the pods' IPs and readiness themselves.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest

from pykcm.api.endpoints import ENDPOINT_SLICES
from pykcm.client import Client, NotFound, load_kube_config
from pykcm.controllers.endpoint import EndpointController
from pykcm.controllers.endpointslice import EndpointSliceController
from pykcm.controllers.endpointslicemirroring import EndpointSliceMirroringController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.polling import eventually


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "ep")


@pytest.fixture
async def node(client: Client) -> AsyncIterator[str]:
    name = f"ep-node-{uuid.uuid4().hex[:8]}"
    await client.create("nodes", {"metadata": {"name": name, "labels": {
        "topology.kubernetes.io/zone": "zone-a"}}})
    yield name
    await client.delete("nodes", name)


async def add_pod(client: Client, ns: str, node: str, name: str, ip: str, *,
                  ready: bool = True, labels: dict[str, str] | None = None) -> None:
    await client.create("pods", {"metadata": {"name": name, "labels": labels or {"app": "web"}},
                                 "spec": {"nodeName": node, "containers": [
                                     {"name": "c", "image": "nginx",
                                      "ports": [{"name": "http", "containerPort": 8080}]}]}},
                        ns)
    await set_ready(client, ns, name, ready, ip)


async def set_ready(client: Client, ns: str, name: str, ready: bool, ip: str | None = None
                    ) -> None:
    status: dict[str, Any] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False",
         "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}
    if ip:
        status.update(podIP=ip, podIPs=[{"ip": ip}])
    await client.patch("pods", name, {"status": status}, "merge", ns, subresource="status")


async def remove_pod(client: Client, ns: str, name: str) -> None:
    await client.delete("pods", name, ns, grace_period_seconds=0)


def web_service(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "labels": {"tier": "front"}},
            "spec": {"selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": "http"}], **spec}}


async def addresses(client: Client, ns: str) -> tuple[list[str], list[str]] | None:
    try:
        ep = await client.get("endpoints", "web", ns)
    except NotFound:
        return None
    subsets = ep.get("subsets") or []
    return (sorted(a["ip"] for s in subsets for a in s.get("addresses") or []),
            sorted(a["ip"] for s in subsets for a in s.get("notReadyAddresses") or []))


async def test_endpoints_follow_pods_and_their_readiness(
        client: Client, ns: str, node: str) -> None:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    ctl = EndpointController(client=client, pod_informer=factory.core_v1.pods,
                             service_informer=factory.core_v1.services,
                             endpoints_informer=factory.core_v1.endpoints)
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    try:
        await add_pod(client, ns, node, "a", "10.9.0.1")
        await add_pod(client, ns, node, "b", "10.9.0.2", ready=False)
        await add_pod(client, ns, node, "other", "10.9.0.3", labels={"app": "other"})
        await client.create("services", web_service(), ns)

        async def state(want: tuple[list[str], list[str]]) -> Any:
            got = await addresses(client, ns)
            return got if got == want else None
        await eventually(lambda: state((["10.9.0.1"], ["10.9.0.2"])), what="first endpoints")
        ep = await client.get("endpoints", "web", ns)
        assert ep["metadata"]["labels"] == {"tier": "front",
                                            "endpoints.kubernetes.io/managed-by":
                                                "endpoint-controller"}
        assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]
        assert ep["subsets"][0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        await set_ready(client, ns, "b", True)
        await eventually(lambda: state((["10.9.0.1", "10.9.0.2"], [])), what="b ready")
        await remove_pod(client, ns, "a")
        await eventually(lambda: state((["10.9.0.2"], [])), what="a gone")
        await client.delete("services", "web", ns)
        await eventually(lambda: _none(addresses(client, ns)), what="the Endpoints deleted")
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
    assert ctl.health_check() is None


async def _none(aw: Awaitable[Any]) -> bool:
    return await aw is None


async def slices(client: Client, ns: str, service: str) -> list[dict[str, Any]]:
    items = (await client.list(ENDPOINT_SLICES, ns,
                               label_selector=f"kubernetes.io/service-name={service}"))["items"]
    return sorted(items, key=lambda s: s["metadata"]["name"])


async def test_endpointslices_packed_reused_and_placeholder(
        client: Client, ns: str, node: str) -> None:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    ctl = EndpointSliceController(
        client=client, pod_informer=factory.core_v1.pods,
        service_informer=factory.core_v1.services, node_informer=factory.core_v1.nodes,
        endpointslice_informer=factory.informer_for(ENDPOINT_SLICES), max_endpoints_per_slice=2)
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    try:
        await client.create("services", web_service(), ns)
        placeholder = await eventually(lambda: slices(client, ns, "web"), what="a placeholder")
        assert [s.get("endpoints") for s in placeholder] == [None]
        for i in range(5):
            await add_pod(client, ns, node, f"p{i}", f"10.9.1.{i}", ready=i != 4)

        async def packed() -> Any:
            got = await slices(client, ns, "web")
            return got if sorted(len(s.get("endpoints") or []) for s in got) == [1, 2, 2] \
                else None
        got = await eventually(packed, what="5 endpoints in 3 slices")
        # the placeholder was reused, not replaced
        assert placeholder[0]["metadata"]["name"] in {s["metadata"]["name"] for s in got}
        eps = {e["addresses"][0]: e for s in got for e in s["endpoints"]}
        assert eps["10.9.1.4"]["conditions"] == {"ready": False, "serving": False,
                                                 "terminating": False}
        assert eps["10.9.1.0"]["zone"] == "zone-a" and eps["10.9.1.0"]["nodeName"] == node
        for i in range(4):
            await remove_pod(client, ns, f"p{i}")

        async def shrunk() -> Any:
            got = await slices(client, ns, "web")
            ips = [e["addresses"][0] for s in got for e in s.get("endpoints") or []]
            return got if ips == ["10.9.1.4"] else None
        left = await eventually(shrunk, what="one endpoint left")
        assert len(left) == 1
        await remove_pod(client, ns, "p4")

        async def placeholder_again() -> Any:
            got = await slices(client, ns, "web")
            return got if len(got) == 1 and not got[0].get("endpoints") else None
        await eventually(placeholder_again, what="a placeholder again")
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
    assert ctl.health_check() is None


async def test_custom_endpoints_mirrored(client: Client, ns: str) -> None:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    ctl = EndpointSliceMirroringController(
        client=client, endpoints_informer=factory.core_v1.endpoints,
        endpointslice_informer=factory.informer_for(ENDPOINT_SLICES),
        service_informer=factory.core_v1.services)
    factory.start()
    task = asyncio.create_task(ctl.run(1))
    try:
        await client.create("services", {"metadata": {"name": "db"}, "spec": {
            "ports": [{"port": 5432}]}}, ns)
        await client.create("endpoints", {"metadata": {"name": "db", "labels": {"x": "y"}},
                                          "subsets": [{"addresses": [{"ip": "10.2.0.1"}],
                                                       "ports": [{"port": 5432}]}]}, ns)
        mirrored = await eventually(lambda: slices(client, ns, "db"), what="a mirrored slice")
        [s] = mirrored
        assert s["metadata"]["labels"] == {
            "x": "y", "kubernetes.io/service-name": "db",
            "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}
        assert s["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
        assert s["endpoints"] == [{"addresses": ["10.2.0.1"], "conditions": {"ready": True}}]
        assert s["ports"] == [{"name": "", "port": 5432, "protocol": "TCP"}]
        # a selector makes the Service the EndpointSlice controller's: mirroring stops
        await client.patch("services", "db", {"spec": {"selector": {"app": "db"}}}, "merge", ns)
        await eventually(lambda: _empty(slices(client, ns, "db")), what="mirror removed")
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
    assert ctl.health_check() is None


async def _empty(aw: Awaitable[list[Any]]) -> bool:
    return not await aw
