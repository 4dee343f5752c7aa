"""pykcm.cache.Reflector and its backoff manager against a scripted ListWatch.

The fake ListWatch answers each list call with the next scripted page (or
error) and each watch call with the next scripted stream: an error raised
when the watch is opened, or a sequence of events, transport errors and
HANG (block until cancelled). Unscripted calls block, so a test can look at
how many calls were made. The backoff is recorded and returns 0.

Covered: the list resourceVersion rule, paging and the continue-expired
fallback, 410 relists (at the last rv, then at ""), bookmarks, 429 and
connection errors (backoff, no relist), other errors, the backoff sequence,
the resync timer, watch-list (happy path, 4xx, early end, 410, broken
stream), the watch error handler, store errors.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest

from pykcm.cache import (
    DeltaFIFO,
    ExponentialBackoffManager,
    Reflector,
    ReflectorStore,
    VeryShortWatchError,
    WatchListIncompleteError,
    default_watch_error_handler,
)
from pykcm.cache import reflector as reflector_mod
from pykcm.client import (
    ApiError,
    Expired,
    Forbidden,
    Invalid,
    TooManyRequests,
    WatchStream,
    is_resource_expired,
    is_too_many_requests,
    status_error_from,
)

HANG = object()
NS = "ns"


# -- fixtures of the script ---------------------------------------------------------


def obj(name: str, rv: int | str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, "resourceVersion": str(rv)}}


def page(rv: int | str, *names: str, cont: str = "", item_rv: int = 1) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta,
            "items": [obj(n, item_rv) for n in names]}


def bookmark(rv: int | str, end: bool = False) -> tuple[str, dict[str, Any]]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return ("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta})


def status(code: int, reason: str, message: str = "", **details: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "code": code, "reason": reason,
                           "message": message or reason}
    if details:
        out["details"] = details
    return out


def err(code: int, reason: str, message: str = "", **details: Any) -> ApiError:
    return status_error_from(code, status(code, reason, message, **details))


def expired() -> ApiError:
    return err(410, "Expired", "too old resource version: 1 (5)")


def too_large() -> ApiError:
    return err(504, "Timeout", "Too large resource version: 99, current: 12",
               causes=[{"reason": "ResourceVersionTooLarge",
                        "message": "Too large resource version"}])


class FakeLW:
    def __init__(self) -> None:
        self.lists: list[Any] = []
        self.watches: list[Any] = []
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.closed = 0

    async def list(self, *, resource_version: str = "", resource_version_match: str = "",
                   limit: int = 0, continue_: str = "") -> dict[str, Any]:
        self.list_calls.append({"rv": resource_version, "limit": limit, "continue": continue_})
        if not self.lists:
            await asyncio.Event().wait()
        r = self.lists.pop(0)
        if isinstance(r, BaseException):
            raise r
        return copy.deepcopy(r)

    def watch(self, *, resource_version: str, timeout_seconds: int | None,
              allow_watch_bookmarks: bool = True, send_initial_events: bool | None = None,
              resource_version_match: str = "") -> WatchStream:
        self.watch_calls.append({
            "rv": resource_version, "timeout": timeout_seconds,
            "bookmarks": allow_watch_bookmarks, "initial": send_initial_events,
            "match": resource_version_match})
        script = self.watches.pop(0) if self.watches else [HANG]

        def close() -> None:
            self.closed += 1

        async def opener() -> tuple[AsyncIterator[bytes], Callable[[], None]]:
            if isinstance(script, BaseException):
                raise script

            async def chunks() -> AsyncIterator[bytes]:
                for item in script:
                    if item is HANG:
                        await asyncio.Event().wait()
                    elif isinstance(item, BaseException):
                        raise item
                    else:
                        # A list of events is one chunk: one batch for the reader.
                        events: Any = item if isinstance(item, list) else [item]
                        yield b"".join(orjson.dumps({"type": t, "object": o}) + b"\n"
                                       for t, o in events)
            return chunks(), close
        return WatchStream(opener)

    def rvs(self) -> builtins.list[str]:
        return [c["rv"] for c in self.list_calls if not c["continue"]]


class Recorder:
    """A ReflectorStore that records calls (names only) and keeps a dict state."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.state: dict[str, dict[str, Any]] = {}
        self.fail_on: set[str] = set()

    def _name(self, o: dict[str, Any]) -> str:
        name: str = o["metadata"]["name"]
        if name in self.fail_on:
            raise ValueError(f"cannot store {name}")
        return name

    def replace(self, items: list[Any], resource_version: str) -> None:
        self.calls.append(("replace", sorted(self._name(o) for o in items), resource_version))
        self.state = {o["metadata"]["name"]: o for o in items}

    def add(self, o: Any) -> None:
        self.calls.append(("add", self._name(o)))
        self.state[o["metadata"]["name"]] = o

    def update(self, o: Any) -> None:
        self.calls.append(("update", self._name(o)))
        self.state[o["metadata"]["name"]] = o

    def delete(self, o: Any) -> None:
        self.calls.append(("delete", self._name(o)))
        self.state.pop(o["metadata"]["name"], None)

    def resync(self) -> None:
        self.calls.append(("resync",))


