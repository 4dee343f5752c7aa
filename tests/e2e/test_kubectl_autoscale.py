"""End to end on ``pykcm up`` with kubectl (issue 14's acceptance): ``kubectl autoscale
deployment web --cpu-percent=50 --min=1 --max=10``; raising the pods' usage annotation
(``sim.pykcm.io/cpu-usage``) scales the Deployment up to the count the HPA algorithm gives,
lowering it scales down once the stabilization window has passed; ``kubectl top pods`` and
``kubectl top nodes`` show the simulated usage.

The cluster is this module's own, with a shortened ``--horizontal-pod-autoscaler-sync-period``
(2 s) and ``--horizontal-pod-autoscaler-downscale-stabilization`` (10 s), as upstream's
tests shorten the 15 s and 5 min defaults.

Expected counts: one pod requesting 100m at 200m is 200% against 50%: ratio 4, so 4 pods
(also the scale-up limit from 1 without behavior: max(2 × 1, 4)). The three new pods use
the default 1m: (200 + 3 × 1) / 400 = 50%, within the tolerance, so 4 stays. All at 10m:
10% against 50%, ceil(0.2 × 4) = 1.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.testing.cluster import Cluster
from tests.e2e.cluster_helpers import get_json, is_active, is_ready, items, wait_until
from tests.e2e.conftest import Kubectl, _kubectl_path

pytestmark = [pytest.mark.e2e]

NS = "e2e-hpa"


@pytest.fixture(scope="module")
def k() -> Iterator[Kubectl]:
    with Cluster(nodes=3, manager_flags=[
            "--horizontal-pod-autoscaler-sync-period=2s",
            "--horizontal-pod-autoscaler-downscale-stabilization=10s"]) as c:
        cache = tempfile.mkdtemp(prefix="kubectl-cache-")
        yield Kubectl(_kubectl_path(), {**os.environ, "KUBECONFIG": c.kubeconfig_path,
                                        "KUBECACHEDIR": cache})
        shutil.rmtree(cache, ignore_errors=True)


def deployment() -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "web", "image": "nginx:1.27", "resources": {
                         "requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}})


def ready_pods(k: Kubectl) -> list[dict[str, Any]]:
    return [p for p in items(k, NS, "pods", "-l", "app=web") if is_active(p) and is_ready(p)]


def spec_replicas(k: Kubectl) -> int:
    return int(get_json(k, "deployment", "web", "-n", NS)["spec"]["replicas"])


def hpa_events(k: Kubectl) -> list[str]:
    evs = items(k, NS, "events", "--field-selector", "involvedObject.kind="
                "HorizontalPodAutoscaler")
    return [f"{e['reason']}: {e['message']}" for e in evs]


def test_autoscale_follows_the_usage_annotation_and_top_shows_it(k: Kubectl) -> None:
    k.ok("create", "namespace", NS)
    wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", NS).returncode == 0,
               "the default ServiceAccount")
    k.ok("apply", "-f", "-", stdin=deployment())
    wait_until(lambda: len(ready_pods(k)) == 1, "1 ready pod")
    out = k.ok("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=10",
               "-n", NS)
    assert "horizontalpodautoscaler.autoscaling/web autoscaled" in out

    # idle (the default 1m of 100m): 1%, nothing to do
    wait_until(lambda: "cpu: 1%/50%" in k.ok("get", "hpa", "web", "-n", NS), "cpu: 1%/50%")
    k.ok("annotate", "pods", "-l", "app=web", "-n", NS, "sim.pykcm.io/cpu-usage=200m",
         "--overwrite")
    wait_until(lambda: spec_replicas(k) == 4, "scaled up to 4")
    wait_until(lambda: len(ready_pods(k)) == 4, "4 ready pods")
    # in one sync: a single rescale, straight to 4
    assert [e for e in hpa_events(k) if e.startswith("SuccessfulRescale")] == [
        ("SuccessfulRescale: New size: 4; reason: cpu resource utilization (percentage of "
        "request) above target")]

    top = k.ok("top", "pods", "-n", NS)
    assert top.splitlines()[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    rows = [line.split() for line in top.splitlines()[1:]]
    assert len(rows) == 4 and sorted(r[1] for r in rows) == ["1m", "1m", "1m", "200m"]
    nodes = k.ok("top", "nodes")
    assert nodes.splitlines()[0].split()[:2] == ["NAME", "CPU(cores)"]
    assert len(nodes.splitlines()) == 4  # the three simulated nodes

    k.ok("annotate", "pods", "-l", "app=web", "-n", NS, "sim.pykcm.io/cpu-usage=10m",
         "--overwrite")
    wait_until(lambda: spec_replicas(k) == 1, "scaled down to 1 after the window")
    assert "SuccessfulRescale: New size: 1; reason: All metrics below target" in hpa_events(k)
    described = k.ok("describe", "hpa", "web", "-n", NS)
    assert "Reference:" in described and "Deployment/web" in described
    assert "SuccessfulRescale" in described
    hpa = get_json(k, "hpa", "web", "-n", NS)
    conditions = {c["type"]: c["reason"] for c in hpa["status"]["conditions"]}
    assert conditions["ScalingActive"] == "ValidMetricFound"
    assert hpa["status"]["desiredReplicas"] == 1
