"""Cluster: ``pykcm up`` in a subprocess, for end-to-end tests of controllers with kubectl.

The same three processes a user gets (API server, simulated nodes,
controller manager), on an ephemeral loopback port with a temporary data dir;
``stop()`` (or leaving the ``with`` block) ends them all and removes the dir.

    with Cluster(nodes=3) as c:
        subprocess.run(["kubectl", "--kubeconfig", c.kubeconfig_path, "get", "nodes"])
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Self

import yaml

__all__ = ["Cluster"]


class Cluster:
    """``pykcm up --port 0`` with a private data dir; see the module doc."""

    def __init__(self, *, nodes: int = 3, controllers: str = "*", kube_api_qps: float = 20.0,
                 kube_api_burst: int = 30, max_pods: int = 110,
                 data_dir: str | None = None, controller_manager: bool = True,
                 manager_flags: Sequence[str] = (),
                 max_grace_period: float | None = 0.0) -> None:
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
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        self.url = ""

    @property
    def kubeconfig_path(self) -> str:
        return os.path.join(self.data_dir, "kubeconfig")

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
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"pykcm up did not start within {timeout} s")

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