class ZeroBackoff:
    def __init__(self) -> None:
        self.calls = 0

    def backoff(self) -> float:
        self.calls += 1
        return 0.0


def slow_clock() -> Callable[[], float]:
    """Ten seconds pass on every reading: no watch is ever 'very short'."""
    counter = itertools.count(0.0, 10.0)
    return lambda: next(counter)


def make(lw: FakeLW, store: ReflectorStore | None = None, **kw: Any
         ) -> tuple[Reflector, Recorder, ZeroBackoff, list[BaseException]]:
    rec = Recorder()
    backoff = ZeroBackoff()
    kw.setdefault("use_watch_list", False)
    kw.setdefault("clock", slow_clock())
    r = Reflector(lw, store if store is not None else rec, name="test", backoff=backoff, **kw)
    errors: list[BaseException] = []
    r.set_watch_error_handler(lambda _r, e: errors.append(e))
    return r, rec, backoff, errors


async def run_until(r: Reflector, cond: Callable[[], bool], timeout: float = 3.0) -> None:
    """Run the reflector until cond() holds, then cancel it (it must not have ended)."""
    task = asyncio.create_task(r.run())
    try:
        async with asyncio.timeout(timeout):
            while not cond():
                assert not task.done(), task
                await asyncio.sleep(0.001)
        # Let anything already scheduled happen, to catch extra calls.
        for _ in range(5):
            await asyncio.sleep(0)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def waiting_on_watch(lw: FakeLW, n: int) -> Callable[[], bool]:
    return lambda: len(lw.watch_calls) >= n


# -- list then watch, the resourceVersion rule ---------------------------------------------


async def test_lists_at_0_then_watches_from_the_list_revision() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a", "b")]
    lw.watches = [[("ADDED", obj("c", 11)), ("MODIFIED", obj("a", 12)),
                   ("DELETED", obj("b", 13)), HANG]]
    r, rec, backoff, errors = make(lw)
    await run_until(r, lambda: r.last_sync_resource_version() == "13")
    assert lw.list_calls == [{"rv": "0", "limit": 500, "continue": ""}]
    assert rec.calls == [("replace", ["a", "b"], "10"), ("add", "c"), ("update", "a"),
                         ("delete", "b")]
    [w] = lw.watch_calls
    assert w["rv"] == "10" and w["bookmarks"] is True and w["initial"] is None
    assert w["match"] == ""
    assert 300 <= w["timeout"] < 600
    assert (r.list_count, r.watch_count, backoff.calls, errors) == (1, 1, 0, [])
    assert sorted(rec.state) == ["a", "c"]


