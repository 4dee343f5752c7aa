"""pytest plugin: API server fixtures (registered through the `pytest11` entry point)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pykcm.testing.cluster import Cluster
    from pykcm.testing.server_thread import ServerThread


@pytest.fixture(scope="session")
def pykcm_apiserver() -> Iterator[ServerThread]:
    """One in-memory HTTPS API server on an ephemeral loopback port for the session."""
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
