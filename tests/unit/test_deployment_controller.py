"""DeploymentController.sync_deployment and its handlers, on fake informers and a fake client.

No API server: the informers' caches are filled by hand, the client records
every write (and can be told to fail), and the recorder keeps the events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pykcm.cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.listers import GenericLister
from pykcm.cache.store import new_indexer
from pykcm.client.errors import ApiError, Forbidden
from pykcm.controller.replica_set_control import FakeRSControl
from pykcm.controllers.deployment import DeploymentController
from pykcm.controllers.deployment import util as du
from pykcm.controllers.deployment.progress import requeue_stuck_deployment
from pykcm.controllers.deployment.sync import generate_replica_set_name

UID = "d-uid"


class _Reg:
    def has_synced(self) -> bool:
        return True


class FakeInformer:
    """A GenericInformer look-alike: an indexer filled by the test, handlers kept."""

    def __init__(self, resource: str) -> None:
        self.indexer = new_indexer(meta_namespace_key,
                                   {NAMESPACE_INDEX: meta_namespace_index_func})
        self.lister = GenericLister(self.indexer, resource)
        self.handlers: list[Any] = []

    @property
    def informer(self) -> FakeInformer:
        return self

    def get_indexer(self) -> Any:
        return self.indexer

    def get_indexers(self) -> Any:
        return self.indexer.get_indexers()

    def add_indexers(self, indexers: Any) -> None:
        self.indexer.add_indexers(indexers)

    def add_event_handler(self, handler: Any, resync_period: float | None = None) -> _Reg:
        self.handlers.append(handler)
        return _Reg()

    def add(self, *objs: dict[str, Any]) -> None:
        for o in objs:
            self.indexer.add(o)


class FakeClient:
    """Records writes as (verb, resource, body); ``fail_create`` is raised by create."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.fail_create: BaseException | None = None
        self.rv = 100

    def _stamp(self, body: Mapping[str, Any]) -> dict[str, Any]:
        out = du.deep_copy(body)
        self.rv += 1
        out.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        return out

    async def create(self, resource: str, body: Mapping[str, Any],
                     namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("create", resource, du.deep_copy(body)))
        if self.fail_create is not None:
            raise self.fail_create
        out = self._stamp(body)
        out["metadata"]["uid"] = "new-uid"
        return out

    async def update(self, resource: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("update", resource, du.deep_copy(body)))
        return self._stamp(body)

    async def update_status(self, resource: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("update_status", resource, du.deep_copy(body)))
        return self._stamp(body)

    async def patch(self, resource: str, name: str, body: Any, patch_type: str = "merge",
                    namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("patch", resource, body))
        return {"metadata": {"name": name, "resourceVersion": "1"}}

    async def delete(self, resource: str, name: str, namespace: str | None = None) -> None:
        self.calls.append(("delete", resource, name))

    def writes(self, verb: str, resource: str = "") -> list[Any]:
        return [b for v, r, b in self.calls if v == verb and r.startswith(resource)]


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))

    def eventf(self, obj: Mapping[str, Any], type_: str, reason: str, fmt: str,
               *args: Any) -> None:
        self.event(obj, type_, reason, fmt % args)


class Harness:
    def __init__(self) -> None:
        self.d_inf = FakeInformer("deployments")
        self.rs_inf = FakeInformer("replicasets")
        self.pod_inf = FakeInformer("pods")
        self.client = FakeClient()
        self.recorder = FakeRecorder()
        self.rs_control = FakeRSControl()
        self.dc = DeploymentController(
            deployment_informer=cast(Any, self.d_inf), rs_informer=cast(Any, self.rs_inf),
            pod_informer=cast(Any, self.pod_inf), client=cast(Any, self.client),
            recorder=cast(Any, self.recorder), rs_control=self.rs_control)
        self.enqueued: list[tuple[str, float | None]] = []
        self.dc.enqueue = lambda d: self.enqueued.append(  # type: ignore[method-assign]
            (d["metadata"]["name"], None))
        self.dc.enqueue_after = lambda d, after: self.enqueued.append(  # type: ignore[method-assign]
            (d["metadata"]["name"], after))