async def test_watch_timeouts_are_random_between_5_and_10_minutes() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    lw.watches = [[bookmark(10)] for _ in range(30)]
    r, _, _, _ = make(lw)
    await run_until(r, waiting_on_watch(lw, 31))
    timeouts = {c["timeout"] for c in lw.watch_calls}
    assert all(300 <= t < 600 for t in timeouts) and len(timeouts) > 5


async def test_a_watch_that_ends_normally_is_reopened_without_relisting() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a")]
    lw.watches = [[("ADDED", obj("c", 11))], [("MODIFIED", obj("c", 12))]]
    r, _, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 3))
    assert [c["rv"] for c in lw.watch_calls] == ["10", "11", "12"]
    assert (r.list_count, backoff.calls, errors) == (1, 0, [])
    assert lw.closed == 3  # every stream, the open one when run() was cancelled


async def test_a_bookmark_only_advances_the_resource_version() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a")]
    lw.watches = [[bookmark(20)], [[bookmark(25), ("ADDED", obj("b", 26)), bookmark(30)]]]
    r, rec, _, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 3))
    assert [c["rv"] for c in lw.watch_calls] == ["10", "20", "30"]
    assert rec.calls == [("replace", ["a"], "10"), ("add", "b")]
    assert r.last_sync_resource_version() == "30" and errors == []


@pytest.mark.parametrize("second", [expired, too_large], ids=["expired", "too-large"])
async def test_in_stream_410_relists_at_the_last_revision_then_at_empty(
        second: Callable[[], ApiError]) -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a"), second(), page(30, "a", "b"), page(40, "b")]
    lw.watches = [[("ADDED", obj("b", 11)), ("ERROR", status(410, "Expired"))],
                  [("ERROR", status(410, "Gone"))]]
    r, rec, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 3))
    # "0" first; the last synced revision after the in-stream 410 (unpaged,
    # for the watch cache); "" once that was refused; then the new one again.
    assert lw.list_calls == [{"rv": "0", "limit": 500, "continue": ""},
                             {"rv": "11", "limit": 0, "continue": ""},
                             {"rv": "", "limit": 0, "continue": ""},
                             {"rv": "30", "limit": 0, "continue": ""}]
    assert [c["rv"] for c in lw.watch_calls] == ["10", "30", "40"]
    assert rec.calls[-2:] == [("replace", ["a", "b"], "30"), ("replace", ["b"], "40")]
    assert is_resource_expired(errors[0]) and type(errors[1]) is type(second())
    assert len(errors) == 3 and errors[2].code == 410  # type: ignore[attr-defined]
    # One delay after each round that ended; none between the two lists.
    assert backoff.calls == 2 and r.list_count == 3


async def test_a_410_when_opening_the_watch_relists() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a"), page(20, "a")]
    lw.watches = [expired()]
    r, _, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 2))
    assert lw.rvs() == ["0", "10"] and [c["rv"] for c in lw.watch_calls] == ["10", "20"]
    assert len(errors) == 1 and is_resource_expired(errors[0]) and backoff.calls == 1


async def test_a_failed_list_is_retried_after_a_backoff() -> None:
    lw = FakeLW()
    lw.lists = [err(500, "InternalError"), err(429, "TooManyRequests"), page(10, "a")]
    r, rec, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 1))
    assert lw.rvs() == ["0", "0", "0"] and backoff.calls == 2
    assert [e.code for e in errors] == [500, 429]  # type: ignore[attr-defined]
    assert rec.calls == [("replace", ["a"], "10")]


# -- paging ----------------------------------------------------------------------------


