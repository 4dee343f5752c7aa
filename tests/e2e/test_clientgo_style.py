"""A client-go style LIST + WATCH over aiohttp, the way pykcm's Reflector will do it.

Chunked JSON lines are read with `iter_chunked` and split by hand (aiohttp's line
reader has a 128 KiB limit; objects can be larger).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import aiohttp
import pytest

from tests.conftest import Backend

pytestmark = pytest.mark.e2e

TIMEOUT = aiohttp.ClientTimeout(total=20)


class Client:
    def __init__(self, backend: Backend, session: aiohttp.ClientSession) -> None:
        self.base = backend.url
        self.session = session

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = "application/json",
                      params: dict[str, str] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        async with self.session.request(method, self.base + path, data=data, params=params,
                                        headers=headers, timeout=TIMEOUT) as r:
            return r.status, await r.json(content_type=None)

    async def namespace(self) -> str:
        name = "t-" + uuid.uuid4().hex[:10]
        code, body = await self.request("POST", "/api/v1/namespaces",
                                        {"metadata": {"name": name}})
        assert code == 201, body
        return name

    async def watch(self, path: str, params: dict[str, str]
                    ) -> AsyncGenerator[dict[str, Any], None]:
        """Yield watch events; split the chunked body into lines by hand."""
        p = {"watch": "1", **params}
        async with self.session.get(self.base + path, params=p, timeout=TIMEOUT) as r:
            assert r.status == 200, await r.text()
            assert r.headers["Content-Type"].startswith("application/json")
            buf = b""
            async for chunk in r.content.iter_chunked(64 * 1024):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
            assert not buf.strip(), buf


@pytest.fixture
async def kc(apiserver: Backend) -> AsyncIterator[Client]:
    ctx = ssl.create_default_context(cadata=apiserver.ca_pem.decode())
    headers = {"Authorization": f"Bearer {apiserver.token}",
               "Accept": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx),
                                     headers=headers) as session:
        yield Client(apiserver, session)


def _name(ev: dict[str, Any]) -> str:
    return str(ev["object"]["metadata"].get("name"))


def _rv(ev: dict[str, Any]) -> int:
    return int(ev["object"]["metadata"]["resourceVersion"])


async def test_paged_list_then_watch_with_bookmark(kc: Client) -> None:
    ns = await kc.namespace()
    path = f"/api/v1/namespaces/{ns}/secrets"
    for i in range(5):
        code, body = await kc.request("POST", path, {"metadata": {"name": f"c{i}"}})
        assert code == 201, body

    # paged LIST, limit=2, the way a Reflector pages through its initial list
    items: list[dict[str, Any]] = []
    cont = ""
    list_rv = None
    pages = 0
    while True:
        params = {"limit": "2"}
        if cont:
            params["continue"] = cont
        code, lst = await kc.request("GET", path, params=params)
        assert code == 200, lst
        assert lst["kind"] == "SecretList" and lst["apiVersion"] == "v1"
        pages += 1
        list_rv = list_rv or lst["metadata"]["resourceVersion"]
        assert lst["metadata"]["resourceVersion"] == list_rv
        items += lst["items"]
        if pages == 1:
            # a write between pages: not in this list, it comes through the watch
            code, _ = await kc.request("POST", path, {"metadata": {"name": "between"}})
            assert code == 201
        cont = lst["metadata"].get("continue", "")
        if not cont:
            break
    assert pages == 3
    assert [i["metadata"]["name"] for i in items] == ["c0", "c1", "c2", "c3", "c4"]
    assert all(int(i["metadata"]["resourceVersion"]) <= int(list_rv) for i in items)

    async def writes() -> None:
        await asyncio.sleep(0.2)
        assert (await kc.request("POST", path, {"metadata": {"name": "new"}}))[0] == 201
        assert (await kc.request("PATCH", f"{path}/c0", {"data": {"k": "dg=="}},
                                 content_type="application/merge-patch+json"))[0] == 200
        assert (await kc.request("DELETE", f"{path}/c1"))[0] == 200

    writer = asyncio.create_task(writes())
    events: list[dict[str, Any]] = []
    start = time.monotonic()
    # kube-apiserver's bookmark comes 2 s before the deadline (none in a watch of 2 s)
    params = {"allowWatchBookmarks": "true", "resourceVersion": str(list_rv),
              "timeoutSeconds": "4"}
    async with aclosing(kc.watch(path, params)) as stream:
        async for ev in stream:
            events.append(ev)
    elapsed = time.monotonic() - start
    await writer
    # the stream ends by itself at timeoutSeconds
    assert 3.5 < elapsed < 12, elapsed

    changes = [(e["type"], _name(e)) for e in events if e["type"] != "BOOKMARK"]
    assert changes == [("ADDED", "between"), ("ADDED", "new"), ("MODIFIED", "c0"),
                       ("DELETED", "c1")]
    rvs = [_rv(e) for e in events if e["type"] != "BOOKMARK"]
    assert rvs == sorted(rvs) and rvs[0] > int(list_rv)
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks, "no BOOKMARK before the watch timed out"
    last = events[-1]
    assert last["type"] == "BOOKMARK"
    bm = last["object"]
    assert bm["kind"] == "Secret" and bm["apiVersion"] == "v1"
    assert _rv(last) >= rvs[-1]
    # a bookmark carries only the resourceVersion (and no object fields)
    assert set(bm) <= {"kind", "apiVersion", "metadata"}
    assert "name" not in bm["metadata"]

    # resuming from the bookmark's resourceVersion sees nothing older
    async def later() -> None:
        await asyncio.sleep(0.2)
        assert (await kc.request("POST", path, {"metadata": {"name": "after"}}))[0] == 201

    writer = asyncio.create_task(later())
    resumed: list[dict[str, Any]] = []
    params = {"allowWatchBookmarks": "true", "resourceVersion": bm["metadata"]["resourceVersion"],
              "timeoutSeconds": "1"}
    async with aclosing(kc.watch(path, params)) as stream:
        async for ev in stream:
            resumed.append(ev)
            if ev["type"] == "ADDED":
                break
    await writer
    assert [(e["type"], _name(e)) for e in resumed if e["type"] != "BOOKMARK"] == [
        ("ADDED", "after")]


async def test_watch_list_initial_events_then_bookmark_then_live(kc: Client) -> None:
    ns = await kc.namespace()
    path = f"/api/v1/namespaces/{ns}/secrets"
    for n in ("a", "b", "c"):
        assert (await kc.request("POST", path, {"metadata": {"name": n}}))[0] == 201
    assert (await kc.request("DELETE", f"{path}/b"))[0] == 200

    async def live() -> None:
        await asyncio.sleep(0.3)
        assert (await kc.request("POST", path, {"metadata": {"name": "live"}}))[0] == 201
        assert (await kc.request("DELETE", f"{path}/a"))[0] == 200

    writer: asyncio.Task[None] | None = None
    events: list[dict[str, Any]] = []
    params = {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
              "allowWatchBookmarks": "true", "timeoutSeconds": "10"}
    async with aclosing(kc.watch(path, params)) as stream:
        async for ev in stream:
            events.append(ev)
            is_end = ev["type"] == "BOOKMARK" and (ev["object"]["metadata"].get(
                "annotations") or {}).get("k8s.io/initial-events-end")
            if is_end and writer is None:
                writer = asyncio.create_task(live())
            if ev["type"] == "DELETED":
                break
    assert writer is not None, events
    await writer

    non_bm = [(e["type"], _name(e)) for e in events if e["type"] != "BOOKMARK"]
    # the current state as ADDED (b was deleted before), then the live events
    assert non_bm == [("ADDED", "a"), ("ADDED", "c"), ("ADDED", "live"), ("DELETED", "a")]
    ends = [i for i, e in enumerate(events) if e["type"] == "BOOKMARK"
            and (e["object"]["metadata"].get("annotations") or {}).get(
                "k8s.io/initial-events-end") == "true"]
    assert len(ends) == 1
    end = ends[0]
    # the initial-events-end bookmark comes after every initial ADDED and before live events
    assert [e["type"] for e in events[:end]] == ["ADDED", "ADDED"]
    assert [_name(e) for e in events[end + 1:] if e["type"] != "BOOKMARK"] == ["live", "a"]
    bm = events[end]["object"]
    assert bm["kind"] == "Secret" and bm["apiVersion"] == "v1"
    assert bm["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    bm_rv = int(bm["metadata"]["resourceVersion"])
    # the bookmark's revision covers the initial state; live events are newer
    assert all(_rv(e) <= bm_rv for e in events[:end])
    assert all(_rv(e) > bm_rv for e in events[end + 1:] if e["type"] != "BOOKMARK")


async def test_large_object_lines_are_reassembled(kc: Client) -> None:
    # one event larger than aiohttp's 128 KiB line limit, split across chunks
    ns = await kc.namespace()
    path = f"/api/v1/namespaces/{ns}/secrets"
    code, lst = await kc.request("GET", path)
    assert code == 200, lst
    big = "eHh4" * (100 * 1024)  # base64 of 300 KiB
    assert (await kc.request("POST", path, {"metadata": {"name": "big"},
                                            "data": {"blob": big}}))[0] == 201
    events = []
    params = {"resourceVersion": lst["metadata"]["resourceVersion"], "timeoutSeconds": "5"}
    async with aclosing(kc.watch(path, params)) as stream:
        async for ev in stream:
            events.append(ev)
            break
    assert events[0]["type"] == "ADDED" and events[0]["object"]["data"]["blob"] == big
