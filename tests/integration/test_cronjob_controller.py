"""CronJobController against either API server, driven by a clock the test moves.

The test stands in for the Job controller (it marks Jobs complete through
the status subresource) and, after moving the clock to a schedule time,
asks the controller to sync (the real-time requeue would wait a minute).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from pykcm.api.clock import FakeClock
from pykcm.api.pod_util import parse_time
from pykcm.client import Client, NotFound, load_kube_config
from pykcm.controller import EventBroadcaster
from pykcm.controllers.cronjob import CronJobController
from pykcm.informers import SharedInformerFactory
from tests.conftest import Backend, create_namespace
from tests.polling import eventually

SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"


class FakeWallClock:
    """A wall clock the test sets."""

    def __init__(self, t: float) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


@dataclass
class Env:
    client: Client
    ns: str
    clock: FakeWallClock
    ctl: CronJobController

    def sync(self, name: str) -> None:
        self.ctl.enqueue_key(f"{self.ns}/{name}")


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@asynccontextmanager
async def _running(client: Client, ns: str, clock: Any) -> AsyncIterator[CronJobController]:
    """A CronJobController on ``clock``, its informers started; stopped on exit."""
    factory = SharedInformerFactory(client, namespace=ns, tune_gc=False)
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    ctl = CronJobController(cronjob_informer=factory.batch_v1.cronjobs,
                            job_informer=factory.batch_v1.jobs, client=client,
                            recorder=broadcaster.new_recorder("cronjob-controller"), clock=clock)
    factory.start()
    task = asyncio.create_task(ctl.run(2))
    try:
        yield ctl
    finally:
        ctl.shutdown()
        await asyncio.wait_for(task, 10)
        await broadcaster.shutdown()
        await factory.shutdown()


@pytest.fixture
async def env(client: Client, apiserver: Backend) -> AsyncIterator[Env]:
    ns = await create_namespace(client, apiserver, "cj")
    clock = FakeWallClock(time.time())
    async with _running(client, ns, clock) as ctl:
        yield Env(client, ns, clock, ctl)




def cronjob_body(name: str, schedule: str = "* * * * *", **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"schedule": schedule, "jobTemplate": {
        "metadata": {"labels": {"cron": name}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "busybox"}]}}}}}
    s.update(spec)
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": s}


async def create_cronjob(env: Env, body: dict[str, Any]) -> float:
    """Create the CronJob; return its first schedule minute (for "* * * * *") and wait for
    the first sync (nothing due yet)."""
    cj = await env.client.create("cronjobs", body, env.ns)
    created = parse_time(cj["metadata"]["creationTimestamp"])
    assert created is not None
    env.clock.t = created
    return (created // 60 + 1) * 60


async def jobs_of(c: Client, ns: str) -> dict[str, dict[str, Any]]:
    return {j["metadata"]["name"]: j for j in (await c.list("jobs", ns))["items"]}


async def wait_jobs(env: Env, names: set[str]) -> dict[str, dict[str, Any]]:
    async def check() -> dict[str, dict[str, Any]] | None:
        jobs = await jobs_of(env.client, env.ns)
        return jobs if set(jobs) == names else None
    return dict(await eventually(check, what=f"jobs {sorted(names)}"))


async def complete_job(c: Client, ns: str, name: str, at: float) -> None:
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    await c.patch("jobs", name, {"status": {
        "startTime": ts, "completionTime": ts, "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": ts,
             "lastTransitionTime": ts},
            {"type": "Complete", "status": "True", "lastProbeTime": ts,
             "lastTransitionTime": ts}]}}, "merge", ns, subresource="status")


async def event_reasons(c: Client, ns: str, name: str) -> list[str]:
    evs = (await c.list("events", ns))["items"]
    return [e["reason"] for e in evs if e["involvedObject"]["name"] == name
            and e["involvedObject"]["kind"] == "CronJob"]


async def has_event(c: Client, ns: str, name: str, reason: str) -> bool:
    return reason in await event_reasons(c, ns, name)


async def cronjob_status(c: Client, ns: str, name: str) -> dict[str, Any]:
    return dict((await c.get("cronjobs", name, ns)).get("status") or {})


async def test_jobs_on_schedule_with_names_and_history_limit(env: Env) -> None:
    c, ns = env.client, env.ns
    t1 = await create_cronjob(env, cronjob_body("tick", successfulJobsHistoryLimit=2))
    # Before the first schedule time nothing is created.
    env.clock.t = t1 - 1
    env.sync("tick")
    await asyncio.sleep(0.3)
    assert await jobs_of(c, ns) == {}
    expected: list[str] = []
    for i in range(4):
        t = t1 + 60 * i
        name = f"tick-{int(t) // 60}"
        env.clock.t = t + 5
        env.sync("tick")
        expected.append(name)
        jobs = await wait_jobs(env, set(expected[-3:]))
        job = jobs[name]
        meta = job["metadata"]
        assert meta["annotations"][SCHEDULED_ANNOTATION] == time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        assert meta["labels"]["cron"] == "tick"
        ref = meta["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("CronJob", "tick", True)
        status = await eventually(partial(_active_named, c, ns, "tick", name),
                                  what=f"{name} active")
        assert parse_time(status["lastScheduleTime"]) == t
        await complete_job(c, ns, name, t + 30)
        # Seen completed: out of the active list, lastSuccessfulTime set; history
        # beyond 2 successful Jobs deleted, oldest first.
        status = await eventually(lambda: _inactive(c, ns, "tick"), what="no active job")
        assert parse_time(status["lastSuccessfulTime"]) == t + 30
        await wait_jobs(env, set(expected[-2:]))
    reasons = await eventually(lambda: _reasons_include(
        c, ns, "tick", {"SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"}),
        what="events")
    assert reasons.count("SuccessfulCreate") == 4
    assert reasons.count("SuccessfulDelete") == 2


async def _active_named(c: Client, ns: str, cj: str, job: str) -> dict[str, Any] | None:
    status = await cronjob_status(c, ns, cj)
    names = [r["name"] for r in status.get("active") or ()]
    return status if names == [job] else None


async def _inactive(c: Client, ns: str, cj: str) -> dict[str, Any] | None:
    status = await cronjob_status(c, ns, cj)
    return status if not status.get("active") and status.get("lastSuccessfulTime") else None


async def _reasons_include(c: Client, ns: str, cj: str, want: set[str]) -> list[str] | None:
    reasons = await event_reasons(c, ns, cj)
    return reasons if want <= set(reasons) else None


async def test_forbid_skips_while_a_job_runs(env: Env) -> None:
    c, ns = env.client, env.ns
    t1 = await create_cronjob(env, cronjob_body("solo", concurrencyPolicy="Forbid"))
    first = f"solo-{int(t1) // 60}"
    env.clock.t = t1 + 1
    env.sync("solo")
    await wait_jobs(env, {first})
    await eventually(lambda: _active_named(c, ns, "solo", first), what="first active")
    # The next time comes while the first Job still runs: no second Job.
    env.clock.t = t1 + 61
    env.sync("solo")
    await eventually(lambda: has_event(c, ns, "solo", "JobAlreadyActive"),
                     what="JobAlreadyActive")
    assert set(await jobs_of(c, ns)) == {first}
    # Once it is done the missed time still starts (no starting deadline).
    await complete_job(c, ns, first, t1 + 50)
    second = f"solo-{int(t1) // 60 + 1}"
    env.sync("solo")
    await wait_jobs(env, {first, second})
    await eventually(lambda: _active_named(c, ns, "solo", second), what="second active")


async def test_replace_deletes_the_running_job(env: Env) -> None:
    c, ns = env.client, env.ns
    t1 = await create_cronjob(env, cronjob_body("swap", concurrencyPolicy="Replace"))
    first = f"swap-{int(t1) // 60}"
    env.clock.t = t1 + 1
    env.sync("swap")
    await wait_jobs(env, {first})
    await eventually(lambda: _active_named(c, ns, "swap", first), what="first active")
    env.clock.t = t1 + 61
    env.sync("swap")
    second = f"swap-{int(t1) // 60 + 1}"
    await eventually(lambda: _active_named(c, ns, "swap", second), what="second active")
    await eventually(lambda: _job_deleted_or_deleting(c, ns, first), what="first deleted")
    assert await has_event(c, ns, "swap", "SuccessfulDelete")


async def _job_deleted_or_deleting(c: Client, ns: str, name: str) -> bool:
    try:
        job = await c.get("jobs", name, ns)
    except NotFound:
        return True
    return bool(job["metadata"].get("deletionTimestamp"))


async def test_suspend_and_starting_deadline(env: Env) -> None:
    c, ns = env.client, env.ns
    t1 = await create_cronjob(env, cronjob_body("late", suspend=True,
                                                startingDeadlineSeconds=10))
    env.clock.t = t1 + 5
    env.sync("late")
    await asyncio.sleep(0.3)
    assert await jobs_of(c, ns) == {}
    # 30 s late with a 10 s starting deadline: the time is skipped (upstream looks
    # no further back than the deadline, so there is nothing to start).
    env.clock.t = t1 + 30
    await c.patch("cronjobs", "late", {"spec": {"suspend": False}}, "merge", ns)
    await asyncio.sleep(0.3)
    assert await jobs_of(c, ns) == {}
    assert "lastScheduleTime" not in await cronjob_status(c, ns, "late")
    # The next one on time starts.
    env.clock.t = t1 + 62
    env.sync("late")
    await wait_jobs(env, {f"late-{int(t1) // 60 + 1}"})


async def test_time_zone_annotation(env: Env) -> None:
    t1 = await create_cronjob(env, cronjob_body("tz", timeZone="Asia/Kolkata"))
    env.clock.t = t1 + 1
    env.sync("tz")
    jobs = await wait_jobs(env, {f"tz-{int(t1) // 60}"})
    stamp = jobs[f"tz-{int(t1) // 60}"]["metadata"]["annotations"][SCHEDULED_ANNOTATION]
    assert stamp.endswith("+05:30")
    assert parse_time(stamp) == t1


async def test_too_many_missed_times_starts_the_latest(env: Env) -> None:
    c, ns = env.client, env.ns
    t1 = await create_cronjob(env, cronjob_body("sleepy"))
    # The controller was away for 200 minutes: one Job, for the latest time.
    env.clock.t = t1 + 200 * 60 + 10
    env.sync("sleepy")
    await wait_jobs(env, {f"sleepy-{int(t1) // 60 + 200}"})
    await eventually(lambda: has_event(c, ns, "sleepy", "TooManyMissedTimes"),
                     what="TooManyMissedTimes")


# -- the clock seam end to end ---------------------------------------------------------
# The clock seam end to end: a CronJob controller on a FakeClock, against either API
# server, creates its Jobs when the test advances the clock, with no wall-clock wait and
# no manual resync.
#
# The controller's requeue at the next schedule time is a timer on the FakeClock (its
# work queue's), so ``advance_to`` past a schedule time is what makes it create the Job.
# Three runs of ``*/10 * * * *`` take 20 virtual minutes and a moment of wall time.

PERIOD = 600.0  # */10 * * * *


@dataclass
class ClockEnv:
    client: Client
    ns: str
    clock: FakeClock
    ctl: CronJobController


@pytest.fixture
async def clock_env(client: Client, apiserver: Backend) -> AsyncIterator[ClockEnv]:
    ns = await create_namespace(client, apiserver, "cjclock")
    # The fake wall line starts at the real time: the CronJob's creationTimestamp,
    # written by the API server, is its start.
    clock = FakeClock(wall=time.time())
    async with _running(client, ns, clock) as ctl:
        yield ClockEnv(client, ns, clock, ctl)


async def _requeued(env: ClockEnv) -> None:
    """Wait until the controller has synced and parked the CronJob on the clock (its
    next-schedule requeue), so the next advance finds the timer armed."""
    await eventually(lambda: env.ctl.queue.waiting_len() == 1 and len(env.ctl.queue) == 0,
                     what="the CronJob parked for its next schedule time")


async def _scheduled_jobs(env: ClockEnv, n: int) -> list[float]:
    async def check() -> list[float] | None:
        jobs = (await env.client.list("jobs", env.ns))["items"]
        if len(jobs) != n:
            return None
        return sorted(parse_time(j["metadata"]["annotations"][SCHEDULED_ANNOTATION]) or 0.0
                      for j in jobs)
    return list(await eventually(check, what=f"{n} jobs"))


async def test_cronjob_runs_on_schedule_as_the_fake_clock_advances(clock_env: ClockEnv) -> None:
    env = clock_env
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
