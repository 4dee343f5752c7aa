"""pykcm.api.endpoints and the Endpoints controller's pure logic: repacking, upstream's
hash orderings (checked against output of the real kube-controller-manager), pod rules,
subsets of a Service, truncation."""

from __future__ import annotations

import copy
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.api.endpoints import (
    PortNotFound,
    find_port,
    fnv128a,
    parse_ip_sloppy,
    repack_subsets,
    should_pod_be_in_endpoints,
    sort_slice_ports,
    spew_dump,
)
from pykcm.api.timestamps import format_rfc3339_nano
from pykcm.controllers.endpoint import MAX_CAPACITY, compute_subsets, truncate_endpoints

GOLDEN = json.loads((Path(__file__).parent / "data" / "upstream_endpoints_order.json")
                    .read_text())


def test_fnv128a_vectors() -> None:
    assert fnv128a(b"").hex() == "6c62272e07bb014262b821756295c58d"
    assert fnv128a(b"a").hex() == "d228cb696f1a8caf78912b704e4a8964"


def test_spew_dump_is_gos_hash_input() -> None:
    assert spew_dump("v1.EndpointPort", {"name": "http", "port": 80, "protocol": "TCP"}) == \
        "(v1.EndpointPort){Name:(string)http Port:(int32)80 Protocol:(v1.Protocol)TCP " \
        "AppProtocol:(*string)<nil>}"
    assert spew_dump("discovery.EndpointPort", {"name": "", "port": 53, "protocol": "UDP",
                                                "appProtocol": "dns"}) == \
        "(v1.EndpointPort){Name:(*string) Protocol:(*v1.Protocol)UDP Port:(*int32)53 " \
        "AppProtocol:(*string)dns}"
    subset = spew_dump("v1.EndpointSubset", {"notReadyAddresses": [
        {"ip": "10.0.0.1", "nodeName": "n", "targetRef": {"kind": "Pod", "uid": "u"}}]})
    assert subset.startswith("(v1.EndpointSubset){Addresses:([]v1.EndpointAddress)<nil> "
                             "NotReadyAddresses:([]v1.EndpointAddress)[{IP:(string)10.0.0.1 "
                             "Hostname:(string) NodeName:(*string)n TargetRef:"
                             "(*v1.ObjectReference){Kind:(string)Pod Namespace:(string) ")
    assert subset.endswith("Ports:([]v1.EndpointPort)<nil>}")


def test_orders_are_kube_controller_managers() -> None:
    """The real manager's output, shuffled, comes back in the real manager's order."""
    rng = random.Random(7)
    for _ in range(5):
        shuffled = copy.deepcopy(GOLDEN["subsets"])
        rng.shuffle(shuffled)
        for s in shuffled:
            for key in ("addresses", "notReadyAddresses", "ports"):
                rng.shuffle(s.get(key, []))
        assert repack_subsets(shuffled) == GOLDEN["subsets"]
    for ports in GOLDEN["slice_ports"]:
        assert sort_slice_ports(rng.sample(ports, len(ports))) == ports


def addr(ip: str, uid: str) -> dict[str, Any]:
    return {"ip": ip, "targetRef": {"kind": "Pod", "name": uid, "uid": uid}}


def test_repack_groups_by_ports_not_ready_wins_and_dedupes() -> None:
    http, metrics = {"name": "http", "port": 80, "protocol": "TCP"}, \
        {"name": "m", "port": 90, "protocol": "TCP"}
    out = repack_subsets([
        {"addresses": [addr("10.0.0.2", "b")], "ports": [http]},
        {"addresses": [addr("10.0.0.1", "a")], "ports": [http, metrics]},
        {"notReadyAddresses": [addr("10.0.0.1", "a")], "ports": [http]},  # a: not ready wins
        {"addresses": [addr("10.0.0.2", "b")], "ports": [metrics]},
        {"addresses": [addr("10.0.0.3", "c")]},  # no ports: a subset of its own
    ])
    by_ports = {tuple(p["name"] for p in s.get("ports") or []): s for s in out}
    assert set(by_ports) == {("http",), ("m",), ()}
    assert [a["ip"] for a in by_ports[("http",)]["addresses"]] == ["10.0.0.2"]
    assert [a["ip"] for a in by_ports[("http",)]["notReadyAddresses"]] == ["10.0.0.1"]
    assert [a["ip"] for a in by_ports[("m",)]["addresses"]] == ["10.0.0.1", "10.0.0.2"]
    assert "ports" not in by_ports[()] and len(out) == 3


def test_parse_ip_sloppy_and_go_time() -> None:
    assert parse_ip_sloppy("010.001.0.1") == ("10.1.0.1", False)
    assert parse_ip_sloppy("FD00:0:0::1") == ("fd00::1", True)
    assert parse_ip_sloppy("::ffff:10.0.0.1") == ("10.0.0.1", False)
    assert parse_ip_sloppy("10.0.0.256") is None and parse_ip_sloppy("nope") is None
    assert format_rfc3339_nano(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"
    assert format_rfc3339_nano(datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)) == \
        "2026-01-02T03:04:05.12Z"


