"""The EndpointSlice reconciler, the mirroring reconciler and their shared utilities, with a
recording fake client: slice packing and reuse, placeholders, port mappings, hints,
pod events → Services, the tracker of written slices, trigger times."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from pykcm.client.errors import NotFound
from pykcm.controllers.endpointslice.reconciler import Reconciler
from pykcm.controllers.endpointslice.util import (
    EndpointSliceTracker,
    TriggerTimeTracker,
    services_to_update,
)
from pykcm.controllers.endpointslicemirroring import EndpointSliceMirroringController

CONTROLLER = "endpointslice-controller.k8s.io"


class FakeClient:
    """Records writes; answers with uid, generation and resourceVersion filled in."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.objects: dict[str, dict[str, Any]] = {}
        self._n = itertools.count(1)

    async def create(self, resource: Any, body: Mapping[str, Any], namespace: str) -> Any:
        obj = copy.deepcopy(dict(body))
        n = next(self._n)
        meta = obj["metadata"]
        meta.setdefault("name", f"{meta.get('generateName', 'x-')}{n:05d}")
        meta.update(uid=f"uid-{n}", generation=1, resourceVersion=str(n))
        self.objects[meta["name"]] = obj
        self.calls.append(("create", meta["name"]))
        return copy.deepcopy(obj)

    async def update(self, resource: Any, body: Mapping[str, Any], namespace: str) -> Any:
        obj = copy.deepcopy(dict(body))
        meta = obj["metadata"]
        old = self.objects.get(meta["name"], {}).get("metadata", {})
        meta.update(uid=old.get("uid", "uid-?"), generation=old.get("generation", 0) + 1)
        self.objects[meta["name"]] = obj
        self.calls.append(("update", meta["name"]))
        return copy.deepcopy(obj)

    async def delete(self, resource: Any, name: str, namespace: str) -> None:
        self.objects.pop(name, None)
        self.calls.append(("delete", name))


class Nodes:
    def __init__(self, **zones: str) -> None:
        self.zones = zones

    def get(self, name: str) -> dict[str, Any]:
        if name not in self.zones:
            raise NotFound({"code": 404, "reason": "NotFound", "message": name})
        labels = {"topology.kubernetes.io/zone": self.zones[name]} if self.zones[name] else {}
        return {"metadata": {"name": name, "labels": labels}}


def pod(name: str, ip: str, *, ready: bool = True, node: str = "n1", http: int = 8080
        ) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"p-{name}",
                         "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "ports": [{"name": "http", "containerPort": http}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def svc(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid",
                         "labels": {"tier": "front"}},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.9",
                     "ipFamilies": ["IPv4"],
                     "ports": [{"name": "http", "port": 80, "targetPort": "http",
                                "protocol": "TCP"}], **spec}}


def reconciler(client: FakeClient, max_per_slice: int = 3, **zones: str) -> Reconciler:
    return Reconciler(client=client,  # type: ignore[arg-type]
                      node_lister=Nodes(**(zones or {"n1": "z1", "n2": "z2"})),  # type: ignore[arg-type]
                      max_endpoints_per_slice=max_per_slice, tracker=EndpointSliceTracker(),
                      controller_name=CONTROLLER)


def ips(s: Mapping[str, Any]) -> list[str]:
    return [e["addresses"][0] for e in s.get("endpoints") or []]


T = datetime(2026, 1, 1, tzinfo=UTC)


