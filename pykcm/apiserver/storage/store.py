"""The store: current objects and recent history in memory, every write through the log.

This is the API server's etcd plus its watch cache in one. Reads (GET, LIST,
WATCH) are served from memory; writes go through the durable log first.

Data flow of a write (all on the event loop, no await between check and put):

    handler reads `ResourceStore.current(key)` (pending overlay, then committed)
      → builds the new object → `Store.write()` assigns the next resourceVersion,
      serialises the object once, records it in the pending overlay and in the
      open batch → the writer task commits the batch to SQLite on its thread
      (group commit) → `_apply()` moves the batch into `items` and `history`,
      fans each event out to the watchers, and wakes the waiting handlers.

Watchers are woken before the writers, so a committed event is on the watch
connections before the writer's response goes out (kube-apiserver's watch
cache mostly wins that race too; v1.36's controllers check that their
informer has seen their own write before the next sync). An answer that rests
on the pending overlay (404 for a delete in flight, 409 against an update in
flight) waits for that write to commit first (`settle`), so the client's next
read agrees with it, as etcd's linearizable writes imply.

Readers never see a write before it is on disk: the overlay only serves other
writers (so concurrent writers conflict correctly), and the list
resourceVersion is the last committed revision. That is what lets a client
resume a watch after the server is killed: a revision it has seen is never
reused.

Objects are stored as `Entry`: the parsed dict (read-only once stored) and its
JSON bytes, so LIST and WATCH responses are assembled by joining bytes without
re-encoding. Superseded entries drop their dict (re-parsed on demand) so the
history window costs little more than the raw bytes.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import orjson

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.apiserver import errors
from pykcm.apiserver.storage.log import LogRow, SqliteLog

if TYPE_CHECKING:
    from pykcm.apiserver.storage.watcher import Watcher

log = logging.getLogger(__name__)

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

# History kept per resource: at least this many events, and every event
# younger than HISTORY_SECONDS, whichever keeps more (the window), but
# never more than HISTORY_BYTES of superseded revisions: past that the oldest
# go at once, as etcd's compaction would have them (a watch resuming before
# the window gets 410 and relists). Without the byte bound a write storm kept
# every revision of five minutes (RSS 69 MB -> 3.3 GB in three minutes).
HISTORY_EVENTS = 10_000
HISTORY_SECONDS = 300.0
HISTORY_BYTES = 64 * 1024 * 1024
COMPACT_INTERVAL = 30.0

# etcd's --max-request-bytes default (1.5 MiB): a write of a larger object fails, and past
# the 2 MiB message limit of kube-apiserver's gRPC client it does not even reach etcd.
# pykcm measures the object as it stores it (JSON); kube-apiserver stores built-in kinds as
# protobuf (for most objects smaller), custom resources as JSON.
MAX_REQUEST_BYTES = 1536 * 1024
MAX_GRPC_MESSAGE_BYTES = 2 * 1024 * 1024


def exact_bytes(encoded: bytes) -> bytes:
    """A right-sized copy of an encoder's output: orjson hands back a bytes object whose
    allocation keeps its growth buffer (about 3x a 2.7 KB pod), and a stored revision lives
    long; the copy costs one memcpy."""
    return bytes(memoryview(encoded))


def _too_large(size: int) -> errors.StatusError:
    """kube-apiserver's answer to a write etcd refuses for its size: a bare 500 with the
    storage's error text."""
    if size > MAX_GRPC_MESSAGE_BYTES:
        return errors.bare_internal(
            "rpc error: code = ResourceExhausted desc = trying to send message larger than "
            f"max ({size} vs. {MAX_GRPC_MESSAGE_BYTES})")
    return errors.bare_internal("etcdserver: request is too large")


