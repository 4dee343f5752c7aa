"""SharedIndexInformer + lister against either API server (fresh namespace per test).

Consistency is checked object by object against a fresh LIST: the cache,
and a handler's own view rebuilt from its notifications, must both equal it.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pykcm.cache import (
    DeletedFinalStateUnknown,
    ListWatch,
    SharedIndexInformer,
    wait_for_cache_sync,
    wait_for_named_cache_sync,
)
from pykcm.cache.listers import Lister
from pykcm.client import Client, NotFound, load_kube_config
from tests.conftest import Backend, create_namespace


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "ti")


@pytest.fixture
async def run_informer() -> AsyncIterator[Callable[[SharedIndexInformer], None]]:
    tasks: list[asyncio.Task[None]] = []

    def start(informer: SharedIndexInformer) -> None:
        tasks.append(asyncio.create_task(informer.run()))

    yield start
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class View:
    """A handler that rebuilds the cache from its notifications (name -> resourceVersion)."""

    def __init__(self) -> None:
        self.objects: dict[str, str] = {}
        self.initial: list[str] = []
        self.errors: list[str] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        name = obj["metadata"]["name"]
        if name in self.objects:
            self.errors.append(f"add of known {name}")
        self.objects[name] = obj["metadata"]["resourceVersion"]
        if is_in_initial_list:
            self.initial.append(name)

    def on_update(self, old: Any, new: Any) -> None:
        name = new["metadata"]["name"]
        if self.objects.get(name) != old["metadata"]["resourceVersion"]:
            self.errors.append(f"update of {name} from an unknown state")
        self.objects[name] = new["metadata"]["resourceVersion"]

    async def on_delete(self, obj: Any) -> None:  # a coroutine handler, for variety
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        name = obj["metadata"]["name"]
        if self.objects.pop(name, None) is None:
            self.errors.append(f"delete of unknown {name}")


async def eventually(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def test_informer_and_lister_stay_consistent_through_mixed_writes(
        client: Client, ns: str, run_informer: Callable[[SharedIndexInformer], None]) -> None:
    rng = random.Random(4)
    # The cluster's own (NAMESPACE_CONFIGMAPS on the real kube-apiserver): listed, not touched.
    theirs = {i["metadata"]["name"] for i in (await client.list("configmaps", ns))["items"]}
    # Some objects exist before the informer starts: they come in the initial list.
    alive: set[str] = set()
    for i in range(50):
        await client.create("configmaps", {"metadata": {"name": f"pre-{i}",
                                                        "labels": {"parity": str(i % 2)}}}, ns)
        alive.add(f"pre-{i}")

    informer = SharedIndexInformer(ListWatch(client, "configmaps", namespace=ns),
                                   name=f"it-{ns}")
    informer.set_transform(_strip_managed_fields)
    view = View()
    reg = informer.add_event_handler(view)
    lister = Lister(informer.get_indexer(), "configmaps")
    run_informer(informer)
    assert await wait_for_cache_sync(informer.has_synced, reg.has_synced, timeout=10)
    assert sorted(view.initial) == sorted(alive | theirs)

    counter = 0

    async def one(op: str, name: str) -> None:
        if op == "create":
            await client.create("configmaps", {"metadata": {
                "name": name, "labels": {"parity": str(rng.randrange(2))}}}, ns)
        elif op == "update":
            await client.patch("configmaps", name, {"data": {"v": uuid.uuid4().hex}},
                               namespace=ns)
        else:
            await client.delete("configmaps", name, ns)

    ops = 0
    while ops < 1000:
        batch: list[tuple[str, str]] = []
        used: set[str] = set()
        for _ in range(25):
            r = rng.random()
            candidates = sorted(alive - used)
            if r < 0.4 or not candidates:
                counter += 1
                name = f"cm-{counter}"
                batch.append(("create", name))
                alive.add(name)
            elif r < 0.75:
                name = rng.choice(candidates)
                batch.append(("update", name))
            else:
                name = rng.choice(candidates)
                batch.append(("delete", name))
                alive.discard(name)
            used.add(name)
        await asyncio.gather(*(one(op, name) for op, name in batch))
        ops += len(batch)

    fresh = await client.list("configmaps", ns)
    expected = {o["metadata"]["name"]: o for o in fresh["items"]}
    assert set(expected) == alive | theirs
    # Every listed write has reached the cache once the cache holds its revision.
    want_rvs = {n: o["metadata"]["resourceVersion"] for n, o in expected.items()}

    def cache_rvs() -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in lister.by_namespace(ns).list()}

    await eventually(lambda: cache_rvs() == want_rvs and view.objects == want_rvs)
    assert view.errors == []
    # Object by object: same content as the fresh LIST (managedFields stripped).
    for name, listed in expected.items():
        cached = lister.by_namespace(ns).get(name)
        assert cached["metadata"]["uid"] == listed["metadata"]["uid"]
        assert cached.get("data") == listed.get("data")
        assert cached["metadata"].get("labels") == listed["metadata"].get("labels")
        assert "managedFields" not in cached["metadata"]
    # Selectors through the namespace index agree with the server's.
    server_odd = await client.list("configmaps", ns, label_selector="parity=1")
    assert sorted(o["metadata"]["name"] for o in lister.by_namespace(ns).list("parity=1")) \
        == sorted(o["metadata"]["name"] for o in server_odd["items"])
    gone = next(f"cm-{i}" for i in range(1, counter + 1) if f"cm-{i}" not in alive)
    with pytest.raises(NotFound):
        lister.by_namespace(ns).get(gone)
    assert informer.last_sync_resource_version() != ""


def _strip_managed_fields(obj: Any) -> Any:
    if isinstance(obj, dict):
        obj.get("metadata", {}).pop("managedFields", None)
    return obj


async def test_handler_added_after_sync_gets_the_replay(
        client: Client, ns: str, run_informer: Callable[[SharedIndexInformer], None]) -> None:
    theirs = {i["metadata"]["name"] for i in (await client.list("configmaps", ns))["items"]}
    for i in range(20):
        await client.create("configmaps", {"metadata": {"name": f"c{i}"}}, ns)
    informer = SharedIndexInformer(ListWatch(client, "configmaps", namespace=ns))
    first = View()
    informer.add_event_handler(first)
    run_informer(informer)
    assert await wait_for_named_cache_sync("test", informer.has_synced, timeout=10)
    await client.delete("configmaps", "c0", ns)
    await client.create("configmaps", {"metadata": {"name": "extra"}}, ns)
    await eventually(lambda: "extra" in first.objects and "c0" not in first.objects)

    late = View()
    reg = informer.add_event_handler(late)
    assert await wait_for_cache_sync(reg.has_synced, timeout=10)
    assert sorted(late.initial) == sorted({f"c{i}" for i in range(1, 20)} | {"extra"} | theirs)
    # ... and then live events like everyone else.
    patched = await client.patch("configmaps", "extra", {"data": {"k": "v"}}, namespace=ns)
    rv = patched["metadata"]["resourceVersion"]
    await eventually(lambda: late.objects.get("extra") == rv == first.objects.get("extra"))
    assert late.objects == first.objects
    assert late.errors == [] and first.errors == []


async def test_wait_for_cache_sync_and_labels_selected_informer(
        client: Client, ns: str, run_informer: Callable[[SharedIndexInformer], None]) -> None:
    for i in range(30):
        await client.create("configmaps", {"metadata": {
            "name": f"s{i}", "labels": {"team": "a" if i < 10 else "b"}}}, ns)
    informer = SharedIndexInformer(
        ListWatch(client, "configmaps", namespace=ns, label_selector="team=a"))
    view = View()
    reg = informer.add_event_handler(view)
    assert not informer.has_synced() and not reg.has_synced()
    # Not started: the wait times out.
    assert await wait_for_cache_sync(informer.has_synced, timeout=0.2) is False
    run_informer(informer)
    assert await wait_for_cache_sync(informer.has_synced, reg.has_synced, timeout=10)
    assert len(informer.get_store().list_keys()) == 10
    assert len(view.initial) == 10
