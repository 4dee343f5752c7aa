"""pykcm.leaderelection with a fake lock and a fake clock: client-go's algorithm,
callbacks, release, health check, metric and config validation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from pykcm.api.randomness import seeded
from pykcm.client import AlreadyExists, Conflict, InternalError, NotFound
from pykcm.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElectionUnhealthy,
    LeaderElector,
    format_micro_time,
    master_status,
    parse_micro_time,
    run_or_die,
)
from pykcm.leaderelection.lease_lock import lease_spec_to_record, record_to_lease_spec

T0 = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


class FakeClock:
    """Virtual time: sleep() advances it at once (and yields to the loop)."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def utcnow(self) -> datetime:
        return T0 + timedelta(seconds=self.t)

    def now(self) -> float:
        return self.utcnow().timestamp()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _status(code: int, reason: str) -> dict[str, object]:
    return {"kind": "Status", "code": code, "reason": reason, "message": reason}


class Store:
    """The server side of the fake lock: one record and its version."""

    def __init__(self) -> None:
        self.record: LeaderElectionRecord | None = None
        self.version = 0
        self.fail_gets = False
        self.fail_updates = False
        self.writes: list[LeaderElectionRecord] = []

    def write(self, record: LeaderElectionRecord) -> None:
        """Another party writes the record."""
        self.record = record
        self.version += 1


class FakeLock:
    """A ResourceLock with the optimistic concurrency of LeaseLock."""

    def __init__(self, store: Store, identity: str) -> None:
        self.store = store
        self._identity = identity
        self._version: int | None = None
        self.events: list[str] = []

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        await asyncio.sleep(0)
        if self.store.fail_gets:
            raise InternalError(_status(500, "InternalError"))
        if self.store.record is None:
            raise NotFound(_status(404, "NotFound"))
        self._version = self.store.version
        return self.store.record, self.store.record.to_json()

    async def create(self, record: LeaderElectionRecord) -> None:
        await asyncio.sleep(0)
        if self.store.record is not None:
            raise AlreadyExists(_status(409, "AlreadyExists"))
        self.store.write(record)
        self.store.writes.append(record)
        self._version = self.store.version

    async def update(self, record: LeaderElectionRecord) -> None:
        await asyncio.sleep(0)
        if self._version is None:
            raise RuntimeError("lease not initialized, call get or create first")
        if self.store.fail_updates:
            raise InternalError(_status(500, "InternalError"))
        if self._version != self.store.version:
            raise Conflict(_status(409, "Conflict"))
        self.store.write(record)
        self.store.writes.append(record)
        self._version = self.store.version

    def record_event(self, message: str) -> None:
        self.events.append(message)

    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return "kube-system/test"


async def _noop() -> None:
    await asyncio.Event().wait()


def make(store: Store, identity: str, clock: FakeClock, *, name: str | None = None,
         on_started: Callable[[], object] | None = None,
         on_stopped: Callable[[], object] | None = None,
         on_new_leader: Callable[[str], object] | None = None,
         release_on_cancel: bool = False) -> LeaderElector:
    cfg = LeaderElectionConfig(
        FakeLock(store, identity),
        LeaderCallbacks(on_started_leading=on_started or _noop,  # type: ignore[arg-type]
                        on_stopped_leading=on_stopped or (lambda: None),
                        on_new_leader=on_new_leader),
        release_on_cancel=release_on_cancel, name=name or f"test-{identity}")
    return LeaderElector(cfg, clock=clock, rng=seeded(1, "test"))


async def until(cond: Callable[[], bool], steps: int = 10_000) -> None:
    for _ in range(steps):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


# -- records and Lease specs ---------------------------------------------------------


def test_micro_time_format() -> None:
    t = datetime(2024, 5, 6, 7, 8, 9, 12, tzinfo=UTC)
    assert format_micro_time(t) == "2024-05-06T07:08:09.000012Z"
    assert parse_micro_time("2024-05-06T07:08:09.000012Z") == t
    assert parse_micro_time("2024-05-06T07:08:09Z") == t.replace(microsecond=0)