class Entry:
    """One stored revision of an object: its JSON bytes, and its dict while a write holds it.

    At rest an entry keeps only the bytes plus its labels: bytes are not
    tracked by Python's cyclic GC, whereas a parsed pod is some 60 tracked
    dicts and lists, and with tens of thousands of objects the collector's
    scans of them cost more than all request handling together. `obj`
    parses on demand (without caching) once the write is committed.
    """

    __slots__ = ("_fields", "_obj", "labels", "raw", "rv")

    def __init__(self, obj: dict[str, Any] | None, raw: bytes, rv: int) -> None:
        self._obj = obj
        self.raw = raw
        self.rv = rv
        if obj is None:
            obj = orjson.loads(raw)
        meta = obj.get("metadata")
        # A str→str dict is not GC-tracked, so keeping it costs the collector nothing.
        self.labels: dict[str, str] = (meta.get("labels") or {}) if isinstance(meta, dict) else {}
        self._fields: dict[str, str] | None = None

    @property
    def obj(self) -> dict[str, Any]:
        """The object as a dict: shared while its write is in flight, else freshly parsed.

        Read-only either way; take `copy()` to build a write.
        """
        o = self._obj
        if o is None:
            o = orjson.loads(self.raw)
        return o

    def copy(self) -> dict[str, Any]:
        """A private deep copy (parsing the bytes is faster than copy.deepcopy)."""
        result: dict[str, Any] = orjson.loads(self.raw)
        return result

    def fields(self, extract: Callable[[dict[str, Any]], dict[str, str]]) -> dict[str, str]:
        """The selectable fields (cached: str→str, untracked by the GC)."""
        f = self._fields
        if f is None:
            f = self._fields = extract(self.obj)
        return f

    def release(self) -> None:
        self._obj = None


class Event:
    """One committed change: the new entry (for DELETED, the final state) and the previous one."""

    __slots__ = ("_lines", "entry", "key", "prev", "rv", "time", "type")

    def __init__(self, rv: int, type_: str, key: str, entry: Entry, prev: Entry | None,
                 at: float) -> None:
        self.rv = rv
        self.type = type_
        self.key = key
        self.entry = entry
        self.prev = prev
        self.time = at  # the store clock's monotonic reading (history window)
        self._lines: dict[str, bytes] | None = None

    def line(self, type_: str) -> bytes:
        """The watch line for this event as `type_`, built once for all watchers."""
        lines = self._lines
        if lines is None:
            lines = self._lines = {}
        got = lines.get(type_)
        if got is None:
            if type_ == DELETED and self.type != DELETED:
                # The object stopped matching a watcher's selector: upstream sends
                # the previous state stamped with this event's resourceVersion.
                assert self.prev is not None
                old = self.prev.copy()
                old["metadata"]["resourceVersion"] = str(self.rv)
                raw = orjson.dumps(old)
            else:
                raw = self.entry.raw
            got = lines[type_] = b'{"type":"' + type_.encode() + b'","object":' + raw + b"}\n"
        return got


class ResourceStore:
    """Objects of one resource (one group/plural), its history and its watchers."""

    def __init__(self, store: Store, rid: str) -> None:
        self.store = store
        self.rid = rid
        self.items: dict[str, Entry] = {}
        self.history: deque[Event] = deque()
        # bytes only the history holds: superseded revisions and tombstones
        self.history_bytes = 0
        # History is complete for every revision > oldest_rv.
        self.oldest_rv = 0
        self.watchers: set[Watcher] = set()
        self._sorted: list[str] | None = None
        self._superseded: list[int] = []
        # The revision of the newest write applied here (caches of derived data, such as
        # the RBAC authorizer's, compare it to know whether they are current).
        self.last_rv = 0

    # -- reads ------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        return self.items.get(key)

    def current(self, key: str) -> Entry | None:
        """The newest version including writes not yet committed (for writers only)."""
        pending = self.store._pending.get((self.rid, key))
        if pending is not None:
            return pending[1]
        return self.items.get(key)

    def sorted_keys(self) -> list[str]:
        keys = self._sorted
        if keys is None:
            keys = self._sorted = sorted(self.items)
        return keys

    def snapshot(self, rv: int) -> tuple[dict[str, Entry], list[str]]:
        """The objects as they were at revision rv, and their keys in order.

        Rebuilt from the current items by undoing history newer than rv;
        410 Expired once rv has left the history window.
        """
        if rv >= self.store.rv:
            return self.items, self.sorted_keys()
        if rv < self.oldest_rv:
            raise errors.expired(
                f"The resourceVersion for the provided list is too old. "
                f"Current resourceVersion: {self.store.rv}, requested: {rv}"
            )
        state = dict(self.items)
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            if ev.prev is None:
                state.pop(ev.key, None)
            else:
                state[ev.key] = ev.prev
        return state, sorted(state)

    def keys_in(self, keys: list[str], namespace: str | None) -> Iterable[str]:
        """The slice of sorted keys that belongs to one namespace."""
        if not namespace:
            return keys
        lo = bisect.bisect_left(keys, namespace + "/")
        hi = bisect.bisect_left(keys, namespace + "0")  # '0' sorts right after '/'
        return keys[lo:hi]

    def events_after(self, rv: int) -> list[Event]:
        """Committed events with revision > rv, oldest first (caller checks oldest_rv)."""
        out: list[Event] = []
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            out.append(ev)
        out.reverse()
        return out

    # -- history window ------------------------------------------------------------

    def trim(self, now: float, max_events: int = HISTORY_EVENTS,
             max_age: float = HISTORY_SECONDS) -> None:
        h = self.history
        while len(h) > max_events and now - h[0].time > max_age:
            self._forget(h.popleft())

    def record(self, ev: Event, max_bytes: int | None = None) -> None:
        """Append a committed event to the history, within the byte bound."""
        self.history.append(ev)
        self.history_bytes += _history_cost(ev)
        limit = HISTORY_BYTES if max_bytes is None else max_bytes
        h = self.history
        while self.history_bytes > limit and len(h) > 1:
            self._forget(h.popleft())

    def _forget(self, ev: Event) -> None:
        self.oldest_rv = ev.rv
        self.history_bytes -= _history_cost(ev)
        if ev.prev is not None:
            self._superseded.append(ev.prev.rv)
        if ev.type == DELETED:
            self._superseded.append(ev.rv)


