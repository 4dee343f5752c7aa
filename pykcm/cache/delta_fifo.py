"""DeltaFIFO: the queue between the Reflector and the informer (client-go delta_fifo.go).

The Reflector is the producer: every watch event becomes ``add``/``update``/
``delete``, every (re)list a ``replace``, and the resync timer calls
``resync``. The SharedIndexInformer is the consumer: ``pop(process)`` hands
``process`` every change queued for the oldest key, and ``process``
(``handle_deltas``) applies them to the Indexer, then distributes them.

What it guarantees:

- One queue entry per key, holding the key's *deltas* (``Delta(type,
  object)``, oldest first). A key keeps its place from its first insertion
  until it is popped, so an object updated a thousand times does not delay
  the others; the consumer sees everything that happened to it since it was
  last processed.
- Two consecutive Deleted deltas collapse into one, keeping the one with
  more information (a real object over a DeletedFinalStateUnknown).
- ``replace`` queues Replaced for every listed object and a
  Deleted(DeletedFinalStateUnknown) tombstone for every key that the known
  objects (the informer's Indexer) or the queue still has but the list
  lacks: deletions missed while the watch was down are not lost.
- ``resync`` queues Sync for known objects that have nothing queued (a queued
  delta is newer than the known object, and must not be overtaken).
- ``has_synced`` is true once everything the first ``replace`` queued has
  been popped (or when an add/update/delete came first).
- ``begin_initial_stream``, ``stream_initial(items)`` ... ``end_initial_stream
  (rest)`` (before the first ``replace`` or any other change) queue the first
  list's objects as Replaced while the list is still arriving; the end is a
  ``replace`` that counts them as listed: the
  informer stores and distributes them while the API server streams the
  rest (a big watch-list's initial events), instead of after the last one.
  ``has_synced`` stays false until that end and everything it and
  the stream queued is popped, and a popped streamed item is in the initial
  list, as with one ``replace``. Deliberate deviation from client-go, whose
  reflector keeps a watch-list's initial events aside until its end bookmark:
  the events handlers get are the same, in the server's order, unless the
  list fails part way: then the streamed objects stay, and the next list's
  ``replace`` (or streamed end) updates them or queues tombstones for those
  gone, as after any relist.

Concurrency. asyncio only: call every method from the event loop's thread.
client-go runs ``process`` under the queue's lock so that ``process`` can
update the known objects consistently with the queue. Here the same holds
for everything ``process`` does before its first ``await``: the producer
(the Reflector, also on the loop) can only run at an await point. A
coroutine ``process`` must therefore update the known objects before it
awaits anything. If a task calling ``pop`` is cancelled while ``process``
runs, the item is not requeued.

Deliberate differences from client-go, all about Python objects being
shared dicts:

- The transformer is applied to objects arriving from the producer (add,
  update, delete, replace), not to Sync objects (they come from the known
  objects, already transformed and shared: a transform that mutates in place
  would corrupt the cache) nor to tombstones (their object was transformed
  when it was queued or stored).
- ``replace`` computes every key and applies the transformer to every object
  before queueing anything, so a key or transform error leaves the queue
  unchanged instead of half-replaced.
- Lookups return ``None`` where client-go returns ``exists=false``.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from enum import StrEnum
from typing import Any, Final, NamedTuple, Protocol, TypeAlias, runtime_checkable

from pykcm.cache.errors import FIFOClosedError, KeyFuncError, RequeueError
from pykcm.cache.keys import DeletedFinalStateUnknown, KeyFunc, meta_namespace_key

__all__ = [
    "ADDED",
    "DELETED",
    "REPLACED",
    "SYNC",
    "UPDATED",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "Deltas",
    "KeyListerGetter",
    "PopProcessFunc",
    "TransformFunc",
]


class DeltaType(StrEnum):
    """The kind of change a Delta records (values are client-go's strings)."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    # A relist (Replace) saw the object; it may or may not have changed.
    REPLACED = "Replaced"
    # A periodic resync re-delivers the known object.
    SYNC = "Sync"


# Module constants: a global lookup is cheaper than a class attribute lookup
# on the hot path, and they read as client-go's names.
ADDED: Final = DeltaType.ADDED
UPDATED: Final = DeltaType.UPDATED
DELETED: Final = DeltaType.DELETED
REPLACED: Final = DeltaType.REPLACED
SYNC: Final = DeltaType.SYNC


class Delta(NamedTuple):
    """One change: its type and the object's state after it.

    For a deletion, ``object`` is the final state before deletion, or a
    :class:`~pykcm.cache.keys.DeletedFinalStateUnknown` tombstone.
    """

    type: DeltaType
    object: Any


_new_tuple = tuple.__new__

Deltas: TypeAlias = list[Delta]
"""The changes of one object, oldest first; ``deltas[-1]`` is the newest."""

PopProcessFunc: TypeAlias = Callable[[Deltas, bool], Awaitable[None] | None]
"""``process(deltas, is_in_initial_list)``; a plain function or a coroutine function."""

TransformFunc: TypeAlias = Callable[[Any], Any]
"""Applied to each incoming object before it is queued (see the module docstring)."""


@runtime_checkable
class KeyListerGetter(Protocol):
    """What the DeltaFIFO needs of its known objects (the informer's Indexer)."""

    def list_keys(self) -> list[str]:
        """The keys of every known object."""

    def get_by_key(self, key: str) -> Any | None:
        """The known object stored under ``key``, or ``None``."""


class DeltaFIFO:
    """Per-key delta accumulation in first-insertion order; see the module docstring."""

    __slots__ = (
        "_closed",
        "_emit_delta_type_replaced",
        "_initial_population_count",
        "_items",
        "_key_func",
        "_known_objects",
        "_not_empty",
        "_populated",
        "_queue",
        "_streamed",
        "_transformer",
    )

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        known_objects: KeyListerGetter | None = None,
        *,
        emit_delta_type_replaced: bool = True,
        transformer: TransformFunc | None = None,
    ) -> None:
        """client-go ``NewDeltaFIFOWithOptions``.

        ``emit_delta_type_replaced`` defaults to True (what every informer
        uses); False queues Sync instead of Replaced on ``replace``, client-go's
        backwards-compatible default.
        """
        # key -> its deltas (never empty). A key is in _items iff it is in _queue.
        self._items: dict[str, Deltas] = {}
        # Keys in first-insertion order, no duplicates. A deque, not the
        # dict's own order: popping the oldest dict entry again and again is
        # quadratic in CPython (deleted slots are rescanned until a resize).
        self._queue: deque[str] = deque()
        # True once the first replace() queued its items, or add/update/
        # delete/add_if_not_present was called first.
        self._populated = False
        # Items queued by the first replace() that are not popped yet.
        self._initial_population_count = 0
        self._key_func = key_func
        self._known_objects = known_objects
        self._closed = False
        self._emit_delta_type_replaced = emit_delta_type_replaced
        self._transformer = transformer
        # Keys queued by stream_initial since the first replace began arriving (None:
        # no stream going on); that replace counts them as listed.
        self._streamed: set[str] | None = None
        # Set while the queue may be non-empty; pop waits on it when empty.
        self._not_empty = asyncio.Event()

    # --- keys ------------------------------------------------------------

    def key_of(self, obj: Any) -> str:
        """The key of an object, a tombstone, or a Deltas list (its newest object)."""
        # A compact cached object carries its key (keys.meta_namespace_key): with the
        # default key function, its key without a call.
        if type(obj) is not dict:
            key = getattr(obj, "_meta_namespace_key", None)
            if key is not None and self._key_func is meta_namespace_key:
                return key  # type: ignore[no-any-return]
        if isinstance(obj, list):
            if not obj:
                raise KeyFuncError(obj, "0 length Deltas object; can't get key")
            obj = obj[-1].object
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return self._key_func(obj)

    # --- producer side ---------------------------------------------------

    def add(self, obj: Any) -> None:
        """Queue an Added delta for ``obj``."""
        self._populated = True
        self._queue_action(ADDED, obj, self.key_of(obj))

    def update(self, obj: Any) -> None:
        """Queue an Updated delta for ``obj``."""
        # The watch's hot path (a MODIFIED event): _queue_action and _append inlined.
        self._populated = True
        key = self.key_of(obj)
        transformer = self._transformer
        if transformer is not None and not isinstance(obj, DeletedFinalStateUnknown):
            obj = transformer(obj)
        items = self._items
        deltas = items.get(key)
        if deltas is None:
            items[key] = [_new_tuple(Delta, (UPDATED, obj))]
            self._queue.append(key)
            if not self._not_empty.is_set():
                self._not_empty.set()
        else:
            # No dedup: only two Deleted in a row are duplicates.
            deltas.append(_new_tuple(Delta, (UPDATED, obj)))

    def delete(self, obj: Any) -> None:
        """Queue a Deleted delta for ``obj``, unless the object is unknown.

        The deletion is ignored when the key is neither queued nor in the
        known objects (or, without known objects, not queued): it was
        presumably already reported, by a relist for example.
        """
        key = self.key_of(obj)
        self._populated = True
        if key not in self._items:
            known = self._known_objects
            if known is None or known.get_by_key(key) is None:
                return
        self._queue_action(DELETED, obj, key)

    def add_if_not_present(self, deltas: Deltas) -> None:
        """Queue ``deltas`` (a popped item) unless its key has been queued since.

        For a consumer that wants to retry an item without overtaking newer
        changes of the object.
        """
        self._add_if_not_present(self.key_of(deltas), deltas)

    def _add_if_not_present(self, key: str, deltas: Deltas) -> None:
        self._populated = True
        if key in self._items:
            return
        self._items[key] = deltas
        self._queue.append(key)
        self._not_empty.set()

    def _queue_action(self, action: DeltaType, obj: Any, key: str) -> None:
        """Append ``Delta(action, obj)`` to the key's deltas, queueing the key if new."""
        transformer = self._transformer
        if transformer is not None and not isinstance(obj, DeletedFinalStateUnknown):
            obj = transformer(obj)
        self._append(action, obj, key)

    def _append(self, action: DeltaType, obj: Any, key: str) -> None:
        # _new_tuple(Delta, ...) is Delta(action, obj) without the Python-level
        # __new__ of NamedTuple: ~0.1 us less on every event.
        deltas = self._items.get(key)
        if deltas is None:
            self._items[key] = [_new_tuple(Delta, (action, obj))]
            self._queue.append(key)
            if not self._not_empty.is_set():
                self._not_empty.set()
            return
        deltas.append(_new_tuple(Delta, (action, obj)))
        # dedupDeltas: only two Deleted in a row are duplicates. Keep the
        # one with more information: the older, unless it is a tombstone.
        if action is DELETED and len(deltas) > 1 and deltas[-2].type == DELETED:
            if isinstance(deltas[-2].object, DeletedFinalStateUnknown):
                deltas[-2] = deltas[-1]
            deltas.pop()

    def can_stream_initial(self) -> bool:
        """Whether a first list may be streamed: nothing replaced, added, updated or
        deleted yet (what a failed stream queued does not count)."""
        return not self._closed and not self._populated

    def begin_initial_stream(self) -> None:
        """Start streaming a first list (again, after a failed attempt): the keys
        :meth:`stream_initial` queues from now on are listed by
        :meth:`end_initial_stream`. RuntimeError unless :meth:`can_stream_initial`."""
        if not self.can_stream_initial():
            raise RuntimeError("begin_initial_stream after the first replace or a change")
        self._streamed = set()

    def stream_initial(self, items: Iterable[Any]) -> None:
        """Queue Replaced for objects of the first list while it is still arriving
        (after :meth:`begin_initial_stream`; each key at most once per stream)."""
        streamed = self._streamed
        if streamed is None or self._populated:
            raise RuntimeError("stream_initial outside an initial stream")
        key_of = self.key_of
        transformer = self._transformer
        listed: builtins.list[tuple[str, Any]] = []
        for obj in items:
            key = key_of(obj)
            if transformer is not None:
                obj = transformer(obj)
            listed.append((key, obj))
        action = REPLACED if self._emit_delta_type_replaced else SYNC
        append = self._append
        for key, obj in listed:
            streamed.add(key)
            append(action, obj, key)

    def unlist_streamed(self, key: str) -> None:
        """The stream deleted an object it had streamed: not listed after all (its
        tombstone comes with :meth:`end_initial_stream`)."""
        if self._streamed is not None:
            self._streamed.discard(key)

    def end_initial_stream(self, items: Iterable[Any], resource_version: str = "") -> None:
        """``replace`` with ``items`` (the rest of the list) and what the stream queued."""
        streamed, self._streamed = self._streamed, None
        self._replace(items, streamed or ())

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Queue Replaced for every listed object and tombstones for the vanished.

        A key queued or known (to the known objects) but absent from ``items``
        (and from what :meth:`stream_initial` queued for this list)
        gets ``Deleted(DeletedFinalStateUnknown(key, last_state))``, where
        ``last_state`` is the newest queued object, else the known object.
        ``resource_version`` is accepted for client-go's signature and unused.
        A stream going on (:meth:`begin_initial_stream`) is abandoned: what it
        queued counts as listed only if ``items`` has it.
        """
        self._streamed = None
        self._replace(items, ())

    def _replace(self, items: Iterable[Any], streamed: Iterable[str]) -> None:
        key_of = self.key_of
        transformer = self._transformer
        # Keys and transforms first, so an error queues nothing.
        listed: builtins.list[tuple[str, Any]] = []
        for obj in items:
            key = key_of(obj)
            if transformer is not None and not isinstance(obj, DeletedFinalStateUnknown):
                obj = transformer(obj)
            listed.append((key, obj))
        listed_keys = {key for key, _ in listed}
        listed_keys.update(streamed)

        action = REPLACED if self._emit_delta_type_replaced else SYNC
        append = self._append
        for key, obj in listed:
            append(action, obj, key)

        # Deletion detection against what is queued: an object added by the
        # watch and deleted while it was down.
        tombstones: builtins.list[tuple[str, Any]] = []
        for key, deltas in self._items.items():
            if key in listed_keys:
                continue
            last = deltas[-1].object
            if isinstance(last, DeletedFinalStateUnknown):
                last = last.obj
            tombstones.append((key, last))

        # ... and against the known objects, for keys with nothing queued.
        known = self._known_objects
        if known is not None:
            items_ = self._items
            for key in known.list_keys():
                if key in listed_keys or key in items_:
                    continue
                # None when the known objects changed under us: a tombstone
                # without its object, as client-go does.
                tombstones.append((key, known.get_by_key(key)))

        for key, last in tombstones:
            append(DELETED, DeletedFinalStateUnknown(key, last), key)

        if not self._populated:
            self._populated = True
            # Everything queued now came from this list (and its stream, whose popped
            # items are no longer queued): nothing else was queued before it.
            self._initial_population_count = len(self._queue)

    def resync(self) -> None:
        """Queue a Sync delta for each known object whose key has nothing queued.

        Without known objects this does nothing. An object with queued
        deltas is skipped: its known state is older than what is queued, and
        a Sync carrying it would overtake the queued change.
        """
        known = self._known_objects
        if known is None:
            return
        items = self._items
        for key in known.list_keys():
            obj = known.get_by_key(key)
            if obj is None:
                continue
            key = self.key_of(obj)
            if key in items:
                continue
            # No transform: the known object is already transformed and shared.
            self._append(SYNC, obj, key)

    def close(self) -> None:
        """Close the queue: ``pop`` drains what is queued, then raises FIFOClosedError."""
        self._closed = True
        self._not_empty.set()  # wake every waiting pop

    def is_closed(self) -> bool:
        return self._closed

    # --- consumer side ---------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first replace's items are all popped (or add/update/delete came first)."""
        return self._populated and self._initial_population_count == 0

    async def pop(self, process: PopProcessFunc) -> Deltas:
        """Wait for an item, remove the oldest key's deltas, process them, return them.

        ``process(deltas, is_in_initial_list)`` may be a plain function or a
        coroutine function. If it raises :class:`~pykcm.cache.errors.RequeueError`,
        the deltas are put back at the end of the queue (unless the key was
        queued again meanwhile) and ``pop`` raises the error's ``err``, or
        returns the deltas if it has none. Any other exception propagates and
        the item is dropped. Raises FIFOClosedError once closed and empty.
        """
        queue = self._queue
        while not queue:
            if self._closed:
                raise FIFOClosedError()
            self._not_empty.clear()
            await self._not_empty.wait()
        is_in_initial_list = not (self._populated and self._initial_population_count == 0)
        key = queue.popleft()
        if self._initial_population_count > 0:
            self._initial_population_count -= 1
        deltas = self._items.pop(key)
        try:
            result = process(deltas, is_in_initial_list)
            if result is not None and inspect.isawaitable(result):
                await result
        except RequeueError as e:
            self._add_if_not_present(key, deltas)
            if e.err is not None:
                raise e.err
        return deltas

    def pop_ready(self, process: Callable[[Deltas, bool], None]) -> Deltas | None:
        """``pop`` without waiting, for a plain-function ``process``: the oldest key's
        deltas, processed, or None when nothing is queued (closed or not).

        The same rules as ``pop`` (the initial population count, RequeueError),
        without a coroutine per item: the informer drains a burst with it.
        """
        queue = self._queue
        if not queue:
            return None
        is_in_initial_list = not (self._populated and self._initial_population_count == 0)
        key = queue.popleft()
        if self._initial_population_count > 0:
            self._initial_population_count -= 1
        deltas = self._items.pop(key)
        try:
            process(deltas, is_in_initial_list)
        except RequeueError as e:
            self._add_if_not_present(key, deltas)
            if e.err is not None:
                raise e.err
        return deltas

    def pop_ready_many(self, process: Callable[[str, Deltas, bool], None], limit: int,
                       on_error: Callable[[BaseException], None]) -> int:
        """``pop_ready`` up to ``limit`` times in one call, for the informer's process
        loop: ``process(key, deltas, is_in_initial_list)`` gets each popped key too (every
        delta of a key has that key). An error of ``process`` (or a RequeueError's
        ``err``) goes to ``on_error`` and the next item is popped. The number popped.
        """
        queue = self._queue
        popleft = queue.popleft
        pop = self._items.pop
        n = 0
        while n < limit and queue:
            key = popleft()
            count = self._initial_population_count
            is_in_initial_list = not (self._populated and count == 0)
            if count > 0:
                self._initial_population_count = count - 1
            deltas = pop(key)
            n += 1
            try:
                process(key, deltas, is_in_initial_list)
            except RequeueError as e:
                self._add_if_not_present(key, deltas)
                if e.err is not None:
                    on_error(e.err)
            except Exception as exc:  # noqa: BLE001 - the caller's to report
                on_error(exc)
        return n

    # --- reads -----------------------------------------------------------

    def list(self) -> builtins.list[Any]:
        """The newest object of every queued key."""
        return [deltas[-1].object for deltas in self._items.values()]

    def list_keys(self) -> builtins.list[str]:
        """The queued keys, oldest first."""
        return builtins.list(self._queue)

    def get(self, obj: Any) -> Deltas | None:
        """A copy of the deltas queued for ``obj``'s key, or ``None``."""
        return self.get_by_key(self.key_of(obj))

    def get_by_key(self, key: str) -> Deltas | None:
        """A copy of the deltas queued under ``key``, or ``None``.

        A copy, so that later appends do not show in the caller's list; the
        objects inside are the shared ones.
        """
        deltas = self._items.get(key)
        return builtins.list(deltas) if deltas is not None else None

    def oldest_queued_resource_version(self) -> int | None:
        """The smallest resourceVersion among the changes still queued, as an integer
        (None when no change but Syncs is queued). Raises ValueError when one is not a
        decimal integer.

        Each key's first change that is not a Sync counts (a Sync re-delivers a known
        object; its resourceVersion is already in the Indexer). Keys keep their place in
        the queue, so the consumer may apply a newer change of one key before an older one
        of another: every change older than this one has been popped, no more.
        """
        oldest: int | None = None
        for deltas in self._items.values():
            for delta_type, obj in deltas:
                if delta_type == SYNC:
                    continue
                if isinstance(obj, DeletedFinalStateUnknown):
                    obj = obj.obj
                try:
                    rv = int(obj["metadata"]["resourceVersion"])
                except (KeyError, TypeError) as exc:
                    raise ValueError(f"no resourceVersion in a queued {delta_type}") from exc
                if oldest is None or rv < oldest:
                    oldest = rv
                break
        return oldest

    def __len__(self) -> int:
        """The number of queued keys."""
        return len(self._queue)
