"""A watcher: one WATCH request's filter and its queue of encoded events.

The store calls `on_event` for every committed event of the watched resource,
synchronously, in revision order; the watcher decides what the client sees
(ADDED when an object starts matching its selectors, DELETED when it stops,
as kube-apiserver's cacheWatcher does) and queues the pre-encoded line. The
REST handler's task drains the queue into the HTTP response, so a slow client
never holds up the store: past MAX_QUEUE unread lines or MAX_QUEUE_BYTES unread
bytes the watcher is dropped (closed, and `on_overflow` told, so that a write
blocked on a client that does not read is abandoned); the client watches again
or relists, as with kube-apiserver's cacher, which terminates a watcher whose
buffer stays full.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from pykcm.apiserver.storage.store import ADDED, DELETED, MODIFIED, Entry, Event, ResourceStore

MAX_QUEUE = 10_000
MAX_QUEUE_BYTES = 16 * 1024 * 1024

Filter = Callable[[str, Entry], bool]


class Watcher:
    def __init__(
        self,
        rs: ResourceStore,
        start_rv: int,
        filter_: Filter | None,
    ) -> None:
        self.rs = rs
        self.start_rv = start_rv
        self.filter = filter_
        self.queue: deque[bytes] = deque()
        self.queued_bytes = 0
        self.wake = asyncio.Event()
        self.closed = False
        self.overflowed = False
        # the REST handler is writing drained lines to the client (virtual time's
        # autojump waits for it: pykcm.apiserver.controlplane.virtual_time)
        self.sending = False
        # called once when the watcher is dropped for a full queue
        self.on_overflow: Callable[[], None] | None = None

    def matches(self, key: str, entry: Entry | None) -> bool:
        if entry is None:
            return False
        f = self.filter
        return True if f is None else f(key, entry)

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        self.queue.append(line)
        self.queued_bytes += len(line)
        if len(self.queue) > MAX_QUEUE or self.queued_bytes > MAX_QUEUE_BYTES:
            # Nobody reads: drop what is queued (the client starts over) and the watcher.
            self.overflowed = True
            self.queue.clear()
            self.queued_bytes = 0
            self.close()
            if self.on_overflow is not None:
                self.on_overflow()
        self.wake.set()

    def on_event(self, ev: Event) -> None:
        if ev.rv <= self.start_rv:
            return
        f = self.filter
        if f is None:
            self.push(ev.line(ev.type))
            return
        cur = ev.type != DELETED and f(ev.key, ev.entry)
        old = ev.prev is not None and f(ev.key, ev.prev)
        if cur:
            self.push(ev.line(MODIFIED if old else ADDED))
        elif old:
            self.push(ev.line(DELETED))

    def register(self) -> None:
        self.rs.watchers.add(self)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.rs.watchers.discard(self)
            self.wake.set()

    def drain(self) -> list[bytes]:
        q = self.queue
        out = list(q)
        q.clear()
        self.queued_bytes = 0
        self.wake.clear()
        return out


def bookmark_line(kind: str, api_version: str, rv: int, initial_end: bool = False,
                  fields: dict[str, Any] | None = None,
                  annotations: dict[str, str] | None = None) -> bytes:
    """A BOOKMARK event: an empty object of the kind (`fields`, `annotations`: what its
    encoding shows even when empty) carrying only the revision."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    ann = dict(annotations or {})
    if initial_end:
        ann["k8s.io/initial-events-end"] = "true"
    if ann:
        meta["annotations"] = ann
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version, "metadata": meta}
    if fields:
        obj.update(fields)
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"
