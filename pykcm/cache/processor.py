"""sharedProcessor and processorListener: fan-out from one informer to its handlers.

client-go tools/cache shared_informer.go (``sharedProcessor``,
``processorListener``) on asyncio.

Data flow: ``SharedIndexInformer.handle_deltas`` calls :meth:`SharedProcessor.add`
/ :meth:`~SharedProcessor.update` / :meth:`~SharedProcessor.delete` once per
change, after updating the Indexer. The processor builds *one* notification
tuple ``(kind, a, b)`` and appends it to the unbounded buffer (a deque) of
every listener concerned, waking the listener's task only if it is asleep.
Each listener's task drains its own buffer in order and calls its handler's
``on_add`` / ``on_update`` / ``on_delete``, awaiting the result when the
handler is a coroutine function.

Guarantees:

- Distribution never blocks and never awaits: a slow handler only grows its
  own buffer; it delays neither the informer nor any other handler. (A
  *plain* handler that blocks the thread, e.g. ``time.sleep``, blocks the
  event loop and so everything: do blocking work in a coroutine handler,
  with ``asyncio.to_thread`` if need be.)
- Notifications reach one handler one at a time, in the informer's order.
- An exception raised by a handler is logged with the object's key, and
  that notification is skipped; the next one is delivered as usual.
- A listener drains a long buffer of plain-function calls without yielding
  for at most :data:`YIELD_EVERY` notifications, then lets the loop run.

Resync: every listener has its own resync period. When the Reflector's
resync timer fires it asks :meth:`SharedProcessor.should_resync`, which
marks the listeners whose period has elapsed as *syncing* (and schedules
their next resync); a resync notification (an update whose old and new
resourceVersion are equal) goes only to the syncing listeners. As in
client-go, every listener starts out syncing, so without resyncs an
unchanged object re-delivered by a relist reaches every handler.

Performance: per change, one tuple and one ``deque.append`` per listener; a
wake-up (``Future.set_result``) only for listeners that are waiting, so a
burst of events costs one wake-up per listener, not one per event.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from pykcm.api.clock import REAL_CLOCK
from pykcm.cache.event_handlers import ResourceEventHandler
from pykcm.cache.keys import deletion_handling_meta_namespace_key
from pykcm.cache.metrics import GaugeChild, InformerMetrics

__all__ = [
    "ADD_NOTIFICATION",
    "DELETE_NOTIFICATION",
    "UPDATE_NOTIFICATION",
    "YIELD_EVERY",
    "Clock",
    "Notification",
    "ProcessorListener",
    "SharedProcessor",
    "determine_resync_period",
    "handler_name",
]

log = logging.getLogger("pykcm.cache.processor")

Clock: TypeAlias = Callable[[], float]
"""Seconds on a monotonic scale (the informer's clock's ``monotonic``)."""

# Notification kinds. A notification is (kind, a, b):
#   ADD:    (ADD_NOTIFICATION, obj, is_in_initial_list)
#   UPDATE: (UPDATE_NOTIFICATION, old, new)
#   DELETE: (DELETE_NOTIFICATION, obj, None)
ADD_NOTIFICATION: Final = 0
UPDATE_NOTIFICATION: Final = 1
DELETE_NOTIFICATION: Final = 2

Notification: TypeAlias = tuple[int, Any, Any]

YIELD_EVERY: Final = 256
"""Plain-function notifications a listener delivers before yielding to the loop."""

_KIND_NAMES: Final = ("add", "update", "delete")


def handler_name(handler: Any) -> str:
    """A readable name for a handler, for logs and the ``handler`` metric label."""
    for attr in ("add_func", "update_func", "delete_func"):
        f = getattr(handler, attr, None)
        if f is not None:
            name = getattr(f, "__qualname__", None)
            mod = getattr(f, "__module__", None)
            if name:
                return f"{mod}.{name}" if mod else str(name)
    inner = getattr(handler, "handler", None)
    if inner is not None and inner is not handler:
        return handler_name(inner)
    t = type(handler)
    return f"{t.__module__}.{t.__qualname__}"


def _object_key(obj: Any) -> str:
    try:
        return deletion_handling_meta_namespace_key(obj)
    except Exception:  # noqa: BLE001 - only for a message
        return f"<{type(obj).__name__} without a key>"


class ProcessorListener:
    """Relays notifications to one handler through its own buffer and task.

    It is also the handler's registration (what ``add_event_handler``
    returns): :meth:`has_synced` is true once the informer has synced and
    every initial-list add queued here has been handled (client-go's
    ``synctrack.SingleFileTracker``).
    """

    __slots__ = (
        "_buffer",
        "_closed",
        "_initial_pending",
        "_pending_gauge",
        "_task",
        "_upstream_has_synced",
        "_waiter",
        "handler",
        "name",
        "next_resync",
        "requested_resync_period",
        "resync_period",
    )

    def __init__(
        self,
        handler: ResourceEventHandler,
        requested_resync_period: float,
        resync_period: float,
        now: float,
        upstream_has_synced: Callable[[], bool],
        *,
        name: str | None = None,
    ) -> None:
        self.handler = handler
        self.name = name if name is not None else handler_name(handler)
        self._buffer: deque[Notification] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        # Initial-list adds queued here and not yet handled.
        self._initial_pending = 0
        self._upstream_has_synced = upstream_has_synced
        self._pending_gauge: GaugeChild | None = None
        # The resync period asked for (after the 1 s minimum), and the one in
        # force (0 when the informer does not resync).
        self.requested_resync_period = requested_resync_period
        self.resync_period = resync_period
        self.next_resync = now + resync_period

    # --- registration ----------------------------------------------------

    def has_synced(self) -> bool:
        """True once the informer has synced and the initial list reached this handler."""
        if not self._upstream_has_synced():
            return False
        return self._initial_pending <= 0

    # --- producer side (the processor) -----------------------------------

    def add(self, notification: Notification) -> None:
        """Queue one notification and wake the task if it sleeps (never blocks)."""
        if self._closed:
            return
        self._buffer.append(notification)
        if notification[0] == ADD_NOTIFICATION and notification[2]:
            self._initial_pending += 1
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def pending(self) -> int:
        """Notifications queued and not yet handed to the handler."""
        return len(self._buffer)

    # --- resync -----------------------------------------------------------

    def should_resync(self, now: float) -> bool:
        return self.resync_period != 0 and now >= self.next_resync

    def determine_next_resync(self, now: float) -> None:
        self.next_resync = now + self.resync_period

    def set_resync_period(self, resync_period: float) -> None:
        self.resync_period = resync_period

    # --- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Start the delivery task (on the running loop)."""
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(
                self.run(), name=f"processorListener[{self.name}]")

    def close(self) -> None:
        """Stop accepting notifications and drop the pending ones.

        A notification being handled completes; the task then ends (as
        client-go's ``close(addCh)``).
        """
        self._closed = True
        # The dropped initial adds will never be handled: has_synced must not
        # wait for them.
        self._initial_pending = 0
        self._buffer.clear()
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task

    def is_closed(self) -> bool:
        return self._closed

    async def run(self) -> None:
        """Deliver buffered notifications to the handler until closed."""
        buf = self._buffer
        popleft = buf.popleft
        handler = self.handler
        on_add = handler.on_add
        on_update = handler.on_update
        on_delete = handler.on_delete
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        burst = 0
        while True:
            if not buf:
                if self._closed:
                    return
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiter = waiter
                try:
                    await waiter
                finally:
                    self._waiter = None
                burst = 0
                continue
            kind, a, b = popleft()
            try:
                if kind == UPDATE_NOTIFICATION:
                    result = on_update(a, b)
                elif kind == ADD_NOTIFICATION:
                    result = on_add(a, b)
                else:
                    result = on_delete(a)
                if result is not None:
                    await result
                    burst = 0
            except Exception:
                obj = b if kind == UPDATE_NOTIFICATION else a
                log.exception("event handler %s failed on %s of %s; notification skipped",
                              self.name, _KIND_NAMES[kind], _object_key(obj))
            except asyncio.CancelledError:
                # Ours (stop): end. The handler's own (something it awaited
                # was cancelled): a failure of that notification only.
                if task is None or task.cancelling():
                    raise
                obj = b if kind == UPDATE_NOTIFICATION else a
                log.exception("event handler %s was cancelled on %s of %s; notification "
                              "skipped", self.name, _KIND_NAMES[kind], _object_key(obj))
            finally:
                if kind == ADD_NOTIFICATION and b and self._initial_pending > 0:
                    self._initial_pending -= 1
            burst += 1
            if burst >= YIELD_EVERY:
                burst = 0
                await asyncio.sleep(0)

    def __repr__(self) -> str:
        return (f"<ProcessorListener {self.name} pending={len(self._buffer)} "
                f"resync={self.resync_period}>")