async def test_paged_list_is_joined_and_later_relists_stay_paged() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a", "b", cont="c1"), page(10, "c", "d", cont="c2"), page(10, "e"),
                page(20, "a", cont="c3"), page(20, "b")]
    lw.watches = [[("ERROR", status(410, "Expired"))]]
    r, rec, _, _ = make(lw, page_size=2)
    await run_until(r, waiting_on_watch(lw, 2))
    assert lw.list_calls == [
        {"rv": "0", "limit": 2, "continue": ""},
        # the token carries the revision
        {"rv": "", "limit": 2, "continue": "c1"},
        {"rv": "", "limit": 2, "continue": "c2"},
        # a list at "0" came back paged: no watch cache, keep paging
        {"rv": "10", "limit": 2, "continue": ""},
        {"rv": "", "limit": 2, "continue": "c3"},
    ]
    assert rec.calls == [("replace", ["a", "b", "c", "d", "e"], "10"),
                         ("replace", ["a", "b"], "20")]


async def test_a_first_page_without_continue_is_the_whole_list() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a", "b"), page(20, "a")]
    lw.watches = [[("ERROR", status(410, "Expired"))]]
    r, _, _, _ = make(lw, page_size=2)
    await run_until(r, waiting_on_watch(lw, 2))
    # not paged: a relist at a revision is not paged either (watch cache)
    assert [(c["rv"], c["limit"]) for c in lw.list_calls] == [("0", 2), ("10", 0)]


async def test_an_expired_continue_token_falls_back_to_a_full_list() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a", cont="c1"), page(10, "b", cont="c2"),
                err(410, "Expired", "The provided continue parameter is too old"),
                page(15, "a", "b", "c")]
    r, rec, _, errors = make(lw, page_size=1)
    await run_until(r, waiting_on_watch(lw, 1))
    assert lw.list_calls[2:] == [{"rv": "", "limit": 1, "continue": "c2"},
                                 {"rv": "0", "limit": 0, "continue": ""}]
    assert rec.calls == [("replace", ["a", "b", "c"], "15")]
    assert lw.watch_calls[0]["rv"] == "15" and errors == []


async def test_another_error_on_a_later_page_fails_the_list() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a", cont="c1"), err(500, "InternalError"), page(12, "a")]
    r, rec, backoff, errors = make(lw, page_size=1)
    await run_until(r, waiting_on_watch(lw, 1))
    assert [(c["rv"], c["continue"]) for c in lw.list_calls] == [("0", ""), ("", "c1"),
                                                                  ("0", "")]
    assert rec.calls == [("replace", ["a"], "12")] and backoff.calls == 1
    assert len(errors) == 1 and errors[0].code == 500  # type: ignore[attr-defined]


# -- retriable watch errors: backoff, no relist ---------------------------------------------


async def test_429_in_the_stream_backs_off_and_rewatches_without_relisting() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    lw.watches = [[("ADDED", obj("a", 11)), ("ERROR", status(429, "TooManyRequests"))]]
    r, _, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 2))
    assert [c["rv"] for c in lw.watch_calls] == ["10", "11"]
    assert r.list_count == 1 and backoff.calls == 1
    assert len(errors) == 1 and is_too_many_requests(errors[0])


async def test_429_and_refused_connections_when_opening_back_off_without_relisting() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    lw.watches = [TooManyRequests(status(429, "TooManyRequests")),
                  ConnectionRefusedError("refused"),
                  aiohttp.ServerDisconnectedError(),
                  [("ADDED", obj("a", 11))]]
    r, rec, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 5))
    assert [c["rv"] for c in lw.watch_calls] == ["10", "10", "10", "10", "11"]
    assert r.list_count == 1 and backoff.calls == 3 and len(errors) == 3
    assert rec.calls[-1] == ("add", "a")


async def test_a_dropped_connection_resumes_at_once_without_relisting() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    lw.watches = [[("ADDED", obj("a", 11)), aiohttp.ClientPayloadError("cut")]]
    r, _, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 2))
    assert [c["rv"] for c in lw.watch_calls] == ["10", "11"]
    assert r.list_count == 1 and backoff.calls == 0
    assert len(errors) == 1 and isinstance(errors[0], aiohttp.ClientPayloadError)