def template(image: str, h: str | None = None) -> dict[str, Any]:
    labels = {"app": "web"}
    if h is not None:
        labels["pod-template-hash"] = h
    return {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": image}]}}


def deployment(image: str = "nginx:2", replicas: int = 3, strategy: str = "RollingUpdate",
               surge: int | str = "25%", unavailable: int | str = "25%",
               **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                         "template": template(image), "revisionHistoryLimit": 10,
                         "progressDeadlineSeconds": 600}
    s["strategy"] = ({"type": strategy, "rollingUpdate": {"maxSurge": surge,
                                                          "maxUnavailable": unavailable}}
                     if strategy == "RollingUpdate" else {"type": strategy})
    s.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": UID, "generation": 1,
                         "resourceVersion": "1"},
            "spec": s, "status": {}}


def replica_set(name: str, image: str, replicas: int, available: int | None = None,
                revision: str = "1", created: str = "2026-01-01T00:00:00Z",
                owned: bool = True) -> dict[str, Any]:
    avail = replicas if available is None else available
    meta: dict[str, Any] = {
        "name": name, "namespace": "ns", "uid": f"{name}-uid", "creationTimestamp": created,
        "resourceVersion": "5", "generation": 1, "labels": {"app": "web", "pod-template-hash": name},
        "annotations": {du.REVISION_ANNOTATION: revision}}
    if owned:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web", "uid": UID, "controller": True}]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": template(image, name)},
            "status": {"replicas": replicas, "availableReplicas": avail,
                       "readyReplicas": avail, "observedGeneration": 1}}


def pod(name: str, owner: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": owner, "uid": f"{owner}-uid",
                                              "controller": True}]},
            "status": {"phase": phase}}


async def test_empty_selector_warns_and_only_observes_generation() -> None:
    h = Harness()
    d = deployment()
    d["spec"]["selector"] = {}
    d["metadata"]["generation"] = 3
    h.d_inf.add(d)
    await h.dc.sync_deployment("ns/web")
    msg = "This deployment is selecting all pods. A non-empty selector is required."
    assert h.recorder.events == [("Warning", "SelectingAll", msg)]
    (st,) = h.client.writes("update_status")
    assert st["status"] == {"observedGeneration": 3}
    assert not h.client.writes("create")


async def test_missing_deployment_is_a_no_op() -> None:
    h = Harness()
    await h.dc.sync_deployment("ns/gone")
    assert h.client.calls == []


async def test_create_failure_reports_replica_set_create_error() -> None:
    h = Harness()
    h.d_inf.add(deployment())
    h.client.fail_create = Forbidden({"kind": "Status", "code": 403, "reason": "Forbidden",
                                      "message": "exceeded quota"})
    try:
        await h.dc.sync_deployment("ns/web")
    except ApiError:
        pass
    else:
        raise AssertionError("the create error must send the key back to the queue")
    (st,) = h.client.writes("update_status")
    cond = du.get_deployment_condition(st["status"], du.PROGRESSING)
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "False", du.FAILED_RS_CREATE_REASON)
    assert cond["message"].startswith('Failed to create new replica set "web-')
    assert [(t, r) for t, r, _ in h.recorder.events] == [("Warning", du.FAILED_RS_CREATE_REASON)]


async def test_new_deployment_creates_replica_set_and_condition() -> None:
    h = Harness()
    h.d_inf.add(deployment(replicas=3))
    await h.dc.sync_deployment("ns/web")
    (rs,) = h.client.writes("create", "replicasets")
    assert rs["spec"]["replicas"] == 3
    statuses = h.client.writes("update_status")
    cond = du.get_deployment_condition(statuses[0]["status"], du.PROGRESSING)
    assert cond is not None and cond["reason"] == du.NEW_RS_REASON
    assert statuses[0]["metadata"]["annotations"][du.REVISION_ANNOTATION] == "1"
    assert ("Normal", "ScalingReplicaSet",
            f"Scaled up replica set {rs['metadata']['name']} from 0 to 3") in h.recorder.events


async def test_long_deployment_name_is_cut_to_fit_the_replica_set_name() -> None:
    """generateReplicaSetName: <name cut to 253 - 1 - len(hash)>-<hash> (the differential
    test deployment-long-name: kube-controller-manager rolls a 250-character name out)."""
    assert generate_replica_set_name("web", "abc") == "web-abc"
    name = "n" * 250
    assert generate_replica_set_name(name, "5d8c7b9f6") == "n" * 243 + "-5d8c7b9f6"
    assert generate_replica_set_name("n" * 243, "5d8c7b9f6") == "n" * 243 + "-5d8c7b9f6"
    h = Harness()
    d = deployment(replicas=1)
    d["metadata"]["name"] = name
    h.d_inf.add(d)
    await h.dc.sync_deployment(f"ns/{name}")
    (rs,) = h.client.writes("create", "replicasets")
    rs_name = rs["metadata"]["name"]
    hash_ = rs["metadata"]["labels"]["pod-template-hash"]
    assert len(rs_name) == 253 and rs_name == f"{name[:252 - len(hash_)]}-{hash_}"


