"""The opt-in compact cache (FrozenObject) against either API server.

An informer whose objects are FrozenObjects (``SharedInformerFactory(
compact_objects=True)``, ``ListWatch(compact=True)``) must stay consistent
with a fresh LIST through creates, updates and deletes, object by object
(whole-object equality, managedFields stripped), and its lister must answer
label selectors as the server does.
"""

from __future__ import annotations

import asyncio
import copy
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
)
from pykcm.cache.frozen_object import FrozenObject
from pykcm.cache.listers import Lister
from pykcm.cache.mutation_detector import MUTATION_DETECTOR_ENV
from pykcm.client import Client, NotFound, load_kube_config
from pykcm.informers import SharedInformerFactory, strip_managed_fields
from tests.conftest import Backend, create_namespace, own


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "tc")


async def eventually(cond: Callable[[], bool], timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


class View:
    """A handler rebuilding name -> resourceVersion from its notifications."""

    def __init__(self) -> None:
        self.objects: dict[str, str] = {}
        self.errors: list[str] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not isinstance(obj, FrozenObject):
            self.errors.append(f"not compact: {type(obj).__name__}")
        self.objects[obj["metadata"]["name"]] = obj["metadata"]["resourceVersion"]

    def on_update(self, old: Any, new: Any) -> None:
        name = new["metadata"]["name"]
        if self.objects.get(name) != old["metadata"]["resourceVersion"]:
            self.errors.append(f"update of {name} from an unknown state")
        self.objects[name] = new["metadata"]["resourceVersion"]

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if self.objects.pop(obj["metadata"]["name"], None) is None:
            self.errors.append(f"delete of unknown {obj['metadata']['name']}")


async def _mixed_writes(client: Client, ns: str, alive: set[str], n: int, seed: int) -> None:
    rng = random.Random(seed)
    counter = 0
    done = 0
    while done < n:
        batch: list[tuple[str, str]] = []
        used: set[str] = set()
        for _ in range(20):
            candidates = sorted(alive - used)
            r = rng.random()
            if r < 0.4 or not candidates:
                counter += 1
                name = f"w{seed}-{counter}"
                batch.append(("create", name))
                alive.add(name)
            elif r < 0.8:
                name = rng.choice(candidates)
                batch.append(("update", name))
            else:
                name = rng.choice(candidates)
                batch.append(("delete", name))
                alive.discard(name)
            used.add(name)

        async def one(op: str, name: str) -> None:
            if op == "create":
                await client.create("configmaps", {"metadata": {
                    "name": name, "labels": {"parity": str(rng.randrange(2))},
                    "finalizers": []}, "data": {"v": "0"}}, ns)
            elif op == "update":
                await client.patch("configmaps", name, {
                    "metadata": {"labels": {"parity": str(rng.randrange(2))},
                                 "annotations": {"rev": uuid.uuid4().hex}},
                    "data": {"v": uuid.uuid4().hex}}, namespace=ns)
            else:
                await client.delete("configmaps", name, ns)

        await asyncio.gather(*(one(op, name) for op, name in batch))
        done += len(batch)


async def _check_against_fresh_list(client: Client, ns: str, lister: Any,
                                    view: View, alive: set[str]) -> None:
    fresh = await client.list("configmaps", ns)
    expected = {o["metadata"]["name"]: o for o in fresh["items"]}
    assert set(expected) == alive
    want_rvs = {n: o["metadata"]["resourceVersion"] for n, o in expected.items()}

    def cache_rvs() -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in lister.by_namespace(ns).list()}

    await eventually(lambda: cache_rvs() == want_rvs and view.objects == want_rvs)
    assert view.errors == []
    for name, listed in expected.items():
        cached = lister.by_namespace(ns).get(name)
        assert isinstance(cached, FrozenObject)
        # The whole object, as listed (the list items get kind/apiVersion here too).
        listed = {"apiVersion": "v1", "kind": "ConfigMap", **listed}
        assert cached == strip_managed_fields(listed)
        assert "managedFields" not in cached["metadata"]
        assert cached.thaw() == strip_managed_fields(listed)
    for selector in ("parity=1", "parity in (0)", "parity!=1"):
        server = await client.list("configmaps", ns, label_selector=selector)
        assert sorted(o["metadata"]["name"] for o in lister.by_namespace(ns).list(selector)) \
            == sorted(o["metadata"]["name"] for o in server["items"])
    with pytest.raises(NotFound):
        lister.by_namespace(ns).get("never-there")


async def test_factory_compact_objects_stay_consistent_with_a_fresh_list(
        client: Client, ns: str) -> None:
    # the cluster's own (NAMESPACE_CONFIGMAPS on the real kube-apiserver): cached, not touched
    theirs = {i["metadata"]["name"] for i in (await client.list("configmaps", ns))["items"]}
    alive: set[str] = set()
    for i in range(40):
        await client.create("configmaps", {"metadata": {
            "name": f"pre-{i}", "labels": {"parity": str(i % 2)}}, "data": {"i": str(i)}}, ns)
        alive.add(f"pre-{i}")
    factory = SharedInformerFactory(client, namespace=ns, transform=strip_managed_fields,
                                    compact_objects=True, tune_gc=False, name="")
    try:
        gi = factory.core_v1.configmaps
        view = View()
        reg = gi.informer.add_event_handler(view)
        factory.start()
        synced = await factory.wait_for_cache_sync(timeout=15)
        assert synced and all(synced.values())
        assert await wait_for_cache_sync(reg.has_synced, timeout=15)
        assert len(view.objects) == 40 + len(theirs)
        await _mixed_writes(client, ns, alive, 600, seed=1)
        await _check_against_fresh_list(client, ns, gi.lister, view, alive | theirs)
        # A controller's write path: thaw, change, update; the cache follows.
        cached = gi.lister.by_namespace(ns).get("pre-1") if "pre-1" in alive else \
            own(gi.lister.by_namespace(ns).list())[0]
        with pytest.raises(TypeError):
            cached["data"] = {}
        changed = copy.deepcopy(cached)
        changed["data"] = {"changed": "yes"}
        name = changed["metadata"]["name"]
        await client.update("configmaps", changed, ns)
        await eventually(lambda: gi.lister.by_namespace(ns).get(name).get("data")
                         == {"changed": "yes"})
    finally:
        await factory.shutdown()


async def test_compact_list_watch_informer_with_the_mutation_detector(
        client: Client, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MUTATION_DETECTOR_ENV, "true")
    theirs = {i["metadata"]["name"] for i in (await client.list("configmaps", ns))["items"]}
    alive: set[str] = set()
    informer = SharedIndexInformer(ListWatch(client, "configmaps", namespace=ns, compact=True),
                                   name=f"compact-{ns}")
    informer.set_transform(strip_managed_fields)  # rebuilds FrozenObjects without them
    view = View()
    informer.add_event_handler(view)
    lister = Lister(informer.get_indexer(), "configmaps")
    task = asyncio.create_task(informer.run())
    try:
        assert await wait_for_cache_sync(informer.has_synced, timeout=15)
        await _mixed_writes(client, ns, alive, 300, seed=2)
        await _check_against_fresh_list(client, ns, lister, view, alive | theirs)
        await asyncio.sleep(1.2)  # the detector's periodic check has run on them
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
