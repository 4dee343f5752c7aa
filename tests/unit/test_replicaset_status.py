"""ReplicaSet status: calculate_status, the ReplicaFailure condition helpers, and
update_replica_set_status's skip / write / retry rules (fake client)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

import pytest

from pykcm.client import Client
from pykcm.client.errors import Conflict, Forbidden, NotFound
from pykcm.controller import DeletePodError, EventRecorder, RealPodControl
from pykcm.controllers.replicaset.replica_set_utils import (
    REPLICA_SET_REPLICA_FAILURE,
    calculate_status,
    get_condition,
    new_replica_set_condition,
    remove_condition,
    set_condition,
    update_replica_set_status,
)

NOW = 1_800_000_000.0


def ts(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def rs(replicas: int = 3, *, min_ready: int = 0, status: dict[str, Any] | None = None,
       generation: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid", "generation": generation,
                     "resourceVersion": "10"},
        "spec": {"replicas": replicas, "minReadySeconds": min_ready,
                 "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}},
        "status": status if status is not None else {},
    }


def pod(name: str, *, labels: dict[str, str] | None = None, ready_at: float | None = None
        ) -> dict[str, Any]:
    conds = []
    if ready_at is not None:
        conds.append({"type": "Ready", "status": "True", "lastTransitionTime": ts(ready_at)})
    return {"metadata": {"name": name, "namespace": "ns",
                         "labels": labels if labels is not None else {"app": "web", "tier": "fe"}},
            "status": {"phase": "Running", "conditions": conds}}


def test_counts() -> None:
    pods = [
        pod("full-ready-long", ready_at=NOW - 100),
        pod("full-ready-new", ready_at=NOW - 5),
        pod("partial-labels", labels={"app": "web"}, ready_at=NOW - 100),
        pod("extra-labels", labels={"app": "web", "tier": "fe", "x": "y"}),
    ]
    st = calculate_status(rs(4, min_ready=30), pods, [pod("t1"), pod("t2")], None, now=NOW)
    assert st["replicas"] == 4
    assert st["fullyLabeledReplicas"] == 3
    assert st["readyReplicas"] == 3
    assert st["availableReplicas"] == 2
    assert st["terminatingReplicas"] == 2
    assert "conditions" not in st
    assert "observedGeneration" not in st  # set by the update


def test_min_ready_zero_counts_ready_as_available() -> None:
    st = calculate_status(rs(1), [pod("a", ready_at=NOW)], [], None, now=NOW)
    assert (st["readyReplicas"], st["availableReplicas"]) == (1, 1)


def test_terminating_replicas_feature_off_leaves_the_field_out() -> None:
    old = rs(status={"terminatingReplicas": 3, "replicas": 1})
    st = calculate_status(old, [], [pod("t")], None, enable_status_terminating_replicas=False,
                          now=NOW)
    assert "terminatingReplicas" not in st
    st = calculate_status(old, [], None, None, now=NOW)
    assert st["terminatingReplicas"] == 0


def test_does_not_mutate_the_cached_object() -> None:
    cond = new_replica_set_condition(REPLICA_SET_REPLICA_FAILURE, "True", "FailedCreate", "x",
                                     NOW)
    cached = rs(status={"replicas": 7, "conditions": [cond]})
    calculate_status(cached, [], [], None, now=NOW)
    assert cached["status"] == {"replicas": 7, "conditions": [cond]}


def test_replica_failure_set_on_create_error() -> None:
    st = calculate_status(rs(3), [pod("a")], [], RuntimeError("quota exceeded"), now=NOW)
    cond = get_condition(st, REPLICA_SET_REPLICA_FAILURE)
    assert cond == {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                    "message": "quota exceeded", "lastTransitionTime": ts(NOW)}


def test_replica_failure_reason_on_delete_error() -> None:
    st = calculate_status(rs(1), [pod("a"), pod("b")], [], RuntimeError("forbidden"), now=NOW)
    cond = get_condition(st, REPLICA_SET_REPLICA_FAILURE)
    assert cond is not None and cond["reason"] == "FailedDelete"


def test_replica_failure_kept_while_failing_then_removed() -> None:
    first = calculate_status(rs(3), [], [], RuntimeError("one"), now=NOW)
    again = calculate_status(rs(3, status=first), [], [], RuntimeError("two"), now=NOW + 60)
    # An existing condition is left as it was (time and message).
    assert again["conditions"] == first["conditions"]
    healed = calculate_status(rs(3, status=again), [], [], None, now=NOW + 120)
    assert get_condition(healed, REPLICA_SET_REPLICA_FAILURE) is None
    assert "conditions" not in healed


def test_condition_helpers() -> None:
    status: dict[str, Any] = {"conditions": [{"type": "Other", "status": "True"}]}
    c1 = new_replica_set_condition("ReplicaFailure", "True", "FailedCreate", "a", NOW)
    set_condition(status, c1)
    assert [c["type"] for c in status["conditions"]] == ["Other", "ReplicaFailure"]
    # Same status and reason: kept as it is.
    set_condition(status, new_replica_set_condition("ReplicaFailure", "True", "FailedCreate",
                                                    "b", NOW + 5))
    assert get_condition(status, "ReplicaFailure") == c1
    # A different reason replaces it.
    c3 = new_replica_set_condition("ReplicaFailure", "True", "FailedDelete", "c", NOW + 9)
    set_condition(status, c3)
    assert get_condition(status, "ReplicaFailure") == c3
    assert len(status["conditions"]) == 2
    remove_condition(status, "ReplicaFailure")
    assert status["conditions"] == [{"type": "Other", "status": "True"}]
    remove_condition(status, "Other")
    assert "conditions" not in status


class FakeClient:
    """Records update_status and get calls; answers from scripted results."""

    def __init__(self, updates: list[Any], gets: list[Any] | None = None) -> None:
        self.updates = updates
        self.gets = gets or []
        self.update_bodies: list[Mapping[str, Any]] = []
        self.get_calls: list[tuple[str, str, str | None]] = []

    async def update_status(self, resource: str, body: Mapping[str, Any],
                            namespace: str | None = None) -> Any:
        assert resource == "replicasets"
        self.update_bodies.append(body)
        r = self.updates.pop(0)
        if isinstance(r, BaseException):
            raise r
        return r if r is not None else {**body, "metadata": {**body["metadata"],
                                                               "resourceVersion": "11"}}

    async def get(self, resource: str, name: str, namespace: str | None = None) -> Any:
        self.get_calls.append((resource, name, namespace))
        r = self.gets.pop(0)
        if isinstance(r, BaseException):
            raise r
        return r


def conflict() -> Conflict:
    return Conflict({"kind": "Status", "reason": "Conflict", "code": 409, "message": "stale"})


async def test_unchanged_status_is_not_written() -> None:
    current = {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1,
               "availableReplicas": 1, "terminatingReplicas": 0, "observedGeneration": 2}
    obj = rs(2, status=current)
    fake = FakeClient([])
    out = await update_replica_set_status(cast(Client, fake), obj, dict(current))
    assert out is obj and fake.update_bodies == []


async def test_generation_change_alone_writes_observed_generation() -> None:
    current = {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2,
               "availableReplicas": 2, "terminatingReplicas": 0, "observedGeneration": 1}
    fake = FakeClient([None])
    await update_replica_set_status(cast(Client, fake), rs(2, status=current, generation=3),
                                    dict(current))
    assert fake.update_bodies[0]["status"]["observedGeneration"] == 3
    # terminatingReplicas absent vs 0 is a change (a pointer upstream).
    current["observedGeneration"] = 3
    fake = FakeClient([None])
    new = {k: v for k, v in current.items() if k != "terminatingReplicas"}
    await update_replica_set_status(cast(Client, fake), rs(2, status=current, generation=3), new)
    assert len(fake.update_bodies) == 1


async def test_update_writes_status_with_the_cached_resource_version() -> None:
    obj = rs(3)
    new = calculate_status(obj, [pod("a")], [], None, now=NOW)
    fake = FakeClient([None])
    out = await update_replica_set_status(cast(Client, fake), obj, new)
    body = fake.update_bodies[0]
    assert body["metadata"]["resourceVersion"] == "10"
    assert body["status"]["replicas"] == 1 and body["status"]["observedGeneration"] == 2
    assert out["metadata"]["resourceVersion"] == "11"
    assert obj["status"] == {}  # the cached object is untouched


async def test_conflict_is_retried_once_on_a_fresh_object() -> None:
    obj = rs(3)
    fresh = {**rs(3, generation=5), "metadata": {**obj["metadata"], "resourceVersion": "20",
                                                  "generation": 5}}
    fake = FakeClient([conflict(), None], [fresh])
    new = calculate_status(obj, [], [], None, now=NOW)
    await update_replica_set_status(cast(Client, fake), obj, new)
    assert fake.get_calls == [("replicasets", "web", "ns")]
    assert [b["metadata"]["resourceVersion"] for b in fake.update_bodies] == ["10", "20"]
    # The generation acted on is the one the status was computed from.
    assert fake.update_bodies[1]["status"]["observedGeneration"] == 2


async def test_second_failure_raises_the_update_error() -> None:
    fake = FakeClient([conflict(), conflict()], [rs(3)])
    with pytest.raises(Conflict):
        await update_replica_set_status(cast(Client, fake), rs(3),
                                        calculate_status(rs(3), [], [], None, now=NOW))
    assert len(fake.update_bodies) == 2


async def test_get_failure_raises_the_get_error() -> None:
    gone = NotFound({"kind": "Status", "reason": "NotFound", "code": 404, "message": "gone"})
    fake = FakeClient([conflict()], [gone])
    with pytest.raises(NotFound):
        await update_replica_set_status(cast(Client, fake), rs(3),
                                        calculate_status(rs(3), [], [], None, now=NOW))


async def test_status_write_leaves_out_go_zero_values() -> None:
    # ReplicaSetStatus: replicas is always sent, terminatingReplicas (a pointer) as 0, the
    # omitempty counters and conditions only when set, as kube-controller-manager's encoder.
    obj = rs(3)
    fake = FakeClient([None])
    await update_replica_set_status(cast(Client, fake), obj,
                                    calculate_status(obj, [pod("a")], [], None, now=NOW))
    assert fake.update_bodies[0]["status"] == {"replicas": 1, "fullyLabeledReplicas": 1,
                                              "terminatingReplicas": 0,
                                              "observedGeneration": 2}


async def test_replica_failure_message_is_upstreams_on_a_failed_delete() -> None:
    # RealPodControl's error reads "unable to delete pods: <cause>" (upstream's wrapping),
    # and that is the ReplicaFailure condition's message.
    class RefusingClient:
        async def delete(self, resource: str, name: str, namespace: str | None = None) -> None:
            raise Forbidden({"kind": "Status", "reason": "Forbidden", "code": 403,
                             "message": f'pods "{name}" is forbidden: no'})

    recorder = cast(EventRecorder, type("R", (), {"eventf": lambda *a: None})())
    control = RealPodControl(cast(Client, RefusingClient()), recorder)
    with pytest.raises(DeletePodError) as info:
        await control.delete_pod("ns", "a", rs(0))
    st = calculate_status(rs(0), [pod("a")], [], info.value, now=NOW)
    cond = get_condition(st, "ReplicaFailure")
    assert cond is not None and (cond["reason"], cond["message"]) == (
        "FailedDelete", 'unable to delete pods: pods "a" is forbidden: no')