async def test_recreate_waits_for_old_pods_to_be_gone() -> None:
    h = Harness()
    h.d_inf.add(deployment(strategy="Recreate"))
    old = replica_set("old", "nginx:1", 0)
    h.rs_inf.add(old)
    h.pod_inf.add(pod("p1", "old"))
    await h.dc.sync_deployment("ns/web")
    assert not h.client.writes("create")        # an old pod still runs
    # A finished pod does not count.
    h.pod_inf.add(pod("p1", "old", phase="Succeeded"))
    await h.dc.sync_deployment("ns/web")
    (rs,) = h.client.writes("create", "replicasets")
    assert rs["spec"]["replicas"] == 3


async def test_recreate_scales_old_down_first() -> None:
    h = Harness()
    h.d_inf.add(deployment(strategy="Recreate"))
    h.rs_inf.add(replica_set("old", "nginx:1", 3))
    await h.dc.sync_deployment("ns/web")
    (upd,) = h.client.writes("update", "replicasets")
    assert upd["metadata"]["name"] == "old" and upd["spec"]["replicas"] == 0
    assert not h.client.writes("create")
    assert ("Normal", "ScalingReplicaSet", "Scaled down replica set old from 3 to 0") in (
        h.recorder.events)


async def test_recreate_deployment_enqueued_when_its_last_pod_goes() -> None:
    h = Harness()
    h.d_inf.add(deployment(strategy="Recreate"))
    h.rs_inf.add(replica_set("old", "nginx:1", 0))
    p1, p2 = pod("p1", "old"), pod("p2", "old")
    h.pod_inf.add(p1, p2)
    handler = h.pod_inf.handlers[0]
    h.pod_inf.indexer.delete(p1)
    handler.on_delete(p1)
    assert h.enqueued == []                       # p2 is still there
    h.pod_inf.indexer.delete(p2)
    handler.on_delete(p2)
    assert h.enqueued == [("web", None)]


async def test_unhealthy_old_replicas_are_cleaned_up_first() -> None:
    h = Harness()
    # 10 replicas, surge 3, unavailable 2 (minAvailable 8); old has 4 unhealthy.
    h.d_inf.add(deployment(replicas=10, surge=3, unavailable=2))
    h.rs_inf.add(replica_set("old", "nginx:1", 10, available=6),
                 replica_set("new", "nginx:2", 3, available=0, revision="2",
                             created="2026-01-02T00:00:00Z"))
    await h.dc.sync_deployment("ns/web")
    # 13 pods - 8 needed - 3 new unavailable: 2 may go, taken from the unhealthy ones.
    (upd,) = h.client.writes("update", "replicasets")
    assert (upd["metadata"]["name"], upd["spec"]["replicas"]) == ("old", 8)


async def test_scaling_event_scales_proportionally() -> None:
    h = Harness()
    h.d_inf.add(deployment(replicas=20, surge=3, unavailable=2))
    old = replica_set("old", "nginx:1", 8)
    new = replica_set("new", "nginx:2", 5, available=0, revision="2",
                      created="2026-01-02T00:00:00Z")
    for r in (old, new):
        r["metadata"]["annotations"].update({du.DESIRED_REPLICAS_ANNOTATION: "10",
                                             du.MAX_REPLICAS_ANNOTATION: "13"})
    h.rs_inf.add(old, new)
    await h.dc.sync_deployment("ns/web")
    sizes = {u["metadata"]["name"]: u["spec"]["replicas"]
             for u in h.client.writes("update", "replicasets")}
    assert sizes == {"old": 14, "new": 9}


