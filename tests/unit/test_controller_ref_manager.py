"""Claiming (controller_ref_manager): upstream ClaimObject semantics, table-driven, with fakes.

Each case gives the controller's state, one candidate object, and what the
claim must return and which patch (if any) it must send.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pykcm.api.labels import selector_from_label_selector
from pykcm.client.errors import ApiError, Conflict, Invalid, NotFound
from pykcm.controller import (
    AggregateError,
    FakePodControl,
    FakeRSControl,
    PodControllerRefManager,
    ReplicaSetControllerRefManager,
    delete_owner_ref_strategic_merge_patch,
    owner_ref_controller_patch,
    recheck_deletion_timestamp,
)

NS = "default"
RS_UID = "rs-uid"
SELECTOR = selector_from_label_selector({"matchLabels": {"app": "web"}})
DELETED_AT = "2026-01-02T03:04:05Z"


def controller(deleting: bool = False, namespace: str = NS) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": namespace, "uid": RS_UID}
    if deleting:
        meta["deletionTimestamp"] = DELETED_AT
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta}


def ref(uid: str, controller_: bool = True) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": uid,
            "controller": controller_}


def pod(name: str, labels: Mapping[str, str] | None = None, owner: str | None = None,
        deleting: bool = False, namespace: str = NS, owner_is_controller: bool = True
        ) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"{name}-uid",
                            "labels": dict(labels if labels is not None else {"app": "web"})}
    if owner is not None:
        meta["ownerReferences"] = [ref(owner, owner_is_controller)]
    if deleting:
        meta["deletionTimestamp"] = DELETED_AT
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


class Counter:
    """A can_adopt that counts its calls and optionally refuses."""

    def __init__(self, err: Exception | None = None) -> None:
        self.calls = 0
        self.err = err

    async def __call__(self) -> None:
        self.calls += 1
        if self.err is not None:
            raise self.err


ADOPT = owner_ref_controller_patch(controller(), "apps/v1", "ReplicaSet", "p-uid")
RELEASE = delete_owner_ref_strategic_merge_patch("p-uid", [RS_UID])


@dataclass
class Case:
    name: str
    obj: dict[str, Any]
    claimed: bool
    patch: dict[str, Any] | None
    deleting_controller: bool = False
    controller_ns: str = NS


CASES = [
    Case("owned and matching: kept, no write", pod("p", owner=RS_UID), True, None),
    Case("owned and matching while we are deleted: still kept",
         pod("p", owner=RS_UID), True, None, deleting_controller=True),
    Case("owned, not matching: released", pod("p", {"app": "db"}, owner=RS_UID), False,
         RELEASE),
    Case("owned, not matching, we are deleted: left alone",
         pod("p", {"app": "db"}, owner=RS_UID), False, None, deleting_controller=True),
    Case("controlled by another: ignored", pod("p", owner="other"), False, None),
    Case("controlled by another, not matching: ignored", pod("p", {"x": "y"}, owner="other"),
         False, None),
    Case("orphan matching: adopted", pod("p"), True, ADOPT),
    Case("non-controller owner ref only: an orphan, adopted",
         pod("p", owner="gc-owner", owner_is_controller=False), True, ADOPT),
    Case("orphan not matching: ignored", pod("p", {"app": "db"}), False, None),
    Case("orphan without labels: ignored", pod("p", {}), False, None),
    Case("orphan being deleted: never adopted", pod("p", deleting=True), False, None),
    Case("orphan while we are deleted: not adopted", pod("p"), False, None,
         deleting_controller=True),
    Case("orphan in another namespace: not adopted", pod("p", namespace="other"), False, None),
    Case("cluster-scoped controller may adopt in any namespace", pod("p", namespace="other"),
         True, ADOPT, controller_ns=""),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_claim_pods_table(case: Case) -> None:
    fake = FakePodControl()
    can_adopt = Counter()
    owner = controller(case.deleting_controller, case.controller_ns)
    if not case.controller_ns:
        del owner["metadata"]["namespace"]
    m = PodControllerRefManager(fake, owner, SELECTOR, "apps/v1", "ReplicaSet", can_adopt)
    claimed = await m.claim_pods([case.obj])
    assert claimed == ([case.obj] if case.claimed else [])
    if case.patch is None:
        assert fake.patches == []
    else:
        want = dict(case.patch)
        if case.patch is ADOPT:
            want = owner_ref_controller_patch(owner, "apps/v1", "ReplicaSet", "p-uid")
        assert fake.patches == [want]
    # can_adopt runs only when an adoption is attempted.
    assert can_adopt.calls == (1 if case.patch is ADOPT else 0)


def test_patch_shapes_are_upstreams() -> None:
    assert ADOPT == {"metadata": {
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                             "uid": RS_UID, "controller": True, "blockOwnerDeletion": True}],
        "uid": "p-uid"}}
    assert RELEASE == {"metadata": {"uid": "p-uid",
                                    "ownerReferences": [{"$patch": "delete", "uid": RS_UID}]}}
    with_fin = owner_ref_controller_patch(controller(), "batch/v1", "Job", "u", ["f/x"])
    assert with_fin["metadata"]["finalizers"] == ["f/x"]
    rel_fin = delete_owner_ref_strategic_merge_patch("u", ["a", "b"], ["f/x"])
    assert rel_fin == {"metadata": {
        "uid": "u", "ownerReferences": [{"$patch": "delete", "uid": "a"},
                                        {"$patch": "delete", "uid": "b"}],
        "$deleteFromPrimitiveList/finalizers": ["f/x"]}}


async def test_filters_run_after_selector_and_all_must_pass() -> None:
    fake = FakePodControl()
    seen: list[str] = []

    def active(p: Mapping[str, Any]) -> bool:
        seen.append(p["metadata"]["name"])
        return bool(p["metadata"]["name"] != "inactive")

    m = PodControllerRefManager(fake, controller(), SELECTOR, "apps/v1", "ReplicaSet", Counter())
    pods = [pod("a", owner=RS_UID), pod("inactive", owner=RS_UID), pod("nolabel", {"x": "y"})]
    claimed = await m.claim_pods(pods, active, lambda p: True)
    assert [p["metadata"]["name"] for p in claimed] == ["a"]
    assert seen == ["a", "inactive"]  # the filter never saw the non-matching pod
    # "inactive" is ours but fails a filter: released, like a selector mismatch.
    assert fake.patches == [delete_owner_ref_strategic_merge_patch("inactive-uid", [RS_UID])]


async def test_claim_of_owned_and_foreign_pods_writes_nothing_and_keeps_order() -> None:
    """The claim's fast path (already ours and matching: claimed; another controller's:
    skipped) agrees with the full rules, and pods are handed back in their order."""
    fake = FakePodControl()
    can_adopt = Counter()
    m = PodControllerRefManager(fake, controller(), SELECTOR, "apps/v1", "ReplicaSet", can_adopt)
    pods = [pod("b", owner=RS_UID), pod("foreign", owner="other-uid"), pod("a", owner=RS_UID),
            pod("orphan"), pod("mine-relabelled", {"x": "y"}, owner=RS_UID)]
    claimed = await m.claim_pods(pods)
    assert [p["metadata"]["name"] for p in claimed] == ["b", "a", "orphan"]
    assert can_adopt.calls == 1                      # for the orphan only
    assert fake.patches[-1] == delete_owner_ref_strategic_merge_patch("mine-relabelled-uid",
                                                                      [RS_UID])
    assert len(fake.patches) == 2                    # the adoption, the release


async def test_can_adopt_called_once_and_its_refusal_fails_every_adoption() -> None:
    fake = FakePodControl()
    can_adopt = Counter(RuntimeError("default/web has just been deleted at x"))
    m = PodControllerRefManager(fake, controller(), SELECTOR, "apps/v1", "ReplicaSet", can_adopt)
    with pytest.raises(AggregateError) as ei:
        await m.claim_pods([pod("a"), pod("b"), pod("c", owner=RS_UID)])
    assert can_adopt.calls == 1
    assert fake.patches == []
    assert len(ei.value.errors) == 2
    assert str(ei.value.errors[0]) == (
        "can't adopt Pod default/a (a-uid): default/web has just been deleted at x")
    assert str(ei.value) == (
        "[can't adopt Pod default/a (a-uid): default/web has just been deleted at x, "
        "can't adopt Pod default/b (b-uid): default/web has just been deleted at x]")
    # A second claim on the same manager does not ask again.
    with pytest.raises(AggregateError):
        await m.claim_pods([pod("d")])
    assert can_adopt.calls == 1


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "status": "Failure", "code": code, "reason": reason,
            "message": f"{reason.lower()} happened"}


@pytest.mark.parametrize(("err", "raised"), [
    (NotFound(_status(404, "NotFound")), False),
    (Invalid(_status(422, "Invalid")), False),
    (Conflict(_status(409, "Conflict")), True),
])
async def test_release_ignores_not_found_and_invalid(err: ApiError, raised: bool) -> None:
    fake = FakePodControl(err=err)
    m = PodControllerRefManager(fake, controller(), SELECTOR, "apps/v1", "ReplicaSet", Counter())
    objs = [pod("p", {"app": "db"}, owner=RS_UID)]
    if raised:
        with pytest.raises(AggregateError) as ei:
            await m.claim_pods(objs)
        assert ei.value.errors == [err]
    else:
        assert await m.claim_pods(objs) == []
    assert len(fake.patches) == 1


@pytest.mark.parametrize(("err", "raised"), [
    (NotFound(_status(404, "NotFound")), False),
    (Invalid(_status(422, "Invalid")), True),  # adoption refused (another controller): an error
])
async def test_adopt_ignores_only_not_found(err: ApiError, raised: bool) -> None:
    fake = FakePodControl(err=err)
    m = PodControllerRefManager(fake, controller(), SELECTOR, "apps/v1", "ReplicaSet", Counter())
    if raised:
        with pytest.raises(AggregateError):
            await m.claim_pods([pod("p")])
    else:
        assert await m.claim_pods([pod("p")]) == []


async def test_errors_are_aggregated_after_processing_every_object() -> None:
    calls: list[str] = []

    class Flaky(FakePodControl):
        async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
            calls.append(name)
            if name in ("a", "c"):
                raise Conflict(_status(409, "Conflict"))

    m = PodControllerRefManager(Flaky(), controller(), SELECTOR, "apps/v1", "ReplicaSet",
                                Counter())
    with pytest.raises(AggregateError) as ei:
        await m.claim_pods([pod("a"), pod("b"), pod("c"), pod("d", owner=RS_UID)])
    assert calls == ["a", "b", "c"]
    assert len(ei.value.errors) == 2
    assert str(ei.value) == "conflict happened"  # duplicate messages listed once


async def test_pod_finalizers_travel_with_adopt_and_release() -> None:
    fake = FakePodControl()
    m = PodControllerRefManager(fake, controller(), SELECTOR, "batch/v1", "Job", Counter(),
                                finalizers=["batch.kubernetes.io/job-tracking"])
    await m.claim_pods([pod("a"), pod("b", {"app": "db"}, owner=RS_UID)])
    assert fake.patches[0]["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert fake.patches[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert fake.patches[1]["metadata"]["$deleteFromPrimitiveList/finalizers"] == [
        "batch.kubernetes.io/job-tracking"]


async def test_claim_replica_sets() -> None:
    fake = FakeRSControl()
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "d", "namespace": NS, "uid": "d-uid"}}

    def rs(name: str, labels: dict[str, str], owner: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"{name}-uid",
                                "labels": labels}
        if owner:
            meta["ownerReferences"] = [ref(owner)]
        return {"metadata": meta}

    can_adopt = Counter()
    m = ReplicaSetControllerRefManager(fake, deploy, SELECTOR, "apps/v1", "Deployment",
                                       can_adopt)
    sets = [rs("mine", {"app": "web"}, "d-uid"), rs("orphan", {"app": "web"}, None),
            rs("stale", {"app": "db"}, "d-uid"), rs("theirs", {"app": "web"}, "x")]
    claimed = await m.claim_replica_sets(sets)
    assert [s["metadata"]["name"] for s in claimed] == ["mine", "orphan"]
    assert fake.patches == [
        (NS, "orphan", owner_ref_controller_patch(deploy, "apps/v1", "Deployment", "orphan-uid")),
        (NS, "stale", delete_owner_ref_strategic_merge_patch("stale-uid", ["d-uid"])),
    ]
    assert can_adopt.calls == 1


async def test_claim_replica_sets_adopt_error_message() -> None:
    fake = FakeRSControl()
    deploy = {"metadata": {"name": "d", "namespace": NS, "uid": "d-uid"}}
    m = ReplicaSetControllerRefManager(fake, deploy, SELECTOR, "apps/v1", "Deployment",
                                       Counter(RuntimeError("nope")))
    with pytest.raises(AggregateError, match=r"^can't adopt ReplicaSet default/r \(r-uid\): nope$"):
        await m.claim_replica_sets([{"metadata": {"name": "r", "namespace": NS, "uid": "r-uid",
                                                  "labels": {"app": "web"}}}])
    assert fake.patches == []


async def test_recheck_deletion_timestamp() -> None:
    async def alive() -> Mapping[str, Any]:
        return controller()

    async def deleting() -> Mapping[str, Any]:
        return controller(deleting=True)

    async def failing() -> Mapping[str, Any]:
        raise NotFound(_status(404, "NotFound"))

    await recheck_deletion_timestamp(alive)()
    with pytest.raises(RuntimeError,
                       match=r"^default/web has just been deleted at 2026-01-02 03:04:05 \+0000 UTC$"):
        await recheck_deletion_timestamp(deleting)()
    with pytest.raises(RuntimeError, match=r"^can't recheck DeletionTimestamp: notfound happened$"):
        await recheck_deletion_timestamp(failing)()
