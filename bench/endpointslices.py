"""Benchmark of EndpointSlice churn: pykcm's endpoint controllers next to kube-controller-manager's.

    .venv/bin/python bench/endpointslices.py [--quick] [--runs N] [--pods N] [--waves N]
                                             [--setups kube/kube,kube/pykcm,pykcm/pykcm]
                                             [--qps 20/30] [--no-record]

Issue 12's acceptance benchmark: 1 Service selecting 1,000 pods that flip
readiness 5 times; time until the EndpointSlices converge and the requests
the controller manager made, next to the real controller in the same run.

Setups (API server / controller manager), each a fresh cluster per run,
interleaved within each repetition:

  kube/kube     the real kube-apiserver v1.36.2 + etcd 3.6.13 (the kube-v1.36 kit)
                with the real kube-controller-manager running only
                `--controllers=endpointslice-controller,endpoints-controller`
  kube/pykcm    the same API server with `pykcm controller-manager --controllers
                endpointslice-controller,endpoints-controller`
  pykcm/pykcm   `pykcm up --nodes 0 --no-controller-manager` (pykcm's API server)
                with the same pykcm controller manager

No other controller and no kubelet run: the driver (this script) writes
everything itself. It creates a namespace, its ``default`` ServiceAccount
(nothing else would, and the real server's admission refuses pods without
it), one Node object (the EndpointSlice controller leaves out the pods of a
Node it cannot find), one Service (selector app=web, port 80 -> named
targetPort http) and N pods bound to that Node (spec.nodeName, no scheduler),
then writes each pod's status through pods/status (Running, a unique podIP,
Ready=True). Then W waves flip every pod's Ready condition (False, True,
False, ...), each a merge patch of pods/status, 64 in flight: as fast as the
API server accepts them. The EndpointSlices (label kubernetes.io/service-name)
and the Endpoints of the Service are watched (LIST + WATCH, every event
checked at once, no polling): a wave has converged when the slices hold
exactly the expected endpoints, each pod IP once with conditions.ready as its
pod's Ready (resp. Endpoints: addresses / notReadyAddresses). Measured per
wave: the writes' duration and the time from the last write's response to
convergence (can be slightly negative: the controller may see the last pod
before the driver has its response), for slices and Endpoints.

Requests, counted over the W waves (from just before the first wave to 2 s
after the last converged): (1) on the API server, the difference of
``apiserver_request_total`` (all but WATCH, which the server counts when a
watch ends; resource requests only) minus the driver's own requests, which it
counts itself: the controller manager is the only other client, but the
API server's own loopback requests (its endpoint and lease reconcilers, a few
every 10 s) are in it too; (2) the manager's own ``rest_client_requests_total``
(client side, all its requests including watches; the same metric in both
managers). Also the controller manager's CPU seconds (from /proc).

Both managers run with the same --kube-api-qps/--kube-api-burst (default
20/30, both managers' defaults) and no updates batch period (upstream's
default 0). Prints a Markdown section and appends it to bench/RESULTS.md
(--no-record to skip). --quick: 100 pods, 1 run (smoke run). --profile DIR runs
pykcm's manager under cProfile (a dump per run; its figures are not comparable).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as _dt
import math
import os
import shutil
import ssl
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import append_results, log, machine_load, proc_cpu, run_async, wait_idle
from _kube import kit_or_reason
from controllers import git_state, machine, med

from pykcm.testing.cluster import Cluster
from pykcm.testing.upstream import (
    ControlPlane,
    KitError,
    KubeControllerManager,
    KubeKit,
    PykcmProcess,
)

CONTROLLERS = "endpointslice-controller,endpoints-controller"
NS = "churn"
SERVICE = "web"
NODE = "churn-node"
IN_FLIGHT = 64
SETTLE = 2.0  # s after the last wave converged that requests are still counted
SETUP_TITLES = {
    "kube/kube": "kube-controller-manager v1.36.2 on kube-apiserver",
    "kube/pykcm": "pykcm controller manager on kube-apiserver",
    "pykcm/pykcm": "pykcm controller manager on pykcm apiserver",
}
REF = "kube/kube"
# /metrics read anonymously: a token would cost the real manager a TokenReview and a
# SubjectAccessReview per read, counted among its own requests
METRICS_OPEN = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
Endpoints = tuple[tuple[str, bool], ...]
Key = tuple[str, str, str]  # (verb, resource[.group], subresource)


class BenchError(RuntimeError):
    pass


# -- what "converged" means (pure; tests/unit/test_bench_endpointslices.py) ---------------


def slice_endpoints(obj: Mapping[str, Any]) -> Endpoints:
    """An EndpointSlice's (address, ready) pairs; an IPv4 slice only (the pods have IPv4).

    A missing ``conditions.ready`` counts as ready, as the API documents for consumers.
    """
    if obj.get("addressType") != "IPv4":
        return ()
    out = []
    for ep in obj.get("endpoints") or ():
        ready = (ep.get("conditions") or {}).get("ready")
        for addr in ep.get("addresses") or ():
            out.append((addr, ready is not False))
    return tuple(out)


def endpoints_endpoints(obj: Mapping[str, Any]) -> Endpoints:
    """An Endpoints object's (ip, ready) pairs: addresses ready, notReadyAddresses not."""
    out = []
    for subset in obj.get("subsets") or ():
        out += [(a["ip"], True) for a in subset.get("addresses") or ()]
        out += [(a["ip"], False) for a in subset.get("notReadyAddresses") or ()]
    return tuple(out)


