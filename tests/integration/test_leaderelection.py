"""Leader election on a real Lease of either API server, with short durations
(lease 2 s, renew deadline 1 s, retry 0.2 s): one leader among two candidates,
hand-over with and without release (also when the leader is cancelled during a
renewal the server applies), and the Lease as client-go writes it."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
    master_status,
    parse_micro_time,
)
from pykcm.leaderelection.lease_lock import (
    LEASE_RESOURCE,
    LeaderElectionRecord,
    record_to_lease_spec,
)
from tests.conftest import Backend, create_namespace

LEASE, RENEW, RETRY = 2.0, 1.0, 0.2
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "le")


class InFlightLeaseLock(LeaseLock):
    """A LeaseLock whose next update, once armed, is applied by the server but never
    answered: what cancelling the elector during a renewal can leave behind (the
    server has bumped the resourceVersion, the lock still holds the previous one)."""

    def __init__(self, client: Client, namespace: str, name: str, identity: str) -> None:
        super().__init__(client, namespace, name, identity)
        self.armed = False
        self.applied = asyncio.Event()

    async def update(self, record: LeaderElectionRecord) -> None:
        if not self.armed:
            await super().update(record)
            return
        self.armed = False
        assert self.lease is not None
        body = dict(self.lease, spec=record_to_lease_spec(record))
        await self.client.update(LEASE_RESOURCE, body, self.namespace)  # applied, unheard
        self.applied.set()
        await asyncio.Event().wait()  # the response never arrives; cancelled from outside


@dataclass
class Candidate:
    identity: str
    elector: LeaderElector
    lock: InFlightLeaseLock
    leading: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    leaders: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


def candidate(client: Client, ns: str, identity: str, *, release: bool) -> Candidate:
    holder: list[Candidate] = []

    async def on_started() -> None:
        holder[0].leading.set()
        try:
            await asyncio.Event().wait()
        finally:
            holder[0].leading.clear()

    lock = InFlightLeaseLock(client, ns, "test-controller-manager", identity)
    cfg = LeaderElectionConfig(
        lock,
        LeaderCallbacks(on_started_leading=on_started,
                        on_stopped_leading=lambda: holder[0].stopped.set(),
                        on_new_leader=lambda who: holder[0].leaders.append(who)),
        lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY,
        release_on_cancel=release, name=f"{ns}-{identity}")
    c = Candidate(identity, LeaderElector(cfg), lock)
    holder.append(c)
    return c


async def start_two(client: Client, ns: str, *, release: bool) -> tuple[Candidate, Candidate]:
    a, b = (candidate(client, ns, i, release=release) for i in ("a", "b"))
    for c in (a, b):
        c.task = asyncio.create_task(c.elector.run())
    done, _ = await asyncio.wait(
        [asyncio.create_task(a.leading.wait()), asyncio.create_task(b.leading.wait())],
        timeout=5, return_when=asyncio.FIRST_COMPLETED)
    assert done, "nobody became leader"
    return (a, b) if a.leading.is_set() else (b, a)


async def stop(c: Candidate) -> None:
    assert c.task is not None
    c.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await c.task


async def test_one_leader_and_the_lease_as_upstream(client: Client, ns: str) -> None:
    leader, follower = await start_two(client, ns, release=False)
    try:
        first = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        # exactly one leads, continuously, while the leader renews
        for _ in range(10):
            await asyncio.sleep(0.15)
            assert leader.leading.is_set() and not follower.leading.is_set()
            assert master_status(f"{ns}-{leader.identity}") == 1.0
            assert master_status(f"{ns}-{follower.identity}") == 0.0
        lease = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        assert lease["apiVersion"] == "coordination.k8s.io/v1" and lease["kind"] == "Lease"
        spec = lease["spec"]
        assert spec["holderIdentity"] == leader.identity
        assert spec["leaseDurationSeconds"] == 2
        assert spec["leaseTransitions"] == 0
        assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
        assert spec["acquireTime"] == first["spec"]["acquireTime"]  # kept across renewals
        assert parse_micro_time(spec["renewTime"]) > parse_micro_time(first["spec"]["renewTime"])
        assert int(lease["metadata"]["resourceVersion"]) > int(
            first["metadata"]["resourceVersion"])
        assert follower.leaders == [leader.identity] == leader.leaders
    finally:
        for c in (leader, follower):
            await stop(c)
    assert leader.stopped.is_set() and follower.stopped.is_set()


async def test_release_on_cancel_hands_over_at_once(client: Client, ns: str) -> None:
    leader, follower = await start_two(client, ns, release=True)
    try:
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        await stop(leader)
        released = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        assert released["spec"]["holderIdentity"] == ""
        assert released["spec"]["leaseDurationSeconds"] == 1
        await asyncio.wait_for(follower.leading.wait(), 5)
        took = time.monotonic() - t0
        # an empty holder is free at once: the follower's next try (<= retry x 2.2) takes it
        assert took < 1.0 + RETRY * 2.2 + 0.5, took
        lease = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        assert lease["spec"]["holderIdentity"] == follower.identity
        assert lease["spec"]["leaseTransitions"] == 1
        assert lease["spec"]["leaseDurationSeconds"] == 2
        assert follower.leaders == [leader.identity, "", follower.identity] or \
            follower.leaders == [leader.identity, follower.identity]
    finally:
        await stop(follower)
    assert leader.stopped.is_set()


async def test_release_after_a_renewal_cancelled_in_flight(client: Client, ns: str) -> None:
    # The leader is cancelled while its renewal is in flight and the server applies
    # that renewal anyway: the release must still hand over at once (client-go reads
    # the lock before releasing, kubernetes#131867), not wait for the lease to expire.
    leader, follower = await start_two(client, ns, release=True)
    try:
        await asyncio.sleep(0.5)
        leader.lock.armed = True
        await asyncio.wait_for(leader.lock.applied.wait(), 5)
        await stop(leader)
        released = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        assert released["spec"]["holderIdentity"] == ""
        assert released["spec"]["leaseDurationSeconds"] == 1
        await asyncio.wait_for(follower.leading.wait(), 5)
        lease = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        assert lease["spec"]["holderIdentity"] == follower.identity
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        await stop(follower)
    assert leader.stopped.is_set()


async def test_without_release_takeover_waits_for_expiry(client: Client, ns: str) -> None:
    leader, follower = await start_two(client, ns, release=False)
    try:
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        await stop(leader)
        lease = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        assert lease["spec"]["holderIdentity"] == leader.identity  # not released
        await asyncio.sleep(LEASE - RETRY * 2.2 - 0.3)
        assert not follower.leading.is_set()  # the lease has not expired yet
        await asyncio.wait_for(follower.leading.wait(), 5)
        took = time.monotonic() - t0
        assert LEASE - RETRY * 2.2 <= took <= LEASE + RETRY * 2.2 + 1.0, took
        lease = await client.get("leases.coordination.k8s.io", "test-controller-manager", ns)
        assert lease["spec"]["holderIdentity"] == follower.identity
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        await stop(follower)
