"""pykcm.cache.SharedIndexInformer with a fake Reflector feeding its DeltaFIFO.

The fake Reflector is what the informer builds in ``run()``; the tests drive
the DeltaFIFO it was given (replace/add/update/delete/resync) exactly as the
real Reflector would. Tricky mechanisms first: has_synced per registration,
late handler replay, per-handler resync, slow handlers, handler exceptions,
the transform, index maintenance; then the lifecycle, the mutation detector
and the metrics.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import pytest

from pykcm.cache import (
    ADDED,
    NAMESPACE_INDEX,
    CacheMutationDetector,
    CacheMutationError,
    DeletedFinalStateUnknown,
    DeltaFIFO,
    InformerAlreadyStartedError,
    InformerStoppedError,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from pykcm.cache.metrics import REGISTRY
from pykcm.cache.mutation_detector import MUTATION_DETECTOR_ENV
from pykcm.cache.processor import handler_name


def obj(name: str, rv: int = 1, ns: str = "ns", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv),
                         "labels": labels}}


def name_of(o: Any) -> str:
    if isinstance(o, DeletedFinalStateUnknown):
        return "tombstone:" + o.key
    return str(o["metadata"]["name"])


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_add(self, o: Any, is_in_initial_list: bool) -> None:
        self.events.append(("add", name_of(o), is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.events.append(("update", name_of(new), old["metadata"]["resourceVersion"],
                            new["metadata"]["resourceVersion"]))

    def on_delete(self, o: Any) -> None:
        self.events.append(("delete", name_of(o)))


class FakeReflector:
    """Stands in for pykcm.cache.Reflector: the test drives ``store`` itself."""

    def __init__(self, lw: Any, store: DeltaFIFO, *, name: str, resync_period: float,
                 should_resync: Callable[[], bool], clock: Callable[[], float],
                 rng: Any = None) -> None:
        self.lw = lw
        self.store = store
        self.name = name
        self.resync_period = resync_period
        self.should_resync = should_resync
        self.rv = ""
        self.watch_error_handler: Any = None
        self.fail: BaseException | None = None
        self.running = asyncio.Event()
        self._stop = asyncio.Event()

    async def run(self) -> None:
        self.running.set()
        await self._stop.wait()
        if self.fail is not None:
            raise self.fail

    def crash(self, exc: BaseException) -> None:
        self.fail = exc
        self._stop.set()

    def last_sync_resource_version(self) -> str:
        return self.rv

    def set_watch_error_handler(self, handler: Any) -> None:
        self.watch_error_handler = handler

    def resync(self) -> None:
        """What the Reflector's resync timer does."""
        if self.should_resync():
            self.store.resync()


class FakeLW:
    class _Info:
        group = ""
        version = "v1"
        plural = "configmaps"

    resource = _Info()


class Harness:
    def __init__(self, **kw: Any) -> None:
        self.reflectors: list[FakeReflector] = []

        def factory(lw: Any, store: DeltaFIFO, **kwargs: Any) -> FakeReflector:
            r = FakeReflector(lw, store, **kwargs)
            self.reflectors.append(r)
            return r

        self.informer = SharedIndexInformer(cast(Any, FakeLW()), reflector_factory=factory,
                                            **kw)
        self.task: asyncio.Task[None] | None = None

    @property
    def reflector(self) -> FakeReflector:
        return self.reflectors[0]

    @property
    def fifo(self) -> DeltaFIFO:
        return self.reflector.store

    async def start(self) -> None:
        self.task = asyncio.create_task(self.informer.run())
        while not self.reflectors or not self.reflector.running.is_set():
            await asyncio.sleep(0)

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass


@pytest.fixture
async def harness() -> AsyncIterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(**kw: Any) -> Harness:
        h = Harness(**kw)
        made.append(h)
        return h

    yield make
    for h in made:
        await h.stop()


