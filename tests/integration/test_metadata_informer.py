"""Metadata-only informers (MetadataSharedInformerFactory) against both API servers: the
cache holds PartialObjectMetadata without managedFields, follows adds, updates and
deletes, and its lister answers by namespace, name and label selector."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from pykcm.client import Client, is_not_found, load_kube_config
from pykcm.informers import SharedInformerFactory
from pykcm.informers.metadata_factory import MetadataSharedInformerFactory
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory
from tests.conftest import NAMESPACE_CONFIGMAPS, Backend, create_namespace


async def until(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline, "condition not met"
        await asyncio.sleep(0.05)


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.mark.parametrize("compact", [False, True], ids=["dicts", "compact"])
async def test_metadata_informer_caches_partial_object_metadata(client: Client,
                                                                apiserver: Backend,
                                                                compact: bool) -> None:
    # compact: FrozenObjects, the watch's chunks decoded a chunk at a time.
    ns = await create_namespace(client, apiserver, "meta")
    await client.create("configmaps", {"metadata": {"name": "a", "labels": {"app": "x"}},
                                       "data": {"big": "x" * 1000}}, ns)
    factory = MetadataSharedInformerFactory(client, namespace=ns, compact_objects=compact)
    gi = factory.for_resource("", "v1", "configmaps")
    assert factory.for_resource("", "v1", "configmaps") is gi  # one per resource
    async with factory:
        factory.start()
        assert all((await factory.wait_for_cache_sync(30)).values())
        a = gi.lister.by_namespace(ns).get("a")
        assert (a["kind"], a["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
        assert set(a) == {"kind", "apiVersion", "metadata"}
        assert "managedFields" not in a["metadata"] and a["metadata"]["labels"] == {"app": "x"}

        await client.create("configmaps", {"metadata": {"name": "b"}}, ns)
        await client.patch("configmaps", "a", {"metadata": {"labels": {"app": "y"}}},
                           namespace=ns)
        await until(lambda: len(gi.lister.by_namespace(ns).list({"app": "y"})) == 1)
        def names() -> set[str]:
            # (the real cluster's root-ca-cert-publisher adds kube-root-ca.crt)
            return {o["metadata"]["name"] for o in gi.lister.by_namespace(ns).list()
                    } - set(NAMESPACE_CONFIGMAPS)
        await until(lambda: names() == {"a", "b"})

        await client.delete("configmaps", "b", ns)

        def gone() -> bool:
            try:
                gi.lister.by_namespace(ns).get("b")
            except Exception as exc:  # noqa: BLE001 - NotFound expected
                return is_not_found(exc)
            return False
        await until(gone)


async def test_object_or_metadata_shares_full_informers(client: Client) -> None:
    objects = SharedInformerFactory(client)
    metadata = MetadataSharedInformerFactory(client)
    both = ObjectOrMetadataInformerFactory(objects, metadata)
    pods = objects.core_v1.pods
    assert both.for_resource("", "v1", "pods") is pods
    assert not both.is_metadata_only(pods)
    secrets = both.for_resource("", "v1", "secrets")
    assert both.is_metadata_only(secrets)
    assert secrets is metadata.for_resource("", "v1", "secrets")
    assert "secrets" not in {g.resource for g in objects.informers()}
    await objects.shutdown()
    await metadata.shutdown()
