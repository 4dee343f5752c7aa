"""The REST client against a scripted local HTTP server: retries, auth renewal, headers,
error bodies, watch streaming, timeouts and resource resolution."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from pykcm.api.resources import ResourceRegistry
from pykcm.client import (
    Client,
    Config,
    ExecConfig,
    NoResourceMatchError,
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    WritesFenced,
    is_resource_expired,
    no_warnings,
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Server:
    """A local HTTP server whose answer to each request is scripted by the test."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.handler: Handler = self._default
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _default(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"kind": "Pod", "metadata": {"name": "x"}})

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append({"method": request.method, "path": request.path,
                              "query": dict(request.query), "headers": request.headers,
                              "body": body, "multi": request.headers.getall})
        return await self.handler(request)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def status_body(code: int, reason: str, message: str = "m") -> bytes:
    return orjson.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "code": code, "reason": reason, "message": message})


def answer(code: int, reason: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=code, body=status_body(code, reason),
                        content_type="application/json", headers=headers)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    s = Server()
    await s.start()
    yield s
    await s.stop()


def cfg(server: Server, **kw: Any) -> Config:
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("backoff_max", 0.05)
    return Config(host=server.url, **kw)


def sequence(*responses: Callable[[], web.StreamResponse]) -> Handler:
    it = iter(responses)

    async def handler(request: web.Request) -> web.StreamResponse:
        return next(it)()
    return handler


def ok(obj: dict[str, Any] | None = None, code: int = 200) -> Callable[[], web.Response]:
    return lambda: web.json_response(obj or {"kind": "Pod", "metadata": {"name": "p"}},
                                     status=code)


# -- retries ------------------------------------------------------------------------------


async def test_429_is_retried_for_every_verb_honouring_retry_after(server: Server) -> None:
    server.handler = sequence(lambda: answer(429, "TooManyRequests", {"Retry-After": "0"}),
                              lambda: answer(429, "TooManyRequests", {"Retry-After": "0"}),
                              ok(code=201))
    async with Client(cfg(server)) as c:
        out = await c.create("pods", {"metadata": {"name": "p"}}, "ns")
    assert out["metadata"]["name"] == "p"
    assert [r["method"] for r in server.requests] == ["POST"] * 3


async def test_retry_after_is_waited(server: Server) -> None:
    server.handler = sequence(lambda: answer(429, "TooManyRequests", {"Retry-After": "1"}),
                              ok())
    async with Client(cfg(server)) as c:
        t0 = time.monotonic()
        await c.get("pods", "p", "ns")
        assert time.monotonic() - t0 >= 0.95


async def test_retries_stop_at_max_and_raise_the_typed_error(server: Server) -> None:
    async def always(request: web.Request) -> web.StreamResponse:
        return answer(429, "TooManyRequests", {"Retry-After": "0"})
    server.handler = always
    async with Client(cfg(server, max_retries=3)) as c:
        with pytest.raises(TooManyRequests) as info:
            await c.delete("pods", "p", "ns")
    assert info.value.retry_after == 0
    assert len(server.requests) == 4


async def test_5xx_retried_for_reads_only(server: Server) -> None:
    server.handler = sequence(lambda: answer(503, "ServiceUnavailable"),
                              lambda: answer(504, "Timeout"), ok())
    async with Client(cfg(server)) as c:
        await c.get("pods", "p", "ns")
        assert len(server.requests) == 3
        for method in ("create", "patch", "delete"):
            server.requests.clear()
            server.handler = sequence(lambda: answer(503, "ServiceUnavailable"), ok())
            with pytest.raises(ServiceUnavailable):
                if method == "create":
                    await c.create("pods", {"metadata": {"name": "p"}}, "ns")
                elif method == "patch":
                    await c.patch("pods", "p", {"metadata": {}}, namespace="ns")
                else:
                    await c.delete("pods", "p", "ns")
            assert len(server.requests) == 1, method


