"""The Reflector against either API server, into a DeltaFIFO + Indexer pipeline.

The pipeline is a minimal informer: a task pops the DeltaFIFO and applies
each delta to the Indexer (the DeltaFIFO's known objects). Consistency is
checked object by object against a fresh LIST.

Covered: 500 mixed creates/updates/deletes after a paged initial list;
history compacted while the reflector is stopped (restart: a relist whose
Replace tombstones what was deleted meanwhile), and while its watch is down
(a real in-stream 410, a relist); a quiet period with only bookmarks;
watch-list mode, and its fallbacks when the server refuses or ignores it;
ListWatch's selectors and options.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import pykcm.apiserver.endpoints.handlers as server_handlers
from pykcm.cache import (
    DELETED,
    DeletedFinalStateUnknown,
    DeltaFIFO,
    Deltas,
    ExponentialBackoffManager,
    Indexer,
    ListWatch,
    Reflector,
    WatchListIncompleteError,
    deletion_handling_meta_namespace_key,
    new_indexer,
)
from pykcm.cache import reflector as reflector_mod
from pykcm.client import Client, Invalid, WatchStream, is_resource_expired, load_kube_config
from pykcm.testing.server_thread import ServerThread
from tests.conftest import PYKCM_SERVER_ONLY, Backend, create_namespace


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "rf")


def fast_backoff() -> ExponentialBackoffManager:
    return ExponentialBackoffManager(0.01, 0.05)


class Pipeline:
    """Reflector → DeltaFIFO → (pop) → Indexer, with the deltas recorded."""

    def __init__(self, lw: ListWatch, **kw: Any) -> None:
        self.indexer: Indexer = new_indexer(deletion_handling_meta_namespace_key)
        self.fifo = DeltaFIFO(known_objects=self.indexer)
        kw.setdefault("backoff", fast_backoff())
        self.reflector = Reflector(lw, self.fifo, name="test", **kw)
        self.errors: list[BaseException] = []
        self.reflector.set_watch_error_handler(lambda _r, e: self.errors.append(e))
        self.deleted: list[tuple[str, Any]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.run_task: asyncio.Task[None] | None = None

    def _process(self, deltas: Deltas, _initial: bool) -> None:
        for d in deltas:
            if d.type == DELETED:
                self.deleted.append((deletion_handling_meta_namespace_key(d.object), d.object))
                self.indexer.delete(d.object)
            elif self.indexer.get(d.object) is not None:
                self.indexer.update(d.object)
            else:
                self.indexer.add(d.object)

    async def _consume(self) -> None:
        while True:
            await self.fifo.pop(self._process)

    def start(self) -> None:
        if not self._tasks:
            self._tasks.append(asyncio.create_task(self._consume()))
        self.run_task = asyncio.create_task(self.reflector.run())

    async def stop_reflector(self) -> None:
        assert self.run_task is not None
        self.run_task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.run_task

    async def close(self) -> None:
        if self.run_task is not None and not self.run_task.done():
            await self.stop_reflector()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def synced(self, timeout: float = 10) -> None:
        await until(self.fifo.has_synced, timeout)


async def until(cond: Callable[[], bool], timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.01)


async def assert_consistent(client: Client, ns: str, indexer: Indexer,
                            timeout: float = 10) -> dict[str, Any]:
    """Wait until the indexer holds exactly a fresh LIST's objects; return them."""
    fresh_lw = ListWatch(client, "configmaps", namespace=ns)
    want: dict[str, Any] = {}
    have: dict[str, Any] = {}
    try:
        async with asyncio.timeout(timeout):
            while True:
                lst = await fresh_lw.list()
                want = {f"{ns}/{o['metadata']['name']}": o for o in lst["items"]}
                have = {k: indexer.get_by_key(k) for k in indexer.list_keys()}
                if want == have:
                    return want
                await asyncio.sleep(0.05)
    except TimeoutError:
        missing = sorted(set(want) - set(have))
        extra = sorted(set(have) - set(want))
        stale = sorted(k for k in set(want) & set(have) if want[k] != have[k])
        pytest.fail(f"cache differs from the server: missing {missing[:5]}, "
                    f"extra {extra[:5]}, stale {stale[:5]}")


async def create_cms(client: Client, ns: str, names: list[str]) -> None:
    await asyncio.gather(*(client.create("configmaps", {"metadata": {"name": n},
                                                          "data": {"v": "0"}}, ns)
                           for n in names))


