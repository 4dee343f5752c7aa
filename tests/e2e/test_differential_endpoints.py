"""Differential tests of the endpoint controllers: Endpoints, EndpointSlices, mirroring.

The scenarios run under the real kube-controller-manager v1.36 and under
pykcm's, on the session's real kube-apiserver with ``pykcm sim`` pods
(tests/e2e/differential.py). Pod IPs, node names, UIDs and times differ
between the two runs by nature: addresses are shown as the pod that has
them, nodes as ``{node}``, UIDs by their owner, trigger times as ``{time}``.
What the controllers decide is compared: which pods are addresses or
not-ready addresses under which ports, how the addresses are grouped into
subsets, the slices (port sets, conditions, hostnames, labels, annotations,
owners), what gets deleted.

Upstream orders subsets and ports by a Go hash of their contents (IPs and
UIDs included, so the order differs between two runs): the scenarios check
that the order the real controller wrote is the one pykcm's
``repack_subsets`` / ``sort_slice_ports`` compute for the same content.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.api.endpoints import repack_subsets, sort_slice_ports
from pykcm.testing.upstream import KubeCluster
from tests.e2e.differential import Differential, Run, Scenario
from tests.e2e.differential_allowlist import ALLOWLIST

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]

NEVER_READY = "sim.pykcm.io/never-ready"
READY_AFTER = "sim.pykcm.io/ready-after-seconds"


@pytest.fixture(scope="module")
def differential(kube_cluster: KubeCluster) -> Iterator[Differential]:
    d = Differential(kube_cluster)
    yield d
    d.restore()


# -- objects ---------------------------------------------------------------------------------

def pod(name: str, *, ready: bool = True, http: int | None = 8080, labels: dict[str, str]
        | None = None, hostname: str | None = None, subdomain: str | None = None
        ) -> dict[str, Any]:
    ports = [{"name": "metrics", "containerPort": 9090}]
    if http is not None:
        ports.insert(0, {"name": "http", "containerPort": http})
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27",
                                            "ports": ports}],
                            "terminationGracePeriodSeconds": 0}
    if hostname:
        spec["hostname"] = hostname
    if subdomain:
        spec["subdomain"] = subdomain
    ann = {NEVER_READY: "true"} if not ready else {READY_AFTER: "0.1"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {"app": "web"}, "annotations": ann},
            "spec": spec}


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name,
                                                                "labels": {"tier": "front"}},
            "spec": spec}


def pods_settled(run: Run, ready: set[str], not_ready: set[str]) -> dict[str, str]:
    """Wait until the pods have IPs and their readiness; {IP: pod name}."""
    def check() -> dict[str, str] | None:
        out: dict[str, str] = {}
        for p in run.list("pods"):
            name, st = p["metadata"]["name"], p.get("status") or {}
            conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
            if not st.get("podIP"):
                return None
            if (name in ready and conds.get("Ready") != "True") or (
                    name in not_ready and conds.get("Ready") != "False"):
                return None
            out[st["podIP"]] = name
        return out if set(out.values()) >= ready | not_ready else None
    result: dict[str, str] = run.wait(check, f"pods {sorted(ready | not_ready)} settled")
    return result


# -- views -----------------------------------------------------------------------------------

def _time(ann: dict[str, str]) -> dict[str, str]:
    return {k: ("{time}" if k == "endpoints.kubernetes.io/last-change-trigger-time" else v)
            for k, v in ann.items()}


def _address(a: dict[str, Any], ips: dict[str, str]) -> dict[str, Any]:
    out = {k: v for k, v in a.items() if k not in ("ip", "nodeName", "targetRef")}
    out["pod"] = ips.get(a["ip"], a["ip"])
    if "nodeName" in a:
        out["nodeName"] = "{node}"
    if a.get("targetRef"):
        ref = dict(a["targetRef"])
        ref.pop("uid", None)
        ref.pop("resourceVersion", None)
        out["targetRef"] = ref
    return out


def endpoints_view(run: Run, name: str, ips: dict[str, str]) -> dict[str, Any] | None:
    code, ep = run.api.request("GET", run.path("endpoints", name))
    if code == 404:
        return None
    assert code == 200, ep
    subsets = ep.get("subsets") or []
    # the canonical order of repacked subsets is upstream's (a Go hash): pykcm computes the
    # same order for the same content
    assert repack_subsets(copy.deepcopy(subsets)) == subsets, \
        f"{run.manager}: Endpoints {name} not in canonical order: {subsets}"
    view = []
    for s in subsets:
        view.append({"ports": s.get("ports"),
                     "addresses": sorted((_address(a, ips) for a in s.get("addresses") or []),
                                         key=lambda a: a["pod"]),
                     "notReadyAddresses": sorted(
                         (_address(a, ips) for a in s.get("notReadyAddresses") or []),
                         key=lambda a: a["pod"])})
    view.sort(key=lambda v: json.dumps(v, sort_keys=True))
    m = ep["metadata"]
    return {"labels": m.get("labels"), "annotations": _time(m.get("annotations") or {}),
            "subsets": view}


def slices_view(run: Run, service_name: str, ips: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for s in run.list("endpointslices", f"kubernetes.io/service-name={service_name}"):
        ports = s.get("ports")
        assert ports is None or sort_slice_ports(ports) == ports, \
            f"{run.manager}: slice ports not in upstream's order: {ports}"
        m = s["metadata"]
        eps = []
        for e in s.get("endpoints") or []:
            v = {k: x for k, x in e.items() if k not in ("addresses", "nodeName", "targetRef")}
            v["addresses"] = [ips.get(a, a) for a in e.get("addresses") or []]
            if "nodeName" in e:
                v["nodeName"] = "{node}"
            if e.get("targetRef"):
                ref = dict(e["targetRef"])
                ref.pop("uid", None)
                v["targetRef"] = ref
            eps.append(v)
        eps.sort(key=lambda v: json.dumps(v, sort_keys=True))
        out.append({"generateName": m.get("generateName"), "labels": m.get("labels"),
                    "annotations": _time(m.get("annotations") or {}),
                    "ownerReferences": [{k: x for k, x in o.items() if k != "uid"}
                                        for o in m.get("ownerReferences") or []],
                    "addressType": s.get("addressType"), "ports": ports, "endpoints": eps})
    out.sort(key=lambda v: json.dumps(v, sort_keys=True))
    return out


def _pods_of(view: dict[str, Any] | None, field: str) -> set[str]:
    return {a["pod"] for s in (view or {}).get("subsets", []) for a in s[field]}


def endpoints_match(run: Run, name: str, ips: dict[str, str], ready: set[str],
                    not_ready: set[str]) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        v = endpoints_view(run, name, ips)
        if v is None:
            return None
        ok = _pods_of(v, "addresses") == ready and _pods_of(v, "notReadyAddresses") == not_ready
        return v if ok else None
    result: dict[str, Any] = run.wait(check, f"Endpoints {name}: {sorted(ready)} ready, "
                                             f"{sorted(not_ready)} not")
    return result


def slices_match(run: Run, name: str, ips: dict[str, str], pods: set[str], count: int
                 ) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        v = slices_view(run, name, ips)
        seen = {a for s in v for e in s["endpoints"] for a in e["addresses"]}
        return v if seen == pods and len(v) == count else None
    result: list[dict[str, Any]] = run.wait(check, f"EndpointSlices of {name}: {sorted(pods)}")
    return result


# -- scenarios -------------------------------------------------------------------------------

def endpoints_and_slices(run: Run) -> dict[str, Any]:
    """Pods with different ports for a named targetPort, one never ready, one without the
    named port, one with hostname/subdomain; a Service with two ports, a headless one
    publishing not-ready addresses, an ExternalName one; then a pod deleted and one
    relabelled away; then the Service deleted."""
    for p in (pod("a"), pod("b", http=8081), pod("c", ready=False), pod("d", http=None),
              pod("h", hostname="h", subdomain="web")):
        run.create("pods", p)
    ips = pods_settled(run, {"a", "b", "d", "h"}, {"c"})
    svc = run.create("services", service("web", selector={"app": "web"}, ports=[
        {"name": "http", "port": 80, "targetPort": "http"},
        {"name": "metrics", "port": 9090, "targetPort": 9090, "appProtocol": "http"}]))
    run.masker.literal(svc["metadata"]["uid"], "{uid:Service/web}")
    run.create("services", service("headless", clusterIP="None", selector={"app": "web"},
                                   publishNotReadyAddresses=True))
    run.create("services", service("ext", type="ExternalName", externalName="example.com"))
    ready, not_ready = {"a", "b", "d", "h"}, {"c"}
    first = {"web": endpoints_match(run, "web", ips, ready, not_ready),
             "web_slices": slices_match(run, "web", ips, ready | not_ready, 3),
             "headless": endpoints_match(run, "headless", ips, ready | not_ready, set()),
             "headless_slices": slices_match(run, "headless", ips, ready | not_ready, 1)}
    # nothing for an ExternalName Service
    first["ext"] = endpoints_view(run, "ext", ips)
    first["ext_slices"] = slices_view(run, "ext", ips)

    run.api.ok("DELETE", run.path("pods", "a"), {"gracePeriodSeconds": 0})
    run.patch("pods", "h", {"metadata": {"labels": {"app": "other"}}})
    ready = {"b", "d"}
    second = {"web": endpoints_match(run, "web", ips, ready, not_ready),
              "web_slices": slices_match(run, "web", ips, ready | not_ready, 3)}

    run.delete("services", "web")
    gone = run.wait(lambda: endpoints_view(run, "web", ips) is None
                    and not slices_view(run, "web", ips), "Endpoints and slices of web gone")
    return {"first": first, "second": second, "deleted": gone,
            "events": [e for e in run.events() if e["object"].split("/")[0] in
                       ("Endpoints", "Service", "EndpointSlice")]}


def mirroring(run: Run) -> dict[str, Any]:
    """A selector-less Service with custom Endpoints (IPv4 and IPv6 addresses, ready and not,
    labels and annotations): mirrored slices; an update; skip-mirror; the Service deleted."""
    run.create("services", service("custom", ports=[{"name": "http", "port": 80}]))
    ep = {"apiVersion": "v1", "kind": "Endpoints",
          "metadata": {"name": "custom", "labels": {"team": "x"},
                       "annotations": {"note": "y",
                                       "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
          "subsets": [{"addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2", "hostname": "h2"}],
                       "notReadyAddresses": [{"ip": "10.1.0.3"}],
                       "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                                 {"name": "alt", "port": 8443, "protocol": "TCP"}]},
                      {"addresses": [{"ip": "fd00::1"}],
                       "ports": [{"name": "http", "port": 8080, "protocol": "TCP"},
                                 {"name": "alt", "port": 8443, "protocol": "TCP"}]}]}
    created = run.create("endpoints", ep)
    run.masker.literal(created["metadata"]["uid"], "{uid:Endpoints/custom}")
    ips: dict[str, str] = {}
    first = slices_match(run, "custom", ips, {"10.1.0.1", "10.1.0.2", "10.1.0.3", "fd00::1"}, 2)
    cur = run.get("endpoints", "custom")
    cur["subsets"] = [{"addresses": [{"ip": "10.1.0.1"}],
                       "ports": [{"name": "http", "port": 8081, "protocol": "TCP"}]}]
    cur["metadata"]["labels"]["team"] = "z"
    run.api.ok("PUT", run.path("endpoints", "custom"), cur)
    second = slices_match(run, "custom", ips, {"10.1.0.1"}, 1)
    run.patch("endpoints", "custom", {"metadata": {"labels": {
        "endpointslice.kubernetes.io/skip-mirror": "true"}}})
    skipped = run.wait(lambda: not slices_view(run, "custom", ips) or None, "no mirrored slices")
    run.patch("endpoints", "custom", {"metadata": {"labels": {
        "endpointslice.kubernetes.io/skip-mirror": None}}})
    third = slices_match(run, "custom", ips, {"10.1.0.1"}, 1)
    endpoints = {k: v for k, v in run.get("endpoints", "custom")["metadata"].items()
                 if k in ("labels", "annotations")}
    run.delete("services", "custom")
    # the Endpoints controller deletes the Endpoints of a deleted Service, selector or not
    gone = run.wait(lambda: (not slices_view(run, "custom", ips) and run.api.request(
        "GET", run.path("endpoints", "custom"))[0] == 404) or None,
        "the Endpoints and the mirrored slices gone with the Service")
    return {"first": first, "second": second, "skip_mirror": skipped, "restored": third,
            "service_deleted": gone, "endpoints": endpoints,
            "events": [e for e in run.events() if e["object"].split("/")[0] in
                       ("Endpoints", "Service", "EndpointSlice")]}


SCENARIOS: dict[str, Scenario] = {
    "endpoints-and-slices": endpoints_and_slices,
    "endpointslice-mirroring": mirroring,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_differential(differential: Differential, name: str) -> None:
    """The scenario under kube-controller-manager and under pykcm: the same observations."""
    kube, pykcm = differential.run(name, SCENARIOS[name], ALLOWLIST, prefix="diff-ep")
    assert kube and pykcm, f"{name} observed nothing"
