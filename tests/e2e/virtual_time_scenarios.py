"""Helpers of the virtual-time scenario tests (issue 21's acceptance): watching what a
scenario does and reading its times.

Shared by test_virtual_time_scenarios.py and test_virtual_time_determinism.py. A
:class:`Recorder` watches resources of one namespace from the scenario's first request
(every event reaches it: a watch is never sampled, so nothing is missed between polls);
:func:`wait_for` polls what it has seen, a wall-time bound being only a bound, never an
assertion. Times are read from the objects (creationTimestamp, conditions, events),
stamped by the cluster's clock: on virtual time, exact virtual seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from pykcm.client import Client

WAIT = 120.0
"""Upper bound (wall s) of every wait: a loaded 2-core machine runs other tests too."""


def ts(value: str | None) -> float:
    """An RFC 3339 stamp as epoch seconds (the API server's seconds or micro/nanoseconds)."""
    assert value, "no timestamp"
    return datetime.fromisoformat(value).timestamp()


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def event_time(e: dict[str, Any]) -> float:
    """When a core/v1 Event happened (first occurrence)."""
    return ts(e.get("firstTimestamp") or e.get("eventTime") or e["metadata"]["creationTimestamp"])


@dataclass
class Recorder:
    """Watches ``resources`` in ``namespace`` (``None``: cluster-scoped) and keeps every
    watch event, in the order received."""

    client: Client
    namespace: str | None
    resources: Iterable[str]
    seen: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def __aenter__(self) -> Self:
        ready = []
        for r in self.resources:
            started = asyncio.Event()
            ready.append(started)
            self._tasks.append(asyncio.create_task(self._watch(r, started)))
        async with asyncio.timeout(WAIT):
            for started in ready:
                await started.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    async def _watch(self, resource: str, started: asyncio.Event) -> None:
        listed = await self.client.list(resource, self.namespace)
        for o in listed["items"]:
            self.seen.append((resource, "ADDED", o))
        started.set()
        rv = listed["metadata"]["resourceVersion"]
        while True:
            async for etype, obj in self.client.watch(resource, self.namespace,
                                                      resource_version=rv):
                if etype == "BOOKMARK":
                    continue
                rv = obj["metadata"]["resourceVersion"]
                self.seen.append((resource, etype, obj))

    def objects(self, resource: str, name: str | None = None) -> list[dict[str, Any]]:
        """Every state of ``resource`` (one object when ``name``), in order."""
        return [o for r, _, o in self.seen
                if r == resource and (name is None or o["metadata"]["name"] == name)]

    def latest(self, resource: str) -> dict[str, dict[str, Any]]:
        """The last state of each object of ``resource`` (deleted ones included)."""
        out: dict[str, dict[str, Any]] = {}
        for o in self.objects(resource):
            out[o["metadata"]["name"]] = o
        return out

    def deleted(self, resource: str) -> set[str]:
        return {o["metadata"]["name"] for r, t, o in self.seen if r == resource and
                t == "DELETED"}

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        """The core/v1 Events seen (last state of each), by first occurrence."""
        evs = [e for e in self.latest("events").values()
               if reason is None or e.get("reason") == reason]
        return sorted(evs, key=lambda e: (event_time(e), e["metadata"]["name"]))


async def wait_for(what: str, pred: Callable[[], Any], timeout: float = WAIT) -> Any:
    """Poll ``pred`` (on what was recorded: no request) until truthy; fail after
    ``timeout`` wall seconds (a bound, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


class Rate:
    """Virtual seconds per wall second from the scenario's first request (printed)."""

    def __init__(self, epoch: Callable[[], float]) -> None:
        self._epoch = epoch
        self.v0 = epoch()
        self.w0 = time.monotonic()

    def report(self, name: str) -> tuple[float, float]:
        v, w = self._epoch() - self.v0, time.monotonic() - self.w0
        print(f"\n[virtual time] {name}: {v:.0f} virtual s in {w:.2f} wall s = "
              f"{v / w:.0f} virtual s per wall s (machine load {os.getloadavg()[0]:.1f})")
        return v, w