def converged(objs: Mapping[str, Endpoints], expected: Mapping[str, bool]) -> bool:
    """True when at least one object exists and, across all, every expected IP appears
    exactly once with its expected readiness, and no other IP appears."""
    if not objs:
        return False
    seen: dict[str, bool] = {}
    for eps in objs.values():
        for ip, ready in eps:
            if ip in seen:
                return False
            seen[ip] = ready
    return seen == dict(expected)


def pod_ip(i: int) -> str:
    return f"10.244.{i // 250}.{i % 250 + 1}"


def wave_readiness(wave: int) -> bool:
    """Wave 0 creates the pods ready; odd waves make them not ready, even ones ready again."""
    return wave % 2 == 0


# -- the cluster ---------------------------------------------------------------------------


class Setup:
    """One fresh API server (real or pykcm's) and one controller manager (real or pykcm's)
    running only the two endpoint controllers."""

    def __init__(self, name: str, kit: KubeKit | None, qps: float, burst: int,
                 profile: str | None = None) -> None:
        self.name = name
        self.profile = profile  # pykcm's manager under cProfile, its dump to this file
        self.apiserver, self.manager_kind = name.split("/")
        self.kit, self.qps, self.burst = kit, qps, burst
        self.work = Path(tempfile.mkdtemp(prefix="pykcm-bench-eps-"))
        self.cp: ControlPlane | None = None
        self.cluster: Cluster | None = None
        self.manager: KubeControllerManager | PykcmProcess | None = None
        self.url = self.token = self.kubeconfig = self.ca_file = ""
        self.metrics_url = ""

    def start(self, timeout: float = 60.0) -> None:
        try:
            self._start(timeout)
        except (KitError, RuntimeError) as exc:
            raise BenchError(f"{self.name}: {exc}") from None

    def _start(self, timeout: float) -> None:
        if self.apiserver == "kube":
            assert self.kit is not None
            self.cp = self.kit.control_plane(self.work / "kube")
            self.cp.start()
            self.url, self.token = self.cp.url, self.cp.token
            self.kubeconfig, self.ca_file = self.cp.kubeconfig_path, self.cp.ca_file
        else:
            data = self.work / "pykcm"
            self.cluster = Cluster(nodes=0, controller_manager=False,
                                   data_dir=str(data)).start(timeout)
            self.url, self.kubeconfig = self.cluster.url, self.cluster.kubeconfig_path
            self.ca_file = str(data / "pki" / "ca.crt")
            self.token = (data / "admin.token").read_text().strip()
        if self.manager_kind == "kube":
            assert self.kit is not None
            if self.cp is not None:
                kcm = KubeControllerManager.for_control_plane(
                    self.cp, controllers=CONTROLLERS, name="controller-manager",
                    service_account_key=False, kube_api_qps=self.qps,
                    kube_api_burst=self.burst, extra_flags=[METRICS_OPEN])
            else:  # pykcm's server: nobody to delegate /metrics authorization to
                kcm = KubeControllerManager(
                    self.kit, self.kubeconfig, self.work, controllers=CONTROLLERS,
                    name="controller-manager", delegate_auth=False, kube_api_qps=self.qps,
                    kube_api_burst=self.burst, extra_flags=[METRICS_OPEN])
            self.manager = kcm.start(timeout)
            self.metrics_url = kcm.url + "/metrics"
        else:
            pm = PykcmProcess.controller_manager(
                self.kubeconfig, self.work / "controller-manager.log", controllers=CONTROLLERS,
                kube_api_qps=self.qps, kube_api_burst=self.burst)
            if self.profile:  # `python -m cProfile -o FILE -m pykcm ...`, dumped on SIGTERM
                pm._proc.argv[1:1] = ["-m", "cProfile", "-o", self.profile]
            self.manager = pm.start(timeout)
            self.metrics_url = f"http://127.0.0.1:{pm.port}/metrics"

    def manager_cpu(self) -> float:
        return proc_cpu(self.manager.pid if self.manager is not None else None)

    def check(self) -> None:
        pid = self.manager.pid if self.manager is not None else None
        if pid is None or not os.path.exists(f"/proc/{pid}"):
            raise BenchError(f"the controller manager exited: {self.manager_log_tail()}")

    def manager_log_tail(self, n: int = 5) -> str:
        text = self.manager.log() if self.manager is not None else ""
        return " | ".join(ln for ln in text.splitlines()[-n:] if ln.strip())[:800]

    def stop(self, keep_logs: str | None = None) -> None:
        if self.manager is not None:
            self.manager.stop()
            if keep_logs:
                os.makedirs(keep_logs, exist_ok=True)
                dst = os.path.join(keep_logs, f"{self.name.replace('/', '-')}-"
                                   f"{time.strftime('%H%M%S')}-controller-manager.log")
                with open(dst, "w") as f:
                    f.write(self.manager.log())
        if self.cluster is not None:
            self.cluster.stop()
        if self.cp is not None:
            self.cp.stop()
        shutil.rmtree(self.work, ignore_errors=True)