async def test_plain_500_is_an_answer_unless_retry_after(server: Server) -> None:
    server.handler = sequence(lambda: answer(500, "InternalError"), ok())
    async with Client(cfg(server)) as c:
        with pytest.raises(Exception) as info:
            await c.get("pods", "p", "ns")
        assert info.value.__class__.__name__ == "InternalError"
        server.handler = sequence(lambda: answer(500, "ServerTimeout", {"Retry-After": "0"}),
                                  ok())
        await c.get("pods", "p", "ns")
    assert len(server.requests) == 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_connection_errors_retried_for_reads_only() -> None:
    config = Config(host=f"http://127.0.0.1:{free_port()}", max_retries=3, backoff_base=0.001)
    async with Client(config) as c:
        backoffs: list[int] = []
        original = c._backoff

        def record(attempt: int) -> float:
            backoffs.append(attempt)
            return original(attempt)
        c._backoff = record  # type: ignore[method-assign]
        with pytest.raises(aiohttp.ClientConnectionError):
            await c.get("pods", "p", "ns")
        assert backoffs == [0, 1, 2]
        backoffs.clear()
        with pytest.raises(aiohttp.ClientConnectionError):
            await c.create("pods", {"metadata": {"name": "p"}}, "ns")
        assert backoffs == []


async def test_per_request_timeout_is_not_retried(server: Server) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.6)
        return web.json_response({})
    server.handler = slow
    async with Client(cfg(server)) as c:
        t0 = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await c.get("pods", "p", "ns", timeout=0.2)
        assert time.monotonic() - t0 < 0.55  # the handler answers only after 0.6 s
    assert len(server.requests) == 1


# -- credentials ----------------------------------------------------------------------------


