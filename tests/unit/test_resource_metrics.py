"""Unit tests of pykcm/apiserver/registry/resource_metrics.py: PodMetrics and NodeMetrics from the
pods' ``sim.pykcm.io/*-usage`` annotations (split, defaults, running pods only, the node's
own usage)."""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.resource_metrics import node_metrics, pod_metrics, pod_usage


def _pod(name: str, annotations: dict[str, str], containers: int = 1, phase: str = "Running",
         node: str = "n1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": f"c{i}"}
                                                      for i in range(containers)]},
            "status": {"phase": phase}}


def test_usage_split_over_containers_with_defaults() -> None:
    assert pod_usage(_pod("a", {"sim.pykcm.io/cpu-usage": "1", "sim.pykcm.io/memory-usage":
                                "3Ki"}, containers=3)) == [
        ("c0", 334, 1024), ("c1", 333, 1024), ("c2", 333, 1024)]
    assert pod_usage(_pod("b", {})) == [("c0", 1, 8 * 1024 * 1024)]
    # a malformed or negative value falls back to the default
    assert pod_usage(_pod("c", {"sim.pykcm.io/cpu-usage": "lots",
                                "sim.pykcm.io/memory-usage": "-1"})) == [
        ("c0", 1, 8 * 1024 * 1024)]


def test_pod_metrics_only_for_running_pods() -> None:
    m = pod_metrics(_pod("a", {"sim.pykcm.io/cpu-usage": "250m",
                               "sim.pykcm.io/memory-usage": "64Mi"}), 0.0)
    assert m is not None
    assert m["kind"] == "PodMetrics" and m["apiVersion"] == "metrics.k8s.io/v1beta1"
    assert m["metadata"] == {"name": "a", "namespace": "ns",
                             "creationTimestamp": "1970-01-01T00:00:00Z"}
    assert m["timestamp"] == "1970-01-01T00:00:00Z" and m["window"] == "15s"
    assert m["containers"] == [{"name": "c0", "usage": {"cpu": "250m", "memory": "65536Ki"}}]
    assert pod_metrics(_pod("p", {}, phase="Pending"), 0.0) is None
    unscheduled = _pod("u", {})
    del unscheduled["spec"]["nodeName"]
    assert pod_metrics(unscheduled, 0.0) is None


def test_node_metrics_sum_running_pods_and_the_nodes_own() -> None:
    pods = [_pod("a", {"sim.pykcm.io/cpu-usage": "250m"}),
            _pod("b", {"sim.pykcm.io/cpu-usage": "5"}, node="n2"),
            _pod("c", {"sim.pykcm.io/cpu-usage": "5"}, phase="Succeeded")]
    m = node_metrics({"metadata": {"name": "n1", "labels": {"zone": "a"}}}, pods, 0.0)
    assert m["kind"] == "NodeMetrics" and m["metadata"]["labels"] == {"zone": "a"}
    assert m["usage"] == {"cpu": "300m", "memory": f"{(256 + 8) * 1024}Ki"}