async def test_consistent_through_500_mixed_writes_after_a_paged_list(
        client: Client, ns: str) -> None:
    # the cluster's own (NAMESPACE_CONFIGMAPS on the real kube-apiserver) are there too
    theirs = [i["metadata"]["name"] for i in (await client.list("configmaps", ns))["items"]]
    names = [f"cm-{i}" for i in range(60)]
    await create_cms(client, ns, names)
    # kube-apiserver answers a list at resourceVersion 0 from its watch cache, whole (the
    # limit ignored, as client-go's reflector expects); pykcm's server pages it
    paged = "continue" in (await client.list("configmaps", ns, resource_version="0",
                                             limit=25))["metadata"]
    lists: list[dict[str, Any]] = []

    class Spy(ListWatch):
        async def list(self, **kw: Any) -> dict[str, Any]:
            lists.append(kw)
            return await super().list(**kw)
    p = Pipeline(Spy(client, "configmaps", namespace=ns), use_watch_list=False, page_size=25)
    p.start()
    try:
        await p.synced()
        assert [(c.get("resource_version", ""), bool(c.get("continue_"))) for c in lists] == [
            ("0", False), *([("", True), ("", True)] if paged else [])]
        assert len(p.indexer.list_keys()) == 60 + len(theirs)
        rng = random.Random(4)
        live = set(names)
        counter = 60

        # Ten writes at a time, each to another object: concurrent requests to one object
        # may reach the server in any order (a delete before the create it follows).
        async def one(used: set[str]) -> None:
            nonlocal counter
            op = rng.random()
            candidates = sorted(live - used)
            if op < 0.35 or not candidates:
                counter += 1
                name = f"cm-{counter}"
                live.add(name)
                used.add(name)
                await client.create("configmaps", {"metadata": {"name": name}}, ns)
            elif op < 0.75:
                name = rng.choice(candidates)
                used.add(name)
                await client.patch("configmaps", name, {"data": {"v": str(rng.random())}},
                                   namespace=ns)
            else:
                name = rng.choice(candidates)
                live.discard(name)
                used.add(name)
                await client.delete("configmaps", name, ns)
        for _ in range(50):
            used: set[str] = set()
            await asyncio.gather(*(one(used) for _ in range(10)))
        want = await assert_consistent(client, ns, p.indexer)
        assert set(want) == {f"{ns}/{n}" for n in [*live, *theirs]}
        r = p.reflector
        assert (r.list_count, r.watch_count, p.errors) == (1, 1, [])
        # (both servers' resourceVersions are etcd revisions: compared as numbers)
        assert int(r.last_sync_resource_version()) >= max(
            int(o["metadata"]["resourceVersion"]) for o in want.values())
    finally:
        await p.close()


@PYKCM_SERVER_ONLY  # compacts the embedded server's history
@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "watch-list"])
async def test_compaction_while_stopped_relists_with_tombstones(
        client: Client, ns: str, pykcm_apiserver: ServerThread, watch_list: bool) -> None:
    await create_cms(client, ns, [f"cm-{i}" for i in range(10)])
    p = Pipeline(ListWatch(client, "configmaps", namespace=ns), use_watch_list=watch_list)
    p.start()
    try:
        await p.synced()
        await assert_consistent(client, ns, p.indexer)
        await p.stop_reflector()
        for i in range(3):
            await client.delete("configmaps", f"cm-{i}", ns)
        await client.patch("configmaps", "cm-5", {"data": {"v": "new"}}, namespace=ns)
        await client.create("configmaps", {"metadata": {"name": "late"}}, ns)
        await compact(pykcm_apiserver)
        p.start()
        await assert_consistent(client, ns, p.indexer)
        # The deletes were never seen: Replace tombstoned them with their last state.
        tomb = {k: o for k, o in p.deleted}
        assert sorted(tomb) == [f"{ns}/cm-{i}" for i in range(3)]
        assert all(isinstance(o, DeletedFinalStateUnknown) and o.obj is not None
                   for o in tomb.values())
        r = p.reflector
        if watch_list:
            assert r.is_watch_list_used and r.list_count == 0
        else:
            assert r.list_count == 2
    finally:
        await p.close()