# -- the driver ----------------------------------------------------------------------------


class Driver:
    """One aiohttp session that counts its own requests as apiserver_request_total does."""

    def __init__(self, setup: Setup) -> None:
        self.base = setup.url
        self.setup = setup
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=IN_FLIGHT + 8, ssl=ssl.create_default_context(cafile=setup.ca_file)),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            headers={"Authorization": f"Bearer {setup.token}", "Accept": "application/json"},
            trust_env=False)
        self.own: Counter[Key] = Counter()
        self.failures: list[str] = []

    async def close(self) -> None:
        await self.session.close()

    async def request(self, key: Key, method: str, path: str, body: Any = None,
                      ctype: str = "application/json") -> tuple[int, Any]:
        self.own[key] += 1
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": ctype} if data is not None else None
        async with self.session.request(method, self.base + path, data=data,
                                        headers=headers) as r:
            raw = await r.read()
        if r.status >= 300 and r.status != 409:
            self.failures.append(f"{method} {path}: {r.status} {raw[:200]!r}")
        return r.status, orjson.loads(raw) if raw else None

    async def server_requests(self) -> Counter[Key]:
        """apiserver_request_total by (verb, resource, subresource): resource requests only."""
        async with self.session.get(self.base + "/metrics") as r:
            text = await r.text()
        lines = "\n".join(ln for ln in text.splitlines()
                          if ln.startswith("apiserver_request_total{"))
        out: Counter[Key] = Counter()
        for fam in text_string_to_metric_families(lines):
            for s in fam.samples:
                lb = s.labels
                if not lb.get("resource") or not s.name.endswith("_total"):
                    continue
                res = lb["resource"] + (f".{lb['group']}" if lb.get("group") else "")
                out[(lb.get("verb", ""), res, lb.get("subresource", ""))] += int(s.value)
        return out

    async def manager_requests(self) -> Counter[str]:
        """The manager's own rest_client_requests_total by method (read anonymously)."""
        async with aiohttp.request("GET", self.setup.metrics_url, ssl=False) as r:
            text = await r.text()
            if r.status != 200:
                raise BenchError(f"manager /metrics: {r.status} {text[:200]}")
        lines = "\n".join(ln for ln in text.splitlines()
                          if ln.startswith("rest_client_requests_total{"))
        out: Counter[str] = Counter()
        for fam in text_string_to_metric_families(lines):
            for s in fam.samples:
                if s.name.endswith("_total"):
                    out[s.labels.get("method", "?")] += int(s.value)
        return out


