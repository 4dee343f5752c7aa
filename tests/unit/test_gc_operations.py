"""The garbage collector's decisions and API calls against an in-memory fake client.

``attempt_to_delete_item`` / ``attempt_to_orphan_worker`` are driven on
nodes of a graph built by the GraphBuilder; the fake records every DELETE and
PATCH so the propagation policy, the preconditions and the patch bodies can
be checked. Also: the patch builders, the REST mapper and deletable resources.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from pykcm.api.resources import ALL_VERBS, ResourceInfo, builtin_registry, preferred_resources
from pykcm.client import Conflict, NotFound, UnsupportedMediaType
from pykcm.controllers.garbagecollector import GarbageCollector
from pykcm.controllers.garbagecollector.graph import Node, ObjectReference, OwnerReference
from pykcm.controllers.garbagecollector.graph_builder import EventType, GraphEvent, ObjectMeta
from pykcm.controllers.garbagecollector.operations import (
    RESTMapper,
    RESTMappingError,
    deletable_resources,
    delete_owner_ref_strategic_merge_patch,
    unblock_owner_references_strategic_merge_patch,
)
from pykcm.informers.generic import GroupVersionResource


def status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": reason}


class FakeDiscovery:
    def __init__(self, resources: list[ResourceInfo]) -> None:
        self.resources = resources
        self.fetches = 0

    async def refresh(self) -> list[ResourceInfo]:
        self.fetches += 1
        return self.resources


WIDGET = ResourceInfo(group="example.com", version="v1", kind="Widget", plural="widgets",
                      singular="widget", namespaced=True)


class FakeClient:
    """Objects by (plural, namespace, name); records writes."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.deletes: list[dict[str, Any]] = []
        self.patches: list[tuple[str, str, Any]] = []
        self.conflict_once_on_delete = False
        self.smp_unsupported: set[str] = {"widgets"}
        self.discovery = FakeDiscovery([*builtin_registry().all(), WIDGET])
        self._uid = 0

    def put(self, plural: str, ns: str, name: str, *owners: dict[str, Any],
            finalizers: list[str] | None = None, deleting: bool = False,
            api_version: str = "v1", kind: str = "ConfigMap") -> dict[str, Any]:
        self._uid += 1
        meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}-{self._uid}",
                                "resourceVersion": "1"}
        if ns:
            meta["namespace"] = ns
        if owners:
            meta["ownerReferences"] = [dict(o) for o in owners]
        if finalizers:
            meta["finalizers"] = list(finalizers)
        if deleting:
            meta["deletionTimestamp"] = "2027-01-01T00:00:00Z"
        obj = {"apiVersion": api_version, "kind": kind, "metadata": meta}
        self.objects[(plural, ns, name)] = obj
        return obj

    def _find(self, info: ResourceInfo, name: str, ns: str | None) -> dict[str, Any]:
        obj = self.objects.get((info.plural, ns or "", name))
        if obj is None:
            raise NotFound(status(404, "NotFound"))
        return obj

    async def get(self, info: ResourceInfo, name: str, ns: str | None = None
                  ) -> dict[str, Any]:
        return copy.deepcopy(self._find(info, name, ns))

    async def delete(self, info: ResourceInfo, name: str, ns: str | None = None, *,
                     propagation_policy: str | None = None,
                     preconditions: dict[str, Any] | None = None) -> dict[str, Any]:
        obj = self._find(info, name, ns)
        self.deletes.append({"name": name, "policy": propagation_policy,
                             "preconditions": dict(preconditions or {})})
        if self.conflict_once_on_delete and "resourceVersion" in (preconditions or {}):
            self.conflict_once_on_delete = False
            obj["metadata"]["resourceVersion"] = "2"
            raise Conflict(status(409, "Conflict"))
        del self.objects[(info.plural, ns or "", name)]
        return {}

    async def patch(self, info: ResourceInfo, name: str, body: bytes, patch_type: str,
                    ns: str | None = None) -> dict[str, Any]:
        if patch_type == "strategic" and info.plural in self.smp_unsupported:
            raise UnsupportedMediaType(status(415, "UnsupportedMediaType"))
        obj = self._find(info, name, ns)
        doc = orjson.loads(body)
        self.patches.append((name, patch_type, doc))
        meta = obj["metadata"]
        if patch_type == "merge":
            for k, v in doc["metadata"].items():
                if k == "resourceVersion":
                    continue
                if v is None:
                    meta.pop(k, None)
                else:
                    meta[k] = v
        return copy.deepcopy(obj)


