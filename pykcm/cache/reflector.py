"""Reflector: keeps a store in step with the API server (client-go reflector.go).

Role: the producer at the head of the informer's data flow. It lists a
resource, then watches it from the list's resourceVersion, and turns what it
sees into store calls::

    ListWatch ── LIST pages ──► Reflector ── replace(items, rv) ──► store
              ── WATCH events ─►          ── add / update / delete ─► (DeltaFIFO)
                                          ── resync() (timer) ──────►

The store is normally the informer's DeltaFIFO; anything with the
:class:`ReflectorStore` methods works.

Behaviour (client-go v1.36, one :meth:`Reflector.list_and_watch` per round,
rounds separated by the backoff manager's delay in :meth:`Reflector.run`):

- **Watch-list** (``use_watch_list``, on by default as client-go's
  WatchListClient gate): the round opens a watch with
  ``sendInitialEvents=true, resourceVersionMatch=NotOlderThan``, collects the
  synthetic ADDED events until the BOOKMARK annotated
  ``k8s.io/initial-events-end: "true"``, replaces the store with them at the
  bookmark's resourceVersion, and keeps consuming the same stream as a
  normal watch. Deliberate deviation: a store that can take a first list
  while it arrives (the informer's DeltaFIFO before its first list,
  ``can_stream_initial``) gets each received chunk's new ADDED objects at
  once and the rest at the bookmark (``end_initial_stream``), so that the
  informer stores and distributes a big list while the server still encodes
  it (at 50,000 pods kube-apiserver takes about 2.3 s to send the JSON); its
  ``has_synced`` still waits for the bookmark (pykcm.cache.delta_fifo). A 4xx when opening it (the server refuses the parameters;
  not 401/403/404/410/429, which say nothing about watch-list) or a stream
  that ends cleanly before that bookmark (the server ignores them) turns
  watch-list off for this reflector. A 410 retries the watch-list from ""
  and a 429 or a refused connection retries it after a backoff; any other
  failure falls back to list+watch for this round only.
- **List**: the resourceVersion is "0" for the first list (served from the
  watch cache), then the last synced one, and "" (a consistent read) once
  the last synced one was reported Expired (410) or too large (504
  ResourceVersionTooLarge); such a list error is retried at once at "".
  Pages of ``page_size`` items, as client-go's pager: one request when the
  first page has no continue token; a continue token that expires (410 on
  page 2+) restarts as one full unpaged list. Lists at a specific
  resourceVersion are not paged (so that the watch cache can serve them)
  unless a list at "0" came back paged (the server has no watch cache).
- **Watch** from the last synced resourceVersion with allowWatchBookmarks
  and a random timeoutSeconds in [min, 2*min) with min 5 minutes. Every
  event updates the store and the last synced resourceVersion; a BOOKMARK
  only advances the resourceVersion. A watch that ends normally (its
  timeout, a dropped connection) is re-opened without relisting (after a
  backoff if the connection dropped before any event came); 429 and
  connection errors when opening it, or 429 in the stream, back off and
  re-watch without relisting; a 410 in the stream ends the round, so the
  next one relists at the last synced resourceVersion. Any other error in
  the stream, or a watch closed within a second without any event, ends
  the round too.
- **Resync**: while watching, every ``resync_period`` seconds, if
  ``should_resync()`` (or it is None), ``store.resync()``.
- **Errors**: the watch error handler (default: log) is called with every
  error the reflector meets while listing or watching, including those it
  recovers from within the round (a 429, a dropped connection, an expired
  list revision); client-go calls it only when a round fails. ``run`` never
  raises but CancelledError.

Events are applied a received chunk at a time, with no await in between, and
the last synced resourceVersion is recorded once per chunk (a store with
``update_resource_version(rv)``, client-go's ResourceVersionUpdater, is told
then). Delays come from a :class:`~pykcm.cache.backoff.BackoffManager` (the
``backoff`` argument, for tests), watch timeouts from
``DEFAULT_MIN_WATCH_TIMEOUT`` (patchable); the jitter of both from the reflector's
stream of ``rng`` (a :class:`~pykcm.api.randomness.RandomSource`, unseeded by
default).

Memory: the reflector holds no object beyond the call that handles it; a
list's items are handed to ``replace`` and dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from pykcm.api.clock import Clock, clock_of
from pykcm.api.randomness import RandomSource, random_of
from pykcm.cache.backoff import BackoffManager, ExponentialBackoffManager
from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.list_watch import ListerWatcher
from pykcm.client import (
    ApiError,
    WatchEvent,
    WatchStream,
    is_connection_error,
    is_gone,
    is_resource_expired,
    is_timeout,
    is_too_many_requests,
    status_error_from,
)

__all__ = [
    "DEFAULT_MIN_WATCH_TIMEOUT",
    "INITIAL_EVENTS_ANNOTATION",
    "Reflector",
    "ReflectorStore",
    "VeryShortWatchError",
    "WatchErrorHandler",
    "WatchListIncompleteError",
    "default_watch_error_handler",
    "is_expired_error",
    "is_too_large_resource_version_error",
    "is_watch_error_retriable",
]

log = logging.getLogger("pykcm.cache.reflector")

# " at 0x7f..." in a default repr (a ListerWatcher without __str__).
_ADDRESS: Final = re.compile(r" at 0x[0-9a-fA-F]+")

# Watch timeouts are random in [min, 2*min) to spread the re-watch load on the
# API server (client-go defaultMinWatchTimeout). Read on every watch, so a test
# may patch it.
DEFAULT_MIN_WATCH_TIMEOUT = 300.0
# A watch closed this fast with no event at all is treated as an error.
VERY_SHORT_WATCH = 1.0
# The annotation of the bookmark that ends a watch-list's initial events.
INITIAL_EVENTS_ANNOTATION: Final = "k8s.io/initial-events-end"
# The environment switch of client-go's feature gate (KUBE_FEATURE_<gate>).
WATCH_LIST_ENV = "KUBE_FEATURE_WatchListClient"


@runtime_checkable
class ReflectorStore(Protocol):
    """What a Reflector writes to (the DeltaFIFO satisfies it)."""

    def replace(self, items: list[Any], resource_version: str) -> None:
        """Replace the content with ``items``, listed at ``resource_version``."""

    def add(self, obj: Any) -> None:
        """An ADDED event."""

    def update(self, obj: Any) -> None:
        """A MODIFIED event."""

    def delete(self, obj: Any) -> None:
        """A DELETED event (``obj`` is the last state)."""

    def resync(self) -> None:
        """The resync timer fired."""


class VeryShortWatchError(Exception):
    """The watch closed within a second without delivering any event."""


class WatchListIncompleteError(Exception):
    """A watch-list stream ended before the bookmark that ends its initial events."""


WatchErrorHandler = Callable[["Reflector", BaseException], None]


def is_expired_error(exc: BaseException | None) -> bool:
    """410: Expired, or Gone from servers before 1.18 (client-go isExpiredError)."""
    return is_resource_expired(exc) or is_gone(exc)


def is_too_large_resource_version_error(exc: BaseException | None) -> bool:
    """The server has not reached that resourceVersion yet (504 ResourceVersionTooLarge)."""
    if not isinstance(exc, ApiError):
        return False
    # A Status cause's "reason" is Go's StatusCause.Type.
    if any(c.get("reason") == "ResourceVersionTooLarge" for c in exc.causes):
        return True
    if not is_timeout(exc):
        return False
    # Servers 1.17.0-1.18.5 said so in a cause message only, older ones in the message.
    if any(c.get("message") == "Too large resource version" for c in exc.causes):
        return True
    return "Too large resource version" in exc.message


def is_watch_error_retriable(exc: BaseException | None) -> bool:
    """Errors worth a re-watch after a backoff, without relisting (client-go).

    The API server is probably unresponsive or overloaded: relisting every
    object would not help, and the watch can most likely resume where it was.
    """
    return is_connection_error(exc) or is_too_many_requests(exc)


def default_watch_error_handler(r: Reflector, exc: BaseException) -> None:
    """Log the error at a level that fits it (client-go DefaultWatchErrorHandler)."""
    if is_expired_error(exc):
        log.debug("%s: watch closed with: %s", r.name, exc)
    elif is_too_many_requests(exc) or is_connection_error(exc):
        log.info("%s: watch interrupted, retrying: %s", r.name, exc or type(exc).__name__)
    else:
        log.error("%s: failed to list and watch: %s", r.name, exc or type(exc).__name__)


def _refuses_watch_list(exc: BaseException) -> bool:
    """A 4xx answer to the watch-list request itself: the server refuses its parameters.

    Not the 4xx that say nothing about watch-list: 401/403 (credentials,
    RBAC: a list fails too), 404 (no such resource yet), 410 (a revision to
    drop) and 429 (overload).
    """
    return isinstance(exc, ApiError) and 400 <= exc.code < 500 and \
        exc.code not in (401, 403, 404, 410, 429) and \
        not is_expired_error(exc) and not is_too_many_requests(exc)


def _watch_list_default() -> bool:
    # client-go v1.36: the WatchListClient gate is on unless turned off.
    value = os.environ.get(WATCH_LIST_ENV, "").strip().lower()
    return value not in ("false", "0", "no", "off")


class Reflector:
    """Lists and watches through a ListWatch into a store; see the module docstring."""

    def __init__(
        self,
        lw: ListerWatcher,
        store: ReflectorStore,
        *,
        name: str = "",
        resync_period: float = 0.0,
        should_resync: Callable[[], bool] | None = None,
        use_watch_list: bool | None = None,
        page_size: int = 500,
        clock: Clock | Callable[[], float] | None = None,
        backoff: BackoffManager | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        """``backoff`` replaces the default exponential backoff manager (tests).

        ``page_size`` is the pager's page size (client-go ``pager.PageSize``);
        0 disables paging.
        """
        self._lw = lw
        self._store = store
        self.name = name or str(lw)
        self.resync_period = float(resync_period)
        self.should_resync = should_resync
        self._use_watch_list = _watch_list_default() if use_watch_list is None \
            else bool(use_watch_list)
        self.page_size = int(page_size)
        # One clock for the resync timer, the watch-duration check and the backoff
        # sleeps (a bare function, as older tests pass, reads the monotonic line).
        self._time = clock_of(clock)
        self._clock = self._time.monotonic
        # The backoff's jitter and the watch timeouts: this reflector's own stream of
        # the process's source (reproducible under a seed: a default repr's address,
        # different in each run, does not name the stream).
        self._rng = random_of(rng).stream(
            "reflector/" + _ADDRESS.sub("", self.name))
        self._backoff: BackoffManager = backoff if backoff is not None else \
            ExponentialBackoffManager(clock=self._clock, rand=self._rng.random)
        self._watch_error_handler: WatchErrorHandler = default_watch_error_handler
        self._last_sync_rv = ""
        # The last list or watch at _last_sync_rv said it is expired or too
        # large: list (or watch-list) at "" next.
        self._rv_unavailable = False
        # A list at "0" came back paged: the server serves no watch cache,
        # so paging stays on even for lists at a specific resourceVersion.
        self._paginated_result = False
        # client-go ResourceVersionUpdater: stores that want every new revision.
        updater = getattr(store, "update_resource_version", None)
        self._rv_updater: Callable[[str], None] | None = updater if callable(updater) else None
        self._list_count = 0
        self._watch_count = 0

    # -- public ------------------------------------------------------------

    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list, watch-list or watch event seen."""
        return self._last_sync_rv

    def set_watch_error_handler(self, handler: WatchErrorHandler) -> None:
        """Called with every list or watch error (it should return quickly)."""
        self._watch_error_handler = handler

    @property
    def is_watch_list_used(self) -> bool:
        """True while this reflector syncs by watch-list (on, and not refused)."""
        return self._use_watch_list

    @property
    def list_count(self) -> int:
        """LIST syncs started (a paged list counts once)."""
        return self._list_count

    @property
    def watch_count(self) -> int:
        """WATCH requests opened (watch-list ones included)."""
        return self._watch_count

    async def run(self) -> None:
        """List and watch until cancelled, backing off between rounds."""
        log.debug("%s: starting reflector (resync %ss)", self.name, self.resync_period)
        try:
            while True:
                try:
                    await self.list_and_watch()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any failure ends the round
                    self._report(exc)
                # client-go wait.BackoffUntil(sliding): every round is
                # followed by a delay, even one that ended without error
                # (a 410 in the stream): a server in trouble is not relisted
                # in a tight loop.
                await self._time.sleep(self._backoff.backoff())
        finally:
            log.debug("%s: stopping reflector", self.name)

    async def list_and_watch(self) -> None:
        """One round: watch-list or list, then watch until a relist is needed.

        Raises the error that ended the round when listing failed or a
        watch could not be opened; returns when the watch ended in a way
        that calls for a relist.
        """
        stream: WatchStream | None = None
        leftover: Sequence[WatchEvent] = ()
        if self._use_watch_list:
            try:
                stream, leftover = await self._watch_list()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure: fall back
                # The handler tells the error; this says what happens next.
                log.info("%s: the watch-list request failed, falling back to LIST/WATCH "
                         "(making progress is better than deadlocking)%s", self.name,
                         "" if self._use_watch_list else " for good")
                self._report(exc)
                stream, leftover = None, ()
        if stream is None:
            await self._list()
        log.debug("%s: caches populated", self.name)
        await self._watch_with_resync(stream, leftover)

    # -- resourceVersions ----------------------------------------------------

    def _set_last_sync_rv(self, rv: str) -> None:
        self._last_sync_rv = rv
        if self._rv_updater is not None:
            self._rv_updater(rv)

    def _relist_resource_version(self) -> str:
        """client-go relistResourceVersion."""
        if self._rv_unavailable:
            # Paged lists skip the watch cache; a consistent read brings the
            # reflector to the newest revision.
            return ""
        if not self._last_sync_rv:
            # The first list may be served from the watch cache.
            return "0"
        return self._last_sync_rv

    def _rewatch_resource_version(self) -> str:
        """client-go rewatchResourceVersion (the watch-list's starting point)."""
        return "" if self._rv_unavailable else self._last_sync_rv

    def _watch_timeout(self) -> int:
        return int(DEFAULT_MIN_WATCH_TIMEOUT * (self._rng.random() + 1.0))

    # -- errors --------------------------------------------------------------

    def _report(self, exc: BaseException) -> None:
        try:
            self._watch_error_handler(self, exc)
        except Exception:
            log.exception("%s: the watch error handler failed", self.name)

    # -- list ------------------------------------------------------------------

    async def _list(self) -> None:
        """List (paged) and replace the store (client-go Reflector.list)."""
        self._list_count += 1
        rv = self._relist_resource_version()
        page_size = self.page_size
        if not self._paginated_result and rv not in ("", "0"):
            # Not paged, so the watch cache can serve it: a list at a given
            # revision is never older than that revision anyway. ("0" keeps
            # paging: the watch cache ignores the limit then, and a server
            # without one should not be asked for everything at once.)
            page_size = 0
        try:
            items, list_rv, paginated = await self._paged_list(rv, page_size)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not (is_expired_error(exc) or is_too_large_resource_version_error(exc)):
                raise
            self._report(exc)
            # Retry at once from a consistent read; the pager already fell
            # back to a full list if it was a continue token that expired.
            self._rv_unavailable = True
            items, list_rv, paginated = await self._paged_list(
                self._relist_resource_version(), page_size)
        if rv == "0" and paginated:
            self._paginated_result = True
        self._rv_unavailable = False
        self._store.replace(items, list_rv)
        del items
        self._set_last_sync_rv(list_rv)

    async def _paged_list(self, rv: str, page_size: int) -> tuple[list[Any], str, bool]:
        """client-go pager.ListWithAlloc with FullListIfExpired: (items, rv, paged)."""
        lw = self._lw
        page = await lw.list(resource_version=rv, limit=page_size)
        meta = page.get("metadata") or {}
        cont = meta.get("continue") or ""
        items: list[Any] = page.get("items") or []
        list_rv = str(meta.get("resourceVersion") or "")
        if not cont:
            return items, list_rv, False
        del page
        while cont:
            try:
                # The continue token carries the revision: no resourceVersion.
                page = await lw.list(limit=page_size, continue_=cont)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not is_resource_expired(exc):
                    raise
                # The snapshot of page 1 was compacted away while paging:
                # everything again in one request at the requested revision.
                log.info("%s: continue token expired, listing again in full", self.name)
                del items
                full = await lw.list(resource_version=rv, limit=0)
                full_meta = full.get("metadata") or {}
                return (full.get("items") or [], str(full_meta.get("resourceVersion") or ""),
                        True)
            items.extend(page.get("items") or ())
            cont = (page.get("metadata") or {}).get("continue") or ""
            del page
        return items, list_rv, True

    # -- watch-list --------------------------------------------------------------

    async def _watch_list(self) -> tuple[WatchStream, Sequence[WatchEvent]]:
        """client-go Reflector.watchList: (the open stream, events after the end bookmark)."""
        while True:
            rv = self._rewatch_resource_version()
            stream = self._lw.watch(resource_version=rv, timeout_seconds=self._watch_timeout(),
                                    allow_watch_bookmarks=True, send_initial_events=True,
                                    resource_version_match="NotOlderThan")
            self._watch_count += 1
            try:
                try:
                    await stream.start()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if _refuses_watch_list(exc):
                        # The server does not take sendInitialEvents: stop asking.
                        self._use_watch_list = False
                    raise
                result = await self._initial_events(stream)
            except asyncio.CancelledError:
                stream.close()
                raise
            except Exception as exc:
                stream.close()
                if is_watch_error_retriable(exc):
                    self._report(exc)
                    await self._time.sleep(self._backoff.backoff())
                    continue
                if is_expired_error(exc) or is_too_large_resource_version_error(exc):
                    # The revision we resumed from is gone (or not there
                    # yet): stream the newest state instead.
                    self._report(exc)
                    self._rv_unavailable = True
                    continue
                raise
            if result is None:
                stream.close()
                if stream.error is not None:
                    # A broken connection, not a server that ignores watch-list.
                    raise stream.error
                self._use_watch_list = False
                raise WatchListIncompleteError(
                    f"{self.name}: the watch-list stream ended before the "
                    f"{INITIAL_EVENTS_ANNOTATION} bookmark; the server does not support "
                    "watch-list")
            items, list_rv, leftover, streamed = result
            self._rv_unavailable = False
            if streamed:
                self._store.end_initial_stream(items, list_rv)  # type: ignore[attr-defined]
            else:
                self._store.replace(items, list_rv)
            del items
            self._set_last_sync_rv(list_rv)
            return stream, leftover

    def _initial_stream_store(self) -> Any:
        """The store, when it takes a first list while it arrives (the DeltaFIFO before
        its first replace: ``can_stream_initial``), else None."""
        can = getattr(self._store, "can_stream_initial", None)
        return self._store if can is not None and can() else None

    async def _initial_events(
            self, stream: WatchStream
    ) -> tuple[list[Any], str, Sequence[WatchEvent], bool] | None:
        """Collect the initial events: (items, bookmark rv, events after it, whether
        the store was streamed), None if the stream ended before the bookmark.

        A store that can take the first list while it arrives (the informer's
        DeltaFIFO before its first list) gets every received chunk's new ADDED
        objects at once (``stream_initial``), the rest at the bookmark
        (``end_initial_stream``): the informer stores and distributes a big list
        while the server still sends it (see pykcm.cache.delta_fifo). Any other
        store gets them all at the bookmark (``replace``), as client-go does.
        """
        # A temporary store, keyed as the cache keys: the initial events are
        # ADDEDs, but nothing forbids a server to send more.
        temp: dict[str, Any] = {}
        fifo = self._initial_stream_store()
        streamed: set[str] = set()
        if fifo is not None:
            fifo.begin_initial_stream()
        while True:
            batch = await stream.next_batch()
            if not batch:
                return None
            out: list[Any] = []
            for i, (typ, obj) in enumerate(batch):
                if typ == "ERROR":
                    raise _status_error(obj)
                try:
                    meta = obj["metadata"]
                    event_rv = meta["resourceVersion"]
                    if typ == "ADDED" or typ == "MODIFIED":
                        key = meta_namespace_key(obj)
                        if fifo is not None and typ == "ADDED" and key not in streamed \
                                and key not in temp:
                            streamed.add(key)
                            out.append(obj)
                        else:
                            temp[key] = obj
                    elif typ == "DELETED":
                        key = meta_namespace_key(obj)
                        temp.pop(key, None)
                        if key in streamed:
                            # Queued already (or about to be): a tombstone at the end.
                            if out:
                                fifo.stream_initial(out)
                                out = []
                            streamed.discard(key)
                            fifo.unlist_streamed(key)
                    elif typ == "BOOKMARK":
                        if (meta.get("annotations") or {}).get(
                                INITIAL_EVENTS_ANNOTATION) == "true":
                            if out:
                                fifo.stream_initial(out)
                            return (list(temp.values()), str(event_rv), batch[i + 1:],
                                    fifo is not None)
                    else:
                        log.error("%s: unable to understand watch event type %r",
                                  self.name, typ)
                        continue
                except (KeyError, TypeError, AttributeError, ValueError) as exc:
                    log.error("%s: unable to understand watch event %s: %s",
                              self.name, typ, exc)
            if out:
                fifo.stream_initial(out)
                # Let the informer take them while the server sends the next chunk
                # (next_batch does not suspend while the socket has more buffered).
                await asyncio.sleep(0)

    # -- watch -----------------------------------------------------------------------

    async def _watch_with_resync(self, stream: WatchStream | None,
                                 leftover: Sequence[WatchEvent]) -> None:
        """Watch with the resync timer alongside (client-go watchWithResync).

        A failing resync ends the round like a watch error: the watch task is
        cancelled (which closes its stream) and the error is raised.
        """
        if self.resync_period <= 0:
            await self._watch(stream, leftover)
            return
        watch = asyncio.create_task(self._watch(stream, leftover), name=f"{self.name} watch")
        resync = asyncio.create_task(self._resync_loop(), name=f"{self.name} resync")
        try:
            await asyncio.wait((watch, resync), return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            resync.cancel()
            if stream is not None:
                # The watch task may be cancelled before it ever ran.
                stream.close()
            await asyncio.wait((watch, resync))
        if not watch.cancelled():
            watch.result()
            return
        resync.result()  # raises the resync error (the loop never returns)

    async def _resync_loop(self) -> None:
        while True:
            await self._time.sleep(self.resync_period)
            if self.should_resync is None or self.should_resync():
                log.debug("%s: forcing resync", self.name)
                self._store.resync()

    async def _watch(self, stream: WatchStream | None,
                     leftover: Sequence[WatchEvent]) -> None:
        """Watch, re-watching as long as no relist is needed (client-go Reflector.watch)."""
        try:
            while True:
                start = self._clock()
                if stream is None:
                    stream = self._lw.watch(resource_version=self._last_sync_rv,
                                            timeout_seconds=self._watch_timeout(),
                                            allow_watch_bookmarks=True)
                    self._watch_count += 1
                    try:
                        await stream.start()
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        stream.close()
                        stream = None
                        if is_watch_error_retriable(exc):
                            self._report(exc)
                            await self._time.sleep(self._backoff.backoff())
                            continue
                        raise
                try:
                    err, count = await self._handle_watch(stream, leftover)
                finally:
                    stream.close()
                stream, leftover = None, ()
                short = count == 0 and self._clock() - start < VERY_SHORT_WATCH
                if err is None:
                    if not short:
                        continue  # ended normally (its timeout): watch again
                    err = VeryShortWatchError(
                        f"{self.name}: unexpected watch close - watch lasted less than a "
                        "second and no items received")
                self._report(err)
                if is_too_many_requests(err):
                    await self._time.sleep(self._backoff.backoff())
                    continue
                if is_connection_error(err):
                    # The connection dropped (reset, unexpected EOF, read
                    # timeout): client-go takes it as a normal end and
                    # resumes where it was; at once, unless it dropped at
                    # once (then back off, as for a refused connection).
                    if short:
                        await self._time.sleep(self._backoff.backoff())
                    continue
                # A 410 (relist at the last synced revision: a list at a given
                # revision is served at that revision or newer), or anything
                # else: end the round.
                if not is_expired_error(err):
                    log.warning("%s: watch ended with: %s", self.name,
                                err or type(err).__name__)
                return
        finally:
            if stream is not None:
                stream.close()

    async def _handle_watch(self, stream: WatchStream, leftover: Sequence[WatchEvent]
                            ) -> tuple[BaseException | None, int]:
        """Apply a stream's events to the store: (the error that ended it or None, events)."""
        count = 0
        if leftover:
            n, err = self._handle_events(leftover)
            count += n
            if err is not None:
                return err, count
        next_batch = stream.next_batch
        handle = self._handle_events
        while True:
            try:
                batch = await next_batch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the stream failed
                return exc, count
            if not batch:
                break
            n, err = handle(batch)
            count += n
            if err is not None:
                return err, count
            # Flow control: when the socket has more buffered, next_batch() does
            # not suspend, and the informer's consumers would never run while
            # their buffers grow without bound. Yield once per batch.
            await asyncio.sleep(0)
        return stream.error, count

    def _handle_events(self, events: Sequence[WatchEvent]) -> tuple[int, BaseException | None]:
        """Apply events to the store: (events applied, the ERROR event's error or None).

        The hot path: no await, so nothing can observe the store and the
        resourceVersion out of step, and the resourceVersion is recorded
        once per batch.
        """
        store = self._store
        add, update, delete = store.add, store.update, store.delete
        rv: Any = None
        count = 0
        err: BaseException | None = None
        for typ, obj in events:
            if typ == "ERROR":
                err = _status_error(obj)
                break
            event_rv = None
            if type(obj) is not dict:
                # A compact cached object: its metadata struct's field, no Mapping calls.
                meta = getattr(obj, "_meta", None)
                event_rv = getattr(meta, "resourceVersion", None) if meta is not None \
                    else None
                if type(event_rv) is not str:
                    event_rv = None
            if event_rv is None:
                try:
                    event_rv = obj["metadata"]["resourceVersion"]
                except (KeyError, TypeError):
                    log.error("%s: unable to understand watch event %s: no resourceVersion",
                              self.name, typ)
                    continue
            try:
                if typ == "MODIFIED":
                    update(obj)
                elif typ == "ADDED":
                    add(obj)
                elif typ == "DELETED":
                    delete(obj)
                elif typ != "BOOKMARK":
                    log.error("%s: unable to understand watch event type %r", self.name, typ)
                    continue
            except Exception as exc:  # noqa: BLE001 - a store error
                # client-go logs store errors and goes on with the stream.
                log.error("%s: unable to apply watch event %s to the store: %r",
                          self.name, typ, exc)
            rv = event_rv
            count += 1
        if rv is not None:
            self._set_last_sync_rv(rv if isinstance(rv, str) else str(rv))
        return count, err


def _status_error(obj: Any) -> ApiError:
    """The typed error of an ERROR event's Status."""
    code = obj.get("code") if isinstance(obj, dict) else None
    return status_error_from(int(code or 500), obj if isinstance(obj, dict) else None)
