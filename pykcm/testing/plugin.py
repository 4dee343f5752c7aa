"""pytest plugin: API server fixtures (registered through the `pytest11` entry point).

Also the real Kubernetes control plane (:mod:`pykcm.testing.upstream`) for
tests marked ``upstream``: ``kube_control_plane`` is one real kube-apiserver
+ etcd per session (per xdist worker), with the real kube-controller-manager
running the controllers pykcm lacks. Where no kit is found, upstream tests
are deselected and the run says so in one line at the top and the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pykcm.testing.cluster import Cluster
    from pykcm.testing.server_thread import ServerThread
    from pykcm.testing.upstream import ControlPlane, KubeKit

UPSTREAM = "upstream"
_NO_KIT = ("pykcm: upstream tests not run: no kube-v1.36 kit found (set PYKCM_KUBE_KIT to a "
           "kit's directory, the one holding its control-plane script)")


def _kit(config: pytest.Config) -> KubeKit | None:
    cached: Any = getattr(config, "_pykcm_kit", False)
    if cached is False:
        from pykcm.testing.upstream import KitError, find_kit

        try:
            cached = find_kit([config.rootpath])
        except KitError as e:
            raise pytest.UsageError(str(e)) from None
        config._pykcm_kit = cached  # type: ignore[attr-defined]
    kit: KubeKit | None = cached
    return kit


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{UPSTREAM}: needs the real Kubernetes v1.36 control plane (a kube-v1.36 "
        "kit: PYKCM_KUBE_KIT); deselected with one line of notice where there is none")


def pytest_report_header(config: pytest.Config) -> str:
    kit = _kit(config)
    return (f"pykcm: upstream tests use the real control plane in {kit.root}" if kit
            else _NO_KIT)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _kit(config) is not None:
        return
    keep = [i for i in items if i.get_closest_marker(UPSTREAM) is None]
    dropped = [i for i in items if i.get_closest_marker(UPSTREAM) is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _kit(config) is None:
        terminalreporter.write_line(_NO_KIT)


@pytest.fixture(scope="session")
def pykcm_apiserver() -> Iterator[ServerThread]:
    """One in-memory HTTPS API server on an ephemeral loopback port for the session.

    It runs no controllers: pods need their namespace's ``default`` ServiceAccount
    (ServiceAccount admission), which a test creates itself, as the serviceaccount
    controller would on a cluster.
    """
    from pykcm.testing.server_thread import ServerThread

    with ServerThread() as st:
        yield st


@pytest.fixture
def pykcm_apiserver_factory() -> Iterator[Callable[..., ServerThread]]:
    """Start private API servers (kwargs as `APIServer`); each stops when the test ends."""
    from pykcm.testing.server_thread import ServerThread

    started: list[ServerThread] = []

    def make(**kwargs: Any) -> ServerThread:
        st = ServerThread(**kwargs).start()
        started.append(st)
        return st

    yield make
    for st in reversed(started):
        st.stop()


@pytest.fixture(scope="session")
def pykcm_cluster() -> Iterator[Cluster]:
    """``pykcm up`` (API server, 3 simulated nodes, all controllers) for the session.

    Its ``kubeconfig_path`` works with kubectl and any client; use a
    namespace of your own per test.
    """
    from pykcm.testing.cluster import Cluster

    with Cluster() as c:
        yield c


@pytest.fixture
def pykcm_cluster_factory() -> Iterator[Callable[..., Cluster]]:
    """Start private ``pykcm up`` clusters (kwargs as `Cluster`, e.g. ``virtual_time=True``
    for one virtual clock with autojump, ``c.clock.advance(600)``); each stops when the
    test ends."""
    from pykcm.testing.cluster import Cluster

    started: list[Cluster] = []

    def make(**kwargs: Any) -> Cluster:
        c = Cluster(**kwargs)
        started.append(c)
        return c.start()

    yield make
    for c in reversed(started):
        c.stop()


@pytest.fixture(scope="session")
def kube_kit(pytestconfig: pytest.Config) -> KubeKit:
    """The kube-v1.36 kit (tests using it must be marked ``upstream``)."""
    kit = _kit(pytestconfig)
    if kit is None:
        raise RuntimeError("no kube-v1.36 kit: mark the test `upstream` so that it is deselected")
    return kit


@pytest.fixture(scope="session")
def kube_control_plane(kube_kit: KubeKit, tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[ControlPlane]:
    """The real kube-apiserver + etcd v1.36 for the session (one per xdist worker), with the
    real kube-controller-manager running every controller but the workload ones
    (``WORKLOAD_CONTROLLERS``: tests run those themselves, pykcm's or the real ones)."""
    from pykcm.testing.upstream import WORKLOAD_CONTROLLERS, support_controller_manager

    cp = kube_kit.control_plane(tmp_path_factory.mktemp("kube")).start()
    support = None
    try:
        support = cp.support = support_controller_manager(cp, WORKLOAD_CONTROLLERS).start()
        yield cp
    finally:
        if support is not None:
            support.stop()
        cp.stop()