async def test_packs_new_slices_up_to_the_maximum() -> None:
    client = FakeClient()
    pods = [pod(f"p{i}", f"10.0.0.{i}") for i in range(7)]
    await reconciler(client).reconcile(svc(), pods, [], T)
    slices = list(client.objects.values())
    assert [c for c, _ in client.calls] == ["create"] * 3
    assert sorted(len(s["endpoints"]) for s in slices) == [1, 3, 3]
    s = slices[0]
    assert s["metadata"]["generateName"] == "web-"
    assert s["metadata"]["labels"] == {"tier": "front", "kubernetes.io/service-name": "web",
                                       "endpointslice.kubernetes.io/managed-by": CONTROLLER}
    assert s["metadata"]["ownerReferences"] == [{
        "apiVersion": "v1", "kind": "Service", "name": "web", "uid": "svc-uid",
        "controller": True, "blockOwnerDeletion": True}]
    assert s["metadata"]["annotations"] == {
        "endpoints.kubernetes.io/last-change-trigger-time": "2026-01-01T00:00:00Z"}
    assert s["addressType"] == "IPv4"
    assert s["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    assert s["endpoints"][0] == {
        "addresses": ["10.0.0.0"], "conditions": {"ready": True, "serving": True,
                                                  "terminating": False},
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p0", "uid": "p-p0"},
        "nodeName": "n1", "zone": "z1"}


async def test_changes_touch_only_the_slices_they_concern() -> None:
    client = FakeClient()
    r = reconciler(client)
    pods = [pod(f"p{i}", f"10.0.0.{i}") for i in range(6)]
    await r.reconcile(svc(), pods, [], T)
    existing = [copy.deepcopy(s) for s in client.objects.values()]
    client.calls.clear()
    # unchanged: nothing written
    await r.reconcile(svc(), pods, existing, None)
    assert client.calls == []
    # one pod not ready, one gone: only the slice holding them is rewritten
    pods[0] = pod("p0", "10.0.0.0", ready=False)
    del pods[1]
    await r.reconcile(svc(), pods, existing, None)
    [(verb, name)] = client.calls
    assert verb == "update"
    changed = client.objects[name]
    assert "10.0.0.1" not in ips(changed)
    assert [e["conditions"] for e in changed["endpoints"] if e["addresses"] == ["10.0.0.0"]] == [
        {"ready": False, "serving": False, "terminating": False}]
    # no trigger time this sync: the annotation goes
    assert "annotations" not in changed["metadata"]


async def test_new_endpoints_fill_updated_slices_then_an_unchanged_one() -> None:
    client = FakeClient()
    r = reconciler(client, max_per_slice=4)
    await r.reconcile(svc(), [pod(f"p{i}", f"10.0.0.{i}") for i in range(6)], [], T)
    existing = sorted((copy.deepcopy(s) for s in client.objects.values()),
                      key=lambda s: -len(s["endpoints"]))
    assert [len(s["endpoints"]) for s in existing] == [4, 2]
    client.calls.clear()
    # the 2-endpoint slice is unchanged; two new pods fit into it exactly
    pods = [pod(f"p{i}", f"10.0.0.{i}") for i in range(8)]
    await r.reconcile(svc(), pods, existing, None)
    assert client.calls == [("update", existing[1]["metadata"]["name"])]
    assert len(client.objects[existing[1]["metadata"]["name"]]["endpoints"]) == 4


async def test_placeholder_when_nothing_is_selected_and_kept() -> None:
    client = FakeClient()
    r = reconciler(client)
    await r.reconcile(svc(), [], [], T)
    [placeholder] = client.objects.values()
    assert placeholder["endpoints"] == [] and placeholder["ports"] == []
    client.calls.clear()
    await r.reconcile(svc(), [], [copy.deepcopy(placeholder)], T)
    assert client.calls == []
    # pods arrive: the placeholder is not owned by this port mapping; a create becomes
    # the update of the slice about to be deleted
    await r.reconcile(svc(), [pod("a", "10.0.0.1")], [copy.deepcopy(placeholder)], T)
    assert client.calls == [("update", placeholder["metadata"]["name"])]
    assert ips(client.objects[placeholder["metadata"]["name"]]) == ["10.0.0.1"]