async def eventually(cond: Callable[[], bool], timeout: float = 2.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


# --- initial list and has_synced ---------------------------------------------------


async def test_initial_list_is_delivered_as_initial_adds_then_synced(
        harness: Callable[..., Harness]) -> None:
    h = harness()
    r = Recorder()
    reg = h.informer.add_event_handler(r)
    assert h.informer.has_synced() is False
    assert reg.has_synced() is False
    await h.start()
    h.fifo.replace([obj("a"), obj("b")], "10")
    h.reflector.rv = "10"
    assert await wait_for_cache_sync(h.informer.has_synced, reg.has_synced, timeout=2)
    assert sorted(r.events) == [("add", "a", True), ("add", "b", True)]
    assert h.informer.last_sync_resource_version() == "10"
    h.fifo.add(obj("c", 11))
    await eventually(lambda: len(r.events) == 3)
    assert r.events[-1] == ("add", "c", False)


async def test_has_synced_is_per_registration(harness: Callable[..., Harness]) -> None:
    gate = asyncio.Event()

    async def slow_add(o: Any) -> None:
        await gate.wait()

    h = harness()
    slow = h.informer.add_event_handler(ResourceEventHandlerFuncs(add_func=slow_add))
    fast = h.informer.add_event_handler(Recorder())
    await h.start()
    h.fifo.replace([obj(f"o{i}") for i in range(20)], "5")
    await eventually(h.informer.has_synced)
    await eventually(fast.has_synced)
    assert slow.has_synced() is False
    gate.set()
    await eventually(slow.has_synced)


async def test_empty_initial_list_syncs(harness: Callable[..., Harness]) -> None:
    h = harness()
    reg = h.informer.add_event_handler(Recorder())
    await h.start()
    assert not h.informer.has_synced()
    h.fifo.replace([], "1")
    await eventually(lambda: h.informer.has_synced() and reg.has_synced())


# --- late handler replay ----------------------------------------------------------------


async def test_handler_added_after_sync_gets_the_cache_replayed(
        harness: Callable[..., Harness]) -> None:
    h = harness()
    first = Recorder()
    h.informer.add_event_handler(first)
    await h.start()
    h.fifo.replace([obj("a"), obj("b")], "10")
    h.fifo.update(obj("a", 11))
    h.fifo.delete(obj("b", 11))
    h.fifo.add(obj("c", 12))
    await eventually(lambda: len(first.events) == 5)
    late = Recorder()
    reg = h.informer.add_event_handler(late)
    # Replayed synchronously, before any other delta can be processed.
    assert reg.has_synced() is False
    await eventually(reg.has_synced)
    assert sorted(late.events) == [("add", "a", True), ("add", "c", True)]
    h.fifo.update(obj("c", 13))
    await eventually(lambda: len(late.events) == 3)
    assert late.events[-1] == ("update", "c", "12", "13")


async def test_handler_added_during_initial_list_is_synced_only_after_it(
        harness: Callable[..., Harness]) -> None:
    h = harness()
    await h.start()
    h.fifo.replace([obj(f"o{i}") for i in range(1000)], "1")
    # Pop a few, then join mid-list.
    for _ in range(3):
        await asyncio.sleep(0)
    late = Recorder()
    reg = h.informer.add_event_handler(late)
    await eventually(reg.has_synced)
    assert len(late.events) == 1000
    assert {e[1] for e in late.events} == {f"o{i}" for i in range(1000)}


# --- handle_deltas ------------------------------------------------------------------------


async def test_indexer_is_updated_before_handlers_and_deltas_map_to_notifications(
        harness: Callable[..., Harness]) -> None:
    h = harness()
    informer = h.informer
    seen_in_store: list[Any] = []

    def check_store(o: Any) -> None:
        seen_in_store.append(informer.get_store().get_by_key("ns/" + name_of(o)))

    # The handler runs after its delta was applied: with one change per pop,
    # it sees exactly that change in the store.
    informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=check_store, update_func=lambda old, new: check_store(new),
        delete_func=check_store))
    r = Recorder()
    informer.add_event_handler(r)
    await h.start()
    h.fifo.replace([obj("a", 1)], "1")
    await eventually(lambda: len(r.events) == 1)
    h.fifo.update(obj("a", 2))
    await eventually(lambda: len(r.events) == 2)
    h.fifo.delete(obj("a", 3))
    await eventually(lambda: len(r.events) == 3)
    assert [o and o["metadata"]["resourceVersion"] for o in seen_in_store] == ["1", "2", None]
    # Several deltas of one key are processed in one pop, oldest first.
    h.fifo.add(obj("b", 4))
    h.fifo.update(obj("b", 5))
    h.fifo.delete(obj("b", 6))
    h.fifo.add(obj("c", 7))
    await eventually(lambda: len(r.events) == 7)
    assert r.events == [("add", "a", True), ("update", "a", "1", "2"), ("delete", "a"),
                        ("add", "b", False), ("update", "b", "4", "5"), ("delete", "b"),
                        ("add", "c", False)]
    assert informer.get_store().list_keys() == ["ns/c"]