async def test_a_connection_dropped_at_once_backs_off_first() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    lw.watches = [[ConnectionResetError("reset")]]
    r, _, backoff, errors = make(lw, clock=lambda: 0.0)
    await run_until(r, waiting_on_watch(lw, 2))
    assert r.list_count == 1 and backoff.calls == 1 and len(errors) == 1


async def test_other_in_stream_errors_end_the_round_and_relist() -> None:
    lw = FakeLW()
    lw.lists = [page(10), page(20)]
    lw.watches = [[("ADDED", obj("a", 11)), ("ERROR", status(500, "InternalError"))]]
    r, _, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 2))
    assert lw.rvs() == ["0", "11"] and backoff.calls == 1
    assert len(errors) == 1 and errors[0].code == 500  # type: ignore[attr-defined]


async def test_a_non_retriable_error_opening_the_watch_relists_after_a_backoff() -> None:
    lw = FakeLW()
    lw.lists = [page(10), page(20)]
    lw.watches = [Forbidden(status(403, "Forbidden"))]
    r, _, backoff, errors = make(lw)
    await run_until(r, waiting_on_watch(lw, 2))
    assert lw.rvs() == ["0", "10"] and backoff.calls == 1
    assert len(errors) == 1 and isinstance(errors[0], Forbidden)


async def test_a_very_short_empty_watch_is_an_error() -> None:
    lw = FakeLW()
    lw.lists = [page(10), page(20)]
    lw.watches = [[]]
    r, _, backoff, errors = make(lw, clock=lambda: 0.0)
    await run_until(r, waiting_on_watch(lw, 2))
    assert lw.rvs() == ["0", "10"] and backoff.calls == 1
    assert len(errors) == 1 and isinstance(errors[0], VeryShortWatchError)


# -- the backoff manager -----------------------------------------------------------------


def test_backoff_doubles_to_the_cap_with_jitter_and_resets_after_a_quiet_period() -> None:
    now = [0.0]
    b = ExponentialBackoffManager(clock=lambda: now[0], rand=lambda: 0.0)
    delays = []
    for _ in range(9):
        delays.append(b.backoff())
        now[0] += 1.0
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])
    now[0] += 119.0  # 2 minutes since the last delay exactly: not "more than"
    assert b.backoff() == pytest.approx(30.0)
    now[0] += 120.5
    assert b.backoff() == pytest.approx(0.8)  # the trouble is over: from the start
    assert b.backoff() == pytest.approx(1.6)
    jittered = ExponentialBackoffManager(clock=lambda: 0.0, rand=lambda: 0.999)
    assert [jittered.backoff() for _ in range(3)] == pytest.approx(
        [0.8 * 1.999, 1.6 * 1.999, 3.2 * 1.999])
    capped = ExponentialBackoffManager(clock=lambda: 0.0, rand=lambda: 0.5)
    for _ in range(10):
        capped.backoff()
    assert capped.backoff() == pytest.approx(45.0)  # within [30, 60)


