"""Unit tests of the quota evaluation library (pykcm.api.quota) and Quantity's Go forms.

Expected strings are what the real kube-apiserver and kube-controller-manager print
(checked in tests/integration/test_resourcequota_controller.py against kube-apiserver).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.quantity import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, Quantity
from pykcm.api.quota import (
    Attributes,
    add,
    calculate_usage,
    from_wire,
    less_than_or_equal,
    new_registry,
    pretty_print,
    subtract_non_negative,
    to_wire,
)
from pykcm.api.quota.pods import PodEvaluator
from pykcm.api.quota.services import ServiceEvaluator


@pytest.mark.parametrize(("text", "canonical", "fmt"), [
    ("1", "1", DECIMAL_SI), ("1000m", "1", DECIMAL_SI), ("1.5", "1500m", DECIMAL_SI),
    ("0.1", "100m", DECIMAL_SI), ("128Mi", "128Mi", BINARY_SI), ("1.5Gi", "1536Mi", BINARY_SI),
    ("2048Ki", "2Mi", BINARY_SI), ("1000Ki", "1000Ki", BINARY_SI), ("512", "512", DECIMAL_SI),
    ("100M", "100M", DECIMAL_SI), ("1e3", "1e3", DECIMAL_EXPONENT), ("12e6", "12e6", DECIMAL_EXPONENT),
    ("0", "0", DECIMAL_SI), ("1E", "1E", DECIMAL_SI), ("0.1n", "1n", DECIMAL_SI), (3, "3", DECIMAL_SI),
])
def test_quantity_formats_as_go(text: Any, canonical: str, fmt: str) -> None:
    q = Quantity.parse(text)
    assert q is not None
    assert (str(q), q.format) == (canonical, fmt)


def test_a_binary_quantity_below_1024_or_fractional_prints_decimal() -> None:
    assert str(Quantity(Decimal(1000), BINARY_SI)) == "1k"
    assert str(Quantity(Decimal("1536.5"), BINARY_SI)) == "1536500m"


def test_a_zero_sum_takes_the_next_addends_format() -> None:
    zero = Quantity(Decimal(0), DECIMAL_SI)
    assert str(zero + Quantity.of("128Mi")) == "128Mi"
    assert str(Quantity.of("1") + Quantity.of("500m")) == "1500m"
    assert str(Quantity.of("100M") + Quantity.of("28Mi")) == "129360128"


_quantities = st.builds(lambda n, s: Quantity.of(f"{n}{s}"), st.integers(0, 10**6),
                        st.sampled_from(["", "m", "k", "Mi", "Gi", "M"]))


@given(st.lists(st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), _quantities),
                max_size=6))
def test_usage_sums_are_exact_and_order_free(lists: list[dict[str, Quantity]]) -> None:
    total: dict[str, Quantity] = {}
    for rl in lists:
        total = add(total, rl)
    backwards: dict[str, Quantity] = {}
    for rl in reversed(lists):
        backwards = add(backwards, rl)
    for k in total:
        assert total[k].value == backwards[k].value == sum(rl[k].value for rl in lists if k in rl)
        # the printed form reads back as the same value
        assert Quantity.of(str(total[k])).value == total[k].value


@given(_quantities, _quantities)
def test_subtract_non_negative_floors_at_zero(a: Quantity, b: Quantity) -> None:
    d = subtract_non_negative({"x": a}, {"x": b, "y": b})
    assert d["x"].value == max(a.value - b.value, 0)
    assert d["y"].value == 0


def pod(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": res}], **spec}}


def test_pod_usage_counts_requests_limits_and_init_peaks() -> None:
    p = pod({"cpu": "250m", "memory": "64Mi"}, {"cpu": "500m"})
    p["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": "1"}}},
        {"name": "sidecar", "restartPolicy": "Always",
         "resources": {"requests": {"memory": "64Mi"}}}]
    p["spec"]["overhead"] = {"cpu": "10m"}
    assert to_wire(PodEvaluator().usage(p)) == {
        "count/pods": "1", "pods": "1", "cpu": "1010m", "requests.cpu": "1010m",
        "memory": "128Mi", "requests.memory": "128Mi", "limits.cpu": "510m"}


def test_a_terminal_pod_counts_only_as_an_object() -> None:
    p = pod({"cpu": "1"})
    p["status"] = {"phase": "Succeeded"}
    assert to_wire(PodEvaluator().usage(p)) == {"count/pods": "1"}
    gone = pod({"cpu": "1"})
    gone["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z",
                            deletionGracePeriodSeconds=30)
    assert to_wire(PodEvaluator(clock=lambda: 4102444800.0).usage(gone)) == {"count/pods": "1"}


def test_pod_constraints_name_the_missing_resources_per_container() -> None:
    p = pod({"cpu": "1"})
    p["spec"]["containers"].append({"name": "b"})
    msg = PodEvaluator().constraints(["limits.cpu", "requests.cpu", "pods"], p)
    assert msg == "must specify limits.cpu for: b,c; requests.cpu for: b"


@pytest.mark.parametrize(("scope", "pod_kwargs", "matches"), [
    ({"scopeName": "BestEffort", "operator": "Exists"}, {}, True),
    ({"scopeName": "NotBestEffort", "operator": "Exists"}, {"requests": {"cpu": "1"}}, True),
    ({"scopeName": "Terminating", "operator": "Exists"}, {"activeDeadlineSeconds": 5}, True),
    ({"scopeName": "NotTerminating", "operator": "Exists"}, {"activeDeadlineSeconds": 5}, False),
    ({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
     {"priorityClassName": "high"}, True),
    ({"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}, {}, True),
    ({"scopeName": "PriorityClass", "operator": "Exists"}, {}, False),
    ({"scopeName": "CrossNamespacePodAffinity", "operator": "Exists"},
     {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
         {"topologyKey": "k", "namespaceSelector": {}}]}}}, True),
])
def test_pod_scopes(scope: dict[str, Any], pod_kwargs: dict[str, Any], matches: bool) -> None:
    kw = dict(pod_kwargs)
    p = pod(kw.pop("requests", None), **kw)
    assert PodEvaluator().matches_scope(scope, p) is matches


def test_service_usage_counts_node_ports_and_load_balancers() -> None:
    ev = ServiceEvaluator()
    lb = {"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": False,
                   "ports": [{"port": 1, "nodePort": 30001}, {"port": 2}]}}
    assert to_wire(ev.usage(lb)) == {"count/services": "1", "services": "1",
                                     "services.loadbalancers": "1", "services.nodeports": "1"}
    assert ev.handles(Attributes("UPDATE", "", "services", "", "ns", "s", lb, lb))
    assert not ev.handles(Attributes("UPDATE", "", "services", "status", "ns", "s", lb, lb))


def test_calculate_usage_sums_what_the_quota_tracks_and_adds_count_evaluators() -> None:
    objects: dict[tuple[str, str], list[dict[str, Any]]] = {
        ("", "pods"): [pod({"cpu": "1"}), pod({"cpu": "500m"}, activeDeadlineSeconds=1)],
        ("", "persistentvolumeclaims"): [{"spec": {"storageClassName": "fast", "resources": {
            "requests": {"storage": "1.5Gi"}}}}],
        ("apps", "deployments"): [{}, {}],
    }
    reg = new_registry(lambda g, r: lambda ns: objects.get((g, r), []))
    reg.get_or_add("apps", "deployments")
    hard = from_wire({"requests.cpu": "2", "pods": "9", "requests.storage": "10Gi",
                      "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                      "count/deployments.apps": "5", "unknown": "1"})
    assert to_wire(calculate_usage("ns", [], hard, reg, None)) == {
        "requests.cpu": "1500m", "pods": "2", "requests.storage": "1536Mi",
        "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "count/deployments.apps": "2"}
    assert to_wire(calculate_usage("ns", ["NotTerminating"], hard, reg, None))["pods"] == "1"


def test_exceeded_quota_message_parts() -> None:
    ok, exceeded = less_than_or_equal(from_wire({"requests.cpu": "1200m", "pods": "2"}),
                                      from_wire({"requests.cpu": "1", "pods": "2"}))
    assert (ok, exceeded) == (False, ["requests.cpu"])
    assert pretty_print(from_wire({"pods": "1", "limits.cpu": "2"})) == "limits.cpu=2,pods=1"
