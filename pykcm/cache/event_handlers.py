"""Event handlers: what a SharedIndexInformer calls for every change it sees.

client-go tools/cache controller.go (``ResourceEventHandler`` and its
adaptors) and shared_informer.go (``ResourceEventHandlerRegistration``).

Data flow: ``SharedIndexInformer.handle_deltas`` updates the Indexer, then
hands one notification per change to the sharedProcessor, which appends it
to the buffer of every registered processorListener; each listener's task
then calls its handler here:

- ``on_add(obj, is_in_initial_list)``: an object appeared in the cache.
  ``is_in_initial_list`` is true for the objects of the initial list (and
  for the replay a handler added after start receives).
- ``on_update(old, new)``: an object changed, or a resync / relist delivered
  it again unchanged (then ``old`` and ``new`` have the same resourceVersion).
  ``old`` is the last state the cache had; intermediate states may have been
  merged away.
- ``on_delete(obj)``: an object left the cache. ``obj`` is its last known
  state, or a :class:`~pykcm.cache.keys.DeletedFinalStateUnknown` tombstone
  when the deletion was noticed by a relist rather than seen on the watch.

Each method may be a plain function or a coroutine function (its coroutine
is awaited before the next notification of the same handler). Objects are
the cache's shared references: never mutate them; copy before building a
write.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeAlias, runtime_checkable

__all__ = [
    "FilterFunc",
    "FilteringResourceEventHandler",
    "HandlerResult",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
]

HandlerResult: TypeAlias = Awaitable[Any] | None
"""What a handler method returns: ``None``, or an awaitable (coroutine) to await."""

FilterFunc: TypeAlias = Callable[[Any], bool]
"""Decides whether an object (possibly a tombstone) is of interest to a handler."""


@runtime_checkable
class ResourceEventHandler(Protocol):
    """The three notifications an informer delivers (client-go ``ResourceEventHandler``)."""

    def on_add(self, obj: Any, is_in_initial_list: bool) -> HandlerResult:
        """``obj`` was added to the cache."""

    def on_update(self, old: Any, new: Any) -> HandlerResult:
        """``old`` was replaced by ``new`` in the cache (or re-delivered by a resync)."""

    def on_delete(self, obj: Any) -> HandlerResult:
        """``obj`` (or a DeletedFinalStateUnknown) was removed from the cache."""


@runtime_checkable
class ResourceEventHandlerRegistration(Protocol):
    """What ``add_event_handler`` returns (client-go ``ResourceEventHandlerRegistration``).

    Pass it to ``remove_event_handler``; ``has_synced()`` turns true once the
    informer has synced and every object of the initial list has been
    delivered to (handled by) this handler.
    """

    def has_synced(self) -> bool:
        """True once the initial list has been delivered to this handler."""


class ResourceEventHandlerFuncs:
    """Adapts up to three functions to :class:`ResourceEventHandler` (client-go's).

    ``add_func(obj)``, ``update_func(old, new)``, ``delete_func(obj)``; any may
    be omitted, and any may be a coroutine function. As in client-go,
    ``add_func`` is not told whether the object is in the initial list: use
    :class:`ResourceEventHandlerDetailedFuncs` for that.
    """

    __slots__ = ("add_func", "delete_func", "update_func")

    def __init__(
        self,
        add_func: Callable[[Any], HandlerResult] | None = None,
        update_func: Callable[[Any, Any], HandlerResult] | None = None,
        delete_func: Callable[[Any], HandlerResult] | None = None,
    ) -> None:
        self.add_func = add_func
        self.update_func = update_func
        self.delete_func = delete_func

    def on_add(self, obj: Any, is_in_initial_list: bool) -> HandlerResult:
        if self.add_func is not None:
            return self.add_func(obj)
        return None

    def on_update(self, old: Any, new: Any) -> HandlerResult:
        if self.update_func is not None:
            return self.update_func(old, new)
        return None

    def on_delete(self, obj: Any) -> HandlerResult:
        if self.delete_func is not None:
            return self.delete_func(obj)
        return None

    def __repr__(self) -> str:
        funcs = (self.add_func, self.update_func, self.delete_func)
        names = [getattr(f, "__qualname__", repr(f)) for f in funcs if f is not None]
        return f"ResourceEventHandlerFuncs({', '.join(names)})"


class ResourceEventHandlerDetailedFuncs:
    """Like :class:`ResourceEventHandlerFuncs`, with ``add_func(obj, is_in_initial_list)``.

    client-go ``ResourceEventHandlerDetailedFuncs``.
    """

    __slots__ = ("add_func", "delete_func", "update_func")

    def __init__(
        self,
        add_func: Callable[[Any, bool], HandlerResult] | None = None,
        update_func: Callable[[Any, Any], HandlerResult] | None = None,
        delete_func: Callable[[Any], HandlerResult] | None = None,
    ) -> None:
        self.add_func = add_func
        self.update_func = update_func
        self.delete_func = delete_func

    def on_add(self, obj: Any, is_in_initial_list: bool) -> HandlerResult:
        if self.add_func is not None:
            return self.add_func(obj, is_in_initial_list)
        return None

    def on_update(self, old: Any, new: Any) -> HandlerResult:
        if self.update_func is not None:
            return self.update_func(old, new)
        return None

    def on_delete(self, obj: Any) -> HandlerResult:
        if self.delete_func is not None:
            return self.delete_func(obj)
        return None


class FilteringResourceEventHandler:
    """Passes only the objects ``filter_func`` accepts to ``handler`` (client-go's).

    Updates follow the filter's verdict on both states, as in client-go:

    ========  ========  =====================================
    old       new       delivered
    ========  ========  =====================================
    passes    passes    ``on_update(old, new)``
    fails     passes    ``on_add(new, is_in_initial_list=False)``
    passes    fails     ``on_delete(old)``
    fails     fails     nothing
    ========  ========  =====================================

    ``filter_func`` is also given tombstones (DeletedFinalStateUnknown) on
    delete, exactly as client-go does; a filter that reads the object should
    look inside them. The nested handler's result (an awaitable for a
    coroutine handler) is returned, so coroutine handlers work through it.
    """

    __slots__ = ("filter_func", "handler")

    def __init__(self, filter_func: FilterFunc, handler: ResourceEventHandler) -> None:
        self.filter_func = filter_func
        self.handler = handler

    def on_add(self, obj: Any, is_in_initial_list: bool) -> HandlerResult:
        if not self.filter_func(obj):
            return None
        return self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> HandlerResult:
        newer = self.filter_func(new)
        older = self.filter_func(old)
        if newer and older:
            return self.handler.on_update(old, new)
        if newer:
            return self.handler.on_add(new, False)
        if older:
            return self.handler.on_delete(old)
        return None

    def on_delete(self, obj: Any) -> HandlerResult:
        if not self.filter_func(obj):
            return None
        return self.handler.on_delete(obj)

    def __repr__(self) -> str:
        return f"FilteringResourceEventHandler({self.filter_func!r}, {self.handler!r})"
