"""The namespace controller against either API server.

Deleting a namespace empties it (config maps, secrets, a custom resource of a
CRD made for the test), reports what still holds it in its conditions while an
object's finalizer is pending, and lets the API server remove it once that
finalizer goes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from pykcm.client import Client, NotFound, load_kube_config
from pykcm.controllers.namespace import NamespaceController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace

TIMEOUT = 60.0


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def controller(client: Client) -> AsyncIterator[NamespaceController]:
    factory = SharedInformerFactory(client, name="")
    ctl = NamespaceController(client=client, namespace_informer=factory.core_v1.namespaces,
                              deletion_grace_period=0.1)
    factory.start()
    task = asyncio.create_task(ctl.run(workers=2))
    yield ctl
    ctl.shutdown()
    await task
    await factory.shutdown()


async def eventually(cond: Callable[[], Awaitable[bool]], timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.1)


async def gone(client: Client, resource: str, name: str, ns: str | None = None) -> bool:
    try:
        await client.get(resource, name, ns)
    except NotFound:
        return True
    return False


def gadget_crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def conditions(ns_obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (ns_obj.get("status") or {}).get("conditions") or []}


async def test_namespace_emptied_then_removed_after_finalizer(
        client: Client, apiserver: Backend, controller: NamespaceController) -> None:
    ns = await create_namespace(client, apiserver, "nsc")
    group = uuid.uuid4().hex[:8] + ".nsc.example.com"
    await client.create("customresourcedefinitions", gadget_crd(group))
    gadgets = f"{group}/v1/gadgets"

    async def served() -> bool:
        try:
            await client.list(gadgets, ns)
        except Exception:  # noqa: BLE001 - not served yet
            client.invalidate_discovery()
            return False
        return True

    await eventually(served)
    for i in range(3):
        await client.create("configmaps", {"metadata": {"name": f"cm-{i}"}}, ns)
    await client.create("secrets", {"metadata": {"name": "s"}, "stringData": {"a": "b"}}, ns)
    await client.create(gadgets, {"apiVersion": f"{group}/v1", "kind": "Gadget",
                                  "metadata": {"name": "g"}}, ns)
    await client.create("configmaps", {"metadata": {"name": "held",
                                                    "finalizers": ["example.com/hold"]}}, ns)

    await client.delete("namespaces", ns)

    async def reports_finalizer() -> bool:
        c = conditions(await client.get("namespaces", ns))
        return c.get("NamespaceFinalizersRemaining", {}).get("status") == "True"

    await eventually(reports_finalizer)
    obj = await client.get("namespaces", ns)
    c = conditions(obj)
    assert c["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizersRemain"
    assert c["NamespaceFinalizersRemaining"]["message"] == \
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 " \
        "resource instances"
    assert c["NamespaceContentRemaining"]["status"] == "True"
    assert c["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    assert c["NamespaceContentRemaining"]["message"] == \
        "Some resources are remaining: configmaps. has 1 resource instances"
    assert c["NamespaceDeletionDiscoveryFailure"]["status"] == "False"
    assert c["NamespaceDeletionDiscoveryFailure"]["reason"] == "ResourcesDiscovered"
    assert c["NamespaceDeletionContentFailure"]["status"] == "False"
    assert c["NamespaceDeletionGroupVersionParsingFailure"]["status"] == "False"
    assert obj["status"]["phase"] == "Terminating"
    assert obj["spec"]["finalizers"] == ["kubernetes"]
    assert (await client.list("configmaps", ns))["items"][0]["metadata"]["name"] == "held"
    assert (await client.list("secrets", ns))["items"] == []
    assert (await client.list(gadgets, ns))["items"] == []

    await client.patch("configmaps", "held", {"metadata": {"finalizers": None}}, "merge", ns)
    await eventually(lambda: gone(client, "namespaces", ns))


async def test_empty_namespace_is_finalized(client: Client, apiserver: Backend,
                                            controller: NamespaceController) -> None:
    ns = await create_namespace(client, apiserver, "nsc")
    await client.delete("namespaces", ns)
    await eventually(lambda: gone(client, "namespaces", ns))
    assert controller.health_check() is None
    assert controller.running


async def test_namespace_with_other_finalizer_keeps_it(client: Client,
                                                       controller: NamespaceController) -> None:
    ns = "nsc-" + uuid.uuid4().hex[:10]
    await client.create("namespaces", {"metadata": {"name": ns},
                                       "spec": {"finalizers": ["example.com/last"]}})
    await client.create("configmaps", {"metadata": {"name": "cm"}}, ns)
    await client.delete("namespaces", ns)

    async def only_other_finalizer_left() -> bool:
        obj = await client.get("namespaces", ns)
        return bool(obj["spec"].get("finalizers") == ["example.com/last"])

    await eventually(only_other_finalizer_left)
    assert (await client.list("configmaps", ns))["items"] == []
    obj = await client.get("namespaces", ns)
    assert conditions(obj)["NamespaceContentRemaining"]["reason"] == "ContentRemoved"
    obj["spec"]["finalizers"] = []
    await client.finalize_namespace(obj)
    await eventually(lambda: gone(client, "namespaces", ns))