def pod(name: str, ip: str | None = "10.0.0.1", *, ready: bool = True, phase: str = "Running",
        ports: list[dict[str, Any]] | None = None, deleting: bool = False,
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    if ip:
        status.update(podIP=ip, podIPs=[{"ip": ip}])
    return {"metadata": meta, "spec": {"nodeName": "node-1", "containers": [
        {"name": "c", "ports": ports or [{"name": "http", "containerPort": 8080}]}], **spec},
        "status": status}


def svc(ports: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10",
                     "ipFamilies": ["IPv4"],
                     "ports": ports if ports is not None else [
                         {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
                     **spec}}


def test_pod_rules_and_find_port() -> None:
    assert not should_pod_be_in_endpoints(pod("a", phase="Succeeded"), True)
    assert not should_pod_be_in_endpoints(pod("a", ip=None), True)
    assert should_pod_be_in_endpoints(pod("a", deleting=True), True)
    assert not should_pod_be_in_endpoints(pod("a", deleting=True), False)
    sidecar = {"name": "s", "restartPolicy": "Always",
               "ports": [{"name": "side", "containerPort": 7000}]}
    p = pod("a", initContainers=[sidecar])
    assert find_port(p, {"targetPort": "side"}) == 7000
    assert find_port(p, {"targetPort": 81}) == 81
    with pytest.raises(PortNotFound):
        find_port(p, {"targetPort": "http", "protocol": "UDP"})


def test_subsets_of_a_service() -> None:
    pods = [pod("a", "10.0.0.1"), pod("b", "10.0.0.2", ready=False),
            pod("c", "10.0.0.3", deleting=True),  # terminating: left out
            pod("d", "10.0.0.4", ports=[{"name": "other", "containerPort": 1}]),  # no port
            pod("e", "10.0.0.5", hostname="e", subdomain="web")]
    subsets, ready, not_ready = compute_subsets(svc(), pods)
    assert (ready, not_ready) == (2, 1)
    [s] = subsets
    assert [a["ip"] for a in s["addresses"]] == ["10.0.0.1", "10.0.0.5"]
    assert s["addresses"][1]["hostname"] == "e" and "hostname" not in s["addresses"][0]
    assert s["addresses"][0] == {"ip": "10.0.0.1", "nodeName": "node-1", "targetRef": {
        "kind": "Pod", "namespace": "ns", "name": "a", "uid": "uid-a"}}
    assert [a["ip"] for a in s["notReadyAddresses"]] == ["10.0.0.2"]
    assert s["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    # publishNotReadyAddresses: every pod is an address, terminating ones too
    subsets, _, _ = compute_subsets(svc(publishNotReadyAddresses=True), pods)
    assert [a["ip"] for a in subsets[0]["addresses"]] == [
        "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.5"]
    # headless without ports: addresses without ports; with a ClusterIP and no ports: none
    headless, _, _ = compute_subsets(svc([], clusterIP="None"), pods[:1])
    assert [sorted(s) for s in headless] == [["addresses"]]
    assert [a["ip"] for a in headless[0]["addresses"]] == ["10.0.0.1"]
    assert compute_subsets(svc([]), pods[:1])[0] == []


# one step: (pod index, new readiness, new IP suffix or None: pod deleted)
_steps = st.lists(st.tuples(st.integers(0, 7), st.booleans(), st.none() | st.integers(1, 9)),
                  max_size=25)


@given(_steps)
@settings(max_examples=60, deadline=None)
def test_memo_gives_the_subsets_of_a_fresh_computation(steps: list[Any]) -> None:
    """The controller's per-pod memo (entries kept by resourceVersion) never changes the
    result: after any sequence of pod changes, deletions and re-creations the subsets and
    counts are those computed from scratch, and the memo holds exactly the current pods."""
    live: dict[int, dict[str, Any]] = {}
    memo: dict[str, Any] = {}
    for rv, (i, ready, ip) in enumerate([(i, True, 1) for i in range(4)] + steps, 1):
        if ip is None:
            live.pop(i, None)
        else:
            p = pod(f"p{i}", f"10.0.{i}.{ip}", ready=ready)
            p["metadata"]["resourceVersion"] = str(rv)
            live[i] = p
        pods = list(live.values())
        assert compute_subsets(svc(), pods, memo) == compute_subsets(svc(), pods)
        assert set(memo) == {p["metadata"]["name"] for p in pods}


def test_truncation_keeps_ready_first_proportionally() -> None:
    def addrs(n: int, base: int) -> list[dict[str, Any]]:
        return [{"ip": f"10.{base}.{i // 250}.{i % 250}"} for i in range(n)]
    ep = {"subsets": [{"addresses": addrs(600, 1), "notReadyAddresses": addrs(300, 2)},
                      {"addresses": addrs(200, 3), "notReadyAddresses": addrs(100, 4)}]}
    assert truncate_endpoints(ep)
    kept = [(len(s.get("addresses", [])), len(s.get("notReadyAddresses", [])))
            for s in ep["subsets"]]
    # 800 ready kept; 200 not-ready places shared 300:100 (rounded up, capped)
    assert kept == [(600, 150), (200, 50)]
    assert sum(a + b for a, b in kept) == MAX_CAPACITY
    ep = {"subsets": [{"addresses": addrs(1200, 1), "notReadyAddresses": addrs(5, 2)}]}
    assert truncate_endpoints(ep) and len(ep["subsets"][0]["addresses"]) == MAX_CAPACITY
    assert "notReadyAddresses" not in ep["subsets"][0]
    assert not truncate_endpoints({"subsets": [{"addresses": addrs(10, 1)}]})
