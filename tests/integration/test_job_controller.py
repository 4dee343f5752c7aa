"""JobController against either API server (a fresh namespace per test).

No kubelet runs: the tests play it, setting pod phases and container
statuses through the pods/status subresource, and watch the Job's status,
conditions, pods and events move as upstream's controller moves them. The
pod-failure backoff and the batching period are shortened through the
controller's test hooks so failing Jobs run to their limit in seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from pykcm.api.pod_util import parse_time
from pykcm.client import Client, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.job import JobController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.polling import eventually

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"


@dataclass
class Env:
    client: Client
    ns: str
    factory: SharedInformerFactory
    controller: JobController


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def make_env(client: Client, apiserver: Backend) -> AsyncIterator[Callable[..., Any]]:
    """Build a namespace, informers and a running JobController (kwargs: its test hooks;
    ``compact=True`` for compact cached objects)."""
    cleanups: list[Callable[[], Any]] = []

    async def make(compact: bool = False, **hooks: Any) -> Env:
        ns = await create_namespace(client, apiserver, "job")
        # compact: the caches hold read-only compact objects instead of dicts.
        factory = SharedInformerFactory(client, namespace=ns, tune_gc=False,
                                        compact_objects=compact)
        broadcaster = EventBroadcaster(client)
        broadcaster.start()
        kwargs: dict[str, Any] = {"sync_job_batch_period": 0.05, "pod_failure_backoff": 0.2,
                                  "max_pod_failure_backoff": 1.0}
        kwargs.update(hooks)
        ctl = JobController(job_informer=factory.batch_v1.jobs,
                            pod_informer=factory.core_v1.pods, client=client,
                            recorder=broadcaster.new_recorder("job-controller"), **kwargs)
        factory.start()
        task = asyncio.create_task(ctl.run(2))

        async def cleanup() -> None:
            ctl.shutdown()
            await asyncio.wait_for(task, 10)
            await broadcaster.shutdown()
            await factory.shutdown()
        cleanups.append(cleanup)
        return Env(client, ns, factory, ctl)

    yield make
    for cleanup in reversed(cleanups):
        await cleanup()


@pytest.fixture
async def env(make_env: Callable[..., Any]) -> Env:
    env: Env = await make_env()
    return env


def job_body(name: str, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "template": {"spec": {"restartPolicy": "Never",
                              "containers": [{"name": "main", "image": "busybox"}]}},
    }
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": s}




async def job_pods(client: Client, ns: str, job: str) -> list[dict[str, Any]]:
    pods = (await client.list("pods", ns, label_selector=f"batch.kubernetes.io/job-name={job}"))
    return list(pods["items"])


def is_active(pod: dict[str, Any]) -> bool:
    return ((pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not pod["metadata"].get("deletionTimestamp"))


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def finish_pod(client: Client, pod: dict[str, Any], exit_code: int = 0) -> None:
    """Play the kubelet: the pod's only container terminated with ``exit_code``."""
    ts = now_rfc3339()
    phase = "Succeeded" if exit_code == 0 else "Failed"
    status = {"phase": phase,
              "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": ts}],
              "containerStatuses": [{
                  "name": "main", "image": "busybox", "imageID": "", "ready": False,
                  "restartCount": 0,
                  "state": {"terminated": {"exitCode": exit_code, "startedAt": ts,
                                           "finishedAt": ts,
                                           "reason": "Completed" if exit_code == 0 else "Error"}},
              }]}
    await client.patch("pods", pod["metadata"]["name"], {"status": status}, "merge",
                       pod["metadata"]["namespace"], subresource="status")


def condition(job: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c["type"] == type_:
            return dict(c)
    return None


async def get_job(client: Client, ns: str, name: str) -> dict[str, Any]:
    return dict(await client.get("jobs", name, ns))


async def events_for(client: Client, ns: str, name: str) -> list[dict[str, Any]]:
    evs = (await client.list("events", ns))["items"]
    return [e for e in evs if e["involvedObject"].get("name") == name
            and e["involvedObject"].get("kind") == "Job"]


@pytest.mark.parametrize("compact", [False, True], ids=["dicts", "compact"])
async def test_completions_5_parallelism_2_completes(make_env: Callable[..., Any],
                                                     compact: bool) -> None:
    env = await make_env(compact=compact)
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("five", completions=5, parallelism=2), ns)
    finished = 0
    max_active = 0
    while finished < 5:
        want = min(2, 5 - finished)
        active = await eventually(partial(_n_active, c, ns, "five", want),
                                  what=f"{want} active pods")
        max_active = max(max_active, len(active))
        for p in active:
            assert TRACKING_FINALIZER in p["metadata"]["finalizers"]
            ref = p["metadata"]["ownerReferences"][0]
            assert (ref["kind"], ref["name"], ref["controller"]) == ("Job", "five", True)
        await finish_pod(c, active[0])
        finished += 1
        # The controller notices the success before the next round.
        await eventually(partial(_succeeded_at_least, c, ns, "five", finished),
                         what=f"{finished} succeeded")
    assert max_active == 2
    job = await eventually(lambda: _with_condition(c, ns, "five", "Complete"),
                           what="Complete")
    st = job["status"]
    assert st["succeeded"] == 5
    assert st.get("active", 0) == 0
    assert st.get("failed", 0) == 0
    assert st["completionTime"] and st["startTime"]
    assert condition(job, "SuccessCriteriaMet") is not None
    assert st.get("uncountedTerminatedPods") in ({}, None)
    pods = await job_pods(c, ns, "five")
    assert len(pods) == 5
    assert all(TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or ()) for p in pods)
    reasons = await eventually(lambda: _event_reasons(c, ns, "five", {"Completed"}),
                               what="Completed event")
    assert "SuccessfulCreate" in reasons


