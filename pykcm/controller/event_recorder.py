"""Event recorder: core/v1 Events written by controllers (client-go ``tools/record``).

Role
----
Controllers explain what they did ("SuccessfulCreate", "FailedScheduling", ...)
by recording Events on the objects they act on; ``kubectl describe`` shows them.
Recording must never slow a controller down or fail its sync, so
``EventRecorder.event`` is a plain function that only enqueues; all I/O happens
on a background task owned by the ``EventBroadcaster``.

Data flow
---------
::

    EventRecorder.event(obj, type_, reason, message)     (caller; never blocks)
        │ build the Event (name <obj>.<hex ns>, involvedObject, source, count 1)
        ▼
    EventBroadcaster queue (at most 1000 waiting: a new Event finding it full is dropped)
        │ background task, one event at a time
        ▼
    EventCorrelator.correlate(event)
        │ 1. EventAggregator: >= 10 distinct messages for one
        │    (source, object, type, reason) within 10 min → one
        │    "(combined from similar events): ..." event
        │ 2. EventLogger: LRU (4096) of identical events → same name,
        │    count + 1, strategic merge patch {count, lastTimestamp, message}
        │ 3. EventSourceObjectSpamFilter: token bucket per source+object+type
        │    (burst 25, 1 token per 5 min) → skip
        ▼
    write: PATCH the existing Event (NotFound → POST it instead) or POST a new one;
           transport / 429 / 5xx errors retried with backoff, then dropped;
           other API errors dropped at once (client-go: "will not retry");
           success → EventCorrelator.update_state(server's copy)

Defaults are client-go v1.36's (``events_cache.go``, ``event.go``).

The bound is upstream's: ``record.NewBroadcaster`` is a ``watch.Broadcaster`` of queue
length ``maxQueuedEvents`` (1000) with ``DropIfChannelFull``, so the sink's watcher holds
at most 1000 Events behind the one being written and the broadcaster silently drops
what finds it full. A controller recording faster than its Events can be written (a
rollout of hundreds of Deployments) loses Events past that backlog instead of writing
them for minutes after the work is done. Deliberate deviation: upstream's broadcaster
drops the Events recorded before ``StartRecordingToSink`` (no watcher yet); this one
queues them (up to the same bound) until :meth:`EventBroadcaster.start`.

Time: the broadcaster's ``clock`` (a :class:`pykcm.api.clock.Clock`, default the
real one) stamps events, names them, runs the aggregation window and the spam
filter's buckets, and paces write retries; the correlator's parts take a bare
``clock`` function (wall seconds), as they did before the shared clock.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.clock import Clock as TimeSource
from pykcm.api.randomness import RandomSource, random_of
from pykcm.api.timestamps import format_time
from pykcm.client.errors import (
    ApiError,
    is_already_exists,
    is_internal_error,
    is_not_found,
    is_server_timeout,
    is_service_unavailable,
    is_timeout,
    is_too_many_requests,
)

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "EventAggregator",
    "EventBroadcaster",
    "EventCorrelateResult",
    "EventCorrelator",
    "EventLogger",
    "EventRecorder",
    "EventSink",
    "EventSourceObjectSpamFilter",
]

log = logging.getLogger("pykcm.controller.event_recorder")

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"

MAX_LRU_CACHE_ENTRIES = 4096
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL_SECONDS = 600.0
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0
MAX_TRIES_PER_EVENT = 12
MAX_QUEUED_EVENTS = 1000
DEFAULT_SLEEP_DURATION = 10.0
COMBINED_PREFIX = "(combined from similar events): "

Event = dict[str, Any]
Clock = Callable[[], float]


class EventSink(Protocol):
    """What the broadcaster writes through; `pykcm.client.Client` satisfies it."""

    async def create(self, resource: Any, body: Mapping[str, Any],
                     namespace: str | None = None) -> dict[str, Any]: ...

    async def patch(self, resource: Any, name: str, body: Any,
                    patch_type: Any = "merge",
                    namespace: str | None = None) -> dict[str, Any]: ...


K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        v = self._data.get(key)
        if v is not None:
            self._data.move_to_end(key)
        return v

    def add(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def _src(ev: Mapping[str, Any]) -> Mapping[str, Any]:
    return ev.get("source") or {}


def _obj(ev: Mapping[str, Any]) -> Mapping[str, Any]:
    return ev.get("involvedObject") or {}


def _event_key(ev: Mapping[str, Any]) -> str:
    """client-go getEventKey: identical events share it."""
    s, o = _src(ev), _obj(ev)
    return "".join(str(x or "") for x in (
        s.get("component"), s.get("host"), o.get("kind"), o.get("namespace"), o.get("name"),
        o.get("fieldPath"), o.get("uid"), o.get("apiVersion"), ev.get("type"),
        ev.get("reason"), ev.get("message")))


def _spam_key(ev: Mapping[str, Any]) -> str:
    """client-go getSpamKey: source + involved object + event type (Normal and Warning
    events of one object have a token bucket each)."""
    s, o = _src(ev), _obj(ev)
    return "".join(str(x or "") for x in (
        s.get("component"), s.get("host"), o.get("kind"), o.get("namespace"), o.get("name"),
        o.get("uid"), o.get("apiVersion"), ev.get("type")))


def _aggregate_keys(ev: Mapping[str, Any]) -> tuple[str, str]:
    """client-go EventAggregatorByReasonFunc: (aggregate key, local key = message)."""
    s, o = _src(ev), _obj(ev)
    agg = "".join(str(x or "") for x in (
        s.get("component"), s.get("host"), o.get("kind"), o.get("namespace"), o.get("name"),
        o.get("uid"), o.get("apiVersion"), ev.get("type"), ev.get("reason"),
        ev.get("reportingComponent"), ev.get("reportingInstance")))
    return agg, str(ev.get("message") or "")


@dataclass
class _TokenBucket:
    """A passive token bucket (client-go NewTokenBucketPassiveRateLimiter)."""

    qps: float
    burst: int
    clock: Clock
    tokens: float = -1.0
    last: float = 0.0

    def try_accept(self) -> bool:
        now = self.clock()
        if self.tokens < 0:
            self.tokens, self.last = float(self.burst), now
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class EventSourceObjectSpamFilter:
    """Drops events once a source+object+type has spent its token bucket."""

    def __init__(self, *, burst: int = DEFAULT_SPAM_BURST, qps: float = DEFAULT_SPAM_QPS,
                 cache_size: int = MAX_LRU_CACHE_ENTRIES, clock: Clock = REAL_CLOCK.now) -> None:
        self._burst, self._qps, self._clock = burst, qps, clock
        self._cache: _LRU[str, _TokenBucket] = _LRU(cache_size)

    def filter(self, event: Mapping[str, Any]) -> bool:
        """True when the event must be skipped."""
        key = _spam_key(event)
        bucket = self._cache.get(key)
        if bucket is None:
            bucket = _TokenBucket(self._qps, self._burst, self._clock)
        skip = not bucket.try_accept()
        self._cache.add(key, bucket)
        return skip


@dataclass
class _AggregateRecord:
    local_keys: set[str] = field(default_factory=set)
    last_timestamp: float = 0.0


class EventAggregator:
    """Folds many similar events (same reason, different messages) into one."""

    def __init__(self, *, max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS,
                 max_interval: float = DEFAULT_AGGREGATE_INTERVAL_SECONDS,
                 cache_size: int = MAX_LRU_CACHE_ENTRIES, clock: Clock = REAL_CLOCK.now) -> None:
        self._max_events, self._max_interval, self._clock = max_events, max_interval, clock
        self._cache: _LRU[str, _AggregateRecord] = _LRU(cache_size)

    def aggregate(self, event: Event) -> tuple[Event, str]:
        """(the event to observe, its cache key)."""
        now = self._clock()
        agg_key, local_key = _aggregate_keys(event)
        record = self._cache.get(agg_key) or _AggregateRecord()
        if now - record.last_timestamp > self._max_interval:
            record = _AggregateRecord()
        record.local_keys.add(local_key)
        record.last_timestamp = now
        self._cache.add(agg_key, record)
        if len(record.local_keys) < self._max_events:
            return event, _event_key(event)
        record.local_keys.pop()  # do not grow the set beyond max
        obj = _obj(event)
        ts = format_time(now)
        combined: Event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{obj.get('name', '')}.{int(now * 1e9):016x}",
                         "namespace": event["metadata"].get("namespace")},
            "involvedObject": copy.deepcopy(dict(obj)),
            "reason": event.get("reason"), "type": event.get("type"),
            "message": COMBINED_PREFIX + str(event.get("message") or ""),
            "source": copy.deepcopy(dict(_src(event))),
            "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
        }
        for k in ("reportingComponent", "reportingInstance"):
            if k in event:
                combined[k] = event[k]
        return combined, agg_key


@dataclass
class _EventLog:
    count: int
    first_timestamp: Any
    name: str
    resource_version: str


class EventLogger:
    """Remembers identical events (LRU) so a repeat becomes a count patch."""

    def __init__(self, cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._cache: _LRU[str, _EventLog] = _LRU(cache_size)

    def observe(self, event: Event, key: str) -> tuple[Event, dict[str, Any] | None]:
        # Only top-level fields and metadata's are set below: a copy of those two levels
        # leaves the caller's event alone (a deep copy cost more than the rest of recording).
        ev: Event = {**event, "metadata": dict(event["metadata"])}
        patch: dict[str, Any] | None = None
        last = self._cache.get(key)
        if last is not None and last.count > 0:
            ev["metadata"]["name"] = last.name
            if last.resource_version:
                ev["metadata"]["resourceVersion"] = last.resource_version
            ev["firstTimestamp"] = last.first_timestamp
            ev["count"] = last.count + 1
            patch = {"count": ev["count"], "lastTimestamp": ev.get("lastTimestamp"),
                     "message": ev.get("message")}
        self._cache.add(key, _EventLog(int(ev.get("count") or 1), ev.get("firstTimestamp"),
                                       ev["metadata"]["name"],
                                       str(ev["metadata"].get("resourceVersion") or "")))
        return ev, patch

    def update_state(self, event: Mapping[str, Any]) -> None:
        md = event.get("metadata") or {}
        self._cache.add(_event_key(event), _EventLog(
            int(event.get("count") or 1), event.get("firstTimestamp"), str(md.get("name")),
            str(md.get("resourceVersion") or "")))


@dataclass
class EventCorrelateResult:
    event: Event | None
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """Aggregation, deduplication and spam filtering (client-go EventCorrelator)."""

    def __init__(self, *, clock: Clock = REAL_CLOCK.now,
                 spam_burst: int = DEFAULT_SPAM_BURST, spam_qps: float = DEFAULT_SPAM_QPS,
                 max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS,
                 max_interval: float = DEFAULT_AGGREGATE_INTERVAL_SECONDS,
                 cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self.aggregator = EventAggregator(max_events=max_events, max_interval=max_interval,
                                          cache_size=cache_size, clock=clock)
        self.logger = EventLogger(cache_size)
        self.spam_filter = EventSourceObjectSpamFilter(burst=spam_burst, qps=spam_qps,
                                                       cache_size=cache_size, clock=clock)

    def correlate(self, event: Event) -> EventCorrelateResult:
        aggregated, key = self.aggregator.aggregate(event)
        observed, patch = self.logger.observe(aggregated, key)
        if self.spam_filter.filter(observed):
            return EventCorrelateResult(None, skip=True)
        return EventCorrelateResult(observed, patch)

    def update_state(self, event: Mapping[str, Any]) -> None:
        self.logger.update_state(event)


def _retryable(exc: BaseException) -> bool:
    """Transport failures and overload answers are retried; other API errors are not."""
    if not isinstance(exc, ApiError):
        return True
    return (is_too_many_requests(exc) or is_server_timeout(exc) or is_timeout(exc)
            or is_service_unavailable(exc) or is_internal_error(exc))


class EventRecorder:
    """Records Events for one source (component, host). Get it from `EventBroadcaster`."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, host: str = "") -> None:
        self._broadcaster = broadcaster
        self.source: dict[str, str] = {"component": component}
        if host:
            self.source["host"] = host

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an event; returns at once (the write happens in the background)."""
        if type_ not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            log.error("Unsupported event type: %r", type_)
            return
        ref = _reference(obj)
        if ref is None:
            log.error("Could not construct reference to %r, will not report event: "
                      "%r %r %r", (obj.get("metadata") or {}).get("name"), type_, reason,
                      message)
            return
        t = self._broadcaster._event_ns()
        ts = format_time(t / 1e9)
        ev: Event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{t:016x}",
                         "namespace": ref.get("namespace") or "default"},
            "involvedObject": ref, "reason": reason, "message": message, "type": type_,
            "source": dict(self.source), "firstTimestamp": ts, "lastTimestamp": ts,
            "count": 1, "reportingComponent": self.source["component"],
            "reportingInstance": self.source.get("host", ""),
        }
        self._broadcaster._enqueue(ev)

    def eventf(self, obj: Mapping[str, Any], type_: str, reason: str, fmt: str,
               *args: Any) -> None:
        """`event` with a printf-style message (`fmt % args`)."""
        try:
            message = fmt % args if args else fmt
        except (TypeError, ValueError) as e:
            message = f"{fmt} (bad format: {e})"
        self.event(obj, type_, reason, message)


def _reference(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """An ObjectReference to obj (or obj itself when it already is one)."""
    md = obj.get("metadata")
    src: Mapping[str, Any] = md if isinstance(md, Mapping) else obj
    kind, name = obj.get("kind"), src.get("name")
    if not kind or not name:
        return None
    ref: dict[str, Any] = {"kind": kind, "name": name}
    for key, value in (("namespace", src.get("namespace")), ("uid", src.get("uid")),
                       ("apiVersion", obj.get("apiVersion")),
                       ("resourceVersion", src.get("resourceVersion")),
                       ("fieldPath", None if md is not None else obj.get("fieldPath"))):
        if value:
            ref[key] = value
    return ref


_HANDOFF_HOPS = 3
"""Loop turns the writer yields between taking an Event off its queue and writing it.
Upstream's recorder hands an Event over through two goroutines (the broadcaster's
``distribute`` and the sink's watcher) before ``recordToSink`` reserves a rate-limiter
token, so work the controller has already made runnable (the next slow-start batch of
pod creations, woken by the same completion that recorded the Event) reserves its
tokens first. Here the queue's wake-up is a single hop and the writer would take the
token ahead of that batch; yielding a few turns restores upstream's order (the
DaemonSet/StatefulSet benchmark of issue 13 counts those tokens)."""


class EventBroadcaster:
    """Owns the queue and the background task that writes recorded Events.

    ::

        broadcaster = EventBroadcaster(client)
        broadcaster.start()
        recorder = broadcaster.new_recorder("replicaset-controller")
        recorder.event(rs, "Normal", "SuccessfulCreate", "Created pod: web-1")
        ...
        await broadcaster.shutdown()
    """

    def __init__(self, client: EventSink, *, correlator: EventCorrelator | None = None,
                 max_tries: int = MAX_TRIES_PER_EVENT,
                 retry_delay: float = DEFAULT_SLEEP_DURATION,
                 clock: TimeSource | None = None, rng: RandomSource | None = None,
                 max_queued: int | None = MAX_QUEUED_EVENTS) -> None:
        """``max_queued``: Events waiting to be written beyond which new ones are dropped
        (upstream's 1000); ``None``: unbounded (a writer standing for many components,
        such as the simulator's kubelets and scheduler)."""
        self._client = client
        self.clock: TimeSource = clock if clock is not None else REAL_CLOCK
        # The first retry's spread (unseeded unless the process has a seed).
        self._rng = random_of(rng)
        self.correlator = correlator or EventCorrelator(clock=self.clock.now)
        self._last_ns = 0
        self._max_tries = max_tries
        self._retry_delay = retry_delay
        self._queue: asyncio.Queue[Event] = asyncio.Queue(max_queued or 0)
        # Events dropped because the queue was full (upstream counts none; for tests and
        # benchmarks)
        self.dropped = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    def new_recorder(self, component: str, host: str = "") -> EventRecorder:
        return EventRecorder(self, component, host)

    def _event_ns(self) -> int:
        """The clock's wall time in nanoseconds, for an event's timestamps and name
        suffix; strictly increasing, so two events of one object never share a name
        (a fake or virtual clock that stands still would otherwise repeat it)."""
        ns = max(int(self.clock.now() * 1e9), self._last_ns + 1)
        self._last_ns = ns
        return ns

    def start(self) -> None:
        """Start the background writer on the running event loop."""
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._task = self._loop.create_task(self._run(), name="event-broadcaster")

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Stop accepting events, deliver what is queued (within timeout), stop."""
        self._stopped = True
        if self._task is None:
            return
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
        except TimeoutError:
            log.warning("event broadcaster: %d events not delivered at shutdown",
                        self._queue.qsize())
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._task = None

    def _enqueue(self, event: Event) -> None:
        if self._stopped:
            log.debug("event broadcaster is shut down; dropping event %s",
                      event["metadata"]["name"])
            return
        if (self._loop is not None and threading.get_ident() != self._loop_thread
                and not self._loop.is_closed()):
            self._loop.call_soon_threadsafe(self._put, event)
        else:
            self._put(event)

    def _put(self, event: Event) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            # upstream's distribute drops it for a full watcher without a word; debug here
            self.dropped += 1
            log.debug("event broadcaster: %d events queued, dropping event %s %s on %s",
                      self._queue.qsize(), event.get("type"), event.get("reason"),
                      _obj(event).get("name"))

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            for _ in range(_HANDOFF_HOPS):
                await asyncio.sleep(0)
            try:
                await self._record_to_sink(event)
            except asyncio.CancelledError:
                raise
            except Exception:  # never let one event kill the writer
                log.exception("unexpected error recording event")
            finally:
                self._queue.task_done()

    async def _record_to_sink(self, event: Event) -> None:
        result = self.correlator.correlate(event)
        if result.skip or result.event is None:
            log.debug("event %s %s on %s dropped by the spam filter", event.get("type"),
                      event.get("reason"), _obj(event).get("name"))
            return
        for tries in range(1, self._max_tries + 1):
            if await self._record_once(result.event, result.patch):
                return
            if tries == self._max_tries:
                break
            delay = self._retry_delay
            if tries == 1:  # desynchronise clients that failed together
                delay *= self._rng.random()
            await self.clock.sleep(delay)
        log.error("Unable to write event %s (retry limit exceeded!)",
                  result.event["metadata"]["name"])

    async def _record_once(self, event: Event, patch: dict[str, Any] | None) -> bool:
        """True when done (written, or given up for good)."""
        ns = event["metadata"].get("namespace") or "default"
        try:
            written: dict[str, Any] | None = None
            if patch is not None:
                try:
                    written = await self._client.patch("events", event["metadata"]["name"],
                                                       patch, "strategic", ns)
                except Exception as e:
                    if not is_not_found(e):
                        raise
            if written is None:
                body = {**event, "metadata": {k: v for k, v in event["metadata"].items()
                                              if k != "resourceVersion"}}
                written = await self._client.create("events", body, ns)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a write failure never reaches the caller
            if _retryable(e):
                log.error("Unable to write event %s: %s (may retry after sleeping)",
                          event["metadata"]["name"], e)
                return False
            level = logging.DEBUG if is_already_exists(e) else logging.ERROR
            log.log(level, "Server rejected event %s: %s (will not retry!)",
                    event["metadata"]["name"], e)
            return True
        self.correlator.update_state(written)
        return True
