"""Benchmark of the embedded API server (`pykcm apiserver`), side by side with kube-apiserver.

    .venv/bin/python bench/apiserver.py [--quick] [--runs N] [--no-kube] [--no-record]

Every server runs in processes of its own and is fresh for each run; this
process drives it with one aiohttp ClientSession (TCPConnector limit=32),
orjson bodies, uvloop. The same workload, data, client and concurrency for
every configuration:

  1. creates/s       32 concurrent clients POST N pods (~2 KB JSON each)
  2. updates/s       32 concurrent clients merge-patch N pods (one label + one annotation)
  3. LIST            GET of the N pods, full body read; 5 runs each for
                     resourceVersion unset and resourceVersion=0 (median, min)
  4. watch fan-out   10 watchers (?watch=1&resourceVersion=<current>) while 32
                     clients stream N/2 merge-patches: events/s over all watchers
                     (events received / first write -> last event) and lag
                     (last write's response -> last watcher's last event)
  5. deletecollection  DELETE of the collection; then a LIST must show 0 pods

Configurations, each run --runs times (interleaved; the report gives medians):

  pykcm-tls      `pykcm apiserver`, durable (fresh --data-dir, fsync on every
                 commit: its default), TLS
  kube           the real kube-apiserver v1.36.2 + etcd 3.6.13 (fsync on every
                 commit, etcd's default), from the kube-v1.36 kit; TLS (it has no
                 plain-HTTP port)
  pykcm-nofsync  pykcm durable with --unsafe-no-fsync (SQLite WAL synchronous=
                 NORMAL: survives a killed process, not a power loss), TLS
  kube-nofsync   the real server with etcd -unsafe-no-fsync: the same guarantee
  pykcm-mem      pykcm in-memory (no --data-dir), plain HTTP: creates + LIST only

Server CPU is read from /proc (kube: kube-apiserver + etcd). Without the kit
the real-server configurations are skipped with one line saying so.

Prints a Markdown section and appends it to bench/RESULTS.md (--no-record to
skip). --quick: 1,000 pods, one run (smoke run). Non-2xx responses are
counted per configuration and phase and the first few are shown with
request and body.
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
from _common import (
    append_results,
    busy_cpu_seconds,
    cpu_model,
    log,
    machine_load,
    proc_cpu,
    run_async,
    wait_idle,
)
from _kube import ETCD_VERSION, KUBE_VERSION, KubeServer, kit_or_reason

from pykcm.testing.upstream import KubeKit

RESULTS = os.path.join(HERE, "RESULTS.md")

CONCURRENCY = 32
WATCHERS = 10
LIST_RUNS = 5
NS = "bench"
PODS_PATH = f"/api/v1/namespaces/{NS}/pods"
JSON = "application/json"
MERGE = "application/merge-patch+json"

# The targets for pykcm (judged in the report's last column).
TARGET = {
    "creates": (">=", 2000.0),
    "updates": (">=", 1200.0),
    "list_ms": ("<=", 150.0),
    "events": (">=", 12000.0),
    "lag_ms": ("<=", 50.0),
    "delcol_s": ("<=", 10.0),
    "rss_ratio": ("<=", 1.5),
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
    prefix: str = ""  # the configuration being run

    def add(self, phase: str, what: str, method: str, url: str, req: bytes | None,
            resp: str) -> None:
        if self.prefix:
            phase = f"{self.prefix} {phase}"
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

    def __init__(self, label: str, *, durable: bool, tls: bool, profile: str | None = None,
                 fsync: bool = True):
        self.label = label
        self.durable = durable
        self.fsync = fsync
        self.tls = tls
        self.profile = profile
        self.work = tempfile.mkdtemp(prefix=f"pykcm-bench-{label}-")
        self.data_dir = os.path.join(self.work, "data") if durable else None
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.token = ""
        self.kubeconfig = ""
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
        if self.data_dir and not self.fsync:
            cmd.append("--unsafe-no-fsync")
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
        self.kubeconfig = kubeconfig
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
        return proc_cpu(self.proc.pid if self.proc is not None else None)

    def cpu_split(self) -> dict[str, float]:
        return {"pykcm apiserver": self.cpu_seconds()}

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
    def __init__(self, srv: ServerProc | KubeServer, limit: int = CONCURRENCY) -> None:
        self.base = srv.url
        # identity: kube-apiserver gzips large responses for clients that accept it (pykcm
        # never does); both servers are measured without response compression.
        self.headers = {"Authorization": f"Bearer {srv.token}", "Accept": JSON,
                        "Accept-Encoding": "identity"}
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
    await ensure_serviceaccount(c, ns)
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


async def bench_watch(c: Client, n_pods: int, n: int) -> dict[str, Any]:
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

# The configurations of one repetition, in the order they run (interleaved, so that a
# change in the machine's load spreads over all of them). "full": the whole workload;
# otherwise creates and LIST only.
CONFIGS: dict[str, dict[str, Any]] = {
    "pykcm-tls": {"kind": "pykcm", "durable": True, "tls": True, "fsync": True, "full": True},
    "kube": {"kind": "kube", "fsync": True, "full": True},
    "pykcm-nofsync": {"kind": "pykcm", "durable": True, "tls": True, "fsync": False,
                      "full": True},
    "kube-nofsync": {"kind": "kube", "fsync": False, "full": True},
    "pykcm-mem": {"kind": "pykcm", "durable": False, "tls": False, "full": False},
}
TITLES = {
    "pykcm-tls": "pykcm (durable, fsync, TLS)",
    "pykcm-nofsync": "pykcm (durable, --unsafe-no-fsync, TLS)",
    "pykcm-mem": "pykcm (in-memory, plain HTTP)",
    "kube": f"kube-apiserver {KUBE_VERSION} + etcd {ETCD_VERSION} (fsync)",
    "kube-nofsync": f"kube-apiserver {KUBE_VERSION} + etcd {ETCD_VERSION} (-unsafe-no-fsync)",
}


async def ensure_serviceaccount(c: Client, ns: str) -> None:
    """The namespace's ``default`` ServiceAccount, without token automount.

    kube-apiserver's ServiceAccount admission refuses pods whose account does
    not exist (the serviceaccount controller, not run here, would create it)
    and mounts a token volume into every pod unless the account says not to:
    created with automountServiceAccountToken=false, the pods stay the same
    objects on both servers. pykcm's server stores the account too (same
    requests on both).
    """
    st, data = await c.request("setup", "POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                               orjson.dumps({"apiVersion": "v1", "kind": "ServiceAccount",
                                             "metadata": {"name": "default"},
                                             "automountServiceAccountToken": False}))
    if st not in (201, 409):
        raise BenchError(f"cannot create serviceaccount {ns}/default: HTTP {st} "
                         f"{(data or b'').decode('utf-8', 'replace')[:300]}")


async def stored_pod(c: Client) -> tuple[int | None, int]:
    """Size of a pod as read back, and of its managedFields (0 if the server keeps none)."""
    st, data = await c.request("setup", "GET", f"{PODS_PATH}/web-00000")
    if st != 200 or data is None:
        return None, 0
    mf = orjson.loads(data)["metadata"].get("managedFields")
    return len(data), len(orjson.dumps(mf)) if mf else 0


def make_server(label: str, cfg: dict[str, Any], kit: KubeKit | None,
                profile: str | None) -> ServerProc | KubeServer:
    if cfg["kind"] == "kube":
        assert kit is not None
        return KubeServer(kit, label, fsync=cfg["fsync"])
    return ServerProc(label, durable=cfg["durable"], tls=cfg["tls"], profile=profile,
                      fsync=cfg.get("fsync", True))


async def run_config(n: int, label: str, cfg: dict[str, Any], kit: KubeKit | None,
                     profile: str | None = None) -> dict[str, Any]:
    """A fresh server of one configuration, the workload, then stop it."""
    srv = make_server(label, cfg, kit, profile)
    FAIL.prefix = label
    out: dict[str, Any] = {}
    try:
        srv.start()
        c = Client(srv)
        try:
            await ensure_namespace(c)
            await ensure_serviceaccount(c, NS)
            await warm_up(c)
            log(f"{label}: {n} creates ...")
            rss0 = srv.rss_mib()
            out["creates"] = await measured(srv, bench_creates(c, n, "creates"))
            out["rss_after_creates"] = srv.rss_mib()
            out["stored_pod_bytes"], out["managed_fields_bytes"] = await stored_pod(c)
            if rss0 is not None and out["rss_after_creates"] is not None:
                # what one more stored object costs the server (its bytes + index overhead)
                out["rss_per_pod"] = (out["rss_after_creates"] - rss0) * 2**20 / n
            log(f"  {out['creates']['rate']:,.0f} creates/s")
            if cfg["full"]:
                log(f"{label}: {n} merge-patch updates ...")
                out["updates"] = await measured(srv, bench_updates(c, n, n, gen=1,
                                                                    phase="updates"))
                log(f"  {out['updates']['rate']:,.0f} updates/s")
            log(f"{label}: LIST x{LIST_RUNS} x2 ...")
            out["list"] = await bench_list(c, n, "list")
            log(f"  unset {out['list']['unset']['median_ms']:.0f} ms, "
                f"rv=0 {out['list']['0']['median_ms']:.0f} ms")
            if cfg["full"]:
                nw = max(1, n // 2)
                log(f"{label}: watch fan-out, {WATCHERS} watchers, {nw} updates ...")
                out["watch"] = await measured(srv, bench_watch(c, n, nw))
                log(f"  {out['watch']['events_per_s']:,.0f} events/s, "
                    f"lag {out['watch']['lag_ms']:.1f} ms")
                out["rss_end"] = srv.rss_mib()
                log(f"{label}: deletecollection ...")
                out["delcol"] = await measured(srv, bench_deletecollection(c))
                log(f"  {out['delcol']['secs']:.2f} s, {out['delcol']['remaining']} remain")
        finally:
            await c.close()
    except BenchError as exc:
        out["error"] = str(exc)
        log(f"{label}: ERROR {exc}")
    finally:
        out["server_stderr"] = srv.stderr_text()
        srv.stop()
    return out


async def measured(srv: ServerProc | KubeServer, coro: Awaitable[dict[str, Any]]
                   ) -> dict[str, Any]:
    """Run one phase; add the CPU use of server, client and everything else on the
    machine (as shares of one core: other engineers' work skews the figures).
    The server's CPU is kube-apiserver's + etcd's for the real one (split kept)."""
    split0 = srv.cpu_split()
    s0, c0, b0 = sum(split0.values()), time.process_time(), busy_cpu_seconds()
    t0 = time.perf_counter()
    out = await coro
    wall = time.perf_counter() - t0
    split1 = srv.cpu_split()
    srv_s, cli_s = sum(split1.values()) - s0, time.process_time() - c0
    out["server_cpu"] = srv_s / wall
    out["server_cpu_s"] = srv_s
    out["server_cpu_split"] = {k: split1[k] - split0.get(k, 0.0) for k in split1}
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
    if unit == "µs":
        return f"{v:,.0f} µs"
    if unit == "MiB":
        return f"{v:,.0f} MiB"
    if unit == "B":
        return f"{v:,.0f} B"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v:,.0f}"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not math.isnan(v) else None