class SharedProcessor:
    """Distributes an informer's notifications to its listeners (client-go ``sharedProcessor``)."""

    __slots__ = ("_all", "_clock", "_listeners", "_metrics", "_started", "_syncing")

    def __init__(self, clock: Clock = REAL_CLOCK.monotonic) -> None:
        self._clock = clock
        # listener -> whether it is currently syncing (receives resync updates).
        self._listeners: dict[ProcessorListener, bool] = {}
        # Snapshots iterated by distribute (rebuilt on every membership change).
        self._all: tuple[ProcessorListener, ...] = ()
        self._syncing: tuple[ProcessorListener, ...] = ()
        self._started = False
        self._metrics: InformerMetrics | None = None

    def set_clock(self, clock: Clock) -> None:
        """Read resync due times from ``clock`` (the informer's, set before it runs)."""
        self._clock = clock

    def _rebuild(self) -> None:
        self._all = tuple(self._listeners)
        self._syncing = tuple(lst for lst, syncing in self._listeners.items() if syncing)

    # --- membership --------------------------------------------------------

    def add_listener(self, listener: ProcessorListener) -> ProcessorListener:
        """Register a listener (starting its task if the processor runs)."""
        self._listeners[listener] = True
        self._rebuild()
        if self._metrics is not None:
            self._publish(listener, self._metrics)
        if self._started:
            listener.start()
        return listener

    def get_listener(self, registration: object) -> ProcessorListener | None:
        if isinstance(registration, ProcessorListener) and registration in self._listeners:
            return registration
        return None

    def remove_listener(self, registration: object) -> None:
        """Unregister a listener; unknown registrations are ignored (as in client-go)."""
        listener = self.get_listener(registration)
        if listener is None:
            return
        del self._listeners[listener]
        self._rebuild()
        if self._metrics is not None:
            self._metrics.remove_handler(listener.name)
        listener.close()

    @property
    def listeners(self) -> tuple[ProcessorListener, ...]:
        return self._all

    # --- distribution (hot path: no awaits, no per-listener allocation) ----

    def distribute(self, notification: Notification, sync: bool) -> None:
        """Queue ``notification`` to every listener, or only to syncing ones if ``sync``."""
        for listener in self._syncing if sync else self._all:
            listener.add(notification)

    def add(self, obj: Any, is_in_initial_list: bool) -> None:
        notification = (ADD_NOTIFICATION, obj, is_in_initial_list)
        for listener in self._all:
            listener._buffer.append(notification)
            if is_in_initial_list:
                listener._initial_pending += 1
            waiter = listener._waiter
            if waiter is not None:
                listener._waiter = None
                if not waiter.done():
                    waiter.set_result(None)

    def update(self, old: Any, new: Any, is_sync: bool) -> None:
        notification = (UPDATE_NOTIFICATION, old, new)
        for listener in self._syncing if is_sync else self._all:
            listener._buffer.append(notification)
            waiter = listener._waiter
            if waiter is not None:
                listener._waiter = None
                if not waiter.done():
                    waiter.set_result(None)

    def delete(self, obj: Any) -> None:
        notification = (DELETE_NOTIFICATION, obj, None)
        for listener in self._all:
            listener._buffer.append(notification)
            waiter = listener._waiter
            if waiter is not None:
                listener._waiter = None
                if not waiter.done():
                    waiter.set_result(None)

    # --- resync --------------------------------------------------------------

    def should_resync(self) -> bool:
        """Mark the listeners whose resync is due as syncing; true if any is.

        Given to the Reflector, which calls it when its resync timer fires.
        """
        now = self._clock()
        needed = False
        listeners = self._listeners
        for listener in listeners:
            due = listener.should_resync(now)
            listeners[listener] = due
            if due:
                needed = True
                listener.determine_next_resync(now)
        self._rebuild()
        return needed

    def resync_check_period_changed(self, resync_check_period: float) -> None:
        """Re-derive every listener's resync period from a new informer check period."""
        for listener in self._listeners:
            listener.set_resync_period(
                determine_resync_period(listener.requested_resync_period, resync_check_period))

    # --- lifecycle -----------------------------------------------------------

    def start(self, metrics: InformerMetrics | None = None) -> None:
        """Start every listener's task (call on the running loop)."""
        self._started = True
        self._metrics = metrics
        for listener in self._listeners:
            if metrics is not None:
                self._publish(listener, metrics)
            listener.start()

    @staticmethod
    def _publish(listener: ProcessorListener, metrics: InformerMetrics) -> None:
        gauge = metrics.pending_notifications(listener.name)
        gauge.set_function(listener.pending)
        listener._pending_gauge = gauge

    async def stop(self) -> None:
        """Stop every listener: pending notifications are dropped, tasks cancelled.

        The listeners are forgotten (a processorListener is not reusable, as
        in client-go).
        """
        listeners = list(self._listeners)
        self._listeners = {}
        self._rebuild()
        self._started = False
        self._metrics = None
        tasks = []
        for listener in listeners:
            listener.close()
            task = listener.task
            if task is not None and not task.done():
                task.cancel()
                tasks.append(task)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def determine_resync_period(desired: float, check: float) -> float:
    """client-go ``determineResyncPeriod``: a handler's effective resync period."""
    if desired == 0:
        return desired
    if check == 0:
        log.warning("The specified resync period %ss is invalid because this shared "
                    "informer doesn't support resyncing", desired)
        return 0.0
    if desired < check:
        log.warning("The specified resync period %ss is being increased to the minimum "
                    "resync check period %ss", desired, check)
        return check
    return desired