async def test_401_rereads_a_rotated_token_file_and_retries_once(server: Server,
                                                                 tmp_path: Path) -> None:
    tok = tmp_path / "token"
    tok.write_text("old")
    accepted = {"Bearer old"}

    async def auth(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") not in accepted:
            return answer(401, "Unauthorized")
        return web.json_response({"kind": "Pod"})
    server.handler = auth
    async with Client(cfg(server, token_file=str(tok))) as c:
        await c.get("pods", "p", "ns")
        accepted = {"Bearer new"}
        tok.write_text("new")  # rotated; the cached token is still "old"
        await c.create("pods", {"metadata": {"name": "p"}}, "ns")  # even for POST: a 401
        # was not processed
        assert [r["headers"]["Authorization"] for r in server.requests] == [
            "Bearer old", "Bearer old", "Bearer new"]
        accepted = set()
        server.requests.clear()
        with pytest.raises(Unauthorized):
            await c.get("pods", "p", "ns")
        assert len(server.requests) == 1  # same token after re-reading: no retry


PLUGIN = f'''#!{sys.executable}
import json, os
state = os.environ["PLUGIN_STATE"]
n = int(open(state).read()) + 1 if os.path.exists(state) else 1
open(state, "w").write(str(n))
print(json.dumps({{"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1",
                  "status": {{"token": "tok-%d" % n}}}}))
'''


async def test_401_reruns_the_exec_plugin(server: Server, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.write_text(PLUGIN)
    plugin.chmod(0o755)

    async def auth(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != "Bearer tok-2":
            return answer(401, "Unauthorized")
        return web.json_response({"kind": "Pod"})
    server.handler = auth
    ex = ExecConfig(command=str(plugin), env=(("PLUGIN_STATE", str(tmp_path / "n")),),
                    interactive_mode="Never")
    async with Client(cfg(server, exec_provider=ex)) as c:
        await c.get("pods", "p", "ns")
        await c.get("pods", "p", "ns")  # cached: no new run
        assert c._auth.exec is not None and c._auth.exec.exec_count == 2
    assert [r["headers"]["Authorization"] for r in server.requests] == [
        "Bearer tok-1", "Bearer tok-2", "Bearer tok-2"]


# -- what goes on the wire --------------------------------------------------------------------


async def test_headers_params_and_bodies(server: Server) -> None:
    config = cfg(server, token="t", user_agent="pykcm/test (linux/amd64) unit",
                 impersonate_user="jane", impersonate_groups=("g1", "g2"))
    async with Client(config) as c:
        await c.list("pods", "ns", label_selector="app=x", field_selector="spec.nodeName=n",
                     limit=10, continue_="tok", resource_version="5",
                     resource_version_match="NotOlderThan", timeout_seconds=3)
        await c.patch("deployments.apps", "d", {"spec": {}}, "strategic", "ns",
                      field_manager="me")
        await c.patch("deployments", "d", [{"op": "add", "path": "/x", "value": 1}], "json",
                      "ns")
        await c.patch("deployments", "d", {"spec": {}}, "apply", "ns", field_manager="me",
                      force=True)
        await c.delete("pods", "p", "ns", propagation_policy="Foreground",
                       grace_period_seconds=0, preconditions={"uid": "u1"})
        await c.get("nodes", "n1", "ignored-for-cluster-scoped")
        await c.get("pods", "system:weird name", "ns")
    r = server.requests
    h = r[0]["headers"]
    assert h["User-Agent"] == "pykcm/test (linux/amd64) unit"
    assert h["Accept"] == "application/json" and h["Authorization"] == "Bearer t"
    assert h["Impersonate-User"] == "jane" and h.getall("Impersonate-Group") == ["g1", "g2"]
    assert r[0]["path"] == "/api/v1/namespaces/ns/pods"
    assert r[0]["query"] == {"labelSelector": "app=x", "fieldSelector": "spec.nodeName=n",
                             "limit": "10", "continue": "tok", "resourceVersion": "5",
                             "resourceVersionMatch": "NotOlderThan", "timeoutSeconds": "3"}
    assert r[1]["path"] == "/apis/apps/v1/namespaces/ns/deployments/d"
    assert r[1]["headers"]["Content-Type"] == "application/strategic-merge-patch+json"
    assert r[1]["query"] == {"fieldManager": "me"}
    assert r[2]["headers"]["Content-Type"] == "application/json-patch+json"
    assert orjson.loads(r[2]["body"]) == [{"op": "add", "path": "/x", "value": 1}]
    assert r[3]["headers"]["Content-Type"] == "application/apply-patch+yaml"
    assert r[3]["query"] == {"fieldManager": "me", "force": "true"}
    assert r[4]["method"] == "DELETE"
    assert orjson.loads(r[4]["body"]) == {
        "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0, "preconditions": {"uid": "u1"}}
    assert r[5]["path"] == "/api/v1/nodes/n1"
    assert r[6]["path"] == "/api/v1/namespaces/ns/pods/system:weird name"


async def test_server_warnings_go_to_the_warning_handler(
        server: Server, caplog: pytest.LogCaptureFixture) -> None:
    deprecated = '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 ' \
                 'EndpointSlice"'

    async def warn(request: web.Request) -> web.StreamResponse:
        return web.json_response({"kind": "EndpointsList", "items": []},
                                 headers={"Warning": deprecated})
    server.handler = warn
    # by default: logged, as client-go's WarningLogger
    with caplog.at_level("WARNING", logger="pykcm.client"):
        async with Client(cfg(server)) as c:
            await c.list("endpoints", "ns")
    assert [r.getMessage() for r in caplog.records] == [f"server warning: {deprecated}"]
    caplog.clear()
    seen: list[str] = []
    async with Client(cfg(server, warning_handler=seen.append)) as c:
        await c.list("endpoints", "ns")
    async with Client(cfg(server, warning_handler=no_warnings)) as c:
        await c.list("endpoints", "ns")
    assert seen == [deprecated] and caplog.records == []


async def test_namespace_required_for_namespaced_objects(server: Server) -> None:
    async with Client(cfg(server)) as c:
        with pytest.raises(ValueError, match="namespaced"):
            await c.get("pods", "p")
        with pytest.raises(ValueError, match="unknown patch type"):
            await c.patch("pods", "p", {}, "yaml", "ns")  # type: ignore[arg-type]
        # the namespace of the body is used when none is given
        await c.create("pods", {"metadata": {"name": "p", "namespace": "from-body"}})
    assert server.requests[-1]["path"] == "/api/v1/namespaces/from-body/pods"


async def test_non_status_error_bodies(server: Server) -> None:
    server.handler = sequence(lambda: web.Response(status=404, text="404 page not found"))
    async with Client(cfg(server)) as c:
        with pytest.raises(NotFound) as info:
            await c.get("pods", "p", "ns")
    assert info.value.causes[0]["message"] == "404 page not found"


# -- watch --------------------------------------------------------------------------------------


def ev(t: str, name: str, pad: int = 0) -> bytes:
    return orjson.dumps({"type": t, "object": {"kind": "Pod", "metadata": {
        "name": name, "resourceVersion": "1"}, "data": "x" * pad}}) + b"\n"


async def test_watch_streams_large_events_in_pieces(server: Server) -> None:
    payload = ev("ADDED", "a") + ev("MODIFIED", "big", 300 * 1024) + ev("DELETED", "a")

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        for i in range(0, len(payload), 7000):
            await resp.write(payload[i:i + 7000])
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp
    server.handler = stream
    async with Client(cfg(server)) as c:
        events = [(t, o["metadata"]["name"], len(o["data"])) async for t, o in
                  c.watch("pods", "ns", resource_version="7", allow_watch_bookmarks=True,
                          send_initial_events=False, timeout_seconds=30)]
    assert events == [("ADDED", "a", 0), ("MODIFIED", "big", 300 * 1024), ("DELETED", "a", 0)]
    assert server.requests[0]["query"] == {
        "watch": "true", "resourceVersion": "7", "allowWatchBookmarks": "true",
        "sendInitialEvents": "false", "timeoutSeconds": "30"}


async def test_watch_close_from_another_task_ends_the_stream(server: Server) -> None:
    disconnected = asyncio.Event()

    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(ev("ADDED", "a"))
        try:
            while True:
                await asyncio.sleep(0.05)
                await resp.write(b"\n")
        except (ConnectionResetError, asyncio.CancelledError):
            disconnected.set()
            raise
    server.handler = endless
    async with Client(cfg(server)) as c:
        w = c.watch("pods", "ns")
        got = []

        async def consume() -> None:
            async for e in w:
                got.append(e[0])
        task = asyncio.create_task(consume())
        await asyncio.sleep(0.2)
        w.close()
        await asyncio.wait_for(task, 2)
        await asyncio.wait_for(disconnected.wait(), 2)
    assert got == ["ADDED"] and w.error is None


async def test_watch_setup_errors_raise(server: Server) -> None:
    server.handler = sequence(lambda: answer(410, "Expired"))
    async with Client(cfg(server)) as c:
        with pytest.raises(Exception) as info:
            async with c.watch("pods", "ns", resource_version="1"):
                pass
    assert is_resource_expired(info.value)


# -- resolving resource names ---------------------------------------------------------------


@pytest.mark.parametrize("name,expected", [
    ("pods", ("", "pods")), ("pod", ("", "pods")), ("po", ("", "pods")), ("Pod", ("", "pods")),
    ("deployments.apps", ("apps", "deployments")), ("Deployment", ("apps", "deployments")),
    ("deploy", ("apps", "deployments")), ("deployments.v1.apps", ("apps", "deployments")),
    ("apps/v1/deployments", ("apps", "deployments")), ("v1/pods", ("", "pods")),
    ("apps/deployments", ("apps", "deployments")),
    ("leases.coordination.k8s.io", ("coordination.k8s.io", "leases")),
    ("ns", ("", "namespaces")), ("jobs.batch", ("batch", "jobs")),
])
async def test_resolve_through_the_registry(name: str, expected: tuple[str, str]) -> None:
    async with Client(Config(host="http://127.0.0.1:1")) as c:  # no request is made
        info = await c.resolve(name)
    assert (info.group, info.plural) == expected


LEGACY_CORE = {"kind": "APIVersions", "versions": ["v1"]}
CORE_V1 = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
     "verbs": ["get", "list"], "shortNames": ["po"]},
    {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod",
     "verbs": ["get"]}]}


def discovery_server(server: Server, groups: dict[str, list[dict[str, Any]]],
                     aggregated: bool) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        p = request.path
        agg = aggregated and "as=APIGroupDiscoveryList" in request.headers.get("Accept", "")
        ctype = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        if p == "/api":
            if agg:
                return web.Response(body=orjson.dumps({
                    "kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": ""},
                        "versions": [{"version": "v1", "resources": [{
                            "resource": "pods", "responseKind": {"kind": "Pod"},
                            "scope": "Namespaced", "singularResource": "pod",
                            "verbs": ["get"], "subresources": [{"subresource": "status"}]}]}]}]}),
                    headers={"Content-Type": ctype})
            return web.json_response(LEGACY_CORE)
        if p == "/api/v1":
            return web.json_response(CORE_V1)
        if p == "/apis":
            if agg:
                items = [{"metadata": {"name": g}, "versions": [{"version": "v1", "resources": [
                    {"resource": r["name"], "responseKind": {"group": g, "version": "v1",
                                                             "kind": r["kind"]},
                     "scope": "Namespaced" if r["namespaced"] else "Cluster",
                     "singularResource": r["singularName"], "verbs": ["get"]}
                    for r in rs]}]} for g, rs in groups.items()]
                return web.Response(body=orjson.dumps({"kind": "APIGroupDiscoveryList",
                                                       "items": items}),
                                    headers={"Content-Type": ctype})
            return web.json_response({"kind": "APIGroupList", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"}}
                for g in groups]})
        parts = p.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "apis" and parts[1] in groups:
            return web.json_response({"kind": "APIResourceList",
                                      "groupVersion": f"{parts[1]}/v1",
                                      "resources": groups[parts[1]]})
        return answer(404, "NotFound")
    server.handler = handler


