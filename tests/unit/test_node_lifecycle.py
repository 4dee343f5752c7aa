"""Node lifecycle decisions on a fake clock: node health (grace periods, Lease renewals,
the Unknown conditions), zone states and their eviction rates, the condition taints, the
rate-limited tainting queue."""

from __future__ import annotations

from typing import Any, cast

from prometheus_client import REGISTRY

from pykcm.api.timestamps import format_time
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.client import Client
from pykcm.controllers.nodelifecycle import NodeLifecycleController
from pykcm.controllers.nodelifecycle.node_health import (
    STATE_FULL_DISRUPTION,
    STATE_NORMAL,
    STATE_PARTIAL_DISRUPTION,
    compute_zone_state,
    get_node_condition,
    no_schedule_taints,
    observe_node_health,
    zone_key,
)
from pykcm.controllers.nodelifecycle.rate_limited_queue import RateLimitedTimedQueue, TimedValue
from pykcm.informers.generic import GenericInformer, GroupVersionResource

T0 = 1_700_000_000.0
GRACE = 50.0
STARTUP = 60.0


def informer(group: str, resource: str) -> GenericInformer:
    inf = SharedIndexInformer(cast(Any, None))
    return GenericInformer(GroupVersionResource(group, "v1", resource), inf,
                           GenericLister(inf.get_indexer(), resource))


def node(name: str = "n1", ready: str | None = "True", heartbeat: float = T0,
         labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    conds = []
    if ready is not None:
        for ctype, status in (("MemoryPressure", "False"), ("DiskPressure", "False"),
                              ("PIDPressure", "False"), ("Ready", ready)):
            conds.append({"type": ctype, "status": status, "reason": "Kubelet",
                          "lastHeartbeatTime": format_time(heartbeat),
                          "lastTransitionTime": format_time(T0 - 100)})
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {},
                         "creationTimestamp": format_time(T0 - 1000)},
            "spec": spec, "status": {"conditions": conds}}


def observe(n: dict[str, Any], health: Any, now: float, lease: float | None = None) -> Any:
    return observe_node_health(n, health, lease, now, monitor_grace_period=GRACE,
                               startup_grace_period=STARTUP)


