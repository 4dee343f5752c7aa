"""The Controller runtime (pykcm.controller.controller) without a server: enqueueing and
de-duplication, retries through a fast rate limiter, Result, owner-based enqueueing,
shutdown, and the health check when a worker dies."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.controller import Controller, Result
from pykcm.workqueue import ItemExponentialFailureRateLimiter, RateLimiter


def fast_limiter() -> RateLimiter[str]:
    # 1 ms, 2 ms, 4 ms, ... capped at 10 ms: retries without slowing the test.
    return ItemExponentialFailureRateLimiter(0.001, 0.01)


def obj(name: str, ns: str | None = "ns", owner: dict[str, Any] | None = None,
        **meta: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, **meta}
    if ns:
        m["namespace"] = ns
    if owner is not None:
        m["ownerReferences"] = [owner]
    return {"metadata": m}


def owner_ref(name: str, uid: str, kind: str = "ReplicaSet", api_version: str = "apps/v1",
              controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
            "controller": controller}


async def eventually(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


class FakeRegistration:
    def __init__(self, synced: bool = True) -> None:
        self.synced = synced

    def has_synced(self) -> bool:
        return self.synced


class FakeInformer:
    """Enough of a SharedIndexInformer for Controller.watch: keeps the handlers."""

    def __init__(self, synced: bool = True) -> None:
        self.handlers: list[Any] = []
        self.registration = FakeRegistration(synced)

    def add_event_handler(self, handler: Any, resync_period: float | None = None
                          ) -> FakeRegistration:
        self.handlers.append(handler)
        return self.registration


class Source:
    """A GenericInformer look-alike (``.informer``)."""

    def __init__(self, synced: bool = True) -> None:
        self.informer: Any = FakeInformer(synced)


def drain(ctl: Controller) -> list[str]:
    """The keys queued right now, in order (taken without processing them)."""
    out = []
    q = ctl.queue
    while len(q):
        item = q._queue.popleft()
        q._dirty.discard(item)
        out.append(item)
    return out


# -- enqueueing ---------------------------------------------------------------------------


async def test_enqueue_keys_and_dedup() -> None:
    ctl = Controller("t", lambda k: None)
    ctl.enqueue(obj("a"))
    ctl.enqueue(obj("a"))
    ctl.enqueue(obj("node-1", ns=None))
    ctl.enqueue_key("ns/b")
    ctl.enqueue(DeletedFinalStateUnknown("ns/gone", obj("gone")))
    assert drain(ctl) == ["ns/a", "node-1", "ns/b", "ns/gone"]


async def test_watch_handler_enqueues_own_key() -> None:
    ctl = Controller("t", lambda k: None)
    src = Source()
    ctl.watch(src)
    (h,) = src.informer.handlers
    h.on_add(obj("a"), True)
    h.on_update(obj("a"), obj("b"))
    h.on_delete(DeletedFinalStateUnknown("ns/c", obj("c")))
    assert drain(ctl) == ["ns/a", "ns/b", "ns/c"]


async def test_enqueue_after() -> None:
    ctl = Controller("t", lambda k: None)
    ctl.enqueue_after(obj("a"), 0.01)
    assert len(ctl.queue) == 0
    await eventually(lambda: len(ctl.queue) == 1)
    assert drain(ctl) == ["ns/a"]


# -- owner-based enqueueing ---------------------------------------------------------------


@pytest.mark.parametrize(("ref", "queued"), [
    (owner_ref("web", "u1"), True),
    (owner_ref("web", "u1", api_version="apps/v1beta2"), True),  # group matters, not version
    (owner_ref("web", "u1", api_version="extensions/v1beta1"), False),
    (owner_ref("web", "u1", kind="Deployment"), False),
    (owner_ref("web", "u1", controller=False), False),
    (None, False),
])
async def test_enqueue_owner_matches_group_and_kind(ref: dict[str, Any] | None,
                                                    queued: bool) -> None:
    ctl = Controller("t", lambda k: None)
    assert ctl.enqueue_owner(obj("p", owner=ref), "apps/v1", "ReplicaSet") is queued
    assert drain(ctl) == (["ns/web"] if queued else [])


async def test_enqueue_owner_resolve_and_tombstone() -> None:
    ctl = Controller("t", lambda k: None)
    p = obj("p", owner=owner_ref("web", "u1"))
    assert not ctl.enqueue_owner(p, "apps/v1", "ReplicaSet", lambda key, ref: False)
    seen: list[tuple[str, str]] = []

    def resolve(key: str, ref: Any) -> bool:
        seen.append((key, ref["uid"]))
        return True

    assert ctl.enqueue_owner(DeletedFinalStateUnknown("ns/p", p), "apps/v1", "ReplicaSet",
                             resolve)
    assert seen == [("ns/web", "u1")]
    assert drain(ctl) == ["ns/web"]


async def test_watch_owned_enqueues_old_owner_when_controller_changes() -> None:
    ctl = Controller("t", lambda k: None)
    src = Source()
    ctl.watch_owned(src, "apps/v1", "ReplicaSet")
    (h,) = src.informer.handlers
    old = obj("p", owner=owner_ref("old", "u-old"))
    new = obj("p", owner=owner_ref("new", "u-new"))
    h.on_update(old, new)
    assert drain(ctl) == ["ns/old", "ns/new"]
    # Same owner: only once.
    h.on_update(new, new)
    assert drain(ctl) == ["ns/new"]
    # Released (no controller any more): the old owner learns of it.
    h.on_update(new, obj("p"))
    assert drain(ctl) == ["ns/new"]
    h.on_add(new, False)
    h.on_delete(DeletedFinalStateUnknown("ns/p", old))
    assert drain(ctl) == ["ns/new", "ns/old"]
    # Objects owned by another kind are not ours.
    h.on_add(obj("p", owner=owner_ref("d", "u", kind="Deployment")), False)
    assert drain(ctl) == []


# -- running ------------------------------------------------------------------------------


async def run_until(ctl: Controller, cond: Callable[[], bool], workers: int = 1) -> None:
    task = asyncio.create_task(ctl.run(workers))
    try:
        await eventually(cond)
    finally:
        ctl.shutdown()
        await asyncio.wait_for(task, 10)


async def test_reconciles_each_key_once_sync_and_async() -> None:
    seen: list[str] = []

    async def reconcile(key: str) -> None:
        seen.append(key)

    ctl = Controller("t", reconcile)
    for k in ("a", "b", "a", "c"):
        ctl.enqueue_key(k)
    await run_until(ctl, lambda: len(seen) == 3, workers=2)
    assert sorted(seen) == ["a", "b", "c"]

    plain: list[str] = []
    ctl2 = Controller("t2", plain.append)
    ctl2.enqueue_key("x")
    await run_until(ctl2, lambda: plain == ["x"])


async def test_failed_sync_retries_with_rate_limiter_then_forgets() -> None:
    attempts: list[int] = []
    requeues_seen: list[int] = []

    ctl: Controller

    def reconcile(key: str) -> None:
        requeues_seen.append(ctl.queue.num_requeues(key))
        attempts.append(1)
        if len(attempts) < 4:
            raise RuntimeError("not yet")

    ctl = Controller("t", reconcile, rate_limiter=fast_limiter())
    ctl.enqueue_key("k")
    await run_until(ctl, lambda: len(attempts) == 4)
    assert requeues_seen == [0, 1, 2, 3]
    assert ctl.queue.num_requeues("k") == 0  # success forgets the failures


async def test_max_retries_drops_the_key() -> None:
    attempts: list[str] = []

    def reconcile(key: str) -> None:
        attempts.append(key)
        raise RuntimeError("always")

    ctl = Controller("t", reconcile, rate_limiter=fast_limiter(), max_retries=2)
    ctl.enqueue_key("k")
    task = asyncio.create_task(ctl.run())
    await eventually(lambda: len(attempts) == 3)
    # Dropped: forgotten, and not queued nor waiting any more.
    await eventually(lambda: ctl.queue.num_requeues("k") == 0)
    assert len(ctl.queue) == 0
    ctl.shutdown()
    await asyncio.wait_for(task, 10)
    assert len(attempts) == 3


async def test_result_requeue_and_requeue_after() -> None:
    calls: list[str] = []
    waiting: list[int] = []
    ctl2: Controller

    def reconcile(key: str) -> Result | None:
        calls.append(key)
        if key == "after":
            # On the second call: was the key parked in the delaying heap meanwhile?
            waiting.append(ctl2.queue.waiting_len())
        if key == "r" and calls.count("r") == 1:
            return Result(requeue=True)
        if key == "after" and calls.count("after") == 1:
            return Result(requeue_after=0.05)
        return None

    ctl = Controller("t", reconcile, rate_limiter=fast_limiter())
    ctl.enqueue_key("r")
    await run_until(ctl, lambda: calls.count("r") == 2)
    assert ctl.queue.num_requeues("r") == 0

    ctl2 = Controller("t2", reconcile, rate_limiter=fast_limiter())
    ctl2.enqueue_key("after")
    await run_until(ctl2, lambda: calls.count("after") == 2)
    # requeue_after is not a failure: the rate limiter never counted it.
    assert ctl2.queue.num_requeues("after") == 0
    assert waiting == [0, 0]  # delivered from the heap, not still waiting


async def test_requeue_after_wins_over_requeue() -> None:
    # controller-runtime's precedence: a delay asked for is honoured, not counted as a failure.
    calls: list[str] = []
    requeues: list[int] = []
    ctl: Controller

    def reconcile(key: str) -> Result | None:
        calls.append(key)
        requeues.append(ctl.queue.num_requeues(key))
        return Result(requeue=True, requeue_after=0.01) if len(calls) == 1 else None

    ctl = Controller("t", reconcile, rate_limiter=fast_limiter())
    ctl.enqueue_key("k")
    await run_until(ctl, lambda: len(calls) == 2)
    assert requeues == [0, 0]


async def test_one_key_never_reconciled_by_two_workers_at_once() -> None:
    active: set[str] = set()
    overlaps: list[str] = []
    done_count = 0
    release = asyncio.Event()

    async def reconcile(key: str) -> None:
        nonlocal done_count
        if key in active:
            overlaps.append(key)
        active.add(key)
        await release.wait()
        active.discard(key)
        done_count += 1

    ctl = Controller("t", reconcile)
    task = asyncio.create_task(ctl.run(workers=4))
    ctl.enqueue_key("k")
    await eventually(lambda: "k" in active)
    ctl.enqueue_key("k")  # while held: queued again only after done
    await asyncio.sleep(0)
    assert len(ctl.queue) == 0
    release.set()
    await eventually(lambda: done_count == 2)
    ctl.shutdown()
    await asyncio.wait_for(task, 10)
    assert overlaps == []


async def test_waits_for_caches_and_fails_if_they_never_sync() -> None:
    ctl = Controller("t", lambda k: None)
    ctl.watch(Source(synced=False))
    with pytest.raises(RuntimeError, match="caches did not sync"):
        await ctl.run(sync_timeout=0.05)
    assert ctl.health_check() == "caches did not sync"


async def test_shutdown_lets_held_items_finish_and_stops_taking_work() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        started.set()
        await release.wait()
        finished.append(key)

    ctl = Controller("t", reconcile)
    ctl.enqueue_key("held")
    task = asyncio.create_task(ctl.run())
    await started.wait()
    ctl.enqueue_key("queued-later")
    ctl.shutdown()
    assert not task.done()
    release.set()
    await asyncio.wait_for(task, 10)
    assert finished == ["held"]  # shutdown stops taking work: the rest is not processed
    assert not ctl.running
    assert ctl.health_check() is None


async def test_cancelling_run_waits_for_the_held_item() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        started.set()
        await release.wait()
        finished.append(key)

    ctl = Controller("t", reconcile)
    ctl.enqueue_key("held")
    task = asyncio.create_task(ctl.run(workers=2))
    await started.wait()
    task.cancel()
    await asyncio.sleep(0.01)
    assert not task.done()  # the worker is still finishing "held"
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert finished == ["held"]


async def test_shutdown_with_drain_processes_everything_queued() -> None:
    seen: list[str] = []

    async def reconcile(key: str) -> None:
        await asyncio.sleep(0)
        seen.append(key)

    ctl = Controller("t", reconcile)
    task = asyncio.create_task(ctl.run(workers=2))
    for i in range(20):
        ctl.enqueue_key(f"k{i}")
    await asyncio.wait_for(ctl.shutdown_with_drain(), 10)
    await asyncio.wait_for(task, 10)
    assert sorted(seen) == sorted(f"k{i}" for i in range(20))


async def test_run_twice_is_refused() -> None:
    ctl = Controller("t", lambda k: None)
    task = asyncio.create_task(ctl.run())
    await eventually(lambda: ctl.running)
    with pytest.raises(RuntimeError, match="already running"):
        await ctl.run()
    ctl.shutdown()
    await asyncio.wait_for(task, 10)


async def test_health_check_reports_a_dead_worker() -> None:
    class BrokenLimiter:
        # A rate limiter that raises: the failure escapes the worker's error handling.
        def when(self, item: str) -> float:
            raise ValueError("limiter broke")

        def forget(self, item: str) -> None:
            pass

        def num_requeues(self, item: str) -> int:
            return 0

    def reconcile(key: str) -> None:
        raise RuntimeError("sync failed")

    ctl = Controller("t", reconcile, rate_limiter=BrokenLimiter())
    assert ctl.health_check() is None
    ctl.enqueue_key("k")
    with pytest.raises(ValueError, match="limiter broke"):
        await asyncio.wait_for(ctl.run(workers=2), 10)
    msg = ctl.health_check()
    assert msg is not None and "worker died" in msg and "limiter broke" in msg
    assert not ctl.running
