"""SharedIndexInformer: one list+watch of a resource, an indexed cache, many handlers.

client-go tools/cache shared_informer.go (``sharedIndexInformer``) and
controller.go (``processDeltas``), on asyncio.

Data flow (DESIGN.md)::

    Reflector ──► DeltaFIFO ──pop──► handle_deltas ──► 1. Indexer (the cache)
    (list+watch)  (known objects     (this class)      2. SharedProcessor.add/update/delete
                   = the Indexer)                           │ one deque per handler
                                                            ▼
                                       processorListener tasks ──► on_add/on_update/on_delete

``run()`` builds the DeltaFIFO (its known objects are the Indexer, its
transformer the one set with :meth:`set_transform`) and the Reflector that
feeds it, starts the handlers' tasks, then pops the FIFO until cancelled,
handing every popped key's deltas to :meth:`handle_deltas`, which, oldest
delta first:

- Sync / Replaced / Added / Updated: stores the object in the Indexer; if an
  object was already stored under its key, distributes ``on_update(old,
  new)`` (a *resync* when both have the same resourceVersion: only handlers
  whose resync is due get it), else ``on_add(new, is_in_initial_list)``.
- Deleted: removes the key from the Indexer and distributes
  ``on_delete(obj)`` (``obj`` may be a DeletedFinalStateUnknown).

The Indexer is always updated before the handlers hear of the change, so a
handler (or a worker it wakes) reads a cache at least as new as its event.
``handle_deltas`` never awaits: the DeltaFIFO's producer cannot interleave,
and a handler added meanwhile (which replays the cache synchronously) sees
a consistent cache, which is what client-go's ``blockDeltas`` lock is for.

Handlers are added with :meth:`add_event_handler`, before or after start;
one added after start first receives every cached object as
``on_add(obj, is_in_initial_list=True)``. Its registration's
``has_synced()`` is true once the informer has synced *and* the initial
list has been handled by that handler.

Resync: each handler may ask for its own resync period (at least 1 s). The
informer's *resync check period* (how often the Reflector's resync timer
asks whether any handler is due) starts as the informer's resync period; a
handler added before start with a shorter period lowers it, one added after
start is raised to it (client-go's rules, with the same warnings).

Stopping: cancel the task running ``run()``. The Reflector is cancelled,
the FIFO closed, the handlers' tasks cancelled (pending notifications are
dropped) and ``is_stopped()`` turns true; the informer cannot be restarted.

Performance: per change, one key computation (in the DeltaFIFO, which hands
the key along: the process loop drains it with ``pop_ready_many``, one call
per burst), one Indexer write (``ThreadSafeStore.swap``: store and old object
under one lock), one notification tuple shared by all handlers and one deque
append per handler. No closures, no copies; the mutation detector and the
metrics cost a ``None`` check each when off (with metrics on, each item goes
through ``handle_deltas``, which times itself).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from pykcm.api.clock import Clock as TimeSource
from pykcm.api.clock import clock_of
from pykcm.api.randomness import REAL_RANDOM, RandomSource
from pykcm.cache.delta_fifo import DELETED, DeltaFIFO, Deltas, TransformFunc
from pykcm.cache.errors import CacheError, FIFOClosedError
from pykcm.cache.event_handlers import ResourceEventHandler, ResourceEventHandlerRegistration
from pykcm.cache.index import Indexers
from pykcm.cache.keys import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
)
from pykcm.cache.list_watch import ListerWatcher
from pykcm.cache.metrics import InformerMetrics, resource_version_metric_value
from pykcm.cache.mutation_detector import CacheMutationDetector, new_cache_mutation_detector
from pykcm.cache.processor import (
    ADD_NOTIFICATION,
    Clock,
    ProcessorListener,
    SharedProcessor,
    determine_resync_period,
)
from pykcm.cache.reflector import Reflector, WatchErrorHandler
from pykcm.cache.store import Cache, Indexer, Store, new_indexer

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "InformerAlreadyStartedError",
    "InformerStoppedError",
    "ReflectorFactory",
    "ReflectorLike",
    "SharedIndexInformer",
]

log = logging.getLogger("pykcm.cache.shared_informer")

MINIMUM_RESYNC_PERIOD: Final = 1.0
"""The smallest resync period a handler may ask for (client-go ``minimumResyncPeriod``)."""

# The process loop lets the event loop run after this many pops in a row
# (a pop of a non-empty FIFO never suspends).
_POPS_BEFORE_YIELD: Final = 256

class ReflectorLike(Protocol):
    """What the informer needs of its Reflector (pykcm.cache.reflector.Reflector)."""

    async def run(self) -> None: ...

    def last_sync_resource_version(self) -> str: ...

    def set_watch_error_handler(self, handler: WatchErrorHandler) -> None: ...


class ReflectorFactory(Protocol):
    """Builds the Reflector of a starting informer (the real one unless a test fakes it)."""

    def __call__(self, lw: ListerWatcher, store: DeltaFIFO, *, name: str, resync_period: float,
                 should_resync: Callable[[], bool], clock: TimeSource,
                 rng: RandomSource) -> ReflectorLike: ...


class InformerAlreadyStartedError(CacheError, RuntimeError):
    """A setting that must be made before ``run()`` was changed after it."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}: informer has already started")