def ref(obj: dict[str, Any], *, block: bool | None = None) -> dict[str, Any]:
    out = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
           "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}
    if block is not None:
        out["blockOwnerDeletion"] = block
    return out


def make_gc(fake: FakeClient) -> GarbageCollector:
    return GarbageCollector(client=fake, informer_factory=None,  # type: ignore[arg-type]
                            recorder=object())  # type: ignore[arg-type]


def observe(gc: GarbageCollector, *objs: dict[str, Any]) -> None:
    for obj in objs:
        gc.graph_builder.process_event(GraphEvent(EventType.ADD, ObjectMeta.of(obj),
                                                  obj["apiVersion"], obj["kind"]))


def graph_node(gc: GarbageCollector, obj: dict[str, Any]) -> Node:
    n = gc.graph_builder.uid_to_node.read(obj["metadata"]["uid"])
    assert n is not None
    return n


async def test_all_owners_gone_deletes_in_background_with_preconditions() -> None:
    fake = FakeClient()
    dep = fake.put("configmaps", "ns", "dep", {"apiVersion": "v1", "kind": "ConfigMap",
                                               "name": "gone", "uid": "uid-gone"})
    gc = make_gc(fake)
    observe(gc, dep)
    assert await gc.attempt_to_delete_worker(graph_node(gc, dep))
    assert fake.deletes == [{"name": "dep", "policy": "Background",
                             "preconditions": {"uid": dep["metadata"]["uid"],
                                               "resourceVersion": "1"}}]


@pytest.mark.parametrize("finalizer, policy", [("orphan", "Orphan"),
                                               ("foregroundDeletion", "Foreground")])
async def test_existing_propagation_finalizer_is_honoured(finalizer: str, policy: str) -> None:
    fake = FakeClient()
    dep = fake.put("configmaps", "ns", "dep", {"apiVersion": "v1", "kind": "ConfigMap",
                                               "name": "gone", "uid": "uid-gone"},
                   finalizers=[finalizer])
    gc = make_gc(fake)
    observe(gc, dep)
    await gc.attempt_to_delete_item(graph_node(gc, dep))
    assert [d["policy"] for d in fake.deletes] == [policy]


async def test_solid_owner_keeps_it_and_drops_dangling_references() -> None:
    fake = FakeClient()
    owner = fake.put("configmaps", "ns", "owner")
    dangling = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "uid-gone"}
    dep = fake.put("configmaps", "ns", "dep", ref(owner), dangling)
    gc = make_gc(fake)
    observe(gc, owner, dep)
    await gc.attempt_to_delete_item(graph_node(gc, dep))
    assert fake.deletes == []
    assert fake.patches == [("dep", "strategic", {"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": "uid-gone"}],
        "uid": dep["metadata"]["uid"]}})]


async def test_owner_with_another_uid_is_dangling() -> None:
    fake = FakeClient()
    fake.put("configmaps", "ns", "owner")
    stale = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "uid-old"}
    dep = fake.put("configmaps", "ns", "dep", stale)
    gc = make_gc(fake)
    observe(gc, dep)
    await gc.attempt_to_delete_item(graph_node(gc, dep))
    assert [d["name"] for d in fake.deletes] == ["dep"]
    assert gc.absent_owner_cache.has(ObjectReference("v1", "ConfigMap", "owner", "uid-old",
                                                     "ns"))


