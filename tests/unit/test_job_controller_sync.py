"""JobController.sync_job without a server: informers never started (caches filled by
hand), FakePodControl, a fake client recording status writes, a recording queue and a
fixed clock. Covers slow start and expectations, suspension, finishing a failed Job,
Indexed pod templates and the pod-failure backoff."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import Any, cast

import pytest

from pykcm.cache.listers import GenericLister
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.client import Client
from pykcm.controller.consistency import ConsistencyError, ConsistencyStore
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controller.pod_control import FakePodControl
from pykcm.controllers.job import JobController
from pykcm.informers.generic import GenericInformer, GroupVersionResource

NOW = 1_800_000_000.0
FIN = "batch.kubernetes.io/job-tracking"


def ts(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Clock:
    def now(self) -> float:
        return NOW


class FakeClient:
    """Records status writes; answers them with the object and a new resourceVersion."""

    def __init__(self) -> None:
        self.statuses: list[dict[str, Any]] = []
        self.objects: dict[str, dict[str, Any]] = {}

    async def update_status(self, resource: str, body: Mapping[str, Any],
                            namespace: str | None = None) -> dict[str, Any]:
        obj = copy.deepcopy(dict(body))
        obj["metadata"]["resourceVersion"] = str(len(self.statuses) + 100)
        self.statuses.append(obj)
        return obj

    async def get(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.objects[f"{namespace}/{name}"]


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        self.events.append((type_, reason, fmt % args))


class RecordingQueue:
    def __init__(self) -> None:
        self.after: list[tuple[str, float]] = []

    def add_after(self, key: str, delay: float) -> None:
        self.after.append((key, delay))


def informer(group: str, resource: str) -> GenericInformer:
    inf = SharedIndexInformer(cast(Any, None))
    return GenericInformer(GroupVersionResource(group, "v1", resource), inf,
                           GenericLister(inf.get_indexer(), resource))


class Harness:
    def __init__(self) -> None:
        self.jobs = informer("batch", "jobs")
        self.pods = informer("", "pods")
        self.pod_control = FakePodControl()
        self.client = FakeClient()
        self.recorder = FakeRecorder()
        self.ctl = JobController(job_informer=self.jobs, pod_informer=self.pods,
                                 client=cast(Client, self.client),
                                 recorder=cast(EventRecorder, self.recorder),
                                 pod_control=self.pod_control, clock=Clock())
        self.queue = RecordingQueue()
        self.ctl.queue = cast(Any, self.queue)

    def add_job(self, job: dict[str, Any]) -> None:
        self.jobs.informer.get_indexer().add(job)
        self.client.objects[f"ns/{job['metadata']['name']}"] = job

    def add_pod(self, pod: dict[str, Any]) -> None:
        self.pods.informer.get_indexer().add(pod)


def make_job(name: str = "j", **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "parallelism": 1, "completions": 1, "backoffLimit": 6,
        "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed",
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "uid-" + name}},
        "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "uid-" + name,
                                             "batch.kubernetes.io/job-name": name}},
                     "spec": {"restartPolicy": "Never",
                              "containers": [{"name": "main", "image": "busybox"}]}}}
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ns", "uid": "uid-" + name,
                         "resourceVersion": "1", "generation": 1},
            "spec": s, "status": {}}


def make_pod(job: Mapping[str, Any], name: str, phase: str = "Running", *,
             index: int | None = None, exit_code: int | None = None,
             finalizer: bool = True, ready: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name, "namespace": "ns", "uid": "uid-" + name, "resourceVersion": "1",
        "creationTimestamp": ts(NOW - 100),
        "labels": dict(job["spec"]["template"]["metadata"]["labels"]),
        "finalizers": [FIN] if finalizer else [],
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                             "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
                             "controller": True, "blockOwnerDeletion": True}]}
    if index is not None:
        meta["annotations"] = {"batch.kubernetes.io/job-completion-index": str(index)}
    status: dict[str, Any] = {"phase": phase}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": {
            "exitCode": exit_code, "finishedAt": ts(NOW - 2)}}}]
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True",
                                 "lastTransitionTime": ts(NOW - 50)}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": "n1"},
            "status": status}


async def test_slow_start_stops_after_a_failing_batch() -> None:
    h = Harness()
    h.add_job(make_job(parallelism=10, completions=10))
    h.pod_control.create_limit = 3
    try:
        await h.ctl.sync_job("ns/j")
    except RuntimeError as exc:
        assert "limit 3 already reached" in str(exc)
    else:
        raise AssertionError("the failed creations are reported")
    # Batches of 1, 2, then 4 that all failed; the last 3 were never tried.
    assert h.pod_control.create_call_count == 7
    assert len(h.pod_control.templates) == 3
    exp = h.ctl.expectations.get_expectations("ns/j")
    assert exp is not None and exp.get_expectations() == (3, 0)
    st = h.client.statuses[-1]["status"]
    assert (st["active"], st["ready"], st["terminating"]) == (3, 0, 0)
    assert st["startTime"] == ts(NOW)
    tmpl = h.pod_control.templates[0]
    assert FIN in tmpl["metadata"]["finalizers"]
    assert h.pod_control.controller_refs[0]["uid"] == "uid-j"


async def test_unsatisfied_expectations_create_nothing_more() -> None:
    h = Harness()
    h.add_job(make_job(parallelism=2, completions=2))
    await h.ctl.sync_job("ns/j")
    assert len(h.pod_control.templates) == 2
    # The informer has not shown the pods yet: a second sync must not add more.
    await h.ctl.sync_job("ns/j")
    assert len(h.pod_control.templates) == 2
    h.ctl.expectations.creation_observed("ns/j")
    h.ctl.expectations.creation_observed("ns/j")
    await h.ctl.sync_job("ns/j")
    assert len(h.pod_control.templates) == 4  # cache still empty: it creates again


async def test_indexed_pod_templates() -> None:
    h = Harness()
    job = make_job("ix", completionMode="Indexed", parallelism=3, completions=3)
    h.add_job(job)
    h.add_pod(make_pod(job, "ix-1-abc", index=1))
    await h.ctl.sync_job("ns/ix")
    assert sorted(h.pod_control.generate_names) == ["ix-0-", "ix-2-"]
    for tmpl, gen in zip(h.pod_control.templates, h.pod_control.generate_names, strict=True):
        ix = gen.split("-")[1]
        assert tmpl["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == ix
        assert tmpl["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == ix
        assert tmpl["spec"]["hostname"] == f"ix-{ix}"
        assert tmpl["spec"]["containers"][0]["env"][0]["name"] == "JOB_COMPLETION_INDEX"


async def test_suspend_deletes_pods_without_counting_them() -> None:
    h = Harness()
    job = make_job(parallelism=2, completions=2, suspend=True)
    h.add_job(job)
    h.add_pod(make_pod(job, "a", ready=True))
    h.add_pod(make_pod(job, "b"))
    await h.ctl.sync_job("ns/j")
    # The finalizer goes first (these pods are no failures), then the pod.
    assert sorted(h.pod_control.delete_pod_names) == ["a", "b"]
    assert h.pod_control.patches == [
        {"metadata": {"$deleteFromPrimitiveList/finalizers": [FIN]}}] * 2
    st = h.client.statuses[-1]["status"]
    assert (st.get("active"), st["ready"], st["terminating"]) == (None, 0, 2)
    assert st.get("failed", 0) == 0 and "startTime" not in st
    assert [c["type"] for c in st["conditions"]] == ["Suspended"]
    assert ("Normal", "Suspended", "Job suspended") in h.recorder.events


async def test_backoff_limit_exceeded_finishes_in_two_steps() -> None:
    h = Harness()
    job = make_job(parallelism=2, completions=3, backoffLimit=0)
    h.add_job(job)
    h.add_pod(make_pod(job, "bad", "Failed", exit_code=1))
    h.add_pod(make_pod(job, "running"))
    await h.ctl.sync_job("ns/j")
    # FailureTarget first, the running pod deleted (its finalizer removed); the
    # Failed condition waits for it to terminate.
    assert h.pod_control.delete_pod_names == ["running"]
    st = h.client.statuses[-1]["status"]
    assert [c["type"] for c in st["conditions"]] == ["FailureTarget"]
    assert st["conditions"][0]["reason"] == "BackoffLimitExceeded"
    assert st["failed"] == 2 and st["terminating"] == 1
    assert st.get("uncountedTerminatedPods") == {}
    assert len(h.pod_control.patches) == 2
    # Next sync: the pods are gone from the cache, the Job is marked Failed.
    finished = h.client.statuses[-1]
    h.jobs.informer.get_indexer().update(finished)
    h.pods.informer.get_indexer().delete(make_pod(job, "bad"))
    h.pods.informer.get_indexer().delete(make_pod(job, "running"))
    await h.ctl.sync_job("ns/j")
    st = h.client.statuses[-1]["status"]
    assert [c["type"] for c in st["conditions"]] == ["FailureTarget", "Failed"]
    assert st["conditions"][1]["message"] == "Job has reached the specified backoff limit"
    assert "completionTime" not in st
    assert ("Warning", "BackoffLimitExceeded",
            "Job has reached the specified backoff limit") in h.recorder.events


async def test_failed_pod_is_replaced_after_the_backoff() -> None:
    h = Harness()
    job = make_job(parallelism=1, completions=1, backoffLimit=3)
    h.add_job(job)
    h.add_pod(make_pod(job, "bad", "Failed", exit_code=1))
    await h.ctl.sync_job("ns/j")
    # Failed 2 s ago, first failure: 10 s backoff, 8 s left; no pod yet.
    assert h.pod_control.templates == []
    assert h.queue.after == [("ns/j", 8.0)]
    st = h.client.statuses[-1]["status"]
    assert st["failed"] == 1
    record = h.ctl.backoff_store.get("ns/j")
    assert record is not None and record.failures_after_last_success == 1


async def test_completion_and_events() -> None:
    h = Harness()
    job = make_job(parallelism=1, completions=1)
    h.add_job(job)
    h.add_pod(make_pod(job, "ok", "Succeeded", exit_code=0))
    await h.ctl.sync_job("ns/j")
    st = h.client.statuses[-1]["status"]
    assert [c["type"] for c in st["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert st["succeeded"] == 1 and st["completionTime"] == ts(NOW)
    assert ("Normal", "Completed", "Job completed") in h.recorder.events
    # Finished: the next sync writes nothing.
    h.jobs.informer.get_indexer().update(h.client.statuses[-1])
    n = len(h.client.statuses)
    await h.ctl.sync_job("ns/j")
    assert len(h.client.statuses) == n


async def test_managed_by_another_controller_is_skipped() -> None:
    h = Harness()
    h.add_job(make_job(managedBy="example.com/other"))
    await h.ctl.sync_job("ns/j")
    assert h.pod_control.templates == [] and h.client.statuses == []


async def test_work_queue_job_completes_when_one_succeeded_and_none_runs() -> None:
    h = Harness()
    job = make_job(parallelism=2, completions=None)
    h.add_job(job)
    h.add_pod(make_pod(job, "done", "Succeeded", exit_code=0))
    h.add_pod(make_pod(job, "busy"))
    await h.ctl.sync_job("ns/j")
    # One success: the rest may finish, no new pods, not complete while one runs.
    assert h.pod_control.templates == []
    st = h.client.statuses[-1]["status"]
    assert st["succeeded"] == 1 and st["active"] == 1
    assert not any(c["type"] == "Complete" for c in st.get("conditions") or ())
    h.jobs.informer.get_indexer().update(h.client.statuses[-1])
    h.pods.informer.get_indexer().update(make_pod(job, "busy", "Succeeded", exit_code=0))
    h.pods.informer.get_indexer().update(make_pod(job, "done", "Succeeded", exit_code=0,
                                                  finalizer=False))
    await h.ctl.sync_job("ns/j")
    st = h.client.statuses[-1]["status"]
    assert st["succeeded"] == 2
    assert [c["type"] for c in st["conditions"]] == ["SuccessCriteriaMet", "Complete"]


async def test_suspending_a_started_job_clears_its_start_time() -> None:
    # MutableSchedulingDirectivesForSuspendedJobs (on in v1.36): the Suspended condition's
    # sync drops status.startTime; resuming sets it to the resume time.
    h = Harness()
    job = make_job(parallelism=1, completions=1, suspend=True)
    job["status"] = {"startTime": ts(NOW - 300), "active": 1, "ready": 0}
    h.add_job(job)
    h.add_pod(make_pod(job, "a"))
    await h.ctl.sync_job("ns/j")
    st = h.client.statuses[-1]["status"]
    assert [c["type"] for c in st["conditions"]] == ["Suspended"]
    assert "startTime" not in st
    resumed = copy.deepcopy(h.client.statuses[-1])
    resumed["spec"]["suspend"] = False
    h.jobs.informer.get_indexer().update(resumed)
    h.pods.informer.get_indexer().delete(make_pod(job, "a"))
    h.ctl.expectations.deletion_observed("ns/j")  # the informer's delete handler would
    await h.ctl.sync_job("ns/j")
    st = h.client.statuses[-1]["status"]
    assert st["startTime"] == ts(NOW)
    assert [(c["type"], c["reason"]) for c in st["conditions"]] == [("Suspended", "JobResumed")]


async def test_finished_job_is_not_synced_again_until_the_cache_shows_it() -> None:
    # finishedJobExpectations: after writing Complete the cache still holds the running Job;
    # a sync then (a pod event) must not count or write anything.
    h = Harness()
    job = make_job(parallelism=1, completions=1)
    h.add_job(job)
    h.add_pod(make_pod(job, "ok", "Succeeded", exit_code=0))
    await h.ctl.sync_job("ns/j")
    assert [c["type"] for c in h.client.statuses[-1]["status"]["conditions"]] == [
        "SuccessCriteriaMet", "Complete"]
    n, patches, events = (len(h.client.statuses), len(h.pod_control.patches),
                          len(h.recorder.events))
    assert h.pod_control.templates == []
    # The pod without its finalizer arrives before the Job's update.
    h.pods.informer.get_indexer().update(make_pod(job, "ok", "Succeeded", exit_code=0,
                                                  finalizer=False))
    await h.ctl.sync_job("ns/j")
    assert (len(h.client.statuses), len(h.pod_control.patches), len(h.recorder.events)) == (
        n, patches, events)
    assert h.pod_control.templates == []
    # The finished Job reaches the cache: the expectation is dropped.
    h.jobs.informer.get_indexer().update(h.client.statuses[-1])
    await h.ctl.sync_job("ns/j")
    assert h.ctl.finished_job_expectations == set() and len(h.client.statuses) == n


async def test_status_writes_leave_out_go_zero_values() -> None:
    # active/succeeded/failed are int32 omitempty, completedIndexes a string omitempty:
    # kube-controller-manager never sends them as 0 / ""; ready and terminating (pointers)
    # are sent as 0.
    h = Harness()
    job = make_job(parallelism=2, completions=2, completionMode="Indexed", suspend=True)
    h.add_job(job)
    await h.ctl.sync_job("ns/j")
    st = h.client.statuses[-1]["status"]
    for field in ("active", "succeeded", "failed", "completedIndexes", "startTime"):
        assert field not in st, field
    assert (st["ready"], st["terminating"], st["uncountedTerminatedPods"]) == (0, 0, {})


async def test_sync_waits_until_the_caches_hold_its_own_writes() -> None:
    # StaleControllerConsistencyJob (KEP-5647, on in v1.36): the status written (and the
    # pods created or patched, through RealPodControl's on_write) are remembered; the
    # next sync fails, to be retried, while a cache is older than them.
    h = Harness()
    read = {"pods": "5", "jobs.batch": "5"}
    h.ctl.consistency = ConsistencyStore({"pods": lambda: read["pods"],
                                          "jobs.batch": lambda: read["jobs.batch"]})
    job = make_job(parallelism=1, completions=1)
    h.add_job(job)
    h.add_pod(make_pod(job, "a"))
    await h.ctl.sync_job("ns/j")  # writes active 1: the fake answers resourceVersion 100
    assert h.client.statuses[-1]["metadata"]["resourceVersion"] == "100"
    with pytest.raises(ConsistencyError, match="read version: 5 is not as new as written "
                                               "version: 100 for group resource jobs.batch"):
        await h.ctl.sync_job("ns/j")
    # A pod written for the Job (RealPodControl's on_write); one without a controller is
    # nobody's.
    created = make_pod(job, "b")
    created["metadata"]["resourceVersion"] = "101"
    h.ctl._pod_written(created, created["metadata"]["ownerReferences"][0])
    h.ctl._pod_written({"metadata": {"namespace": "ns", "resourceVersion": "120"}}, None)
    read["jobs.batch"] = "100"
    with pytest.raises(ConsistencyError, match="written version: 101 for group resource pods"):
        await h.ctl.sync_job("ns/j")
    read["pods"] = "101"
    await h.ctl.sync_job("ns/j")
    # The Job deleted: its record goes.
    h.ctl.consistency.wrote_at("ns/j", "uid-j", "pods", "500")
    h.ctl.delete_job(job)
    await h.ctl.sync_job("ns/j")


async def test_a_finished_jobs_update_queues_one_selector_scan_not_a_sync() -> None:
    """Upstream v1.36's updateJob: a finished Job is not synced again; its selector goes to
    the orphan queue (repeated updates collapse into one key), whose scan removes the
    finalizer from each matching pod that no unfinished Job controls."""
    h = Harness()
    job, other = make_job("j"), make_job("k")
    h.add_job(other)
    old = copy.deepcopy(job)
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    job["metadata"]["resourceVersion"] = "2"
    h.add_job(job)
    mine = make_pod(job, "mine")
    done = make_pod(job, "done", finalizer=False)
    unselected = make_pod(job, "unselected")
    unselected["metadata"]["labels"] = {"app": "x"}
    orphan = make_pod(job, "orphan")
    orphan["metadata"]["ownerReferences"] = []
    adopted = make_pod(job, "adopted")  # j's labels, controlled by the unfinished k
    adopted["metadata"]["ownerReferences"] = make_pod(other, "x")["metadata"]["ownerReferences"]
    theirs = make_pod(other, "theirs")
    for p in (mine, done, unselected, orphan, adopted, theirs):
        h.add_pod(p)
    h.ctl.update_job(old, job)
    h.ctl.update_job(job, copy.deepcopy(job))
    assert h.queue.after == []  # no sync of the finished Job
    orphans = h.ctl.orphan_controller.queue
    assert len(orphans) == 1
    key, _shutdown = await orphans.get()
    assert key == "selector:ns/batch.kubernetes.io/controller-uid=uid-j"
    patched: list[str] = []

    async def patch_pod(namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        patched.append(name)

    h.ctl.pod_control.patch_pod = patch_pod  # type: ignore[method-assign]
    await h.ctl.sync_orphan_pod(key)
    assert sorted(patched) == ["mine", "orphan"]
