"""``kubectl api-resources`` (plain and ``-o wide``) on pykcm's API server against the real
kube-apiserver v1.36.2 (issue 15's acceptance): the same rows — name, short names,
apiVersion, namespaced, kind, verbs, categories — but for the known gaps below, each
explained. A row on either side that is neither equal nor a known gap fails the test, and
so does a known gap that has closed (the list stays true).

The real server is the session's ``kube_control_plane`` (no aggregated API server: no
metrics.k8s.io there).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

from pykcm.testing.server_thread import ServerThread
from pykcm.testing.upstream import ControlPlane
from tests.e2e.conftest import REQUEST_TIMEOUT, _kubectl_path

pytestmark = pytest.mark.upstream

# Rows kube-apiserver v1.36 lists that pykcm's server does not: (apiVersion, name) -> why.
KUBE_ONLY: dict[tuple[str, str], str] = {}

# Rows pykcm's server lists that kube-apiserver does not: (apiVersion, name) -> why.
PYKCM_ONLY: dict[tuple[str, str], str] = {
    ("metrics.k8s.io/v1beta1", "nodes"): "pykcm answers metrics-server's API itself, from "
                                         "the simulated kubelets' usage (kube-apiserver serves "
                                         "it only through an aggregated metrics-server)",
    ("metrics.k8s.io/v1beta1", "pods"): "as metrics.k8s.io/v1beta1 nodes",
}


@pytest.fixture(scope="module")
def kubectl_cache() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="kubectl-cache-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _api_resources(kubeconfig: str, cache: str, *args: str) -> dict[tuple[str, str], list[str]]:
    """The rows of ``kubectl api-resources ARGS`` keyed by (apiVersion, name): the cells."""
    env = {**os.environ, "KUBECONFIG": kubeconfig, "KUBECACHEDIR": cache}
    r = subprocess.run([_kubectl_path(), "api-resources", *args, REQUEST_TIMEOUT],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0]
    # Custom resources are not the servers' own: other tests on the same servers create
    # and delete CRDs (their groups then come and go in discovery), so their rows are left out.
    crds = subprocess.run([_kubectl_path(), "get", "customresourcedefinitions", "-o",
                           "jsonpath={.items[*].spec.group}", REQUEST_TIMEOUT],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert crds.returncode == 0, crds.stderr
    custom_groups = set(crds.stdout.split())
    # columns start where the header's words start (kubectl's tabwriter pads with spaces)
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    names = header.split()
    assert names[0] == "NAME" and "APIVERSION" in names
    rows: dict[tuple[str, str], list[str]] = {}
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1],
                                                     strict=True)]
        row = dict(zip(names, cells, strict=True))
        if row["APIVERSION"].rpartition("/")[0] in custom_groups:
            continue
        rows[(row["APIVERSION"], row["NAME"])] = cells
    return rows


@pytest.mark.parametrize("wide", [False, True], ids=["plain", "wide"])
def test_api_resources_match_kube_apiserver(wide: bool, kube_control_plane: ControlPlane,
                                            pykcm_apiserver: ServerThread,
                                            kubectl_cache: str) -> None:
    args = ("-o", "wide") if wide else ()
    kube = _api_resources(kube_control_plane.kubeconfig_path,
                          os.path.join(kubectl_cache, "kube"), *args)
    pykcm = _api_resources(pykcm_apiserver.kubeconfig_path,
                           os.path.join(kubectl_cache, "pykcm"), *args)
    problems = []
    for key in sorted(kube.keys() | pykcm.keys()):
        if key in kube and key in pykcm:
            if kube[key] != pykcm[key]:
                problems.append(f"{key}: kube {kube[key]} pykcm {pykcm[key]}")
            for gaps in (KUBE_ONLY, PYKCM_ONLY):
                if key in gaps:
                    problems.append(f"{key}: listed as a known gap but served alike: drop it")
        elif key in kube and key not in KUBE_ONLY:
            problems.append(f"{key}: only kube-apiserver serves it: {kube[key]}")
        elif key in pykcm and key not in PYKCM_ONLY:
            problems.append(f"{key}: only pykcm's server serves it: {pykcm[key]}")
    for key in KUBE_ONLY.keys() - kube.keys():
        problems.append(f"{key}: known gap, but kube-apiserver does not list it")
    assert not problems, "\n".join(problems)
    # what the test compared: most rows are equal
    assert len(kube.keys() & pykcm.keys()) >= 45
