"""The horizontal-pod-autoscaler-controller against an API server, and the HPA resource at
autoscaling/v2 and v1.

Every test runs on both API servers. The real kube-apiserver serves no metrics API, so the
controller here reads a static metrics source (the same one on both servers: upstream's
controller takes its MetricsClient as a parameter too); the metrics API of pykcm's server
is tested in tests/integration/test_resource_metrics_api.py and end to end in
tests/e2e/test_kubectl_autoscale.py. No workload controller runs: the Deployment's pods
are written by hand, their readiness too, and a rescale only changes spec.replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.podautoscaler import HorizontalController
from pykcm.controllers.podautoscaler.metrics_client import MetricsClient, MetricsError
from pykcm.controllers.podautoscaler.replica_calculator import PodMetric
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace, ensure_default_service_account
from tests.polling import eventually

HPAS = "autoscaling/v2/horizontalpodautoscalers"


class StaticMetrics(MetricsClient):
    """Pods' cpu usage set by the test (milli-cpu by pod name); None: the API fails."""

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.cpu: dict[str, int] | None = {}

    async def resource_metric(self, resource: str, namespace: str, selector: str,
                              container: str = "") -> tuple[dict[str, PodMetric], float]:
        if self.cpu is None:
            raise MetricsError("unable to fetch metrics from resource metrics API: the server "
                               "could not find the requested resource")
        now = time.time()
        return {k: PodMetric(v, now - 30, 15.0) for k, v in self.cpu.items()}, now - 30


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    ns = await create_namespace(client, apiserver, "hpa")
    await ensure_default_service_account(client, ns)
    return ns


@contextlib.asynccontextmanager
async def running(client: Client, ns: str, metrics: MetricsClient, **kw: Any
                  ) -> AsyncIterator[HorizontalController]:
    factory = SharedInformerFactory(client, namespace=ns, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = HorizontalController(
        client=client, hpa_informer=factory.for_resource("autoscaling", "v2",
                                                         "horizontalpodautoscalers"),
        pod_informer=factory.core_v1.pods,
        recorder=broadcaster.new_recorder("horizontal-pod-autoscaler"), metrics=metrics,
        sync_period=0.3, **kw)
    factory.start()
    task = asyncio.create_task(ctl.run())
    try:
        yield ctl
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        await broadcaster.shutdown()
        assert ctl.health_check() is None


def _t(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


async def web(client: Client, ns: str, replicas: int) -> None:
    """Deployment web and its ``replicas`` pods, Running and Ready for ten minutes, each
    requesting 100m cpu."""
    labels = {"app": "web"}
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    await client.create("apps/v1/deployments", {
        "metadata": {"name": "web"}, "spec": {
            "replicas": replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}},
        ns)
    for i in range(replicas):
        await add_pod(client, ns, f"web-{i}")


async def add_pod(client: Client, ns: str, name: str) -> None:
    await client.create("pods", {"metadata": {"name": name, "labels": {"app": "web"}}, "spec": {
        "containers": [{"name": "c", "image": "nginx",
                        "resources": {"requests": {"cpu": "100m"}}}]}}, ns)
    long_ago = time.time() - 600
    await client.patch("pods", name, {"status": {
        "phase": "Running", "startTime": _t(long_ago), "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": _t(long_ago + 5)}]}},
        "merge", ns, subresource="status")


def hpa(name: str = "web", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 10,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 50}}}]}
    base.update(spec)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name}, "spec": base}


async def replicas(client: Client, ns: str) -> int:
    return int((await client.get("apps/v1/deployments", "web", ns))["spec"]["replicas"])


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"])
            for c in (obj.get("status") or {}).get("conditions") or []}