@pytest.mark.parametrize("aggregated", [True, False])
async def test_resolve_through_discovery_refreshing_on_a_miss(server: Server,
                                                              aggregated: bool) -> None:
    widget = {"name": "widgets", "singularName": "widget", "namespaced": True,
              "kind": "Widget", "verbs": ["get"]}
    groups: dict[str, list[dict[str, Any]]] = {"example.com": [widget]}
    discovery_server(server, groups, aggregated)
    async with Client(cfg(server), registry=ResourceRegistry([])) as c:
        info = await c.resolve("widgets.example.com")
        assert (info.group, info.version, info.kind, info.namespaced) == (
            "example.com", "v1", "Widget", True)
        pods = await c.resolve("po" if not aggregated else "pod")
        assert pods.plural == "pods" and pods.subresources == ("status",)
        assert c.discovery.fetch_count == 1
        # a resource installed later: found by refreshing on the miss
        groups["other.io"] = [{"name": "gadgets", "singularName": "gadget",
                               "namespaced": False, "kind": "Gadget", "verbs": ["get"]}]
        gadget = await c.resolve("Gadget")
        assert gadget.group == "other.io" and not gadget.namespaced
        assert c.discovery.fetch_count == 2
        with pytest.raises(NoResourceMatchError, match='resource type "nothing"'):
            await c.resolve("nothing")
        # by path: the custom resource is usable like any other
        server.requests.clear()
        discovery_server(server, groups, aggregated)
        old = server.handler

        async def objects(request: web.Request) -> web.StreamResponse:
            if request.path.startswith("/apis/example.com/v1/namespaces/"):
                return web.json_response({"kind": "Widget"})
            return await old(request)
        server.handler = objects
        assert (await c.get("widgets.example.com", "w", "ns"))["kind"] == "Widget"


