"""Pod GC and TTL controller logic without an API server: which terminated pods go first,
the orphan quarantine, the TTL steps as nodes come and go."""

from __future__ import annotations

from typing import Any

from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.store import new_indexer
from pykcm.client.errors import NotFound
from pykcm.controllers.podgc import PodGCController
from pykcm.controllers.podgc.gc_controller import eviction_and_creation_key, is_pod_terminated
from pykcm.controllers.ttl import TTLController


class FakeInformer:
    """What the controllers use of a GenericInformer: an indexer, a lister, handlers."""

    def __init__(self) -> None:
        self.indexer = new_indexer(meta_namespace_key)
        self.informer = self
        self.lister = self
        self.handlers: list[Any] = []

    def get_indexer(self) -> Any:
        return self.indexer

    def add_event_handler(self, handler: Any, resync: float | None = None) -> Any:
        self.handlers.append(handler)
        return self

    def has_synced(self) -> bool:
        return True

    def list(self) -> list[Any]:
        return list(self.indexer.list())


class FakeClient:
    def __init__(self, nodes: set[str]) -> None:
        self.nodes = nodes
        self.calls: list[tuple[str, str]] = []

    async def get(self, resource: str, name: str, namespace: str | None = None) -> Any:
        self.calls.append(("get", name))
        if name not in self.nodes:
            raise NotFound({"kind": "Status", "code": 404, "reason": "NotFound"})
        return {"metadata": {"name": name}}

    async def patch(self, resource: str, name: str, body: Any, kind: str,
                    namespace: str | None = None, **kw: Any) -> Any:
        self.calls.append(("patch", name))
        return body

    async def delete(self, resource: str, name: str, namespace: str | None = None,
                     **kw: Any) -> Any:
        self.calls.append(("delete", name))
        return {}


def pod(name: str, phase: str, ts: str, *, node: str = "", reason: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": ts},
            "spec": {"nodeName": node}, "status": {"phase": phase, "reason": reason}}


def test_terminated_pods_order() -> None:
    assert is_pod_terminated(pod("a", "Succeeded", "")) and is_pod_terminated(pod("a", "", ""))
    assert not is_pod_terminated(pod("a", "Unknown", ""))
    pods = [pod("new", "Failed", "2024-01-01T00:00:09Z"),
            pod("old", "Succeeded", "2024-01-01T00:00:01Z"),
            pod("evicted", "Failed", "2024-01-01T00:00:05Z", reason="Evicted"),
            pod("b-same", "Failed", "2024-01-01T00:00:01Z")]
    assert [p["metadata"]["name"] for p in sorted(pods, key=eviction_and_creation_key)] == \
        ["evicted", "b-same", "old", "new"]


async def test_orphans_wait_for_the_quarantine_and_an_uncached_check() -> None:
    now = [1000.0]
    pods, nodes = FakeInformer(), FakeInformer()
    client = FakeClient(nodes={"recreated"})
    gc = PodGCController(client=client, pod_informer=pods,  # type: ignore[arg-type]
                         node_informer=nodes,  # type: ignore[arg-type]
                         terminated_pod_threshold=0, clock=lambda: now[0])
    pods.indexer.add(pod("p1", "Running", "", node="gone"))
    pods.indexer.add(pod("p2", "Running", "", node="recreated"))
    await gc.gc()
    assert client.calls == []  # quarantined
    now[0] += 41
    await gc.gc()
    # "recreated" exists again for a GET (the cache is behind): its pod stays
    assert sorted(client.calls) == [("delete", "p1"), ("get", "gone"), ("get", "recreated"),
                                    ("patch", "p1")]


def test_ttl_steps_up_and_down_with_the_node_count() -> None:
    nodes = FakeInformer()
    ttl = TTLController(node_informer=nodes, client=None)  # type: ignore[arg-type]
    seen = []
    for i in range(1, 502):
        ttl.add_node({"metadata": {"name": f"n{i}"}})
        if i in (100, 101, 500, 501):
            seen.append((i, ttl.desired_ttl_seconds))
    assert seen == [(100, 0), (101, 15), (500, 15), (501, 30)]
    for i in range(501, 440, -1):
        ttl.delete_node({"metadata": {"name": f"n{i}"}})
    assert ttl.node_count == 440 and ttl.desired_ttl_seconds == 15  # below 450: back to 15
    for i in range(440, 90, -1):
        ttl.delete_node({"metadata": {"name": f"n{i}"}})
    assert ttl.desired_ttl_seconds == 15  # 90 is still in the 15 s range
    ttl.delete_node({"metadata": {"name": "n90"}})
    assert ttl.desired_ttl_seconds == 0
