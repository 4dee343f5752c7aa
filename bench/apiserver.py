"""Benchmark of the embedded API server (`pykcm apiserver`).

    .venv/bin/python bench/apiserver.py [--quick] [--no-record]

The server runs as a SUBPROCESS (its own core); this process drives it with
one aiohttp ClientSession (TCPConnector limit=32), orjson bodies, uvloop.
Main run: durable mode (fresh temp --data-dir), plain HTTP (--insecure-http)
so the server is measured, not TLS. Measured, in order:

  1. creates/s       32 concurrent clients POST N pods (~2 KB JSON each)
  2. updates/s       32 concurrent clients merge-patch N pods (one label + one annotation)
  3. LIST            GET of the N pods, full body read; 5 runs each for
                     resourceVersion unset and resourceVersion=0 (median, min)
  4. watch fan-out   10 watchers (?watch=1&resourceVersion=<current>) while 32
                     clients stream N/2 merge-patches: events/s over all watchers
                     (events received / first write -> last event) and lag
                     (last write's response -> last watcher's last event)
  5. deletecollection  DELETE of the collection; then a LIST must show 0 pods

Then, for comparison in the same run: creates/s + LIST against the in-memory
server (no --data-dir), and creates/s over HTTPS (durable, TLS).

Prints a Markdown table and appends a dated section to bench/RESULTS.md
(--no-record to skip). --quick: 1,000 pods (smoke run). Non-2xx responses
are counted per phase and the first few are shown with request and body.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as _dt
import gc
import itertools
import math
import os
import platform
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import yaml  # type: ignore[import-untyped, unused-ignore]

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
from _common import append_results, busy_cpu_seconds, cpu_model, log, wait_idle

RESULTS = os.path.join(HERE, "RESULTS.md")

CONCURRENCY = 32
WATCHERS = 10
LIST_RUNS = 5
NS = "bench"
PODS_PATH = f"/api/v1/namespaces/{NS}/pods"
JSON = "application/json"
MERGE = "application/merge-patch+json"

# kube-apiserver v1.36 + etcd, same kind of 2-core machine (given in the brief).
REFERENCE = {
    "creates": 1690.0,     # creates/s
    "updates": 1030.0,     # merge-patch updates/s
    "list_ms": 174.0,      # LIST of 10,000 pods
    "events": 10400.0,     # events/s delivered to 10 watchers
    "lag_ms": 1.4,         # last write -> last watcher event
    "delcol_s": 18.0,      # deletecollection of 10,000 pods
}
TARGET = {
    "creates": (">=", 2000.0),
    "updates": (">=", 1200.0),
    "list_ms": ("<=", 150.0),
    "events": (">=", 12000.0),
    "lag_ms": ("<=", 50.0),
    "delcol_s": ("<=", 10.0),
}


class BenchError(Exception):
    """Aborts the benchmark with one line."""


# -- the workload ---------------------------------------------------------------------------


def make_pod(i: int) -> dict[str, Any]:
    """A realistic pod of about 2 KB of JSON: labels, annotations, 2 containers
    with env, resources, ports, volumeMounts; volumes, tolerations."""
    name = f"web-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {
                "app.kubernetes.io/name": "web",
                "app.kubernetes.io/instance": "web-prod",
                "app.kubernetes.io/version": "1.27.3",
                "tier": "frontend",
                "pod-index": str(i),
            },
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9113",
                "kubectl.kubernetes.io/default-container": "web",
                "bench.pykcm.io/generation": "0",
            },
        },
        "spec": {
            "serviceAccountName": "default",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 101, "fsGroup": 101},
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27.3",
                    "imagePullPolicy": "IfNotPresent",
                    "args": ["-g", "daemon off;"],
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                              {"name": "https", "containerPort": 8443, "protocol": "TCP"}],
                    "env": [
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {
                            "apiVersion": "v1", "fieldPath": "metadata.name"}}},
                        {"name": "POD_IP", "valueFrom": {"fieldRef": {
                            "apiVersion": "v1", "fieldPath": "status.podIP"}}},
                        {"name": "LOG_LEVEL", "value": "info"},
                        {"name": "UPSTREAM", "value": "http://api.default.svc:8080"},
                    ],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                  "limits": {"cpu": "500m", "memory": "256Mi"}},
                    "volumeMounts": [
                        {"name": "config", "mountPath": "/etc/nginx/conf.d", "readOnly": True},
                        {"name": "cache", "mountPath": "/var/cache/nginx"},
                        {"name": "tls", "mountPath": "/etc/tls", "readOnly": True},
                    ],
                },
                {
                    "name": "exporter",
                    "image": "nginx/nginx-prometheus-exporter:1.1.0",
                    "args": ["--nginx.scrape-uri=http://127.0.0.1:8080/stub_status"],
                    "ports": [{"name": "metrics", "containerPort": 9113, "protocol": "TCP"}],
                    "env": [{"name": "GOMAXPROCS", "value": "1"}],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                  "limits": {"cpu": "50m", "memory": "32Mi"}},
                    "volumeMounts": [{"name": "cache", "mountPath": "/tmp/cache"}],
                },
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": "web-config"}},
                {"name": "cache", "emptyDir": {"sizeLimit": "256Mi"}},
                {"name": "tls", "secret": {"secretName": "web-tls"}},
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
        },
    }


def patch_body(gen: int, i: int) -> bytes:
    return orjson.dumps({"metadata": {
        "labels": {"rollout": f"g{gen}-{i}"},
        "annotations": {"bench.pykcm.io/generation": str(gen)}}})


# -- errors ---------------------------------------------------------------------------------


@dataclass
class Failures:
    counts: dict[str, Counter[str]] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)
    per_phase_samples: Counter[str] = field(default_factory=Counter)

    def add(self, phase: str, what: str, method: str, url: str, req: bytes | None,
            resp: str) -> None:
        self.counts.setdefault(phase, Counter())[what] += 1
        if self.per_phase_samples[phase] < 3:
            self.per_phase_samples[phase] += 1
            body = (req or b"")[:300].decode("utf-8", "replace")
            self.samples.append(f"[{phase}] {method} {url} -> {what}\n"
                                f"    request body: {body or '(none)'}\n"
                                f"    response: {resp[:1000]}")

    def total(self, phase: str | None = None) -> int:
        if phase is not None:
            return sum(self.counts.get(phase, Counter()).values())
        return sum(sum(c.values()) for c in self.counts.values())

    def summary(self) -> str:
        if not self.counts:
            return "none"
        return "; ".join(f"{p}: " + ", ".join(f"{n}× {w}" for w, n in c.most_common())
                         for p, c in self.counts.items())


FAIL = Failures()


# -- the server subprocess ------------------------------------------------------------------


class ServerProc:
    """`pykcm apiserver` in a subprocess on an ephemeral port."""

    def __init__(self, label: str, *, durable: bool, tls: bool, profile: str | None = None):
        self.label = label
        self.durable = durable
        self.tls = tls
        self.profile = profile
        self.work = tempfile.mkdtemp(prefix=f"pykcm-bench-{label}-")
        self.data_dir = os.path.join(self.work, "data") if durable else None
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.token = ""
        self.ssl: ssl.SSLContext | None = None
        self.stdout_path = os.path.join(self.work, "stdout")
        self.stderr_path = os.path.join(self.work, "stderr")

    def start(self, timeout: float = 60.0) -> None:
        cmd = [sys.executable]
        if self.profile:
            cmd += ["-m", "cProfile", "-o", self.profile]
        cmd += ["-m", "pykcm.cli.main", "apiserver", "--port", "0"]
        if self.data_dir:
            cmd += ["--data-dir", self.data_dir]
        if not self.tls:
            cmd.append("--insecure-http")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        kubeconfig = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"the {self.label} server exited with code "
                                 f"{self.proc.returncode} at start: {self.last_error()}")
            for line in self._read(self.stdout_path).splitlines():
                if line.startswith("kubeconfig: "):
                    kubeconfig = line[len("kubeconfig: "):].strip()
            if kubeconfig and os.path.exists(kubeconfig):
                break
            time.sleep(0.05)
        else:
            raise BenchError(f"the {self.label} server did not start within {timeout:.0f} s: "
                             f"{self.last_error() or 'no output'}")
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        cluster = cfg["clusters"][0]["cluster"]
        self.url = cluster["server"].rstrip("/")
        self.token = cfg["users"][0]["user"]["token"]
        if self.url.startswith("https://"):
            ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
            self.ssl = ssl.create_default_context(cadata=ca)

    @staticmethod
    def _read(path: str) -> str:
        try:
            with open(path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def last_error(self) -> str:
        lines = [ln for ln in self._read(self.stderr_path).splitlines() if ln.strip()]
        return lines[-1].strip() if lines else ""

    def stderr_text(self) -> str:
        return self._read(self.stderr_path)

    def rss_mib(self) -> float | None:
        if self.proc is None:
            return None
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        if self.proc is None:
            return 0.0
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        p = self.proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGINT)  # graceful: flushes the log, writes a cProfile dump
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.proc = None
        shutil.rmtree(self.work, ignore_errors=True)


# -- the client -----------------------------------------------------------------------------


class Client:
    def __init__(self, srv: ServerProc, limit: int = CONCURRENCY) -> None:
        self.base = srv.url
        self.headers = {"Authorization": f"Bearer {srv.token}", "Accept": JSON}
        self.ssl: ssl.SSLContext | bool = srv.ssl if srv.ssl is not None else False
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, ssl=self.ssl),
            timeout=aiohttp.ClientTimeout(total=300),
            headers=self.headers,
            json_serialize=lambda o: orjson.dumps(o).decode(),
            auto_decompress=False,
            skip_auto_headers=("User-Agent",),
        )

    async def close(self) -> None:
        await self.session.close()

    async def request(self, phase: str, method: str, path: str, body: bytes | None = None,
                      ctype: str = JSON) -> tuple[int, bytes | None]:
        """One request; non-2xx and transport errors are counted in FAIL (status 0)."""
        url = self.base + path
        try:
            async with self.session.request(
                    method, url, data=body,
                    headers={"Content-Type": ctype} if body is not None else None) as r:
                data = await r.read()
                status = r.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            FAIL.add(phase, type(exc).__name__, method, path, body, str(exc) or repr(exc))
            return 0, None
        if not 200 <= status < 300:
            FAIL.add(phase, f"HTTP {status}", method, path, body,
                     data.decode("utf-8", "replace"))
        return status, data


@dataclass
class PoolResult:
    secs: float
    ok: int
    lat: list[float]
    last: float  # perf_counter() of the last response
    done: list[float]  # perf_counter() of every response, in order

    def stats(self, t0: float, windows: int = 5) -> dict[str, Any]:
        """Overall rate, latency percentiles, and the rates of `windows` consecutive
        slices of the run (their median resists a burst of load from elsewhere)."""
        rates = []
        k = len(self.done) // windows
        if k:
            edges = [t0] + [self.done[(j + 1) * k - 1] for j in range(windows)]
            rates = [k / (b - a) for a, b in itertools.pairwise(edges) if b > a]
        return {"ok": self.ok, "secs": self.secs, "rate": self.ok / self.secs,
                "p50": pct(self.lat, 50) * 1e3, "p99": pct(self.lat, 99) * 1e3,
                "last": self.last, "windows": rates,
                "window_median": statistics.median(rates) if rates else float("nan")}


async def pool(n: int, fn: Callable[[int], Awaitable[bool]],
               concurrency: int = CONCURRENCY) -> tuple[float, PoolResult]:
    """Run fn(0..n-1) on `concurrency` workers; returns (start time, result)."""
    it = iter(range(n))
    lat: list[float] = []
    done: list[float] = []
    ok = 0

    async def worker() -> None:
        nonlocal ok
        for i in it:  # one shared iterator: next() is synchronous, so no races
            t = time.perf_counter()
            if await fn(i):
                ok += 1
            e = time.perf_counter()
            done.append(e)
            lat.append(e - t)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    end = time.perf_counter()
    return t0, PoolResult(end - t0, ok, lat, done[-1] if done else end, done)


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


# -- the phases -----------------------------------------------------------------------------


async def ensure_namespace(c: Client) -> None:
    st, data = await c.request("namespace", "POST", "/api/v1/namespaces",
                               orjson.dumps({"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": NS}}))
    if st not in (201, 409):
        raise BenchError(f"cannot create namespace {NS}: HTTP {st} "
                         f"{(data or b'').decode('utf-8', 'replace')[:300]}")


async def warm_up(c: Client) -> None:
    """A few requests of every kind so that first-call costs are not measured."""
    ns = "bench-warmup"
    await c.request("warm-up", "POST", "/api/v1/namespaces",
                    orjson.dumps({"metadata": {"name": ns}}))
    path = f"/api/v1/namespaces/{ns}/pods"

    async def one(i: int) -> bool:
        pod = make_pod(i)
        pod["metadata"]["namespace"] = ns
        st, _ = await c.request("warm-up", "POST", path, orjson.dumps(pod))
        st2, _ = await c.request("warm-up", "PATCH", f"{path}/{pod['metadata']['name']}",
                                 patch_body(0, i), MERGE)
        return st == 201 and st2 == 200

    await pool(100, one)
    await c.request("warm-up", "GET", path)


async def bench_creates(c: Client, n: int, phase: str) -> dict[str, Any]:
    bodies = [orjson.dumps(make_pod(i)) for i in range(n)]

    async def one(i: int) -> bool:
        st, _ = await c.request(phase, "POST", PODS_PATH, bodies[i])
        return st == 201

    t0, res = await pool(n, one)
    return {"n": n, **res.stats(t0), "body_bytes": statistics.mean(len(b) for b in bodies)}


async def bench_updates(c: Client, n_pods: int, n: int, gen: int, phase: str
                        ) -> dict[str, Any]:
    bodies = [patch_body(gen, i) for i in range(n)]

    async def one(i: int) -> bool:
        st, _ = await c.request(phase, "PATCH", f"{PODS_PATH}/web-{i % n_pods:05d}",
                                bodies[i], MERGE)
        return st == 200

    t0, res = await pool(n, one)
    return {"n": n, **res.stats(t0)}


async def bench_list(c: Client, expect: int, phase: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, query in (("unset", ""), ("0", "?resourceVersion=0")):
        times = []
        size = 0
        for run in range(LIST_RUNS):
            t = time.perf_counter()
            st, data = await c.request(phase, "GET", PODS_PATH + query)
            times.append(time.perf_counter() - t)
            if st != 200 or data is None:
                continue
            size = len(data)
            if run == 0:  # check once, outside the timing of the others
                got = len(orjson.loads(data)["items"])
                if got != expect:
                    FAIL.add(phase, f"LIST returned {got} items, expected {expect}", "GET",
                             PODS_PATH + query, None, "")
        out[label] = {"median_ms": statistics.median(times) * 1e3,
                      "min_ms": min(times) * 1e3, "bytes": size}
    return out


async def current_rv(c: Client) -> str:
    st, data = await c.request("watch", "GET", PODS_PATH + "?limit=1")
    if st != 200 or data is None:
        raise BenchError(f"cannot read the current resourceVersion: HTTP {st}")
    return str(orjson.loads(data)["metadata"]["resourceVersion"])


@dataclass
class WatchState:
    count: int = 0
    first: float = 0.0
    last: float = 0.0
    other: Counter[str] = field(default_factory=Counter)
    ended: str = ""


async def watch_consumer(resp: aiohttp.ClientResponse, st: WatchState) -> None:
    buf = b""
    try:
        async for chunk in resp.content.iter_chunked(1 << 16):
            now = time.perf_counter()
            if buf:
                chunk = buf + chunk
            lines = chunk.split(b"\n")
            buf = lines.pop()
            for line in lines:
                if not line:
                    continue
                # Cheap type check; the server writes '{"type":"X","object":...}'.
                if line.startswith(b'{"type":"'):
                    typ = line[9:line.index(b'"', 9)].decode()
                else:
                    typ = orjson.loads(line).get("type", "?")
                if typ == "MODIFIED":
                    if not st.count:
                        st.first = now
                    st.count += 1
                    st.last = now
                else:
                    st.other[typ] += 1
                    if typ == "ERROR":
                        FAIL.add("watch", "ERROR event", "GET", str(resp.url.path_qs), None,
                                 line.decode("utf-8", "replace"))
        st.ended = "stream closed by the server"
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported as the reason the stream ended
        st.ended = f"{type(exc).__name__}: {exc}"


async def bench_watch(c: Client, srv: ServerProc, n_pods: int, n: int) -> dict[str, Any]:
    rv = await current_rv(c)
    # The watchers get their own connections, so the 32 writers keep all 32 of c's.
    wsess = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=WATCHERS, ssl=c.ssl),
        timeout=aiohttp.ClientTimeout(total=None, sock_read=None, sock_connect=30),
        headers=c.headers, auto_decompress=False)
    states = [WatchState() for _ in range(WATCHERS)]
    tasks: list[asyncio.Task[None]] = []
    resps: list[aiohttp.ClientResponse] = []
    try:
        path = f"{PODS_PATH}?watch=1&resourceVersion={rv}"
        for st in states:
            r = await wsess.get(c.base + path)
            if r.status != 200:
                body = (await r.read()).decode("utf-8", "replace")
                FAIL.add("watch", f"HTTP {r.status}", "GET", path, None, body)
                raise BenchError(f"watch failed: HTTP {r.status} {body[:200]}")
            resps.append(r)
            tasks.append(asyncio.create_task(watch_consumer(r, st)))
        await asyncio.sleep(0.2)  # every watcher registered before the first write
        t_first = time.perf_counter()
        res = await bench_updates(c, n_pods, n, gen=2, phase="watch")
        expected = res["ok"]
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline:
            if all(s.count >= expected or s.ended for s in states):
                break
            await asyncio.sleep(0.001)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for r in resps:
            r.close()
        await wsess.close()
    total = sum(s.count for s in states)
    t_last = max((s.last for s in states), default=0.0)
    complete = all(s.count >= expected for s in states)
    return {
        "writes": n, "writes_ok": expected, "write_rate": res["rate"],
        "events": total, "expected_events": expected * WATCHERS, "complete": complete,
        "events_per_s": total / (t_last - t_first) if t_last > t_first else 0.0,
        # Negative when the last event reached every watcher before the last write's
        # response reached its client: no lag, reported as 0.
        "lag_ms": max(0.0, (t_last - res["last"]) * 1e3),
        "lag_raw_ms": (t_last - res["last"]) * 1e3,
        "short": [f"watcher {i}: {s.count}/{expected} ({s.ended or 'still open'})"
                  for i, s in enumerate(states) if s.count < expected],
        "other": sum((s.other for s in states), Counter()),
    }


async def bench_deletecollection(c: Client) -> dict[str, Any]:
    t = time.perf_counter()
    st, data = await c.request("deletecollection", "DELETE", PODS_PATH)
    secs = time.perf_counter() - t
    deleted = None
    if st == 200 and data is not None:
        try:
            deleted = len(orjson.loads(data).get("items") or [])
        except orjson.JSONDecodeError:
            pass
    st2, data2 = await c.request("deletecollection", "GET", PODS_PATH)
    remaining = len(orjson.loads(data2)["items"]) if st2 == 200 and data2 else None
    if remaining:
        FAIL.add("deletecollection", f"{remaining} pods remain after deletecollection",
                 "GET", PODS_PATH, None, "")
    return {"secs": secs, "status": st, "deleted": deleted, "remaining": remaining}


# -- runs -----------------------------------------------------------------------------------


async def run_durable(args: argparse.Namespace, n: int) -> dict[str, Any]:
    srv = ServerProc("durable", durable=True, tls=False, profile=args.profile_server)
    out: dict[str, Any] = {}
    try:
        srv.start()
        c = Client(srv)
        try:
            await ensure_namespace(c)
            await warm_up(c)
            log(f"durable/http: {n} creates ...")
            out["creates"] = await measured(srv, bench_creates(c, n, "creates"))
            out["rss_after_creates"] = srv.rss_mib()
            log(f"  {out['creates']['rate']:,.0f} creates/s")
            log(f"durable/http: {n} merge-patch updates ...")
            out["updates"] = await measured(srv, bench_updates(c, n, n, gen=1,
                                                                phase="updates"))
            log(f"  {out['updates']['rate']:,.0f} updates/s")
            log(f"durable/http: LIST x{LIST_RUNS} x2 ...")
            out["list"] = await bench_list(c, n, "list")
            log(f"  unset {out['list']['unset']['median_ms']:.0f} ms, "
                f"rv=0 {out['list']['0']['median_ms']:.0f} ms")
            nw = max(1, n // 2)
            log(f"durable/http: watch fan-out, {WATCHERS} watchers, {nw} updates ...")
            out["watch"] = await measured(srv, bench_watch(c, srv, n, nw))
            log(f"  {out['watch']['events_per_s']:,.0f} events/s, "
                f"lag {out['watch']['lag_ms']:.1f} ms")
            out["rss_end"] = srv.rss_mib()
            log("durable/http: deletecollection ...")
            out["delcol"] = await measured(srv, bench_deletecollection(c))
            log(f"  {out['delcol']['secs']:.2f} s, {out['delcol']['remaining']} remain")
        finally:
            await c.close()
    finally:
        out["server_stderr"] = srv.stderr_text()
        srv.stop()
    return out


async def _run_creates(label: str, phase: str, n: int, *, durable: bool, tls: bool,
                       with_list: bool) -> dict[str, Any]:
    """A fresh server, n creates (and optionally the LIST figures), then stop it."""
    srv = ServerProc(phase, durable=durable, tls=tls)
    out: dict[str, Any] = {}
    try:
        srv.start()
        c = Client(srv)
        try:
            await ensure_namespace(c)
            await warm_up(c)
            log(f"{label}: {n} creates ...")
            out["creates"] = await measured(srv, bench_creates(c, n, f"{phase}-creates"))
            log(f"  {out['creates']['rate']:,.0f} creates/s")
            if with_list:
                out["list"] = await bench_list(c, n, f"{phase}-list")
                log(f"  LIST unset {out['list']['unset']['median_ms']:.0f} ms, "
                    f"rv=0 {out['list']['0']['median_ms']:.0f} ms")
        finally:
            await c.close()
    finally:
        out["server_stderr"] = srv.stderr_text()
        srv.stop()
    return out


async def run_memory(n: int) -> dict[str, Any]:
    return await _run_creates("in-memory/http", "mem", n, durable=False, tls=False,
                              with_list=True)


async def run_https(n: int) -> dict[str, Any]:
    return await _run_creates("durable/https", "https", n, durable=True, tls=True,
                              with_list=False)


async def measured(srv: ServerProc, coro: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """Run one phase; add the CPU use of server, client and everything else on the
    machine (as shares of one core: other engineers' work skews the figures)."""
    s0, c0, b0 = srv.cpu_seconds(), time.process_time(), busy_cpu_seconds()
    t0 = time.perf_counter()
    out = await coro
    wall = time.perf_counter() - t0
    srv_s, cli_s = srv.cpu_seconds() - s0, time.process_time() - c0
    out["server_cpu"] = srv_s / wall
    out["server_cpu_s"] = srv_s
    out["client_cpu"] = cli_s / wall
    out["other_cpu"] = max(0.0, busy_cpu_seconds() - b0 - srv_s - cli_s) / wall
    return out


# -- report ---------------------------------------------------------------------------------


def machine() -> str:
    cpu = cpu_model()
    return (f"{platform.machine()}, {os.cpu_count()} cores (nproc {len(os.sched_getaffinity(0))})"
            f", {cpu}, Python {platform.python_version()}")


def fmt(v: float | None, unit: str) -> str:
    if v is None or math.isnan(v):
        return "n/a"
    if unit == "/s":
        return f"{v:,.0f}/s"
    if unit == "ms":
        return f"{v:,.1f} ms" if v < 10 else f"{v:,.0f} ms"
    if unit == "s":
        return f"{v:,.2f} s"
    return f"{v:,.0f}"


def row(metric: str, key: str | None, v: float | None, unit: str, *,
        with_target: bool = True) -> str:
    ref = REFERENCE.get(key) if key else None
    tgt = TARGET.get(key) if key and with_target else None
    tcell = "—"
    if tgt is not None:
        op, lim = tgt
        met = v is not None and not math.isnan(v) and (v >= lim if op == ">=" else v <= lim)
        tcell = f"{'≥' if op == '>=' else '≤'} {fmt(lim, unit)} {'✅' if met else '❌'}"
    ratio = "—"
    if ref and v is not None and not math.isnan(v):
        r = v / ref
        better = r >= 1 if unit == "/s" else r <= 1
        ratio = f"{r:.2f}× ({'better' if better else 'worse'})"
    return (f"| {metric} | {fmt(v, unit)} | {fmt(ref, unit) if ref else '—'} | {tcell} "
            f"| {ratio} |")


def report(args: argparse.Namespace, n: int, d: dict[str, Any], m: dict[str, Any] | None,
           h: dict[str, Any] | None, wall: float) -> str:
    L: list[str] = []
    when = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    title = "API server" + (" (quick smoke run, not comparable)" if args.quick else "")
    L.append(f"## {title} — {when}")
    L.append("")
    L.append(f"Machine: {machine()}; load average at start "
             f"{args.loadavg[0]:.2f} {args.loadavg[1]:.2f} {args.loadavg[2]:.2f}.  ")
    L.append(f"Run: `bench/apiserver.py{' --quick' if args.quick else ''}`, {n:,} pods "
             f"(~{d.get('creates', {}).get('body_bytes', 0):,.0f} B JSON each), "
             f"{CONCURRENCY} concurrent clients (aiohttp, one session, limit={CONCURRENCY}, "
             f"orjson, uvloop); server in a subprocess, durable (--data-dir, fresh), plain "
             f"HTTP unless noted; {wall:.0f} s wall.")
    L.append("")
    L.append("| metric | pykcm | kube-apiserver v1.36 (reference) | target | ratio to reference |")
    L.append("|---|---|---|---|---|")
    cr, up, ls, w, dc = (d.get(k) for k in ("creates", "updates", "list", "watch", "delcol"))
    if cr:
        L.append(row(f"creates/s ({n:,} pods)", "creates", cr["rate"], "/s"))
    if up:
        L.append(row(f"merge-patch updates/s ({n:,})", "updates", up["rate"], "/s"))
    if ls:
        L.append(row(f"LIST {n:,} pods, rv unset (median of {LIST_RUNS})", "list_ms",
                     ls["unset"]["median_ms"], "ms"))
        L.append(row(f"LIST {n:,} pods, rv=0 (median of {LIST_RUNS})", "list_ms",
                     ls["0"]["median_ms"], "ms"))
    if w:
        L.append(row(f"watch fan-out events/s ({WATCHERS} watchers, {w['writes']:,} updates)",
                     "events", w["events_per_s"], "/s"))
        L.append(row("watch lag, last write → last event", "lag_ms", w["lag_ms"], "ms"))
    if dc:
        L.append(row(f"deletecollection of {n:,} pods", "delcol_s", dc["secs"], "s"))
    if h and h.get("creates"):
        L.append(row("creates/s over HTTPS (durable, TLS)", "creates", h["creates"]["rate"],
                     "/s", with_target=False))
    L.append("")
    L.append("Ratio = pykcm ÷ reference (for times, below 1 is better).")
    if m:
        L.append("")
        L.append("Cost of durability (same run, same workload):")
        L.append("")
        L.append("| metric | durable (--data-dir) | in-memory | durable ÷ in-memory |")
        L.append("|---|---|---|---|")
        if cr and m.get("creates"):
            L.append(f"| creates/s | {fmt(cr['rate'], '/s')} | {fmt(m['creates']['rate'], '/s')}"
                     f" | {cr['rate'] / m['creates']['rate']:.2f} |")
        if cr and m.get("creates"):
            a, b = (r["server_cpu_s"] / r["ok"] * 1e6 if r["ok"] else float("nan")
                    for r in (cr, m["creates"]))
            L.append(f"| server CPU per create (less sensitive to other load) | {a:,.0f} µs | {b:,.0f} µs"
                     f" | {a / b:.2f} |")
        if ls and m.get("list"):
            for k, lab in (("unset", "rv unset"), ("0", "rv=0")):
                a, b = ls[k]["median_ms"], m["list"][k]["median_ms"]
                L.append(f"| LIST {lab} (median) | {fmt(a, 'ms')} | {fmt(b, 'ms')} | "
                         f"{a / b:.2f} |")
    L.append("")
    det: list[str] = []
    if cr:
        det.append(f"create latency p50 {cr['p50']:.1f} ms, p99 {cr['p99']:.1f} ms")
    if up:
        det.append(f"update latency p50 {up['p50']:.1f} ms, p99 {up['p99']:.1f} ms")
    if ls:
        det.append(f"LIST min {ls['unset']['min_ms']:.0f} ms (rv unset) / "
                   f"{ls['0']['min_ms']:.0f} ms (rv=0), body {ls['unset']['bytes'] / 1e6:.1f} MB")
    if w:
        det.append(f"watch: {w['events']:,}/{w['expected_events']:,} events received"
                   f"{'' if w['complete'] else ' (INCOMPLETE)'}, writers "
                   f"{w['write_rate']:,.0f} updates/s during fan-out, raw lag "
                   f"{w['lag_raw_ms']:.1f} ms")
    if dc:
        det.append(f"deletecollection: HTTP {dc['status']}, {dc['deleted']} returned, "
                   f"{dc['remaining']} remaining")
    cpu = [f"{k} {r['server_cpu']:.0%}/{r['client_cpu']:.0%}/{r['other_cpu']:.0%}"
           for k, r in (("creates", cr), ("updates", up), ("watch", w),
                        ("deletecollection", dc), ("in-memory creates", (m or {}).get("creates")),
                        ("https creates", (h or {}).get("creates"))) if r]
    per = [f"{k} {r['server_cpu_s'] / r['ok'] * 1e6:,.0f} µs "
           f"(≤ {r['ok'] / r['server_cpu_s']:,.0f}/s on a core of its own)"
           for k, r in (("create", cr), ("update", up), ("https create",
                                                          (h or {}).get("creates")))
           if r and r.get("ok") and r.get("server_cpu_s")]
    if per:
        det.append("server CPU per request: " + ", ".join(per))
    if cpu:
        det.append("CPU as share of one core, server/bench client/other processes: "
                   + ", ".join(cpu))
    for k, r in (("creates", cr), ("updates", up), ("in-memory creates",
                                                      (m or {}).get("creates"))):
        if r and r.get("windows"):
            det.append(f"{k}/s in 5 consecutive slices: "
                       + " ".join(f"{x:,.0f}" for x in r["windows"])
                       + f" (median {r['window_median']:,.0f})")
    rss = [f"{x:.0f} MiB" for x in (d.get("rss_after_creates"), d.get("rss_end")) if x]
    if rss:
        det.append("server RSS " + " → ".join(rss))
    if h and h.get("creates"):
        det.append(f"HTTPS create latency p50 {h['creates']['p50']:.1f} ms")
    L.append("Details: " + "; ".join(det) + ".  ")
    L.append(f"Non-2xx / failed requests: {FAIL.summary()}.")
    busy = [(k, r["other_cpu"]) for k, r in (
        ("creates", cr), ("updates", up), ("watch", w), ("deletecollection", dc),
        ("in-memory creates", (m or {}).get("creates")), ("https creates",
                                                         (h or {}).get("creates")))
        if r and r.get("other_cpu", 0) > 0.25]
    if busy:
        L.append("⚠️ The machine was shared: other processes used "
                 + ", ".join(f"{v:.0%} of a core during {k}" for k, v in busy)
                 + "; those figures are lower than on an idle machine (compare the server "
                 "CPU per request instead).")
    if w and w.get("short"):
        L.append("Watchers short of events: " + "; ".join(w["short"]) + ".")
    L.append("")
    return "\n".join(L)


async def main_async(args: argparse.Namespace) -> int:
    n = args.pods or (1000 if args.quick else 10000)
    args.loadavg = os.getloadavg()
    t0 = time.perf_counter()
    d = await run_durable(args, n)
    m = None if args.skip_memory else await run_memory(n)
    h = None if args.skip_https else await run_https(n)
    wall = time.perf_counter() - t0
    section = report(args, n, d, m, h, wall)
    print(section)
    if FAIL.samples:
        print("First failures (request → response):")
        for s in FAIL.samples:
            print(s)
    for label, r in (("durable", d), ("in-memory", m), ("https", h)):
        err = (r or {}).get("server_stderr", "").strip()
        if err:
            print(f"--- {label} server stderr (last 40 lines) ---")
            print("\n".join(err.splitlines()[-40:]))
    if not args.no_record:
        append_results(section)
        log(f"appended to {RESULTS}")
    return 1 if FAIL.total() else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1,000 pods (smoke run)")
    p.add_argument("--pods", type=int, help="number of pods (default 10,000; 1,000 with --quick)")
    p.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    p.add_argument("--skip-memory", action="store_true", help="skip the in-memory comparison")
    p.add_argument("--skip-https", action="store_true", help="skip the HTTPS comparison")
    p.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                   help="first wait up to SECONDS for the machine to be idle (shared machines)")
    p.add_argument("--profile-server", metavar="FILE",
                   help="run the durable server under cProfile, dump to FILE")
    args = p.parse_args()
    gc.freeze()
    if args.wait_idle > 0:
        wait_idle(args.wait_idle)
    try:
        import uvloop
    except ImportError:
        uvloop = None  # type: ignore[assignment]
    try:
        if uvloop is not None:
            return uvloop.run(main_async(args))
        return asyncio.run(main_async(args))
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
