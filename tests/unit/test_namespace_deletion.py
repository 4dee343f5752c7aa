"""The namespaced resources deleter's logic against an in-memory fake client.

Condition bookkeeping (reasons, messages, transition times), the estimates
and errors of content deletion, pods first, deletecollection fallbacks,
discovery failures and the final /finalize call.
"""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.api.resources import ALL_VERBS, ResourceInfo
from pykcm.client import ApiError, Conflict, MethodNotAllowed, NotFound
from pykcm.controllers.namespace.deletion import (
    CONDITION_TYPES,
    AllGVRDeletionMetadata,
    NamespaceConditionUpdater,
    NamespacedResourcesDeleter,
    ResourcesRemainingError,
    update_conditions,
)

NOW = 1_800_000_000.0
DELETED_AT = "2027-01-15T08:00:00Z"  # NOW is 2027-01-15T08:00:00Z


def status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": reason}


def info(plural: str, kind: str, group: str = "", verbs: tuple[str, ...] = ALL_VERBS
         ) -> ResourceInfo:
    return ResourceInfo(group=group, version="v1", kind=kind, plural=plural,
                        singular=kind.lower(), namespaced=True, verbs=verbs)


CONFIGMAPS = info("configmaps", "ConfigMap")
PODS = info("pods", "Pod")
WIDGETS = info("widgets", "Widget", "example.com")