async def test_port_mappings_split_slices_and_hints_follow_traffic_distribution() -> None:
    client = FakeClient()
    r = reconciler(client, 100)
    pods = [pod("a", "10.0.0.1", node="n1"), pod("b", "10.0.0.2", node="n2", http=9000),
            pod("c", "10.0.0.3", node="n2", ready=False)]
    await r.reconcile(svc(trafficDistribution="PreferSameNode"), pods, [], T)
    by_port = {s["ports"][0]["port"]: s for s in client.objects.values()}
    assert set(by_port) == {8080, 9000}
    assert by_port[9000]["endpoints"][0]["hints"] == {"forZones": [{"name": "z2"}],
                                                      "forNodes": [{"name": "n2"}]}
    not_ready = next(e for e in by_port[8080]["endpoints"] if e["addresses"] == ["10.0.0.3"])
    assert "hints" not in not_ready  # only ready endpoints get hints
    existing = [copy.deepcopy(s) for s in client.objects.values()]
    client.calls.clear()
    await r.reconcile(svc(), pods, existing, None)  # no trafficDistribution: hints removed
    assert sorted(v for v, _ in client.calls) == ["update", "update"]
    assert all("hints" not in e for s in client.objects.values() for e in s["endpoints"])


async def test_a_pod_on_a_missing_node_is_skipped_and_retried() -> None:
    client = FakeClient()
    r = reconciler(client, n1="z1")
    with pytest.raises(RuntimeError, match="Node gone Not Found"):
        await r.reconcile(svc(), [pod("a", "10.0.0.1"), pod("b", "10.0.0.2", node="gone")],
                          [], T)
    assert [ips(s) for s in client.objects.values()] == [["10.0.0.1"]]
    # unless the Service publishes not-ready addresses
    client = FakeClient()
    await reconciler(client, n1="z1").reconcile(
        svc(publishNotReadyAddresses=True), [pod("b", "10.0.0.2", node="gone")], [], T)
    [s] = client.objects.values()
    assert ips(s) == ["10.0.0.2"] and "zone" not in s["endpoints"][0]


def test_pod_events_concern_the_services_that_select_them() -> None:
    services = [svc(), {"metadata": {"name": "all", "namespace": "ns"},
                        "spec": {"selector": {"tier": "x"}}},
                {"metadata": {"name": "none", "namespace": "ns"}, "spec": {}}]
    p = pod("a", "10.0.0.1")
    assert services_to_update(services, None, p) == {"ns/web"}
    assert services_to_update(services, p, None) == {"ns/web"}
    same_rv = copy.deepcopy(p)
    assert services_to_update(services, p, same_rv) == set()
    q = copy.deepcopy(p)
    q["metadata"]["resourceVersion"] = "2"
    q["metadata"]["annotations"] = {"x": "y"}  # nothing endpoints care about
    assert services_to_update(services, p, q) == set()
    q["metadata"]["labels"] = {"tier": "x"}  # label change alone: both sides' symmetric diff
    assert services_to_update(services, p, q) == {"ns/web", "ns/all"}
    r = copy.deepcopy(q)
    r["metadata"]["resourceVersion"] = "3"
    r["status"]["conditions"][0]["status"] = "False"
    assert services_to_update(services, q, r) == {"ns/all"}


def test_tracker_detects_a_stale_cache() -> None:
    t = EndpointSliceTracker()
    s = {"metadata": {"namespace": "ns", "name": "web-1", "uid": "u1", "generation": 2,
                      "labels": {"kubernetes.io/service-name": "web"}}}
    assert t.should_sync(s) and not t.stale_slices("ns", "web", [])
    t.update(s)
    assert not t.should_sync(s) and t.has(s)
    assert t.stale_slices("ns", "web", [])  # the cache misses our slice
    old = copy.deepcopy(s)
    old["metadata"]["generation"] = 1
    assert t.stale_slices("ns", "web", [old]) and not t.stale_slices("ns", "web", [s])
    t.expect_deletion(s)
    assert t.stale_slices("ns", "web", [s]) and not t.stale_slices("ns", "web", [])
    assert t.handle_deletion(s)  # expected: no resync