async def events(client: Client, ns: str) -> list[tuple[str, str, str]]:
    items = (await client.list("events", ns))["items"]
    return [(e["type"], e["reason"], e["message"]) for e in items
            if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"]


async def test_scales_up_on_cpu_utilization_with_status_conditions_and_event(
        client: Client, ns: str) -> None:
    await web(client, ns, 2)
    metrics = StaticMetrics(client)
    metrics.cpu = {"web-0": 90, "web-1": 90}  # 90% of the request against 50%: 4 pods
    await client.create(HPAS, hpa(), ns)
    async with running(client, ns, metrics):
        await eventually(lambda: _equals(replicas(client, ns), 4), what="scaled to 4")
        got = await eventually(lambda: _status_with(client, ns, "desiredReplicas", 4))
    assert got["status"]["currentReplicas"] == 2
    assert got["status"]["currentMetrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "current": {"averageUtilization": 90, "averageValue": "90m"}}}]
    assert "lastScaleTime" in got["status"]
    assert conditions(got) == {"AbleToScale": ("True", "SucceededRescale"),
                               "ScalingActive": ("True", "ValidMetricFound"),
                               "ScalingLimited": ("False", "DesiredWithinRange")}
    evs = await eventually(lambda: events(client, ns))
    assert ("Normal", "SuccessfulRescale", ("New size: 4; reason: cpu resource utilization "
            "(percentage of request) above target")) in evs


async def test_scale_down_waits_for_the_stabilization_window(client: Client, ns: str) -> None:
    await web(client, ns, 4)
    metrics = StaticMetrics(client)
    metrics.cpu = {f"web-{i}": 50 for i in range(4)}
    await client.create(HPAS, hpa(), ns)
    async with running(client, ns, metrics, downscale_stabilization=3.0):
        got = await eventually(lambda: _status_with(client, ns, "currentReplicas", 4))
        assert conditions(got)["AbleToScale"] == ("True", "ReadyForNewScale")
        metrics.cpu = {f"web-{i}": 20 for i in range(4)}  # 20%: 2 pods (ceil(0.4 × 4))
        got = await eventually(lambda: _condition(client, ns, "AbleToScale",
                                                  "ScaleDownStabilized"))
        assert await replicas(client, ns) == 4
        await eventually(lambda: _equals(replicas(client, ns), 2), what="scaled down to 2")
    evs = await events(client, ns)
    assert ("Normal", "SuccessfulRescale", "New size: 2; reason: All metrics below target"
            ) in evs


async def test_metrics_that_cannot_be_read_and_a_missing_target(client: Client,
                                                                ns: str) -> None:
    await web(client, ns, 1)
    metrics = StaticMetrics(client)
    metrics.cpu = None
    await client.create(HPAS, hpa(), ns)
    missing = hpa("gone")
    missing["spec"]["scaleTargetRef"]["name"] = "nothing"
    await client.create(HPAS, missing, ns)
    async with running(client, ns, metrics):
        got = await eventually(lambda: _condition(client, ns, "ScalingActive",
                                                  "FailedGetResourceMetric"))
        gone = await eventually(lambda: _condition(client, ns, "AbleToScale", "FailedGetScale",
                                                   name="gone"))
    msg = {c["type"]: c["message"] for c in got["status"]["conditions"]}
    assert msg["ScalingActive"] == (
        "the HPA was unable to compute the replica count: failed to get cpu utilization: "
        "unable to get metrics for resource cpu: unable to fetch metrics from resource metrics "
        "API: the server could not find the requested resource")
    assert conditions(gone)["AbleToScale"] == ("False", "FailedGetScale")
    evs = await events(client, ns)
    reasons = {r for _, r, _ in evs}
    assert {"FailedGetResourceMetric", "FailedComputeMetricsReplicas", "FailedGetScale"} <= reasons
    assert await replicas(client, ns) == 1


async def test_v1_view_of_a_v2_object(client: Client, ns: str) -> None:
    """autoscaling/v1 shows the cpu target as targetCPUUtilizationPercentage and the other
    metrics in the autoscaling.alpha.kubernetes.io/metrics annotation; a v1 create is read
    back at v2 with the cpu metric."""
    extra = hpa(metrics=[
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 60}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {
            "type": "AverageValue", "averageValue": "64Mi"}}}])
    await client.create(HPAS, extra, ns)
    v1 = await client.get("autoscaling/v1/horizontalpodautoscalers", "web", ns)
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert json.loads(v1["metadata"]["annotations"][
        "autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "64Mi"}}]
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    await client.create("autoscaling/v1/horizontalpodautoscalers", {
        "metadata": {"name": "v1"}, "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 3, "targetCPUUtilizationPercentage": 70}}, ns)
    v2 = await client.get(HPAS, "v1", ns)
    assert v2["spec"]["minReplicas"] == 1
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 70}}}]
    assert "annotations" not in v2["metadata"]


