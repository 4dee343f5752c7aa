"""Leader election over a resource lock (client-go ``tools/leaderelection``).

Role: among candidates running the same code, at most one (the one holding
the lock) runs ``on_started_leading``; the others wait, ready to take over.
kube-controller-manager wraps its whole run in this.

Data flow::

    run()
      ├─ acquire: try_acquire_or_renew() every retry_period (+ up to 1.2× jitter)
      │           until it succeeds ──► leader_election_master_status = 1
      ├─ on_started_leading() started as a task
      ├─ renew:   every retry_period, try_acquire_or_renew() again, retrying for at
      │           most renew_deadline; a renewal that does not succeed within the
      │           deadline ends leadership ──► master_status = 0
      └─ finally: cancel (and wait for) the on_started_leading task; with
                  release_on_cancel, re-read the lock and write an empty holder
                  with a 1 s lease over it (Conflict retried);
                  on_stopped_leading() — always, leader or not.

try_acquire_or_renew (client-go's algorithm):

1. Fast path: a leader whose lease is still valid writes its renewal at once,
   optimistically, over the Lease it last wrote (its resourceVersion makes a
   concurrent change fail with Conflict, which falls back to the slow path).
2. Slow path: read the lock (create it when absent). When its record differs
   from the one last read, remember it together with the LOCAL monotonic time
   of this observation (``observed_time``).
3. If another candidate holds it and ``observed_time + leaseDurationSeconds``
   is still in the future, give up for now. Timestamps written by other
   candidates are never compared with the local clock: only the local time
   at which a change was seen counts, so clock skew does not matter.
4. Otherwise write the record with this identity: ``acquireTime`` and
   ``leaseTransitions`` kept when renewing; ``leaseTransitions + 1`` when the
   holder changes.

Every observed change of holder is reported once to ``on_new_leader``.
Cancellation is the context of client-go: cancelling the task running
:meth:`LeaderElector.run` stops the election (the ``CancelledError`` is
re-raised after the clean-up); losing the lease makes ``run`` return.

Deviations from client-go, deliberate: the record change is detected with
microsecond timestamps (client-go's comparison truncates them to seconds);
with ``release_on_cancel`` the ``on_started_leading`` task is cancelled and
awaited *before* the lease is released (client-go releases first), so the
guarded work has stopped when another candidate can take over; the release
write is bounded by ``renew_deadline``; coordinated leader election
(LeaseCandidate) is not implemented.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pykcm.api.clock import REAL_CLOCK, Clock, RealClock
from pykcm.api.randomness import RandomSource, random_of
from pykcm.client import is_conflict, is_not_found
from pykcm.leaderelection import metrics
from pykcm.leaderelection.healthz import HealthzAdaptor, LeaderElectionUnhealthy
from pykcm.leaderelection.lease_lock import LeaderElectionRecord, ResourceLock

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "Clock",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElector",
    "RealClock",
    "run_or_die",
]

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2
"""The acquire loop waits retry_period × (1 + random() × JITTER_FACTOR) between tries."""

# kube-controller-manager's defaults (--leader-elect-lease-duration etc.), seconds.
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0


@dataclass
class LeaderCallbacks:
    """What the elector calls (client-go ``LeaderCallbacks``).

    - ``on_started_leading()``: a coroutine function, run as a task once the
      lease is acquired; the task is cancelled when leadership ends.
    - ``on_stopped_leading()``: called (and awaited if it returns an awaitable)
      when ``run`` ends, whether or not this candidate ever led.
    - ``on_new_leader(identity)``: called when the observed holder changes,
      including the first holder observed; a coroutine result runs as a task.
    """

    on_started_leading: Callable[[], Awaitable[object]] | None = None
    on_stopped_leading: Callable[[], object] | None = None
    on_new_leader: Callable[[str], object] | None = None


@dataclass
class LeaderElectionConfig:
    """The configuration of one elector (client-go ``LeaderElectionConfig``), durations in s.

    - ``lease_duration``: how long non-leaders wait, after last observing a
      change of the record, before they take the lock over (stored in the
      Lease as whole seconds).
    - ``renew_deadline``: how long the leader keeps retrying a renewal before
      it gives up leadership.
    - ``retry_period``: the wait between tries.
    - ``watch_dog``: a health adaptor tied to the elector by :func:`run_or_die`.
    - ``release_on_cancel``: on cancellation (or loss) while leading, write an
      empty holder with a 1 s lease so another candidate takes over at once.
    - ``name``: the lock's name for logs, metrics and the health check.
    """

    lock: ResourceLock
    callbacks: LeaderCallbacks = field(default_factory=LeaderCallbacks)
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    watch_dog: HealthzAdaptor | None = None
    release_on_cancel: bool = False
    name: str = ""

    def validate(self) -> None:
        """Raise ValueError unless the configuration is usable (client-go's checks)."""
        for fname in ("lease_duration", "renew_deadline", "retry_period"):
            value = getattr(self, fname)
            if not (value > 0) or math.isinf(value):
                raise ValueError(f"{fname} must be greater than zero and finite, not {value}")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"lease_duration ({self.lease_duration}s) must be greater than "
                f"renew_deadline ({self.renew_deadline}s)")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"renew_deadline ({self.renew_deadline}s) must be greater than "
                f"retry_period*JitterFactor ({self.retry_period}s*{JITTER_FACTOR})")
        if self.lease_duration < 1:
            raise ValueError(
                f"lease_duration ({self.lease_duration}s) must be at least 1s: "
                "the Lease stores it in whole seconds")
        if self.callbacks.on_started_leading is None:
            raise ValueError("callbacks.on_started_leading must not be None")
        if self.callbacks.on_stopped_leading is None:
            raise ValueError("callbacks.on_stopped_leading must not be None")
        if self.lock is None:
            raise ValueError("lock must not be None")
        if not self.lock.identity():
            raise ValueError("lock identity is empty")