async def _active_pods(c: Client, ns: str, job: str) -> list[dict[str, Any]]:
    return [p for p in await job_pods(c, ns, job) if is_active(p)]


async def _succeeded_at_least(c: Client, ns: str, name: str, n: int) -> bool:
    job = await get_job(c, ns, name)
    st = job.get("status") or {}
    uncounted = st.get("uncountedTerminatedPods") or {}
    return int(st.get("succeeded") or 0) + len(uncounted.get("succeeded") or ()) >= n


async def _with_condition(c: Client, ns: str, name: str, type_: str) -> dict[str, Any] | None:
    job = await get_job(c, ns, name)
    cond = condition(job, type_)
    return job if cond is not None and cond["status"] == "True" else None


async def _event_reasons(c: Client, ns: str, name: str, want: set[str]) -> set[str] | None:
    reasons = {e["reason"] for e in await events_for(c, ns, name)}
    return reasons if want <= reasons else None


async def test_failing_pods_hit_backoff_limit(make_env: Callable[..., Any]) -> None:
    # A 1 s base backoff: replacements wait 1 s, then 2 s after the failures.
    env = await make_env(pod_failure_backoff=1.0, max_pod_failure_backoff=60.0)
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("fails", backoffLimit=2), ns)
    failed = 0
    finished_at: list[float] = []
    while True:
        job = await get_job(c, ns, "fails")
        if condition(job, "FailureTarget") is not None:
            break
        active = await _active_pods(c, ns, "fails")
        if not active:
            await asyncio.sleep(0.05)
            continue
        assert len(active) == 1
        if finished_at:
            # The replacement waited out the backoff, counted from the failed
            # container's finishedAt (whole seconds): 1 s after the first
            # failure, 2 s after the second. Seen now, so created before now.
            assert time.time() >= finished_at[-1] + 2 ** (len(finished_at) - 1)
        await finish_pod(c, active[0], exit_code=1)
        pod = await c.get("pods", active[0]["metadata"]["name"], ns)
        finished = parse_time(pod["status"]["containerStatuses"][0]["state"]["terminated"]
                              ["finishedAt"])
        assert finished is not None
        finished_at.append(finished)
        failed += 1
        assert failed <= 3, "more pods than backoffLimit + 1"
        await eventually(partial(_failed_at_least, c, ns, "fails", failed),
                         what=f"{failed} failed")
    job = await eventually(lambda: _with_condition(c, ns, "fails", "Failed"), what="Failed")
    assert failed == 3
    cond = condition(job, "Failed")
    assert cond is not None
    assert cond["reason"] == "BackoffLimitExceeded"
    assert cond["message"] == "Job has reached the specified backoff limit"
    ft = condition(job, "FailureTarget")
    assert ft is not None and ft["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 3
    assert "completionTime" not in job["status"]
    assert len(await job_pods(c, ns, "fails")) == 3
    await eventually(lambda: _event_reasons(c, ns, "fails", {"BackoffLimitExceeded"}),
                     what="BackoffLimitExceeded event")


async def _failed_at_least(c: Client, ns: str, name: str, n: int) -> bool:
    st = (await get_job(c, ns, name)).get("status") or {}
    uncounted = st.get("uncountedTerminatedPods") or {}
    return int(st.get("failed") or 0) + len(uncounted.get("failed") or ()) >= n


async def test_indexed_job_reports_completed_indexes(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("idx", completions=4, parallelism=4,
                                    completionMode="Indexed"), ns)
    pods = await eventually(lambda: _n_active(c, ns, "idx", 4), what="4 pods")
    by_index = {int(p["metadata"]["annotations"][INDEX_KEY]): p for p in pods}
    assert sorted(by_index) == [0, 1, 2, 3]
    for ix, p in by_index.items():
        assert p["metadata"]["labels"][INDEX_KEY] == str(ix)
        assert p["spec"]["hostname"] == f"idx-{ix}"
        assert p["metadata"]["generateName"] == f"idx-{ix}-"
        env_var = next(e for e in p["spec"]["containers"][0]["env"]
                       if e["name"] == "JOB_COMPLETION_INDEX")
        assert env_var["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.labels['{INDEX_KEY}']"
    await finish_pod(c, by_index[1])
    await finish_pod(c, by_index[3])
    job = await eventually(lambda: _completed_indexes(c, ns, "idx", "1,3"),
                           what='completedIndexes "1,3"')
    assert job["status"]["succeeded"] == 2
    await finish_pod(c, by_index[0])
    await finish_pod(c, by_index[2])
    job = await eventually(lambda: _with_condition(c, ns, "idx", "Complete"), what="Complete")
    assert job["status"]["completedIndexes"] == "0-3"
    assert job["status"]["succeeded"] == 4


async def _n_active(c: Client, ns: str, job: str, n: int) -> list[dict[str, Any]] | None:
    pods = await _active_pods(c, ns, job)
    return pods if len(pods) == n else None


async def _completed_indexes(c: Client, ns: str, name: str,
                             want: str) -> dict[str, Any] | None:
    job = await get_job(c, ns, name)
    return job if (job.get("status") or {}).get("completedIndexes") == want else None


async def test_pod_failure_policy_fail_job_on_exit_code_42(env: Env) -> None:
    c, ns = env.client, env.ns
    policy = {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                              "values": [42]}},
    ]}
    await c.create("jobs", job_body("pfp", completions=3, parallelism=2, backoffLimit=6,
                                    podFailurePolicy=policy), ns)
    pods = await eventually(lambda: _n_active(c, ns, "pfp", 2), what="2 pods")
    created = {p["metadata"]["name"] for p in pods}
    await finish_pod(c, pods[0], exit_code=42)
    job = await eventually(lambda: _with_condition(c, ns, "pfp", "Failed"), what="Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "PodFailurePolicy"
    name = pods[0]["metadata"]["name"]
    assert cond["message"] == (f"Container main for pod {ns}/{name} failed with exit code 42 "
                               "matching FailJob rule at index 1")
    ft = condition(job, "FailureTarget")
    assert ft is not None and ft["reason"] == "PodFailurePolicy"
    # At once: no replacement pod; the other pod was terminated and counted failed.
    assert {p["metadata"]["name"] for p in await job_pods(c, ns, "pfp")} <= created
    assert job["status"]["failed"] == 2
    assert job["status"].get("active", 0) == 0
    assert job["status"].get("terminating", 0) == 0


async def test_suspended_job_creates_no_pods_until_resumed(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("sus", completions=2, parallelism=2, suspend=True), ns)
    job = await eventually(lambda: _with_condition(c, ns, "sus", "Suspended"),
                           what="Suspended")
    cond = condition(job, "Suspended")
    assert cond is not None and cond["reason"] == "JobSuspended"
    assert "startTime" not in job["status"]
    assert await job_pods(c, ns, "sus") == []
    await c.patch("jobs", "sus", {"spec": {"suspend": False}}, "merge", ns)
    pods = await eventually(lambda: _n_active(c, ns, "sus", 2), what="2 pods")
    assert len(pods) == 2
    job = await eventually(lambda: _suspended_false(c, ns, "sus"), what="resumed")
    cond = condition(job, "Suspended")
    assert cond is not None and cond["reason"] == "JobResumed"
    assert job["status"]["startTime"]
    reasons = await eventually(lambda: _event_reasons(c, ns, "sus", {"Suspended", "Resumed"}),
                               what="events")
    assert {"Suspended", "Resumed"} <= reasons
    # Suspending again deletes the running pods (not counted as failures).
    await c.patch("jobs", "sus", {"spec": {"suspend": True}}, "merge", ns)
    await eventually(lambda: _no_pods(c, ns, "sus"), what="pods deleted")
    job = await get_job(c, ns, "sus")
    assert job["status"].get("failed", 0) == 0


async def _no_pods(c: Client, ns: str, job: str) -> bool:
    return not await job_pods(c, ns, job)


async def _suspended_false(c: Client, ns: str, name: str) -> dict[str, Any] | None:
    job = await get_job(c, ns, name)
    cond = condition(job, "Suspended")
    return job if cond is not None and cond["status"] == "False" else None


async def test_active_deadline_fails_job(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("ads", activeDeadlineSeconds=1), ns)
    job = await eventually(lambda: _with_condition(c, ns, "ads", "Failed"), what="Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "DeadlineExceeded"
    assert await _n_active(c, ns, "ads", 0) is not None


async def test_success_policy_completes_early(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body(
        "sp", completions=3, parallelism=3, completionMode="Indexed",
        successPolicy={"rules": [{"succeededIndexes": "0"}]}), ns)
    pods = await eventually(lambda: _n_active(c, ns, "sp", 3), what="3 pods")
    first = next(p for p in pods if p["metadata"]["annotations"][INDEX_KEY] == "0")
    await finish_pod(c, first)
    job = await eventually(lambda: _with_condition(c, ns, "sp", "Complete"), what="Complete")
    met = condition(job, "SuccessCriteriaMet")
    assert met is not None and met["reason"] == "SuccessPolicy"
    assert met["message"] == "Matched rules at index 0"
    assert job["status"]["completedIndexes"] == "0"
    cond = condition(job, "Complete")
    assert cond is not None and cond["reason"] == "SuccessPolicy"


async def test_backoff_limit_per_index_fails_the_index(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("perix", completions=3, parallelism=3,
                                    completionMode="Indexed", backoffLimitPerIndex=1), ns)
    pods = await eventually(partial(_n_active, c, ns, "perix", 3), what="3 pods")
    by_index = {int(p["metadata"]["annotations"][INDEX_KEY]): p for p in pods}
    assert all(p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"]
               == "0" for p in pods)
    await finish_pod(c, by_index[0])
    await finish_pod(c, by_index[2])
    # Index 1 fails once: it gets a second pod, which carries the count.
    await finish_pod(c, by_index[1], exit_code=1)
    retry = await eventually(partial(_n_active, c, ns, "perix", 1), what="the retry")
    assert retry[0]["metadata"]["annotations"][INDEX_KEY] == "1"
    assert retry[0]["metadata"]["annotations"][
        "batch.kubernetes.io/job-index-failure-count"] == "1"
    # The second failure exhausts the index: the Job fails with FailedIndexes.
    await finish_pod(c, retry[0], exit_code=1)
    job = await eventually(partial(_with_condition, c, ns, "perix", "Failed"), what="Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "FailedIndexes"
    assert job["status"]["failedIndexes"] == "1"
    assert job["status"]["completedIndexes"] == "0,2"
    assert job["status"]["failed"] == 2


async def test_pod_replacement_policy_failed_waits_for_terminal_phase(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("prp", podReplacementPolicy="Failed"), ns)
    [pod] = await eventually(partial(_n_active, c, ns, "prp", 1), what="a pod")
    name = pod["metadata"]["name"]
    await c.delete("pods", name, ns)
    # Being deleted but not Failed: counted as terminating, not replaced.
    job = await eventually(partial(_terminating, c, ns, "prp", 1), what="terminating 1")
    assert job["status"].get("active", 0) == 0
    assert [p["metadata"]["name"] for p in await job_pods(c, ns, "prp")] == [name]
    await finish_pod(c, await c.get("pods", name, ns), exit_code=1)
    [replacement] = await eventually(partial(_n_active, c, ns, "prp", 1), what="replacement")
    assert replacement["metadata"]["name"] != name
    job = await eventually(partial(_failed_at_least, c, ns, "prp", 1), what="1 failed")


async def _terminating(c: Client, ns: str, name: str, n: int) -> dict[str, Any] | None:
    job = await get_job(c, ns, name)
    return job if (job.get("status") or {}).get("terminating") == n else None


async def test_terminating_pod_is_replaced_at_once_by_default(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("tof"), ns)
    [pod] = await eventually(partial(_n_active, c, ns, "tof", 1), what="a pod")
    await c.delete("pods", pod["metadata"]["name"], ns)
    # TerminatingOrFailed: the deleted pod counts as failed and is replaced.
    [replacement] = await eventually(partial(_n_active, c, ns, "tof", 1), what="replacement")
    assert replacement["metadata"]["name"] != pod["metadata"]["name"]
    await eventually(partial(_failed_at_least, c, ns, "tof", 1), what="1 failed")


async def test_orphan_and_deleted_job_pods_lose_the_finalizer(env: Env) -> None:
    c, ns = env.client, env.ns
    orphan = await c.create("pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "orphan", "finalizers": [TRACKING_FINALIZER]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, ns)
    await c.create("jobs", job_body("gone"), ns)
    [pod] = await eventually(partial(_n_active, c, ns, "gone", 1), what="a pod")
    # The Job is deleted without its pods (orphan propagation): nobody will
    # count them any more, so the finalizer must go.
    await c.delete("jobs", "gone", ns, propagation_policy="Orphan")
    for p in (orphan, pod):
        await eventually(partial(_without_finalizer, c, ns, p["metadata"]["name"]),
                         what=f"{p['metadata']['name']} without finalizer")


async def _without_finalizer(c: Client, ns: str, name: str) -> bool:
    pod = await c.get("pods", name, ns)
    return TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or ())
