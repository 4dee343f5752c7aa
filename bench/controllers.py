"""Benchmark of the controllers end to end, side by side with kube-controller-manager.

    .venv/bin/python bench/controllers.py [--quick] [--runs N] [--qps 20/30,1000/2000]
                                          [--setups kube/kube,kube/pykcm,pykcm/pykcm]
                                          [--profile] [--no-events] [--no-kube] [--no-record]

Each run starts a fresh cluster of one setup (API server / controller
manager), every component a process of its own (so that the CPU of each is
read from /proc):

  kube/kube     the real kube-apiserver v1.36.2 + etcd 3.6.13 (the kube-v1.36
                kit) and the real kube-controller-manager running pykcm's set of
                controllers: the reference
  kube/pykcm    the same API server, pykcm's controller manager (the production
                path: pykcm on a real cluster)
  pykcm/pykcm   `pykcm up`'s processes, started with `pykcm up`'s own commands:
                `pykcm apiserver` (TLS, durable, fresh data dir) and `pykcm
                controller-manager --controllers '*'`
  pykcm/kube    (on request) the real kube-controller-manager on pykcm's server
  kube/pykcm-compact, kube/pykcm-dicts
                (on request) kube/pykcm with --compact-informer-objects=true or
                =false (issue 19: the manager's caches of compact objects or of dicts)

On the real API server the real kube-controller-manager also runs the
controllers pykcm lacks (a support manager: node lifecycle, service accounts,
...; pykcm.testing.upstream, as KubeCluster does), and every setup gets its
nodes from `pykcm sim --nodes 10 --max-pods 250` (10 x 110 pods would not hold
2,000 replicas). Both managers get --kube-api-qps Q --kube-api-burst B (per
controller client). Setups are interleaved within each repetition.
Then, in order, on the same cluster (the clock of each phase runs from its
first request to the condition being observed by a watch):

  1. scale     200 Deployments x 5 replicas created, until every one has
               status.availableReplicas == 5 and observedGeneration == generation
  2. rollout   a new image on all 200 (merge patch), until every rollout is
               complete (`kubectl rollout status`'s test: observedGeneration
               current, updatedReplicas == replicas == availableReplicas == 5)
  3. gc        DELETE of the 200 Deployments (background propagation), until
               every ReplicaSet and Pod in the namespace is gone (issue 7)
  4. jobs      100 Jobs x 10 completions (parallelism 10, pods annotated
               sim.pykcm.io/run-seconds=0.5), until every Job is Complete (issue 7)
  5. big       1 Deployment x 2,000 replicas, until Available (2,000 available,
               observedGeneration current); the finished Job pods still exist
               (terminal pods do not count against --max-pods)

Between phases the benchmark waits until the previous phase's Events are written (no
Event write by any client and no request of the manager under test for 2 s; a
manager writes its Events one at a time behind the work, upstream up to 1000 per
controller): that tail is counted in neither phase (--no-settle: no wait, the tail
lands in the next phase). --audit: kube-apiserver writes an audit log and each phase
lists the requests completed in it by client (a manager's by controller), verb,
resource and Event reason.

Per phase: wall time, CPU seconds of the API server (and etcd), simulator,
controller manager, support manager and this driver, API requests by
verb/resource from the API server's /metrics (the driver's own requests
subtracted) and the controller manager's own requests
(rest_client_requests_total from its /metrics), the load average. --profile
attaches py-spy to pykcm's controller manager (pykcm/pykcm) during scale and
big (last run of the last QPS setting). Prints a Markdown section and appends
it to bench/RESULTS.md (--no-record to skip). --quick: 20 Deployments, 200
replicas, 10 Jobs, one run (smoke run). Without the kit only pykcm/pykcm runs,
and the section says so in one line.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as _dt
import math
import os
import platform
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
import yaml  # type: ignore[import-untyped, unused-ignore]
from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _common import (
    append_results,
    busy_cpu_seconds,
    cpu_model,
    log,
    machine_load,
    proc_cpu,
    proc_rss_mib,
    run_async,
)
from _kube import kit_or_reason
from _latency import (
    NS_LAT,
    STRATEGIES,
    NamespaceLog,
    format_trace,
    klog_lines,
    measure_rollouts,
)

from pykcm.testing.upstream import (
    ControlPlane,
    KitError,
    KubeControllerManager,
    KubeKit,
    pykcm_controller_names,
    support_controller_manager,
)

NS = "bench"
NS_JOBS = "bench-jobs"
NS_BIG = "bench-big"
PHASES = ("scale", "rollout", "gc", "jobs", "big")

# The targets for `pykcm up` (judged in the report's last column).
TARGET: dict[str, dict[str, float]] = {
    "20/30": {"scale": 78.6, "rollout": 253.0, "big": 102.0},
    "1000/2000": {"scale": 10.0, "rollout": 25.0, "big": 15.0},
}


class BenchError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# -- the cluster: the three processes of `pykcm up` ---------------------------------------


class Stack:
    """An API server, `pykcm sim` and a controller manager, each a process of its own.

    apiserver "pykcm": `pykcm apiserver` (TLS, durable, fresh data dir), as
    `pykcm up` runs it. apiserver "kube": the real kube-apiserver + etcd from
    the kit, plus the real kube-controller-manager running the controllers
    pykcm lacks (a "support" manager: node lifecycle, service accounts, ...;
    the real server's admission needs them), as KubeCluster does. manager
    "pykcm": `pykcm controller-manager --controllers '*'`; "kube": the real
    kube-controller-manager with the same controllers (pykcm's set). Leader
    election off everywhere.
    """

    def __init__(self, qps: float, burst: int, *, nodes: int, max_pods: int,
                 events: bool, apiserver: str = "pykcm", manager: str = "pykcm",
                 kit: KubeKit | None = None, verbosity: int = 0,
                 cprofile: str | None = None, audit: bool = False) -> None:
        self.qps, self.burst = qps, burst
        self.nodes, self.max_pods, self.events = nodes, max_pods, events
        self.apiserver, self.manager, self.kit = apiserver, manager, kit
        self.verbosity = verbosity  # the manager under test's -v (--trace: 4)
        # --cprofile: pykcm's manager runs under bench/_cprofile_main.py, which writes
        # <prefix>.<n>.prof per SIGUSR1..SIGUSR2 window
        self.cprofile = cprofile
        self.cprofile_n = 0
        self.work = tempfile.mkdtemp(prefix="pykcm-bench-ctl-")
        self.data_dir = os.path.join(self.work, "data")
        self.logs = os.path.join(self.work, "logs")
        os.makedirs(self.logs)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.cp: ControlPlane | None = None
        self.kcms: dict[str, KubeControllerManager] = {}
        self.url = ""
        self.token = ""
        self.kubeconfig = ""
        self.ca_file = ""
        self.ssl: ssl.SSLContext | bool = False
        self.cm_port = _free_port()
        # --audit: kube-apiserver's audit log (JSON lines), read per phase by AuditTally
        self.audit_log = os.path.join(self.work, "audit.log") if audit else ""

    @property
    def cm_metrics_url(self) -> str:
        if self.manager == "kube":
            return self.kcms["controller-manager"].url + "/metrics"
        return f"http://127.0.0.1:{self.cm_port}/metrics"

    @property
    def cm_healthz_url(self) -> str:
        return self.cm_metrics_url.removesuffix("/metrics") + "/healthz"

    def _spawn(self, name: str, argv: list[str]) -> None:
        cmd = [sys.executable, "-m", "pykcm", *argv]
        if name == "controller-manager" and self.cprofile:
            cmd = [sys.executable, os.path.join(HERE, "_cprofile_main.py"), self.cprofile,
                   *argv]
        with open(os.path.join(self.logs, f"{name}.log"), "wb") as out:
            self.procs[name] = subprocess.Popen(
                cmd, cwd=REPO, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def log_tail_all(self, name: str) -> str:
        """The whole log of one component (--trace reads the manager's)."""
        if name in self.kcms:
            return self.kcms[name].log()
        try:
            with open(os.path.join(self.logs, f"{name}.log"), "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, name: str, n: int = 5) -> str:
        if name in self.kcms:
            text = self.kcms[name].log()
        elif name in ("kube-apiserver", "etcd") and self.cp is not None:
            text = self.cp.log(name)
        else:
            try:
                with open(os.path.join(self.logs, f"{name}.log"), "rb") as f:
                    text = f.read().decode(errors="replace")
            except OSError:
                return ""
        return " | ".join(ln for ln in text.splitlines()[-n:] if ln.strip())

    def names(self) -> list[str]:
        return [*self.pids()]

    def pids(self) -> dict[str, int]:
        out: dict[str, int] = {}
        if self.cp is not None:
            cp = self.cp.pids()
            out["apiserver"] = cp.get("kube-apiserver", 0)
            out["etcd"] = cp.get("etcd", 0)
        for name, p in self.procs.items():
            out[name] = p.pid
        for name, k in self.kcms.items():
            out[name] = k.pid or 0
        return out

    def check(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise BenchError(f"{name} exited ({p.returncode}): {self.log_tail(name)}")
        for name, pid in self.pids().items():
            if pid and not os.path.exists(f"/proc/{pid}"):
                raise BenchError(f"{name} exited: {self.log_tail(name)}")

    def start(self, timeout: float = 60.0) -> None:
        if self.apiserver == "kube":
            self._start_kube(timeout)
        else:
            self._start_pykcm_apiserver(timeout)
        sim = ["sim", "--kubeconfig", self.kubeconfig, "--nodes", str(self.nodes),
               "--max-pods", str(self.max_pods)]
        if not self.events:
            sim.append("--no-events")
        self._spawn("sim", sim)
        if self.manager == "kube":
            assert self.kit is not None
            names = ",".join(pykcm_controller_names())
            if self.cp is not None:
                kcm = KubeControllerManager.for_control_plane(
                    self.cp, controllers=names, name="controller-manager",
                    kube_api_qps=self.qps, kube_api_burst=int(self.burst),
                    extra_flags=[f"--v={self.verbosity}"] if self.verbosity else [])
            else:  # pykcm's server has no TokenReview/SubjectAccessReview to delegate to
                kcm = KubeControllerManager(
                    self.kit, self.kubeconfig, self.logs, controllers=names,
                    name="controller-manager", root_ca_file=self.ca_file or None,
                    delegate_auth=False, kube_api_qps=self.qps,
                    kube_api_burst=int(self.burst), extra_flags=[
                        # nobody to ask for authorization: let the benchmark read /metrics
                        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"])
            self.kcms["controller-manager"] = kcm
            try:
                kcm.start(timeout)
            except KitError as exc:
                raise BenchError(str(exc)) from None
        else:
            self._spawn("controller-manager", [
                "controller-manager", "--kubeconfig", self.kubeconfig, "--controllers", "*",
                "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
                "--port", str(self.cm_port), "--kube-api-qps", str(self.qps),
                "--kube-api-burst", str(self.burst), "--v", str(self.verbosity),
                *MANAGER_FLAGS.get(self.manager, [])])

    def _start_kube(self, timeout: float) -> None:
        assert self.kit is not None
        flags: list[str] = []
        if self.audit_log:
            policy = os.path.join(self.work, "audit-policy.yaml")
            with open(policy, "w") as f:
                f.write(AUDIT_POLICY)
            flags = [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
                     "--audit-log-format=json", "--audit-log-maxsize=0"]
        self.cp = self.kit.control_plane(os.path.join(self.work, "kube"), apiserver_flags=flags)
        try:
            self.cp.start()
            self.url, self.token = self.cp.url, self.cp.token
            self.kubeconfig, self.ca_file = self.cp.kubeconfig_path, self.cp.ca_file
            self.ssl = ssl.create_default_context(cafile=self.ca_file)
            support = support_controller_manager(self.cp)
            self.kcms["support-controller-manager"] = support
            support.start(timeout)
        except KitError as exc:
            raise BenchError(str(exc)) from None

    def _start_pykcm_apiserver(self, timeout: float) -> None:
        kubeconfig = os.path.join(self.data_dir, "kubeconfig")
        self._spawn("apiserver", ["apiserver", "--data-dir", self.data_dir, "--port", "0"])
        deadline = time.monotonic() + timeout
        while not os.path.exists(kubeconfig):
            self.check()
            if time.monotonic() > deadline:
                raise BenchError("the API server did not write its kubeconfig in time")
            time.sleep(0.05)
        time.sleep(0.1)  # written whole before it is renamed? read it again on failure
        for _ in range(50):
            try:
                with open(kubeconfig) as f:
                    cfg = yaml.safe_load(f)
                break
            except (OSError, yaml.YAMLError):
                time.sleep(0.1)
        cluster = cfg["clusters"][0]["cluster"]
        self.kubeconfig = kubeconfig
        self.url = cluster["server"].rstrip("/")
        self.token = cfg["users"][0]["user"]["token"]
        if self.url.startswith("https://"):
            if "certificate-authority-data" in cluster:
                ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
                self.ssl = ssl.create_default_context(cadata=ca)
                self.ca_file = os.path.join(self.work, "ca.crt")
                with open(self.ca_file, "w") as f:
                    f.write(ca)
            else:
                self.ca_file = cluster["certificate-authority"]
                self.ssl = ssl.create_default_context(cafile=self.ca_file)

    def cpu(self) -> dict[str, float]:
        out = {name: proc_cpu(pid) for name, pid in self.pids().items()}
        out["driver"] = time.process_time()
        return out

    def rss(self) -> dict[str, float]:
        return {name: proc_rss_mib(pid) for name, pid in self.pids().items()}

    def copy_logs(self, dst: str) -> None:
        shutil.copytree(self.logs, dst, dirs_exist_ok=True)
        for name, k in self.kcms.items():
            with contextlib.suppress(OSError):
                shutil.copy(k.log_path, os.path.join(dst, f"{name}.log"))
        if self.cp is not None:
            for comp in ("kube-apiserver", "etcd"):
                with open(os.path.join(dst, f"{comp}.log"), "w") as f:
                    f.write(self.cp.log(comp))
        if self.audit_log and os.path.exists(self.audit_log):
            shutil.copy(self.audit_log, os.path.join(dst, "audit.log"))

    def stop(self) -> None:
        kcm = self.kcms.get("controller-manager")
        if kcm is not None:
            kcm.stop()
        for name in ("controller-manager", "sim", "apiserver"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        support = self.kcms.get("support-controller-manager")
        if support is not None:
            support.stop()
        if self.cp is not None:
            self.cp.stop()
        shutil.rmtree(self.work, ignore_errors=True)


# -- the audit tally (--audit) -------------------------------------------------------------

# Events' create/patch bodies (their reason), every other request's metadata, each once
# (at ResponseComplete; a watch at its end, so watches are left out).
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  verbs: ["watch"]
- level: Request
  resources: [{group: "", resources: ["events"]}]
  verbs: ["create", "patch"]
- level: Metadata
"""


def _audit_agent(ua: str) -> str:
    """A short client name: a controller manager's clients by controller
    (``kube-controller-manager/<version> .../<controller>``: both managers name them so),
    anything else by its product token."""
    if ua.startswith("kube-controller-manager/"):
        return ua.rsplit("/", 1)[-1]
    return ua.split("/", 1)[0].split(" ", 1)[0] or "?"


class AuditTally:
    """Reads kube-apiserver's audit log as it grows; tallies the requests completed in a
    window by (client, verb, resource[/subresource], code class, Event reason)."""

    def __init__(self, path: str) -> None:
        self.path, self.offset = path, 0
        self.pending: list[tuple[float, str]] = []

    def window(self, t0: float, t1: float) -> Counter[str]:
        """Requests that completed between wall times t0 and t1 (those completed after t1
        are kept for the next window)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            data = b""
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            try:
                e = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            try:
                ts = _dt.datetime.fromisoformat(e["stageTimestamp"]).timestamp()
            except (KeyError, ValueError):
                continue
            ref = e.get("objectRef") or {}
            res = ref.get("resource", "") or e.get("requestURI", "?").split("?")[0]
            if ref.get("apiGroup"):
                res += "." + ref["apiGroup"]
            if ref.get("subresource"):
                res += "/" + ref["subresource"]
            code = int((e.get("responseStatus") or {}).get("code") or 0)
            key = f"{_audit_agent(e.get('userAgent', ''))} {e.get('verb', '?')} {res}"
            if code >= 300:
                key += f" {code}"
            body = e.get("requestObject") or {}
            if ref.get("resource") == "events" and isinstance(body, dict):
                reason = body.get("reason") or ("(count patch)" if "count" in body else "")
                if reason:
                    key += f" {reason}"
            self.pending.append((ts, key))
        out: Counter[str] = Counter()
        keep: list[tuple[float, str]] = []
        for ts, key in self.pending:
            if ts < t0:
                continue
            if ts <= t1:
                out[key] += 1
            else:
                keep.append((ts, key))
        self.pending = keep
        return out


# -- the driver ----------------------------------------------------------------------------


class Driver:
    """One aiohttp session; counts its own requests by (verb, resource) to subtract them."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.base = stack.url
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=32, ssl=stack.ssl),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            headers={"Authorization": f"Bearer {stack.token}", "Accept": "application/json"},
            trust_env=False)
        self.own: Counter[tuple[str, str, str]] = Counter()
        self.failures: list[str] = []

    async def close(self) -> None:
        await self.session.close()

    async def request(self, verb: str, resource: str, method: str, path: str,
                      body: Any = None, ctype: str = "application/json",
                      ok: tuple[int, ...] = ()) -> tuple[int, Any]:
        self.own[(verb, resource, "")] += 1
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": ctype} if data is not None else None
        async with self.session.request(method, self.base + path, data=data,
                                        headers=headers) as r:
            raw = await r.read()
        if r.status >= 300 and r.status not in ok:
            self.failures.append(f"{method} {path}: {r.status} {raw[:200]!r}")
        try:
            return r.status, orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return r.status, raw

    async def metrics(self) -> Counter[tuple[str, str, str, str]]:
        """apiserver_request_total summed by (verb, resource, subresource, code)."""
        async with self.session.get(self.base + "/metrics") as r:
            text = await r.text()
        out: Counter[tuple[str, str, str, str]] = Counter()
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == "apiserver_request_total":
                    lb = s.labels
                    res = lb.get("resource", "")
                    if lb.get("group"):
                        res = f"{res}.{lb['group']}"
                    out[(lb.get("verb", ""), res, lb.get("subresource", ""),
                         lb.get("code", ""))] += int(s.value)
        return out

    async def events(self) -> Counter[str]:
        """Events recorded so far by (source component, reason), counting repeats."""
        out: Counter[str] = Counter()
        st, body = await self.request("LIST", "events", "GET", "/api/v1/events")
        if st != 200:
            return out
        for ev in body["items"]:
            comp = ((ev.get("source") or {}).get("component") or ev.get("reportingComponent")
                    or "?")
            out[f"{comp} {ev.get('reason', '?')}"] += int(ev.get("count") or 1)
        return out

    async def cm_metrics(self) -> Counter[str]:
        """The controller manager's own requests (rest_client_requests_total) by method."""
        out: Counter[str] = Counter()
        try:
            async with self.session.get(self.stack.cm_metrics_url, ssl=False) as r:
                if r.status != 200:
                    return out
                text = await r.text()
        except (aiohttp.ClientError, OSError):
            return out
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == "rest_client_requests_total":
                    out[s.labels.get("method", "?")] += int(s.value)
        return out


class Watch:
    """LIST + WATCH of one collection; objects reduced by ``keep`` into ``objs``."""

    def __init__(self, drv: Driver, verb_res: str, path: str,
                 keep: Callable[[dict[str, Any]], Any]) -> None:
        self.drv, self.res, self.path, self.keep = drv, verb_res, path, keep
        self.objs: dict[str, Any] = {}
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.synced = asyncio.Event()

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    async def _run(self) -> None:
        while True:
            try:
                st, body = await self.drv.request("LIST", self.res, "GET", self.path)
                if st != 200:
                    await asyncio.sleep(0.5)
                    continue
                self.objs = {it["metadata"]["name"]: self.keep(it) for it in body["items"]}
                rv = body["metadata"]["resourceVersion"]
                self.synced.set()
                self.changed.set()
                self.drv.own[("WATCH", self.res, "")] += 1
                url = (f"{self.drv.base}{self.path}?watch=1&resourceVersion={rv}"
                       "&allowWatchBookmarks=true&timeoutSeconds=3600")
                async with self.drv.session.get(url) as r:
                    if r.status != 200:
                        await asyncio.sleep(0.5)
                        continue
                    buf = b""
                    async for chunk in r.content.iter_any():
                        buf += chunk
                        if b"\n" not in buf:
                            continue
                        *lines, buf = buf.split(b"\n")
                        for ln in lines:
                            if not ln.strip():
                                continue
                            ev = orjson.loads(ln)
                            t, obj = ev.get("type"), ev.get("object") or {}
                            if t in ("ADDED", "MODIFIED"):
                                self.objs[obj["metadata"]["name"]] = self.keep(obj)
                            elif t == "DELETED":
                                self.objs.pop(obj["metadata"]["name"], None)
                            elif t == "ERROR":
                                raise ConnectionResetError(f"watch error: {obj}")
                        self.changed.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - re-list
                log(f"bench: watch {self.path}: {exc!r}; re-listing")
                await asyncio.sleep(0.2)

    async def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float,
                   progress: Callable[[dict[str, Any]], str], check: Callable[[], None]) -> None:
        deadline = time.monotonic() + timeout
        next_log = time.monotonic() + 15
        await self.synced.wait()
        while not pred(self.objs):
            self.changed.clear()
            now = time.monotonic()
            if now > deadline:
                raise BenchError(f"timed out after {timeout:.0f} s: {progress(self.objs)}")
            if now > next_log:
                log(f"bench:   ... {progress(self.objs)}")
                next_log = now + 15
            check()
            try:
                await asyncio.wait_for(self.changed.wait(), 1.0)
            except TimeoutError:
                pass
            await asyncio.sleep(0.02)  # evaluate the predicate at most ~50 times a second


# -- objects -------------------------------------------------------------------------------


def deployment(name: str, replicas: int, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image,
                                         "resources": {"requests": {"cpu": "1m",
                                                                    "memory": "1Mi"}}}]},
            },
        },
    }


def job(name: str, completions: int, parallelism: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completions": completions, "parallelism": parallelism, "backoffLimit": 6,
            "template": {
                "metadata": {"annotations": {"sim.pykcm.io/run-seconds": "0.5"}},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "work", "image": "busybox:1.36",
                                         "command": ["true"],
                                         "resources": {"requests": {"cpu": "1m",
                                                                    "memory": "1Mi"}}}]},
            },
        },
    }