def test_backoff_parameters_default_to_the_module_constants(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pykcm.cache import backoff as backoff_mod
    monkeypatch.setattr(backoff_mod, "INITIAL_BACKOFF", 0.01)
    monkeypatch.setattr(backoff_mod, "MAX_BACKOFF", 0.02)
    b = ExponentialBackoffManager(rand=lambda: 0.0)
    assert [b.backoff() for _ in range(3)] == pytest.approx([0.01, 0.02, 0.02])


async def test_the_reflector_waits_the_backoff_delays_between_rounds() -> None:
    lw = FakeLW()
    lw.lists = [err(500, "InternalError")] * 3 + [page(10)]
    now = [0.0]
    delays: list[float] = []

    class Spy(ExponentialBackoffManager):
        def backoff(self) -> float:
            delays.append(super().backoff())
            return 0.0
    r = Reflector(lw, Recorder(), use_watch_list=False,
                  backoff=Spy(clock=lambda: now[0], rand=lambda: 0.0))
    r.set_watch_error_handler(lambda *_: None)
    await run_until(r, waiting_on_watch(lw, 1))
    assert delays == pytest.approx([0.8, 1.6, 3.2])


# -- resync -------------------------------------------------------------------------------


async def test_resync_timer_calls_store_resync_when_should_resync() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a")]
    allow = [False]
    r, rec, _, errors = make(lw, resync_period=0.01, should_resync=lambda: allow[0])
    task = asyncio.create_task(r.run())
    await asyncio.sleep(0.08)
    assert ("resync",) not in rec.calls
    allow[0] = True
    await asyncio.sleep(0.08)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rec.calls.count(("resync",)) >= 3 and errors == []


async def test_resync_without_should_resync_always_resyncs_and_stops_with_the_watch() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    r, rec, _, _ = make(lw, resync_period=0.01)
    task = asyncio.create_task(r.run())
    await asyncio.sleep(0.06)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    n = rec.calls.count(("resync",))
    assert n >= 2
    await asyncio.sleep(0.03)
    assert rec.calls.count(("resync",)) == n  # the timer died with run()
    assert lw.closed == 1


async def test_a_failing_resync_ends_the_round() -> None:
    lw = FakeLW()
    lw.lists = [page(10), page(20)]
    rec = Recorder()

    def boom() -> None:
        raise RuntimeError("resync failed")
    rec.resync = boom  # type: ignore[method-assign]
    r, _, backoff, errors = make(lw, store=rec, resync_period=0.01)
    await run_until(r, waiting_on_watch(lw, 2))
    assert lw.rvs() == ["0", "10"] and backoff.calls == 1
    assert isinstance(errors[0], RuntimeError)
    assert lw.closed >= 1  # the first watch's stream was closed


async def test_no_resync_without_a_period() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    r, rec, _, _ = make(lw, should_resync=lambda: True)
    task = asyncio.create_task(r.run())
    await asyncio.sleep(0.03)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ("resync",) not in rec.calls


# -- watch-list ------------------------------------------------------------------------------


async def test_watch_list_replaces_at_the_end_bookmark_and_keeps_the_stream() -> None:
    lw = FakeLW()
    lw.watches = [[("ADDED", obj("a", 5)), ("ADDED", obj("b", 7)),
                   # the end bookmark and a live event in the same chunk
                   [bookmark(10, end=True), ("ADDED", obj("c", 11))],
                   ("MODIFIED", obj("a", 12)), HANG]]
    r, rec, _, errors = make(lw, use_watch_list=True)
    assert r.is_watch_list_used
    await run_until(r, lambda: r.last_sync_resource_version() == "12")
    assert rec.calls == [("replace", ["a", "b"], "10"), ("add", "c"), ("update", "a")]
    [w] = lw.watch_calls
    assert w == {"rv": "", "timeout": w["timeout"], "bookmarks": True, "initial": True,
                 "match": "NotOlderThan"}
    assert (r.list_count, r.watch_count, errors) == (0, 1, [])
    assert r.is_watch_list_used


async def test_watch_list_is_the_default_unless_the_gate_is_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert Reflector(FakeLW(), Recorder()).is_watch_list_used
    monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "false")
    assert not Reflector(FakeLW(), Recorder()).is_watch_list_used
    assert Reflector(FakeLW(), Recorder(), use_watch_list=True).is_watch_list_used


async def test_watch_list_refused_with_a_4xx_falls_back_for_good() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a"), page(20, "a")]
    lw.watches = [Invalid(status(422, "Invalid", "sendInitialEvents is forbidden")),
                  [("ERROR", status(410, "Expired"))]]
    r, rec, _, errors = make(lw, use_watch_list=True)
    await run_until(r, waiting_on_watch(lw, 3))
    assert not r.is_watch_list_used
    assert [c["initial"] for c in lw.watch_calls] == [True, None, None]
    assert lw.rvs() == ["0", "10"]
    assert isinstance(errors[0], Invalid) and rec.calls[0] == ("replace", ["a"], "10")


