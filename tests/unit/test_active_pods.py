"""pykcm.controller.active_pods: deletion ranking (each tie-breaker), filters, the
podController index, availability checks."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from pykcm.api.labels import selector_from_set
from pykcm.api.pod_util import pod_phase_and_ready
from pykcm.api.timestamps import parse_time
from pykcm.cache.frozen_object import FrozenObject
from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.store import new_indexer
from pykcm.controller.active_pods import (
    POD_CONTROLLER_INDEX,
    ActivePodsWithRanks,
    active_pods_sort_key,
    add_pod_controller_indexer,
    filter_active_pods,
    filter_claimed_pods,
    filter_pods_by_owner,
    filter_terminating_pods,
    find_min_next_pod_availability_check,
    get_deletion_cost_from_pod_annotations,
    get_pods_ranked_by_related_pods_on_same_node,
    is_pod_terminating,
    logarithmic_rank_diff,
    next_pod_availability_check,
    pod_controller_index_key,
    sort_pods_for_deletion,
    split_active_and_terminating,
)
from pykcm.controllers.replicaset.replica_set_utils import calculate_status

NOW = 1_800_000_000.0


def ts(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def pod(name: str, *, node: str = "n1", phase: str = "Running", ready: bool = True,
        ready_at: float | None = NOW - 3600, created: float | None = NOW - 7200,
        restarts: int = 0, sidecar_restarts: int = 0, cost: str | None = None,
        uid: str | None = None, owner: dict[str, Any] | None = None,
        labels: dict[str, str] | None = None, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}",
                            "labels": labels if labels is not None else {"app": "a"}}
    if created is not None:
        meta["creationTimestamp"] = ts(created)
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    if deleting:
        meta["deletionTimestamp"] = ts(NOW)
    cond: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
    if ready_at is not None:
        cond["lastTransitionTime"] = ts(ready_at)
    return {
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c"}],
                 "initContainers": [{"name": "side", "restartPolicy": "Always"},
                                    {"name": "init"}]},
        "status": {"phase": phase, "conditions": [cond],
                   "containerStatuses": [{"name": "c", "restartCount": restarts}],
                   "initContainerStatuses": [{"name": "side", "restartCount": sidecar_restarts},
                                             {"name": "init", "restartCount": 50}]},
    }


def first(a: dict[str, Any], b: dict[str, Any], rank_a: int = 0, rank_b: int = 0,
          now: float | None = NOW) -> str:
    """The name of the pod deleted first, checked in both orders."""
    names: list[str] = []
    for pods, ranks in (([a, b], [rank_a, rank_b]), ([b, a], [rank_b, rank_a])):
        ranked = ActivePodsWithRanks(list(pods), list(ranks), now)
        ranked.sort()
        names.append(str(ranked.pods[0]["metadata"]["name"]))
        # less() agrees with the sort, and is a strict order on the pair.
        assert ranked.less(0, 1) and not ranked.less(1, 0)
    assert names[0] == names[1], "the order depends on the input order"
    return names[0]


def test_unassigned_before_assigned() -> None:
    assert first(pod("assigned", phase="Pending"), pod("unassigned", node="")) == "unassigned"


def test_phase_pending_unknown_running() -> None:
    assert first(pod("running", phase="Running"), pod("unknown", phase="Unknown")) == "unknown"
    assert first(pod("unknown", phase="Unknown"), pod("pending", phase="Pending")) == "pending"


def test_not_ready_before_ready() -> None:
    assert first(pod("ready", cost="-100"), pod("notready", ready=False)) == "notready"


def test_lower_deletion_cost_first() -> None:
    assert first(pod("dear", cost="10"), pod("cheap", cost="-5")) == "cheap"
    assert first(pod("dear", cost="1"), pod("nocost")) == "nocost"


def test_deletion_cost_beats_rank() -> None:
    assert first(pod("crowded", cost="5"), pod("alone"), rank_a=9, rank_b=1) == "alone"


def test_higher_rank_first() -> None:
    assert first(pod("alone"), pod("crowded"), rank_a=1, rank_b=3) == "crowded"


def test_rank_beats_ready_time() -> None:
    assert first(pod("newly-ready", ready_at=NOW - 1), pod("crowded", ready_at=NOW - 10**6),
                 rank_a=1, rank_b=2) == "crowded"


def test_more_recently_ready_first() -> None:
    # 100 s and 10,000 s ago: different power-of-two buckets.
    assert first(pod("old", ready_at=NOW - 10_000), pod("recent", ready_at=NOW - 100)) == "recent"


def test_ready_time_same_log_bucket_breaks_ties_by_uid() -> None:
    # 1000 s and 1001 s ago share a log2 bucket (of nanoseconds): the lower UID goes first.
    a = pod("a", ready_at=NOW - 1000, uid="uid-b", restarts=0)
    b = pod("b", ready_at=NOW - 1001, uid="uid-a", restarts=9)
    assert logarithmic_rank_diff(NOW - 1000, NOW - 1001, NOW) == 0
    assert first(a, b) == "b"


def test_unknown_ready_time_first_and_exact_times_without_now() -> None:
    assert first(pod("known", ready_at=NOW - 5), pod("unknown", ready_at=None)) == "unknown"
    # Without "now" the exact times are compared: later first.
    assert first(pod("a", ready_at=NOW - 1000), pod("b", ready_at=NOW - 1001), now=None) == "a"


def test_more_restarts_first() -> None:
    assert first(pod("calm", restarts=1), pod("crashy", restarts=4)) == "crashy"


def test_sidecar_restarts_break_regular_ties() -> None:
    assert first(pod("calm", sidecar_restarts=0), pod("side", sidecar_restarts=2)) == "side"
    # A restarting regular init container (no restartPolicy Always) does not count:
    # the newer pod goes first although the other's "init" restarted 50 times.
    quiet_init = pod("a", created=NOW - 100)
    quiet_init["status"]["initContainerStatuses"][1]["restartCount"] = 0
    assert first(pod("b", created=NOW - 10_000), quiet_init) == "a"


def test_newer_first() -> None:
    assert first(pod("old", created=NOW - 100_000), pod("new", created=NOW - 100)) == "new"
    assert first(pod("dated", created=NOW - 100), pod("undated", created=None)) == "undated"


def test_creation_same_log_bucket_breaks_ties_by_uid() -> None:
    a = pod("a", created=NOW - 5000, uid="uid-2")
    b = pod("b", created=NOW - 5001, uid="uid-1")
    assert first(a, b) == "b"
    assert first(a, b, now=None) == "a"  # exact: the newer


def test_not_ready_pods_skip_the_ready_time() -> None:
    a = pod("a", ready=False, ready_at=NOW - 1, created=NOW - 100_000)
    b = pod("b", ready=False, ready_at=NOW - 100_000, created=NOW - 10)
    assert first(a, b) == "b"


def test_full_order() -> None:
    want = [
        pod("unassigned", node="", phase="Pending", ready=False),
        pod("pending", phase="Pending", ready=False),
        pod("unknown", phase="Unknown", ready=False),
        pod("notready", ready=False),
        pod("cheap", cost="-1"),
        pod("crowded"),
        pod("recent", ready_at=NOW - 60),
        pod("crashy", restarts=3),
        pod("new", created=NOW - 100),
        pod("old", created=NOW - 10**7),
    ]
    for p in want[1:]:  # one node each; "crowded" shares its node with two more
        p["spec"]["nodeName"] = "node-" + p["metadata"]["name"]
    related = [*want, pod("x", node="node-crowded"), pod("y", node="node-crowded")]
    rng = random.Random(7)
    for _ in range(20):
        shuffled = list(want)
        rng.shuffle(shuffled)
        got = sort_pods_for_deletion(shuffled, related, NOW)
        assert [p["metadata"]["name"] for p in got] == [p["metadata"]["name"] for p in want]


def test_ranks_count_active_related_pods_on_node() -> None:
    mine = [pod("a", node="n1"), pod("b", node="n2"), pod("c", node="")]
    related = [*mine, pod("x", node="n1"), pod("y", node="n1", deleting=True),
               pod("z", node="n1", phase="Succeeded")]
    ranked = get_pods_ranked_by_related_pods_on_same_node(mine, related, NOW)
    assert ranked.rank == [2, 1, 1]
    assert len(ranked) == 3
    assert ranked.less(2, 0)  # unassigned first


def test_ranks_and_pods_stay_parallel_after_sort() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    ranked = ActivePodsWithRanks(pods, [1, 5, 3], NOW)
    ranked.sort()
    assert [p["metadata"]["name"] for p in ranked.pods] == ["b", "c", "a"]
    assert ranked.rank == [5, 3, 1]
    with pytest.raises(ValueError):
        ActivePodsWithRanks([pod("a")], [], NOW)


@pytest.mark.parametrize(("value", "cost"), [
    ("10", 10), ("-10", -10), ("0", 0), ("+10", 0), ("008", 0), ("", 0), ("abc", 0),
    ("2147483647", 2147483647), ("2147483648", 0), ("-2147483648", -2147483648), ("1.5", 0),
    ("-", 0),
])
def test_deletion_cost_parsing(value: str, cost: int) -> None:
    ann = {"controller.kubernetes.io/pod-deletion-cost": value}
    assert get_deletion_cost_from_pod_annotations(ann) == cost
    assert get_deletion_cost_from_pod_annotations(None) == 0


def test_active_pods_sort_key_order() -> None:
    want = [
        pod("unassigned", node=""),
        pod("pending", phase="Pending"),
        pod("notready", ready=False),
        pod("no-ready-time", ready_at=None),
        pod("recent", ready_at=NOW - 10),
        pod("crashy", restarts=2),
        pod("side", sidecar_restarts=1),
        pod("undated", created=None),
        pod("new", created=NOW - 100),
        pod("old"),
    ]
    shuffled = list(reversed(want))
    assert [p["metadata"]["name"] for p in sorted(shuffled, key=active_pods_sort_key)] == [
        p["metadata"]["name"] for p in want]


def test_filters() -> None:
    rs = {"metadata": {"name": "rs", "namespace": "ns", "uid": "rs-uid"}}
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid",
           "controller": True}
    active = pod("active", owner=ref)
    done = pod("done", phase="Succeeded", owner=ref)
    terminating = pod("terminating", deleting=True, owner=ref)
    finished_deleting = pod("finished", deleting=True, phase="Failed", owner=ref)
    other_labels = pod("other", deleting=True, owner=ref, labels={"app": "b"})
    orphan = pod("orphan", deleting=True)
    pods = [active, done, terminating, finished_deleting, other_labels, orphan]
    assert filter_active_pods(pods) == [active]
    assert filter_terminating_pods(pods) == [terminating, other_labels, orphan]
    assert is_pod_terminating(terminating) and not is_pod_terminating(finished_deleting)
    assert filter_claimed_pods(rs, selector_from_set({"app": "a"}),
                               filter_terminating_pods(pods)) == [terminating]
    # the one-pass split a sync uses answers both filters at once
    assert split_active_and_terminating(pods) == (filter_active_pods(pods),
                                                  filter_terminating_pods(pods))
    assert split_active_and_terminating([]) == ([], [])


def test_pod_controller_index() -> None:
    indexer = new_indexer(meta_namespace_key)
    add_pod_controller_indexer(indexer)
    add_pod_controller_indexer(indexer)  # idempotent
    assert POD_CONTROLLER_INDEX in indexer.get_indexers()
    rs = {"metadata": {"name": "rs", "namespace": "ns", "uid": "u1"}}
    ref = {"kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}
    other_ref = {"kind": "ReplicaSet", "name": "rs", "uid": "u2", "controller": True}
    mine = pod("mine", owner=ref)
    orphan = pod("orphan")
    foreign = pod("foreign", owner=other_ref)
    elsewhere = pod("elsewhere")
    elsewhere["metadata"]["namespace"] = "other"
    for p in (mine, orphan, foreign, elsewhere):
        indexer.add(p)
    assert pod_controller_index_key("ns", ref) == "ns/ReplicaSet/rs/u1"
    assert pod_controller_index_key("ns", None) == "ns"
    assert filter_pods_by_owner(indexer, rs, "ReplicaSet", False) == [mine]
    assert filter_pods_by_owner(indexer, rs, "ReplicaSet", True) == [mine, orphan]
    with pytest.raises(ValueError, match="uid"):
        filter_pods_by_owner(indexer, {"metadata": {"name": "rs", "namespace": "ns"}},
                             "ReplicaSet", True)
    with pytest.raises(ValueError, match="kind"):
        filter_pods_by_owner(indexer, rs, "", True)


def test_availability_checks() -> None:
    ready_10s_ago = pod("a", ready_at=NOW - 10)
    ready_25s_ago = pod("b", ready_at=NOW - 25)
    long_ready = pod("c", ready_at=NOW - 1000)
    not_ready = pod("d", ready=False, ready_at=NOW - 1)
    assert next_pod_availability_check(ready_10s_ago, 30, NOW) == 20
    assert next_pod_availability_check(long_ready, 30, NOW) is None
    assert next_pod_availability_check(not_ready, 30, NOW) is None
    assert next_pod_availability_check(ready_10s_ago, 0, NOW) is None
    pods = [ready_10s_ago, ready_25s_ago, long_ready, not_ready]
    # b becomes available first (in 5 s); measured again at the clock's time.
    assert find_min_next_pod_availability_check(pods, 30, NOW, lambda: NOW + 2) == 3
    # That moment has passed by the time the clock is read: check at once.
    assert find_min_next_pod_availability_check(pods, 30, NOW, lambda: NOW + 6) == 0
    assert find_min_next_pod_availability_check([long_ready], 30, NOW, lambda: NOW) is None


def test_compact_pods_give_the_same_split_and_status_as_dicts() -> None:
    # a ReplicaSet sync reads each pod's phase and Ready condition through
    # pod_phase_and_ready, which a compact cached pod keeps once read (FrozenObject.memo)
    def pod(i: int, phase: str | None, ready: str | None, deleted: bool = False,
            ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": f"p{i}", "namespace": "ns", "labels": {"app": "a"}}
        if deleted:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        status: dict[str, Any] = {} if phase is None else {"phase": phase}
        if ready is not None:
            status["conditions"] = [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": ready,
                 "lastTransitionTime": f"2026-01-01T00:00:0{i % 10}Z"}]
        return {"metadata": meta, "spec": {}, "status": status}

    dicts = [pod(0, "Running", "True"), pod(1, "Running", "False"), pod(2, "Pending", None),
             pod(3, "Succeeded", "False"), pod(4, "Failed", None), pod(5, None, None),
             pod(6, "Running", "True", deleted=True), pod(7, "Running", "True")]
    frozen: list[Any] = [FrozenObject.from_dict(p) for p in dicts]
    assert [pod_phase_and_ready(p) for p in frozen] == [pod_phase_and_ready(p) for p in dicts]
    assert pod_phase_and_ready(dicts[0]) == ("Running", "True", "2026-01-01T00:00:00Z")
    assert pod_phase_and_ready(dicts[2]) == ("Pending", None, None)
    rs = {"metadata": {"name": "rs", "namespace": "ns"},
          "spec": {"replicas": 5, "minReadySeconds": 5,
                   "template": {"metadata": {"labels": {"app": "a"}}}}, "status": {}}
    for _ in range(2):  # the second time from the kept values
        da, dt = split_active_and_terminating(dicts)
        fa, ft = split_active_and_terminating(frozen)
        assert [p["metadata"]["name"] for p in fa] == [p["metadata"]["name"] for p in da] \
            == ["p0", "p1", "p2", "p5", "p7"]
        assert [p["metadata"]["name"] for p in ft] == ["p6"]
        now = parse_time("2026-01-01T00:00:06Z")
        assert calculate_status(rs, fa, ft, None, now=now) == \
            calculate_status(rs, da, dt, None, now=now)
        assert calculate_status(rs, fa, ft, None, now=now)["availableReplicas"] == 1


def test_pod_node_name_and_terminated_read_the_same_on_compact_pods() -> None:
    # the pod garbage collector's per-pass reads of every cached pod; a compact pod keeps
    # its node name and phase once read (FrozenObject.memo) instead of decoding spec/status
    from pykcm.api.pod_util import pod_node_name
    from pykcm.controllers.podgc.gc_controller import is_pod_terminated

    dicts: list[dict[str, Any]] = [
        {"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "b"}, "spec": {}, "status": {"phase": "Succeeded"}},
        {"metadata": {"name": "c"}, "spec": {"nodeName": None}, "status": {}},
        {"metadata": {"name": "d"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Failed"}}]
    frozen: list[Any] = [FrozenObject.from_dict(p) for p in dicts]
    for _ in range(2):  # the second time from the kept values
        assert [pod_node_name(p) for p in frozen] == [pod_node_name(p) for p in dicts] \
            == ["n1", "", "", "n1"]
        assert [is_pod_terminated(p) for p in frozen] == \
            [is_pod_terminated(p) for p in dicts] == [False, True, True, True]
    assert pod_node_name(frozen[0]) is pod_node_name(frozen[3])  # one string per node