class ConvergenceWatch:
    """LIST + WATCH of one collection, each object reduced to its endpoints; every batch of
    events is checked against the expected endpoints at once, and the time it first
    matches resolves the pending expect() future."""

    def __init__(self, drv: Driver, resource: str, path: str,
                 reduce: Callable[[Mapping[str, Any]], Endpoints]) -> None:
        self.drv, self.resource, self.path, self.reduce = drv, resource, path, reduce
        self.objs: dict[str, Endpoints] = {}
        self.events = 0
        self._expected: Mapping[str, bool] | None = None
        self._fut: asyncio.Future[float] | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def expect(self, expected: Mapping[str, bool]) -> asyncio.Future[float]:
        self._expected = expected
        self._fut = asyncio.get_running_loop().create_future()
        self._check()
        return self._fut

    def _check(self) -> None:
        if (self._fut is not None and not self._fut.done() and self._expected is not None
                and converged(self.objs, self._expected)):
            self._fut.set_result(time.perf_counter())

    async def _run(self) -> None:
        sep = "&" if "?" in self.path else "?"
        while True:
            try:
                st, body = await self.drv.request(("LIST", self.resource, ""), "GET",
                                                  self.path)
                if st != 200:
                    await asyncio.sleep(0.2)
                    continue
                self.objs = {it["metadata"]["name"]: self.reduce(it) for it in body["items"]}
                self._check()
                rv = body["metadata"]["resourceVersion"]
                url = (f"{self.drv.base}{self.path}{sep}watch=1&resourceVersion={rv}"
                       "&allowWatchBookmarks=true&timeoutSeconds=3600")
                async with self.drv.session.get(url) as r:
                    if r.status != 200:
                        await asyncio.sleep(0.2)
                        continue
                    buf = b""
                    async for chunk in r.content.iter_any():
                        *lines, buf = (buf + chunk).split(b"\n")
                        for ln in lines:
                            if not ln.strip():
                                continue
                            ev = orjson.loads(ln)
                            t, obj = ev.get("type"), ev.get("object") or {}
                            if t in ("ADDED", "MODIFIED"):
                                self.objs[obj["metadata"]["name"]] = self.reduce(obj)
                                self.events += 1
                            elif t == "DELETED":
                                self.objs.pop(obj["metadata"]["name"], None)
                                self.events += 1
                            elif t == "ERROR":
                                raise ConnectionResetError(f"watch error: {obj}")
                        self._check()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - re-list, as an informer does
                log(f"bench: watch {self.path}: {exc!r}; re-listing")
                await asyncio.sleep(0.2)


async def pool(items: Iterable[Any], fn: Callable[[Any], Awaitable[Any]]) -> None:
    """Run fn over items with IN_FLIGHT requests at a time."""
    it = iter(items)

    async def worker() -> None:
        for x in it:
            await fn(x)

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))


def pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i:04d}", "labels": {"app": SERVICE}},
            "spec": {"nodeName": NODE, "automountServiceAccountToken": False,
                     "containers": [{"name": "app", "image": "nginx:1.25",
                                     "ports": [{"name": "http", "containerPort": 8080}]}]}}