async def test_watch_list_forbidden_falls_back_for_this_round_only() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a")]
    lw.watches = [Forbidden(status(403, "Forbidden"))]
    r, _, _, errors = make(lw, use_watch_list=True)
    await run_until(r, waiting_on_watch(lw, 2))
    # RBAC says nothing about the server's support for watch-list
    assert r.is_watch_list_used and r.list_count == 1
    assert isinstance(errors[0], Forbidden)


async def test_watch_list_ending_before_the_end_bookmark_falls_back_for_good() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a", "b")]
    # a server ignoring sendInitialEvents: the state as ADDEDs, no end bookmark
    lw.watches = [[("ADDED", obj("a", 3)), ("ADDED", obj("b", 4)), bookmark(9)]]
    r, rec, _, errors = make(lw, use_watch_list=True)
    await run_until(r, waiting_on_watch(lw, 2))
    assert not r.is_watch_list_used and r.list_count == 1
    assert isinstance(errors[0], WatchListIncompleteError)
    assert rec.calls == [("replace", ["a", "b"], "10")]  # nothing from the failed stream
    assert lw.watch_calls[1]["rv"] == "10" and lw.watch_calls[1]["initial"] is None


async def test_watch_list_broken_mid_way_falls_back_for_this_round_only() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "a")]
    lw.watches = [[("ADDED", obj("a", 3)), aiohttp.ClientPayloadError("cut")],
                  [("ERROR", status(410, "Expired"))],
                  [bookmark(30, end=True), HANG]]
    r, rec, _, _ = make(lw, use_watch_list=True)
    await run_until(r, lambda: r.last_sync_resource_version() == "30")
    assert r.is_watch_list_used and r.list_count == 1
    assert [(c["rv"], c["initial"]) for c in lw.watch_calls] == [
        ("", True), ("10", None), ("10", True)]
    assert rec.calls == [("replace", ["a"], "10"), ("replace", [], "30")]


async def test_watch_list_410_restarts_from_the_newest_state() -> None:
    lw = FakeLW()
    lw.watches = [[bookmark(10, end=True), ("ERROR", status(410, "Expired"))],
                  [("ERROR", status(410, "Expired"))],
                  [("ADDED", obj("a", 21)), bookmark(25, end=True), HANG]]
    r, rec, backoff, errors = make(lw, use_watch_list=True)
    await run_until(r, lambda: r.last_sync_resource_version() == "25")
    assert [(c["rv"], c["initial"]) for c in lw.watch_calls] == [
        ("", True), ("10", True), ("", True)]
    assert rec.calls == [("replace", [], "10"), ("replace", ["a"], "25")]
    assert r.list_count == 0 and len(errors) == 2 and backoff.calls == 1


async def test_watch_list_429_backs_off_and_retries_the_watch_list() -> None:
    lw = FakeLW()
    lw.watches = [TooManyRequests(status(429, "TooManyRequests")),
                  [bookmark(10, end=True), HANG]]
    r, _, backoff, _ = make(lw, use_watch_list=True)
    await run_until(r, lambda: r.last_sync_resource_version() == "10")
    assert [c["initial"] for c in lw.watch_calls] == [True, True]
    assert backoff.calls == 1 and r.list_count == 0 and r.is_watch_list_used


# -- the watch error handler, store errors ------------------------------------------------------


async def test_the_default_handler_logs(caplog: pytest.LogCaptureFixture) -> None:
    lw = FakeLW()
    lw.lists = [err(403, "Forbidden", "configmaps is forbidden"), page(10)]
    r = Reflector(lw, Recorder(), name="cms", use_watch_list=False, backoff=ZeroBackoff())
    with caplog.at_level(logging.DEBUG, logger="pykcm.cache.reflector"):
        await run_until(r, waiting_on_watch(lw, 1))
    assert any(rec.levelno == logging.ERROR and "cms" in rec.getMessage() and
               "forbidden" in rec.getMessage() for rec in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="pykcm.cache.reflector"):
        default_watch_error_handler(r, expired())
    assert [rec.levelno for rec in caplog.records] == [logging.DEBUG]