# -- write fence --------------------------------------------------------------------------


async def test_a_closed_write_fence_refuses_writes_before_sending_and_never_reads(
        server: Server) -> None:
    why: list[str | None] = [None]
    async with Client(cfg(server), write_fence=lambda: why[0]) as c:
        await c.create("pods", {"metadata": {"name": "p"}}, "ns")   # open: sent
        why[0] = "not the leader"
        for write in (c.create("pods", {"metadata": {"name": "q"}}, "ns"),
                      c.patch("pods", "p", {"a": 1}, "merge", "ns"),
                      c.delete("pods", "p", "ns")):
            with pytest.raises(WritesFenced, match="not sent: not the leader"):
                await write
        await c.get("pods", "p", "ns")                                # reads pass
    assert [r["method"] for r in server.requests] == ["POST", "GET"]



@pytest.mark.parametrize("how", ["length", "chunked", "gzip"])
async def test_a_large_list_body_arrives_whole(server: Server, how: str) -> None:
    """list_raw of a body over the preallocation threshold (read into one buffer of its
    Content-Length) gives the bytes sent; chunked and compressed bodies too (read as
    aiohttp reads them)."""
    items = [{"metadata": {"name": f"p{i}", "namespace": "d"}, "spec": {"x": "y" * (i % 97)}}
             for i in range(30_000)]
    body = orjson.dumps({"kind": "PodList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "7"}, "items": items})
    assert len(body) > (1 << 20)

    async def handler(request: web.Request) -> web.StreamResponse:
        if how == "length":
            return web.Response(body=body, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        if how == "gzip":
            resp.enable_compression(web.ContentCoding.gzip)
        else:
            resp.enable_chunked_encoding()
        await resp.prepare(request)
        for i in range(0, len(body), 100_000):
            await resp.write(body[i:i + 100_000])
        await resp.write_eof()
        return resp

    server.handler = handler
    async with Client(cfg(server)) as c:
        got = await c.list_raw("pods", "d")
    assert bytes(got) == body
    # Only a body of announced length is read into a buffer of that length.
    assert isinstance(got, bytearray) == (how == "length")
