"""Run an `APIServer` on its own event loop in a background thread.

Tests, sync or async, talk to it over HTTP like any client; its loop never
shares scheduling with the code under test.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Self

from pykcm.apiserver.endpoints.server import APIServer


class ServerThread:
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("host", "127.0.0.1")
        kwargs.setdefault("port", 0)
        self.server = APIServer(kwargs.pop("data_dir", None), **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def kubeconfig_path(self) -> str:
        return self.server.kubeconfig_path

    @property
    def token(self) -> str:
        return self.server.token

    @property
    def ca_pem(self) -> bytes | None:
        return self.server.ca_pem

    def start(self, timeout: float = 30.0) -> Self:
        self._thread = threading.Thread(target=self._run, name="pykcm-apiserver", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise TimeoutError("the API server did not start in time")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            self._error = exc
            self._started.set()
            return
        self._started.set()
        await self._stop.wait()
        await self.server.stop()

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._stop is not None and self._thread is not None:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        """Run a coroutine on the server's loop (for white-box tests)."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
