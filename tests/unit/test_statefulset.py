"""StatefulSet helpers and update ordering (pure logic, no API server): identities,
storage, claim owner references per retention policy, status, which pod an update or a
scale-down touches next."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pykcm.controllers.statefulset.stateful_set_control import (
    DefaultStatefulSetControl,
    slow_start_batch,
)
from pykcm.controllers.statefulset.stateful_set_utils import (
    apply_revision,
    complete_rolling_update,
    get_max_unavailable,
    get_parent_name_and_ordinal,
    identity_matches,
    inconsistent_status,
    is_claim_owner_up_to_date,
    new_revision,
    new_stateful_set_pod,
    new_versioned_stateful_set_pod,
    status_to_wire,
    storage_matches,
    update_claim_owner_refs,
    update_storage,
)


def sts(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid", "generation": 2,
                         "annotations": {"a": "b"}},
            "spec": {"replicas": replicas, "serviceName": "svc",
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "i:1"}],
                                           "volumes": [{"name": "data", "emptyDir": {}},
                                                       {"name": "cfg", "emptyDir": {}}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                               "spec": {"accessModes": ["ReadWriteOnce"]}}],
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"partition": 0}},
                     **spec},
            "status": {}}


@pytest.mark.parametrize(("name", "want"), [
    ("web-0", ("web", 0)), ("my-web-12", ("my-web", 12)), ("web", ("", -1)),
    ("web-x", ("", -1)), ("web-99999999999", ("web", -1)),
])
def test_parent_and_ordinal(name: str, want: tuple[str, int]) -> None:
    assert get_parent_name_and_ordinal({"metadata": {"name": name}}) == want


def test_new_pod_identity_and_storage() -> None:
    s = sts()
    pod = new_stateful_set_pod(s, 2)
    m = pod["metadata"]
    assert (m["name"], m["namespace"], m["generateName"]) == ("web-2", "ns", "web-")
    assert m["labels"] == {"app": "web", "statefulset.kubernetes.io/pod-name": "web-2",
                           "apps.kubernetes.io/pod-index": "2"}
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-2", "svc")
    # the claim volume replaces the template's volume of the same name
    assert pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}},
        {"name": "cfg", "emptyDir": {}}]
    assert m["ownerReferences"][0]["kind"] == "StatefulSet"
    assert identity_matches(s, pod) and storage_matches(s, pod)
    pod["metadata"]["labels"].pop("statefulset.kubernetes.io/pod-name")
    assert not identity_matches(s, pod)
    pod["spec"]["volumes"] = []
    assert not storage_matches(s, pod)
    update_storage(s, pod)
    assert storage_matches(s, pod)


def test_versioned_pods_below_the_partition_stay_at_the_current_revision() -> None:
    s = sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    new = dict(s, spec={**s["spec"], "template": {"metadata": {"labels": {"app": "web"}},
                                                  "spec": {"containers": [
                                                      {"name": "c", "image": "i:2"}]}}})
    revs = [new_versioned_stateful_set_pod(s, new, "cur", "upd", o)["metadata"]["labels"][
        "controller-revision-hash"] for o in range(4)]
    assert revs == ["cur", "cur", "upd", "upd"]
    # OnDelete (no rollingUpdate): new pods always from the update revision
    s2 = sts(updateStrategy={"type": "OnDelete"})
    assert new_versioned_stateful_set_pod(s2, s2, "cur", "upd", 0)["metadata"]["labels"][
        "controller-revision-hash"] == "upd"


def test_revision_and_apply_revision() -> None:
    s = sts()
    rev = new_revision(s, 3, 0)
    assert rev["revision"] == 3 and rev["metadata"]["annotations"] == {"a": "b"}
    assert rev["metadata"]["name"] == "web-" + rev["metadata"]["labels"][
        "controller.kubernetes.io/hash"]
    changed = dict(s, spec={**s["spec"], "template": {"metadata": {"labels": {"app": "web"}},
                                                      "spec": {"containers": []}}})
    restored = apply_revision(changed, rev)
    assert restored["spec"]["template"] == s["spec"]["template"]
    assert restored["spec"]["replicas"] == 3


def claim(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "data-web-1", "ownerReferences": list(refs)}}


SET_REF = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "set-uid",
           "controller": True, "blockOwnerDeletion": True}
POD_REF = {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": "pod-uid",
           "controller": True, "blockOwnerDeletion": True}


@pytest.mark.parametrize(("scaled", "deleted", "replicas", "want"), [
    ("Retain", "Retain", 3, []),
    ("Retain", "Delete", 3, [SET_REF]),
    ("Delete", "Retain", 3, []),
    ("Delete", "Retain", 1, [POD_REF]),      # web-1 scaled down: the pod owns its claim
    ("Delete", "Delete", 3, [SET_REF]),
    ("Delete", "Delete", 1, [POD_REF]),
])
def test_claim_owners_follow_the_retention_policy(scaled: str, deleted: str, replicas: int,
                                                  want: list[dict[str, Any]]) -> None:
    s = sts(replicas, persistentVolumeClaimRetentionPolicy={"whenScaled": scaled,
                                                            "whenDeleted": deleted})
    pod = {"metadata": {"name": "web-1", "uid": "pod-uid"}}
    c = claim()
    update_claim_owner_refs(c, s, pod)
    assert c["metadata"]["ownerReferences"] == want
    assert is_claim_owner_up_to_date(c, s, pod)
    assert is_claim_owner_up_to_date(claim(), s, pod) == (want == [])


def test_foreign_and_stale_claim_owners_are_left_alone() -> None:
    s = sts(persistentVolumeClaimRetentionPolicy={"whenScaled": "Delete",
                                                  "whenDeleted": "Delete"})
    pod = {"metadata": {"name": "web-1", "uid": "pod-uid"}}
    stale = claim(dict(SET_REF, uid="old"))
    assert is_claim_owner_up_to_date(stale, s, pod)
    foreign = claim({"apiVersion": "x/v1", "kind": "Other", "name": "o", "uid": "u",
                     "controller": True}, SET_REF)
    assert not is_claim_owner_up_to_date(foreign, s, pod)  # our ref must go
    update_claim_owner_refs(foreign, s, pod)
    assert [r["kind"] for r in foreign["metadata"]["ownerReferences"]] == ["Other"]


def test_status_helpers() -> None:
    s = sts(3)
    s["status"] = {"observedGeneration": 2, "replicas": 3, "currentRevision": "a",
                   "updateRevision": "b"}
    st: dict[str, Any] = {"observedGeneration": 2, "replicas": 3, "readyReplicas": 3,
                          "updatedReplicas": 3, "currentReplicas": 0, "currentRevision": "a",
                          "updateRevision": "b", "collisionCount": 0, "availableReplicas": 3}
    assert inconsistent_status(s, st)
    complete_rolling_update(s, st)
    assert (st["currentRevision"], st["currentReplicas"]) == ("b", 3)
    assert status_to_wire({"observedGeneration": 2, "replicas": 0, "readyReplicas": 0,
                           "currentRevision": "", "collisionCount": 0,
                           "availableReplicas": 0}) == {
        "observedGeneration": 2, "replicas": 0, "collisionCount": 0, "availableReplicas": 0}
    assert get_max_unavailable(None, 10) == 1
    assert get_max_unavailable("25%", 10) == 2   # rounded down
    assert get_max_unavailable("1%", 10) == 1    # at least one


async def test_slow_start_batch_stops_after_a_failing_batch() -> None:
    calls: list[int] = []

    async def fn(i: int) -> bool:
        calls.append(i)
        if i == 2:
            raise RuntimeError("boom")
        return False

    with pytest.raises(RuntimeError, match="boom"):
        await slow_start_batch(1, 10, fn)
    assert sorted(calls) == [0, 1, 2]  # batches of 1, then 2: stops there


# -- update ordering with a recording pod control ----------------------------------------------

class RecordingPodControl:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def delete_stateful_pod(self, set_: Any, pod: Any) -> None:
        self.calls.append(("delete", pod["metadata"]["name"]))

    async def create_stateful_pod(self, set_: Any, pod: Any) -> None:
        self.calls.append(("create", pod["metadata"]["name"]))

    async def update_stateful_pod(self, set_: Any, pod: Any) -> None:
        self.calls.append(("update", pod["metadata"]["name"]))

    async def claims_match_retention_policy(self, set_: Any, pod: Any) -> bool:
        return True

    async def update_pod_claim_for_retention_policy(self, set_: Any, pod: Any) -> None:
        return None

    async def create_missing_persistent_volume_claims(self, set_: Any, pod: Any) -> None:
        return None

    def pod_claim_is_stale(self, set_: Any, pod: Any) -> bool:
        return False


def running_pod(s: dict[str, Any], ordinal: int, revision: str, *, ready: bool = True
                ) -> dict[str, Any]:
    pod = new_stateful_set_pod(s, ordinal)
    pod["metadata"]["labels"]["controller-revision-hash"] = revision
    t = "2024-01-01T00:00:00Z"
    pod["status"] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": t}]}
    return pod


async def run_update(s: dict[str, Any], pods: list[dict[str, Any]], *,
                     gate: bool = False) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    pc = RecordingPodControl()
    control = DefaultStatefulSetControl(pc, None, None, None,  # type: ignore[arg-type]
                                        max_unavailable_stateful_set=gate)
    cur = {"metadata": {"name": "web-old"}, "data": None}
    upd = {"metadata": {"name": "web-new"}, "data": None}
    status, err = await control.update_replicas(s, cur, upd, 0, pods, time.time())
    assert err is None
    return pc.calls, status


async def test_rolling_update_deletes_the_highest_old_ordinal_at_or_above_the_partition(
        ) -> None:
    s = sts(4, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    pods = [running_pod(s, i, "web-old") for i in range(4)]
    calls, status = await run_update(s, pods)
    assert calls == [("delete", "web-3")]
    assert status["currentReplicas"] == 3 and status["updatedReplicas"] == 0
    pods[3] = running_pod(s, 3, "web-new")
    pods[2] = running_pod(s, 2, "web-new", ready=False)
    assert (await run_update(s, pods))[0] == []  # waits for web-2 to be available
    pods[2] = running_pod(s, 2, "web-new")
    assert (await run_update(s, pods))[0] == [("delete", "web-1")]
    pods[1] = running_pod(s, 1, "web-new")
    assert (await run_update(s, pods))[0] == []  # web-0 is below the partition


async def test_max_unavailable_gate_deletes_several_at_once() -> None:
    s = sts(5, podManagementPolicy="Parallel",
            updateStrategy={"type": "RollingUpdate",
                            "rollingUpdate": {"partition": 0, "maxUnavailable": 2}})
    pods = [running_pod(s, i, "web-old") for i in range(5)]
    assert (await run_update(s, pods))[0] == [("delete", "web-4")]  # gate off: one at a time
    calls, _ = await run_update(s, pods, gate=True)
    assert calls == [("delete", "web-4"), ("delete", "web-3")]
    pods[4] = running_pod(s, 4, "web-new", ready=False)
    calls, _ = await run_update(s, pods, gate=True)
    assert calls == [("delete", "web-3")]  # one unavailable already (Parallel goes on)


async def test_ordered_ready_creates_one_pod_and_scales_down_from_the_top() -> None:
    s = sts(3)
    pods = [running_pod(s, 0, "web-new")]
    assert (await run_update(s, pods))[0] == [("create", "web-1")]
    pods = [running_pod(s, 0, "web-new"), running_pod(s, 1, "web-new", ready=False)]
    assert (await run_update(s, pods))[0] == []
    s_par = sts(3, podManagementPolicy="Parallel")
    calls, _ = await run_update(s_par, [running_pod(s_par, 0, "web-new")])
    assert sorted(calls) == [("create", "web-1"), ("create", "web-2")]
    s1 = sts(1)
    pods = [running_pod(s1, i, "web-new") for i in range(3)]
    assert (await run_update(s1, pods))[0] == [("delete", "web-2")]
    # a failed replica is deleted (and re-created by a later sync)
    pods = [running_pod(s1, 0, "web-new")]
    pods[0]["status"]["phase"] = "Failed"
    assert (await run_update(s1, pods))[0] == [("delete", "web-0")]
