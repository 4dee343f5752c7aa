"""``kubectl port-forward`` to simulated pods (issue 18's acceptance).

kubectl v1.36 tunnels SPDY/3.1 port-forward streams in a websocket
(``SPDY/3.1+portforward.k8s.io``) to pods/portforward; pykcm's API server
passes the tunnel to the simulator's kubelet endpoint, where a tiny server
stands behind the pod's port (pykcm.sim.port_forward): an HTTP server
answering the pod's name, or an echo (``sim.pykcm.io/port-forward: echo``).
A port nothing listens on gives kubectl's forwarding error.

Runs on pykcm's API server only, as test_kubectl_pod_streams (a real
kube-apiserver speaks HTTPS with a client certificate to kubelets). Nothing
here asserts how long anything takes.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import urllib.request
from typing import TYPE_CHECKING

import pytest

from tests.e2e.cluster_helpers import READY_AFTER, get_json, wait_until
from tests.e2e.conftest import Kubectl

if TYPE_CHECKING:
    from pykcm.testing.cluster import Cluster
    from pykcm.testing.upstream import KubeCluster

pytestmark = pytest.mark.e2e

NS_PREFIX = "portfwd"


@pytest.fixture(scope="session", params=["pykcm", pytest.param("kube-controller-manager",
                                                               marks=pytest.mark.upstream)])
def cluster(request: pytest.FixtureRequest) -> Cluster | KubeCluster:
    """conftest's clusters whose API server is pykcm's (see the module docstring)."""
    name = {"pykcm": "pykcm_cluster", "kube-controller-manager": "kube_manager_cluster"}
    c: Cluster | KubeCluster = request.getfixturevalue(name[request.param])
    return c


def run_pod(k: Kubectl, ns: str, name: str, annotations: dict[str, str]) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "annotations": {READY_AFTER: "0", **annotations}},
           "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                    "ports": [{"containerPort": 80}]}]}}
    wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", ns).returncode == 0,
               "the default ServiceAccount")
    k.ok("apply", "-n", ns, "-f", "-", stdin=json.dumps(pod))
    wait_until(lambda: get_json(k, "pod", name, "-n", ns)["status"].get("phase") == "Running",
               f"{name} running")


def forward(k: Kubectl, ns: str, target: str, remote: int) -> tuple[subprocess.Popen[str], int]:
    """``kubectl port-forward TARGET :REMOTE`` and the local port it announced."""
    proc = k.popen("port-forward", target, f":{remote}", "-n", ns)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line)
    if m is None:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"no forwarding announced: {line!r} {err!r}")
    assert int(m.group(2)) == remote
    return proc, int(m.group(1))


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    return err


def test_http_get_through_the_forwarded_port(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "web", {})
    proc, port = forward(k, ns, "pod/web", 80)
    try:
        for _ in range(2):  # each connection is a new pair of streams in one tunnel
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=20) as resp:
                assert resp.status == 200
                assert resp.read() == b"web\n"
    finally:
        stop(proc)


def test_echo_server_behind_an_annotated_port(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "echo", {"sim.pykcm.io/port-forward": "echo",
                            "sim.pykcm.io/open-ports": "9000"})
    proc, port = forward(k, ns, "pod/echo", 9000)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(b"ping\n")
            got = b""
            while len(got) < 5:
                chunk = s.recv(64)
                assert chunk, got
                got += chunk
            assert got == b"ping\n"
    finally:
        stop(proc)


def test_closed_port_gives_kubectls_forwarding_error(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "shut", {})
    proc, port = forward(k, ns, "pod/shut", 8081)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            # the connection ends without an answer: closed, or reset when kubectl
            # closes it before reading the request (the kernel's RST for unread data)
            try:
                got = s.recv(64)
            except ConnectionResetError:
                got = b""
            assert got == b""
    finally:
        err = stop(proc)
    assert "An error occurred forwarding" in err and "remotePort=8081" in err, err
    assert "connection refused" in err, err
