"""The client's connections (pykcm.client.connections): a burst of requests shares a bounded
keep-alive pool, and watches hold connections of their own outside it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from pykcm.client import Client, Config, ConfigError


class CountingServer:
    """A local HTTP server that records the connections requests came on and how many
    requests it held at once; watches stay open until the server stops."""

    def __init__(self) -> None:
        self.connections: set[int] = set()
        self.watch_connections: set[int] = set()
        self.in_flight = 0
        self.max_in_flight = 0
        self.served = 0
        self.watches_open = 0
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._stop = asyncio.Event()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        conn = id(request.transport)
        if request.query.get("watch") == "true":
            self.watch_connections.add(conn)
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(orjson.dumps({"type": "ADDED", "object": {
                "kind": "Pod", "metadata": {"name": "w"}}}) + b"\n")
            self.watches_open += 1
            await self._stop.wait()
            return resp
        self.connections.add(conn)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        # Give the other requests of the burst the chance to arrive while this one is held.
        for _ in range(5):
            await asyncio.sleep(0)
        self.in_flight -= 1
        self.served += 1
        return web.json_response({"kind": "Pod", "metadata": {"name": "p"}})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self._stop.set()
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[CountingServer]:
    s = CountingServer()
    await s.start()
    yield s
    await s.stop()


async def burst(c: Client, n: int) -> list[Any]:
    return await asyncio.gather(*(c.get("pods", f"p{i}", "ns") for i in range(n)))


async def test_a_burst_reuses_a_bounded_pool_of_connections(server: CountingServer) -> None:
    async with Client(Config(host=server.url, max_connections_per_host=4)) as c:
        got = await burst(c, 60)
        assert len(got) == 60 and server.served == 60
        assert 1 <= len(server.connections) <= 4
        assert server.max_in_flight <= 4
        # A second burst goes over the same kept-alive connections.
        first = set(server.connections)
        await burst(c, 60)
        assert server.connections == first and server.served == 120


async def test_the_default_bound_is_client_gos_idle_pool_size(server: CountingServer) -> None:
    assert Config(host=server.url).max_connections_per_host == 25
    async with Client(Config(host=server.url)) as c:
        await burst(c, 80)
    assert server.served == 80 and len(server.connections) <= 25
    assert server.max_in_flight <= 25


async def test_watches_hold_their_own_connections_outside_the_pool(
        server: CountingServer) -> None:
    async with Client(Config(host=server.url, max_connections_per_host=2)) as c:
        watches = [c.watch("pods", "ns") for _ in range(3)]
        for w in watches:  # more open watches than the pool has connections
            assert (await w.__anext__())[1]["metadata"]["name"] == "w"
        assert server.watches_open == 3 and len(server.watch_connections) == 3
        # Requests still go through (they would wait forever for a watch's connection).
        await asyncio.wait_for(burst(c, 10), 30)
        assert server.served == 10 and len(server.connections) <= 2
        assert not server.connections & server.watch_connections
        for w in watches:
            w.close()


def test_a_pool_needs_a_connection() -> None:
    with pytest.raises(ConfigError, match="max_connections_per_host 0"):
        Config(host="http://127.0.0.1:1", max_connections_per_host=0)