async def test_relist_tombstones_and_replaced_updates(harness: Callable[..., Harness]) -> None:
    h = harness()
    r = Recorder()
    h.informer.add_event_handler(r)
    await h.start()
    h.fifo.replace([obj("a", 1), obj("b", 1)], "1")
    await eventually(lambda: len(r.events) == 2)
    # A relist: "a" changed, "b" vanished, "c" is new.
    h.fifo.replace([obj("a", 5), obj("c", 5)], "5")
    await eventually(lambda: len(r.events) == 5)
    assert sorted(r.events[2:]) == [("add", "c", False), ("delete", "tombstone:ns/b"),
                                    ("update", "a", "1", "5")]
    assert sorted(h.informer.get_store().list_keys()) == ["ns/a", "ns/c"]


async def test_index_maintenance_on_update_and_delete(harness: Callable[..., Harness]) -> None:
    h = harness()
    h.informer.add_indexers({"app": lambda o: [o["metadata"]["labels"].get("app", "")]})
    idx = h.informer.get_indexer()
    await h.start()
    h.fifo.replace([obj("a", 1, app="x"), obj("b", 1, app="x"),
                    obj("c", 1, ns="other", app="y")], "1")
    await eventually(h.informer.has_synced)
    assert idx.index_keys("app", "x") == ["ns/a", "ns/b"]
    assert idx.index_keys(NAMESPACE_INDEX, "other") == ["other/c"]
    h.fifo.update(obj("a", 2, app="y"))
    h.fifo.delete(obj("b", 3, app="x"))
    await eventually(lambda: idx.get_by_key("ns/b") is None)
    assert idx.index_keys("app", "x") == []
    assert "x" not in idx.list_index_func_values("app")
    assert idx.index_keys("app", "y") == ["ns/a", "other/c"]
    # A tombstone deletes by its key.
    h.fifo.replace([obj("a", 2, app="y")], "4")
    await eventually(lambda: idx.get_by_key("other/c") is None)
    assert idx.index_keys("app", "y") == ["ns/a"]
    assert idx.list_index_func_values(NAMESPACE_INDEX) == ["ns"]