async def test_paused_deployment_gets_paused_condition_and_no_rollout() -> None:
    h = Harness()
    h.d_inf.add(deployment(paused=True))
    h.rs_inf.add(replica_set("old", "nginx:1", 3))
    await h.dc.sync_deployment("ns/web")
    assert not h.client.writes("create")
    first = h.client.writes("update_status")[0]
    cond = du.get_deployment_condition(first["status"], du.PROGRESSING)
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
        "Unknown", du.PAUSED_DEPLOY_REASON, "Deployment is paused")


async def test_resumed_deployment_gets_resumed_condition() -> None:
    h = Harness()
    d = deployment()
    d["status"] = {"conditions": [du.new_deployment_condition(
        du.PROGRESSING, "Unknown", du.PAUSED_DEPLOY_REASON, "Deployment is paused")]}
    h.d_inf.add(d)
    await h.dc.sync_deployment("ns/web")
    first = h.client.writes("update_status")[0]
    cond = du.get_deployment_condition(first["status"], du.PROGRESSING)
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "Unknown", du.RESUMED_DEPLOY_REASON)


async def test_status_writes_of_one_sync_carry_the_resource_version_read() -> None:
    """As upstream (UpdateStatus's answer is dropped): after DeploymentResumed, the write of
    the new ReplicaSet's NewReplicaSetCreated has the cached resourceVersion, so a real API
    server refuses it with 409 and users never see that reason after a resume (the
    differential test deployment-pause-resume shows it on kube-controller-manager)."""
    h = Harness()
    d = deployment()
    d["status"] = {"conditions": [du.new_deployment_condition(
        du.PROGRESSING, "Unknown", du.PAUSED_DEPLOY_REASON, "Deployment is paused")]}
    h.d_inf.add(d)
    h.rs_inf.add(replica_set("old", "nginx:1", 3))
    await h.dc.sync_deployment("ns/web")
    writes = h.client.writes("update_status")
    reasons = [du.get_deployment_condition(w["status"], du.PROGRESSING)["reason"]  # type: ignore[index]
               for w in writes]
    assert reasons[:2] == [du.RESUMED_DEPLOY_REASON, du.NEW_RS_REASON]
    assert {w["metadata"]["resourceVersion"] for w in writes} == {"1"}


async def test_deprecated_rollback_annotation_copies_the_old_template() -> None:
    h = Harness()
    d = deployment("nginx:2")
    d["metadata"]["annotations"] = {du.DEPRECATED_ROLLBACK_TO: "1", "team": "now"}
    h.d_inf.add(d)
    one = replica_set("one", "nginx:1", 0, revision="1")
    one["metadata"]["annotations"]["team"] = "then"
    h.rs_inf.add(one, replica_set("two", "nginx:2", 3, revision="2",
                                  created="2026-01-02T00:00:00Z"))
    await h.dc.sync_deployment("ns/web")
    (upd,) = h.client.writes("update", "deployments")
    assert upd["spec"]["template"] == template("nginx:1")        # hash label dropped
    assert du.DEPRECATED_ROLLBACK_TO not in upd["metadata"]["annotations"]
    assert upd["metadata"]["annotations"]["team"] == "then"
    assert ("Normal", du.ROLLBACK_DONE, 'Rolled back deployment "web" to revision 1') in (
        h.recorder.events)


async def test_rollback_to_a_missing_revision_warns_and_clears() -> None:
    h = Harness()
    d = deployment("nginx:2")
    d["metadata"]["annotations"] = {du.DEPRECATED_ROLLBACK_TO: "7"}
    h.d_inf.add(d)
    h.rs_inf.add(replica_set("two", "nginx:2", 3, revision="2"))
    await h.dc.sync_deployment("ns/web")
    (upd,) = h.client.writes("update", "deployments")
    assert du.DEPRECATED_ROLLBACK_TO not in upd["metadata"]["annotations"]
    assert ("Warning", du.ROLLBACK_REVISION_NOT_FOUND,
            "Unable to find the revision to rollback to.") in h.recorder.events


