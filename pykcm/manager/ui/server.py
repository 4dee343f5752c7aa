"""The live view's HTTP server: the page, its static files, and the snapshot stream.

Routes (plain HTTP on a loopback address: the page shows cluster state without asking
who is looking, so it is never bound elsewhere unless the user says so):

- ``GET /``: ``static/index.html``; ``GET /static/<file>``: its script and style sheet;
- ``GET /api/snapshot``: one snapshot as JSON (scripts, tests);
- ``GET /api/events``: server-sent events, one ``event: snapshot`` a tick
  (:class:`~pykcm.manager.ui.live_view.LiveView`), every browser fed by the same ticker.

Data flow: browser ──EventSource──► /api/events ──► LiveView.subscribe() ──► JSON lines.
Nothing here talks to the API server.
"""

from __future__ import annotations

import contextlib
import logging
from importlib import resources
from typing import Final

import orjson
from aiohttp import web

from pykcm.manager.ui.live_view import LiveView

__all__ = ["UiServer"]

log = logging.getLogger("pykcm.manager.ui")

_TYPES: Final = {"index.html": "text/html", "app.js": "text/javascript",
                 "style.css": "text/css"}


def _static(name: str) -> bytes:
    return (resources.files("pykcm.manager.ui") / "static" / name).read_bytes()


class UiServer:
    """Serves ``view`` on ``http://address:port/`` (port 0: a free one, see :attr:`url`)."""

    def __init__(self, view: LiveView, *, address: str = "127.0.0.1", port: int = 0) -> None:
        self.view = view
        self.address = address
        self.port = port
        self._runner: web.AppRunner | None = None
        self._streams: set[web.StreamResponse] = set()

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{name}", self._file)
        app.router.add_get("/api/snapshot", self._snapshot)
        app.router.add_get("/api/events", self._events)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port)
        await site.start()
        if self._runner.addresses:  # the port picked for port 0
            self.port = int(self._runner.addresses[0][1])
        log.info("Serving the live view", extra={"url": self.url})

    async def stop(self) -> None:
        await self.view.close()
        if self._runner is not None:
            await self._runner.shutdown()
            await self._runner.cleanup()
            self._runner = None

    async def _index(self, _: web.Request) -> web.Response:
        return web.Response(body=_static("index.html"), content_type="text/html",
                            headers={"Cache-Control": "no-cache"})

    async def _file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _TYPES:
            raise web.HTTPNotFound()
        return web.Response(body=_static(name), content_type=_TYPES[name],
                            headers={"Cache-Control": "no-cache"})

    async def _snapshot(self, _: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(self.view.snapshot()),
                            content_type="application/json")

    async def _events(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache",
                                           "X-Accel-Buffering": "no"})
        await resp.prepare(request)
        await resp.write(b"retry: 2000\n\n")  # the browser reconnects after 2 s
        stream = self.view.subscribe()
        try:
            async for snap in stream:
                await resp.write(b"event: snapshot\ndata: " + orjson.dumps(snap) + b"\n\n")
        except ConnectionResetError:
            pass  # the browser went away
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]
        return resp
