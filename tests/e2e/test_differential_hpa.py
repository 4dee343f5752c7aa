"""Differential test of the horizontal-pod-autoscaler-controller: the real
kube-controller-manager v1.36.2's and pykcm's, each on a pykcm API server of its own (the
same metrics source for both: the metrics.k8s.io API of pykcm's server, from the pods'
``sim.pykcm.io/cpu-usage``; kube-apiserver has no metrics API without a metrics-server).

The same scenario runs on both: a Deployment ``web`` of 2 pods (written by hand, Running and
Ready for ten minutes, 100m cpu requested) and an HPA (50% cpu and 100Mi of memory on average, 1..10; the pods use the default 8Mi).
At 90m per pod both scale to 4; at 10m both scale down to 1 after the (shortened, 3 s)
stabilization window. A second HPA asks for a Pods metric, which no custom metrics API
serves: both report FailedGetPodsMetric. A third's behavior allows one more pod a minute:
both stop at 3 with ScalingLimited ScaleUpLimit.

A second test runs each controller on a real kube-apiserver of its own, which serves no
metrics API: a cpu and an External metric fail with the same conditions and events. Compared once settled: the Deployment's replicas, the HPA status
(timestamps dropped), its conditions (type, status, reason, message) and its events
(type, reason, message). No workload controller runs, so the pods stay two.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.podautoscaler import HorizontalController
from pykcm.informers import SharedInformerFactory
from pykcm.testing.server_thread import ServerThread
from pykcm.testing.upstream import KubeControllerManager, KubeKit
from tests.conftest import ensure_default_service_account
from tests.polling import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]

NS = "default"
HPAS = "autoscaling/v2/horizontalpodautoscalers"
FLAGS = ("--horizontal-pod-autoscaler-sync-period=1s",
         "--horizontal-pod-autoscaler-downscale-stabilization=3s")


def _t(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


async def setup(client: Client) -> None:
    await ensure_default_service_account(client, NS)
    labels = {"app": "web"}
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    await client.create("apps/v1/deployments", {"metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}}, NS)
    long_ago = time.time() - 600
    for i in range(2):
        name = f"web-{i}"
        await client.create("pods", {"metadata": {
            "name": name, "labels": labels, "annotations": {"sim.pykcm.io/cpu-usage": "90m"}},
            "spec": {"nodeName": "n1", "containers": [container]}}, NS)
        await client.patch("pods", name, {"status": {
            "phase": "Running", "startTime": _t(long_ago), "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": _t(long_ago + 5)}]}},
            "merge", NS, subresource="status")
    # a target whose HPA's behavior allows one more pod a minute: 2 → 3 (ScaleUpLimit)
    await client.create("apps/v1/deployments", {"metadata": {"name": "slow"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "slow"}},
        "template": {"metadata": {"labels": {"app": "slow"}}, "spec": {
            "containers": [container]}}}}, NS)
    for i in range(2):
        name = f"slow-{i}"
        await client.create("pods", {"metadata": {
            "name": name, "labels": {"app": "slow"},
            "annotations": {"sim.pykcm.io/cpu-usage": "90m"}},
            "spec": {"nodeName": "n1", "containers": [container]}}, NS)
        await client.patch("pods", name, {"status": {
            "phase": "Running", "startTime": _t(long_ago), "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": _t(long_ago + 5)}]}},
            "merge", NS, subresource="status")
    await client.create(HPAS, {"metadata": {"name": "slow"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "slow"},
        "maxReplicas": 10, "behavior": {"scaleUp": {"policies": [
            {"type": "Pods", "value": 1, "periodSeconds": 60}]}},
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 50}}}]}}, NS)
    # a second target whose HPA asks for a Pods metric: no custom metrics API serves it
    await client.create("apps/v1/deployments", {"metadata": {"name": "api"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "api"}},
        "template": {"metadata": {"labels": {"app": "api"}}, "spec": {
            "containers": [container]}}}}, NS)
    await client.create(HPAS, {"metadata": {"name": "api"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
        "maxReplicas": 3, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"},
                                                                "target": {"type": "AverageValue",
                                                                           "averageValue": "10"}}}]}},
        NS)
    await client.create(HPAS, {"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 10, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 50}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {
                "type": "AverageValue", "averageValue": "100Mi"}}}]}}, NS)


async def set_usage(client: Client, usage: str) -> None:
    for i in range(2):
        await client.patch("pods", f"web-{i}", {"metadata": {"annotations": {
            "sim.pykcm.io/cpu-usage": usage}}}, "merge", NS)


async def view(client: Client, name: str = "web", target: str | None = None
               ) -> dict[str, Any]:
    dep = await client.get("apps/v1/deployments", target or name, NS)
    hpa = await client.get(HPAS, name, NS)
    status = {k: v for k, v in (hpa.get("status") or {}).items()
              if k not in ("conditions", "lastScaleTime")}
    conditions = sorted((c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
                        for c in (hpa.get("status") or {}).get("conditions") or [])
    evs = (await client.list("events", NS))["items"]
    events = sorted({(e["type"], e["reason"], e["message"]) for e in evs
                     if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
                     and e["involvedObject"]["name"] == name})
    return {"replicas": dep["spec"]["replicas"], "status": status, "conditions": conditions,
            "events": events}


def settled(replicas: int) -> Callable[[dict[str, Any]], bool]:
    def ok(v: dict[str, Any]) -> bool:
        reasons = {c[0]: c[2] for c in v["conditions"]}
        return bool(v["replicas"] == replicas and v["status"].get("desiredReplicas") == replicas
                    and reasons.get("AbleToScale") == "ReadyForNewScale")
    return ok


def failing(v: dict[str, Any]) -> bool:
    reasons = {c[0]: c[2] for c in v["conditions"]}
    return bool(reasons.get("ScalingActive") == "FailedGetPodsMetric"
                and {e[1] for e in v["events"]} >= {"FailedGetPodsMetric",
                                                    "FailedComputeMetricsReplicas"})


async def run_scenario(client: Client) -> list[dict[str, Any]]:
    await setup(client)
    out = [await eventually(lambda: _if(view(client), settled(4)), timeout=60,
                            what="settled at 4")]
    out.append(await eventually(lambda: _if(view(client, "slow"), settled(3)), timeout=60,
                                what="slow settled at 3"))
    out.append(await eventually(lambda: _if(view(client, "api"), failing), timeout=60,
                                what="the Pods metric's failure"))
    await set_usage(client, "10m")
    out.append(await eventually(lambda: _if(view(client), settled(1)), timeout=60,
                                what="settled at 1"))
    return out


async def _if(value: Any, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    v = await value
    return v if pred(v) else None


@contextlib.asynccontextmanager
async def pykcm_hpa_controller(client: Client) -> AsyncIterator[HorizontalController]:
    """pykcm's HPA controller on ``client``'s server, with the flags of ``FLAGS``."""
    factory = SharedInformerFactory(client, name="")
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = HorizontalController(
        client=client, hpa_informer=factory.for_resource(
            "autoscaling", "v2", "horizontalpodautoscalers"),
        pod_informer=factory.core_v1.pods,
        recorder=broadcaster.new_recorder("horizontal-pod-autoscaler"),
        sync_period=1.0, downscale_stabilization=3.0)
    factory.start()
    task = asyncio.create_task(ctl.run())
    try:
        yield ctl
    finally:
        ctl.shutdown()
        await task
        await factory.shutdown()
        await broadcaster.shutdown()


async def test_same_replicas_conditions_and_events(kube_kit: KubeKit, tmp_path: Any) -> None:
    real_server = ServerThread().start()
    ours_server = ServerThread().start()
    kcm = KubeControllerManager(
        kube_kit, real_server.kubeconfig_path, tmp_path,
        controllers="horizontal-pod-autoscaler-controller", delegate_auth=False,
        extra_flags=FLAGS).start()
    try:
        async with Client(load_kube_config(real_server.kubeconfig_path)) as real, \
                Client(load_kube_config(ours_server.kubeconfig_path)) as ours, \
                pykcm_hpa_controller(ours):
            got_real, got_ours = await asyncio.gather(run_scenario(real), run_scenario(ours))
    finally:
        kcm.stop()
        log = kcm.log()
        real_server.stop()
        ours_server.stop()
    assert got_ours == got_real, log[-3000:]
    assert [v["replicas"] for v in got_ours] == [4, 3, 1, 1]
    assert ("ScalingLimited", "True", "ScaleUpLimit", ("the desired replica count is increasing "
            "faster than the maximum scale rate")) in got_ours[1]["conditions"]


async def setup_without_metrics(client: Client) -> None:
    await client.create("apps/v1/deployments", {"metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "containers": [{"name": "c", "image": "nginx"}]}}}}, NS)
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    await client.create(HPAS, {"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": target, "maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}}, NS)
    await client.create(HPAS, {"metadata": {"name": "ext"}, "spec": {
        "scaleTargetRef": target, "maxReplicas": 3, "metrics": [{"type": "External", "external": {
            "metric": {"name": "queue_depth"},
            "target": {"type": "AverageValue", "averageValue": "30"}}}]}}, NS)


def failing_with(reason: str) -> Callable[[dict[str, Any]], bool]:
    def ok(v: dict[str, Any]) -> bool:
        reasons = {c[0]: c[2] for c in v["conditions"]}
        return bool(reasons.get("ScalingActive") == reason
                    and {e[1] for e in v["events"]} >= {reason, "FailedComputeMetricsReplicas"})
    return ok


async def run_without_metrics(client: Client) -> list[dict[str, Any]]:
    await setup_without_metrics(client)
    out = []
    for name, reason in (("web", "FailedGetResourceMetric"), ("ext", "FailedGetExternalMetric")):
        pred = failing_with(reason)

        async def check(name: str = name, pred: Any = pred) -> dict[str, Any] | None:
            return await _if(view(client, name, "web"), pred)
        out.append(await eventually(check, timeout=60, what=f"{name}: {reason}"))
    return out


async def test_same_failures_on_kube_apiserver_without_a_metrics_api(kube_kit: KubeKit,
                                                                     tmp_path: Any) -> None:
    """On the real kube-apiserver (no metrics-server): each controller on a control plane of
    its own reports the same FailedGetResourceMetric / FailedGetExternalMetric conditions
    and events (client-go's wording of kube-apiserver's plain 404)."""
    real_cp = kube_kit.control_plane(tmp_path / "real").start()
    ours_cp = kube_kit.control_plane(tmp_path / "ours").start()
    kcm = KubeControllerManager.for_control_plane(
        real_cp, controllers="horizontal-pod-autoscaler-controller", name="hpa-kcm",
        service_account_key=False, extra_flags=FLAGS).start()
    try:
        async with Client(load_kube_config(real_cp.kubeconfig_path)) as real, \
                Client(load_kube_config(ours_cp.kubeconfig_path)) as ours, \
                pykcm_hpa_controller(ours):
            got_real, got_ours = await asyncio.gather(run_without_metrics(real), run_without_metrics(ours))
    finally:
        kcm.stop()
        log = kcm.log()
        real_cp.stop()
        ours_cp.stop()
    assert got_ours == got_real, log[-3000:]