# What each metric reads from one run's result (None when the run has no such figure).
Getter = Callable[[dict[str, Any]], float | None]


def _per_req(phase: str) -> Getter:
    def get(r: dict[str, Any]) -> float | None:
        p = r.get(phase)
        if not p or not p.get("ok") or not p.get("server_cpu_s"):
            return None
        return float(p["server_cpu_s"] / p["ok"] * 1e6)
    return get


def metrics(n: int) -> list[tuple[str, str, str | None, Getter]]:
    """(row title, unit, target key, getter) of the side-by-side table."""
    def g(*path: str) -> Getter:
        def get(r: dict[str, Any]) -> float | None:
            x: Any = r
            for k in path:
                if not isinstance(x, dict) or k not in x:
                    return None
                x = x[k]
            return _num(x)
        return get
    return [
        (f"creates/s ({n:,} pods)", "/s", "creates", g("creates", "rate")),
        (f"merge-patch updates/s ({n:,})", "/s", "updates", g("updates", "rate")),
        (f"LIST {n:,} pods, rv unset (median of {LIST_RUNS})", "ms", "list_ms",
         g("list", "unset", "median_ms")),
        (f"LIST {n:,} pods, rv=0 (median of {LIST_RUNS})", "ms", "list_ms",
         g("list", "0", "median_ms")),
        (f"watch fan-out events/s ({WATCHERS} watchers, {max(1, n // 2):,} updates)", "/s",
         "events", g("watch", "events_per_s")),
        ("watch lag, last write → last event", "ms", "lag_ms", g("watch", "lag_ms")),
        (f"deletecollection of {n:,} pods", "s", "delcol_s", g("delcol", "secs")),
        ("server CPU per create (kube: apiserver + etcd)", "µs", None, _per_req("creates")),
        ("server CPU per update", "µs", None, _per_req("updates")),
        (f"server RSS after {n:,} creates (kube: apiserver + etcd)", "MiB", None,
         g("rss_after_creates")),
        ("server RSS per stored pod (growth over the creates / pods)", "B", None,
         g("rss_per_pod")),
        ("... as a multiple of the pod's stored JSON (target ≤ 1.5)", "x", "rss_ratio",
         _rss_ratio),
    ]


