"""Issue 21's acceptance scenarios on virtual time, each exact in virtual seconds, with
their real-time twins where one is cheap.

Each scenario runs on ``pykcm up --virtual-time`` (one clock for the API server, the
simulator and the controller manager, autojump): hours of control-loop behaviour in a
few wall seconds. Each prints (does not assert) the virtual seconds simulated per wall
second, from its first request. Scenarios that do not interfere share this module's
virtual cluster; the stopped node has a cluster of its own.

The clusters run the controllers their scenarios need (``--controllers``), not all of
them: with every controller, the extra timers (node monitor every 5 s, the PV binder's
15 s resync, the garbage collector's ~90 watches each ending every 5-10 minutes) are
~2,600 jumps per virtual hour instead of ~650, and a loaded machine then needs 20-35 wall
seconds for the CronJob's hour instead of ~4 (see bench/RESULTS.md, "Virtual time
scenarios"). The behaviour under test is unchanged: no flag of those controllers is
shortened on virtual time.

Real-time twins (same scenario, parameters shortened, same outcome sequence, times
scaled) run on a real-time cluster of their own for: the progress deadline (3 s), the
HPA's stabilization window (3 s, sync period 1 s) and TTL-after-finished (2 s). Not
twinned: the CronJob (cron's minute granularity: an hour of schedules needs an hour), the
Job back-off (its 10 s base is fixed upstream: 630 s of back-off), the stopped node (the
simulator's Lease renewal is 10 s, so a grace period must exceed it; the shortened
real-time run is tests/e2e/test_kubectl_node_lifecycle.py, ~20 s of grace).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.testing.cluster import Cluster
from tests.e2e.virtual_time_scenarios import (
    Rate,
    Recorder,
    condition,
    event_time,
    ts,
    wait_for,
)

pytestmark = [pytest.mark.e2e]

START = "2030-01-01T00:00:00Z"
SEED = 21
CONTROLLERS = ("cronjob,job,serviceaccount,deployment,replicaset,horizontalpodautoscaling,"
               "ttl-after-finished")
NODE_CONTROLLERS = "serviceaccount,nodelifecycle,taint-eviction-controller"


@pytest.fixture(scope="module")
def vcluster() -> Iterator[Cluster]:
    with Cluster(nodes=2, controllers=CONTROLLERS, virtual_time=True, virtual_start=START,
                 seed=SEED) as c:
        yield c


@pytest.fixture(scope="module")
def rtcluster() -> Iterator[Cluster]:
    with Cluster(nodes=2, controllers=CONTROLLERS, manager_flags=[
            "--horizontal-pod-autoscaler-sync-period=1s"]) as c:
        yield c


def _client(c: Cluster) -> Client:
    return Client(load_kube_config(c.kubeconfig_path))


async def _namespace(client: Client, ns: str) -> None:
    await client.create("namespaces", {"metadata": {"name": ns}})


def _pod_template(annotations: dict[str, str], labels: dict[str, str] | None = None,
                  restart: str = "Never", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations, "labels": labels or {}},
            "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox", **spec}]}}


# -- 1. CronJob */10 with history limits over one virtual hour -----------------------------

async def test_cronjob_hour_with_history_limits(vcluster: Cluster) -> None:
    """Six Jobs at the schedule's minutes, the two latest successful ones kept (each older
    one deleted when a newer one completes), lastScheduleTime and lastSuccessfulTime
    exact. Not twinned on real time: cron's granularity is the minute."""
    ns = "vt-cron"
    async with _client(vcluster) as client:
        rate = Rate(vcluster.clock.epoch)
        await _namespace(client, ns)
        async with Recorder(client, ns, ("cronjobs", "jobs", "events")) as rec:
            t0 = vcluster.clock.epoch()
            await client.create("cronjobs", {"metadata": {"name": "tick"}, "spec": {
                "schedule": "*/10 * * * *", "successfulJobsHistoryLimit": 2,
                "failedJobsHistoryLimit": 1, "jobTemplate": {"spec": {
                    "template": _pod_template({"sim.pykcm.io/run-seconds": "30"})}}}}, ns)
            first = (int(t0) // 600 + 1) * 600
            schedule = [first + 600 * i for i in range(6)]  # the hour's six
            last = f"tick-{schedule[-1] // 60}"

            def done() -> bool:
                j = rec.latest("jobs").get(last)
                return j is not None and condition(j, "Complete") is not None and \
                    rec.latest("cronjobs")["tick"]["status"].get("lastSuccessfulTime") == \
                    j["status"].get("completionTime")

            await wait_for("the hour's sixth Job to complete", done)
            # suspended before the seventh (10 virtual minutes later): the hour is over
            await client.patch("cronjobs", "tick", {"spec": {"suspend": True}}, namespace=ns)
            rate.report("CronJob */10, one hour")
        # what the hour left: the two latest successful Jobs
        jobs = rec.latest("jobs")
        created = sorted(ts(j["metadata"]["creationTimestamp"]) for j in jobs.values())
        assert created == schedule  # exact: the schedule's instants, nothing more
        alive = sorted(n for n in jobs if n not in rec.deleted("jobs"))
        assert alive == [f"tick-{s // 60}" for s in schedule[-2:]]
        completions = {n: ts(j["status"]["completionTime"]) for n, j in jobs.items()}
        runs = {completions[f"tick-{s // 60}"] - s for s in schedule}
        assert len(runs) == 1, f"every Job ran as long: {runs}"  # exact, same each time
        # each older successful Job deleted as the third newest completed
        deletes = rec.events("SuccessfulDelete")
        assert [(event_time(e), e["message"]) for e in deletes] == [
            (completions[f"tick-{s // 60}"], f"Deleted job tick-{schedule[i] // 60}")
            for i, s in enumerate(schedule[2:])]
        status = rec.latest("cronjobs")["tick"]["status"]
        assert ts(status["lastScheduleTime"]) == schedule[-1]
        assert ts(status["lastSuccessfulTime"]) == completions[last]
        assert [event_time(e) for e in rec.events("SuccessfulCreate")
                if e["involvedObject"]["kind"] == "CronJob"] == schedule


# -- 2. Job backoffLimit 6, every pod failing ----------------------------------------------

BACKOFF = [10, 20, 40, 80, 160, 320]


async def run_job_backoff(c: Cluster, ns: str) -> Recorder:
    """The Job back-off scenario (also the determinism test's): returns what it saw."""
    async with _client(c) as client:
        rate = Rate(c.clock.epoch)
        await _namespace(client, ns)
        async with Recorder(client, ns, ("jobs", "pods", "events")) as rec:
            await client.create("jobs", {"metadata": {"name": "flaky"}, "spec": {
                "backoffLimit": 6, "template": _pod_template(
                    {"sim.pykcm.io/run-seconds": "1", "sim.pykcm.io/exit-code": "1"})}}, ns)
            await wait_for("the Job to fail", lambda: condition(
                rec.latest("jobs").get("flaky", {}), "Failed"))
            await wait_for("the last failure's event", lambda: rec.events(
                "BackoffLimitExceeded"))
            rate.report("Job backoffLimit 6")
        return rec


async def test_job_backoff_spacing(vcluster: Cluster) -> None:
    """A replacement pod is created exactly 10, 20, 40, 80, 160, 320 virtual s after the
    failure before it (upstream: the back-off from the last failure's finish time, 10 s
    doubling), then Failed BackoffLimitExceeded after the seventh failure. Not twinned on
    real time: the 10 s base is fixed upstream (630 s of back-off)."""
    rec = await run_job_backoff(vcluster, "vt-backoff")
    pods = sorted(rec.latest("pods").values(),
                  key=lambda p: ts(p["metadata"]["creationTimestamp"]))
    assert len(pods) == 7

    def finished(p: dict[str, Any]) -> float:
        return max(ts(s["state"]["terminated"]["finishedAt"])
                   for s in p["status"]["containerStatuses"])

    gaps = [ts(b["metadata"]["creationTimestamp"]) - finished(a)
            for a, b in itertools.pairwise(pods)]
    assert gaps == BACKOFF
    job = rec.latest("jobs")["flaky"]
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 7
    assert ts(failed["lastTransitionTime"]) >= finished(pods[-1])