def test_trigger_time_is_creation_then_earliest_new_readiness() -> None:
    t = TriggerTimeTracker()
    service = {"metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    p1 = pod("a", "10.0.0.1")
    assert t.compute("ns", service, [p1]) == datetime(2026, 1, 1, tzinfo=UTC)
    assert t.compute("ns", service, [p1]) is None  # nothing changed since
    p2 = copy.deepcopy(p1)
    p2["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:05:00Z"
    assert t.compute("ns", service, [p2]) == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


async def test_mirroring_splits_families_and_caps_subsets() -> None:
    client = FakeClient()
    events: list[tuple[str, str]] = []

    class Recorder:
        def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
            events.append((reason, message))

    class Informer:
        lister = None
        informer = type("I", (), {"add_event_handler": lambda *a, **k: type(
            "R", (), {"has_synced": lambda self: True})()})()

    ctl = EndpointSliceMirroringController(
        client=client, endpoints_informer=Informer(), endpointslice_informer=Informer(),  # type: ignore[arg-type]
        service_informer=Informer(), max_endpoints_per_subset=3,  # type: ignore[arg-type]
        recorder=Recorder())  # type: ignore[arg-type]
    endpoints = {"metadata": {"name": "custom", "namespace": "ns", "uid": "ep-uid",
                              "labels": {"team": "x"}},
                 "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"},
                                            {"ip": "10.0.0.2"}],
                              "notReadyAddresses": [{"ip": "10.0.0.3"}],
                              "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]}
    await ctl.reconcile(endpoints, [])
    by_type = {s["addressType"]: s for s in client.objects.values()}
    assert sorted(by_type) == ["IPv4", "IPv6"]
    assert [len(by_type[t]["endpoints"]) for t in ("IPv4", "IPv6")] == [2, 1]
    assert by_type["IPv6"]["endpoints"] == [{"addresses": ["fd00::1"],
                                             "conditions": {"ready": True}}]
    assert by_type["IPv4"]["metadata"]["labels"] == {
        "team": "x", "kubernetes.io/service-name": "custom",
        "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}
    assert by_type["IPv4"]["ports"] == [{"name": "http", "port": 80, "protocol": "TCP"}]
    # the not-ready address did not fit
    assert events == [("TooManyAddressesToMirror", ("A max of 3 addresses can be mirrored to "
                       "EndpointSlices per Endpoints subset. 1 addresses were skipped"))]
    client.calls.clear()
    await ctl.reconcile(endpoints, [copy.deepcopy(s) for s in client.objects.values()])
    assert client.calls == []  # mirrored already: nothing to write


def test_terminating_and_published_not_ready_conditions() -> None:
    from pykcm.controllers.endpointslice.reconciler import pod_to_endpoint

    p = pod("a", "10.0.0.1")
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    node = Nodes(n1="z1").get("n1")
    assert pod_to_endpoint(p, node, svc(), "IPv4")["conditions"] == {
        "ready": False, "serving": True, "terminating": True}
    assert pod_to_endpoint(p, node, svc(publishNotReadyAddresses=True), "IPv4")[
        "conditions"] == {"ready": True, "serving": True, "terminating": True}
    assert pod_to_endpoint(p, node, svc(), "IPv6")["addresses"] == []


async def test_cached_slices_are_never_edited() -> None:
    """The reconciler edits copies (_copy_slice): the informer's objects stay as they were
    when a slice is refilled, relabelled, loses its hints or gets a trigger time."""
    client = FakeClient()
    r = reconciler(client, max_per_slice=4)
    pods = [pod(f"p{i}", f"10.0.0.{i}", node="n1" if i % 2 else "n2") for i in range(6)]
    await r.reconcile(svc(trafficDistribution="PreferSameNode"), pods, [], T)
    cached = [copy.deepcopy(s) for s in client.objects.values()]
    snapshot = copy.deepcopy(cached)
    client.calls.clear()
    relabelled = svc()
    relabelled["metadata"]["labels"] = {"tier": "back"}
    more = [*pods, pod("p6", "10.0.0.6"), pod("p7", "10.0.0.7")]
    await r.reconcile(relabelled, more, cached, T)  # hints go, labels change, slices fill
    assert len(client.calls) == 2
    assert all(s["metadata"]["labels"]["tier"] == "back" for s in client.objects.values())
    assert all("hints" not in e for s in client.objects.values() for e in s["endpoints"])
    assert cached == snapshot