def _rss_ratio(r: dict[str, Any]) -> float | None:
    per, size = r.get("rss_per_pod"), r.get("stored_pod_bytes")
    if not per or not size:
        return None
    return float(per / size)


def median_of(runs: list[dict[str, Any]], get: Getter) -> tuple[float | None, list[float]]:
    vals = [v for v in (get(r) for r in runs if "error" not in r) if v is not None]
    return (statistics.median(vals) if vals else None), vals


def ratio(p: float | None, k: float | None, unit: str) -> str:
    if p is None or k is None or not k:
        return "—"
    r = p / k
    higher_better = unit == "/s"
    better = r >= 1 if higher_better else r <= 1
    return f"{r:.2f}× ({'pykcm better' if better else 'kube better'})"


def target_cell(key: str | None, v: float | None, unit: str) -> str:
    tgt = TARGET.get(key) if key else None
    if tgt is None:
        return "—"
    op, lim = tgt
    met = v is not None and (v >= lim if op == ">=" else v <= lim)
    return f"{'≥' if op == '>=' else '≤'} {fmt(lim, unit)} {'✅' if met else '❌'}"


def report(args: argparse.Namespace, n: int, res: dict[str, list[dict[str, Any]]],
           wall: float, kube_note: str) -> str:
    L: list[str] = []
    when = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    title = "API server, side by side with kube-apiserver" + (
        " (quick smoke run, not comparable)" if args.quick else "")
    L.append(f"## {title} — {when}")
    L.append("")
    L.append(f"Machine: {machine()}; {args.load_note}.  ")
    sent = next((r["creates"].get("body_bytes") for rs in res.values() for r in rs
                 if r.get("creates")), 0)
    stored = "; ".join(
        f"{TITLES[k]} {statistics.median(v):,.0f} B"
        for k, rs in res.items()
        if (v := [r["stored_pod_bytes"] for r in rs if r.get("stored_pod_bytes")]))
    L.append(f"Run: `bench/apiserver.py {' '.join(sys.argv[1:])}`, {wall:.0f} s wall. "
             f"{n:,} pods (~{sent:,.0f} B JSON each as sent; as stored and read back: "
             f"{stored or 'n/a'}), {CONCURRENCY} concurrent clients (aiohttp, one session, "
             f"limit={CONCURRENCY}, orjson, uvloop; the same client, data and concurrency for "
             "every server); every server fresh for each run and in processes of its own; "
             f"{args.runs} repetition(s) of every configuration, interleaved; medians. The "
             "namespace's `default` ServiceAccount is created with "
             "automountServiceAccountToken=false on both servers, so kube-apiserver's "
             "admission adds no token volume to the pods. "
             "`Accept-Encoding: identity`: kube-apiserver would gzip large responses for a "
             "client that accepts it, pykcm never compresses; both are measured without.")
    mf = {k: statistics.median(v) for k, rs in res.items()
          if (v := [r.get("managed_fields_bytes", 0) for r in rs if "error" not in r])}
    if any(mf.get(k) for k in ("kube", "kube-nofsync")) and not any(
            mf.get(k) for k in ("pykcm-tls", "pykcm-nofsync", "pykcm-mem")):
        kmf = mf.get("kube") or mf.get("kube-nofsync") or 0
        L.append("")
        L.append(f"Work that differs: kube-apiserver records `managedFields` (server-side "
                 f"apply's field ownership, {kmf:,.0f} B of the pod as stored here) on every "
                 "create and update; pykcm's server keeps no managedFields, so that work and "
                 "those bytes are not part of its figures.")
    elif mf:
        L.append("")
        L.append("Both servers record `managedFields` (server-side apply's field ownership) on "
                 "every create and update; bytes of it in the pod as stored: " + ", ".join(
                     f"{TITLES.get(k, k)} {v:,.0f} B" for k, v in mf.items()) + ".")
    have_kube = bool(res.get("kube"))
    have_nofsync = bool(res.get("kube-nofsync"))
    if have_kube or have_nofsync:
        L.append("")
        L.append("Durability, pair by pair: kube-apiserver's etcd fsyncs its WAL on every "
                 "commit (its default) and pykcm's durable store fsyncs every group commit of "
                 "its SQLite log (its default, synchronous=FULL): an acknowledged write "
                 "survives a power loss on both. " + (
                     "The second pair runs both without fsync (etcd `-unsafe-no-fsync`, pykcm "
                     "`--unsafe-no-fsync`): an acknowledged write survives a killed process, "
                     "not a power loss." if have_nofsync else
                     "The pair without fsync was not run (--skip-nofsync).")
                 + " kube-apiserver serves TLS only, so pykcm is compared over TLS too.")
    L.append("")
    cols = ["metric", TITLES["pykcm-tls"]]
    if have_kube:
        cols += [TITLES["kube"], "pykcm ÷ kube"]
    have_pnofsync = bool(res.get("pykcm-nofsync"))
    if have_pnofsync:
        cols.append(TITLES["pykcm-nofsync"])
    if have_nofsync:
        cols += [TITLES["kube-nofsync"], "pykcm ÷ kube (no fsync)"]
    cols.append("target (pykcm)")
    L.append("| " + " | ".join(cols) + " |")
    L.append("|---" * len(cols) + "|")
    mets = metrics(n)
    for name, unit, tkey, get in mets:
        p, _ = median_of(res.get("pykcm-tls", []), get)
        cells = [name, fmt(p, unit)]
        if have_kube:
            k, _ = median_of(res["kube"], get)
            cells += [fmt(k, unit), ratio(p, k, unit)]
        p2 = None
        if have_pnofsync:
            p2, _ = median_of(res["pykcm-nofsync"], get)
            cells.append(fmt(p2, unit))
        if have_nofsync:
            k2, _ = median_of(res["kube-nofsync"], get)
            cells += [fmt(k2, unit), ratio(p2 if have_pnofsync else p, k2, unit)]
        cells.append(target_cell(tkey, p, unit))
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append("Ratio = pykcm ÷ kube-apiserver (for rates above 1 is better for pykcm; for "
             "times, CPU and memory below 1 is). Target: the issue's targets, judging pykcm.")
    if kube_note:
        L.append("")
        L.append(f"⚠️ {kube_note}.")
    # pykcm's own configurations
    own = [k for k in ("pykcm-tls", "pykcm-nofsync", "pykcm-mem") if res.get(k)]
    if len(own) > 1:
        L.append("")
        L.append("pykcm's own configurations, same run (what TLS and durability cost it):")
        L.append("")
        L.append("| metric | " + " | ".join(TITLES[k] for k in own) + " |")
        L.append("|---" * (len(own) + 1) + "|")
        for name, unit, _, get in mets:
            if "RSS" in name or "lag" in name:
                continue
            vals = [median_of(res[k], get)[0] for k in own]
            if all(v is None for v in vals):
                continue
            L.append(f"| {name} | " + " | ".join(fmt(v, unit) for v in vals) + " |")
    # details
    L.append("")
    det: list[str] = []
    for key, rs in res.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            continue
        parts = []
        for phase, lab in (("creates", "creates/s"), ("updates", "updates/s")):
            vals = [r[phase]["rate"] for r in ok if r.get(phase)]
            if vals:
                parts.append(f"{lab} " + ", ".join(f"{v:,.0f}" for v in vals))
        for phase, lab in (("creates", "create"), ("updates", "update")):
            lat = [(r[phase]["p50"], r[phase]["p99"]) for r in ok if r.get(phase)]
            if lat:
                parts.append(f"{lab} latency p50/p99 " + ", ".join(
                    f"{a:.1f}/{b:.1f} ms" for a, b in lat))
        w = [r["watch"] for r in ok if r.get("watch")]
        if w:
            parts.append("watch events received " + ", ".join(
                f"{x['events']:,}/{x['expected_events']:,}" for x in w)
                + f", writers {statistics.median(x['write_rate'] for x in w):,.0f} updates/s "
                "during fan-out")
        dc = [r["delcol"] for r in ok if r.get("delcol")]
        if dc:
            parts.append("deletecollection " + ", ".join(
                f"HTTP {x['status']} {x['deleted']} returned {x['remaining']} left"
                for x in dc))
        cpu = []
        for phase in ("creates", "updates", "watch", "delcol"):
            ph = [r[phase] for r in ok if r.get(phase)]
            if not ph:
                continue
            sp = ph[0].get("server_cpu_split") or {}
            split = (" (" + " + ".join(f"{k} {v / (ph[0]['server_cpu_s'] or 1):.0%}"
                                        for k, v in sp.items()) + ")") if len(sp) > 1 else ""
            cpu.append(f"{phase} {statistics.median(x['server_cpu'] for x in ph):.0%}"
                       f"{split}/{statistics.median(x['client_cpu'] for x in ph):.0%}/"
                       f"{statistics.median(x['other_cpu'] for x in ph):.0%}")
        if cpu:
            parts.append("CPU as share of one core, server/bench client/other processes: "
                         + ", ".join(cpu))
        rss = [r.get("rss_end") or r.get("rss_after_creates") for r in ok]
        if any(rss):
            parts.append("server RSS at the end " + ", ".join(f"{x:.0f}" for x in rss if x)
                         + " MiB")
        det.append(f"**{TITLES[key]}**: runs: " + "; ".join(parts) + ".")
    L.append("Details per configuration (every run, in order):  ")
    L.extend(f"- {d}" for d in det)
    errs = [f"{TITLES[k]}: {r['error']}" for k, rs in res.items() for r in rs if "error" in r]
    if errs:
        L.append("")
        L.append("Failed runs: " + "; ".join(errs) + ".")
    L.append("")
    L.append(f"Non-2xx / failed requests: {FAIL.summary()}.")
    busy = sorted({f"{TITLES[k]} {ph}" for k, rs in res.items() for r in rs
                   for ph in ("creates", "updates", "watch", "delcol")
                   if r.get(ph) and r[ph].get("other_cpu", 0) > 0.25})
    if busy:
        L.append("")
        L.append("⚠️ The machine was shared: other processes used more than 25% of a core "
                 "during " + ", ".join(busy) + "; those figures are lower than on an idle "
                 "machine (compare the server CPU per request).")
    L.append("")
    return "\n".join(L)