class InformerStoppedError(CacheError, RuntimeError):
    """A handler was added to an informer that has stopped."""


def _default_reflector_factory(lw: ListerWatcher, store: DeltaFIFO, *, name: str,
                               resync_period: float,
                               should_resync: Callable[[], bool],
                               clock: TimeSource, rng: RandomSource) -> ReflectorLike:
    return Reflector(lw, store, name=name, resync_period=resync_period,
                     should_resync=should_resync, clock=clock, rng=rng)


def _same_resource_version(old: Any, new: Any) -> bool:
    """Whether two states of an object have the same resourceVersion (a resync)."""
    if type(new) is not dict and type(old) is not dict:
        # A compact object's metadata struct: two attribute reads, no Mapping calls.
        try:
            a = new._meta.resourceVersion
            b = old._meta.resourceVersion
        except AttributeError:
            pass
        else:
            if type(a) is str and type(b) is str:
                return a == b
    try:
        return bool(new["metadata"].get("resourceVersion")
                    == old["metadata"].get("resourceVersion"))
    except (TypeError, KeyError, AttributeError):
        return False


class SharedIndexInformer:
    """An indexed cache of one resource kept by one list+watch, shared by many handlers.

    ``lw`` is the :class:`~pykcm.cache.list_watch.ListWatch` of the resource.
    ``resync_period`` (seconds, 0 = never) is the default resync period of
    handlers and the initial resync check period. ``indexers=None`` gives the
    namespace index; a dict gives exactly those indexers. ``name`` names the
    informer in logs and metrics (an unnamed informer publishes no metrics).
    ``clock`` (a :class:`pykcm.api.clock.Clock`, default the real one; a bare
    function of monotonic seconds also works) times resyncs and the reflector's
    backoff; ``rng`` (a :class:`pykcm.api.randomness.RandomSource`, default unseeded)
    jitters the reflector's backoff and watch timeouts; ``reflector_factory`` is for
    tests.
    """

    def __init__(
        self,
        lw: ListerWatcher,
        *,
        resync_period: float = 0.0,
        indexers: Indexers | None = None,
        name: str = "",
        clock: TimeSource | Clock | None = None,
        reflector_factory: ReflectorFactory | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        if resync_period < 0:
            raise ValueError(f"resync_period must be >= 0, got {resync_period}")
        self._lw = lw
        self._name = name
        self._time = clock_of(clock)
        self._clock = self._time.monotonic
        self._rng = REAL_RANDOM if rng is None else rng
        self._reflector_factory: ReflectorFactory = (
            reflector_factory if reflector_factory is not None else _default_reflector_factory)
        self._indexer: Indexer = new_indexer(deletion_handling_meta_namespace_key, indexers)
        # handle_deltas writes the ThreadSafeStore with keys it computed itself
        # (the Cache in front would compute each key twice per change).
        assert isinstance(self._indexer, Cache)
        self._store = self._indexer.thread_safe_store
        self._processor = SharedProcessor(self._clock)
        self._resync_check_period = float(resync_period)
        self._default_event_handler_resync_period = float(resync_period)
        self._transform: TransformFunc | None = None
        self._watch_error_handler: WatchErrorHandler | None = None
        self._started = False
        self._stopped = False
        self._fifo: DeltaFIFO | None = None
        self._reflector: ReflectorLike | None = None
        self._mutation_detector: CacheMutationDetector | None = new_cache_mutation_detector(
            name or repr(getattr(lw, "_resource", lw)))
        self._metrics: InformerMetrics | None = None
        # The last object written to the store (informer_store_resource_version).
        self._last_object: Any = None

    # --- configuration (before run) ---------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def list_watch(self) -> ListerWatcher:
        return self._lw

    def set_transform(self, transform: TransformFunc | None) -> None:
        """Transform every object before it is stored or handed out (before run only).

        Typical use: strip ``metadata.managedFields``. The function gets each
        object coming from the API server (not tombstones, not resyncs) and
        returns the object to cache; it may modify its argument in place.
        """
        if self._started:
            raise InformerAlreadyStartedError("set_transform")
        self._transform = transform

    def set_clock(self, clock: TimeSource) -> None:
        """Time resyncs and the reflector's backoff on ``clock`` (before run only): a
        factory hands its clock to informers it did not build itself."""
        if self._started:
            raise InformerAlreadyStartedError("set_clock")
        self._time = clock_of(clock)
        self._clock = self._time.monotonic
        self._processor.set_clock(self._clock)

    def set_rng(self, rng: RandomSource) -> None:
        """Jitter the reflector from ``rng`` (before run only): a factory hands its
        random source to informers it did not build itself."""
        if self._started:
            raise InformerAlreadyStartedError("set_rng")
        self._rng = rng

    def set_watch_error_handler(self, handler: WatchErrorHandler | None) -> None:
        """Call ``handler(reflector, error)`` when list/watch fails (before run only)."""
        if self._started:
            raise InformerAlreadyStartedError("set_watch_error_handler")
        self._watch_error_handler = handler

    def add_indexers(self, indexers: Indexers) -> None:
        """Add indexers to the cache (before run only; a name conflict raises)."""
        if self._started:
            raise InformerAlreadyStartedError("add_indexers")
        self._indexer.add_indexers(indexers)

    # --- state ---------------------------------------------------------------

    def get_store(self) -> Store:
        """The cache (read it; never write it: the informer owns it)."""
        return self._indexer

    def get_indexer(self) -> Indexer:
        """The cache with its indexes (what listers read)."""
        return self._indexer

    def has_started(self) -> bool:
        """True once ``run()`` has begun (settings are then refused)."""
        return self._started

    def is_stopped(self) -> bool:
        """True once ``run()`` has ended (the informer cannot run again)."""
        return self._stopped

    def has_synced(self) -> bool:
        """True once the initial list has been popped from the FIFO and processed."""
        fifo = self._fifo
        return fifo is not None and fifo.has_synced()

    def last_sync_resource_version(self) -> str:
        """The resourceVersion the Reflector last synced to ("" before the first list)."""
        reflector = self._reflector
        return reflector.last_sync_resource_version() if reflector is not None else ""

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion the Indexer is known to hold everything up to (client-go's
        store LastStoreSyncResourceVersion, which the controllers' consistency store
        compares with their own writes).

        client-go's in-order FIFO applies changes in resourceVersion order, so its store
        just remembers the last one. pykcm's DeltaFIFO keeps one entry per key, which can
        apply a newer change of one object before an older one of another: the answer is
        the Reflector's resourceVersion when nothing is queued, else just below the oldest
        change still queued (never more than the Reflector's). "" before the first list,
        or when a resourceVersion is not an integer (the check is then skipped).
        """
        fifo, reflector = self._fifo, self._reflector
        if fifo is None or reflector is None:
            return ""
        rv = reflector.last_sync_resource_version()
        if not len(fifo):
            return rv
        try:
            oldest = fifo.oldest_queued_resource_version()
        except ValueError:
            return ""
        if oldest is None:
            return rv
        if not (rv.isascii() and rv.isdigit()):
            return ""
        return str(min(int(rv), oldest - 1))

    @property
    def resync_check_period(self) -> float:
        """How often the Reflector's resync timer asks the handlers (0: never)."""
        return self._resync_check_period

    @property
    def processor(self) -> SharedProcessor:
        """The sharedProcessor fanning notifications out to the handlers."""
        return self._processor

    # --- handlers --------------------------------------------------------------

    def add_event_handler(self, handler: ResourceEventHandler,
                          resync_period: float | None = None) -> ResourceEventHandlerRegistration:
        """Register ``handler``; ``resync_period`` None means the informer's default.

        Returns the registration to pass to :meth:`remove_event_handler`;
        its ``has_synced()`` tells when the initial list reached the handler.
        Raises :class:`InformerStoppedError` once the informer has stopped.
        """
        if self._stopped:
            raise InformerStoppedError(
                f"handler {handler!r} was not added to shared informer because it has "
                "stopped already")
        period = (self._default_event_handler_resync_period if resync_period is None
                  else float(resync_period))
        if period > 0:
            if period < MINIMUM_RESYNC_PERIOD:
                log.warning("resyncPeriod %ss is too small. Changing it to the minimum "
                            "allowed value of %ss", period, MINIMUM_RESYNC_PERIOD)
                period = MINIMUM_RESYNC_PERIOD
            if period < self._resync_check_period:
                if self._started:
                    log.warning("resyncPeriod %ss is smaller than resyncCheckPeriod %ss and "
                                "the informer has already started. Changing it to %ss",
                                period, self._resync_check_period, self._resync_check_period)
                    period = self._resync_check_period
                else:
                    # Lower the check period and re-derive every listener's.
                    self._resync_check_period = period
                    self._processor.resync_check_period_changed(period)
        listener = ProcessorListener(
            handler, period, determine_resync_period(period, self._resync_check_period),
            self._clock(), self.has_synced)
        self._processor.add_listener(listener)
        if self._started:
            # Join a running informer: replay the cache as the initial list.
            # Synchronous, so no delta is processed in between (client-go
            # holds blockDeltas for this).
            add = listener.add
            for item in self._indexer.list():
                add((ADD_NOTIFICATION, item, True))
        return listener

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        """Unregister a handler: its pending notifications are dropped.

        An unknown (e.g. already removed) registration is ignored.
        """
        if not isinstance(registration, ProcessorListener):
            raise TypeError(f"not a registration of this informer: {registration!r}")
        self._processor.remove_listener(registration)

    # --- the delta path ------------------------------------------------------

    def handle_deltas(self, deltas: Deltas, is_in_initial_list: bool) -> None:
        """Apply one key's deltas to the Indexer, then distribute them (oldest first).

        The DeltaFIFO's ``pop`` process function (client-go ``HandleDeltas``
        and ``processDeltas``). Never awaits.
        """
        metrics = self._metrics
        start = time.perf_counter() if metrics is not None else 0.0
        key_func = deletion_handling_meta_namespace_key
        store = self._store
        processor = self._processor
        detector = self._mutation_detector
        obj: Any = None
        for delta in deltas:
            delta_type, obj = delta
            if delta_type == DELETED:
                store.delete(key_func(obj))
                processor.delete(obj)
                continue
            # Sync, Replaced, Added, Updated.
            key = key_func(obj)
            old = store.get(key)
            store.update(key, obj)
            if detector is not None:
                detector.add_object(obj)
            if old is None:
                processor.add(obj, is_in_initial_list)
                continue
            # Same resourceVersion: a resync (or an unchanged relist item),
            # only for the handlers whose resync is due.
            processor.update(old, obj, _same_resource_version(old, obj))
        if metrics is not None:
            self._last_object = obj
            metrics.processing_latency.observe(time.perf_counter() - start)

    # --- running -------------------------------------------------------------

    async def run(self) -> None:
        """List, watch and distribute until cancelled (a second call returns at once).

        Raises what ends the Reflector's or the mutation detector's task (a
        Reflector runs until cancelled; the detector raises
        :class:`~pykcm.cache.mutation_detector.CacheMutationError`).
        """
        if self._started:
            log.warning("The sharedIndexInformer %s has started, run more than once is not "
                        "allowed", self._name)
            return
        fifo = DeltaFIFO(meta_namespace_key, known_objects=self._indexer,
                         emit_delta_type_replaced=True, transformer=self._transform)
        reflector = self._reflector_factory(
            self._lw, fifo, name=self._name, resync_period=self._resync_check_period,
            should_resync=self._processor.should_resync, clock=self._time, rng=self._rng)
        if self._watch_error_handler is not None:
            reflector.set_watch_error_handler(self._watch_error_handler)
        self._fifo = fifo
        self._reflector = reflector
        self._started = True

        metrics: InformerMetrics | None = None
        background: list[asyncio.Task[None]] = []
        try:
            metrics = await self._reserve_metrics(fifo)
            self._metrics = metrics
            self._processor.start(metrics)
            loop = asyncio.get_running_loop()
            background.append(loop.create_task(reflector.run(),
                                               name=f"reflector[{self._name}]"))
            if self._mutation_detector is not None:
                background.append(loop.create_task(self._mutation_detector.run(),
                                                   name=f"mutation-detector[{self._name}]"))

            def stop_on_exit(task: asyncio.Task[None]) -> None:
                # A background task ending by itself ends the informer.
                if not task.cancelled():
                    fifo.close()

            for task in background:
                task.add_done_callback(stop_on_exit)
            await self._process_loop(fifo)
            for task in background:
                if task.done() and not task.cancelled():
                    exc = task.exception()
                    if exc is not None:
                        raise exc
        finally:
            self._stopped = True
            fifo.close()
            for task in background:
                task.cancel()
            if background:
                await asyncio.gather(*background, return_exceptions=True)
            await self._processor.stop()
            self._metrics = None
            if metrics is not None:
                metrics.release()

    def _handle_keyed(self, key: str, deltas: Deltas, is_in_initial_list: bool) -> None:
        """``handle_deltas`` for the process loop, which knows the deltas' key (the
        DeltaFIFO's, the same as the Indexer's: a tombstone's key is the one it was
        queued under). The same steps, one key computation fewer per delta."""
        metrics = self._metrics
        if metrics is not None:
            self.handle_deltas(deltas, is_in_initial_list)
            return
        store = self._store
        swap = store.swap
        processor = self._processor
        detector = self._mutation_detector
        for delta_type, obj in deltas:
            if delta_type == DELETED:
                store.delete(key)
                processor.delete(obj)
                continue
            old = swap(key, obj)
            if detector is not None:
                detector.add_object(obj)
            if old is None:
                processor.add(obj, is_in_initial_list)
            else:
                processor.update(old, obj, _same_resource_version(old, obj))

    async def _process_loop(self, fifo: DeltaFIFO) -> None:
        """Pop the FIFO into handle_deltas until it is closed (client-go ``processLoop``)."""
        pop = fifo.pop
        pop_ready_many = fifo.pop_ready_many
        handle = self.handle_deltas
        handle_keyed = self._handle_keyed

        def on_error(exc: BaseException) -> None:
            # As client-go (RetryOnError false): log, drop the item, go on.
            log.error("informer %s: error processing deltas", self._name, exc_info=exc)

        while True:
            # Wait for an item (the one suspension point) ...
            try:
                await pop(handle)
            except FIFOClosedError:
                return
            except Exception:
                log.exception("informer %s: error processing deltas", self._name)
            # ... then drain what is queued in one call, letting the event loop run
            # after _POPS_BEFORE_YIELD items.
            if pop_ready_many(handle_keyed, _POPS_BEFORE_YIELD - 1, on_error) \
                    >= _POPS_BEFORE_YIELD - 1:
                await asyncio.sleep(0)

    async def _reserve_metrics(self, fifo: DeltaFIFO) -> InformerMetrics | None:
        if not self._name:
            return None
        # A ListWatch knows its resource (a CRD's only after resolve());
        # any other ListerWatcher may not.
        info: Any = None
        try:
            info = getattr(self._lw, "resource", None)
        except Exception:  # noqa: BLE001 - not resolved yet
            resolve = getattr(self._lw, "resolve", None)
            if resolve is not None:
                try:
                    info = await resolve()
                except Exception:  # noqa: BLE001 - the Reflector reports it
                    # The Reflector will report (and retry) the failure.
                    info = None
        group = getattr(info, "group", "")
        version = getattr(info, "version", "")
        resource = getattr(info, "plural", "") or str(getattr(self._lw, "_resource", ""))
        metrics = InformerMetrics.reserve(self._name, group, version, resource)
        if metrics is not None:
            metrics.queued_items.set_function(fifo.__len__)
            metrics.store_resource_version.set_function(self._store_resource_version)
        return metrics

    def _store_resource_version(self) -> float:
        obj = self._last_object
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        try:
            return resource_version_metric_value(obj["metadata"].get("resourceVersion"))
        except (TypeError, KeyError, AttributeError):
            return 0.0

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "running" if self._started else "new"
        return (f"<SharedIndexInformer {self._name or '?'} {state} "
                f"items={len(self._store)} handlers={len(self._processor.listeners)}>")
