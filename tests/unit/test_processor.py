"""pykcm.cache.processor (sharedProcessor, processorListener) and the handler adaptors.

Delivery order, non-blocking fan-out, sync-only distribution, per-listener
resync bookkeeping with a fake clock, has_synced counting, exceptions,
close/stop; then ResourceEventHandlerFuncs and FilteringResourceEventHandler.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from pykcm.cache import (
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    ProcessorListener,
    ResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration,
    SharedProcessor,
)
from pykcm.cache.processor import (
    ADD_NOTIFICATION,
    DELETE_NOTIFICATION,
    UPDATE_NOTIFICATION,
    YIELD_EVERY,
    determine_resync_period,
    handler_name,
)


def obj(name: str, rv: int = 1, ns: str = "ns", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv),
                         "labels": labels}}


class Recorder:
    """Records every notification as a tuple; optionally a coroutine handler."""

    def __init__(self, *, is_async: bool = False, fail_on: str | None = None) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.is_async = is_async
        self.fail_on = fail_on

    def _record(self, event: tuple[Any, ...], obj: Any) -> Any:
        if self.fail_on is not None and isinstance(obj, dict) \
                and obj["metadata"]["name"] == self.fail_on:
            raise RuntimeError("handler failure")
        self.events.append(event)
        return None

    def _maybe_async(self, event: tuple[Any, ...], obj: Any) -> Any:
        if not self.is_async:
            return self._record(event, obj)

        async def co() -> None:
            await asyncio.sleep(0)
            self._record(event, obj)
        return co()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> Any:
        return self._maybe_async(("add", name_of(obj), is_in_initial_list), obj)

    def on_update(self, old: Any, new: Any) -> Any:
        return self._maybe_async(("update", name_of(old), rv_of(old), rv_of(new)), new)

    def on_delete(self, obj: Any) -> Any:
        return self._maybe_async(("delete", name_of(obj)), obj)


def name_of(o: Any) -> str:
    if isinstance(o, DeletedFinalStateUnknown):
        return "tombstone:" + o.key
    return str(o["metadata"]["name"])


def rv_of(o: Any) -> str:
    return str(o["metadata"]["resourceVersion"])


async def eventually(cond: Any, timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def listener(handler: ResourceEventHandler, resync: float = 0.0, now: float = 0.0,
             synced: bool = True) -> ProcessorListener:
    return ProcessorListener(handler, resync, resync, now, lambda: synced)


# --- delivery ------------------------------------------------------------------


async def test_notifications_are_delivered_in_order_to_every_listener() -> None:
    p = SharedProcessor()
    a, b = Recorder(), Recorder(is_async=True)
    p.add_listener(listener(a))
    p.add_listener(listener(b))
    p.start()
    p.add(obj("x"), True)
    p.update(obj("x", 1), obj("x", 2), False)
    p.delete(obj("x", 2))
    p.add(obj("y"), False)
    expected = [("add", "x", True), ("update", "x", "1", "2"), ("delete", "x"),
                ("add", "y", False)]
    await eventually(lambda: len(a.events) == 4 and len(b.events) == 4)
    assert a.events == expected
    assert b.events == expected
    await p.stop()


async def test_distribution_never_runs_handlers_inline() -> None:
    p = SharedProcessor()
    r = Recorder()
    p.add_listener(listener(r))
    p.start()
    for i in range(100):
        p.add(obj(f"o{i}"), False)
    # Nothing was called synchronously: distribution only appended.
    assert r.events == []
    assert p.listeners[0].pending() == 100
    await eventually(lambda: len(r.events) == 100)
    await p.stop()


async def test_one_notification_tuple_is_shared_by_listeners() -> None:
    p = SharedProcessor()
    l1, l2 = listener(Recorder()), listener(Recorder())
    p.add_listener(l1)
    p.add_listener(l2)
    p.update(obj("x", 1), obj("x", 2), False)
    assert l1._buffer[0] is l2._buffer[0]
    assert l1._buffer[0][0] == UPDATE_NOTIFICATION


async def test_sync_updates_go_only_to_syncing_listeners() -> None:
    clock = FakeClock()
    p = SharedProcessor(clock)
    due, not_due, never = Recorder(), Recorder(), Recorder()
    p.add_listener(ProcessorListener(due, 10, 10, clock.now, lambda: True))
    p.add_listener(ProcessorListener(not_due, 30, 30, clock.now, lambda: True))
    p.add_listener(ProcessorListener(never, 0, 0, clock.now, lambda: True))
    p.start()
    # Before any resync check every listener is syncing (client-go's initial state).
    p.update(obj("a", 1), obj("a", 1), True)
    clock.now += 10
    assert p.should_resync() is True
    p.update(obj("b", 1), obj("b", 1), True)        # a resync: only "due"
    p.update(obj("c", 1), obj("c", 2), False)       # a real change: everyone
    await eventually(lambda: len(due.events) == 3 and len(not_due.events) == 2
                     and len(never.events) == 2)
    assert [e[1] for e in due.events] == ["a", "b", "c"]
    assert [e[1] for e in not_due.events] == ["a", "c"]
    assert [e[1] for e in never.events] == ["a", "c"]
    await p.stop()


async def test_should_resync_schedules_each_listener_on_its_own_period() -> None:
    clock = FakeClock()
    p = SharedProcessor(clock)
    l10 = p.add_listener(ProcessorListener(Recorder(), 10, 10, clock.now, lambda: True))
    l30 = p.add_listener(ProcessorListener(Recorder(), 30, 30, clock.now, lambda: True))
    p.add_listener(ProcessorListener(Recorder(), 0, 0, clock.now, lambda: True))
    seen = []
    for _ in range(6):
        clock.now += 10
        needed = p.should_resync()
        seen.append((needed, p._listeners[l10], p._listeners[l30]))
    assert seen == [(True, True, False), (True, True, False), (True, True, True),
                    (True, True, False), (True, True, False), (True, True, True)]
    clock.now += 5
    assert p.should_resync() is False


def test_determine_resync_period_follows_client_go() -> None:
    assert determine_resync_period(0, 10) == 0
    assert determine_resync_period(5, 0) == 0        # the informer does not resync
    assert determine_resync_period(5, 10) == 10      # raised to the check period
    assert determine_resync_period(20, 10) == 20


async def test_resync_check_period_change_rederives_listener_periods() -> None:
    p = SharedProcessor()
    lst = p.add_listener(ProcessorListener(Recorder(), 20, 0, 0, lambda: True))
    p.resync_check_period_changed(20)
    assert lst.resync_period == 20
    p.resync_check_period_changed(0)
    assert lst.resync_period == 0


# --- has_synced ------------------------------------------------------------------


async def test_has_synced_counts_initial_adds_until_handled() -> None:
    upstream = {"synced": False}
    gate = asyncio.Event()

    class Gated:
        def __init__(self) -> None:
            self.n = 0

        async def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            await gate.wait()
            self.n += 1

        def on_update(self, old: Any, new: Any) -> None:
            pass

        def on_delete(self, obj: Any) -> None:
            pass

    h = Gated()
    p = SharedProcessor()
    reg = p.add_listener(ProcessorListener(h, 0, 0, 0, lambda: upstream["synced"]))
    assert isinstance(reg, ResourceEventHandlerRegistration)
    p.start()
    for i in range(3):
        p.add(obj(f"o{i}"), True)
    assert reg.has_synced() is False
    upstream["synced"] = True
    # Upstream synced, but the initial adds are not handled yet.
    assert reg.has_synced() is False
    # A non-initial add does not count.
    p.add(obj("late"), False)
    gate.set()
    await eventually(lambda: h.n == 4)
    assert reg.has_synced() is True
    await p.stop()


async def test_has_synced_survives_a_failing_initial_add(caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    p = SharedProcessor()
    r = Recorder(fail_on="bad")
    reg = p.add_listener(ProcessorListener(r, 0, 0, 0, lambda: True))
    p.start()
    with caplog.at_level(logging.ERROR, logger="pykcm.cache.processor"):
        p.add(obj("bad"), True)
        p.add(obj("good"), True)
        await eventually(lambda: len(r.events) == 1)
    assert reg.has_synced() is True
    await p.stop()


# --- errors, fairness, lifecycle -----------------------------------------------------


async def test_handler_exception_is_logged_with_key_and_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    p = SharedProcessor()
    r = Recorder(fail_on="bad")
    ra = Recorder(is_async=True, fail_on="bad")
    p.add_listener(listener(r))
    p.add_listener(listener(ra))
    p.start()
    with caplog.at_level(logging.ERROR, logger="pykcm.cache.processor"):
        p.add(obj("a"), False)
        p.update(obj("bad", 1), obj("bad", 2), False)
        p.add(obj("b"), False)
        await eventually(lambda: len(r.events) == 2 and len(ra.events) == 2)
    assert [e[1] for e in r.events] == ["a", "b"]
    assert [e[1] for e in ra.events] == ["a", "b"]
    failures = [rec for rec in caplog.records if "ns/bad" in rec.getMessage()]
    assert len(failures) == 2
    assert all(rec.exc_info is not None for rec in failures)
    await p.stop()


async def test_a_handler_cancelled_internally_does_not_kill_its_listener(
        caplog: pytest.LogCaptureFixture) -> None:
    class Cancelling:
        def __init__(self) -> None:
            self.names: list[str] = []

        async def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            if obj["metadata"]["name"] == "c":
                inner = asyncio.ensure_future(asyncio.sleep(10))
                inner.cancel()
                await inner                      # raises CancelledError
            self.names.append(obj["metadata"]["name"])

        def on_update(self, old: Any, new: Any) -> None:
            pass

        def on_delete(self, obj: Any) -> None:
            pass

    p = SharedProcessor()
    h = Cancelling()
    p.add_listener(listener(h))
    p.start()
    with caplog.at_level(logging.ERROR, logger="pykcm.cache.processor"):
        for n in ("a", "c", "d"):
            p.add(obj(n), False)
        await eventually(lambda: h.names == ["a", "d"])
    assert "ns/c" in caplog.text
    await p.stop()


async def test_slow_listener_does_not_delay_another() -> None:
    gate = asyncio.Event()

    class Stuck:
        calls = 0

        async def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            self.calls += 1
            await gate.wait()

        def on_update(self, old: Any, new: Any) -> None:
            pass

        def on_delete(self, obj: Any) -> None:
            pass

    p = SharedProcessor()
    stuck, fast = Stuck(), Recorder()
    p.add_listener(listener(stuck))
    p.add_listener(listener(fast))
    p.start()
    for i in range(500):
        p.add(obj(f"o{i}"), False)
    await eventually(lambda: len(fast.events) == 500, timeout=1.0)
    assert stuck.calls == 1
    assert p.listeners[0].pending() == 499
    gate.set()
    await p.stop()


async def test_a_long_burst_of_plain_calls_yields_to_the_loop() -> None:
    p = SharedProcessor()
    r = Recorder()
    p.add_listener(listener(r))
    p.start()
    for i in range(YIELD_EVERY * 4):
        p.add(obj(f"o{i}"), False)
    progress: list[int] = []

    async def observer() -> None:
        while len(r.events) < YIELD_EVERY * 4:
            progress.append(len(r.events))
            await asyncio.sleep(0)

    await asyncio.wait_for(observer(), 2)
    # The observer ran while the listener was still draining.
    assert any(0 < n < YIELD_EVERY * 4 for n in progress)
    await p.stop()


async def test_removed_listener_gets_nothing_more_and_drops_pending() -> None:
    p = SharedProcessor()
    r, other = Recorder(), Recorder()
    reg = p.add_listener(listener(r))
    p.add_listener(listener(other))
    p.start()
    p.add(obj("a"), False)
    await eventually(lambda: len(r.events) == 1)
    p.add(obj("b"), False)           # pending, then dropped
    p.remove_listener(reg)
    p.remove_listener(reg)           # unknown now: ignored
    p.add(obj("c"), False)
    await eventually(lambda: len(other.events) == 3)
    await asyncio.sleep(0.01)
    assert [e[1] for e in r.events] == ["a"]
    assert reg.is_closed()
    assert reg.task is not None
    await asyncio.wait_for(reg.task, 1)
    await p.stop()


async def test_listener_added_after_start_runs_at_once() -> None:
    p = SharedProcessor()
    p.start()
    r = Recorder()
    p.add_listener(listener(r))
    p.add(obj("a"), False)
    await eventually(lambda: len(r.events) == 1)
    await p.stop()


async def test_stop_cancels_listener_tasks_and_forgets_them() -> None:
    gate = asyncio.Event()
    cancelled = asyncio.Event()

    class Blocked:
        async def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            try:
                await gate.wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        def on_update(self, old: Any, new: Any) -> None:
            pass

        def on_delete(self, obj: Any) -> None:
            pass

    p = SharedProcessor()
    lst = p.add_listener(listener(Blocked()))
    p.start()
    p.add(obj("a"), False)
    p.add(obj("b"), False)
    await asyncio.sleep(0.01)
    await asyncio.wait_for(p.stop(), 1)
    assert cancelled.is_set()
    assert p.listeners == ()
    assert lst.task is not None and lst.task.done()
    assert lst.pending() == 0


async def test_generic_distribute_honours_sync_flag() -> None:
    clock = FakeClock()
    p = SharedProcessor(clock)
    a = p.add_listener(ProcessorListener(Recorder(), 10, 10, clock.now, lambda: True))
    b = p.add_listener(ProcessorListener(Recorder(), 0, 0, clock.now, lambda: True))
    clock.now += 10
    p.should_resync()
    p.distribute((UPDATE_NOTIFICATION, obj("x"), obj("x")), True)
    p.distribute((DELETE_NOTIFICATION, obj("x"), None), False)
    p.distribute((ADD_NOTIFICATION, obj("y"), True), False)
    assert a.pending() == 3 and b.pending() == 2
    assert a._initial_pending == 1


# --- adaptors ------------------------------------------------------------------------


def test_resource_event_handler_funcs_call_what_is_given() -> None:
    calls: list[tuple[Any, ...]] = []
    h = ResourceEventHandlerFuncs(add_func=lambda o: calls.append(("add", o)),
                                  delete_func=lambda o: calls.append(("delete", o)))
    assert isinstance(h, ResourceEventHandler)
    assert h.on_add(1, True) is None
    assert h.on_update(1, 2) is None
    h.on_delete(3)
    assert calls == [("add", 1), ("delete", 3)]
    d = ResourceEventHandlerDetailedFuncs(add_func=lambda o, i: calls.append(("dadd", o, i)),
                                          update_func=lambda a, b: calls.append(("up", a, b)))
    d.on_add(5, True)
    d.on_update(5, 6)
    d.on_delete(7)
    assert calls[-2:] == [("dadd", 5, True), ("up", 5, 6)]


def test_filtering_handler_transitions() -> None:
    r = Recorder()
    f = FilteringResourceEventHandler(lambda o: o["metadata"]["labels"].get("app") == "x", r)
    f.on_add(obj("in", app="x"), True)
    f.on_add(obj("out", app="y"), True)
    f.on_update(obj("a", 1, app="x"), obj("a", 2, app="x"))    # both pass: update
    f.on_update(obj("b", 1, app="y"), obj("b", 2, app="x"))    # starts passing: add
    f.on_update(obj("c", 1, app="x"), obj("c", 2, app="y"))    # stops passing: delete(old)
    f.on_update(obj("d", 1, app="y"), obj("d", 2, app="y"))    # neither: nothing
    f.on_delete(obj("e", app="x"))
    f.on_delete(obj("g", app="y"))
    assert r.events == [
        ("add", "in", True),
        ("update", "a", "1", "2"),
        ("add", "b", False),
        ("delete", "c"),
        ("delete", "e"),
    ]


async def test_filtering_handler_passes_coroutines_through() -> None:
    r = Recorder(is_async=True)
    f = FilteringResourceEventHandler(lambda o: True, r)
    res = f.on_add(obj("a"), False)
    assert res is not None
    await res
    assert r.events == [("add", "a", False)]


def test_handler_names() -> None:
    def my_add(o: Any) -> None:
        pass

    assert handler_name(ResourceEventHandlerFuncs(add_func=my_add)).endswith("my_add")
    assert handler_name(Recorder()).endswith("Recorder")
    f = FilteringResourceEventHandler(lambda o: True, ResourceEventHandlerFuncs(
        delete_func=my_add))
    assert handler_name(f).endswith("my_add")