async def main_async(args: argparse.Namespace) -> int:
    n = args.pods or (1000 if args.quick else 10000)
    args.load_note = machine_load()
    kit, kube_note = kit_or_reason(args.no_kube)
    if kube_note:
        log(f"bench: {kube_note}")
    configs = [k for k, c in CONFIGS.items()
               if not (c["kind"] == "kube" and kit is None)
               and not (k in ("kube-nofsync", "pykcm-nofsync") and args.skip_nofsync)
               and not (k == "pykcm-mem" and args.skip_memory)]
    res: dict[str, list[dict[str, Any]]] = {k: [] for k in configs}
    t0 = time.perf_counter()
    for rep in range(args.runs):
        for k in configs:
            log(f"bench: run {rep + 1}/{args.runs}, {TITLES[k]}")
            profile = args.profile_server if (rep == 0 and k == "pykcm-tls") else None
            try:
                res[k].append(await run_config(n, k, CONFIGS[k], kit, profile))
            except (RuntimeError, OSError) as exc:  # a server that did not start
                res[k].append({"error": str(exc)})
                log(f"bench: {k}: {exc}")
    wall = time.perf_counter() - t0
    section = report(args, n, res, wall, kube_note)
    print(section)
    if FAIL.samples:
        print("First failures (request → response):")
        for s in FAIL.samples:
            print(s)
    for k, rs in res.items():
        err = (rs[-1] if rs else {}).get("server_stderr", "").strip()
        if err:
            print(f"--- {TITLES[k]} server errors (last 40 lines, last run) ---")
            print("\n".join(err.splitlines()[-40:]))
    if not args.no_record:
        append_results(section)
        log(f"appended to {RESULTS}")
    return 1 if FAIL.total() or any("error" in r for rs in res.values() for r in rs) else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1,000 pods, one run (smoke run)")
    p.add_argument("--pods", type=int, help="number of pods (default 10,000; 1,000 with --quick)")
    p.add_argument("--runs", type=int, default=3,
                   help="repetitions of every configuration (default 3; 1 with --quick)")
    p.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    p.add_argument("--no-kube", action="store_true",
                   help="do not run the real kube-apiserver even if the kit is found")
    p.add_argument("--skip-nofsync", action="store_true",
                   help="skip the pair without fsync (etcd -unsafe-no-fsync, pykcm "
                   "--unsafe-no-fsync)")
    p.add_argument("--skip-memory", action="store_true", help="skip pykcm in-memory")
    p.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                   help="first wait up to SECONDS for the machine to be idle (shared machines)")
    p.add_argument("--profile-server", metavar="FILE",
                   help="run the first pykcm TLS server under cProfile, dump to FILE")
    args = p.parse_args()
    if args.quick and "--runs" not in " ".join(sys.argv):
        args.runs = 1
    gc.freeze()
    if args.wait_idle > 0:
        wait_idle(args.wait_idle)
    try:
        return run_async(main_async(args))
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