async def test_waiting_owner_makes_a_parent_dependent_go_in_foreground() -> None:
    fake = FakeClient()
    owner = fake.put("configmaps", "ns", "owner", finalizers=["foregroundDeletion"],
                     deleting=True)
    mid = fake.put("configmaps", "ns", "mid", ref(owner, block=True))
    leaf = fake.put("configmaps", "ns", "leaf", ref(mid, block=True))
    gc = make_gc(fake)
    observe(gc, owner, mid, leaf)
    await gc.attempt_to_delete_item(graph_node(gc, mid))
    assert [(d["name"], d["policy"]) for d in fake.deletes] == [("mid", "Foreground")]
    assert fake.patches == []


async def test_possible_cycle_unblocks_references_first() -> None:
    fake = FakeClient()
    owner = fake.put("configmaps", "ns", "owner", finalizers=["foregroundDeletion"],
                     deleting=True)
    mid = fake.put("configmaps", "ns", "mid", ref(owner, block=True))
    leaf = fake.put("configmaps", "ns", "leaf", ref(mid, block=True),
                    finalizers=["foregroundDeletion"], deleting=True)
    gc = make_gc(fake)
    observe(gc, owner, mid, leaf)
    await gc.attempt_to_delete_item(graph_node(gc, mid))
    name, ptype, doc = fake.patches[0]
    assert (name, ptype) == ("mid", "strategic")
    assert doc["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is False
    assert [(d["name"], d["policy"]) for d in fake.deletes] == [("mid", "Foreground")]


async def test_foreground_owner_loses_its_finalizer_when_no_blocker_remains() -> None:
    fake = FakeClient()
    owner = fake.put("configmaps", "ns", "owner", finalizers=["foregroundDeletion", "x/y"],
                     deleting=True)
    free = fake.put("configmaps", "ns", "free", ref(owner, block=False))
    gc = make_gc(fake)
    observe(gc, owner, free)
    node = graph_node(gc, owner)
    assert node.is_deleting_dependents()
    await gc.attempt_to_delete_item(node)
    assert fake.patches == [("owner", "merge", {"metadata": {
        "resourceVersion": "1", "finalizers": ["x/y"]}})]


async def test_foreground_owner_chases_its_blocking_dependents() -> None:
    fake = FakeClient()
    owner = fake.put("configmaps", "ns", "owner", finalizers=["foregroundDeletion"],
                     deleting=True)
    blocker = fake.put("configmaps", "ns", "blocker", ref(owner, block=True))
    gc = make_gc(fake)
    observe(gc, owner, blocker)
    while len(gc.attempt_to_delete):
        item, _ = await gc.attempt_to_delete.get()
        assert item is not None
        gc.attempt_to_delete.done(item)
    await gc.attempt_to_delete_item(graph_node(gc, owner))
    assert fake.patches == []
    item, _ = await gc.attempt_to_delete.get()
    assert item is graph_node(gc, blocker)


async def test_cluster_scoped_object_with_namespaced_owner_is_given_up() -> None:
    fake = FakeClient()
    owner = fake.put("configmaps", "ns", "owner")
    crd = fake.put("customresourcedefinitions", "", "things.example.com", ref(owner),
                   api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    gc = make_gc(fake)
    observe(gc, crd)
    assert await gc.attempt_to_delete_worker(graph_node(gc, crd))
    assert fake.deletes == []


async def test_missing_object_becomes_a_virtual_delete_event() -> None:
    fake = FakeClient()
    gc = make_gc(fake)
    n = Node(ObjectReference("v1", "ConfigMap", "gone", "uid-x", "ns"))
    gc.graph_builder.uid_to_node.write(n)
    assert await gc.attempt_to_delete_worker(n)
    ev, _ = await gc.graph_builder.graph_changes.get()
    assert ev is not None and ev.virtual and ev.event_type is EventType.DELETE


async def test_unknown_kind_is_retried() -> None:
    fake = FakeClient()
    dep = fake.put("configmaps", "ns", "dep", {"apiVersion": "nope.example.com/v1",
                                               "kind": "Nope", "name": "n", "uid": "u"})
    gc = make_gc(fake)
    observe(gc, dep)
    assert not await gc.attempt_to_delete_worker(graph_node(gc, dep))
    assert fake.deletes == []


async def test_resource_version_conflict_with_same_owners_retries_by_uid() -> None:
    fake = FakeClient()
    dep = fake.put("configmaps", "ns", "dep", {"apiVersion": "v1", "kind": "ConfigMap",
                                               "name": "gone", "uid": "uid-gone"})
    fake.conflict_once_on_delete = True
    gc = make_gc(fake)
    observe(gc, dep)
    await gc.attempt_to_delete_item(graph_node(gc, dep))
    assert [d["preconditions"] for d in fake.deletes] == [
        {"uid": dep["metadata"]["uid"], "resourceVersion": "1"},
        {"uid": dep["metadata"]["uid"]}]
    assert ("configmaps", "ns", "dep") not in fake.objects


async def test_orphan_drops_references_then_the_finalizer() -> None:
    fake = FakeClient()
    owner = fake.put("widgets", "ns", "owner", finalizers=["orphan"], deleting=True,
                     api_version="example.com/v1", kind="Widget")
    other = fake.put("configmaps", "ns", "other")
    w = fake.put("widgets", "ns", "w", ref(owner), ref(other), api_version="example.com/v1",
                 kind="Widget")
    cm = fake.put("configmaps", "ns", "cm", ref(owner))
    gc = make_gc(fake)
    observe(gc, owner, other, w, cm)
    assert await gc.attempt_to_orphan_worker(graph_node(gc, owner))
    by_name = {p[0]: p for p in fake.patches}
    assert by_name["cm"][1] == "strategic"
    # Widgets take no strategic merge patch: a JSON merge patch keeps the other owner.
    assert by_name["w"][1] == "merge"
    assert by_name["w"][2] == {"metadata": {"resourceVersion": "1",
                                            "ownerReferences": [ref(other)]}}
    assert by_name["owner"][2] == {"metadata": {"resourceVersion": "1", "finalizers": None}}


def test_patch_builders() -> None:
    assert orjson.loads(delete_owner_ref_strategic_merge_patch("d", ["a", "b"])) == {
        "metadata": {"ownerReferences": [{"$patch": "delete", "uid": "a"},
                                         {"$patch": "delete", "uid": "b"}], "uid": "d"}}
    n = Node(ObjectReference("v1", "ConfigMap", "n", "uid-n", "ns"),
             owners=[OwnerReference("v1", "ConfigMap", "a", "ua", True, True),
                     OwnerReference("v1", "ConfigMap", "b", "ub")])
    assert orjson.loads(unblock_owner_references_strategic_merge_patch(n)) == {
        "metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                          "name": "a", "uid": "ua", "controller": True,
                                          "blockOwnerDeletion": False}],
                     "uid": "uid-n"}}