def test_record_lease_spec_roundtrip() -> None:
    r = LeaderElectionRecord("a", 15, T0, T0 + timedelta(seconds=1), 3)
    spec = record_to_lease_spec(r)
    assert spec == {"holderIdentity": "a", "leaseDurationSeconds": 15,
                    "acquireTime": "2030-01-02T03:04:05.000000Z",
                    "renewTime": "2030-01-02T03:04:06.000000Z", "leaseTransitions": 3}
    assert lease_spec_to_record(spec) == r
    assert lease_spec_to_record(None) == LeaderElectionRecord()
    released = LeaderElectionRecord("", 1, T0, T0, 3)
    assert record_to_lease_spec(released)["holderIdentity"] == ""


# -- configuration -------------------------------------------------------------------


def test_defaults_are_kube_controller_managers() -> None:
    cfg = LeaderElectionConfig(FakeLock(Store(), "a"))
    assert (cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (15.0, 10.0, 2.0)
    assert (DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD) == (
        15.0, 10.0, 2.0)
    assert JITTER_FACTOR == 1.2


@pytest.mark.parametrize(("changes", "message"), [
    ({"lease_duration": 10.0}, "lease_duration (10.0s) must be greater than renew_deadline"),
    ({"retry_period": 9.0}, "renew_deadline (10.0s) must be greater than retry_period*Jitter"),
    ({"lease_duration": 0.9, "renew_deadline": 0.5, "retry_period": 0.1},
     "lease_duration (0.9s) must be at least 1s"),
    ({"retry_period": 0.0}, "retry_period must be greater than zero"),
    ({"renew_deadline": -1.0}, "renew_deadline must be greater than zero"),
    ({"on_started": None}, "callbacks.on_started_leading must not be None"),
    ({"on_stopped": None}, "callbacks.on_stopped_leading must not be None"),
    ({"identity": ""}, "lock identity is empty"),
])
def test_config_validation(changes: dict[str, object], message: str) -> None:
    cb = LeaderCallbacks(on_started_leading=changes.pop("on_started", _noop),  # type: ignore
                         on_stopped_leading=changes.pop("on_stopped", lambda: None))  # type: ignore
    identity = str(changes.pop("identity", "a"))
    cfg = LeaderElectionConfig(FakeLock(Store(), identity), cb, **changes)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("*", r"\*")):
        LeaderElector(cfg)


# -- try_acquire_or_renew ------------------------------------------------------------


async def test_acquire_when_free_creates_the_record() -> None:
    clock, store = FakeClock(), Store()
    a = make(store, "a", clock)
    assert await a.try_acquire_or_renew()
    assert a.is_leader() and a.get_leader() == "a"
    assert store.record == LeaderElectionRecord("a", 15, clock.utcnow(), clock.utcnow(), 0)


async def test_acquire_a_released_lock_at_once() -> None:
    clock, store = FakeClock(), Store()
    store.write(LeaderElectionRecord("", 1, T0, T0, 4))
    a = make(store, "a", clock)
    assert await a.try_acquire_or_renew()
    assert store.record is not None
    assert (store.record.holder_identity, store.record.leader_transitions) == ("a", 5)


async def test_unexpired_lease_judged_by_local_observation_only() -> None:
    clock, store = FakeClock(), Store()
    # The other holder's timestamps are ancient: they must not matter.
    store.write(LeaderElectionRecord("b", 15, T0 - timedelta(days=365),
                                     T0 - timedelta(days=365), 2))
    a = make(store, "a", clock)
    assert not await a.try_acquire_or_renew()  # first observation starts the local clock
    assert a.get_leader() == "b" and not a.is_leader()
    clock.advance(14.9)
    assert not await a.try_acquire_or_renew()
    clock.advance(0.2)  # 15.1 s after the observation, with no change seen
    assert await a.try_acquire_or_renew()
    assert store.record is not None
    assert store.record.holder_identity == "a"
    assert store.record.leader_transitions == 3
    assert store.record.acquire_time == clock.utcnow()


