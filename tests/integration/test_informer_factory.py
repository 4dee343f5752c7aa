"""SharedInformerFactory against either API server (fresh namespace per test).

A namespaced factory with two informers (and a cluster-scoped one), a CRD
through discovery, and the runnable example (examples/pod_events.py) run as
a subprocess. Consistency is checked object by object against a fresh LIST.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pykcm.api.resources import ResourceInfo
from pykcm.client import Client, NoResourceMatchError, NotFound, load_kube_config
from pykcm.informers import GenericInformer, SharedInformerFactory, strip_managed_fields
from tests.conftest import Backend, create_namespace, own, wait_served

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "pod_events.py")


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "tf")


@pytest.fixture
async def factories(client: Client) -> AsyncIterator[Callable[..., SharedInformerFactory]]:
    made: list[SharedInformerFactory] = []

    def make(**kwargs: Any) -> SharedInformerFactory:
        f = SharedInformerFactory(client, **kwargs)
        made.append(f)
        return f

    yield make
    for f in made:
        await f.shutdown()


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


async def eventually(cond: Callable[[], bool], timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def assert_consistent(client: Client, gi: GenericInformer, resource: str,
                            namespace: str | None) -> None:
    """The informer's cache equals a fresh LIST, object by object (managedFields aside)."""
    fresh = await client.list(resource, namespace)
    want = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]):
            o["metadata"]["resourceVersion"] for o in fresh["items"]}

    def cached() -> dict[tuple[str, str], str]:
        lister = gi.lister.by_namespace(namespace) if namespace else gi.lister
        return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]):
                o["metadata"]["resourceVersion"] for o in lister.list()}

    await eventually(lambda: cached() == want)
    for listed in fresh["items"]:
        meta = listed["metadata"]
        got = (gi.lister.by_namespace(meta["namespace"]).get(meta["name"])
               if meta.get("namespace") else gi.lister.get(meta["name"]))
        # as listed; the informer's list gives items their kind and apiVersion, as
        # client-go's unstructured decoder does (a watch event's object has them already)
        expected = {"apiVersion": fresh["apiVersion"], "kind": fresh["kind"][:-len("List")],
                    **listed}
        expected["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        got_meta = {k: v for k, v in got["metadata"].items() if k != "managedFields"}
        assert {**got, "metadata": got_meta} == expected


async def test_a_factory_with_two_informers_syncs_and_follows(
        client: Client, apiserver: Backend, ns: str,
        factories: Callable[..., SharedInformerFactory]) -> None:
    other = await create_namespace(client, apiserver, "tf")
    for i in range(5):
        await client.create("pods", pod(f"p{i}", app="web" if i % 2 else "db"), ns)
        await client.create("configmaps", {"metadata": {"name": f"c{i}"},
                                           "data": {"i": str(i)}}, ns)
    await client.create("pods", pod("elsewhere"), other)
    await client.create("configmaps", {"metadata": {"name": "elsewhere"}}, other)

    f = factories(namespace=ns, transform=strip_managed_fields, name=f"it-{ns}")
    pods, cms, namespaces = f.core_v1.pods, f.core_v1.configmaps, f.core_v1.namespaces
    seen: list[tuple[str, str]] = []
    reg = pods.informer.add_event_handler(_Recorder(seen))
    f.start()
    synced = await f.wait_for_cache_sync(timeout=15)
    assert synced == {pods.info: True, cms.info: True, namespaces.info: True}
    assert [i.kind for i in synced] == ["Pod", "ConfigMap", "Namespace"]
    await eventually(reg.has_synced)
    assert sorted(seen) == [("add", f"p{i}") for i in range(5)]

    # The namespace restricts namespaced resources only.
    assert sorted(o["metadata"]["name"] for o in pods.lister.list()) == \
        [f"p{i}" for i in range(5)]
    assert sorted(o["metadata"]["name"] for o in own(cms.lister.by_namespace(ns).list())) == \
        [f"c{i}" for i in range(5)]
    assert cms.lister.by_namespace(other).list() == []
    assert namespaces.lister.get(other)["metadata"]["name"] == other
    assert sorted(o["metadata"]["name"] for o in pods.lister.list("app=web")) == ["p1", "p3"]
    with pytest.raises(NotFound):
        pods.lister.by_namespace(ns).get("nope")

    # Live changes reach both caches.
    await client.delete("pods", "p0", ns)
    await client.patch("configmaps", "c1", {"data": {"i": "changed"}}, namespace=ns)
    await client.create("pods", pod("p5"), ns)
    await client.delete("configmaps", "c2", ns)
    await eventually(lambda: ("add", "p5") in seen and ("delete", "p0") in seen)
    await assert_consistent(client, pods, "pods", ns)
    await assert_consistent(client, cms, "configmaps", ns)
    assert cms.lister.by_namespace(ns).get("c1")["data"] == {"i": "changed"}
    for o in pods.lister.list() + cms.lister.list():
        assert "managedFields" not in o["metadata"]

    # A second start() after asking for one more informer starts just that one.
    secrets = f.core_v1.secrets
    await client.create("secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}}, ns)
    f.start()
    synced = await f.wait_for_cache_sync(timeout=15)
    assert all(synced.values()) and len(synced) == 4
    assert secrets.lister.by_namespace(ns).get("s")["data"] == {"k": "dg=="}

    await f.shutdown()
    assert all(gi.informer.is_stopped() for gi in f.informers().values())


class _Recorder:
    def __init__(self, seen: list[tuple[str, str]]) -> None:
        self.seen = seen

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.seen.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: Any, new: Any) -> None:
        self.seen.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: Any) -> None:
        obj = getattr(obj, "obj", obj)  # a DeletedFinalStateUnknown's last state
        self.seen.append(("delete", obj["metadata"]["name"]))