def test_a_node_silent_past_the_grace_period_turns_unknown() -> None:
    n = node()
    obs = observe(n, None, T0)
    assert obs.new_status is None and obs.health.probe_timestamp == T0
    assert obs.grace_period == GRACE
    # Exactly at the end of the grace period it is still trusted (upstream: After).
    assert observe(n, obs.health, T0 + GRACE).new_status is None
    late = observe(n, obs.health, T0 + GRACE + 1)
    assert late.new_status is not None
    for ctype in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
        c = get_node_condition(late.new_status, ctype)
        assert c is not None
        assert (c["status"], c["reason"], c["message"]) == (
            "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
        assert c["lastTransitionTime"] == format_time(T0 + GRACE + 1)
        assert c["lastHeartbeatTime"] == format_time(T0)  # kept: the kubelet's last word
    assert late.current_ready is not None and late.current_ready["status"] == "Unknown"
    assert late.observed_ready["status"] == "True"


def test_a_renewed_lease_keeps_a_node_alive_without_status_updates() -> None:
    n = node()
    h = observe(n, None, T0, lease=T0).health
    h = observe(n, h, T0 + 40, lease=T0 + 39).health
    assert h.probe_timestamp == T0 + 40
    assert observe(n, h, T0 + 40 + GRACE).new_status is None
    # The same renewTime again is no sign of life.
    h2 = observe(n, h, T0 + 80, lease=T0 + 39).health
    assert h2.probe_timestamp == T0 + 40
    assert observe(n, h2, T0 + 41 + GRACE).new_status is not None


def test_a_new_status_heartbeat_is_a_sign_of_life() -> None:
    h = observe(node(), None, T0).health
    h = observe(node(heartbeat=T0 + 30), h, T0 + 31).health
    assert h.probe_timestamp == T0 + 31
    assert observe(node(heartbeat=T0 + 30), h, T0 + 31 + GRACE).new_status is None


def test_a_node_that_never_posted_gets_the_startup_grace_period() -> None:
    n = node(ready=None)
    created = T0 - 1000
    obs = observe(n, None, created + STARTUP)
    assert obs.grace_period == STARTUP and obs.new_status is None
    obs = observe(n, obs.health, created + STARTUP + 1)
    assert obs.new_status is not None
    ready = get_node_condition(obs.new_status, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.")


def test_an_unknown_node_is_not_written_again() -> None:
    n = node(ready="Unknown")
    h = observe(n, None, T0).health
    assert observe(n, h, T0 + GRACE + 10).new_status is None


def test_zone_states() -> None:
    t, f = {"status": "True"}, {"status": "False"}
    assert compute_zone_state([t, t, f], 0.55) == (1, STATE_NORMAL)
    assert compute_zone_state([f, None], 0.55) == (2, STATE_FULL_DISRUPTION)
    # Partial disruption needs more than 2 not-ready nodes and the threshold's fraction.
    assert compute_zone_state([f, f, t], 0.55) == (2, STATE_NORMAL)
    assert compute_zone_state([f, f, f, t], 0.55) == (3, STATE_PARTIAL_DISRUPTION)
    assert compute_zone_state([f, f, f, t, t, t], 0.55) == (3, STATE_NORMAL)
    assert zone_key(node()) == ""
    assert zone_key(node(labels={"topology.kubernetes.io/region": "r",
                                 "topology.kubernetes.io/zone": "z"})) == "r:\x00:z"


def test_no_schedule_condition_taints_follow_the_conditions() -> None:
    n = node(ready="Unknown", unschedulable=True,
             taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                     {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
                     {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}])
    add, remove = no_schedule_taints(n)
    assert add == [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                   {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert remove == [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    assert no_schedule_taints(node()) == ([], [])


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


async def test_the_tainting_queue_goes_at_the_eviction_rate() -> None:
    clock = Clock()
    q = RateLimitedTimedQueue(0.1, clock)
    done: list[str] = []

    async def taint(v: TimedValue) -> tuple[bool, float]:
        done.append(v.value)
        return True, 0.0
    for name in ("a", "b", "c"):
        assert q.add(name, "")
    assert not q.add("a", "")  # unique
    await q.try_(taint)
    assert done == ["a"]  # burst 1
    clock.t += 5
    await q.try_(taint)
    assert done == ["a"]
    clock.t += 5
    await q.try_(taint)
    assert done == ["a", "b"]
    q.swap_limiter(0.0)  # a zone in partial disruption below the large-cluster size
    clock.t += 100
    await q.try_(taint)
    assert done == ["a", "b"] and "c" in q


async def test_a_failed_taint_is_retried_later() -> None:
    clock = Clock()
    q = RateLimitedTimedQueue(100.0, clock)
    calls: list[float] = []

    async def fail(v: TimedValue) -> tuple[bool, float]:
        calls.append(clock.t)
        return False, 1.0
    q.add("a", "")
    await q.try_(fail)
    clock.t += 0.5
    await q.try_(fail)
    assert calls == [T0]
    clock.t += 1
    await q.try_(fail)
    assert calls == [T0, T0 + 1.5]


async def test_zone_rates_and_the_full_disruption_mode() -> None:
    clock = Clock()
    ctl = NodeLifecycleController(
        client=cast(Client, None), node_informer=informer("", "nodes"),
        pod_informer=informer("", "pods"),
        lease_informer=informer("coordination.k8s.io", "leases"), recorder=None,
        large_cluster_threshold=3, clock=clock)
    t, f = {"status": "True"}, {"status": "False"}
    nodes = [node(f"n{i}") for i in range(4)]
    await ctl.handle_disruption({"": [t, t, t, t]}, nodes)
    assert ctl.zone_states == {"": STATE_NORMAL}
    assert ctl.zone_tainters[""].limiter.qps == 0.1
    # 3 of 4 not ready: partial disruption; 4 nodes > threshold 3: the secondary rate.
    await ctl.handle_disruption({"": [f, f, f, t]}, nodes)
    assert ctl.zone_states == {"": STATE_PARTIAL_DISRUPTION}
    sample = REGISTRY.get_sample_value
    assert sample("node_collector_zone_size", {"zone": ""}) == 4
    assert sample("node_collector_unhealthy_nodes_in_zone", {"zone": ""}) == 3
    assert sample("node_collector_zone_health", {"zone": ""}) == 25
    assert ctl.zone_tainters[""].limiter.qps == 0.01
    # Every zone fully disrupted: tainting stops.
    await ctl.handle_disruption({"": [f, f, f, f]}, nodes)
    assert ctl.zone_states == {"": STATE_FULL_DISRUPTION}
    assert ctl.zone_tainters[""].limiter.qps == 0.0
    # Back: the normal rate, every node's probe timestamp reset to now.
    for n in nodes:
        ctl.node_health[n["metadata"]["name"]] = observe(n, None, T0).health
    clock.t = T0 + 500
    await ctl.handle_disruption({"": [t, t, t, f]}, nodes)
    assert ctl.zone_states == {"": STATE_NORMAL}
    assert ctl.zone_tainters[""].limiter.qps == 0.1
    assert all(h.probe_timestamp == T0 + 500 for h in ctl.node_health.values())


async def test_a_processed_node_stays_in_the_set_until_removed() -> None:
    """upstream UniqueQueue: a node tainted successfully leaves the queue (len 0, the
    tainting loop may sleep) but adding it again is refused until Remove, so a tainted
    node is not re-queued by every monitor pass."""
    now = [T0]
    q = RateLimitedTimedQueue(1.0, lambda: now[0])
    assert q.add("n1", "uid")
    seen: list[str] = []

    async def taint(item: TimedValue) -> tuple[bool, float]:
        seen.append(item.value)
        return True, 0.0

    await q.try_(taint)
    assert seen == ["n1"] and len(q) == 0 and "n1" in q
    assert not q.add("n1", "uid")  # still in the set
    assert q.remove("n1") and "n1" not in q
    assert q.add("n1", "uid") and len(q) == 1