async def test_future_timestamps_of_the_holder_do_not_extend_its_lease() -> None:
    clock, store = FakeClock(), Store()
    far = T0 + timedelta(days=365)
    store.write(LeaderElectionRecord("b", 15, far, far, 0))
    a = make(store, "a", clock)
    assert not await a.try_acquire_or_renew()
    clock.advance(15.01)
    assert await a.try_acquire_or_renew()


async def test_a_renewing_holder_keeps_others_out() -> None:
    clock, store = FakeClock(), Store()
    store.write(LeaderElectionRecord("b", 15, T0, T0, 0))
    a = make(store, "a", clock)
    assert not await a.try_acquire_or_renew()
    clock.advance(10)
    store.write(LeaderElectionRecord("b", 15, T0, T0 + timedelta(seconds=10), 0))  # b renews
    assert not await a.try_acquire_or_renew()  # change observed: the local clock restarts
    clock.advance(14)  # 24 s after the first observation, 14 s after the change
    assert not await a.try_acquire_or_renew()
    clock.advance(1.1)
    assert await a.try_acquire_or_renew()


async def test_renew_keeps_acquire_time_and_transitions() -> None:
    clock, store = FakeClock(), Store()
    store.write(LeaderElectionRecord("", 1, T0, T0, 7))
    a = make(store, "a", clock)
    assert await a.try_acquire_or_renew()
    acquired = clock.utcnow()
    clock.advance(2)
    assert await a.try_acquire_or_renew()
    assert store.record == LeaderElectionRecord("a", 15, acquired, clock.utcnow(), 8)
    assert a.observed_time == clock.monotonic()


async def test_leader_falls_back_to_slow_path_and_sees_a_takeover() -> None:
    clock, store = FakeClock(), Store()
    a = make(store, "a", clock)
    assert await a.try_acquire_or_renew()
    store.write(LeaderElectionRecord("b", 15, clock.utcnow(), clock.utcnow(), 1))  # b forced it
    clock.advance(2)
    assert not await a.try_acquire_or_renew()  # fast path conflicts, slow path sees b
    assert a.get_leader() == "b" and not a.is_leader()
    assert store.record is not None and store.record.holder_identity == "b"


