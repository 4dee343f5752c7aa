"""pykcm's API server against the real kube-apiserver v1.36: the corpus, case by case.

One test per corpus group (a cases/*.yaml file or a generated family, see
README.md); each runs every case of its group on both servers (cases in
parallel) and fails on any difference that allowlist.yaml does not explain,
naming the case, the step and the differing paths.

The real control plane is the session's (``kube_control_plane``), with its
support controller manager stopped while these tests run: a controller
writing beside a case (statefulset/daemonset status, node TTL annotations,
root CA config maps) would race it. Each case creates its namespace and that
namespace's ``default`` ServiceAccount on both servers, as the real server's
ServiceAccount admission needs it before pods.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykcm.testing.server_thread import ServerThread
from pykcm.testing.upstream import ControlPlane
from tests.differential.apiserver.corpus import load_corpus
from tests.differential.apiserver.runner import Allowlist, Target, run_cases

pytestmark = pytest.mark.upstream

GROUPS = load_corpus()
RUN = secrets.token_hex(2)  # names of this session's namespaces and objects


@pytest.fixture(scope="module")
def allowlist() -> Allowlist:
    return Allowlist.load()


@pytest.fixture(scope="module")
def targets(kube_control_plane: ControlPlane, pykcm_apiserver: ServerThread,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Target, Target]]:
    """(real, pykcm) with the real server quiet: its support manager stopped meanwhile."""
    ca = Path(tmp_path_factory.mktemp("pykcm-ca")) / "ca.crt"
    ca.write_bytes(pykcm_apiserver.ca_pem or b"")
    support = kube_control_plane.support
    if support is not None:
        support.stop()
    try:
        yield (Target("kube", kube_control_plane.url, kube_control_plane.token,
                      kube_control_plane.ca_file),
               Target("pykcm", pykcm_apiserver.url, pykcm_apiserver.token, str(ca)))
    finally:
        if support is not None:
            support.start()


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_group_matches_kube_apiserver(group: str, targets: tuple[Target, Target],
                                      allowlist: Allowlist) -> None:
    kube, pykcm = targets
    outcomes = run_cases(GROUPS[group], kube, pykcm, allowlist, RUN)
    assert len(outcomes) == len(GROUPS[group])
    failed = [o for o in outcomes if o.failed]
    if failed:
        pytest.fail(f"{len(failed)} of {len(outcomes)} cases of {group} differ from "
                    "kube-apiserver (add a reviewed entry to allowlist.yaml only for a "
                    "difference that is not a bug):\n\n"
                    + "\n\n".join(o.render() for o in failed), pytrace=False)
