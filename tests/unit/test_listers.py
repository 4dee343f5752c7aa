"""pykcm.cache.listers (GenericLister, namespace lister, NotFound) and pykcm.cache.synced."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from pykcm.api.labels import parse_label_selector
from pykcm.api.resources import builtin_registry
from pykcm.cache import (
    GenericLister,
    Lister,
    deletion_handling_meta_namespace_key,
    list_all,
    list_all_by_namespace,
    new_indexer,
    wait_for_cache_sync,
    wait_for_named_cache_sync,
)
from pykcm.cache.store import Indexer
from pykcm.client import NotFound, is_not_found


def obj(name: str, ns: str | None = "default", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if ns is not None:
        meta["namespace"] = ns
    return {"metadata": meta}


def names(objs: list[Any]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


@pytest.fixture
def indexer() -> Indexer:
    idx = new_indexer(deletion_handling_meta_namespace_key)
    for o in (obj("web-1", app="web", tier="front"), obj("web-2", app="web"),
              obj("db-1", app="db"), obj("web-x", "other", app="web"),
              obj("plain", "other")):
        idx.add(o)
    return idx


def test_list_with_every_selector_form(indexer: Indexer) -> None:
    lister = Lister(indexer, "configmaps")
    assert len(lister.list()) == 5
    assert len(lister.list("")) == 5
    assert names(lister.list("app=web")) == ["web-1", "web-2", "web-x"]
    assert names(lister.list(parse_label_selector("app in (db),!tier"))) == ["db-1"]
    assert names(lister.list({"app": "web", "tier": "front"})) == ["web-1"]
    assert names(lister.list("!app")) == ["plain"]
    assert lister.list("app=none") == []


def test_by_namespace_uses_the_namespace_index(indexer: Indexer) -> None:
    lister = GenericLister(indexer, "configmaps")
    ns = lister.by_namespace("default")
    assert ns.namespace == "default"
    assert names(ns.list()) == ["db-1", "web-1", "web-2"]
    assert names(ns.list("app=web")) == ["web-1", "web-2"]
    assert names(lister.by_namespace("other").list()) == ["plain", "web-x"]
    assert lister.by_namespace("nobody").list() == []
    # "" is every namespace (metav1.NamespaceAll).
    assert len(lister.by_namespace("").list()) == 5
    assert ns.get("web-1")["metadata"]["labels"]["tier"] == "front"


def test_namespace_listing_without_the_index_scans(indexer: Indexer) -> None:
    plain = new_indexer(deletion_handling_meta_namespace_key, {})
    for o in indexer.list():
        plain.add(o)
    assert names(list_all_by_namespace(plain, "other")) == ["plain", "web-x"]
    assert names(list_all_by_namespace(plain, "other", "app")) == ["web-x"]
    assert names(list_all(plain, "app=db")) == ["db-1"]


def test_get_raises_not_found_with_the_apimachinery_status(indexer: Indexer) -> None:
    lister = Lister(indexer, "configmaps")
    with pytest.raises(NotFound) as err:
        lister.by_namespace("default").get("nope")
    assert is_not_found(err.value)
    assert err.value.code == 404
    assert err.value.message == 'configmaps "nope" not found'
    assert err.value.details == {"name": "nope", "group": "", "kind": "configmaps"}
    deployments = builtin_registry().get("apps", "v1", "deployments")
    assert deployments is not None
    with pytest.raises(NotFound, match='deployments.apps "x" not found') as err2:
        Lister(indexer, deployments).by_namespace("default").get("x")
    assert err2.value.details["group"] == "apps"
    with pytest.raises(NotFound, match='clusterroles.rbac.authorization.k8s.io "y"'):
        Lister(indexer, "clusterroles.rbac.authorization.k8s.io").get("y")


def test_cluster_scoped_get() -> None:
    idx = new_indexer(deletion_handling_meta_namespace_key)
    idx.add(obj("node-1", None, zone="a"))
    lister = Lister(idx, "nodes")
    assert lister.get("node-1")["metadata"]["name"] == "node-1"
    assert names(lister.list("zone=a")) == ["node-1"]
    assert names(lister.by_namespace("").list()) == ["node-1"]
    with pytest.raises(NotFound):
        lister.get("node-2")


def test_listed_objects_are_the_cached_references(indexer: Indexer) -> None:
    lister = Lister(indexer, "configmaps")
    assert lister.by_namespace("default").get("web-1") is indexer.get_by_key("default/web-1")


# --- wait_for_cache_sync -----------------------------------------------------------------


async def test_wait_for_cache_sync_true_once_all_synced() -> None:
    state = {"a": False, "b": False}

    async def flip() -> None:
        await asyncio.sleep(0.05)
        state["a"] = True
        await asyncio.sleep(0.1)
        state["b"] = True

    task = asyncio.create_task(flip())
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await wait_for_cache_sync(lambda: state["a"], lambda: state["b"], timeout=2)
    assert 0.1 < loop.time() - t0 < 1.0
    await task


async def test_wait_for_cache_sync_checks_immediately_and_times_out() -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await wait_for_cache_sync(lambda: True)
    assert await wait_for_cache_sync()
    assert loop.time() - t0 < 0.05
    t0 = loop.time()
    assert await wait_for_cache_sync(lambda: True, lambda: False, timeout=0.25) is False
    assert 0.2 < loop.time() - t0 < 0.6


async def test_wait_for_cache_sync_is_cancellable() -> None:
    task = asyncio.create_task(wait_for_cache_sync(lambda: False))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_wait_for_named_cache_sync_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pykcm.cache.synced"):
        assert await wait_for_named_cache_sync("deployment", lambda: True)
        assert not await wait_for_named_cache_sync("replicaset", lambda: False, timeout=0.1)
    text = caplog.text
    assert "Waiting for caches to sync for deployment" in text
    assert "Caches are synced for deployment" in text
    assert "Waiting for caches to sync for replicaset" in text
    assert "unable to sync caches for replicaset" in text
    assert "Caches are synced for replicaset" not in text