def ready_status(ready: bool, ip: str | None = None) -> dict[str, Any]:
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    st: dict[str, Any] = {"conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now}]}
    if ip is not None:
        st.update(phase="Running", hostIP="10.0.0.1", hostIPs=[{"ip": "10.0.0.1"}],
                  podIP=ip, podIPs=[{"ip": ip}])
    return {"status": st}


def sub(a: Mapping[Any, int], b: Mapping[Any, int]) -> Counter[Any]:
    return Counter({k: a.get(k, 0) - b.get(k, 0) for k in set(a) | set(b)
                    if a.get(k, 0) != b.get(k, 0)})


async def run_one(setup: Setup, n: int, waves: int, timeout: float,
                  keep_logs: str | None = None) -> dict[str, Any]:
    """One run on a fresh cluster; per wave (0 = create) times and request counts."""
    setup.start()
    drv = Driver(setup)
    watches: list[ConvergenceWatch] = []
    try:
        await drv.request(("POST", "namespaces", ""), "POST", "/api/v1/namespaces",
                          {"metadata": {"name": NS}})
        await drv.request(("POST", "serviceaccounts", ""), "POST",
                          f"/api/v1/namespaces/{NS}/serviceaccounts",
                          {"metadata": {"name": "default"}})
        await drv.request(("POST", "nodes", ""), "POST", "/api/v1/nodes", {
            "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}}})
        await drv.request(("POST", "services", ""), "POST", f"/api/v1/namespaces/{NS}/services",
                          {"metadata": {"name": SERVICE}, "spec": {
                              "selector": {"app": SERVICE},
                              "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
        sw = ConvergenceWatch(drv, "endpointslices.discovery.k8s.io",
                              f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
                              f"?labelSelector=kubernetes.io%2Fservice-name%3D{SERVICE}",
                              slice_endpoints)
        ew = ConvergenceWatch(drv, "endpoints", f"/api/v1/namespaces/{NS}/endpoints"
                              f"?fieldSelector=metadata.name%3D{SERVICE}", endpoints_endpoints)
        watches = [sw, ew]
        for w in watches:
            w.start()
        # the managers are up when both have written the Service's (empty) objects
        await wait_both(setup, sw.expect({}), ew.expect({}), 60.0)
        out: dict[str, Any] = {"waves": []}

        async def wave(k: int) -> None:
            ready = wave_readiness(k)
            expected = {pod_ip(i): ready for i in range(n)}
            s0, m0 = await drv.server_requests(), await drv.manager_requests()
            own0, cpu0, ev0 = Counter(drv.own), setup.manager_cpu(), sw.events
            t0 = time.perf_counter()
            fs, fe = sw.expect(expected), ew.expect(expected)
            if k == 0:
                await pool(range(n), lambda i: drv.request(
                    ("POST", "pods", ""), "POST", f"/api/v1/namespaces/{NS}/pods", pod(i)))
            await pool(range(n), lambda i: drv.request(
                ("PATCH", "pods", "status"), "PATCH",
                f"/api/v1/namespaces/{NS}/pods/web-{i:04d}/status",
                ready_status(ready, pod_ip(i) if k == 0 else None),
                ctype="application/merge-patch+json"))
            t_last = time.perf_counter()
            ts, te = await wait_both(setup, fs, fe, timeout)
            if k == waves:
                await asyncio.sleep(SETTLE)
            s1, m1 = await drv.server_requests(), await drv.manager_requests()
            own = sub(drv.own, own0)
            server = sub(s1, s0)
            for key, v in own.items():  # the driver's own requests, watches aside
                if key[0] != "WATCH":
                    server[key] -= v
            server = Counter({key: v for key, v in server.items() if v and key[0] != "WATCH"})
            out["waves"].append({
                "wave": k, "ready": ready, "writes": t_last - t0,
                "slices": ts - t_last, "endpoints": te - t_last, "slices_total": ts - t0,
                "server": server, "manager": sub(m1, m0), "cpu": setup.manager_cpu() - cpu0,
                "slice_events": sw.events - ev0, "slice_count": len(sw.objs)})
            w = out["waves"][-1]
            log(f"bench:   wave {k} ({'ready' if ready else 'not ready'}): writes "
                f"{w['writes']:.2f} s, slices +{w['slices']:.2f} s, Endpoints "
                f"+{w['endpoints']:.2f} s, {sum(server.values())} server-side requests, "
                f"{sum(w['manager'].values())} by the manager, {w['slice_count']} slices")

        for k in range(waves + 1):
            await wave(k)
        out["failures"] = drv.failures[:5]
        return out
    finally:
        for w in watches:
            await w.stop()
        await drv.close()
        setup.stop(keep_logs)


async def wait_both(setup: Setup, fs: asyncio.Future[float], fe: asyncio.Future[float],
                    timeout: float) -> tuple[float, float]:
    deadline = time.monotonic() + timeout
    while not (fs.done() and fe.done()):
        if time.monotonic() > deadline:
            raise BenchError(f"not converged after {timeout:.0f} s (slices "
                             f"{'done' if fs.done() else 'pending'}, Endpoints "
                             f"{'done' if fe.done() else 'pending'}); manager log: "
                             f"{setup.manager_log_tail()}")
        setup.check()
        await asyncio.wait([fs, fe], timeout=1.0)
    return fs.result(), fe.result()


# -- the report ----------------------------------------------------------------------------


def churn(r: dict[str, Any], field: str) -> float:
    """A quantity summed over the churn waves (1..W; wave 0 creates the pods)."""
    return float(sum(w[field] for w in r["waves"][1:]))


def churn_requests(r: dict[str, Any], side: str, pred: Callable[[Key], bool] | None = None
                   ) -> int:
    total = 0
    for w in r["waves"][1:]:
        total += sum(v for k, v in w[side].items() if pred is None or pred(k))
    return total


def is_write_of(resource: str) -> Callable[[Key], bool]:
    return lambda k: k[1] == resource and k[0] in ("POST", "PUT", "PATCH", "DELETE", "APPLY")


METRICS: list[tuple[str, Callable[[dict[str, Any]], float], str]] = [
    ("churn: slices converged after the last write, summed over the waves (s)",
     lambda r: churn(r, "slices"), "s"),
    ("churn: Endpoints converged after the last write, summed (s)",
     lambda r: churn(r, "endpoints"), "s"),
    ("churn: first write to slices converged, summed over the waves (s)",
     lambda r: churn(r, "slices_total"), "s"),
    ("churn: the driver's writes, summed (s)", lambda r: churn(r, "writes"), "s"),
    ("create: slices converged after the last pod status write (s)",
     lambda r: float(r["waves"][0]["slices"]), "s"),
    ("churn: requests on the API server, all clients but the driver, no watches",
     lambda r: churn_requests(r, "server"), "n"),
    ("churn: the manager's own requests (rest_client_requests_total)",
     lambda r: churn_requests(r, "manager"), "n"),
    ("churn: EndpointSlice writes (server side)",
     lambda r: churn_requests(r, "server", is_write_of("endpointslices.discovery.k8s.io")), "n"),
    ("churn: Endpoints writes (server side)",
     lambda r: churn_requests(r, "server", is_write_of("endpoints")), "n"),
    ("churn: slice events seen by the driver's watch",
     lambda r: float(sum(w["slice_events"] for w in r["waves"][1:])), "n"),
    ("churn: controller manager CPU seconds", lambda r: churn(r, "cpu"), "c"),
]


def fmt(v: float, kind: str) -> str:
    if math.isnan(v):
        return "n/a"
    return {"s": f"{v:.2f} s", "n": f"{v:,.0f}", "c": f"{v:.1f}"}[kind]


def report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]], wall: float,
           tree: str) -> str:
    L: list[str] = []
    when = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    title = ("EndpointSlice churn, side by side with kube-controller-manager"
             + (" (quick smoke run)" if args.quick else ""))
    L += [f"## {title} — {when}", ""]
    L.append(f"Machine: {machine()}; {args.load_note}.  ")
    setups = list(results)
    L.append(f"Run: `bench/endpointslices.py {' '.join(sys.argv[1:])}`, {wall:.0f} s wall, "
             f"tree {tree}. 1 Service selecting {args.pods} pods (on one Node object, no "
             f"kubelet: the driver writes pods/status), created ready (wave 0), then "
             f"{args.waves} waves flipping every pod's Ready condition (64 merge patches of "
             f"pods/status in flight). Setups, fresh per run, interleaved, {args.runs} run(s) "
             "each: " + "; ".join(f"{s} = {SETUP_TITLES[s]}" for s in setups)
             + f"; the manager runs only `{CONTROLLERS}`, --kube-api-qps/burst "
             f"{args.qps}. Convergence: watched (LIST+WATCH, checked on every event) until the "
             "slices labelled kubernetes.io/service-name hold each pod IP once with "
             "conditions.ready as the pod's Ready (Endpoints: addresses / "
             "notReadyAddresses). Requests over the churn waves, until 2 s after the last "
             "converged: server side = apiserver_request_total difference minus the driver's "
             "own requests, watches left out (counted when they end); it also holds the API "
             "server's own loopback requests (a few every 10 s). Manager side = its own "
             "rest_client_requests_total (watches included).")
    if getattr(args, "kube_note", ""):
        L.append(f"⚠️ {args.kube_note}.")
    L.append("")
    have_ref = REF in setups
    head = ["median over runs", *(s for s in setups)]
    others = [s for s in setups if s != REF]
    if have_ref:
        head += [f"{s} ÷ {REF}" for s in others]
    L.append("| " + " | ".join(head) + " |")
    L.append("|---|" + "---:|" * (len(head) - 1))
    for label, f, kind in METRICS:
        vals = {s: med([f(r) for r in results[s] if "waves" in r]) for s in setups}
        cells = [label, *(fmt(vals[s], kind) for s in setups)]
        if have_ref:
            ref = vals[REF]
            cells += [f"{vals[s] / ref:.2f}×" if ref and not math.isnan(ref)
                      and not math.isnan(vals[s]) else "—" for s in others]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append("Per wave, every run (writes s / slices converged +s / Endpoints +s / server-side "
             "requests / manager requests):")
    L.append("")
    for s in setups:
        for i, r in enumerate(results[s]):
            if "waves" not in r:
                L.append(f"- {s} #{i + 1}: failed: {r.get('error', '?')}")
                continue
            L.append(f"- {s} #{i + 1}: " + "; ".join(
                f"w{w['wave']} {w['writes']:.2f}/{w['slices']:+.2f}/{w['endpoints']:+.2f}/"
                f"{sum(w['server'].values())}/{sum(w['manager'].values())}"
                for w in r["waves"]))
    L.append("")
    L.append("Server-side requests by verb and resource over the churn waves (first run):")
    L.append("")
    for s in setups:
        r0 = next((r for r in results[s] if "waves" in r), None)
        if r0 is None:
            continue
        tot: Counter[Key] = Counter()
        for w in r0["waves"][1:]:
            tot.update(w["server"])
        mg: Counter[str] = Counter()
        for w in r0["waves"][1:]:
            mg.update(w["manager"])
        L.append(f"- {s}: " + ", ".join(
            f"{k[0]} {k[1]}{'/' + k[2] if k[2] else ''} {v:,}" for k, v in tot.most_common()
            if v) + ". Manager by method: "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(mg.items()) if v) + "."
            + (f" Driver requests refused: {'; '.join(r0['failures'])}."
               if r0.get("failures") else ""))
    return "\n".join(L)


async def main_async(args: argparse.Namespace) -> int:
    kit, args.kube_note = kit_or_reason()
    setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    for s in setups:
        if s not in SETUP_TITLES:
            raise SystemExit(f"bench: unknown setup {s!r} (one of {', '.join(SETUP_TITLES)})")
    if kit is None:
        log(f"bench: {args.kube_note}")
        setups = [s for s in setups if "kube" not in s]
    q, _, b = args.qps.partition("/")
    qps, burst = float(q), int(b or 0) or int(float(q) * 1.5)
    tree = git_state()
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in setups}
    t0 = time.perf_counter()
    for i in range(args.runs):
        for s in setups:  # interleaved: a change in the machine's load spreads over all
            wait_idle(20)
            log(f"bench: {s} run {i + 1}/{args.runs}")
            try:
                prof = (os.path.join(args.profile, f"{s.replace('/', '-')}-{i + 1}.prof")
                        if args.profile and s.endswith("/pykcm") else None)
                if prof:
                    os.makedirs(args.profile, exist_ok=True)
                r = await run_one(Setup(s, kit, qps, burst, prof), args.pods, args.waves,
                                  args.timeout, args.keep_logs)
            except BenchError as exc:
                log(f"bench: {s} run {i + 1} failed: {exc}")
                r = {"error": str(exc).splitlines()[0][:300] + " ..."}
            results[s].append(r)
    text = report(args, results, time.perf_counter() - t0, tree)
    print(text)
    if not args.no_record:
        append_results(text)
        log("bench: appended to bench/RESULTS.md")
    return 1 if any("error" in r for rs in results.values() for r in rs) else 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="100 pods, 1 run (smoke run)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--waves", type=int, default=5)
    p.add_argument("--qps", default="20/30", help="both managers' --kube-api-qps/burst")
    p.add_argument("--setups", default="kube/kube,kube/pykcm,pykcm/pykcm")
    p.add_argument("--timeout", type=float, default=300.0, help="per wave (s)")
    p.add_argument("--keep-logs", metavar="DIR", help="copy each manager's log to DIR")
    p.add_argument("--profile", metavar="DIR",
                   help="run pykcm's manager under cProfile, a dump per run in DIR (slower: "
                   "for finding what bounds it, not for the figures)")
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.pods, args.runs = 100, 1
    args.load_note = machine_load()
    return run_async(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