async def test_a_failing_handler_does_not_stop_the_reflector() -> None:
    lw = FakeLW()
    lw.lists = [err(500, "InternalError"), page(10)]
    r, _, _, _ = make(lw)

    def bad(_r: Reflector, _e: BaseException) -> None:
        raise RuntimeError("handler bug")
    r.set_watch_error_handler(bad)
    await run_until(r, waiting_on_watch(lw, 1))


async def test_store_errors_are_logged_and_the_stream_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    lw.watches = [[("ADDED", obj("bad", 11)), ("ADDED", obj("good", 12)),
                   ("ADDED", {"metadata": {"name": "norv"}}), ("WHAT", obj("x", 13)), HANG]]
    r, rec, _, errors = make(lw)
    rec.fail_on.add("bad")
    await run_until(r, lambda: "good" in rec.state)
    assert r.last_sync_resource_version() == "12" and errors == []
    assert sum(rec.levelno == logging.ERROR for rec in caplog.records) == 3


async def test_a_failing_replace_is_a_round_error_and_run_goes_on() -> None:
    lw = FakeLW()
    lw.lists = [page(10, "bad"), page(11, "ok")]
    r, rec, backoff, errors = make(lw)
    rec.fail_on.add("bad")
    await run_until(r, waiting_on_watch(lw, 1))
    assert isinstance(errors[0], ValueError) and backoff.calls == 1
    assert lw.watch_calls[0]["rv"] == "11"


async def test_a_delta_fifo_is_a_reflector_store_and_update_resource_version_is_called(
) -> None:
    lw = FakeLW()
    fifo = DeltaFIFO()
    seen: list[str] = []

    class Tracking(DeltaFIFO):
        def update_resource_version(self, rv: str) -> None:
            seen.append(rv)
    tracking = Tracking()
    for store in (fifo, tracking):
        lw.lists = [page(10, "a")]
        lw.watches = [[[("ADDED", obj("b", 11)), bookmark(15)], HANG]]
        r, _, _, _ = make(lw, store=store)
        await run_until(r, lambda r=r: r.last_sync_resource_version() == "15")  # type: ignore[misc]
        assert sorted(store.list_keys()) == ["ns/a", "ns/b"]
    assert seen == ["10", "15"]  # once per batch: the last rv of the batch


async def test_cancelling_run_closes_the_open_stream() -> None:
    lw = FakeLW()
    lw.lists = [page(10)]
    r, _, _, _ = make(lw)
    await run_until(r, waiting_on_watch(lw, 1))
    assert lw.closed == 1


async def test_min_watch_timeout_is_read_at_each_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reflector_mod, "DEFAULT_MIN_WATCH_TIMEOUT", 2.0)
    lw = FakeLW()
    lw.lists = [page(10)]
    r, _, _, _ = make(lw)
    await run_until(r, waiting_on_watch(lw, 1))
    assert lw.watch_calls[0]["timeout"] in (2, 3)


def test_expired_and_too_large_classification() -> None:
    assert reflector_mod.is_expired_error(Expired(status(410, "Gone")))
    assert reflector_mod.is_expired_error(expired())
    assert reflector_mod.is_too_large_resource_version_error(too_large())
    old = err(504, "Timeout", "Too large resource version: 99, current: 12")
    assert reflector_mod.is_too_large_resource_version_error(old)
    assert not reflector_mod.is_too_large_resource_version_error(err(504, "Timeout", "slow"))
    assert reflector_mod.is_watch_error_retriable(ConnectionRefusedError())
    assert reflector_mod.is_watch_error_retriable(err(429, "TooManyRequests"))
    assert not reflector_mod.is_watch_error_retriable(expired())