async def test_adopts_orphan_and_releases_non_matching() -> None:
    h = Harness()
    h.d_inf.add(deployment("nginx:1"))
    orphan = replica_set("orphan", "nginx:1", 3, owned=False)
    stray = replica_set("stray", "nginx:0", 0)
    stray["metadata"]["labels"] = {"app": "other"}
    h.rs_inf.add(orphan, stray)

    async def fresh(resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return deployment("nginx:1")
    h.client.get = fresh  # type: ignore[attr-defined]
    await h.dc.sync_deployment("ns/web")
    patched = {(name, "delete" if p["metadata"]["ownerReferences"][0].get("$patch") else "adopt")
               for _, name, p in h.rs_control.patches}
    assert patched == {("orphan", "adopt"), ("stray", "delete")}
    assert not h.client.writes("create")          # the adopted one is the new one


async def test_replica_set_handlers_route_to_the_owner() -> None:
    h = Harness()
    d = deployment()
    h.d_inf.add(d)
    handler = h.rs_inf.handlers[0]
    rs = replica_set("a", "nginx:1", 1)
    handler.on_add(rs, False)
    assert h.enqueued == [("web", None)]
    h.enqueued.clear()
    handler.on_update(rs, rs)                     # a resync: ignored
    assert h.enqueued == []
    orphan = replica_set("o", "nginx:1", 1, owned=False)
    changed = du.deep_copy(orphan)
    changed["metadata"]["resourceVersion"] = "6"
    handler.on_update(orphan, changed)            # orphan, nothing relevant changed
    assert h.enqueued == []
    changed["metadata"]["labels"] = {"app": "web", "x": "y"}
    handler.on_update(orphan, changed)            # labels changed: candidates may adopt
    assert h.enqueued == [("web", None)]
    h.enqueued.clear()
    foreign = replica_set("f", "nginx:1", 1)
    foreign["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    handler.on_delete(foreign)
    assert h.enqueued == []


def test_stuck_deployment_requeued_for_its_deadline() -> None:
    h = Harness()
    d = deployment(progressDeadlineSeconds=600)
    d["status"] = {"conditions": [du.new_deployment_condition(
        du.PROGRESSING, "True", du.REPLICA_SET_UPDATED_REASON, "m")]}
    after = requeue_stuck_deployment(h.dc, d, {"replicas": 1})
    assert after is not None and 598 <= after <= 600
    assert h.enqueued == [("web", after + 1.0)]
    # A timed-out one is not re-checked.
    d["status"] = {"conditions": [du.new_deployment_condition(
        du.PROGRESSING, "False", du.TIMED_OUT_REASON, "m")]}
    assert requeue_stuck_deployment(h.dc, d, {"replicas": 1}) is None


async def test_cleanup_keeps_revision_history_limit() -> None:
    h = Harness()
    h.d_inf.add(deployment("nginx:9", replicas=1, revisionHistoryLimit=2))
    olds = [replica_set(f"r{i}", f"nginx:{i}", 0, revision=str(i),
                        created=f"2026-01-0{i}T00:00:00Z") for i in range(1, 6)]
    olds[1]["status"]["replicas"] = 1             # still has a pod: kept
    new = replica_set("r9", "nginx:9", 1, revision="9", created="2026-01-09T00:00:00Z")
    new["metadata"]["annotations"].update({du.DESIRED_REPLICAS_ANNOTATION: "1",
                                           du.MAX_REPLICAS_ANNOTATION: "2"})
    h.rs_inf.add(*olds, new)
    d = deployment("nginx:9", replicas=1, revisionHistoryLimit=2)
    d["metadata"]["annotations"] = {du.REVISION_ANNOTATION: "9"}
    d["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                   "availableReplicas": 1}
    h.d_inf.add(d)
    await h.dc.sync_deployment("ns/web")
    # 5 old, limit 2: the 3 oldest go, except the one with a pod.
    assert sorted(h.client.writes("delete", "replicasets")) == ["r1", "r3"]


async def test_existing_new_replica_set_without_condition_gets_found_new_replica_set() -> None:
    h = Harness()
    h.d_inf.add(deployment("nginx:1", replicas=3))
    current = replica_set("cur", "nginx:1", 3, revision="4")
    current["metadata"]["annotations"].update({du.DESIRED_REPLICAS_ANNOTATION: "3",
                                               du.MAX_REPLICAS_ANNOTATION: "4"})
    h.rs_inf.add(current)
    await h.dc.sync_deployment("ns/web")
    assert not h.client.writes("update", "replicasets")     # annotations already right
    first = h.client.writes("update_status")[0]
    # The Deployment takes the ReplicaSet's own revision.
    assert first["metadata"]["annotations"][du.REVISION_ANNOTATION] == "4"
    cond = du.get_deployment_condition(first["status"], du.PROGRESSING)
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
        "True", du.FOUND_NEW_RS_REASON, 'Found new replica set "cur"')
