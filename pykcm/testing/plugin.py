"""pytest plugin: API server fixtures (registered through the `pytest11` entry point)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
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