async def test_transform_is_applied_before_store_and_handlers(
        harness: Callable[..., Harness]) -> None:
    def strip(o: Any) -> Any:
        o["metadata"].pop("managedFields", None)
        return o

    h = harness()
    h.informer.set_transform(strip)
    got: list[Any] = []
    h.informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=got.append, update_func=lambda old, new: got.append(new)))
    await h.start()
    o = obj("a")
    o["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    h.fifo.replace([o], "1")
    o2 = obj("a", 2)
    o2["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    h.fifo.update(o2)
    await eventually(lambda: len(got) == 2)
    assert all("managedFields" not in g["metadata"] for g in got)
    cached = h.informer.get_store().get_by_key("ns/a")
    assert cached is not None and "managedFields" not in cached["metadata"]


# --- per-handler resync ---------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_per_handler_resync_goes_only_to_due_handlers(
        harness: Callable[..., Harness]) -> None:
    clock = FakeClock()
    h = harness(resync_period=30, clock=clock)
    every10, every30, never = Recorder(), Recorder(), Recorder()
    h.informer.add_event_handler(every10, resync_period=10)
    h.informer.add_event_handler(every30)          # the informer's default: 30
    h.informer.add_event_handler(never, resync_period=0)
    # A shorter handler period before start lowers the check period.
    assert h.informer.resync_check_period == 10
    await h.start()
    assert h.reflector.resync_period == 10
    h.fifo.replace([obj("a", 1), obj("b", 1)], "1")
    await eventually(lambda: len(every10.events) == 2 and len(every30.events) == 2
                     and len(never.events) == 2)

    def updates(r: Recorder) -> list[tuple[Any, ...]]:
        return [e for e in r.events if e[0] == "update"]

    for _ in range(3):                               # t = 110, 120, 130
        clock.now += 10
        h.reflector.resync()
        await asyncio.sleep(0.02)
    await eventually(lambda: len(updates(every10)) == 6 and len(updates(every30)) == 2)
    assert updates(never) == []
    assert sorted(updates(every30)) == [("update", "a", "1", "1"), ("update", "b", "1", "1")]
    # A real change reaches everyone, resync or not.
    h.fifo.update(obj("a", 2))
    await eventually(lambda: updates(never) == [("update", "a", "1", "2")])


async def test_relist_of_unchanged_objects_is_a_resync(harness: Callable[..., Harness]) -> None:
    clock = FakeClock()
    h = harness(clock=clock)
    syncing, quiet = Recorder(), Recorder()
    h.informer.add_event_handler(syncing, resync_period=5)
    h.informer.add_event_handler(quiet)
    assert h.informer.resync_check_period == 0       # the informer does not resync
    await h.start()
    h.fifo.replace([obj("a", 1)], "1")
    await eventually(lambda: len(syncing.events) == 1 and len(quiet.events) == 1)
    # Without resync checks every listener is "syncing" (client-go): an
    # unchanged relisted object reaches both.
    h.fifo.replace([obj("a", 1)], "2")
    await eventually(lambda: len(syncing.events) == 2 and len(quiet.events) == 2)
    # After a resync check finds nobody due, it reaches nobody.
    assert h.informer.processor.should_resync() is False
    h.fifo.replace([obj("a", 1)], "3")
    h.fifo.add(obj("z", 9))
    await eventually(lambda: len(quiet.events) == 3)
    assert quiet.events[-1] == ("add", "z", False)
    assert len(syncing.events) == 3


async def test_resync_period_adjustments(harness: Callable[..., Harness],
                                         caplog: pytest.LogCaptureFixture) -> None:
    h = harness(resync_period=60)
    with caplog.at_level(logging.WARNING, logger="pykcm.cache.shared_informer"):
        tiny = h.informer.add_event_handler(Recorder(), resync_period=0.2)
    assert "too small" in caplog.text
    assert h.informer.resync_check_period == 1.0
    other = h.informer.add_event_handler(Recorder())
    assert tiny.resync_period == 1.0 and other.resync_period == 60  # type: ignore[attr-defined]
    await h.start()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pykcm.cache.shared_informer"):
        h2 = harness(resync_period=20)
        h2.informer.add_event_handler(Recorder())
        await h2.start()
        raised = h2.informer.add_event_handler(Recorder(), resync_period=5)
    assert "already started" in caplog.text
    assert raised.resync_period == 20  # type: ignore[attr-defined]
    assert h2.informer.resync_check_period == 20
    # An informer that does not resync ignores handler periods.
    h3 = harness()
    await h3.start()
    assert h3.informer.add_event_handler(Recorder(), resync_period=10) \
        .resync_period == 0  # type: ignore[attr-defined]


# --- slow handlers, errors ---------------------------------------------------------------------


async def test_slow_handler_delays_neither_informer_nor_other_handlers(
        harness: Callable[..., Harness]) -> None:
    async def slow(o: Any) -> None:
        await asyncio.sleep(0.5)

    h = harness()
    slow_reg = h.informer.add_event_handler(ResourceEventHandlerFuncs(add_func=slow))
    fast = Recorder()
    h.informer.add_event_handler(fast)
    await h.start()
    h.fifo.replace([], "1")
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    for i in range(2000):
        h.fifo.add(obj(f"o{i}", i + 2))
    await eventually(lambda: len(fast.events) == 2000, timeout=2)
    assert loop.time() - t0 < 1.0
    assert len(h.informer.get_store().list_keys()) == 2000
    assert slow_reg.pending() > 1900  # type: ignore[attr-defined]


async def test_handler_exceptions_are_logged_and_skipped(
        harness: Callable[..., Harness], caplog: pytest.LogCaptureFixture) -> None:
    def boom(o: Any) -> None:
        if o["metadata"]["name"] == "bad":
            raise ValueError("nope")

    async def async_boom(old: Any, new: Any) -> None:
        raise RuntimeError("async nope")

    h = harness()
    h.informer.add_event_handler(ResourceEventHandlerFuncs(add_func=boom,
                                                           update_func=async_boom))
    r = Recorder()
    h.informer.add_event_handler(r)
    await h.start()
    with caplog.at_level(logging.ERROR):
        h.fifo.replace([obj("bad"), obj("good")], "1")
        h.fifo.update(obj("good", 2))
        await eventually(lambda: len(r.events) == 3)
        await eventually(lambda: "ns/good" in caplog.text)
    assert "ns/bad" in caplog.text and "nope" in caplog.text
    assert h.informer.has_synced()


async def test_an_object_without_metadata_is_dropped_and_logged(
        harness: Callable[..., Harness], caplog: pytest.LogCaptureFixture) -> None:
    h = harness()
    r = Recorder()
    h.informer.add_event_handler(r)
    await h.start()
    with caplog.at_level(logging.ERROR, logger="pykcm.cache.shared_informer"):
        h.fifo._append(ADDED, {"no": "meta"}, "weird")  # a corrupt delta
        h.fifo.add(obj("ok"))
        await eventually(lambda: len(r.events) == 1)
    assert "error processing deltas" in caplog.text


# --- lifecycle -----------------------------------------------------------------------------------


async def test_settings_are_refused_after_start(harness: Callable[..., Harness]) -> None:
    h = harness()

    def handler(r: Any, e: BaseException) -> None:
        pass

    h.informer.set_watch_error_handler(handler)
    await h.start()
    assert h.reflector.watch_error_handler is handler
    with pytest.raises(InformerAlreadyStartedError):
        h.informer.set_transform(lambda o: o)
    with pytest.raises(InformerAlreadyStartedError):
        h.informer.set_watch_error_handler(handler)
    with pytest.raises(InformerAlreadyStartedError):
        h.informer.add_indexers({"x": lambda o: []})
    assert h.informer.has_started() and not h.informer.is_stopped()


async def test_stop_and_no_restart(harness: Callable[..., Harness],
                                   caplog: pytest.LogCaptureFixture) -> None:
    h = harness()
    r = Recorder()
    reg = h.informer.add_event_handler(r)
    await h.start()
    h.fifo.replace([obj("a")], "1")
    await eventually(reg.has_synced)
    await h.stop()
    assert h.informer.is_stopped()
    assert h.fifo.is_closed()
    assert h.informer.processor.listeners == ()
    with pytest.raises(InformerStoppedError):
        h.informer.add_event_handler(Recorder())
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(h.informer.run(), 1)
    assert "more than once" in caplog.text
    # The cache is still readable.
    assert h.informer.get_store().list_keys() == ["ns/a"]


async def test_remove_event_handler(harness: Callable[..., Harness]) -> None:
    h = harness()
    r, other = Recorder(), Recorder()
    reg = h.informer.add_event_handler(r)
    h.informer.add_event_handler(other)
    await h.start()
    h.fifo.replace([obj("a")], "1")
    await eventually(lambda: len(r.events) == 1)
    h.informer.remove_event_handler(reg)
    h.informer.remove_event_handler(reg)
    with pytest.raises(TypeError):
        h.informer.remove_event_handler(object())  # type: ignore[arg-type]
    h.fifo.add(obj("b"))
    await eventually(lambda: len(other.events) == 2)
    assert len(r.events) == 1


async def test_reflector_failure_ends_run(harness: Callable[..., Harness]) -> None:
    h = harness()
    await h.start()
    h.reflector.crash(RuntimeError("reflector died"))
    assert h.task is not None
    with pytest.raises(RuntimeError, match="reflector died"):
        await asyncio.wait_for(h.task, 1)
    assert h.informer.is_stopped()


# --- mutation detector ------------------------------------------------------------------------------


async def test_mutation_detector_off_by_default(harness: Callable[..., Harness],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MUTATION_DETECTOR_ENV, raising=False)
    assert harness().informer._mutation_detector is None


async def test_mutation_detector_catches_a_handler_mutating_the_cache(
        harness: Callable[..., Harness], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(MUTATION_DETECTOR_ENV, "true")

    def evil(o: Any) -> None:
        if o["metadata"]["name"] == "victim":
            o["metadata"]["labels"]["hacked"] = "yes"

    h = harness(name="cms")
    detector = h.informer._mutation_detector
    assert isinstance(detector, CacheMutationDetector)
    detector.period = 0.05
    h.informer.add_event_handler(ResourceEventHandlerFuncs(add_func=evil))
    await h.start()
    h.fifo.replace([obj("fine"), obj("victim")], "1")
    assert h.task is not None
    with caplog.at_level(logging.CRITICAL), pytest.raises(CacheMutationError) as err:
        await asyncio.wait_for(h.task, 2)
    assert err.value.keys == ["ns/victim"]
    assert "ns/victim" in caplog.text and "hacked" in caplog.text


def test_mutation_detector_check_on_demand() -> None:
    failures: list[str] = []
    d = CacheMutationDetector("pods")
    o = obj("a")
    d.add_object(o)
    d.add_object(DeletedFinalStateUnknown("ns/x", None))
    d.check()
    assert len(d) == 1
    o["spec"] = {"x": 1}
    with pytest.raises(CacheMutationError, match="ns/a"):
        d.check()
    d.failure_func = failures.append
    d.check()
    assert failures and "ns/a" in failures[0]


def test_mutation_detector_rotation_keeps_two_generations() -> None:
    now = [0.0]
    d = CacheMutationDetector("x", retain_duration=10, clock=lambda: now[0])
    d._rotate()
    o1 = obj("a")
    d.add_object(o1)
    d.check()
    now[0] = 11
    d._rotate()               # o1 moves to the retained generation: still checked
    o1["x"] = 1
    with pytest.raises(CacheMutationError):
        d.check()
    del o1["x"]
    now[0] = 22
    d._rotate()               # o1 is forgotten
    o1["x"] = 1
    d.check()


# --- metrics ---------------------------------------------------------------------------------------------


async def test_metrics_are_published_under_kubernetes_names_and_released(
        harness: Callable[..., Harness]) -> None:
    h = harness(name="unit-metrics")
    gate = asyncio.Event()

    async def blocked(o: Any) -> None:
        await gate.wait()

    def my_handler(o: Any) -> Any:
        return blocked(o)

    h.informer.add_event_handler(ResourceEventHandlerFuncs(add_func=my_handler))
    await h.start()
    h.fifo.replace([obj("a", 7), obj("b", 123456789012345678)], "1")
    await eventually(h.informer.has_synced)
    h.fifo.add(obj("c", 9))
    h.fifo.add(obj("d", 9))
    # Nothing popped yet (the informer task has not run): two items queued.
    text = REGISTRY.expose()
    labels = 'name="unit-metrics",group="",version="v1",resource="configmaps"'
    assert f"informer_queued_items{{{labels}}} 2" in text
    await eventually(lambda: len(h.fifo) == 0)
    text = REGISTRY.expose()
    assert f"informer_queued_items{{{labels}}} 0" in text
    assert f"informer_processing_latency_seconds_count{{{labels}}} 4" in text
    assert f"informer_store_resource_version{{{labels}}} 9" in text
    hname = handler_name(ResourceEventHandlerFuncs(add_func=my_handler))
    assert f'informer_pending_notifications{{{labels},handler="{hname}"}} 3' in text
    assert "# TYPE informer_processing_latency_seconds histogram" in text
    gate.set()
    await h.stop()
    assert "unit-metrics" not in REGISTRY.expose()


async def test_unnamed_informer_publishes_no_metrics(harness: Callable[..., Harness]) -> None:
    h = harness()
    await h.start()
    assert h.informer._metrics is None


# --- the store's resourceVersion (the consistency store's read side) ---------------------


async def test_last_store_sync_resource_version_waits_for_queued_changes(
        harness: Callable[..., Harness]) -> None:
    h = harness()
    assert h.informer.last_store_sync_resource_version() == ""
    await h.start()
    h.fifo.replace([obj("a", 3), obj("b", 7)], "10")
    h.reflector.rv = "10"
    await eventually(lambda: len(h.fifo) == 0)
    assert h.informer.last_store_sync_resource_version() == "10"
    # Queued, not yet popped (no await in between): only what precedes the oldest queued
    # change is in the Indexer, although a's newest change (20) is newer than c's (15).
    h.fifo.update(obj("a", 12))
    h.fifo.add(obj("c", 15))
    h.fifo.update(obj("a", 20))
    h.reflector.rv = "20"
    assert h.informer.last_sync_resource_version() == "20"
    assert h.informer.last_store_sync_resource_version() == "11"
    await eventually(lambda: len(h.fifo) == 0)
    assert h.informer.last_store_sync_resource_version() == "20"
    # A resync re-delivers known objects: nothing new is pending.
    h.fifo.resync()
    assert len(h.fifo) > 0
    assert h.informer.last_store_sync_resource_version() == "20"
    await eventually(lambda: len(h.fifo) == 0)
    # A deletion counts with its own resourceVersion; a watch-less bookmark (the
    # Reflector's resourceVersion moving on) counts once nothing is queued.
    h.fifo.delete(obj("b", 25))
    h.reflector.rv = "30"
    assert h.informer.last_store_sync_resource_version() == "24"
    await eventually(lambda: len(h.fifo) == 0)
    assert h.informer.last_store_sync_resource_version() == "30"