async def test_transitions_counted_across_holders() -> None:
    clock, store = FakeClock(), Store()
    a, b = make(store, "a", clock), make(store, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.advance(16)
    assert await b.try_acquire_or_renew()
    assert not await a.try_acquire_or_renew()  # a sees b (a change)
    clock.advance(16)
    assert await a.try_acquire_or_renew()
    assert [w.leader_transitions for w in store.writes] == [0, 1, 2]
    assert [w.holder_identity for w in store.writes] == ["a", "b", "a"]


async def test_get_errors_fail_the_try() -> None:
    clock, store = FakeClock(), Store()
    store.fail_gets = True
    a = make(store, "a", clock)
    assert not await a.try_acquire_or_renew()
    assert store.record is None


# -- run -----------------------------------------------------------------------------


async def test_run_acquires_leads_and_reports() -> None:
    clock, store = FakeClock(), Store()
    log: list[str] = []
    started = asyncio.Event()

    async def on_started() -> None:
        started.set()
        await asyncio.Event().wait()

    a = make(store, "a", clock, name="run-a", on_started=on_started,
             on_stopped=lambda: log.append("stopped"),
             on_new_leader=lambda who: log.append(f"new:{who}"))
    task = asyncio.create_task(a.run())
    await asyncio.wait_for(started.wait(), 5)
    assert master_status("run-a") == 1.0
    assert log == ["new:a"]
    assert isinstance(a.config.lock, FakeLock) and a.config.lock.events == ["became leader"]
    await until(lambda: len(store.writes) >= 5)  # renewals every retry period
    assert all(w.holder_identity == "a" for w in store.writes)
    assert clock.sleeps[-1] == 2.0
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log == ["new:a", "stopped"]
    assert master_status("run-a") == 0.0
    assert store.record is not None and store.record.holder_identity == "a"  # no release


async def test_acquire_retries_with_jitter_while_another_holds() -> None:
    clock, store = FakeClock(), Store()
    store.write(LeaderElectionRecord("b", 15, T0, T0, 0))
    leaders: list[str] = []
    started = asyncio.Event()
    started_at: list[float] = []

    async def on_started() -> None:
        started_at.append(clock.monotonic())
        started.set()

    a = make(store, "a", clock, on_new_leader=leaders.append, on_started=on_started)
    start = clock.monotonic()
    task = asyncio.create_task(a.run())
    await asyncio.wait_for(started.wait(), 5)
    assert leaders == ["b", "a"]
    assert 15 <= started_at[0] - start <= 15 + 2 * (1 + JITTER_FACTOR)
    acquire_sleeps = [s for s in clock.sleeps if s != 2.0]  # renewals sleep exactly 2 s
    assert acquire_sleeps and all(2.0 <= s <= 2.0 * (1 + JITTER_FACTOR) for s in acquire_sleeps)
    assert len(set(acquire_sleeps)) > 1  # jittered
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_lose_leadership_when_renewing_fails_past_the_deadline() -> None:
    clock, store = FakeClock(), Store()
    log: list[str] = []
    cancelled = asyncio.Event()

    async def on_started() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    a = make(store, "a", clock, name="lose-a", on_started=on_started,
             on_stopped=lambda: log.append("stopped"))
    task = asyncio.create_task(a.run())
    await until(lambda: master_status("lose-a") == 1.0 and len(store.writes) >= 2)
    store.fail_updates = store.fail_gets = True
    failing_since = clock.monotonic()
    await asyncio.wait_for(task, 5)  # run returns by itself
    lost_after = clock.monotonic() - failing_since
    # The renew deadline runs from the last successful renewal, at most one retry
    # period before the failures began.
    assert 10.0 - 2.0 <= lost_after <= 10.0
    assert cancelled.is_set()
    assert log == ["stopped"]
    assert master_status("lose-a") == 0.0
    assert isinstance(a.config.lock, FakeLock)
    assert a.config.lock.events == ["became leader", "stopped leading"]


async def test_lose_leadership_to_a_takeover() -> None:
    clock, store = FakeClock(), Store()
    a = make(store, "a", clock)
    task = asyncio.create_task(a.run())
    await until(lambda: a.is_leader())
    store.write(LeaderElectionRecord("b", 15, clock.utcnow(), clock.utcnow(), 1))
    taken_at = clock.monotonic()
    await asyncio.wait_for(task, 5)
    assert a.get_leader() == "b"
    # Seeing another holder's valid lease ends leadership at once, not after
    # retrying until the renew deadline: the next renewal (one retry period on) is it.
    assert clock.monotonic() - taken_at <= 2.0 * 1.2
    assert a.write_fence() == "not the leader of kube-system/test"


async def test_the_write_fence_closes_when_the_renew_deadline_passes_unnoticed() -> None:
    """A leader paused (SIGSTOP) past its renew deadline may not write when it resumes,
    before its renewal loop has had a chance to run."""
    clock, store = FakeClock(), Store()
    a = make(store, "a", clock)
    assert a.write_fence() == "not the leader of kube-system/test"
    task = asyncio.create_task(a.run())
    await until(lambda: a.is_leader())
    assert a.write_fence() is None
    clock.advance(9.9)               # still within the 10 s renew deadline
    assert a.write_fence() is None
    clock.advance(20.1)              # paused for 30 s in all: no loop turn happened
    assert a.write_fence() == ("leadership of kube-system/test not renewed for 30.0s "
                               "(renew deadline 10s)")
    await asyncio.wait_for(task, 5)  # and the loop ends leadership without a try
    assert a.write_fence() is not None


async def test_on_stopped_leading_called_when_cancelled_before_leading() -> None:
    clock, store = FakeClock(), Store()
    store.write(LeaderElectionRecord("b", 15, T0, T0, 0))
    log: list[str] = []

    async def on_stopped() -> None:
        log.append("stopped")

    a = make(store, "a", clock, on_stopped=on_stopped, release_on_cancel=True)
    task = asyncio.create_task(a.run())
    await until(lambda: a.get_leader() == "b")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log == ["stopped"]
    assert store.record is not None and store.record.holder_identity == "b"  # untouched


async def test_release_on_cancel() -> None:
    clock, store = FakeClock(), Store()
    store.write(LeaderElectionRecord("", 1, T0, T0, 3))
    log: list[str] = []

    async def on_started() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            log.append(f"work stopped, holder={store.record and store.record.holder_identity}")

    a = make(store, "a", clock, on_started=on_started, release_on_cancel=True,
             on_stopped=lambda: log.append("stopped"))
    task = asyncio.create_task(a.run())
    await until(lambda: a.is_leader() and len(store.writes) >= 3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.record is not None
    assert store.record.holder_identity == ""
    assert store.record.lease_duration_seconds == 1
    assert store.record.leader_transitions == 4
    assert store.record.acquire_time == store.record.renew_time == clock.utcnow()
    # the guarded work stopped before the lease was released; then on_stopped_leading
    assert log == ["work stopped, holder=a", "stopped"]
    assert not a.is_leader()
    # another candidate takes a released lock over at its first try
    b = make(store, "b", clock)
    assert await b.try_acquire_or_renew()
    assert store.record.holder_identity == "b" and store.record.leader_transitions == 5


async def test_failing_callbacks_do_not_break_the_run() -> None:
    clock, store = FakeClock(), Store()

    async def on_started() -> None:
        raise RuntimeError("boom")

    def on_new_leader(_: str) -> None:
        raise RuntimeError("boom")

    def on_stopped() -> None:
        raise RuntimeError("boom")

    a = make(store, "a", clock, on_started=on_started, on_new_leader=on_new_leader,
             on_stopped=on_stopped)
    task = asyncio.create_task(a.run())
    await until(lambda: len(store.writes) >= 3)  # still renewing
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_async_on_new_leader_runs_as_a_task() -> None:
    clock, store = FakeClock(), Store()
    seen: list[str] = []

    async def on_new_leader(who: str) -> None:
        seen.append(who)

    a = make(store, "a", clock, on_new_leader=on_new_leader)
    assert await a.try_acquire_or_renew()
    a._maybe_report_transition()
    a._maybe_report_transition()  # reported once
    await until(lambda: seen == ["a"])


# -- health check ----------------------------------------------------------------------


async def test_healthz() -> None:
    clock, store = FakeClock(), Store()
    adaptor = HealthzAdaptor()
    assert adaptor.name == "leaderElection" and adaptor.timeout == 20.0
    adaptor.check()  # no elector yet: healthy
    a = make(store, "a", clock)
    adaptor.set_leader_election(a)
    assert adaptor.healthy()
    assert await a.try_acquire_or_renew()
    clock.advance(15 + 20)
    assert adaptor.healthy()  # exactly at the limit: still healthy
    clock.advance(0.5)
    with pytest.raises(LeaderElectionUnhealthy, match="failed election to renew leadership"):
        adaptor.check()
    assert not adaptor.healthy()
    # a renewal makes it healthy again; a non-leader is always healthy
    store.write(LeaderElectionRecord("b", 15, T0, T0, 1))
    assert not await a.try_acquire_or_renew()
    clock.advance(100)
    assert adaptor.healthy()


async def test_run_or_die_ties_the_watch_dog_and_validates() -> None:
    clock, store = FakeClock(), Store()
    adaptor = HealthzAdaptor(timeout=1.0)
    started = asyncio.Event()

    async def on_started() -> None:
        started.set()
        await asyncio.Event().wait()

    cfg = LeaderElectionConfig(FakeLock(store, "a"),
                               LeaderCallbacks(on_started_leading=on_started,
                                               on_stopped_leading=lambda: None),
                               watch_dog=adaptor, name="die-a")
    task = asyncio.create_task(run_or_die(cfg, clock=clock))
    await asyncio.wait_for(started.wait(), 5)
    assert adaptor._elector is not None and adaptor._elector.is_leader()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ValueError, match="lease_duration"):
        await run_or_die(LeaderElectionConfig(FakeLock(store, "a"), cfg.callbacks,
                                              lease_duration=5.0))
