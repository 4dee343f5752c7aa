"""core/v1 ComponentStatuses (registry/core/componentstatus.py): the HTTP probe's outcomes
as kube-apiserver words them, the storage row standing in for etcd-0, the printer."""

from __future__ import annotations

import socket

from aiohttp import web

from pykcm.apiserver.registry.core import componentstatus as cs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _down(request: web.Request) -> web.Response:
    return web.Response(status=503, text="no")


async def test_http_probe_outcomes() -> None:
    app = web.Application()
    app.router.add_get("/ok", _ok)
    app.router.add_get("/down", _down)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        # plain HTTP here: the probe's TLS settings only matter for https URLs
        assert await cs.http_probe(f"http://127.0.0.1:{port}/ok") == ("True", "ok", "")
        assert await cs.http_probe(f"http://127.0.0.1:{port}/down") == (
            "False", "HTTP probe failed with statuscode: 503", "")
    finally:
        await runner.cleanup()
    closed = _free_port()
    url = f"https://127.0.0.1:{closed}/healthz"
    assert await cs.http_probe(url) == (
        "False", f'Get "{url}": dial tcp 127.0.0.1:{closed}: connect: connection refused', "")


async def test_storage_row_and_single_component() -> None:
    [etcd] = await cs.component_statuses(lambda: None, "etcd-0")
    assert etcd == {"kind": "ComponentStatus", "apiVersion": "v1",
                    "metadata": {"name": "etcd-0"},
                    "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}
    [failed] = await cs.component_statuses(lambda: "storage failed: disk full", "etcd-0")
    assert failed["conditions"] == [{"type": "Healthy", "status": "False",
                                     "error": "storage failed: disk full"}]
    assert await cs.component_statuses(lambda: None, "nope") == []


def test_printer_row() -> None:
    row = cs.ComponentStatusStrategy.printer.row
    obj = cs.component_status("scheduler", "False", "refused", "")
    assert row(obj, 0).cells == ["scheduler", "Unhealthy", "refused", ""]
    assert row(cs.component_status("etcd-0", "True", "ok", ""), 0).cells == [
        "etcd-0", "Healthy", "ok", ""]
    assert row({"metadata": {"name": "x"}}, 0).cells == ["x", "Unknown", "", ""]