class FakeClient:
    """Namespaces and namespaced objects in dicts; deletes honour finalizers."""

    def __init__(self) -> None:
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}
        self.calls: list[tuple[str, str]] = []
        self.no_deletecollection: set[str] = set()
        self.sticky: set[str] = set()  # plurals whose deletes do nothing
        self.status_writes = 0

    def add_namespace(self, name: str, *, deleting: bool = True,
                      finalizers: tuple[str, ...] = ("kubernetes",)) -> None:
        meta: dict[str, Any] = {"name": name, "uid": "uid-" + name, "resourceVersion": "1"}
        if deleting:
            meta["deletionTimestamp"] = DELETED_AT
        self.namespaces[name] = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
                                 "spec": {"finalizers": list(finalizers)},
                                 "status": {"phase": "Terminating" if deleting else "Active"}}

    def add(self, res: ResourceInfo, name: str, **meta: Any) -> None:
        self.objects.setdefault(res.plural, {})[name] = {
            "metadata": {"name": name, **meta}, "spec": {}, "status": {}}

    async def get(self, resource: str, name: str, namespace: str | None = None
                  ) -> dict[str, Any]:
        assert resource == "namespaces"
        if name not in self.namespaces:
            raise NotFound(status(404, "NotFound"))
        return _copy(self.namespaces[name])

    async def update_status(self, resource: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._write(body, "status")

    async def finalize_namespace(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._write(body, "finalize")

    def _write(self, body: dict[str, Any], what: str) -> dict[str, Any]:
        name = body["metadata"]["name"]
        current = self.namespaces.get(name)
        if current is None:
            raise NotFound(status(404, "NotFound"))
        if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise Conflict(status(409, "Conflict"))
        self.calls.append((what, name))
        new = _copy(current)
        if what == "status":
            self.status_writes += 1
            new["status"] = _copy(body["status"])
        else:
            new["spec"]["finalizers"] = list(body["spec"]["finalizers"])
        new["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.namespaces[name] = new
        return _copy(new)

    def _delete_one(self, res: ResourceInfo, name: str) -> None:
        objs = self.objects.get(res.plural, {})
        if name not in objs:
            raise NotFound(status(404, "NotFound"))
        if res.plural in self.sticky:
            return
        meta = objs[name]["metadata"]
        if meta.get("finalizers") or res.plural == "pods":
            meta["deletionTimestamp"] = DELETED_AT
        else:
            del objs[name]

    async def delete_collection(self, res: ResourceInfo, namespace: str, *,
                                propagation_policy: str | None = None) -> dict[str, Any]:
        assert propagation_policy == "Background"
        self.calls.append(("deletecollection", res.plural))
        if res.plural in self.no_deletecollection:
            raise MethodNotAllowed(status(405, "MethodNotAllowed"))
        for name in list(self.objects.get(res.plural, {})):
            self._delete_one(res, name)
        return {}

    async def delete(self, res: ResourceInfo, name: str, namespace: str, *,
                     propagation_policy: str | None = None) -> dict[str, Any]:
        self.calls.append(("delete", f"{res.plural}/{name}"))
        self._delete_one(res, name)
        return {}

    async def list_all(self, res: ResourceInfo | str, namespace: str) -> dict[str, Any]:
        plural = res if isinstance(res, str) else res.plural
        return {"items": [_copy(o) for o in self.objects.get(plural, {}).values()]}


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    import copy
    return copy.deepcopy(obj)


def deleter(fake: FakeClient, resources: list[ResourceInfo] | Exception
            ) -> NamespacedResourcesDeleter:
    async def discover() -> list[ResourceInfo]:
        if isinstance(resources, Exception):
            raise resources
        return resources

    return NamespacedResourcesDeleter(fake, discover_resources=discover,  # type: ignore[arg-type]
                                      clock=lambda: NOW)


def conds(fake: FakeClient, ns: str) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in fake.namespaces[ns]["status"].get("conditions") or []}


# -- conditions ----------------------------------------------------------------------------


def test_update_conditions_sets_every_type_ok_once() -> None:
    st: dict[str, Any] = {}
    assert update_conditions(st, [], NOW)
    assert [c["type"] for c in st["conditions"]] == list(CONDITION_TYPES)
    by_type = {c["type"]: c for c in st["conditions"]}
    assert by_type["NamespaceDeletionDiscoveryFailure"] == {
        "type": "NamespaceDeletionDiscoveryFailure", "status": "False",
        "lastTransitionTime": "2027-01-15T08:00:00Z", "reason": "ResourcesDiscovered",
        "message": "All resources successfully discovered"}
    assert by_type["NamespaceDeletionContentFailure"]["message"] == \
        "All content successfully deleted, may be waiting on finalization"
    assert by_type["NamespaceFinalizersRemaining"]["reason"] == "ContentRemoved"
    assert not update_conditions(st, [], NOW + 60)


def test_transition_time_moves_only_with_status() -> None:
    st: dict[str, Any] = {}
    update_conditions(st, [], NOW)
    u = NamespaceConditionUpdater(lambda: NOW + 10)
    totals = AllGVRDeletionMetadata({CONFIGMAPS: 2, WIDGETS: 1}, {"b/fin": 1, "a/fin": 2})
    u.process_content_totals(totals)
    ns = {"status": st}
    assert u.update(ns)
    c = {x["type"]: x for x in st["conditions"]}
    assert c["NamespaceContentRemaining"] == {
        "type": "NamespaceContentRemaining", "status": "True",
        "lastTransitionTime": "2027-01-15T08:00:10Z", "reason": "SomeResourcesRemain",
        "message": "Some resources are remaining: configmaps. has 2 resource instances, "
                   "widgets.example.com has 1 resource instances"}
    assert c["NamespaceFinalizersRemaining"]["message"] == \
        "Some content in the namespace has finalizers remaining: " \
        "a/fin in 2 resource instances, b/fin in 1 resource instances"
    assert c["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizersRemain"
    # Same status, new message: the transition time stays.
    u2 = NamespaceConditionUpdater(lambda: NOW + 20)
    u2.process_content_totals(AllGVRDeletionMetadata({CONFIGMAPS: 1}, {"a/fin": 1}))
    assert u2.update(ns)
    c = {x["type"]: x for x in st["conditions"]}
    assert c["NamespaceContentRemaining"]["lastTransitionTime"] == "2027-01-15T08:00:10Z"
    assert c["NamespaceContentRemaining"]["message"].endswith("configmaps. has 1 resource "
                                                              "instances")


def test_delete_content_errors_make_one_condition() -> None:
    u = NamespaceConditionUpdater(lambda: NOW)
    u.process_delete_content_err(RuntimeError("zeta failed"))
    u.process_delete_content_err(RuntimeError("alpha failed"))
    u.process_discover_resources_err(RuntimeError("discovery down"))
    ns: dict[str, Any] = {}
    assert u.update(ns)
    c = {x["type"]: x for x in ns["status"]["conditions"]}
    assert c["NamespaceDeletionContentFailure"]["reason"] == "ContentDeletionFailed"
    assert c["NamespaceDeletionContentFailure"]["message"] == \
        "Failed to delete all resource types, 2 remaining: alpha failed, zeta failed"
    assert c["NamespaceDeletionDiscoveryFailure"]["status"] == "True"
    assert c["NamespaceDeletionDiscoveryFailure"]["reason"] == "DiscoveryFailed"
    assert c["NamespaceDeletionDiscoveryFailure"]["message"] == "discovery down"


# -- the deleter -----------------------------------------------------------------------------


async def test_finalizer_holds_the_namespace_until_removed() -> None:
    fake = FakeClient()
    fake.add_namespace("ns", finalizers=("kubernetes", "z/other", "a/other"))
    fake.add(CONFIGMAPS, "plain")
    fake.add(CONFIGMAPS, "held", finalizers=["example.com/hold"])
    fake.add(WIDGETS, "w")
    d = deleter(fake, [CONFIGMAPS, WIDGETS])
    with pytest.raises(ResourcesRemainingError) as err:
        await d.delete("ns")
    assert err.value.estimate == 15
    assert str(err.value) == ("some content remains in the namespace, estimate 15 seconds "
                              "before it is removed")
    assert set(fake.objects["configmaps"]) == {"held"}
    assert fake.objects["widgets"] == {}
    c = conds(fake, "ns")
    assert c["NamespaceFinalizersRemaining"]["status"] == "True"
    assert c["NamespaceContentRemaining"]["message"] == \
        "Some resources are remaining: configmaps. has 1 resource instances"
    assert c["NamespaceDeletionContentFailure"]["status"] == "False"

    del fake.objects["configmaps"]["held"]
    await d.delete("ns")
    assert fake.namespaces["ns"]["spec"]["finalizers"] == ["a/other", "z/other"]
    c = conds(fake, "ns")
    assert c["NamespaceFinalizersRemaining"]["status"] == "False"
    assert c["NamespaceContentRemaining"]["reason"] == "ContentRemoved"
    # The other finalizers' owners finish the job; a new pass changes nothing.
    await d.delete("ns")
    assert fake.namespaces["ns"]["spec"]["finalizers"] == ["a/other", "z/other"]


async def test_finalized_namespace_is_not_touched() -> None:
    fake = FakeClient()
    fake.add_namespace("ns", finalizers=())
    fake.add(CONFIGMAPS, "cm")
    await deleter(fake, [CONFIGMAPS]).delete("ns")
    assert fake.calls == []


async def test_deletecollection_unsupported_deletes_each_item() -> None:
    fake = FakeClient()
    fake.add_namespace("ns")
    fake.add(WIDGETS, "a")
    fake.add(WIDGETS, "b")
    fake.no_deletecollection.add("widgets")
    nodc = info("things", "Thing", "example.com",
                verbs=("create", "delete", "get", "list", "watch"))
    fake.add(nodc, "t")
    await deleter(fake, [WIDGETS, nodc]).delete("ns")
    assert ("delete", "widgets/a") in fake.calls and ("delete", "widgets/b") in fake.calls
    # Discovery said "things" has no deletecollection: not even tried.
    assert ("deletecollection", "things") not in fake.calls
    assert ("delete", "things/t") in fake.calls
    assert fake.namespaces["ns"]["spec"]["finalizers"] == []


async def test_unexpected_leftovers_are_an_error() -> None:
    fake = FakeClient()
    fake.add_namespace("ns")
    fake.add(CONFIGMAPS, "stuck")
    fake.sticky.add("configmaps")
    with pytest.raises(Exception) as err:
        await deleter(fake, [CONFIGMAPS]).delete("ns")
    assert str(err.value) == ("unexpected items still remain in namespace: ns for gvr: "
                              "/v1, Resource=configmaps")
    c = conds(fake, "ns")
    assert c["NamespaceDeletionContentFailure"]["message"] == (
        "Failed to delete all resource types, 1 remaining: unexpected items still remain in "
        "namespace: ns for gvr: /v1, Resource=configmaps")
    assert fake.namespaces["ns"]["spec"]["finalizers"] == ["kubernetes"]


async def test_discovery_failure_is_reported_and_retried() -> None:
    fake = FakeClient()
    fake.add_namespace("ns")
    with pytest.raises(Exception, match="^ServiceUnavailable$"):
        await deleter(fake, ApiError(status(503, "ServiceUnavailable"))).delete("ns")
    c = conds(fake, "ns")
    assert c["NamespaceDeletionDiscoveryFailure"]["status"] == "True"
    assert c["NamespaceDeletionDiscoveryFailure"]["reason"] == "DiscoveryFailed"
    assert fake.namespaces["ns"]["spec"]["finalizers"] == ["kubernetes"]


async def test_pods_go_first_with_their_grace_period() -> None:
    fake = FakeClient()
    fake.add_namespace("ns")
    fake.add(PODS, "p")
    fake.objects["pods"]["p"]["spec"]["terminationGracePeriodSeconds"] = 30
    fake.add(CONFIGMAPS, "cm")
    d = NamespacedResourcesDeleter(fake, discover_resources=None,  # type: ignore[arg-type]
                                   clock=lambda: NOW + 10)

    async def discover() -> list[ResourceInfo]:
        return [CONFIGMAPS, PODS]

    d._discover = discover
    with pytest.raises(ResourcesRemainingError) as err:
        await d.delete("ns")
    # 30 s grace, 10 s since the namespace's deletion: still within the estimate.
    assert err.value.estimate == 30
    assert "cm" in fake.objects["configmaps"]  # untouched while pods remain
    assert conds(fake, "ns")["NamespaceContentRemaining"]["message"] == \
        "Some resources are remaining: pods. has 1 resource instances"
    # The pod finishes terminating: the rest goes, the namespace is finalized.
    del fake.objects["pods"]["p"]
    await d.delete("ns")
    assert fake.objects["configmaps"] == {}
    assert fake.namespaces["ns"]["spec"]["finalizers"] == []


async def test_terminal_pods_and_old_deletions_need_no_wait() -> None:
    fake = FakeClient()
    fake.add_namespace("ns")
    fake.add(PODS, "done")
    fake.objects["pods"]["done"]["spec"]["terminationGracePeriodSeconds"] = 30
    fake.objects["pods"]["done"]["status"]["phase"] = "Succeeded"
    d = deleter(fake, [PODS])
    assert await d.estimate_graceful_termination(PODS, "ns", NOW) == 0
    fake.objects["pods"]["done"]["status"]["phase"] = "Running"
    assert await d.estimate_graceful_termination(PODS, "ns", NOW) == 30
    assert await d.estimate_graceful_termination(PODS, "ns", NOW - 31) == 0


async def test_namespace_not_deleting_or_gone_is_left_alone() -> None:
    fake = FakeClient()
    fake.add_namespace("live", deleting=False)
    fake.add(CONFIGMAPS, "cm")
    d = deleter(fake, [CONFIGMAPS])
    await d.delete("live")
    await d.delete("missing")
    assert fake.calls == []
    assert "cm" in fake.objects["configmaps"]


async def test_conflicting_finalize_is_retried_on_the_latest_namespace() -> None:
    fake = FakeClient()
    fake.add_namespace("ns")
    d = deleter(fake, [CONFIGMAPS])
    original_write = fake._write
    bumped = False

    def write(body: dict[str, Any], what: str) -> dict[str, Any]:
        nonlocal bumped
        if what == "finalize" and not bumped:
            bumped = True  # someone else wrote the namespace meanwhile
            fake.namespaces["ns"]["metadata"]["resourceVersion"] = "99"
        return original_write(body, what)

    fake._write = write  # type: ignore[method-assign]
    await d.delete("ns")
    assert fake.namespaces["ns"]["spec"]["finalizers"] == []
