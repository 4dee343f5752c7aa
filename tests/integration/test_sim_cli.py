"""``pykcm sim`` as a subprocess: starts, registers nodes, runs pods, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from pykcm.client import Client, load_kube_config
from pykcm.testing.server_thread import ServerThread
from tests.conftest import ensure_default_service_account


def run_sim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykcm", "sim", *args], check=False,
                          capture_output=True, text=True, timeout=60)


def test_bad_kubeconfig_is_one_line() -> None:
    p = run_sim("--kubeconfig", "/nonexistent/kubeconfig")
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pykcm: error:"), p.stderr


def test_unreachable_server_is_one_line(tmp_path: os.PathLike[str]) -> None:
    kubeconfig = os.path.join(os.fspath(tmp_path), "kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                "    server: http://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n"
                "    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n"
                "  user: {}\n")
    p = run_sim("--kubeconfig", kubeconfig)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pykcm: error:"), p.stderr


def test_sim_runs_pods_and_stops_on_sigterm(
        pykcm_apiserver_factory: Callable[..., ServerThread]) -> None:
    st = pykcm_apiserver_factory()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pykcm", "sim", "--kubeconfig", st.kubeconfig_path,
         "--nodes", "2", "--node-prefix", "cli", "--ready-after", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("pykcm sim: 2 nodes"), first

        async def check() -> None:
            async with Client(load_kube_config(st.kubeconfig_path)) as c:
                names = sorted(n["metadata"]["name"] for n in (await c.list("nodes"))["items"])
                assert names == ["cli-0", "cli-1"]
                await ensure_default_service_account(c, "default")  # no controller runs
                await c.create("pods", {"metadata": {"name": "p"}, "spec": {
                    "containers": [{"name": "c", "image": "nginx"}]}}, "default")
                deadline = time.monotonic() + 30
                while True:
                    p = await c.get("pods", "p", "default")
                    if p["status"].get("phase") == "Running":
                        return
                    assert time.monotonic() < deadline, p["status"]
                    await asyncio.sleep(0.05)

        asyncio.run(check())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "pykcm sim stopped" in out