def _history_cost(ev: Event) -> int:
    """The bytes an event keeps alive beyond the current objects: the revision it
    superseded, and a deletion's final state."""
    cost = len(ev.prev.raw) if ev.prev is not None else 0
    if ev.type == DELETED:
        cost += len(ev.entry.raw)
    return cost


class Store:
    """All resources, the global revision counter, and the group-commit writer."""

    def __init__(self, log_: SqliteLog | None = None, *, clock: Clock = REAL_CLOCK) -> None:
        self._log = log_
        # The server's one clock (APIServer(clock=)): history ages, compaction rounds, and
        # through RESTStorage every timestamp the server writes.
        self.clock = clock
        self.rv = 0  # last committed revision
        self._next_rv = 0  # last assigned revision
        self._resources: dict[str, ResourceStore] = {}
        self._pending: dict[tuple[str, str], tuple[int, Entry | None]] = {}
        self._batch: list[tuple[ResourceStore, Event, LogRow]] = []
        self._batch_waiters: list[asyncio.Future[None]] = []
        self._wake: asyncio.Event | None = None
        self._writer: asyncio.Task[None] | None = None
        self._compactor: asyncio.Task[None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._rv_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._failed: BaseException | None = None
        self._closing = False
        self.on_fatal: Callable[[BaseException], None] | None = None

    @property
    def durable(self) -> bool:
        return self._log is not None

    def health_error(self) -> str | None:
        """Why the store cannot take writes (its writer failed, or it is closing), else None:
        the storage check of componentstatuses' ``etcd-0`` (pykcm stores in SQLite, not etcd)."""
        if self._failed is not None:
            return f"storage failed: {self._failed}"
        if self._closing:
            return "storage is closing"
        return None

    def resource(self, rid: str) -> ResourceStore:
        rs = self._resources.get(rid)
        if rs is None:
            rs = self._resources[rid] = ResourceStore(self, rid)
            # A resource first seen now has complete history from this point on.
            rs.oldest_rv = self.rv
        return rs

    @property
    def writes_in_progress(self) -> int:
        """Writes given a revision and not yet committed (their log write under way)."""
        return self._next_rv - self.rv

    def resources(self) -> Iterator[ResourceStore]:
        return iter(list(self._resources.values()))

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        self._wake = asyncio.Event()
        if self._log is not None:
            self._load()
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pykcm-log")
            self._writer = asyncio.create_task(self._write_loop(), name="pykcm-log-writer")
        self._compactor = asyncio.create_task(self._compact_loop(), name="pykcm-compactor")

    async def close(self) -> None:
        """Flush every pending write to disk, then stop."""
        self._closing = True
        if self._compactor is not None:
            self._compactor.cancel()
            try:
                await self._compactor
            except asyncio.CancelledError:
                pass
        if self._writer is not None:
            assert self._wake is not None
            self._wake.set()
            await self._writer
        for rs in self._resources.values():
            for w in list(rs.watchers):
                w.close()
        if self._log is not None:
            assert self._executor is not None
            log_ = self._log
            await asyncio.get_running_loop().run_in_executor(self._executor, log_.close)
            self._executor.shutdown(wait=True)

    def _load(self) -> None:
        assert self._log is not None
        log_ = self._log
        compact: dict[str, int] = {}
        top = log_.max_rv()
        n = 0
        for row in log_.load():
            n += 1
            rid, key = _split_log_key(row.key)
            rs = self._resources.get(rid)
            if rs is None:
                rs = self._resources[rid] = ResourceStore(self, rid)
                rs.oldest_rv = compact[rid] = log_.meta("compact:" + rid)
            prev = rs.items.get(key)
            entry = Entry(None, row.value, row.rv)
            if row.rv > compact[rid]:
                if row.deleted:
                    ev_type = DELETED
                else:
                    ev_type = MODIFIED if prev is not None else ADDED
                if prev is not None:
                    prev.release()
                rs.record(Event(row.rv, ev_type, key, entry, prev, self.clock.monotonic()))
            if row.deleted:
                rs.items.pop(key, None)
            else:
                rs.items[key] = entry
            rs.last_rv = max(rs.last_rv, row.rv)
        for rs in self._resources.values():
            # Count-only trim at start-up: replayed events have no real age.
            while len(rs.history) > HISTORY_EVENTS:
                rs._forget(rs.history.popleft())
        self.rv = self._next_rv = top
        log.info("loaded %d log rows, resourceVersion %d", n, top)

    # -- writes ---------------------------------------------------------------------------

    async def write(
        self, rs: ResourceStore, key: str, obj: dict[str, Any] | None, prev: Entry | None,
        *, final: dict[str, Any] | None = None,
    ) -> Entry:
        """Store obj as the new version of key (None deletes it); returns the committed entry.

        `obj` is owned by the store from now on: the caller must not touch it
        again. `prev` must be `rs.current(key)` read without an await since.
        For a delete, `final` may hand over a private parse of prev (saves one).
        """
        if self._failed is not None:
            raise errors.internal(f"storage failed: {self._failed}")
        if self._closing:
            raise errors.StatusError(
                503, "ServiceUnavailable", "the API server is shutting down",
                headers={"Retry-After": "1"},
            )
        rv = self._next_rv + 1
        self._next_rv = rv
        if obj is None:
            assert prev is not None
            if final is None:
                final = prev.copy()
            final["metadata"]["resourceVersion"] = str(rv)
            raw = exact_bytes(orjson.dumps(final))
            entry = Entry(final, raw, rv)
            ev = Event(rv, DELETED, key, entry, prev, self.clock.monotonic())
            self._pending[(rs.rid, key)] = (rv, None)
        else:
            obj["metadata"]["resourceVersion"] = str(rv)
            raw = exact_bytes(orjson.dumps(obj))
            if len(raw) + len(key) > MAX_REQUEST_BYTES:
                self._next_rv = rv - 1  # nothing was written: the revision is not used
                raise _too_large(len(raw) + len(rs.rid) + len(key) + 16)
            entry = Entry(obj, raw, rv)
            ev = Event(rv, ADDED if prev is None else MODIFIED, key, entry, prev,
                       self.clock.monotonic())
            self._pending[(rs.rid, key)] = (rv, entry)
        row = LogRow(rv, rs.rid + "/" + key, obj is None, prev.rv if prev else 0, raw)
        if self._log is None:
            self._apply([(rs, ev, row)])
            if rs.watchers:
                # Let the woken watchers write the event before our caller answers
                # (the durable path gets this order from _write_loop).
                await asyncio.sleep(0)
            return entry
        self._batch.append((rs, ev, row))
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._batch_waiters.append(fut)
        assert self._wake is not None
        self._wake.set()
        await fut
        return entry

    async def _write_loop(self) -> None:
        assert self._wake is not None and self._log is not None and self._executor is not None
        loop = asyncio.get_running_loop()
        log_ = self._log
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._batch:
                if self._closing:
                    return
                continue
            batch, self._batch = self._batch, []
            waiters, self._batch_waiters = self._batch_waiters, []
            rows = [b[2] for b in batch]
            try:
                await loop.run_in_executor(self._executor, log_.append, rows)
            except BaseException as exc:  # disk full, I/O error: nothing of it is acknowledged
                log.error("storage write failed: %s", exc)
                self._fail(exc, waiters)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                return
            self._apply([(b[0], b[1], b[2]) for b in batch])
            for f in waiters:
                if not f.done():
                    f.set_result(None)
            if self._closing and not self._batch:
                return

    def _fail(self, exc: BaseException, waiters: list[asyncio.Future[None]]) -> None:
        # Memory may now be ahead of nothing (the overlay held the failed
        # writes): drop the overlay and refuse further writes; the server
        # reports the failure and must be restarted to reload from disk.
        self._failed = exc
        err = errors.internal(f"storage write failed: {exc}")
        for f in waiters + self._batch_waiters:
            if not f.done():
                f.set_exception(err)
        self._batch.clear()
        self._batch_waiters.clear()
        self._pending.clear()
        if self.on_fatal is not None:
            self.on_fatal(exc)

    def _apply(self, batch: list[tuple[ResourceStore, Event, LogRow]]) -> None:
        pending = self._pending
        for rs, ev, _row in batch:
            key = ev.key
            if ev.type == DELETED:
                rs.items.pop(key, None)
                rs._sorted = None
            else:
                if ev.prev is None:
                    rs._sorted = None
                rs.items[key] = ev.entry
            rs.record(ev)
            rs.last_rv = ev.rv
            self.rv = ev.rv
            pk = (rs.rid, key)
            p = pending.get(pk)
            if p is not None and p[0] == ev.rv:
                del pending[pk]
            if rs.watchers:
                for w in list(rs.watchers):
                    w.on_event(ev)
                # The encoded lines now live in the watchers' queues; the history
                # keeps only the entry (a later replay encodes again).
                ev._lines = None
            ev.entry.release()
        if self._rv_waiters:
            still = []
            for want, fut in self._rv_waiters:
                if want <= self.rv:
                    if not fut.done():
                        fut.set_result(None)
                else:
                    still.append((want, fut))
            self._rv_waiters = still

    async def settle(self, timeout: float = 10.0) -> None:
        """Wait until every write assigned a revision so far has committed.

        A writer decides against the pending overlay (a 404 for a delete in
        flight, a 409 against an update in flight): answering before that
        write commits would let the client read back a state that contradicts
        the answer, which etcd's linearizable writes never do. Returns early if
        the store failed or after `timeout` (the answer is then only late).
        """
        want = self._next_rv
        if want <= self.rv or self._failed is not None:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rv_waiters.append((want, fut))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(fut, timeout)

    async def wait_for_rv(self, rv: int, timeout: float = 3.0) -> None:
        """Wait until revision rv is committed; 504 ResourceVersionTooLarge after timeout."""
        if rv <= self.rv:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rv_waiters.append((rv, fut))
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise errors.too_large_resource_version(rv, self.rv) from None

    # -- compaction ------------------------------------------------------------------------

    async def _compact_loop(self) -> None:
        while True:
            await self.clock.sleep(COMPACT_INTERVAL)
            try:
                await self.compact()
            except Exception:  # keep serving; the next round tries again
                log.exception("compaction failed")

    async def compact(self, now: float | None = None) -> None:
        """Trim history windows and delete the log rows nobody can ask for any more."""
        t = self.clock.monotonic() if now is None else now
        for rs in self._resources.values():
            rs.trim(t)
        if self._log is None:
            for rs in self._resources.values():
                rs._superseded.clear()
            return
        assert self._executor is not None
        loop = asyncio.get_running_loop()
        log_ = self._log
        for rs in list(self._resources.values()):
            if not rs._superseded:
                continue
            dead, rs._superseded = rs._superseded, []
            oldest = rs.oldest_rv
            rid = rs.rid
            current_max = self.rv

            await loop.run_in_executor(
                self._executor, log_.compact, rid, oldest, dead, current_max
            )


def _split_log_key(k: str) -> tuple[str, str]:
    # "<group>/<plural>/<rest>": group is "core" for the legacy group.
    a = k.index("/")
    b = k.index("/", a + 1)
    return k[:b], k[b + 1 :]


def resource_id(group: str, plural: str) -> str:
    return f"{group or 'core'}/{plural}"


def object_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name
