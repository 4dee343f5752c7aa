"""``kubectl logs``, ``exec`` and ``attach`` against simulated pods (issue 18's acceptance).

kubectl asks the API server for pods/log (plain GET, streamed with ``-f``),
pods/exec and pods/attach (websocket, v5.channel.k8s.io); pykcm's API
server proxies them to the simulator's kubelet endpoint, which the Node
publishes (pykcm.apiserver.endpoints.pod_proxy, pykcm.sim.kubelet_server). The output
is scripted by ``sim.pykcm.io/logs`` and ``sim.pykcm.io/log-interval-seconds``.

Runs on pykcm's API server only (``pykcm up``, and the real
kube-controller-manager on it): a real kube-apiserver speaks HTTPS with a
client certificate to kubelets, which the simulated kubelet does not serve
(documented in docs/simulator.md). Nothing here asserts how long anything
takes.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e.cluster_helpers import READY_AFTER, NotYet, get_json, wait_until
from tests.e2e.conftest import Kubectl

if TYPE_CHECKING:
    from pykcm.testing.cluster import Cluster
    from pykcm.testing.upstream import KubeCluster

pytestmark = pytest.mark.e2e

NS_PREFIX = "streams"
LOGS = "sim.pykcm.io/logs"
TICKS = "sim.pykcm.io/log-interval-seconds"


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
           "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}}
    # the namespace's default ServiceAccount comes from a controller, a moment after it
    wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", ns).returncode == 0,
               "the default ServiceAccount")
    k.ok("apply", "-n", ns, "-f", "-", stdin=json.dumps(pod))
    wait_until(lambda: get_json(k, "pod", name, "-n", ns)["status"].get("phase") == "Running",
               f"{name} running")


def read_until(proc: subprocess.Popen[str], want: str) -> list[str]:
    """Lines of ``proc``'s stdout up to the first containing ``want`` (the process is then
    stopped)."""
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        for line in proc.stdout:
            seen.append(line.rstrip("\n"))
            if want in line:
                return seen
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    raise AssertionError(f"{want!r} never came: {seen!r}")


def test_logs_with_timestamps_and_tail(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "talk", {LOGS: "hello\nworld"})
    assert k.ok("logs", "talk", "-n", ns) == "hello\nworld\n"
    stamped = k.ok("logs", "talk", "-n", ns, "--timestamps").splitlines()
    assert [re.sub(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ", "", s) for s in stamped] == [
        "hello", "world"], stamped
    assert k.ok("logs", "talk", "-n", ns, "--tail=1") == "world\n"
    r = k.run("logs", "talk", "-n", ns, "--previous")
    assert r.returncode != 0
    assert 'previous terminated container "app" in pod "talk" not found' in r.stderr


def test_logs_follow_streams_new_lines(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "ticker", {LOGS: "start", TICKS: "0.5"})
    lines = read_until(k.popen("logs", "-f", "ticker", "-n", ns), "tick 3")
    assert lines[0] == "start" and lines[-1] == "tick 3"


def test_logs_previous_shows_the_crashed_run(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "crash", {LOGS: "about to fail", "sim.pykcm.io/run-seconds": "0.5",
                             "sim.pykcm.io/exit-code": "1"})

    def restarted() -> Any:
        cs = (get_json(k, "pod", "crash", "-n", ns)["status"].get("containerStatuses")
              or [{}])[0]
        return cs.get("restartCount", 0) >= 1 or NotYet(cs)

    wait_until(restarted, "a restart")
    assert k.ok("logs", "crash", "-n", ns, "--previous") == "about to fail\n"


def kubectl_exec(k: Kubectl, ns: str, pod: str, *command: str, stdin: str | None = None
                 ) -> subprocess.CompletedProcess[str]:
    """``kubectl exec`` (the Kubectl helper appends its options last, after ``--``)."""
    flags = ["-i"] if stdin is not None else []
    return subprocess.run([k.binary, "exec", *flags, pod, "-n", ns, "--request-timeout=20s",
                           "--", *command], input=stdin, capture_output=True, text=True,
                          env=k.env, timeout=60, check=False)


def test_exec_runs_simulated_commands(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "shell", {})
    r = kubectl_exec(k, ns, "shell", "echo", "hi")
    assert (r.returncode, r.stdout) == (0, "hi\n"), r.stderr
    r = kubectl_exec(k, ns, "shell", "sh", "-c", "hostname; echo -n done")
    assert (r.returncode, r.stdout) == (0, "shell\ndone"), r.stderr
    r = kubectl_exec(k, ns, "shell", "cat", stdin="piped\n")
    assert (r.returncode, r.stdout) == (0, "piped\n"), r.stderr
    r = kubectl_exec(k, ns, "shell", "false")
    assert r.returncode == 1 and "command terminated with exit code 1" in r.stderr
    r = kubectl_exec(k, ns, "shell", "no-such-tool")
    assert r.returncode != 0
    assert 'exec: "no-such-tool": executable file not found in $PATH' in r.stderr


def test_attach_streams_the_main_process_output(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    run_pod(k, ns, "main", {TICKS: "0.5"})
    lines = read_until(k.popen("attach", "main", "-n", ns), "tick")
    assert re.fullmatch(r"tick \d+", lines[-1]), lines
