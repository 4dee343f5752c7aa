"""TTLAfterFinishedController against either API server, with the Job controller
finishing the Jobs (the test plays the kubelet) and a clock the test moves.

The TTL controller deletes with Foreground propagation: the API server keeps
the Job (deletionTimestamp, the foregroundDeletion finalizer) until the
garbage collector has removed its pods, so the garbage collector runs too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from pykcm.client import Client, NotFound, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.garbagecollector import GarbageCollector
from pykcm.controllers.job import JobController
from pykcm.controllers.ttlafterfinished import TTLAfterFinishedController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.polling import eventually


class FakeWallClock:
    """Real time plus an offset the test advances."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return time.time() + self.offset


@dataclass
class Env:
    client: Client
    ns: str
    clock: FakeWallClock
    ttl: TTLAfterFinishedController


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def env(client: Client, apiserver: Backend) -> AsyncIterator[Env]:
    ns = await create_namespace(client, apiserver, "ttl")
    factory = SharedInformerFactory(client, namespace=ns, tune_gc=False)
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    clock = FakeWallClock()
    jobs = JobController(job_informer=factory.batch_v1.jobs, pod_informer=factory.core_v1.pods,
                         client=client, recorder=broadcaster.new_recorder("job-controller"),
                         sync_job_batch_period=0.05)
    ttl = TTLAfterFinishedController(job_informer=factory.batch_v1.jobs, client=client,
                                     clock=clock)
    gc_factory = SharedInformerFactory(client, tune_gc=False)
    gc = GarbageCollector(client=client, informer_factory=gc_factory,
                          recorder=broadcaster.new_recorder("garbage-collector-controller"))
    factory.start()
    tasks = [asyncio.create_task(jobs.run(1)), asyncio.create_task(ttl.run(1)),
             asyncio.create_task(gc.run(2))]
    try:
        yield Env(client, ns, clock, ttl)
    finally:
        for ctl in (jobs, ttl, gc):
            ctl.shutdown()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 20)
        await broadcaster.shutdown()
        await factory.shutdown()
        await gc_factory.shutdown()




def job_body(name: str, ttl: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"ttlSecondsAfterFinished": ttl, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}


async def finish_pod(c: Client, ns: str, name: str) -> None:
    """Play the kubelet: the Job's pod succeeds."""
    pod = await eventually(lambda: _first_pod(c, ns, name), what="the pod")
    ts = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    await c.patch("pods", pod["metadata"]["name"], {"status": {
        "phase": "Succeeded",
        "containerStatuses": [{"name": "main", "image": "busybox", "imageID": "",
                               "ready": False, "restartCount": 0,
                               "state": {"terminated": {"exitCode": 0, "finishedAt": ts}}}]}},
        "merge", ns, subresource="status")


async def _first_pod(c: Client, ns: str, job: str) -> dict[str, Any] | None:
    pods = (await c.list("pods", ns, label_selector=f"batch.kubernetes.io/job-name={job}"))
    return pods["items"][0] if pods["items"] else None


async def _complete(c: Client, ns: str, name: str) -> dict[str, Any] | None:
    job = await c.get("jobs", name, ns)
    done = any(x["type"] == "Complete" and x["status"] == "True"
               for x in job.get("status", {}).get("conditions", []))
    return dict(job) if done else None


async def _gone(c: Client, resource: str, name: str, ns: str) -> bool:
    try:
        await c.get(resource, name, ns)
    except NotFound:
        return True
    return False


async def test_job_deleted_when_ttl_expires(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("short", ttl=3600), ns)
    await finish_pod(c, ns, "short")
    await eventually(lambda: _complete(c, ns, "short"), what="Complete")
    pod = await _first_pod(c, ns, "short")
    assert pod is not None
    ref = pod["metadata"]["ownerReferences"][0]
    assert ref["kind"] == "Job" and ref["blockOwnerDeletion"] is True
    # An hour to go: the controller only requeues.
    env.ttl.enqueue_key(f"{ns}/short")
    await asyncio.sleep(0.5)
    job = await c.get("jobs", "short", ns)
    assert "deletionTimestamp" not in job["metadata"]
    # Two hours later the TTL has expired.
    env.clock.offset = 7200
    env.ttl.enqueue_key(f"{ns}/short")
    await eventually(lambda: _gone(c, "jobs", "short", ns), what="the Job deleted")
    await eventually(lambda: _gone(c, "pods", pod["metadata"]["name"], ns),
                     what="the pod deleted")


async def test_ttl_zero_deletes_at_once(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("zero", ttl=0), ns)
    await finish_pod(c, ns, "zero")
    await eventually(lambda: _gone(c, "jobs", "zero", ns), what="the Job deleted")


async def test_unfinished_job_is_kept(env: Env) -> None:
    c, ns = env.client, env.ns
    await c.create("jobs", job_body("running", ttl=0), ns)
    await eventually(lambda: _first_pod(c, ns, "running"), what="the pod")
    env.clock.offset = 7200
    env.ttl.enqueue_key(f"{ns}/running")
    await asyncio.sleep(0.5)
    job = await c.get("jobs", "running", ns)
    assert "deletionTimestamp" not in job["metadata"]