def d_state(obj: dict[str, Any]) -> tuple[int, int, int, int, int, int, str]:
    """(generation, observedGeneration, spec replicas, replicas, updated, available, image)."""
    st = obj.get("status") or {}
    spec = obj.get("spec") or {}
    image = spec["template"]["spec"]["containers"][0]["image"]
    return (obj["metadata"].get("generation", 0), st.get("observedGeneration", 0),
            spec.get("replicas", 1), st.get("replicas", 0), st.get("updatedReplicas", 0),
            st.get("availableReplicas", 0), image)


def available(s: tuple[int, ...], want: int) -> bool:
    return s[1] >= s[0] and s[5] == want


def rolled_out(s: tuple[Any, ...], want: int, image: str) -> bool:
    return bool(s[6] == image and s[1] >= s[0] and s[4] == want and s[3] == want
                and s[5] == want)


def j_state(obj: dict[str, Any]) -> tuple[int, bool]:
    st = obj.get("status") or {}
    done = any(c.get("type") == "Complete" and c.get("status") == "True"
               for c in st.get("conditions") or ())
    return st.get("succeeded", 0), done


async def pool(items: list[Any], fn: Callable[[Any], Awaitable[Any]], n: int = 32) -> None:
    it = iter(items)

    async def worker() -> None:
        for x in it:
            await fn(x)

    await asyncio.gather(*(worker() for _ in range(n)))


