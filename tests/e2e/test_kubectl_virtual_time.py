"""``pykcm up --virtual-time`` with kubectl (issue 21's acceptance, its last item): a CronJob
``*/10 * * * *`` creates its third Job within 30 s of wall time, autojump moving the one
virtual clock of the API server, the simulator and the controller manager whenever the
cluster is idle; ``kubectl get cronjob`` shows a LAST SCHEDULE that reads naturally (a
few minutes at most, as on a real cluster 30 minutes in: the server prints ages on its
clock), and the Jobs' names are the schedule's minutes (the controller's clock).

Also: a client advancing the clock (``c.clock.advance``) moves it by exactly that much
on a cluster without autojump; a restart on the same data dir resumes the virtual time
(DIR/virtual-time), never earlier than where it stopped.

A Job with backoffLimit 6 whose pods all fail is recreated after exactly 10, 20, 40, 80,
160 and 320 virtual seconds (one of issue 21's acceptance scenarios, without the
comparison with a real-time run).

The virtual seconds simulated per wall second are printed (not asserted).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pykcm.testing.cluster import Cluster
from tests.e2e.conftest import Kubectl, _kubectl_path

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def virtual() -> Iterator[tuple[Cluster, Kubectl]]:
    with Cluster(nodes=1, virtual_time=True) as c:
        cache = tempfile.mkdtemp(prefix="kubectl-cache-")
        env = {**os.environ, "KUBECONFIG": c.kubeconfig_path, "KUBECACHEDIR": cache}
        try:
            yield c, Kubectl(_kubectl_path(), env)
        finally:
            shutil.rmtree(cache, ignore_errors=True)


def _age_seconds(age: str) -> float:
    """kubectl's HumanDuration back to seconds ("58s", "4m3s", "12m", "2h5m")."""
    total, num = 0.0, ""
    for ch in age:
        if ch.isdigit():
            num += ch
            continue
        total += int(num) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[ch]
        num = ""
    return total


def test_a_cronjob_runs_three_times_in_seconds_of_wall_time(
        virtual: tuple[Cluster, Kubectl]) -> None:
    c, k = virtual
    state = c.clock.state()
    assert state["autojump"] and {f["name"] for f in state["followers"]} == {
        "sim", "controller-manager"}
    k.ok("create", "namespace", "vt")
    v0, w0 = c.clock.epoch(), time.monotonic()
    k.ok("-n", "vt", "create", "cronjob", "tick", "--image=busybox",
         "--schedule=*/10 * * * *", "--", "true")
    jobs: list[dict[str, object]] = []
    while time.monotonic() - w0 < 30:
        jobs = json.loads(k.ok("-n", "vt", "get", "jobs", "-o", "json"))["items"]
        if len(jobs) >= 3:
            break
        time.sleep(0.5)
    v1, w1 = c.clock.epoch(), time.monotonic()
    print(f"\nvirtual time: {v1 - v0:.0f} virtual s in {w1 - w0:.1f} wall s: "
          f"{(v1 - v0) / (w1 - w0):.0f} virtual s per wall s "
          f"({c.clock.state()['jumps']} jumps since start; machine load "
          f"{os.getloadavg()[0]:.1f})")
    assert len(jobs) >= 3, f"{len(jobs)} Jobs after 30 s of wall time"
    # the Jobs are the schedule's: <cronjob>-<minutes since the epoch>, 10 minutes apart
    minutes = sorted(int(str(j["metadata"]["name"]).rsplit("-", 1)[1])  # type: ignore[index]
                     for j in jobs)
    assert all(m % 10 == 0 for m in minutes)
    assert [b - a for a, b in itertools.pairwise(minutes)][:2] == [10, 10]
    assert minutes[0] * 60 >= v0 - 60
    # LAST SCHEDULE: the latest scheduled time, aged on the server's (virtual) clock
    out = k.ok("-n", "vt", "get", "cronjob", "tick")
    print(out)
    header, row = out.splitlines()[:2]
    assert header.split()[-3:] == ["LAST", "SCHEDULE", "AGE"]
    last = row.split()[-2]  # the schedule has spaces: count from the end
    assert last not in ("<none>", "<unknown>", "<invalid>")
    assert _age_seconds(last) < 20 * 60


JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: fail, namespace: vt-backoff}
spec:
  backoffLimit: 6
  template:
    metadata:
      annotations: {sim.pykcm.io/exit-code: "1", sim.pykcm.io/run-seconds: "1"}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""


def test_a_job_backoff_is_exact_in_virtual_seconds(virtual: tuple[Cluster, Kubectl]) -> None:
    """backoffLimit 6, every pod failing after 1 s: from each failure to the next pod,
    10, 20, 40, 80, 160 and 320 virtual seconds (the Job controller's back-off), to the
    second of the stamps; the Job fails after its seventh pod."""
    c, k = virtual
    k.ok("create", "namespace", "vt-backoff")
    v0, w0 = c.clock.epoch(), time.monotonic()
    k.ok("apply", "-f", "-", stdin=JOB)
    failed = False
    while not failed and time.monotonic() - w0 < 60:
        job = json.loads(k.ok("-n", "vt-backoff", "get", "job", "fail", "-o", "json"))
        failed = any(cond["type"] == "Failed" and cond["status"] == "True"
                     for cond in job.get("status", {}).get("conditions") or ())
        time.sleep(0.5)
    v1, w1 = c.clock.epoch(), time.monotonic()
    print(f"\nJob back-off: {v1 - v0:.0f} virtual s in {w1 - w0:.1f} wall s: "
          f"{(v1 - v0) / (w1 - w0):.0f} virtual s per wall s (load {os.getloadavg()[0]:.1f})")
    assert failed
    pods = json.loads(k.ok("-n", "vt-backoff", "get", "pods", "-o", "json"))["items"]
    runs = sorted((_t(p["metadata"]["creationTimestamp"]),
                   _t(p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]))
                  for p in pods)
    assert len(runs) == 7
    gaps = [nxt[0] - prev[1] for prev, nxt in itertools.pairwise(runs)]
    assert gaps == [10, 20, 40, 80, 160, 320]


def _t(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def test_advance_moves_a_cluster_without_autojump() -> None:
    with Cluster(nodes=1, virtual_time=True, autojump=False,
                 virtual_start="2030-01-01T00:00:00Z") as c:
        before = c.clock.state()
        assert not before["autojump"]
        after = c.clock.advance(600)
        assert after["epoch"] == pytest.approx(before["epoch"] + 600)
        assert c.clock.now().year == 2030


def test_a_restart_resumes_the_virtual_time(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    start = datetime(2030, 1, 1, tzinfo=UTC)
    with Cluster(nodes=0, controller_manager=False, virtual_time=True, autojump=False,
                 virtual_start="2030-01-01T00:00:00Z", data_dir=data) as c:
        c.clock.advance(3600)
    with Cluster(nodes=0, controller_manager=False, virtual_time=True, autojump=False,
                 data_dir=data) as c:
        assert c.clock.now() >= start + timedelta(hours=1)