def _r(group: str, version: str, plural: str, verbs: tuple[str, ...] = ALL_VERBS
       ) -> ResourceInfo:
    return ResourceInfo(group=group, version=version, kind=plural.title(), plural=plural,
                        singular=plural, namespaced=True, verbs=verbs)


def test_deletable_resources_prefer_the_first_version() -> None:
    resources = [_r("g", "v2", "things"), _r("g", "v1", "things"), _r("g", "v1", "olds"),
                 _r("g", "v2", "readonly", ("get", "list", "watch"))]
    assert [(r.version, r.plural) for r in preferred_resources(resources)] == [
        ("v2", "things"), ("v1", "olds"), ("v2", "readonly")]
    assert set(deletable_resources(resources)) == {
        GroupVersionResource("g", "v2", "things"), GroupVersionResource("g", "v1", "olds")}


async def test_rest_mapper_refreshes_once_per_reset() -> None:
    discovery = FakeDiscovery([])
    mapper = RESTMapper(fetch=discovery.refresh)
    assert (await mapper.mapping("apps/v1", "Deployment")).plural == "deployments"
    with pytest.raises(RESTMappingError):
        await mapper.mapping("example.com/v1", "Widget")
    assert discovery.fetches == 1
    with pytest.raises(RESTMappingError):
        await mapper.mapping("example.com/v1", "Widget")
    assert discovery.fetches == 1  # fresh: no new fetch until a reset
    discovery.resources = [WIDGET]
    mapper.reset()
    assert (await mapper.mapping("example.com/v1", "Widget")) is WIDGET
    assert discovery.fetches == 2
