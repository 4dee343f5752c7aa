"""Several leader-election candidates on one Lease of either API server.

In process (short durations): with two and three candidates at most one leads at
any instant (every start and stop of leadership is tracked), nobody takes over
while the leader renews, and a leader that releases on cancel hands over before
its lease could have expired. As processes, with kube-controller-manager's
default durations (lease 15 s, renew deadline 10 s, retry 2 s): the leader, a
``pykcm controller-manager --controllers=`` process, is killed with SIGKILL and a
standby process takes over once the lease has expired (on pykcm's server only: it
takes 15 s, and test_manager.py's process takeover already runs on both).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from pykcm.client import Client, load_kube_config
from pykcm.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock
from pykcm.testing.server_thread import ServerThread
from tests.conftest import Backend, create_namespace

LEASES = "leases.coordination.k8s.io"


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "lec")


@dataclass
class Monitor:
    """Who leads, tracked from the callbacks: the invariant is checked at every change."""

    leading: set[str] = field(default_factory=set)
    max_leaders: int = 0
    starts: list[str] = field(default_factory=list)

    def start(self, identity: str) -> None:
        self.leading.add(identity)
        self.starts.append(identity)
        self.max_leaders = max(self.max_leaders, len(self.leading))

    def stop(self, identity: str) -> None:
        self.leading.discard(identity)


@dataclass
class Candidate:
    identity: str
    elector: LeaderElector
    task: asyncio.Task[None] | None = None
    leaders: list[str] = field(default_factory=list)


def candidate(client: Client, ns: str, identity: str, monitor: Monitor, *, lease: float,
              renew: float, retry: float, release: bool) -> Candidate:
    async def on_started() -> None:
        monitor.start(identity)
        try:
            await asyncio.Event().wait()
        finally:
            monitor.stop(identity)

    leaders: list[str] = []
    cfg = LeaderElectionConfig(
        LeaseLock(client, ns, "candidates", identity),
        LeaderCallbacks(on_started_leading=on_started, on_stopped_leading=lambda: None,
                        on_new_leader=leaders.append),
        lease_duration=lease, renew_deadline=renew, retry_period=retry,
        release_on_cancel=release, name=f"{ns}-{identity}")
    return Candidate(identity, LeaderElector(cfg), leaders=leaders)


async def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def stop_all(cands: list[Candidate]) -> None:
    for c in cands:
        if c.task is not None:
            c.task.cancel()
    await asyncio.gather(*(c.task for c in cands if c.task is not None),
                         return_exceptions=True)


@pytest.mark.parametrize("n", [2, 3])
async def test_at_most_one_leader_and_no_takeover_while_renewing(
        client: Client, ns: str, n: int) -> None:
    monitor = Monitor()
    cands = [candidate(client, ns, f"c{i}", monitor, lease=2.0, renew=1.0, retry=0.2,
                       release=False) for i in range(n)]
    for c in cands:
        c.task = asyncio.create_task(c.elector.run())
    try:
        await wait_for(lambda: bool(monitor.leading), 10, "a leader")
        (leader,) = monitor.leading
        first = await client.get(LEASES, "candidates", ns)
        # several lease durations' worth of renewals: the leader keeps it, alone
        renewals = 0
        last = first["spec"]["renewTime"]
        while renewals < 15:
            await asyncio.sleep(0.2)
            lease = await client.get(LEASES, "candidates", ns)
            if lease["spec"]["renewTime"] != last:
                renewals += 1
                last = lease["spec"]["renewTime"]
            assert monitor.leading == {leader}
        assert lease["spec"]["holderIdentity"] == leader
        assert lease["spec"]["leaseTransitions"] == 0
        assert monitor.starts == [leader]
        assert monitor.max_leaders == 1
        for c in cands:
            assert c.leaders == [leader]  # every candidate saw one leader, never another
            assert c.elector.is_leader() == (c.identity == leader)
    finally:
        await stop_all(cands)
    assert monitor.max_leaders == 1 and not monitor.leading


@pytest.mark.parametrize("n", [2, 3])
async def test_release_on_cancel_hands_over_before_the_lease_expires(
        client: Client, ns: str, n: int) -> None:
    # A 30 s lease: without the release nobody could take over for 30 s.
    monitor = Monitor()
    cands = [candidate(client, ns, f"c{i}", monitor, lease=30.0, renew=5.0, retry=0.2,
                       release=True) for i in range(n)]
    for c in cands:
        c.task = asyncio.create_task(c.elector.run())
    try:
        await wait_for(lambda: bool(monitor.leading), 10, "a leader")
        (first,) = monitor.leading
        by_id = {c.identity: c for c in cands}
        t0 = time.monotonic()
        task = by_id[first].task
        assert task is not None
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await wait_for(lambda: bool(monitor.leading), 20, "a new leader")
        assert time.monotonic() - t0 < 30.0  # before the old lease could have expired
        (second,) = monitor.leading
        assert second != first
        lease = await client.get(LEASES, "candidates", ns)
        assert lease["spec"]["holderIdentity"] == second
        assert lease["spec"]["leaseTransitions"] == 1
        assert monitor.max_leaders == 1
        assert monitor.starts == [first, second]
    finally:
        await stop_all(cands)
    assert monitor.max_leaders == 1


# -- processes, kube-controller-manager's default durations --------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class CandidateProcess:
    """``pykcm controller-manager --controllers=`` electing on one Lease, default durations."""

    def __init__(self, st: ServerThread, ns: str, log: str) -> None:
        self.port = free_port()
        self.log_path = log
        self.log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "pykcm", "controller-manager", "--controllers=",
             "--kubeconfig", st.kubeconfig_path, "--bind-address=127.0.0.1",
             "--secure-port=0", f"--port={self.port}",
             f"--leader-elect-resource-namespace={ns}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def master_status(self) -> float | None:
        try:
            r = requests.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        except requests.ConnectionError:
            return None
        for fam in text_string_to_metric_families(r.text):
            for s in fam.samples:
                if s.name == "leader_election_master_status" and \
                        s.labels.get("name") == "kube-controller-manager":
                    return float(s.value)
        return None

    def standing_by(self) -> bool:
        return self.master_status() == 0.0

    def output(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(30)
        self.log.close()


def poll(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def procs() -> Iterator[list[CandidateProcess]]:
    started: list[CandidateProcess] = []
    yield started
    for p in started:
        p.stop()


def test_sigkill_the_leader_process_another_takes_over_with_the_default_lease(
        pykcm_apiserver: ServerThread, api: Any, procs: list[CandidateProcess],
        tmp_path: Any) -> None:
    ns = api.ns()
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/kube-controller-manager"
    a = CandidateProcess(pykcm_apiserver, ns, str(tmp_path / "a.log"))
    procs.append(a)
    poll(lambda: a.master_status() == 1.0, 60, f"a to lead\n{a.output()}")
    b = CandidateProcess(pykcm_apiserver, ns, str(tmp_path / "b.log"))
    c = CandidateProcess(pykcm_apiserver, ns, str(tmp_path / "c.log"))
    procs += [b, c]
    for p in (b, c):
        poll(p.standing_by, 60, f"a standby\n{p.output()}")
    code, held = api.get(lease_path)
    assert code == 200
    assert held["spec"]["leaseDurationSeconds"] == 15  # kube-controller-manager's default
    a_identity = held["spec"]["holderIdentity"]

    a.p.send_signal(signal.SIGKILL)
    a.p.wait(30)
    # 15 s of lease, then the standbys' next try (2 s with up to 1.2 jitter)
    poll(lambda: b.master_status() == 1.0 or c.master_status() == 1.0, 60,
         f"a standby to take over\n{b.output()}\n{c.output()}")
    assert {b.master_status(), c.master_status()} == {0.0, 1.0}  # exactly one of them
    code, taken = api.get(lease_path)
    assert taken["spec"]["holderIdentity"] not in ("", a_identity)
    assert taken["spec"]["leaseTransitions"] == held["spec"]["leaseTransitions"] + 1

    for p in (b, c):
        p.p.send_signal(signal.SIGTERM)
    for p in (b, c):
        assert p.p.wait(30) == 0, p.output()