async def compact(st: ServerThread) -> None:
    store = st.server.store
    assert store is not None

    async def trim() -> None:
        store.resource("core/configmaps").trim(now=1e12, max_events=1, max_age=0)
    # From this loop's thread, without blocking this loop.
    await asyncio.to_thread(st.call, trim())


class GatedListWatch(ListWatch):
    """A ListWatch whose watches wait for `gate`, and whose open streams a test can cut."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.gate = asyncio.Event()
        self.gate.set()
        self.streams: list[WatchStream] = []

    def watch(self, **kw: Any) -> WatchStream:
        inner = super().watch(**kw)
        self.streams.append(inner)
        gate = self.gate

        async def chunks() -> AsyncIterator[bytes]:
            while True:
                lines = await inner.next_lines()
                if not lines:
                    return
                yield b"\n".join(lines) + b"\n"

        async def opener() -> tuple[AsyncIterator[bytes], Callable[[], None]]:
            await gate.wait()
            await inner.start()
            return chunks(), inner.close
        return WatchStream(opener)


@PYKCM_SERVER_ONLY  # compacts the embedded server's history
async def test_compaction_while_the_watch_is_down_gives_a_410_and_a_relist(
        client: Client, ns: str, pykcm_apiserver: ServerThread) -> None:
    await create_cms(client, ns, [f"cm-{i}" for i in range(10)])
    lw = GatedListWatch(client, "configmaps", namespace=ns)
    p = Pipeline(lw, use_watch_list=False)
    p.start()
    try:
        await p.synced()
        await client.create("configmaps", {"metadata": {"name": "seen"}}, ns)
        await until(lambda: p.indexer.get_by_key(f"{ns}/seen") is not None)
        last = p.reflector.last_sync_resource_version()
        # Cut the watch; the next one waits at the gate.
        lw.gate.clear()
        lw.streams[-1].close()
        await until(lambda: len(lw.streams) == 2)
        for i in range(3):
            await client.delete("configmaps", f"cm-{i}", ns)
        await client.patch("configmaps", "cm-5", {"data": {"v": "new"}}, namespace=ns)
        await client.create("configmaps", {"metadata": {"name": "late"}}, ns)
        await compact(pykcm_apiserver)
        lw.gate.set()
        await assert_consistent(client, ns, p.indexer)
        r = p.reflector
        assert any(is_resource_expired(e) for e in p.errors), p.errors
        assert r.list_count == 2 and int(r.last_sync_resource_version()) > int(last)
        tomb = {k for k, o in p.deleted if isinstance(o, DeletedFinalStateUnknown)}
        assert tomb == {f"{ns}/cm-{i}" for i in range(3)}
    finally:
        await p.close()


@PYKCM_SERVER_ONLY  # shortens the embedded server's bookmark interval
async def test_a_quiet_period_with_only_bookmarks(
        client: Client, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_handlers, "BOOKMARK_INTERVAL", 0.2)
    # a watch shorter than 2 s gets no bookmark (kube-apiserver's cacher sends the last one
    # 2 s before the deadline)
    monkeypatch.setattr(reflector_mod, "DEFAULT_MIN_WATCH_TIMEOUT", 3.0)
    await create_cms(client, ns, ["a", "b"])
    p = Pipeline(ListWatch(client, "configmaps", namespace=ns), use_watch_list=False)
    p.start()
    try:
        await p.synced()
        start_rv = int(p.reflector.last_sync_resource_version())
        # A write elsewhere moves the revision; only bookmarks can tell this watch.
        other = await client.create("configmaps", {"metadata": {"name": "elsewhere"}},
                                    "default")
        target = int(other["metadata"]["resourceVersion"])
        assert target > start_rv
        await until(lambda: int(p.reflector.last_sync_resource_version()) >= target, 5)
        # The 3-6 s watch ends and is re-opened, no relist.
        await until(lambda: p.reflector.watch_count >= 2, 10)
        await assert_consistent(client, ns, p.indexer)
        assert p.reflector.list_count == 1 and p.errors == []
        assert sorted(p.indexer.list_keys()) == [f"{ns}/a", f"{ns}/b"]
        await client.delete("configmaps", "elsewhere", "default")
    finally:
        await p.close()


async def test_watch_list_mode(client: Client, ns: str) -> None:
    await create_cms(client, ns, [f"cm-{i}" for i in range(30)])
    p = Pipeline(ListWatch(client, "configmaps", namespace=ns), use_watch_list=True)
    p.start()
    try:
        await p.synced()
        await assert_consistent(client, ns, p.indexer)
        for i in range(20):
            await client.patch("configmaps", f"cm-{i}", {"data": {"v": "x"}}, namespace=ns)
        await client.delete("configmaps", "cm-29", ns)
        await client.create("configmaps", {"metadata": {"name": "new"}}, ns)
        await assert_consistent(client, ns, p.indexer)
        r = p.reflector
        assert r.is_watch_list_used
        assert (r.list_count, r.watch_count, p.errors) == (0, 1, [])
    finally:
        await p.close()


class RefusingListWatch(ListWatch):
    """As a server that refuses watch-list: the request is one the server rejects (422)."""

    def watch(self, **kw: Any) -> WatchStream:
        if kw.get("send_initial_events"):
            kw["resource_version_match"] = "Exact"
        return super().watch(**kw)


class IgnoringListWatch(ListWatch):
    """As a server that ignores watch-list: a plain watch, its state but no end bookmark.

    Bookmarks are off too: kube-apiserver v1.36 defaults a watch from resourceVersion ""
    or "0" to ``sendInitialEvents=true`` (SetListOptionsDefaults), so with bookmarks
    allowed it would end the state with the bookmark a server that ignores watch-list
    never sends.
    """

    def watch(self, **kw: Any) -> WatchStream:
        if kw.get("send_initial_events"):
            kw.update(send_initial_events=None, resource_version_match="", timeout_seconds=1,
                      allow_watch_bookmarks=False)
        return super().watch(**kw)


@pytest.mark.parametrize(("lw_class", "error"), [
    (RefusingListWatch, Invalid), (IgnoringListWatch, WatchListIncompleteError)],
    ids=["refused", "ignored"])
async def test_watch_list_falls_back_to_list_and_watch(
        client: Client, ns: str, lw_class: type[ListWatch], error: type[Exception]) -> None:
    await create_cms(client, ns, [f"cm-{i}" for i in range(5)])
    p = Pipeline(lw_class(client, "configmaps", namespace=ns), use_watch_list=True)
    p.start()
    try:
        await p.synced()
        await client.create("configmaps", {"metadata": {"name": "new"}}, ns)
        await assert_consistent(client, ns, p.indexer)
        r = p.reflector
        assert not r.is_watch_list_used and r.list_count == 1
        assert [type(e) for e in p.errors] == [error]
    finally:
        await p.close()


async def test_list_watch_selectors_options_and_item_kinds(client: Client, ns: str) -> None:
    await client.create("configmaps", {"metadata": {"name": "a", "labels": {"app": "x"}}}, ns)
    await client.create("configmaps", {"metadata": {"name": "b", "labels": {"app": "y"}}}, ns)
    await client.create("configmaps", {"metadata": {"name": "c", "labels": {"app": "x"}}}, ns)
    seen: list[dict[str, Any]] = []

    def tweak(opts: dict[str, Any]) -> None:
        seen.append(dict(opts))
        opts["fieldSelector"] = "metadata.name!=c"
    lw = ListWatch(client, "configmaps", namespace=ns, label_selector="app=x",
                   tweak_list_options=tweak)
    assert lw.resource.plural == "configmaps" and str(lw) == f"configmaps in {ns}"
    lst = await lw.list()
    assert [o["metadata"]["name"] for o in lst["items"]] == ["a"]
    assert all(o["kind"] == "ConfigMap" and o["apiVersion"] == "v1" for o in lst["items"])
    assert seen[0]["labelSelector"] == "app=x" and seen[0]["resourceVersion"] == ""
    async with lw.watch(resource_version=lst["metadata"]["resourceVersion"],
                        timeout_seconds=5) as w:
        await client.create("configmaps", {"metadata": {"name": "d", "labels": {"app": "x"}}},
                            ns)
        await client.create("configmaps", {"metadata": {"name": "c2"}}, ns)
        typ, obj = await anext(aiter(w))
    assert (typ, obj["metadata"]["name"]) == ("ADDED", "d")
    assert seen[1]["timeoutSeconds"] == 5 and seen[1]["allowWatchBookmarks"] is True
    crd_like = ListWatch(client, "widgets.example.com")
    with pytest.raises(RuntimeError, match="resolve"):
        _ = crd_like.resource
    assert (await ListWatch(client, "deployments.apps").resolve()).group == "apps"
