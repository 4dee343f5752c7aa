"""Taint eviction scheduling on a FakeClock: which pods go at once, which after their
tolerationSeconds, which stay; an earlier schedule is kept; removed taints cancel."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, cast

from pykcm.api.clock import FakeClock
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.client import Client
from pykcm.controllers.tainteviction import (
    TaintEvictionController,
    get_matching_tolerations,
    get_min_toleration_time,
)
from pykcm.informers.generic import GenericInformer, GroupVersionResource

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


def informer(resource: str) -> GenericInformer:
    inf = SharedIndexInformer(cast(Any, None))
    return GenericInformer(GroupVersionResource("", "v1", resource), inf,
                           GenericLister(inf.get_indexer(), resource))


def pod(name: str, *tolerations: dict[str, Any], node: str = "n1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {"nodeName": node, "tolerations": list(tolerations)}}


def tol(seconds: int | None = None, key: str = UNREACHABLE["key"]) -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def node(*taints: dict[str, Any], name: str = "n1") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": list(taints)}}


class Env:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.pods = informer("pods")
        self.nodes = informer("nodes")
        self.fired: list[tuple[str, Awaitable[None]]] = []
        self.ctl = TaintEvictionController(
            client=cast(Client, None), pod_informer=self.pods, node_informer=self.nodes,
            recorder=None, clock=self.clock, spawn=lambda k, c: self.fired.append((k, c)))

    def add(self, *pods: dict[str, Any]) -> None:
        for p in pods:
            self.pods.informer.get_indexer().add(p)

    def evicted(self) -> list[str]:
        out = []
        for key, coro in self.fired:
            out.append(key)
            cast(Any, coro).close()  # the deletion itself is the integration tests'
        self.fired.clear()
        return out


def test_min_toleration_time() -> None:
    assert get_min_toleration_time([]) == 0
    assert get_min_toleration_time([tol()]) == -1
    assert get_min_toleration_time([tol(300), tol(30)]) == 30
    assert get_min_toleration_time([tol(300), tol(0)]) == 0
    assert get_min_toleration_time([tol(), tol(60)]) == 60
    ok, used = get_matching_tolerations([UNREACHABLE], [tol(key="other"), tol(5)])
    assert ok and used == [tol(5)]
    assert get_matching_tolerations([UNREACHABLE], [tol(key="other")]) == (False, [])


def test_pods_go_after_their_toleration_seconds() -> None:
    env = Env()
    env.add(pod("never"), pod("later", tol(300)), pod("forever", tol()),
            pod("elsewhere", node="n2"))
    env.ctl.node_updated(node(UNREACHABLE))
    assert env.evicted() == []  # due now: fires at the clock's next step
    env.clock.step(0)
    assert env.evicted() == ["ns/never"]
    env.clock.step(299)
    assert env.evicted() == []
    env.clock.step(1)
    assert env.evicted() == ["ns/later"]
    assert "ns/forever" not in env.ctl.work


def test_a_later_update_keeps_the_earlier_schedule() -> None:
    env = Env()
    env.add(pod("p", tol(100)))
    env.ctl.node_updated(node(UNREACHABLE))
    env.clock.step(60)
    env.ctl.node_updated(node(UNREACHABLE, {"key": "x", "effect": "NoSchedule"}))
    assert env.ctl.work["ns/p"].fire_at == env.ctl.work["ns/p"].created_at + 100
    env.clock.step(40)
    assert env.evicted() == ["ns/p"]


def test_removed_taints_cancel_the_eviction() -> None:
    env = Env()
    env.add(pod("p", tol(100)))
    env.ctl.node_updated(node(UNREACHABLE))
    assert "ns/p" in env.ctl.work
    env.ctl.node_updated(node())
    assert env.ctl.work == {} and env.ctl.tainted_nodes == {}
    env.clock.step(200)
    assert env.evicted() == []


def test_a_pod_arriving_on_a_tainted_node_is_scheduled() -> None:
    env = Env()
    env.ctl.node_updated(node(UNREACHABLE))
    env.ctl.pod_updated(pod("p", tol(10)))
    env.clock.step(10)
    assert env.evicted() == ["ns/p"]
    # A pod deleted before its time is not evicted.
    env.ctl.pod_updated(pod("q", tol(10)))
    env.ctl.pod_deleted(pod("q"))
    env.clock.step(10)
    assert env.evicted() == []