def widget_crd(group: str, plural: str = "widgets", kind: str = "Widget") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
        },
    }


async def test_custom_resources_through_discovery(
        client: Client, ns: str, factories: Callable[..., SharedInformerFactory]) -> None:
    group = f"{ns}.example.com"
    await client.create("customresourcedefinitions", widget_crd(group))
    await wait_served(client, f"{group}/v1/widgets", ns)
    for i in range(3):
        await client.create(f"{group}/v1/widgets", {
            "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": f"w{i}"},
            "spec": {"size": i}}, ns)

    f = factories(name=f"it-crd-{ns}")
    # Resolved lazily: the ListWatch asks discovery when it first lists.
    lazy = f.for_resource(group, "v1", "widgets")
    assert lazy.info is None
    crds = f.apiextensions_v1.customresourcedefinitions
    f.start()
    synced = await f.wait_for_cache_sync(timeout=15)
    assert all(synced.values())
    assert lazy.info is not None and lazy.info.kind == "Widget"
    assert lazy.info in synced
    assert crds.lister.get(f"widgets.{group}")["spec"]["group"] == group
    assert sorted(o["metadata"]["name"] for o in lazy.lister.by_namespace(ns).list()) == \
        ["w0", "w1", "w2"]
    assert await f.for_resource_async(group, "v1", "widgets") is lazy
    await client.delete(f"{group}/v1/widgets", "w1", ns)
    await assert_consistent(client, lazy, f"{group}/v1/widgets", ns)

    # Resolved up front: an unknown resource fails at once.
    with pytest.raises(NoResourceMatchError):
        await f.for_resource_async(group, "v1", "gadgets")
    assert f.is_started(lazy.gvr) and len(f.informers()) == 2

    # An informer of a CRD not installed yet: its Reflector fails and retries
    # (discovery is asked again on a miss) until the CRD exists.
    gadgets = f.for_resource(group, "v1", "gadgets")
    f.start()
    assert (await f.wait_for_cache_sync(timeout=1.0))[_provisional(group, "gadgets")] is False
    await client.create("customresourcedefinitions", widget_crd(group, "gadgets", "Gadget"))
    await wait_served(client, f"{group}/v1/gadgets", ns)
    await client.create(f"{group}/v1/gadgets", {
        "apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}}, ns)
    synced = await f.wait_for_cache_sync(timeout=20)
    assert all(synced.values()) and gadgets.info is not None and gadgets.info in synced
    await eventually(lambda: len(gadgets.lister.list()) == 1)
    assert gadgets.lister.by_namespace(ns).get("g")["kind"] == "Gadget"


def _provisional(group: str, plural: str) -> ResourceInfo:
    return ResourceInfo(group=group, version="v1", kind="", plural=plural, singular="",
                        namespaced=True, verbs=())


# --- the runnable example ------------------------------------------------------------------


async def test_the_pod_events_example(client: Client, ns: str,
                                      apiserver: Backend) -> None:
    for name in ("a", "b"):
        await client.create("pods", pod(name), ns)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, EXAMPLE, "--kubeconfig", apiserver.kubeconfig_path,
        "--namespace", ns, "--duration", "3",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": REPO})
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(30):
            # Up to the per-namespace counts after sync.
            while not lines or not lines[-1].startswith(f"  {ns}:"):
                line = await proc.stdout.readline()
                assert line, f"the example ended early: {lines} " \
                             f"{(await proc.stderr.read()).decode()}"
                lines.append(line.decode().rstrip("\n"))
            # Events while it runs: one of each kind.
            await client.create("pods", pod("c"), ns)
            await client.patch("pods", "a", {"metadata": {"labels": {"x": "y"}}},
                               namespace=ns)
            await client.delete("pods", "b", ns)
            rest, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    lines += rest.decode().splitlines()
    assert sorted(lines[:2]) == [f"ADD     {ns}/a Pending", f"ADD     {ns}/b Pending"]
    assert lines[2:4] == [f"SYNCED  2 pods in namespace {ns}", f"  {ns}: 2"]
    # kube-apiserver deletes a pod in two writes, even at once (an unscheduled one): its
    # deletionTimestamp is set, then it is removed; so an UPDATE may come before the DELETE
    live = lines[4:]
    if f"UPDATE  {ns}/b Pending" in live:
        live.remove(f"UPDATE  {ns}/b Pending")
    assert live == [f"ADD     {ns}/c Pending", f"UPDATE  {ns}/a Pending",
                    f"DELETE  {ns}/b Pending", "STOPPED"]
