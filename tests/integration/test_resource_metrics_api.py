"""metrics.k8s.io/v1beta1 on pykcm's API server (pykcm/apiserver/registry/resource_metrics.py): the
usage of running pods from their ``sim.pykcm.io/*-usage`` annotations, node usage summed
over their pods, label selectors, discovery, 404s. Only pykcm's server: kube-apiserver
serves this API only through an APIService to a metrics-server (README, "Metrics")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.client.errors import ApiError
from tests.conftest import (
    PYKCM_SERVER_ONLY,
    Backend,
    create_namespace,
    ensure_default_service_account,
)

pytestmark = PYKCM_SERVER_ONLY
API = "/apis/metrics.k8s.io/v1beta1"


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


async def _pod(client: Client, ns: str, name: str, node: str, annotations: dict[str, str],
               containers: int = 1, phase: str = "Running", app: str = "web") -> None:
    await client.create("pods", {"metadata": {"name": name, "labels": {"app": app},
                                              "annotations": annotations},
                                 "spec": {"nodeName": node, "containers": [
                                     {"name": f"c{i}", "image": "nginx"}
                                     for i in range(containers)]}}, ns)
    await client.patch("pods", name, {"status": {"phase": phase}}, "merge", ns,
                       subresource="status")


async def test_pod_and_node_metrics(client: Client, apiserver: Backend) -> None:
    ns = await create_namespace(client, apiserver, "metrics")
    await ensure_default_service_account(client, ns)
    node = f"node-{ns}"
    await client.create("nodes", {"metadata": {"name": node, "labels": {"pool": ns}}})
    try:
        await _pod(client, ns, "busy", node, {"sim.pykcm.io/cpu-usage": "301m",
                                              "sim.pykcm.io/memory-usage": "64Mi"},
                   containers=2)
        await _pod(client, ns, "idle", node, {})
        await _pod(client, ns, "other", node, {}, app="db")
        await _pod(client, ns, "waiting", node, {"sim.pykcm.io/cpu-usage": "5"},
                   phase="Pending")

        groups = await client.request("GET", "/apis")
        assert "metrics.k8s.io" in [g["name"] for g in groups["groups"]]
        body: dict[str, Any] = await client.request(
            "GET", f"{API}/namespaces/{ns}/pods", params={"labelSelector": "app=web"})
        assert body["kind"] == "PodMetricsList"
        by_name = {m["metadata"]["name"]: m for m in body["items"]}
        assert sorted(by_name) == ["busy", "idle"]  # not Pending, not app=db
        busy = by_name["busy"]
        assert busy["window"] == "15s" and busy["metadata"]["labels"] == {"app": "web"}
        # split over the containers, the remainder to the first
        assert busy["containers"] == [
            {"name": "c0", "usage": {"cpu": "151m", "memory": "32768Ki"}},
            {"name": "c1", "usage": {"cpu": "150m", "memory": "32768Ki"}}]
        assert by_name["idle"]["containers"] == [
            {"name": "c0", "usage": {"cpu": "1m", "memory": "8192Ki"}}]

        # the annotation can change at any time
        await client.patch("pods", "idle", {"metadata": {"annotations": {
            "sim.pykcm.io/cpu-usage": "2"}}}, "merge", ns)
        idle = await client.request("GET", f"{API}/namespaces/{ns}/pods/idle")
        assert idle["kind"] == "PodMetrics" and idle["containers"][0]["usage"]["cpu"] == "2"

        with pytest.raises(ApiError) as exc:
            await client.request("GET", f"{API}/namespaces/{ns}/pods/waiting")
        assert exc.value.code == 404
        assert exc.value.message == f'podmetrics.metrics.k8s.io "{ns}/waiting" not found'

        nodes = await client.request("GET", f"{API}/nodes", params={"labelSelector": f"pool={ns}"})
        assert [n["metadata"]["name"] for n in nodes["items"]] == [node]
        # 50m of its own + 301m + 2 + 1m (other) = 2352m; 256Mi + 64Mi + 8Mi + 8Mi
        assert nodes["items"][0]["usage"] == {"cpu": "2352m", "memory": f"{336 * 1024}Ki"}
        one = await client.request("GET", f"{API}/nodes/{node}")
        assert one["kind"] == "NodeMetrics" and one["usage"]["cpu"] == "2352m"
    finally:
        await client.delete("nodes", node)
