"""The clock seam end to end: a CronJob controller on a FakeClock, against either API
server, creates its Jobs when the test advances the clock, with no wall-clock wait and
no manual resync.

The controller's requeue at the next schedule time is a timer on the FakeClock (its
work queue's), so ``advance_to`` past a schedule time is what makes it create the Job.
Three runs of ``*/10 * * * *`` take 20 virtual minutes and a moment of wall time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from pykcm.api.clock import FakeClock
from pykcm.api.pod_util import parse_time
from pykcm.client import Client, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.cronjob import CronJobController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.polling import eventually

SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
PERIOD = 600.0  # */10 * * * *


@dataclass
class Env:
    client: Client
    ns: str
    clock: FakeClock
    ctl: CronJobController


@pytest.fixture
async def env(apiserver: Backend) -> AsyncIterator[Env]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as client:
        ns = await create_namespace(client, apiserver, "cjclock")
        # The fake wall line starts at the real time: the CronJob's creationTimestamp,
        # written by the API server, is its start.
        clock = FakeClock(wall=time.time())
        factory = SharedInformerFactory(client, namespace=ns, tune_gc=False)
        broadcaster = EventBroadcaster(client, clock=clock)
        broadcaster.start()
        ctl = CronJobController(cronjob_informer=factory.batch_v1.cronjobs,
                                job_informer=factory.batch_v1.jobs, client=client,
                                recorder=broadcaster.new_recorder("cronjob-controller"),
                                clock=clock)
        factory.start()
        task = asyncio.create_task(ctl.run(2))
        try:
            yield Env(client, ns, clock, ctl)
        finally:
            ctl.shutdown()
            await asyncio.wait_for(task, 10)
            await broadcaster.shutdown()
            await factory.shutdown()


async def _requeued(env: Env) -> None:
    """Wait until the controller has synced and parked the CronJob on the clock (its
    next-schedule requeue), so the next advance finds the timer armed."""
    await eventually(lambda: env.ctl.queue.waiting_len() == 1 and len(env.ctl.queue) == 0,
                     what="the CronJob parked for its next schedule time")


async def _scheduled_jobs(env: Env, n: int) -> list[float]:
    async def check() -> list[float] | None:
        jobs = (await env.client.list("jobs", env.ns))["items"]
        if len(jobs) != n:
            return None
        return sorted(parse_time(j["metadata"]["annotations"][SCHEDULED_ANNOTATION]) or 0.0
                      for j in jobs)
    return list(await eventually(check, what=f"{n} jobs"))


async def test_cronjob_runs_on_schedule_as_the_fake_clock_advances(env: Env) -> None:
    body: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "every10"},
        "spec": {"schedule": "*/10 * * * *", "timeZone": "Etc/UTC",
                 "jobTemplate": {"spec": {"template": {"spec": {
                     "restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    cj = await env.client.create("cronjobs", body, env.ns)
    created = parse_time(cj["metadata"]["creationTimestamp"])
    assert created is not None
    first = (created // PERIOD + 1) * PERIOD

    await _requeued(env)
    assert (await env.client.list("jobs", env.ns))["items"] == []  # nothing due yet
    for i in range(3):
        due = first + i * PERIOD
        env.clock.advance_to(due + 1)  # the requeue fires at due + 100 ms
        assert await _scheduled_jobs(env, i + 1) == [first + k * PERIOD for k in range(i + 1)]
        await _requeued(env)

    cj = await env.client.get("cronjobs", "every10", env.ns)
    assert parse_time(cj["status"]["lastScheduleTime"]) == first + 2 * PERIOD
    assert len(cj["status"]["active"]) == 3
    # 20 virtual minutes went by on the clock; a controller waiting on the wall clock
    # for any of them would have failed the polls above (30 s each) instead.
    assert env.clock.now() == first + 2 * PERIOD + 1
