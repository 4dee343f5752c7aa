"""`pykcm up`: three processes that start, serve kubectl, stop cleanly and resume from the data dir."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pykcm.testing.cluster import Cluster

KUBECTL = str(Path(sys.executable).parent / "kubectl")


def kubectl(c: Cluster, *args: str) -> str:
    r = subprocess.run([KUBECTL, "--kubeconfig", c.kubeconfig_path, "--request-timeout=20s",
                        *args], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
    return r.stdout


def wait(cond, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_up_runs_a_deployment_then_stops_and_resumes(tmp_path: Path) -> None:
    data = str(tmp_path / "state")
    with Cluster(nodes=2, data_dir=data) as c:
        nodes = json.loads(kubectl(c, "get", "nodes", "-o", "json"))["items"]
        assert sorted(n["metadata"]["name"] for n in nodes) == ["pykcm-node-0", "pykcm-node-1"]
        kubectl(c, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")

        def available() -> bool:
            d = json.loads(kubectl(c, "get", "deployment", "web", "-o", "json"))
            return d.get("status", {}).get("availableReplicas") == 2

        wait(available, 60, "the deployment to be available")
        for component in ("apiserver", "sim", "controller-manager"):
            assert os.path.getsize(os.path.join(data, "logs", f"{component}.log")) > 0
        # Secrets live in the data dir: the owner's only.
        assert os.stat(data).st_mode & 0o777 == 0o700
        for f in ("state.db", "kubeconfig", "admin.token"):
            assert os.stat(os.path.join(data, f)).st_mode & 0o777 == 0o600, f
        # A second `pykcm up` on the dir in use fails in one line and touches nothing.
        before = Path(c.kubeconfig_path).read_bytes()
        r = subprocess.run([sys.executable, "-m", "pykcm", "up", "--data-dir", data, "--port",
                            "0", "--no-status"], capture_output=True, text=True, timeout=60,
                           check=False)
        assert r.returncode == 1
        assert r.stderr.strip().splitlines() == [
            (f"pykcm: error: another pykcm API server is using {data}; stop it or choose "
             "another --data-dir")], r.stderr
        assert Path(c.kubeconfig_path).read_bytes() == before
        kubectl(c, "get", "deployment", "web")
    # Stopped cleanly: every component said so in its log.
    up_log = (Path(data) / "up.log").read_text()
    assert "pykcm up: stopped" in up_log
    # A restart on the same data dir resumes: the deployment and its pods are still there.
    with Cluster(nodes=2, data_dir=data) as c:
        d = json.loads(kubectl(c, "get", "deployment", "web", "-o", "json"))
        assert d["spec"]["replicas"] == 2
        pods = json.loads(kubectl(c, "get", "pods", "-l", "app=web", "-o", "json"))["items"]
        assert len(pods) == 2


def test_up_reports_a_port_in_use_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "pykcm", "up", "--data-dir",
                            str(tmp_path / "d"), "--port", str(port), "--no-status"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode != 0
    errors = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1 and errors[0].startswith("pykcm: error: apiserver exited"), r.stderr
    assert "address" in errors[0].lower() or "in use" in errors[0].lower()


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "99999"], "argument --port: 99999 is not a port number (0-65535; 0 picks a free one)"),
    (["--port", "-5"], "argument --port: -5 is not a port number (0-65535; 0 picks a free one)"),
    (["--nodes", "-1"], "argument --nodes: -1 is negative"),
    (["--max-pods", "0"], "argument --max-pods: 0 is not at least 1"),
    (["--kube-api-burst", "x"], "argument --kube-api-burst: 'x' is not a whole number"),
    (["--no-autojump"], "--virtual-start and --no-autojump go with --virtual-time"),
    (["--virtual-time", "--virtual-start", "noon"],
     "argument --virtual-start: 'noon' is not an RFC 3339 time"),
])
def test_up_refuses_bad_arguments_in_one_line(tmp_path: Path, args: list[str],
                                              message: str) -> None:
    r = subprocess.run([sys.executable, "-m", "pykcm", "up", "--data-dir", str(tmp_path / "d"),
                        *args], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == f"pykcm up: error: {message}", r.stderr
    assert not (tmp_path / "d").exists()


def test_up_stops_on_sigterm(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-m", "pykcm", "up", "--data-dir", str(tmp_path),
                          "--port", "0", "--nodes", "1", "--no-status"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if "export KUBECONFIG" in line:
                break
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert "pykcm up: stopped" in out


def test_status_line_reads_objects_events_and_requests(tmp_path: Path, pykcm_apiserver) -> None:  # type: ignore[no-untyped-def]
    """The live line of `pykcm up`, from the API server's /metrics (manager unreachable here)."""
    import asyncio

    import aiohttp

    from pykcm.cli.up import _Status

    ca = tmp_path / "ca.crt"
    ca.write_bytes(pykcm_apiserver.ca_pem)
    status = _Status(pykcm_apiserver.url, pykcm_apiserver.token, str(ca), "http://127.0.0.1:9")

    async def two_lines() -> tuple[str, str]:
        async with aiohttp.ClientSession(trust_env=False) as s:
            first = await status.line(s)
            await asyncio.sleep(0.2)
            return first, await status.line(s)

    first, second = asyncio.run(two_lines())
    assert first.startswith("objects ") and "| events 0/s | API 0 req/s | queued 0" in first
    assert "events" in second and "req/s" in second and "queued 0" in second