# -- one run ---------------------------------------------------------------------------------


class Run:
    def __init__(self, args: argparse.Namespace, qps: float, burst: int, label: str,
                 profile_dir: str | None, setup: str = "pykcm/pykcm",
                 kit: KubeKit | None = None) -> None:
        self.args, self.qps, self.burst, self.label = args, qps, burst, label
        self.profile_dir = profile_dir
        self.apiserver, _, self.manager = setup.partition("/")
        self.kit = kit
        self.n_dep = args.deployments
        self.n_big = args.big
        self.n_jobs = args.jobs
        self.phases: dict[str, dict[str, Any]] = {}
        self.rss: dict[str, float] = {}
        self.latency: dict[str, list[float]] = {}
        self.traces: list[str] = []
        self.audit: AuditTally | None = None

    async def settle(self, drv: Driver, quiet: float = 2.0, timeout: float = 300.0) -> float:
        """Wait until the previous phase's tail is written: no Event written (POST or
        PATCH, by any client) and no request of the manager under test for ``quiet``
        seconds. A controller manager writes its Events one at a time behind the work
        that recorded them (upstream keeps up to 1000 per controller); without this wait
        they land in the next phase's window and count as its requests and CPU. The same
        wait for every setup; returns the seconds waited."""
        def sample(m: Counter[tuple[str, str, str, str]], c: Counter[str]) -> int:
            ev = sum(v for k, v in m.items() if k[1] == "events" and k[0] in ("POST", "PATCH"))
            return ev + sum(c.values())

        t0 = time.perf_counter()
        last, since = -1, t0
        while time.perf_counter() - t0 < timeout:
            now = sample(await drv.metrics(), await drv.cm_metrics())
            t = time.perf_counter()
            if now != last:
                last, since = now, t
            elif t - since >= quiet:
                break
            await asyncio.sleep(0.5)
        waited = time.perf_counter() - t0
        log(f"bench: [{self.label}] settled in {waited:.1f} s")
        return waited

    async def measure(self, name: str, stack: Stack, drv: Driver,
                      body: Callable[[], Awaitable[None]], profile: bool = False) -> None:
        settled = await self.settle(drv) if self.phases and getattr(self.args, "settle", False) else None
        log(f"bench: [{self.label}] {name} ...")
        e0 = await drv.events()
        m0, c0, own0 = await drv.metrics(), await drv.cm_metrics(), Counter(drv.own)
        cpu0, busy0, load0 = stack.cpu(), busy_cpu_seconds(), os.getloadavg()
        wall0 = time.time()
        spy = None
        pyspy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or \
            shutil.which("py-spy")
        if profile and self.profile_dir and pyspy and "controller-manager" in stack.procs:
            out = os.path.join(self.profile_dir, f"{name}.txt")
            spy = subprocess.Popen(  # noqa: ASYNC220 - returns at once
                [pyspy, "record", "--native", "-r", "100", "-f", "raw",
                 "-o", out, "-p", str(stack.procs["controller-manager"].pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cprof = stack.cprofile if "controller-manager" in stack.procs else None
        if cprof:
            stack.procs["controller-manager"].send_signal(signal.SIGUSR1)
        t0 = time.perf_counter()
        try:
            await body()
        finally:
            wall = time.perf_counter() - t0
            if cprof:
                stack.procs["controller-manager"].send_signal(signal.SIGUSR2)
                await self._collect_cprofile(stack, name)
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                try:
                    spy.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    spy.kill()
        cpu1, busy1, load1 = stack.cpu(), busy_cpu_seconds(), os.getloadavg()
        m1, c1 = await drv.metrics(), await drv.cm_metrics()
        e1 = await drv.events()
        wall1 = time.time()
        audit = self.audit.window(wall0, wall1) if self.audit is not None else Counter()
        ev = Counter({k: e1.get(k, 0) - e0.get(k, 0) for k in set(e1) | set(e0)})
        own = Counter(drv.own)
        own.subtract(own0)
        own[("GET", "", "")] += 0
        reqs: Counter[tuple[str, str, str]] = Counter()
        codes: Counter[str] = Counter()
        for k, v in m1.items():
            d = v - m0.get(k, 0)
            if d:
                reqs[k[:3]] += d
                if not k[3].startswith("2"):
                    codes[f"{k[0]} {k[1]}{'/' + k[2] if k[2] else ''} {k[3]}"] += d
        # the driver's own requests, and the 2 /metrics scrapes of the first snapshot
        for ok, ov in own.items():
            if ov:
                reqs[ok] -= ov
        reqs[("GET", "", "")] -= 1
        reqs = Counter({k: v for k, v in reqs.items() if v > 0})
        cm = Counter({k: c1.get(k, 0) - c0.get(k, 0) for k in set(c1) | set(c0)})
        cpu = {k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1}
        self.phases[name] = {
            "wall": wall, "cpu": cpu, "requests": reqs, "cm_requests": cm, "codes": codes,
            "busy": busy1 - busy0, "load0": load0, "load1": load1,
            "events": Counter({k: v for k, v in ev.items() if v}),
            "audit": audit, "settle": settled,
        }
        r = self.phases[name]
        log(f"bench: [{self.label}] {name}: {wall:.1f} s; CPU s " + " ".join(
            f"{k} {v:.1f}" for k, v in cpu.items()) + "; requests (not the driver's) "
            f"{sum(reqs.values()):,}, of "
            f"which the controller manager {sum(cm.values()):,}; load {load1[0]:.2f}")
        if codes:
            log(f"bench:   non-2xx: {dict(codes)}")
        del r

    async def run(self) -> dict[str, Any]:
        a = self.args
        tree = git_state()
        stack = Stack(self.qps, self.burst, nodes=a.nodes, max_pods=a.max_pods,
                      events=not a.no_events, apiserver=self.apiserver, manager=self.manager,
                      kit=self.kit, verbosity=4 if a.trace else 0,
                      cprofile=os.path.join(a.cprofile, "manager") if a.cprofile else None,
                      audit=a.audit)
        drv: Driver | None = None
        watches: list[Watch] = []
        try:
            stack.start()
            if stack.audit_log:
                self.audit = AuditTally(stack.audit_log)
            drv = Driver(stack)
            await self._ready(stack, drv)
            for ns in (NS, NS_JOBS, NS_BIG, NS_LAT):
                await drv.request("POST", "namespaces", "POST", "/api/v1/namespaces",
                                  {"metadata": {"name": ns}})
            # both API servers' ServiceAccount admission needs them before pods
            await self._service_accounts(stack, drv)
            if a.latency_reps > 0:
                await self.measure_latency(stack, drv)
                if a.latency or a.trace:
                    return {"phases": self.phases, "latency": self.latency,
                            "traces": self.traces, "rss": stack.rss(), "tree": tree,
                            "failures": list(drv.failures)}
            dw = Watch(drv, "deployments.apps", f"/apis/apps/v1/namespaces/{NS}/deployments",
                       d_state)
            rw = Watch(drv, "replicasets.apps", f"/apis/apps/v1/namespaces/{NS}/replicasets",
                       lambda o: None)
            pw = Watch(drv, "pods", f"/api/v1/namespaces/{NS}/pods", lambda o: None)
            jw = Watch(drv, "jobs.batch", f"/apis/batch/v1/namespaces/{NS_JOBS}/jobs", j_state)
            bw = Watch(drv, "deployments.apps",
                       f"/apis/apps/v1/namespaces/{NS_BIG}/deployments", d_state)
            watches = [dw, rw, pw, jw, bw]
            for w in watches:
                w.start()
            for w in watches:
                await w.synced.wait()
            await asyncio.sleep(1.0)
            names = [f"web-{i:03d}" for i in range(self.n_dep)]
            n = self.n_dep
            prof = bool(self.profile_dir)

            async def scale() -> None:
                await pool(names, lambda nm: drv.request(
                    "POST", "deployments.apps", "POST",
                    f"/apis/apps/v1/namespaces/{NS}/deployments",
                    deployment(nm, 5, "nginx:1.25")))
                await dw.wait(lambda o: len(o) == n and all(available(s, 5) for s in o.values()),
                              a.timeout, lambda o: f"{sum(available(s, 5) for s in o.values())}"
                              f"/{n} available", stack.check)

            async def rollout() -> None:
                patch = {"spec": {"template": {"spec": {"containers": [
                    {"name": "app", "image": "nginx:1.26",
                     "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}}}
                await pool(names, lambda nm: drv.request(
                    "PATCH", "deployments.apps", "PATCH",
                    f"/apis/apps/v1/namespaces/{NS}/deployments/{nm}", patch,
                    ctype="application/merge-patch+json"))
                await dw.wait(lambda o: all(rolled_out(s, 5, "nginx:1.26") for s in o.values()),
                              a.timeout, lambda o: f"{sum(rolled_out(s, 5, 'nginx:1.26') for s in o.values())}/{n} rolled out", stack.check)

            async def gc() -> None:
                await pool(names, lambda nm: drv.request(
                    "DELETE", "deployments.apps", "DELETE",
                    f"/apis/apps/v1/namespaces/{NS}/deployments/{nm}"))
                await rw.wait(lambda o: not o, a.timeout,
                              lambda o: f"{len(o)} ReplicaSets, {len(pw.objs)} pods left",
                              stack.check)
                await pw.wait(lambda o: not o, a.timeout,
                              lambda o: f"{len(o)} pods left", stack.check)

            jnames = [f"job-{i:03d}" for i in range(self.n_jobs)]

            async def jobs() -> None:
                await pool(jnames, lambda nm: drv.request(
                    "POST", "jobs.batch", "POST", f"/apis/batch/v1/namespaces/{NS_JOBS}/jobs",
                    job(nm, 10, 10)))
                nj = len(jnames)
                await jw.wait(lambda o: len(o) == nj and all(s[1] for s in o.values()),
                              a.timeout, lambda o: f"{sum(s[1] for s in o.values())}/{nj} "
                              f"complete, {sum(s[0] for s in o.values())} pods succeeded",
                              stack.check)

            nb = self.n_big

            async def big() -> None:
                await drv.request("POST", "deployments.apps", "POST",
                                  f"/apis/apps/v1/namespaces/{NS_BIG}/deployments",
                                  deployment("big", nb, "nginx:1.25"))
                await bw.wait(lambda o: len(o) == 1 and available(o["big"], nb), a.timeout,
                              lambda o: f"{o['big'][5] if o else 0}/{nb} available",
                              stack.check)

            only = set(a.phases.split(",")) if a.phases else set(PHASES)
            ran_scale = bool(only & {"scale", "rollout", "gc"})
            if ran_scale:
                await self.measure("scale", stack, drv, scale, profile=prof)
            if "rollout" in only:
                await self.measure("rollout", stack, drv, rollout, profile=prof)
            if ran_scale and only & {"gc", "jobs", "big"}:
                # the Deployments' pods would not leave room for the big one
                await self.measure("gc", stack, drv, gc)
            if "jobs" in only:
                await self.measure("jobs", stack, drv, jobs)
            if "big" in only:
                await self.measure("big", stack, drv, big, profile=prof)
            self.rss = stack.rss()
            return {"phases": self.phases, "latency": self.latency, "rss": self.rss,
                    "tree": tree, "failures": list(drv.failures)}
        except BenchError as exc:
            log(f"bench: [{self.label}] failed: {exc}")
            for name in stack.names():
                log(f"bench:   {name} log tail: {stack.log_tail(name, 3)[:600]}")
            return {"phases": self.phases, "latency": self.latency, "rss": stack.rss(),
                    "error": str(exc), "tree": tree,
                    "failures": list(drv.failures) if drv else []}
        finally:
            for w in watches:
                await w.stop()
            if drv is not None:
                await drv.close()
            if self.args.keep_logs:
                dst = os.path.join(self.args.keep_logs, self.label.replace("/", "-")
                                   .replace(" ", "_"))
                stack.copy_logs(dst)
            stack.stop()

    async def _collect_cprofile(self, stack: Stack, phase: str) -> None:
        """Wait for the manager's profile of the phase; keep it as <dir>/<label>-<phase>.prof."""
        assert stack.cprofile is not None
        src = f"{stack.cprofile}.{stack.cprofile_n}.prof"
        stack.cprofile_n += 1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            if os.path.exists(src):
                await asyncio.sleep(0.3)  # written whole
                break
        dst = os.path.join(self.args.cprofile, self.label.replace("/", "-").replace(" ", "_")
                           .replace("#", "-") + f"-{phase}.prof")
        with contextlib.suppress(OSError):
            os.replace(src, dst)
            log(f"bench: [{self.label}] cProfile of the manager during {phase}: {dst}")

    async def measure_latency(self, stack: Stack, drv: Driver) -> None:
        """The small rollouts (bench/_latency.py): a 10-replica RollingUpdate and a Recreate
        Deployment, each rolled out --latency-reps times; with --trace, the timeline of each."""
        a = self.args
        nslog = NamespaceLog(drv)
        nslog.start()
        try:
            await nslog.wait_synced()
            for strategy in STRATEGIES:
                log(f"bench: [{self.label}] latency {strategy} x{a.latency_reps} ...")
                t_start = time.time()
                try:
                    r = await measure_rollouts(drv, nslog, strategy, a.latency_reps,
                                               timeout=min(a.timeout, 120.0),
                                               check=stack.check, trace=a.trace)
                except TimeoutError as exc:
                    raise BenchError(str(exc)) from None
                self.latency[strategy] = r.walls
                log(f"bench: [{self.label}] latency {strategy}: "
                    + ", ".join(f"{w:.2f}" for w in r.walls) + " s")
                if a.trace:
                    text = stack.log_tail_all("controller-manager")
                    for i, (_, w0, recs) in enumerate(r.traces):
                        until = max((x.wall for x in recs), default=w0) + 0.1
                        lines = [ln for ln in klog_lines(text, NS_LAT, w0 - 0.05, until)
                                 if _trace_line(ln[1])]
                        self.traces += format_trace(
                            f"{self.label}: {strategy} rollout {i + 1} ({r.walls[i]:.2f} s)",
                            w0, recs, lines) + [""]
                del t_start
        finally:
            await nslog.stop()

    async def _ready(self, stack: Stack, drv: Driver, timeout: float = 90.0) -> None:
        """Every node Ready without the not-ready taint, the controller manager's /healthz
        answering."""
        deadline = time.monotonic() + timeout
        while True:
            stack.check()
            if time.monotonic() > deadline:
                raise BenchError("the cluster did not come up in time")
            ready = 0
            try:
                st, body = await drv.request("LIST", "nodes", "GET", "/api/v1/nodes")
                if st == 200:
                    for it in body["items"]:
                        conds = {c.get("type"): c.get("status")
                                 for c in (it.get("status") or {}).get("conditions") or ()}
                        taints = (it.get("spec") or {}).get("taints") or ()
                        if conds.get("Ready") == "True" and not any(
                                t.get("key") == "node.kubernetes.io/not-ready" for t in taints):
                            ready += 1
                async with drv.session.get(stack.cm_healthz_url, ssl=False) as r:
                    cm_ok = r.status == 200
            except (aiohttp.ClientError, OSError):
                cm_ok = False
            if ready >= stack.nodes and cm_ok:
                return
            await asyncio.sleep(0.25)

    async def _service_accounts(self, stack: Stack, drv: Driver, timeout: float = 60.0
                                ) -> None:
        """The `default` ServiceAccount of every namespace, which ServiceAccount admission
        requires of a pod (the serviceaccount controller creates them: pykcm's, or the
        support manager's on the real server), before the clock of the first phase starts."""
        deadline = time.monotonic() + timeout
        for ns in (NS, NS_JOBS, NS_BIG, NS_LAT):
            while True:
                st, _ = await drv.request("GET", "serviceaccounts", "GET",
                                          f"/api/v1/namespaces/{ns}/serviceaccounts/default",
                                          ok=(404,))
                if st == 200:
                    break
                stack.check()
                if time.monotonic() > deadline:
                    raise BenchError(f"no ServiceAccount {ns}/default after {timeout:.0f} s")
                await asyncio.sleep(0.1)


# The deployment and replicaset controllers' lines of either manager at -v 4: sync start
# and end, scaling decisions, expectations, retries (not the other controllers' lines).
_TRACE_WORDS = ("syncing deployment", 'kind="ReplicaSet"', "deployment: ", "replicaset: ",
                "syncing ReplicaSet", "Too few", "Too many", "xpectations", "Scaled",
                "scaling down", "Slow-start")


def _trace_line(msg: str) -> bool:
    """The manager's log lines worth a place in the trace (sync start/end, scaling)."""
    return any(w in msg for w in _TRACE_WORDS)


def git_state() -> str:
    """HEAD and a digest of the uncommitted changes: other work changes the tree between runs."""
    import hashlib

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True, check=False).stdout.strip()
        diff = subprocess.run(["git", "diff", "HEAD", "--", "pykcm"], cwd=REPO,
                              capture_output=True, check=False).stdout
        new = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "pykcm"],
                             cwd=REPO, capture_output=True, text=True, check=False).stdout
        h = hashlib.sha1(diff)
        for path in sorted(new.split()):
            try:
                with open(os.path.join(REPO, path), "rb") as f:
                    h.update(path.encode() + f.read())
            except OSError:
                pass
        dirty = bool(diff or new.strip())
        return f"{head}+{h.hexdigest()[:8]}" if dirty else head
    except OSError:
        return "?"


# -- report ---------------------------------------------------------------------------------


def machine() -> str:
    return (f"{platform.machine()}, nproc {len(os.sched_getaffinity(0))}, {cpu_model()}, "
            f"Python {platform.python_version()}")


def med(vals: list[float]) -> float:
    return statistics.median(vals) if vals else float("nan")


def fmt_s(v: float) -> str:
    return "n/a" if math.isnan(v) else (f"{v:.1f} s" if v < 100 else f"{v:.0f} s")


def summarize_pyspy(path: str, top: int = 14) -> list[tuple[str, float]]:
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    total = 0
    self_c: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for ln in lines:
        stack, _, cnt = ln.rpartition(" ")
        if not stack or not cnt.isdigit():
            continue
        frames = [_frame(fr) for fr in stack.split(";") if fr]
        c = int(cnt)
        total += c
        if "gc_collect_main" in frames:
            self_c["cyclic GC (gc_collect_main)"] += c
        else:
            py = [f for f in frames if ".py:" in f or ".py)" in f]
            idle = any(f.startswith(("epoll_wait", "select ", "_run_once (asyncio/base_events"))
                       for f in frames[-3:])
            self_c["(idle: waiting in the event loop)" if idle and not py[-1:] else
                   (py[-1] if py else "(native)")] += c
        for name in set(frames):
            if ".py)" in name:
                incl[name] += c
    if not total:
        return []
    return [(k, v / total) for k, v in self_c.most_common(top)] + \
        [("incl: " + k, v / total) for k, v in incl.most_common(top + 10)]


def _frame(fr: str) -> str:
    name, _, where = fr.strip().partition(" (")
    where = where.rstrip(")")
    if ".py:" in where:
        parts = where.rsplit(":", 1)[0].replace("\\", "/").split("/")
        return f"{name} ({'/'.join(parts[-2:])})"
    return name


SETUP_TITLES = {
    "kube/kube": "kube-controller-manager v1.36.2 on kube-apiserver",
    "kube/pykcm": "pykcm controller manager on kube-apiserver",
    "pykcm/pykcm": "pykcm up (pykcm apiserver + controller manager)",
    "pykcm/kube": "kube-controller-manager v1.36.2 on pykcm apiserver",
    "kube/pykcm-compact": "pykcm controller manager --compact-informer-objects on "
                          "kube-apiserver",
    "kube/pykcm-dicts": "pykcm controller manager --compact-informer-objects=false on "
                        "kube-apiserver",
}
# pykcm manager variants (issue 19): the same manager with its informer caches of compact
# objects or of dicts, whatever the default, so both are compared in one run
MANAGER_FLAGS = {"pykcm-compact": ["--compact-informer-objects=true"],
                 "pykcm-dicts": ["--compact-informer-objects=false"]}
REF_SETUP = "kube/kube"
COMPONENTS = ("apiserver", "etcd", "sim", "controller-manager", "support-controller-manager",
              "driver")


def split_key(key: str) -> tuple[str, str]:
    """A results key "QPS/BURST SETUP" (older saves: "QPS/BURST", pykcm up)."""
    qps, _, setup = key.partition(" ")
    return qps, setup or "pykcm/pykcm"


def _settled(results: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether the runs waited between phases (results saved before the wait have no
    ``settle`` figure; with --no-settle it is None)."""
    return any(p.get("settle") is not None for runs in results.values() for r in runs
               for p in r["phases"].values())


def report(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]], wall: float,
           profiles: dict[str, list[tuple[str, float]]]) -> str:
    L: list[str] = []
    when = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    title = ("Controllers end to end, side by side with kube-controller-manager"
             + (" (quick smoke run, not comparable)" if args.quick else ""))
    L.append(f"## {title} — {when}")
    L.append("")
    L.append(f"Machine: {machine()}; {args.load_note}.  ")
    qps_labels = list(dict.fromkeys(split_key(k)[0] for k in results))
    setups = list(dict.fromkeys(split_key(k)[1] for k in results))
    L.append(f"Run: `bench/controllers.py {' '.join(sys.argv[1:])}`"
             f"{'' if math.isnan(wall) else f', {wall:.0f} s wall'}. Setups (API server / "
             "controller manager), each fresh per run, processes of their own, interleaved: "
             + "; ".join(f"{s} = {SETUP_TITLES.get(s, s)}" for s in setups) + ". The pykcm "
             "processes are `pykcm up`'s own commands (`pykcm apiserver`: TLS, durable, fresh "
             "data dir; `pykcm controller-manager --controllers '*'`)"
             + ("; the real kube-apiserver v1.36.2 + etcd 3.6.13 (fsync on) come from the kit; "
                "on it the real kube-controller-manager also runs the controllers pykcm lacks "
                "(node lifecycle, service accounts, ...: a support manager its admission "
                "needs), and the manager under test runs pykcm's set (`"
                + ",".join(pykcm_controller_names()) + "`), real or pykcm's"
                if any(s != "pykcm/pykcm" for s in setups) else "") + ". Nodes: "
             f"`pykcm sim --nodes {args.nodes} --max-pods {args.max_pods}"
             f"{' --no-events' if args.no_events else ''}` in every setup (--max-pods "
             f"{args.max_pods}: 10 x 110 would not hold 2,000 replicas). --kube-api-qps Q "
             "--kube-api-burst B per controller client for both managers. Phases in order on "
             f"one cluster: scale = {args.deployments} Deployments x 5 created until all "
             f"Available (availableReplicas 5, observedGeneration current); rollout = a new "
             f"image on all (merge patch) until `kubectl rollout status` would say done; gc = "
             f"DELETE of the {args.deployments} Deployments (background) until no ReplicaSet "
             f"or Pod is left; jobs = {args.jobs} Jobs x 10 completions (parallelism 10, "
             f"run-seconds 0.5) until all Complete; big = 1 Deployment x {args.big:,} until "
             f"Available. Time from the first request of a phase to a watch seeing the "
             f"condition"
             + ("; before each phase but the first, a wait until the previous phase's Events "
                "are written (counted in neither)" if _settled(results) else
                "; each phase starts at once after the previous one (no wait: its Event "
                "tail counts in the next)")
             + f". Medians of {args.runs} run(s) per setting and setup.")
    L.append("")
    if getattr(args, "kube_note", ""):
        L.append(f"⚠️ {args.kube_note}.")
        L.append("")

    def runs_of(q: str, s: str) -> list[dict[str, Any]]:
        return results.get(f"{q} {s}", []) or (results.get(q, []) if s == "pykcm/pykcm"
                                               else [])

    def walls(q: str, s: str, ph: str) -> list[float]:
        return [r["phases"][ph]["wall"] for r in runs_of(q, s) if ph in r["phases"]]

    have_ref = REF_SETUP in setups
    others = [s for s in setups if s != REF_SETUP]
    L += latency_table(results, qps_labels, setups, runs_of)
    # only the phases some run measured (--latency, --phases: the others are left out)
    ran = [ph for ph in PHASES if any(ph in r["phases"] for runs in results.values()
                                      for r in runs)]
    phase_tables_from = len(L)
    head = ["QPS/burst", "phase"]
    if have_ref:
        head.append(SETUP_TITLES[REF_SETUP])
    for s in others:
        head.append(SETUP_TITLES.get(s, s))
        if have_ref:
            head.append("÷ kube-controller-manager")
    head.append("target (pykcm up)")
    L.append("Wall time per phase (median):")
    L.append("")
    L.append("| " + " | ".join(head) + " |")
    L.append("|---|---|" + "---:|" * (len(head) - 3) + "---|")
    for q in qps_labels:
        for ph in ran:
            cells = [q, ph]
            ref = med(walls(q, REF_SETUP, ph)) if have_ref else float("nan")
            if have_ref:
                cells.append(fmt_s(ref) if walls(q, REF_SETUP, ph) else "failed")
            for s in others:
                w = walls(q, s, ph)
                v = med(w)
                cells.append(fmt_s(v) if w else "failed")
                if have_ref:
                    cells.append(f"{v / ref:.2f}×" if w and not math.isnan(ref) else "—")
            tgt = TARGET.get(q, {}).get(ph)
            pw = walls(q, "pykcm/pykcm", ph)
            cells.append(f"≤ {fmt_s(tgt)} {'✅' if pw and med(pw) <= tgt else '❌'}"
                         if tgt is not None and not args.quick else "—")
            L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append(("Ratio = setup ÷ the real kube-controller-manager on the real kube-apiserver "
              "(below 1 is faster). " if have_ref else "")
             + "Targets: the issue's, judging `pykcm up`.")
    L.append("")
    # controller manager CPU side by side
    if have_ref and others:
        L.append("Controller manager CPU seconds per phase (median; the manager under test "
                 "only, not the support manager):")
        L.append("")
        head = ["QPS/burst", "phase", SETUP_TITLES[REF_SETUP]]
        for s in others:
            head += [SETUP_TITLES.get(s, s), "÷ kube-controller-manager"]
        L.append("| " + " | ".join(head) + " |")
        L.append("|---|---|" + "---:|" * (len(head) - 2))
        for q in qps_labels:
            for ph in ran:
                def cm_cpu(s: str, q: str = q, ph: str = ph) -> float:
                    return med([r["phases"][ph]["cpu"].get("controller-manager", float("nan"))
                                for r in runs_of(q, s) if ph in r["phases"]])
                ref = cm_cpu(REF_SETUP)
                cells = [q, ph, f"{ref:.1f}" if not math.isnan(ref) else "n/a"]
                for s in others:
                    v = cm_cpu(s)
                    cells += [f"{v:.1f}" if not math.isnan(v) else "n/a",
                              f"{v / ref:.2f}×" if ref and not math.isnan(v) and
                              not math.isnan(ref) else "—"]
                L.append("| " + " | ".join(cells) + " |")
        L.append("")
    # CPU split and requests, medians over runs
    L.append("CPU seconds per process (median over runs; `apiserver` is kube-apiserver or "
             "`pykcm apiserver`, `support-kcm` the real manager running what pykcm lacks) and "
             "API requests per phase (median; the benchmark driver's own requests are "
             "subtracted; `cm` = the manager under test's own count, "
             "rest_client_requests_total):")
    L.append("")
    L.append("| QPS/burst | setup | phase | wall | apiserver | etcd | sim | controller-manager | "
             "support-kcm | driver | controller-manager cores | whole machine cores | "
             "requests (all but driver) | cm requests | cm req/s | load avg (1 min) at end |")
    L.append("|---|---|---|" + "---:|" * 13)
    for q in qps_labels:
        for s in setups:
            for ph in ran:
                rs = [r["phases"][ph] for r in runs_of(q, s) if ph in r["phases"]]
                if not rs:
                    continue
                wt = med([r["wall"] for r in rs])
                c = {k: med([r["cpu"][k] for r in rs if k in r["cpu"]]) for k in COMPONENTS}
                busy = med([r["busy"] / r["wall"] for r in rs])
                req = med([sum(r["requests"].values()) for r in rs])
                cmr = med([sum(r["cm_requests"].values()) for r in rs])

                L.append(f"| {q} | {s} | {ph} | {fmt_s(wt)} | " + " | ".join(
                    "—" if math.isnan(c[k]) else f"{c[k]:.1f}" for k in COMPONENTS) + f" | "
                    f"{c['controller-manager'] / wt:.2f} | {busy:.2f} | {req:,.0f} | "
                    f"{cmr:,.0f} | {cmr / wt:,.0f} | "
                    f"{med([r['load1'][0] for r in rs]):.2f} |")
    L.append("")
    L.append("Wall time of every run (s): " + "; ".join(
        f"{q} {s} {ph} " + ", ".join(f"{x:.1f}" for x in walls(q, s, ph))
        for q in qps_labels for s in setups for ph in ran if walls(q, s, ph)) + ".")
    settles = [f"{key} {ph} " + ", ".join(f"{r['phases'][ph].get('settle') or 0.0:.1f}"
                                          for r in runs if ph in r["phases"])
               for key, runs in results.items() for ph in ran
               if any(ph in r["phases"] and r["phases"][ph].get("settle") is not None
                      for r in runs)]
    if settles:
        L.append("Wait before each phase until the previous one's Events were written (no "
                 "Event write by any client and no request of the manager under test for "
                 "2 s; not counted in either phase), s: " + "; ".join(settles) + ".")
    L.append("")
    # request breakdown, first run of each setting
    L.append("Requests by verb and resource (first run of each setting and setup; all clients "
             "but the driver: controllers, simulator (binding, pods/status, nodes, leases, "
             "scheduler events), the support manager, and watches):")
    L.append("")
    for key, runs in results.items():
        r0 = runs[0]
        for ph in ran:
            if ph not in r0["phases"]:
                continue
            p = r0["phases"][ph]
            items = sorted(p["requests"].items(), key=lambda kv: -kv[1])
            txt = ", ".join(f"{k[0]} {k[1]}{'/' + k[2] if k[2] else ''} {v:,}"
                            for k, v in items if v)
            cm = ", ".join(f"{k} {v:,}" for k, v in sorted(p["cm_requests"].items()) if v)
            codes = ", ".join(f"{k}: {v}" for k, v in p["codes"].items())
            evs = ", ".join(f"{k} {v:,}" for k, v in sorted(p.get("events", {}).items(),
                                                            key=lambda kv: -kv[1]))
            L.append(f"- {key} {ph}: {txt}. Controller manager by method: {cm or 'n/a'}."
                     + (f" Non-2xx: {codes}." if codes else "")
                     + (f" Events recorded (source, reason, with repeats): {evs}." if evs
                        else ""))
            aud = p.get("audit") or Counter()
            if aud:
                big = sorted(((k, v) for k, v in aud.items() if v >= 5), key=lambda kv: -kv[1])
                rest = sum(v for v in aud.values() if v < 5)
                L.append(f"  - audit log, requests completed in the window by client (a "
                         f"manager's by controller), verb, resource, non-2xx code, Event "
                         f"reason: {', '.join(f'{k} {v:,}' for k, v in big)}"
                         + (f"; others (under 5 each) {rest:,}" if rest else "") + ".")
    L.append("")
    errs = [(key, r["error"]) for key, runs in results.items() for r in runs
            if r.get("error")]
    fails = [(key, f) for key, runs in results.items() for r in runs
             for f in r.get("failures", [])[:3]]
    rss = [(key, r["rss"]) for key, runs in results.items() for r in runs[:1]]
    if not ran:
        del L[phase_tables_from:]
    trees = sorted({r.get("tree", "?") for runs in results.values() for r in runs})
    L.append("Source tree (HEAD+digest of uncommitted pykcm changes; the tree is shared "
             "with other work in progress): " + ", ".join(trees) + ".  ")
    L.append("RSS at the end (MiB, first run): " + "; ".join(
        f"{key}: " + ", ".join(f"{k} {v:.0f}" for k, v in d.items()) for key, d in rss)
        + ".  ")
    if errs:
        L.append("Failed runs: " + "; ".join(f"{lb}: {e}" for lb, e in errs) + ".  ")
    if fails:
        L.append("Driver requests refused: " + "; ".join(f"{lb}: {f}" for lb, f in fails)
                 + ".  ")
    for name, summ in profiles.items():
        if not summ:
            continue
        L.append("")
        L.append(f"Profile of the controller manager, {name} (py-spy --native, 100 Hz, "
                 "share of samples; leaf Python frame, then inclusive):")
        L.append("")
        L.append("| frame | share |")
        L.append("|---|---:|")
        for k, v in summ:
            L.append(f"| {k.replace('|', '/')} | {v:.1%} |")
    return "\n".join(L)


def latency_table(results: dict[str, list[dict[str, Any]]], qps_labels: list[str],
                  setups: list[str], runs_of: Callable[[str, str], list[dict[str, Any]]]
                  ) -> list[str]:
    """Median wall of the small rollouts per setup (every rollout of every run pooled)."""
    have = any(r.get("latency") for runs in results.values() for r in runs)
    if not have:
        return []

    def walls(q: str, s: str, st: str) -> list[float]:
        return [w for r in runs_of(q, s) for w in (r.get("latency") or {}).get(st, [])]

    L = [("Small rollouts (`set image` on a 10-replica Deployment, pods ready 0.5 s after "
          "they start, until `kubectl rollout status` would say done; median over every "
          "rollout of every run, n in brackets):"), ""]
    head = ["QPS/burst", "strategy", *[SETUP_TITLES.get(s, s) for s in setups]]
    ref_in = REF_SETUP in setups
    if ref_in:
        head += [f"{s} ÷ kube/kube" for s in setups if s != REF_SETUP]
    L.append("| " + " | ".join(head) + " |")
    L.append("|---|---|" + "---:|" * (len(head) - 2))
    for q in qps_labels:
        for st in STRATEGIES:
            cells = [q, st]
            meds = {}
            for s in setups:
                w = walls(q, s, st)
                meds[s] = med(w)
                cells.append(f"{meds[s]:.2f} s ({len(w)})" if w else "—")
            if ref_in:
                for s in setups:
                    if s != REF_SETUP:
                        ok = not (math.isnan(meds[s]) or math.isnan(meds[REF_SETUP]))
                        cells.append(f"{meds[s] / meds[REF_SETUP]:.2f}×" if ok else "—")
            L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append("Every small rollout (s): " + "; ".join(
        f"{q} {s} {st} " + ", ".join(f"{x:.2f}" for x in walls(q, s, st))
        for q in qps_labels for s in setups for st in STRATEGIES if walls(q, s, st)) + ".")
    L.append("")
    return L


def _jsonable(results: dict[str, list[dict[str, Any]]]) -> Any:
    def conv(x: Any) -> Any:
        if isinstance(x, Counter):
            return [[list(k) if isinstance(k, tuple) else k, v] for k, v in x.items()]
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [conv(v) for v in x]
        return x
    return conv(results)


def save(path: str, results: dict[str, list[dict[str, Any]]], args: argparse.Namespace
         ) -> None:
    with open(path, "wb") as f:
        f.write(orjson.dumps({"loadavg": list(args.loadavg), "load_note": args.load_note,
                              "kube_note": args.kube_note, "argv": sys.argv[1:],
                              "results": _jsonable(results)}))


def load(path: str) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any], list[str]]:
    with open(path, "rb") as f:
        d = orjson.loads(f.read())
    for runs in d["results"].values():
        for r in runs:
            for p in r["phases"].values():
                for key in ("requests", "cm_requests", "codes", "events", "audit"):
                    p[key] = Counter({tuple(k) if isinstance(k, list) else k: v
                                      for k, v in p.get(key, [])})
    la = d.get("loadavg") or [float("nan")] * 3
    meta = {"loadavg": la, "kube_note": d.get("kube_note", ""),
            "load_note": d.get("load_note") or f"load average {la[0]:.2f} {la[1]:.2f} "
            f"{la[2]:.2f} at the start"}
    return d["results"], meta, d["argv"]


SETUPS = ("kube/kube", "kube/pykcm", "pykcm/pykcm")


async def main_async(args: argparse.Namespace) -> int:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        pass
    settings = []
    for s in args.qps.split(","):
        q, _, b = s.partition("/")
        settings.append((float(q), int(b or 0) or int(float(q) * 1.5), s))
    kit, args.kube_note = kit_or_reason(args.no_kube)
    setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    for s in setups:
        if s not in SETUP_TITLES:
            raise SystemExit(f"bench: unknown setup {s!r} (one of {', '.join(SETUP_TITLES)})")
    if kit is None:
        log(f"bench: {args.kube_note}")
        setups = [s for s in setups if s == "pykcm/pykcm"]
    results: dict[str, list[dict[str, Any]]] = {}
    profiles: dict[str, list[tuple[str, float]]] = {}
    t0 = time.perf_counter()
    prof_dir = tempfile.mkdtemp(prefix="pykcm-bench-prof-") if args.profile else None
    # py-spy on pykcm's manager: on pykcm's API server when that setup runs, else on kube-apiserver
    prof_setup = next((s for s in ("pykcm/pykcm", "kube/pykcm") if s in setups), None)
    for q, b, label in settings:
        failed: set[str] = set()
        for i in range(args.runs):
            for setup in setups:  # interleaved: load changes spread over every setup
                if setup in failed:
                    continue
                key = f"{label} {setup}"
                profile = (prof_dir if args.profile and label == settings[-1][2]
                           and setup == prof_setup and i == args.runs - 1 else None)
                r = await Run(args, q, b, f"{key}#{i + 1}", profile, setup, kit).run()
                results.setdefault(key, []).append(r)
                if args.save:
                    save(args.save, results, args)
                if r.get("error") and not r["phases"]:
                    failed.add(setup)
    if prof_dir:
        for ph in ("scale", "rollout", "big"):
            profiles[ph] = summarize_pyspy(os.path.join(prof_dir, f"{ph}.txt"))
        if args.keep_logs:
            shutil.copytree(prof_dir, os.path.join(args.keep_logs, "profiles"),
                            dirs_exist_ok=True)
        shutil.rmtree(prof_dir, ignore_errors=True)
    if args.trace:
        for runs in results.values():
            for r in runs:
                print("\n".join(r.get("traces", [])))
    text = report(args, results, time.perf_counter() - t0, profiles)
    print(text)
    if not args.no_record:
        append_results(text)
        log("bench: appended to bench/RESULTS.md")
    return 1 if any(r.get("error") for runs in results.values() for r in runs) else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="20 Deployments, 200 replicas, 10 Jobs")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--qps", default="1000/2000,20/30",
                   help="comma-separated QPS/burst settings (default 1000/2000,20/30)")
    p.add_argument("--nodes", type=int, default=10)
    p.add_argument("--max-pods", type=int, default=250)
    p.add_argument("--deployments", type=int, default=200)
    p.add_argument("--big", type=int, default=2000)
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--timeout", type=float, default=900.0, help="per phase (s)")
    p.add_argument("--no-events", action="store_true", help="pykcm sim --no-events")
    p.add_argument("--profile", action="store_true",
                   help="py-spy the controller manager during scale and big (last run of "
                   "the last QPS setting)")
    p.add_argument("--setups", default=",".join(SETUPS),
                   help="comma-separated API server/controller manager pairs, each 'kube' or "
                   f"'pykcm' (default {','.join(SETUPS)}; pykcm/kube also works)")
    p.add_argument("--no-kube", action="store_true",
                   help="run pykcm/pykcm only, even if the kit is found")
    p.add_argument("--keep-logs", metavar="DIR", help="copy each run's logs to DIR")
    p.add_argument("--no-record", action="store_true")
    p.add_argument("--save", metavar="FILE", help="write the raw results (JSON) after each run")
    p.add_argument("--analysis", metavar="FILE",
                   help="with --report: Markdown text appended after the figures")
    p.add_argument("--report", metavar="FILE",
                   help="only print (and record) the report of results saved with --save")
    p.add_argument("--phases", metavar="LIST",
                   help=f"comma-separated subset of {','.join(PHASES)} (the phases a phase "
                   "needs run too: rollout and gc need scale; default all)")
    p.add_argument("--no-settle", dest="settle", action="store_false",
                   help="start each phase at once after the previous one (default: wait "
                   "until no Event has been written and the manager under test has sent "
                   "no request for 2 s, so that a phase's Event tail is not counted in the "
                   "next one)")
    p.add_argument("--audit", action="store_true",
                   help="kube-apiserver writes an audit log; per phase, the requests "
                   "completed in it by client (a manager's by controller), verb, resource "
                   "and Event reason (the real API server's setups only)")
    p.add_argument("--cprofile", metavar="DIR",
                   help="run pykcm's controller manager under cProfile, one profile per "
                   "phase written to DIR (<run>-<phase>.prof; read with pstats)")
    p.add_argument("--latency-reps", type=int, default=5,
                   help="rollouts of each small Deployment per run (RollingUpdate, Recreate; "
                   "10 replicas ready 0.5 s after start); 0: none")
    p.add_argument("--latency", action="store_true",
                   help="only the small rollouts (default then: --qps 20/30 --setups "
                   "kube/kube,kube/pykcm)")
    p.add_argument("--trace", action="store_true",
                   help="one small rollout of each strategy per setup (default kube/kube,"
                   "kube/pykcm at 20/30), the managers at -v 4: print the per-step timeline "
                   "(watch events and the managers' sync log lines, ms after the PATCH)")
    args = p.parse_args()
    if args.latency or args.trace:
        if "--qps" not in sys.argv[1:]:
            args.qps = "20/30"
        if "--setups" not in sys.argv[1:]:
            args.setups = "kube/kube,kube/pykcm"
    if args.trace:
        args.latency_reps = max(1, min(args.latency_reps, 2)) if "--latency-reps" in \
            sys.argv[1:] else 1
        args.no_record = True
        if "--runs" not in sys.argv[1:]:
            args.runs = 1
    if args.quick:
        args.deployments, args.big, args.jobs, args.runs = 20, 200, 10, 1
    if args.report:
        results, meta, argv = load(args.report)
        record, analysis = not args.no_record, args.analysis
        sys.argv[1:] = argv
        args = p.parse_args(argv)
        if args.quick:
            args.deployments, args.big, args.jobs, args.runs = 20, 200, 10, 1
        args.loadavg, args.load_note, args.kube_note = (
            meta["loadavg"], meta["load_note"], meta["kube_note"])
        text = report(args, results, float("nan"), {})
        if analysis:
            with open(analysis) as f:
                text += "\n\n" + f.read().strip()
        print(text)
        if record:
            append_results(text)
        return 0
    if args.cprofile:
        os.makedirs(args.cprofile, exist_ok=True)
    args.loadavg = os.getloadavg()
    args.load_note = machine_load()
    return run_async(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
