"""Cluster: ``pykcm up`` in a subprocess, for end-to-end tests of controllers with kubectl.

The same three processes a user gets (API server, simulated nodes,
controller manager), on an ephemeral loopback port with a temporary data dir;
``stop()`` (or leaving the ``with`` block) ends them all and removes the dir.

    with Cluster(nodes=3) as c:
        subprocess.run(["kubectl", "--kubeconfig", c.kubeconfig_path, "get", "nodes"])

``Cluster(virtual_time=True)`` runs ``pykcm up --virtual-time``: one virtual clock for
the three (issue 21), jumping by itself to the next timer whenever the cluster is idle
(``autojump=False``: only when advanced); ``c.clock`` reads and moves it::

    with Cluster(virtual_time=True) as c:
        c.clock.advance(600)          # ten minutes later, at once
        print(c.clock.now())          # an aware UTC datetime
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Self

import yaml

__all__ = ["Cluster", "ClusterClock"]


class ClusterClock:
    """The virtual clock of a cluster's API server (``/pykcm/v1/clock``), for tests:
    synchronous calls with the admin's credentials."""

    def __init__(self, url: str, token: str, ca_file: str | None) -> None:
        self.url = url.rstrip("/") + "/pykcm/v1/clock"
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._ssl = ssl.create_default_context(cafile=ca_file) if url.startswith("https") \
            else None

    def _call(self, method: str, path: str = "", body: dict[str, Any] | None = None
              ) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={**self._headers, "Content-Type":
                                              "application/json"})
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=30) as r:
                out: dict[str, Any] = json.loads(r.read())
                return out
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {req.full_url}: {exc.code} "
                               f"{exc.read().decode(errors='replace')}") from None

    def state(self) -> dict[str, Any]:
        """``GET /pykcm/v1/clock``: now, epoch, generation, autojump, followers, ..."""
        return self._call("GET")

    def epoch(self) -> float:
        """Now on the cluster's clock, seconds since the epoch."""
        return float(self.state()["epoch"])

    def now(self) -> datetime:
        """Now on the cluster's clock, an aware UTC datetime."""
        return datetime.fromtimestamp(self.epoch(), UTC)

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move the cluster's time ``seconds`` forward at once (its state after)."""
        return self._call("POST", "/advance", {"seconds": seconds})

    def advance_to(self, when: datetime | str) -> dict[str, Any]:
        """Move the cluster's time to ``when`` (an aware datetime or RFC 3339)."""
        to = when if isinstance(when, str) else \
            when.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return self._call("POST", "/advance", {"to": to})


class Cluster:
    """``pykcm up --port 0`` with a private data dir; see the module doc."""

    def __init__(self, *, nodes: int = 3, controllers: str = "*", kube_api_qps: float = 20.0,
                 kube_api_burst: int = 30, max_pods: int = 110,
                 data_dir: str | None = None, controller_manager: bool = True,
                 manager_flags: Sequence[str] = (),
                 max_grace_period: float | None = 0.0, virtual_time: bool = False,
                 autojump: bool = True, virtual_start: str = "",
                 seed: int | None = None) -> None:
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="pykcm-cluster-")
        self.nodes = nodes
        self._argv = [sys.executable, "-m", "pykcm", "up", "--data-dir", self.data_dir,
                      "--port", "0", "--nodes", str(nodes), "--max-pods", str(max_pods),
                      "--controllers", controllers,
                      "--kube-api-qps", str(kube_api_qps), "--kube-api-burst",
                      str(kube_api_burst), "--no-status"]
        if max_grace_period is not None:
            # deleted pods go at once unless they ask for their grace period with
            # sim.pykcm.io/termination-seconds (suites would wait 30 s per pod)
            self._argv += ["--max-grace-period", f"{max_grace_period:g}"]
        if not controller_manager:
            self._argv.append("--no-controller-manager")
        self._argv += [f"--controller-manager-flag={f}" for f in manager_flags]
        if seed is not None:
            # every component's randomness seeded (generated names, UIDs, jitter): with
            # virtual time, two runs of a scenario then produce the same objects and events
            self._argv += ["--seed", str(seed)]
        self.virtual_time = virtual_time
        self.autojump = autojump
        if virtual_time:
            self._argv.append("--virtual-time")
            if not autojump:
                self._argv.append("--no-autojump")
            if virtual_start:
                self._argv += ["--virtual-start", virtual_start]
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        self.url = ""

    @property
    def kubeconfig_path(self) -> str:
        return os.path.join(self.data_dir, "kubeconfig")

    @property
    def clock(self) -> ClusterClock:
        """The cluster's virtual clock (``virtual_time=True``), once started."""
        if not self.virtual_time:
            raise RuntimeError("this cluster runs on real time (Cluster(virtual_time=True))")
        if not self.url:
            raise RuntimeError("the cluster is not started")
        with open(os.path.join(self.data_dir, "admin.token")) as f:
            token = f.read().strip()
        return ClusterClock(self.url, token, os.path.join(self.data_dir, "pki", "ca.crt"))

    def log(self, component: str) -> str:
        """The text of one component's log (apiserver, sim, controller-manager)."""
        try:
            with open(os.path.join(self.data_dir, "logs", f"{component}.log")) as f:
                return f.read()
        except OSError:
            return ""

    def start(self, timeout: float = 60.0) -> Self:
        os.makedirs(self.data_dir, mode=0o700, exist_ok=True)
        log = os.path.join(self.data_dir, "up.log")
        # A restart on the same dir appends: only what this run writes counts.
        self._log_offset = os.path.getsize(log) if os.path.exists(log) else 0
        with open(log, "ab") as out:
            self._proc = subprocess.Popen(self._argv, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        # `pykcm up` prints its banner once every child has been started.
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"pykcm up exited ({self._proc.returncode}): "
                                   f"{self._tail('up.log')}")
            if "export KUBECONFIG" in self._tail("up.log"):
                with open(self.kubeconfig_path) as f:
                    self.url = yaml.safe_load(f)["clusters"][0]["cluster"]["server"]
                if self.virtual_time and self.autojump:
                    self._wait_followers_ready(deadline)
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"pykcm up did not start within {timeout} s")

    def _wait_followers_ready(self, deadline: float) -> None:
        # The banner comes once the processes are started, not their controllers and
        # nodes; meanwhile autojump moves on (a starting follower is not waited for), so
        # a test starting at once would see a controller begin some virtual seconds late,
        # by how long its start took in real time: a run-to-run difference. (Without
        # autojump nothing moves meanwhile, and a follower whose start waits on the
        # clock, its client's token bucket, would only start once the test advances.)
        names = {"sim", "controller-manager"} if self.nodes else {"controller-manager"}
        if "--no-controller-manager" in self._argv:
            names.discard("controller-manager")
        while time.monotonic() < deadline:
            state = self.clock.state()
            if names <= {f["name"] for f in state["followers"] if f["ready"]}:
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the cluster's {', '.join(sorted(names))} did not start")

    def _tail(self, name: str) -> str:
        try:
            with open(os.path.join(self.data_dir, name)) as f:
                f.seek(self._log_offset)
                return f.read()[-2000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> None:
        p = self._proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self._proc = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