class LeaderElector:
    """One candidate of an election (client-go ``LeaderElector``)."""

    def __init__(self, config: LeaderElectionConfig, *, clock: Clock | None = None,
                 rng: RandomSource | None = None) -> None:
        config.validate()
        self.config = config
        self.clock: Clock = clock if clock is not None else REAL_CLOCK
        # The retry jitter (the manager's "leader-election" stream; unseeded by default).
        self._rng = random_of(rng)
        self._observed_record = LeaderElectionRecord()
        self._observed_raw: bytes | None = None
        self._observed_time = -math.inf
        self._renewed_at = -math.inf  # monotonic time of our last successful acquire/renew
        self._reported_leader = ""
        self._background: set[asyncio.Task[object]] = set()
        metrics.leader_off(config.name)

    # -- state ----------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.config.lock.identity()

    @property
    def observed_record(self) -> LeaderElectionRecord:
        """The record last read from or written to the lock."""
        return self._observed_record

    @property
    def observed_time(self) -> float:
        """The local monotonic time at which ``observed_record`` was observed."""
        return self._observed_time

    def get_leader(self) -> str:
        """The identity of the last observed leader ("" if none was observed yet)."""
        return self._observed_record.holder_identity

    def is_leader(self) -> bool:
        """Whether the last observed leader is this candidate."""
        return self._observed_record.holder_identity == self.identity

    def write_fence(self) -> str | None:
        """None while this candidate may act as the leader, else why it may not.

        It may while it leads and its last successful renewal is less than
        ``renew_deadline`` old: past that, others (who wait ``lease_duration``
        from the last change they saw) may be about to take over. Checked
        before every write of the controllers' clients, so a process that was
        paused (SIGSTOP, a long GC, a frozen VM) writes nothing once it resumes,
        even before its renewal loop gets to run.
        """
        if not self.is_leader():
            return f"not the leader of {self.config.lock.describe()}"
        age = self.clock.monotonic() - self._renewed_at
        if age >= self.config.renew_deadline:
            return (f"leadership of {self.config.lock.describe()} not renewed for {age:.1f}s "
                    f"(renew deadline {self.config.renew_deadline:g}s)")
        return None

    def check(self, max_tolerable_expired_lease: float) -> None:
        """Raise LeaderElectionUnhealthy if leading but not renewed for
        lease_duration + ``max_tolerable_expired_lease`` (client-go ``Check``)."""
        if not self.is_leader():
            return  # a hot standby is healthy
        stalled = self.clock.monotonic() - self._observed_time
        if stalled > self.config.lease_duration + max_tolerable_expired_lease:
            raise LeaderElectionUnhealthy(
                f"failed election to renew leadership on lease {self.config.name}")

    def _set_observed_record(self, record: LeaderElectionRecord) -> None:
        self._observed_record = record
        self._observed_time = self.clock.monotonic()

    def _is_lease_valid(self, now: float) -> bool:
        return self._observed_time + self._observed_record.lease_duration_seconds > now

    # -- the run ----------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead while renewing, then clean up.

        Returns when leadership is lost; on cancellation, cleans up and
        re-raises. ``on_stopped_leading`` is called in every case.
        """
        leading = False
        started: asyncio.Task[object] | None = None
        try:
            await self._acquire()
            leading = True
            assert self.config.callbacks.on_started_leading is not None
            started = asyncio.create_task(
                self._run_started_leading(self.config.callbacks.on_started_leading),
                name=f"leader-election-{self.config.name}-leading")
            await self._renew()
        finally:
            if started is not None:
                started.cancel()
                await asyncio.wait([started])
            if leading:
                metrics.leader_off(self.config.name)
                self.config.lock.record_event("stopped leading")
                if self.config.release_on_cancel:
                    await self.release()
            await self._call_stopped_leading()

    async def _run_started_leading(self, fn: Callable[[], Awaitable[object]]) -> object:
        try:
            return await fn()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("on_started_leading of %s failed", self.config.lock.describe())
            return None

    async def _call_stopped_leading(self) -> None:
        fn = self.config.callbacks.on_stopped_leading
        if fn is None:
            return
        try:
            result = fn()
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("on_stopped_leading of %s failed", self.config.lock.describe())

    async def _acquire(self) -> None:
        """Try until the lock is acquired (raises CancelledError when cancelled)."""
        desc = self.config.lock.describe()
        log.info("attempting to acquire leader lease %s...", desc)
        while True:
            succeeded = await self.try_acquire_or_renew()
            self._maybe_report_transition()
            if succeeded:
                self.config.lock.record_event("became leader")
                metrics.leader_on(self.config.name)
                log.info("successfully acquired lease %s", desc)
                return
            log.debug("failed to acquire lease %s", desc)
            period = self.config.retry_period
            await self.clock.sleep(period + self._rng.random() * JITTER_FACTOR * period)

    async def _renew(self) -> None:
        """Renew every retry_period; return once a renewal misses its deadline."""
        desc = self.config.lock.describe()
        while True:
            renewed = await self._renew_within_deadline()
            self._maybe_report_transition()
            if not renewed:
                log.info("failed to renew lease %s: timed out waiting for the condition", desc)
                return
            log.debug("successfully renewed lease %s", desc)
            await self.clock.sleep(self.config.retry_period)

    async def _renew_within_deadline(self) -> bool:
        """Try at once, then every retry_period, until success or renew_deadline.

        The deadline runs from the last successful renewal, not from this
        attempt: after a pause longer than the deadline leadership ends at
        once. A renewal that finds another holder's valid lease ends it at once
        too (client-go would retry until the deadline; nothing can come of it).
        """
        deadline = self._renewed_at + self.config.renew_deadline
        while True:
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            try:
                async with asyncio.timeout(remaining):  # bounds a hung API call
                    if await self.try_acquire_or_renew():
                        return True
            except TimeoutError:
                return False
            if self.get_leader() and not self.is_leader():
                return False  # someone else holds a valid lease: it is theirs
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            await self.clock.sleep(min(self.config.retry_period, remaining))

    async def release(self) -> bool:
        """Give up the lock if held: an empty holder with a 1 s lease (client-go ``release``).

        The lock is read first, as client-go does (kubernetes#131867): a renewal
        cancelled in flight may still have been applied by the server, leaving the
        resourceVersion last seen by the lock stale, so an update over it would be
        rejected with Conflict and nobody could take over before the lease expired.
        A Conflict (such a renewal landing between the read and the write) is
        retried with a fresh read, within ``renew_deadline`` (kubernetes#137988).
        The decision is made on the record just read: a lock another candidate
        holds by now is left alone.
        """
        if not self.is_leader():
            return True
        desc = self.config.lock.describe()
        try:
            async with asyncio.timeout(self.config.renew_deadline):
                while True:
                    try:
                        current, _ = await self.config.lock.get()
                    except Exception as e:  # noqa: BLE001 - any failure: no release
                        if is_not_found(e):
                            log.info("lease lock %s not found", desc)
                        else:
                            log.error("error retrieving resource lock %s: %s", desc, e)
                        return False
                    if current.holder_identity != self.identity:
                        log.info("not releasing lock %s: held by %r", desc,
                                 current.holder_identity)
                        return True
                    now = self.clock.utcnow()
                    record = LeaderElectionRecord(
                        holder_identity="", lease_duration_seconds=1, acquire_time=now,
                        renew_time=now, leader_transitions=current.leader_transitions)
                    try:
                        await self.config.lock.update(record)
                    except Exception as e:  # a Conflict is retried, anything else fails
                        if is_conflict(e):
                            log.info("conflict releasing lock %s, retrying", desc)
                            continue
                        raise
                    break
        except Exception as e:  # noqa: BLE001 - any failure: the release did not happen
            log.error("Failed to release lock %s: %s", desc, e)
            return False
        self._set_observed_record(record)
        return True

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to acquire or renew the lock; True on success."""
        lock = self.config.lock
        now_wall = self.clock.utcnow()
        now = self.clock.monotonic()
        record = LeaderElectionRecord(
            holder_identity=lock.identity(),
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=now_wall, renew_time=now_wall)

        # 1. fast path: the leader renews optimistically over what it last wrote.
        if self.is_leader() and self._is_lease_valid(now):
            old = self._observed_record
            record = record.replace(acquire_time=old.acquire_time,
                                    leader_transitions=old.leader_transitions)
            try:
                await lock.update(record)
            except Exception as e:  # noqa: BLE001 - any failure falls back to the slow path
                log.error("Failed to update lock optimistically: %s, falling back to slow path",
                          e)
            else:
                self._set_observed_record(record)
                self._renewed_at = now
                return True

        # 2. obtain or create the record.
        try:
            old, raw = await lock.get()
        except Exception as e:  # noqa: BLE001 - any failure is a failed try
            if not is_not_found(e):
                log.error("error retrieving resource lock %s: %s", lock.describe(), e)
                return False
            try:
                await lock.create(record)
            except Exception as e2:  # noqa: BLE001 - any failure is a failed try
                log.error("error initially creating leader election record: %s", e2)
                return False
            self._set_observed_record(record)
            self._renewed_at = now
            return True

        # 3. a changed record restarts the local expiry clock.
        if self._observed_raw != raw:
            self._set_observed_record(old)
            self._observed_raw = raw
        if old.holder_identity and self._is_lease_valid(now) and not self.is_leader():
            log.debug("lock is held by %s and has not yet expired", old.holder_identity)
            return False

        # 4. take it over (or renew it through the slow path).
        if self.is_leader():
            record = record.replace(acquire_time=old.acquire_time,
                                    leader_transitions=old.leader_transitions)
        else:
            record = record.replace(leader_transitions=old.leader_transitions + 1)
        try:
            await lock.update(record)
        except Exception as e:  # noqa: BLE001 - any failure is a failed try
            log.error("Failed to update lock: %s", e)
            return False
        self._set_observed_record(record)
        self._renewed_at = now
        return True

    def _maybe_report_transition(self) -> None:
        holder = self._observed_record.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        fn = self.config.callbacks.on_new_leader
        if fn is None:
            return
        try:
            result = fn(holder)
        except Exception:
            log.exception("on_new_leader of %s failed", self.config.lock.describe())
            return
        if inspect.isawaitable(result):
            task: asyncio.Task[object] = asyncio.ensure_future(result)
            self._background.add(task)
            task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[object]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("on_new_leader of %s failed: %r", self.config.lock.describe(),
                      task.exception())


async def run_or_die(config: LeaderElectionConfig, *, clock: Clock | None = None) -> None:
    """Build an elector (ValueError on a bad config), tie its watch dog, and run it."""
    elector = LeaderElector(config, clock=clock)
    if config.watch_dog is not None:
        config.watch_dog.set_leader_election(elector)
    await elector.run()
