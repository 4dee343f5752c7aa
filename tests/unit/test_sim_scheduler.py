"""pykcm.sim pure scheduling logic: quantities, pod requests, filters, scores, messages."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from pykcm.sim.nodes import NodeConfig, build_node
from pykcm.sim.resources import (
    DEFAULT_MEMORY_REQUEST,
    non_zero_requests,
    parse_quantity,
    pod_requests,
    quantity_units,
)
from pykcm.sim.scheduler import (
    NodeInfo,
    fit_error_message,
    node_matches_affinity,
    num_feasible_nodes_to_find,
    run_filters,
    score_node,
    tolerates,
)


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": list(containers) or [{"name": "c", "image": "x"}], **spec}}


def ctr(name: str = "c", **requests: str) -> dict[str, Any]:
    return {"name": name, "image": "x", "resources": {"requests": requests}}


def node_info(name: str = "n0", config: NodeConfig | None = None, **spec: Any) -> NodeInfo:
    node = build_node(name, 0, config or NodeConfig(), 0.0)
    node["spec"].update(spec)
    info = NodeInfo(name)
    info.set_node(node)
    return info


@pytest.mark.parametrize(("q", "want"), [
    ("100m", Decimal("0.1")), ("1", Decimal(1)), ("1Gi", Decimal(2 ** 30)),
    ("1.5Ki", Decimal(1536)), ("2k", Decimal(2000)), ("1e3", Decimal(1000)),
    (3, Decimal(3)), ("bogus", None), ("", None), (True, None)])
def test_parse_quantity(q: Any, want: Decimal | None) -> None:
    assert parse_quantity(q) == want


def test_quantity_units_round_up_and_cpu_in_millicores() -> None:
    assert quantity_units("cpu", "250m") == 250
    assert quantity_units("cpu", "1.0001") == 1001
    assert quantity_units("memory", "1Mi") == 2 ** 20
    assert quantity_units("memory", "0.5") == 1
    assert quantity_units("cpu", "-1") == 0


def test_pod_requests_sum_containers_and_take_the_init_peak() -> None:
    p = pod(ctr("a", cpu="100m", memory="64Mi"), ctr("b", cpu="200m"),
            initContainers=[ctr("i", cpu="500m", memory="10Mi")],
            overhead={"cpu": "10m"})
    assert pod_requests(p) == {"cpu": 510, "memory": 64 * 2 ** 20}


def test_pod_requests_sidecars_add_up_and_limits_default_requests() -> None:
    side = ctr("s", cpu="100m")
    side["restartPolicy"] = "Always"
    limited = {"name": "l", "image": "x", "resources": {"limits": {"cpu": "1"}}}
    p = pod(limited, initContainers=[side, ctr("i", cpu="1500m")])
    # The sidecar runs next to the init container after it, and next to the app.
    assert pod_requests(p) == {"cpu": 1600}


def test_non_zero_requests_count_request_less_containers() -> None:
    assert non_zero_requests(pod(ctr("a"), ctr("b", cpu="1"))) == \
        (1100, 2 * DEFAULT_MEMORY_REQUEST)


def test_tolerations() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert tolerates([{"key": "k", "operator": "Equal", "value": "v"}], taint)
    assert tolerates([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert tolerates([{"operator": "Exists"}], taint)
    assert not tolerates([{"key": "k", "value": "other"}], taint)
    assert not tolerates([{"key": "k", "operator": "Exists", "effect": "NoExecute"}], taint)
    assert not tolerates([], taint)


def test_node_affinity_and_selector() -> None:
    labels = {"zone": "a", "size": "4"}
    assert node_matches_affinity(pod(nodeSelector={"zone": "a"}), "n", labels)
    assert not node_matches_affinity(pod(nodeSelector={"zone": "b"}), "n", labels)
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
            {"matchExpressions": [{"key": "size", "operator": "Gt", "values": ["2"]},
                                  {"key": "gpu", "operator": "DoesNotExist"}]}]}}}
    assert node_matches_affinity(pod(affinity=aff), "n", labels)
    assert not node_matches_affinity(pod(affinity=aff), "n", {"zone": "a", "size": "1"})
    fields = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    assert node_matches_affinity(pod(affinity=fields), "n1", {})
    assert not node_matches_affinity(pod(affinity=fields), "n2", {})


def test_filters_first_failing_plugin_decides() -> None:
    info = node_info(unschedulable=True, taints=[{"key": "dedicated", "value": "x",
                                                  "effect": "NoSchedule"}])
    p = pod()
    assert run_filters(p, {}, info) == (["node(s) were unschedulable"], False)
    info.unschedulable = False
    assert run_filters(p, {}, info) == (["node(s) had untolerated taint {dedicated: x}"], False)
    tolerant = pod(tolerations=[{"key": "dedicated", "operator": "Exists"}],
                   nodeSelector={"disk": "ssd"})
    assert run_filters(tolerant, {}, info) == \
        (["node(s) didn't match Pod's node affinity/selector"], False)


def test_filters_resources_and_pod_count() -> None:
    info = node_info(config=NodeConfig(cpu="2", memory="1Gi", pods=2))
    assert run_filters(pod(), {"cpu": 1500}, info) == ([], True)
    info.add_pod({"cpu": 1500, "memory": 2 ** 29}, 1500, 2 ** 29)
    info.add_pod({}, 100, 100)
    reasons, resolvable = run_filters(pod(), {"cpu": 1000, "memory": 2 ** 30}, info)
    assert reasons == ["Too many pods", "Insufficient cpu", "Insufficient memory"]
    assert resolvable
    assert run_filters(pod(), {"example.com/gpu": 1}, node_info()) == \
        (["Insufficient example.com/gpu"], True)


def test_a_not_ready_node_counts_as_tainted() -> None:
    node = build_node("n0", 0, NodeConfig(), 0.0)
    for c in node["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "Unknown"
    info = NodeInfo("n0")
    info.set_node(node)
    assert run_filters(pod(), {}, info)[0] == \
        ["node(s) had untolerated taint {node.kubernetes.io/unreachable: }"]
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unreachable",
                                 "operator": "Exists"}])
    assert run_filters(tolerant, {}, info) == ([], True)


def test_scores_prefer_the_least_allocated_node() -> None:
    empty, busy = node_info("a"), node_info("b")
    busy.add_pod({"cpu": 16000}, 16000, 2 ** 30)
    assert score_node(empty, 100, 2 ** 20) > score_node(busy, 100, 2 ** 20)


def test_num_feasible_nodes_to_find() -> None:
    assert num_feasible_nodes_to_find(3) == 3
    assert num_feasible_nodes_to_find(99) == 99
    assert num_feasible_nodes_to_find(1000) == 420
    assert num_feasible_nodes_to_find(5000) == 500
    assert num_feasible_nodes_to_find(6000) == 300
    assert num_feasible_nodes_to_find(150) == 100


def test_fit_error_message_is_kube_schedulers() -> None:
    msg = fit_error_message(
        3, {"a": ["Insufficient cpu"], "b": ["Insufficient cpu", "Insufficient memory"],
            "c": ["node(s) were unschedulable"]},
        {"a": True, "b": True, "c": False})
    assert msg == ("0/3 nodes are available: 1 Insufficient memory, 1 node(s) were "
                   "unschedulable, 2 Insufficient cpu. preemption: 0/3 nodes are available: "
                   "1 Preemption is not helpful for scheduling, 2 No preemption victims "
                   "found for incoming pod.")
