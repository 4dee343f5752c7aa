"""Watching either API server with pykcm.client: exact events from a list's
resourceVersion, selectors, bookmarks, watch-list, in-stream 410, closing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from pykcm.client import Client, Expired, WatchEvent, load_kube_config
from pykcm.testing.server_thread import ServerThread
from tests.conftest import PYKCM_SERVER_ONLY, Backend, create_namespace, own


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "tw")


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def collect(stream: Any, n: int, timeout: float = 10) -> list[WatchEvent]:
    out: list[WatchEvent] = []

    async def run() -> None:
        async with stream:
            async for ev in stream:
                out.append(ev)
                if len(out) >= n:
                    return
    await asyncio.wait_for(run(), timeout)
    return out


async def test_watch_from_a_list_resource_version_is_exact(client: Client, ns: str) -> None:
    await client.create("configmaps", {"metadata": {"name": "before"}}, ns)
    lst = await client.list("configmaps", ns)
    start = lst["metadata"]["resourceVersion"]
    a = await client.create("configmaps", {"metadata": {"name": "a"}}, ns)
    a2 = await client.patch("configmaps", "a", {"data": {"k": "v"}}, namespace=ns)
    b = await client.create("configmaps", {"metadata": {"name": "b"}}, ns)
    await client.delete("configmaps", "a", ns)
    events = await collect(client.watch("configmaps", ns, resource_version=start), 4)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [
        ("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    assert [rv(o) for _, o in events[:3]] == [rv(a), rv(a2), rv(b)]
    assert rv(events[3][1]) > rv(b) and events[3][1]["data"] == {"k": "v"}
    # nothing from before the list
    assert all(o["metadata"]["name"] != "before" for _, o in events)


async def test_live_events_and_label_selector(client: Client, ns: str) -> None:
    lst = await client.list("configmaps", ns)
    stream = client.watch("configmaps", ns, resource_version=lst["metadata"]["resourceVersion"],
                          label_selector="app=x")

    async def writes() -> None:
        await asyncio.sleep(0.1)
        await client.create("configmaps", {"metadata": {"name": "other"}}, ns)
        await client.create("configmaps", {"metadata": {"name": "x1", "labels": {"app": "x"}}},
                            ns)
    task = asyncio.create_task(writes())
    events = await collect(stream, 1)
    await task
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "x1")]


async def test_bookmarks_and_server_timeout_end_the_stream(client: Client, ns: str) -> None:
    lst = await client.list("configmaps", ns)
    events = []
    # In a quiet namespace only bookmarks come. When is the server's choice: pykcm's sends
    # one at the timeout; kube-apiserver about 2 s before it, as its once-a-second
    # bookmark timer gets to it, so none for a timeout this short (the bookmark that ends
    # a watch-list's initial events is in test_watch_list_initial_events_end).
    async with client.watch("configmaps", ns, resource_version=lst["metadata"]["resourceVersion"],
                            allow_watch_bookmarks=True, timeout_seconds=1) as w:
        async for ev in w:
            events.append(ev)
    assert all(t == "BOOKMARK" and rv(o) >= int(lst["metadata"]["resourceVersion"])
               for t, o in events), events
    assert w.error is None


async def test_watch_list_initial_events_end(client: Client, ns: str) -> None:
    # the cluster's own (NAMESPACE_CONFIGMAPS on the real kube-apiserver) are sent too
    theirs = [i["metadata"]["name"] for i in (await client.list("configmaps", ns))["items"]]
    await client.create("configmaps", {"metadata": {"name": "a"}}, ns)
    await client.create("configmaps", {"metadata": {"name": "b"}}, ns)
    n = 2 + len(theirs)
    events = await collect(client.watch("configmaps", ns, send_initial_events=True,
                                        resource_version_match="NotOlderThan",
                                        allow_watch_bookmarks=True), n + 1)
    assert [t for t, _ in events] == ["ADDED"] * n + ["BOOKMARK"]
    assert sorted(o["metadata"]["name"] for _, o in events[:n]) == sorted(["a", "b", *theirs])
    assert events[n][1]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


@PYKCM_SERVER_ONLY  # compacts the embedded server's history
async def test_in_stream_410_is_an_error_event(client: Client, ns: str,
                                               pykcm_apiserver: ServerThread) -> None:
    first = await client.create("serviceaccounts", {"metadata": {"name": "s0"}}, ns)
    for i in range(1, 4):
        await client.create("serviceaccounts", {"metadata": {"name": f"s{i}"}}, ns)
    store = pykcm_apiserver.server.store
    assert store is not None

    async def compact() -> None:
        store.resource("core/serviceaccounts").trim(now=1e12, max_events=1, max_age=0)
    pykcm_apiserver.call(compact())
    events = await collect(client.watch("serviceaccounts", ns,
                                        resource_version=str(rv(first))), 1)
    typ, status = events[0]
    assert typ == "ERROR" and status["code"] == 410 and status["reason"] == "Expired"
    # a list at that revision is gone as well, raised as Expired
    with pytest.raises(Expired):
        await client.list("serviceaccounts", ns, resource_version=str(rv(first)),
                          resource_version_match="Exact")


async def test_large_objects_and_raw_lines(client: Client, ns: str) -> None:
    lst = await client.list("configmaps", ns)
    big = "x" * (300 * 1024)
    await client.create("configmaps", {"metadata": {"name": "big"}, "data": {"v": big}}, ns)
    raw = client.watch_raw("configmaps", ns, resource_version=lst["metadata"]["resourceVersion"])
    async with raw:
        line = await raw.next_line()
    assert line is not None
    event = orjson.loads(line)
    assert event["type"] == "ADDED" and event["object"]["data"]["v"] == big
    assert raw.closed


async def test_close_while_waiting_for_events(client: Client, ns: str) -> None:
    w = client.watch("configmaps", ns)
    await w.start()
    got: list[WatchEvent] = []

    async def consume() -> None:
        async for ev in w:
            got.append(ev)
    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    w.close()
    await asyncio.wait_for(task, 2)
    # without a resourceVersion the watch starts with the state: the cluster's objects only
    assert own(o for _, o in got) == [] and w.error is None
    # the client stays usable
    await client.list("configmaps", ns)
