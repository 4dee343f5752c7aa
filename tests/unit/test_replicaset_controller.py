"""ReplicaSetController without a server: informers that are never started (their
caches filled by hand), FakePodControl, a fake client for the status writes, and a
recording queue in place of the work queue. Covers manage_replicas (slow start,
burst cap, expectations, deletion choice), the sync, and the event handlers."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

import pytest

from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.client import Client
from pykcm.client.errors import Forbidden, NotFound
from pykcm.controller import Result
from pykcm.controller.consistency import ConsistencyError, ConsistencyStore, NoopConsistencyStore
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controller.pod_control import FakePodControl
from pykcm.controllers.replicaset import CONTROLLER_UID_INDEX, ReplicaSetController
from pykcm.controllers.replication import ReplicationManager
from pykcm.informers.generic import GenericInformer, GroupVersionResource

NOW = 1_800_000_000.0


def ts(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def informer(group: str, resource: str) -> GenericInformer:
    inf = SharedIndexInformer(cast(Any, None))
    return GenericInformer(GroupVersionResource(group, "v1", resource), inf,
                           GenericLister(inf.get_indexer(), resource))


def make_rs(name: str = "web", replicas: int = 3, *, uid: str | None = None,
            selector: dict[str, Any] | None = None, min_ready: int = 0,
            owner_uid: str | None = None, rv: str = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}",
                            "generation": 1, "resourceVersion": rv}
    if owner_uid is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "dep", "uid": owner_uid, "controller": True}]
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
        "spec": {"replicas": replicas, "minReadySeconds": min_ready,
                 "selector": selector if selector is not None else {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {},
    }


def owner_ref(rs: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
            "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def make_pod(name: str, rs: Mapping[str, Any] | None = None, *, labels: dict[str, str] | None = None,
             ready: bool = True, node: str = "n1", phase: str = "Running", rv: str = "1",
             created: float = NOW - 1000, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv,
        "creationTimestamp": ts(created),
        "labels": labels if labels is not None else (
            {"app": rs["metadata"]["name"]} if rs is not None else {"app": "web"}),
    }
    if rs is not None:
        meta["ownerReferences"] = [owner_ref(rs)]
    if deleting:
        meta["deletionTimestamp"] = ts(NOW)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False",
                 "lastTransitionTime": ts(NOW - 500)}]}}


class RecordingQueue:
    def __init__(self) -> None:
        self.added: list[str] = []
        self.added_after: list[tuple[str, float]] = []

    def add(self, key: str) -> None:
        self.added.append(key)

    def add_after(self, key: str, delay: float) -> None:
        self.added_after.append((key, delay))


class FakeClient:
    """Status writes succeed and are recorded; GETs answer from ``objects``."""

    def __init__(self) -> None:
        self.statuses: list[dict[str, Any]] = []
        self.objects: dict[str, Any] = {}

    async def update_status(self, resource: str, body: Mapping[str, Any],
                            namespace: str | None = None) -> Any:
        self.statuses.append(dict(body["status"]))
        return dict(body)

    async def get(self, resource: str, name: str, namespace: str | None = None) -> Any:
        if name not in self.objects:
            raise NotFound({"kind": "Status", "reason": "NotFound", "code": 404,
                            "message": f"{resource} {name} not found"})
        return self.objects[name]


class Env:
    def __init__(self, burst: int = 500) -> None:
        self.pods = informer("", "pods")
        self.rss = informer("apps", "replicasets")
        self.pod_control = FakePodControl()
        self.client = FakeClient()
        self.ctl = ReplicaSetController(
            pod_informer=self.pods, rs_informer=self.rss, client=cast(Client, self.client),
            recorder=cast(EventRecorder, None), burst_replicas=burst,
            pod_control=self.pod_control, clock=lambda: NOW)
        self.queue = RecordingQueue()
        self.ctl.queue = cast(Any, self.queue)

    def add(self, *objs: dict[str, Any]) -> None:
        for o in objs:
            (self.pods if o["kind"] == "Pod" else self.rss).informer.get_indexer().add(o)
            if o["kind"] == "ReplicaSet":
                self.client.objects[o["metadata"]["name"]] = o


def expectations(env: Env, key: str = "ns/web") -> tuple[int, int] | None:
    exp = env.ctl.expectations.get_expectations(key)
    return None if exp is None else exp.get_expectations()


async def test_name_and_indexes() -> None:
    env = Env()
    assert env.ctl.name == "replicaset"
    assert CONTROLLER_UID_INDEX in env.rss.informer.get_indexer().get_indexers()
    assert env.ctl.health_check() is None


async def test_selector_parsed_once_per_replica_set_generation() -> None:
    """selector_of keeps the parsed selector by UID and generation: the same object (or a
    status-only update) reuses it, a new generation or another ReplicaSet parses anew."""
    env = Env()
    rs = make_rs()
    sel = env.ctl.selector_of(rs)
    assert env.ctl.selector_of(make_rs(rv="2")) is sel
    changed = make_rs(selector={"matchLabels": {"app": "other"}})
    changed["metadata"]["generation"] = 2
    other = env.ctl.selector_of(changed)
    assert other.matches({"app": "other"}) and not other.matches({"app": "web"})
    assert env.ctl.selector_of(make_rs("db")).matches({"app": "db"})
    no_uid = make_rs()
    del no_uid["metadata"]["uid"]
    assert env.ctl.selector_of(no_uid).matches({"app": "web"})
    assert set(env.ctl._selectors) == {("uid-web", 1), ("uid-web", 2), ("uid-db", 1)}


async def test_scale_up_creates_with_controller_ref_and_expects_them() -> None:
    env = Env()
    rs = make_rs(replicas=5)
    env.add(rs)
    err = await env.ctl.manage_replicas([], rs)
    assert err is None
    assert len(env.pod_control.templates) == 5
    assert env.pod_control.controller_refs[0] == owner_ref(rs)
    assert env.pod_control.namespaces == ["ns"] * 5
    assert expectations(env) == (5, 0)


async def test_scale_up_is_capped_at_burst_replicas() -> None:
    env = Env(burst=4)
    rs = make_rs(replicas=10)
    assert await env.ctl.manage_replicas([], rs) is None
    assert len(env.pod_control.templates) == 4
    assert expectations(env) == (4, 0)


async def test_slow_start_stops_after_the_failing_batch() -> None:
    env = Env()
    env.pod_control.create_limit = 3
    rs = make_rs(replicas=10)
    err = await env.ctl.manage_replicas([], rs)
    assert err is not None
    # Batches 1, 2, then 4 (all of which fail): 7 calls, 3 pods created, the
    # rest never attempted.
    assert env.pod_control.create_call_count == 7
    assert len(env.pod_control.templates) == 3
    # Only the 3 created pods are still expected.
    assert expectations(env) == (3, 0)


async def test_namespace_terminating_create_errors_are_not_errors() -> None:
    env = Env()
    env.pod_control.err = Forbidden({
        "kind": "Status", "reason": "Forbidden", "code": 403, "message": "terminating",
        "details": {"causes": [{"reason": "NamespaceTerminating"}]}})
    assert await env.ctl.manage_replicas([], make_rs(replicas=3)) is None
    assert len(env.pod_control.templates) == 3


async def test_scale_down_deletes_not_ready_first_and_tracks_keys() -> None:
    env = Env()
    rs = make_rs(replicas=2)
    pods = [make_pod("ready-old", rs, created=NOW - 10_000),
            make_pod("not-ready", rs, ready=False),
            make_pod("pending", rs, phase="Pending", ready=False),
            make_pod("ready-new", rs, created=NOW - 10)]
    env.add(rs, *pods)
    assert await env.ctl.manage_replicas(list(pods), rs) is None
    assert sorted(env.pod_control.delete_pod_names) == ["not-ready", "pending"]
    assert expectations(env) == (0, 2)
    assert env.ctl.expectations.get_uids("ns/web") == {"ns/not-ready", "ns/pending"}


async def test_scale_down_prefers_pods_on_nodes_crowded_with_the_family() -> None:
    env = Env()
    a = make_rs("a", 1, owner_uid="dep-uid")
    b = make_rs("b", 1, owner_uid="dep-uid")
    pa1, pa2 = make_pod("a1", a, node="n1"), make_pod("a2", a, node="n2")
    # n2 also runs two pods of the sibling ReplicaSet.
    env.add(a, b, pa1, pa2, make_pod("b1", b, node="n2"), make_pod("b2", b, node="n2"))
    assert await env.ctl.manage_replicas([pa1, pa2], a) is None
    assert env.pod_control.delete_pod_names == ["a2"]


async def test_scale_down_is_capped_and_not_found_is_no_error() -> None:
    env = Env(burst=2)
    rs = make_rs(replicas=0)
    pods = [make_pod(f"p{i}", rs) for i in range(5)]
    env.pod_control.err = NotFound({"kind": "Status", "reason": "NotFound", "code": 404,
                                    "message": "gone"})
    assert await env.ctl.manage_replicas(pods, rs) is None
    assert len(env.pod_control.delete_pod_names) == 2
    # Each failed delete was counted as observed.
    assert expectations(env) == (0, 0)


async def test_scale_down_error_is_returned() -> None:
    env = Env()
    rs = make_rs(replicas=1)
    pods = [make_pod("p1", rs), make_pod("p2", rs)]
    env.pod_control.err = RuntimeError("boom")
    err = await env.ctl.manage_replicas(pods, rs)
    assert isinstance(err, RuntimeError)
    assert expectations(env) == (0, 0)


async def test_sync_creates_and_writes_status() -> None:
    env = Env()
    rs = make_rs(replicas=2)
    env.add(rs, make_pod("p1", rs))
    assert await env.ctl.sync_replica_set("ns/web") is None
    assert len(env.pod_control.templates) == 1
    assert env.client.statuses == [{"replicas": 1, "fullyLabeledReplicas": 1,
                                    "readyReplicas": 1, "availableReplicas": 1,
                                    "terminatingReplicas": 0, "observedGeneration": 1}]


async def test_sync_waits_for_expectations_but_still_writes_status() -> None:
    env = Env()
    rs = make_rs(replicas=3)
    env.add(rs)
    env.ctl.expectations.expect_creations("ns/web", 3)
    await env.ctl.sync_replica_set("ns/web")
    assert env.pod_control.templates == []
    assert env.client.statuses[0]["replicas"] == 0


async def test_sync_of_a_deleted_rs_drops_expectations() -> None:
    env = Env()
    env.ctl.expectations.expect_creations("ns/web", 3)
    assert await env.ctl.sync_replica_set("ns/web") is None
    assert expectations(env) is None


async def test_sync_adopts_orphans_and_counts_terminating_pods() -> None:
    env = Env()
    rs = make_rs(replicas=2)
    orphan = make_pod("orphan")
    other_ns = make_pod("elsewhere")
    other_ns["metadata"]["namespace"] = "other"
    env.add(rs, make_pod("mine", rs), orphan, other_ns,
            make_pod("leaving", rs, deleting=True))
    await env.ctl.sync_replica_set("ns/web")
    assert len(env.pod_control.patches) == 1
    patch = env.pod_control.patches[0]
    assert patch["metadata"]["uid"] == "uid-orphan"
    assert patch["metadata"]["ownerReferences"][0]["uid"] == "uid-web"
    assert env.pod_control.templates == []  # mine + adopted = 2
    st = env.client.statuses[0]
    assert (st["replicas"], st["terminatingReplicas"]) == (2, 1)


async def test_sync_releases_pods_that_no_longer_match() -> None:
    env = Env()
    rs = make_rs(replicas=1)
    env.add(rs, make_pod("relabeled", rs, labels={"app": "other"}))
    await env.ctl.sync_replica_set("ns/web")
    patch = env.pod_control.patches[0]
    assert patch["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": "uid-web"}]
    assert len(env.pod_control.templates) == 1  # replaced


async def test_sync_failure_sets_replica_failure_then_raises() -> None:
    env = Env()
    rs = make_rs(replicas=1)
    env.add(rs)
    env.pod_control.err = RuntimeError("exceeded quota")
    with pytest.raises(RuntimeError, match="exceeded quota"):
        await env.ctl.sync_replica_set("ns/web")
    cond = env.client.statuses[0]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "ReplicaFailure", "True", "FailedCreate", "exceeded quota")


async def test_sync_requeues_until_pods_are_available() -> None:
    env = Env()
    rs = make_rs(replicas=1, min_ready=600)  # ready 500 s ago: available in 100 s
    env.add(rs, make_pod("p", rs))
    res = await env.ctl.sync_replica_set("ns/web")
    assert res == Result(requeue_after=100.0)
    st = env.client.statuses[0]
    assert (st["readyReplicas"], st.get("availableReplicas")) == (1, None)  # 0: omitted


async def test_invalid_selector_is_not_retried() -> None:
    env = Env()
    env.add(make_rs(selector={"matchExpressions": [{"key": "a", "operator": "Bogus"}]}))
    assert await env.ctl.sync_replica_set("ns/web") is None
    assert env.client.statuses == [] and env.pod_control.templates == []


# -- handlers ---------------------------------------------------------------------------------

async def test_add_owned_pod_observes_creation() -> None:
    env = Env()
    rs = make_rs()
    env.add(rs)
    env.ctl.expectations.expect_creations("ns/web", 2)
    env.ctl.add_pod(make_pod("p", rs))
    assert expectations(env) == (1, 0)
    assert env.queue.added == ["ns/web"]


async def test_add_pod_of_unknown_owner_is_ignored() -> None:
    env = Env()
    rs = make_rs()
    env.add(rs)
    stale = make_pod("p", make_rs(uid="another-uid"))
    env.ctl.add_pod(stale)
    assert env.queue.added == []


async def test_add_orphan_enqueues_matching_replica_sets() -> None:
    env = Env()
    env.add(make_rs("web"), make_rs("web2", selector={"matchLabels": {"app": "web"}}),
            make_rs("empty", selector={}), make_rs("db"))
    env.ctl.add_pod(make_pod("orphan", labels={"app": "web"}))
    assert sorted(env.queue.added) == ["ns/web", "ns/web2"]
    env.queue.added.clear()
    env.ctl.add_pod(make_pod("nolabels", labels={}))
    assert env.queue.added == []


async def test_add_pod_being_deleted_counts_as_deletion() -> None:
    env = Env()
    rs = make_rs()
    env.add(rs)
    env.ctl.expectations.expect_deletions("ns/web", ["ns/p"])
    env.ctl.add_pod(make_pod("p", rs, deleting=True))
    assert expectations(env) == (0, 0)


async def test_update_with_same_resource_version_is_ignored() -> None:
    env = Env()
    rs = make_rs()
    env.add(rs)
    p = make_pod("p", rs)
    env.ctl.update_pod(p, p)
    assert env.queue.added == []


async def test_update_setting_deletion_timestamp_observes_the_deletion_once() -> None:
    env = Env()
    rs = make_rs()
    env.add(rs)
    env.ctl.expectations.expect_deletions("ns/web", ["ns/p", "ns/q"])
    old = make_pod("p", rs)
    cur = make_pod("p", rs, rv="2", deleting=True)
    env.ctl.update_pod(old, cur)
    assert expectations(env) == (0, 1)
    env.ctl.delete_pod(cur)  # the final delete of the same pod
    assert expectations(env) == (0, 1)
    env.ctl.delete_pod(DeletedFinalStateUnknown("ns/q", make_pod("q", rs)))
    assert expectations(env) == (0, 0)
    assert env.queue.added == ["ns/web"] * 3


async def test_update_deleting_pod_with_new_labels_notifies_both_owners() -> None:
    env = Env()
    a, b = make_rs("a"), make_rs("b")
    env.add(a, b)
    old = make_pod("p", a)
    cur = make_pod("p", b, rv="2", deleting=True)
    env.ctl.update_pod(old, cur)
    assert sorted(env.queue.added) == ["ns/a", "ns/b"]


async def test_controller_ref_change_enqueues_old_and_new_owner() -> None:
    env = Env()
    a, b = make_rs("a"), make_rs("b")
    env.add(a, b)
    env.ctl.update_pod(make_pod("p", a), make_pod("p", b, labels={"app": "a"}, rv="2"))
    assert env.queue.added == ["ns/a", "ns/b"]


async def test_released_pod_is_offered_for_adoption() -> None:
    env = Env()
    a, b = make_rs("a"), make_rs("b", selector={"matchLabels": {"app": "b"}})
    env.add(a, b)
    # Released by a (ref removed) and relabeled: b may adopt it.
    env.ctl.update_pod(make_pod("p", a), make_pod("p", labels={"app": "b"}, rv="2"))
    assert env.queue.added == ["ns/a", "ns/b"]


async def test_orphan_update_without_label_change_enqueues_nothing() -> None:
    env = Env()
    env.add(make_rs("web"))
    env.ctl.update_pod(make_pod("p"), make_pod("p", rv="2", ready=False))
    assert env.queue.added == []


async def test_pod_turning_ready_with_min_ready_seconds_enqueues_later() -> None:
    env = Env()
    rs = make_rs(min_ready=30)
    env.add(rs)
    env.ctl.update_pod(make_pod("p", rs, ready=False), make_pod("p", rs, rv="2"))
    assert env.queue.added == ["ns/web"]
    assert env.queue.added_after == [("ns/web", 30.0)]
    # Without minReadySeconds there is nothing to wait for.
    env2 = Env()
    rs2 = make_rs()
    env2.add(rs2)
    env2.ctl.update_pod(make_pod("p", rs2, ready=False), make_pod("p", rs2, rv="2"))
    assert env2.queue.added_after == []


async def test_orphan_deletion_is_ignored() -> None:
    env = Env()
    env.add(make_rs())
    env.ctl.delete_pod(make_pod("p"))
    assert env.queue.added == []


async def test_rs_handlers() -> None:
    env = Env()
    rs = make_rs()
    env.ctl.add_rs(rs)
    env.ctl.update_rs(rs, make_rs(replicas=5, rv="2"))
    assert env.queue.added == ["ns/web", "ns/web"]
    env.ctl.expectations.expect_creations("ns/web", 3)
    # Recreated under the same name: the old one's expectations go.
    env.ctl.update_rs(rs, make_rs(uid="new-uid", rv="3"))
    assert expectations(env) is None
    env.ctl.expectations.expect_creations("ns/web", 3)
    env.ctl.delete_rs(DeletedFinalStateUnknown("ns/web", rs))
    assert expectations(env) is None
    assert env.queue.added[-1] == "ns/web"


class WritingClient(FakeClient):
    """Creates pods and writes statuses, each answer with the next resourceVersion."""

    def __init__(self) -> None:
        super().__init__()
        self.rv = 40

    def _next(self, body: Mapping[str, Any], **meta: Any) -> dict[str, Any]:
        self.rv += 1
        return {**body, "metadata": {**body["metadata"], **meta,
                                     "resourceVersion": str(self.rv)}}

    async def create(self, resource: str, body: Mapping[str, Any],
                     namespace: str | None = None) -> Any:
        return self._next(body, name=f"web-{self.rv + 1}", namespace=namespace)

    async def update_status(self, resource: str, body: Mapping[str, Any],
                            namespace: str | None = None) -> Any:
        self.statuses.append(dict(body["status"]))
        return self._next(body)


class NullRecorder:
    def eventf(self, *args: Any) -> None:
        pass


async def test_sync_waits_until_the_caches_hold_its_own_writes() -> None:
    # StaleControllerConsistencyReplicaSet (KEP-5647, on in v1.36): the pods created
    # (through RealPodControl's on_write) and the status written are remembered; the next
    # sync fails, to be retried, while a cache is older than them.
    pods, rss, client = informer("", "pods"), informer("apps", "replicasets"), WritingClient()
    ctl = ReplicaSetController(pod_informer=pods, rs_informer=rss, client=cast(Client, client),
                               recorder=cast(EventRecorder, NullRecorder()), clock=lambda: NOW)
    read = {"pods": "40", "replicasets.apps": "40"}
    ctl.consistency = ConsistencyStore({"pods": lambda: read["pods"],
                                        "replicasets.apps": lambda: read["replicasets.apps"]})
    rss.informer.get_indexer().add(make_rs(replicas=2, rv="40"))
    await ctl.sync_replica_set("ns/web")
    assert len(client.statuses) == 1 and client.rv == 43  # pods at 41 and 42, status 43
    with pytest.raises(ConsistencyError, match="read version: 40 is not as new as written "
                                               "version: 42 for group resource pods"):
        await ctl.sync_replica_set("ns/web")
    read["pods"] = "42"
    with pytest.raises(ConsistencyError, match="written version: 43 for group resource "
                                               "replicasets.apps"):
        await ctl.sync_replica_set("ns/web")
    read["replicasets.apps"] = "43"
    await ctl.sync_replica_set("ns/web")  # caught up: the sync runs
    # A deleted ReplicaSet's record goes with it.
    ctl.consistency.wrote_at("ns/web", "uid-web", "pods", "99")
    ctl.delete_rs(make_rs())
    await ctl.sync_replica_set("ns/web")


def test_replication_manager_has_no_consistency_store() -> None:
    # Upstream passes the ReplicationManager a no-op store.
    rcm = ReplicationManager(pod_informer=informer("", "pods"),
                             rc_informer=informer("", "replicationcontrollers"),
                             client=cast(Client, FakeClient()),
                             recorder=cast(EventRecorder, NullRecorder()))
    assert isinstance(rcm.consistency, NoopConsistencyStore)
    assert isinstance(Env().ctl.consistency, ConsistencyStore)
