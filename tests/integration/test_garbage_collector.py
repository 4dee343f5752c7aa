"""The garbage collector against either API server.

Each test runs its own GarbageCollector (a private informer factory, a fresh
namespace) and checks the cascades the API server starts and the collector
completes: background, foreground, orphan, dangling and wrong-UID owners,
several owners, custom resources of a CRD created while the collector runs,
and a dependent naming an owner of another namespace.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from pykcm.client import Client, NotFound, load_kube_config
from pykcm.controllers.garbagecollector import GarbageCollector
from pykcm.informers import SharedInformerFactory
from pykcm.informers.generic import GroupVersionResource
from pykcm.informers.metadata_factory import MetadataSharedInformerFactory
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory
from tests.conftest import Backend, create_namespace

TIMEOUT = 30.0


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "gc")


@pytest.fixture
async def gc(client: Client) -> AsyncIterator[GarbageCollector]:
    # As in the manager: the full informers some controller built (here: pods, ReplicaSets)
    # are shared, every other resource is monitored through a metadata-only informer.
    factory = SharedInformerFactory(client, name="")
    factory.core_v1.pods, factory.apps_v1.replicasets  # noqa: B018 - created, not read
    metadata = MetadataSharedInformerFactory(client, name="")
    collector = GarbageCollector(
        client=client, informer_factory=ObjectOrMetadataInformerFactory(factory, metadata),
        resync_discovery_period=0.5)
    task = asyncio.create_task(collector.run(workers=4))
    await eventually(collector.is_synced)
    yield collector
    collector.shutdown()
    await task
    await factory.shutdown()
    await metadata.shutdown()


async def eventually(cond: Callable[[], bool | Awaitable[bool]],
                     timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        res = cond()
        if not isinstance(res, bool):
            res = await res
        if res:
            return
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def ref(owner: dict[str, Any], *, block: bool | None = None,
        controller: bool | None = None) -> dict[str, Any]:
    meta = owner["metadata"]
    out: dict[str, Any] = {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                           "name": meta["name"], "uid": meta["uid"]}
    if block is not None:
        out["blockOwnerDeletion"] = block
    if controller is not None:
        out["controller"] = controller
    return out


async def configmap(client: Client, ns: str, name: str, *owners: dict[str, Any],
                    finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = finalizers
    return await client.create("configmaps", {"metadata": meta, "data": {"k": name}}, ns)


async def gone(client: Client, resource: str, name: str, ns: str | None) -> bool:
    try:
        await client.get(resource, name, ns)
    except NotFound:
        return True
    return False


async def test_background_cascade_through_a_chain(client: Client, ns: str,
                                                  gc: GarbageCollector) -> None:
    owner = await configmap(client, ns, "owner")
    child = await configmap(client, ns, "child", ref(owner, controller=True))
    other = await configmap(client, ns, "other-child", ref(owner))
    await configmap(client, ns, "grandchild", ref(child))
    bystander = await configmap(client, ns, "bystander")
    await eventually(lambda: gc.graph_has_uid(other["metadata"]["uid"]))

    await client.delete("configmaps", "owner", ns)

    for name in ("child", "other-child", "grandchild"):
        await eventually(lambda n=name: gone(client, "configmaps", n, ns))  # type: ignore[misc]
    assert (await client.get("configmaps", "bystander", ns))["metadata"]["uid"] == \
        bystander["metadata"]["uid"]


async def test_foreground_waits_for_blocking_dependents(client: Client, ns: str,
                                                        gc: GarbageCollector) -> None:
    owner = await configmap(client, ns, "owner")
    await configmap(client, ns, "plain", ref(owner, block=True))
    held = await configmap(client, ns, "held", ref(owner, block=True),
                           finalizers=["example.com/hold"])
    await eventually(lambda: gc.graph_has_uid(held["metadata"]["uid"]))

    await client.delete("configmaps", "owner", ns, propagation_policy="Foreground")

    await eventually(lambda: gone(client, "configmaps", "plain", ns))

    async def held_is_deleting() -> bool:
        obj = await client.get("configmaps", "held", ns)
        return obj["metadata"].get("deletionTimestamp") is not None

    await eventually(held_is_deleting)
    # "held" still exists (its finalizer), so the owner waits with its finalizer.
    current = await client.get("configmaps", "owner", ns)
    assert current["metadata"]["deletionTimestamp"]
    assert "foregroundDeletion" in current["metadata"]["finalizers"]

    await client.patch("configmaps", "held", {"metadata": {"finalizers": None}}, "merge", ns)
    await eventually(lambda: gone(client, "configmaps", "held", ns))
    await eventually(lambda: gone(client, "configmaps", "owner", ns))


async def test_orphan_keeps_dependents_without_the_reference(client: Client, ns: str,
                                                             gc: GarbageCollector) -> None:
    owner = await configmap(client, ns, "owner")
    keeper = await configmap(client, ns, "keeper")
    a = await configmap(client, ns, "a", ref(owner, controller=True, block=True))
    b = await configmap(client, ns, "b", ref(owner), ref(keeper))
    await eventually(lambda: gc.graph_has_uid(a["metadata"]["uid"])
                     and gc.graph_has_uid(b["metadata"]["uid"]))

    await client.delete("configmaps", "owner", ns, propagation_policy="Orphan")

    await eventually(lambda: gone(client, "configmaps", "owner", ns))
    got_a = await client.get("configmaps", "a", ns)
    got_b = await client.get("configmaps", "b", ns)
    assert got_a["metadata"]["uid"] == a["metadata"]["uid"]
    assert not got_a["metadata"].get("ownerReferences")
    assert [r["uid"] for r in got_b["metadata"]["ownerReferences"]] == \
        [keeper["metadata"]["uid"]]


async def test_dependent_of_an_owner_that_never_existed_is_deleted(
        client: Client, ns: str, gc: GarbageCollector) -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
             "uid": str(uuid.uuid4())}
    await configmap(client, ns, "orphaned", ghost)
    await eventually(lambda: gone(client, "configmaps", "orphaned", ns))


async def test_owner_with_another_uid_counts_as_absent(client: Client, ns: str,
                                                       gc: GarbageCollector) -> None:
    await configmap(client, ns, "owner")
    stale = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
             "uid": str(uuid.uuid4())}
    await configmap(client, ns, "dependent", stale)
    await eventually(lambda: gone(client, "configmaps", "dependent", ns))
    assert (await client.get("configmaps", "owner", ns))["metadata"]["name"] == "owner"


async def test_dangling_reference_removed_when_another_owner_remains(
        client: Client, ns: str, gc: GarbageCollector) -> None:
    first = await configmap(client, ns, "first")
    second = await configmap(client, ns, "second")
    dep = await configmap(client, ns, "dep", ref(first), ref(second))
    await eventually(lambda: gc.graph_has_uid(dep["metadata"]["uid"]))

    await client.delete("configmaps", "first", ns)

    async def only_second() -> bool:
        obj = await client.get("configmaps", "dep", ns)
        refs = obj["metadata"].get("ownerReferences") or []
        return [r["uid"] for r in refs] == [second["metadata"]["uid"]]

    await eventually(only_second)
    await client.delete("configmaps", "second", ns)
    await eventually(lambda: gone(client, "configmaps", "dep", ns))


def widget_crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


async def test_custom_resources_of_a_crd_created_after_start(
        client: Client, ns: str, gc: GarbageCollector) -> None:
    group = uuid.uuid4().hex[:8] + ".gc.example.com"
    await client.create("customresourcedefinitions", widget_crd(group))
    client.invalidate_discovery()
    widgets = f"{group}/v1/widgets"

    async def served() -> bool:
        try:
            await client.list(widgets, ns)
        except Exception:  # noqa: BLE001 - not served yet
            client.invalidate_discovery()
            return False
        return True

    await eventually(served)
    api_version = f"{group}/v1"
    owner = await client.create(widgets, {"apiVersion": api_version, "kind": "Widget",
                                          "metadata": {"name": "owner"}}, ns)
    first = await client.create(widgets, {"apiVersion": api_version, "kind": "Widget",
                                          "metadata": {"name": "w-dep",
                                                       "ownerReferences": [ref(owner)]}}, ns)
    keeper = await configmap(client, ns, "keeper")
    two = await client.create(widgets, {
        "apiVersion": api_version, "kind": "Widget",
        "metadata": {"name": "w-two", "ownerReferences": [ref(owner), ref(keeper)]}}, ns)
    cm = await configmap(client, ns, "cm-dep", ref(owner))
    await eventually(lambda: all(gc.graph_has_uid(o["metadata"]["uid"])
                                 for o in (owner, first, two, cm)))

    await client.delete(widgets, "owner", ns)

    await eventually(lambda: gone(client, widgets, "w-dep", ns))
    await eventually(lambda: gone(client, "configmaps", "cm-dep", ns))

    async def two_kept_by_keeper_only() -> bool:
        obj = await client.get(widgets, "w-two", ns)
        # Custom resources take no strategic merge patch: the JSON merge patch path.
        return [r["uid"] for r in obj["metadata"].get("ownerReferences") or []] == \
            [keeper["metadata"]["uid"]]

    await eventually(two_kept_by_keeper_only)
    gvr = GroupVersionResource(group, "v1", "widgets")
    assert gvr in gc.graph_builder.monitors

    # The CRD goes: discovery stops listing it and its monitor is dropped.
    await client.delete("customresourcedefinitions", f"widgets.{group}")
    await eventually(lambda: gvr not in gc.graph_builder.monitors)


async def test_owner_in_another_namespace_is_reported_and_ignored(
        client: Client, apiserver: Backend, ns: str, gc: GarbageCollector) -> None:
    other_ns = await create_namespace(client, apiserver, "gc")
    owner = await configmap(client, other_ns, "owner")
    await eventually(lambda: gc.graph_has_uid(owner["metadata"]["uid"]))
    dep = await configmap(client, ns, "dep", ref(owner))

    await eventually(lambda: gone(client, "configmaps", "dep", ns))

    async def warned() -> bool:
        events = await client.list("events", ns)
        return any(e.get("reason") == "OwnerRefInvalidNamespace"
                   and e["involvedObject"].get("uid") == dep["metadata"]["uid"]
                   for e in events["items"])

    await eventually(warned)
    assert (await client.get("configmaps", "owner", other_ns))["metadata"]["uid"] == \
        owner["metadata"]["uid"]


async def test_health_and_shutdown(client: Client) -> None:
    factory = SharedInformerFactory(client, name="")
    collector = GarbageCollector(client=client, informer_factory=factory)
    assert collector.name == "garbage-collector"
    task = asyncio.create_task(collector.run(workers=2))
    await eventually(collector.is_synced)
    assert collector.health_check() is None
    assert collector.running
    collector.shutdown()
    await task
    assert not collector.running
    await factory.shutdown()