# -- helpers -------------------------------------------------------------------------

async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _status_with(client: Client, ns: str, key: str, value: Any,
                       name: str = "web") -> dict[str, Any] | None:
    obj = await client.get(HPAS, name, ns)
    return obj if (obj.get("status") or {}).get(key) == value else None


async def _condition(client: Client, ns: str, ctype: str, reason: str,
                     name: str = "web") -> dict[str, Any] | None:
    obj = await client.get(HPAS, name, ns)
    return obj if conditions(obj).get(ctype, ("", ""))[1] == reason else None


def _crd(group: str, plural: str, kind: str, selector: bool) -> dict[str, Any]:
    scale: dict[str, Any] = {"specReplicasPath": ".spec.replicas",
                             "statusReplicasPath": ".status.replicas"}
    if selector:
        scale["labelSelectorPath"] = ".status.selector"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}, "scale": scale},
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}]}}


async def test_custom_resource_targets_through_their_scale(client: Client, ns: str) -> None:
    """A custom resource with /scale is scaled like a Deployment; one whose /scale has no
    selector gets upstream's SelectorRequired event and InvalidSelector condition."""
    from tests.conftest import wait_served

    group = f"{ns}.hpa.example.com"
    crds = "apiextensions.k8s.io/v1/customresourcedefinitions"
    await client.create(crds, _crd(group, "flocks", "Flock", True))
    await client.create(crds, _crd(group, "herds", "Herd", False))
    try:
        for plural in ("flocks", "herds"):
            await wait_served(client, f"{group}/v1/{plural}", ns)
        for plural, kind in (("flocks", "Flock"), ("herds", "Herd")):
            await client.create(f"{group}/v1/{plural}", {
                "apiVersion": f"{group}/v1", "kind": kind, "metadata": {"name": "x"},
                "spec": {"replicas": 2}}, ns)
            await client.patch(f"{group}/v1/{plural}", "x", {"status": {
                "replicas": 2, "selector": "app=web"}}, "merge", ns, subresource="status")
        for i in range(2):
            await add_pod(client, ns, f"web-{i}")
        metrics = StaticMetrics(client)
        metrics.cpu = {"web-0": 90, "web-1": 90}
        for plural, kind in (("flocks", "Flock"), ("herds", "Herd")):
            h = hpa(plural)
            h["spec"]["scaleTargetRef"] = {"apiVersion": f"{group}/v1", "kind": kind,
                                           "name": "x"}
            await client.create(HPAS, h, ns)
        async with running(client, ns, metrics):
            async def flock_replicas() -> bool:
                obj = await client.get(f"{group}/v1/flocks", "x", ns)
                return bool(obj["spec"]["replicas"] == 4)
            await eventually(flock_replicas, what="the Flock scaled to 4")
            herd = await eventually(lambda: _condition(client, ns, "ScalingActive",
                                                       "InvalidSelector", name="herds"))
        msg = {c["type"]: c["message"] for c in herd["status"]["conditions"]}
        assert msg["ScalingActive"] == "the HPA target's scale is missing a selector"
        assert ("Warning", "SelectorRequired", "selector is required") in await events(client,
                                                                                        ns)
        herd_obj = await client.get(f"{group}/v1/herds", "x", ns)
        assert herd_obj["spec"]["replicas"] == 2
    finally:
        for plural in ("flocks", "herds"):
            await client.delete(crds, f"{plural}.{group}")
