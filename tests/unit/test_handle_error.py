"""pykcm.controller.handle_error: failed syncs at ERROR, the traceback once per burst."""

from __future__ import annotations

import logging

import pytest

from pykcm.controller import Controller
from pykcm.controller.handle_error import ErrorReporter


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _fail(msg: str) -> None:
    raise RuntimeError(msg)


def _raised(msg: str) -> RuntimeError:
    try:
        _fail(msg)
    except RuntimeError as e:
        return e
    raise AssertionError("unreachable")


def _other() -> ValueError:
    try:
        int("x")
    except ValueError as e:
        return e
    raise AssertionError("unreachable")


def test_traceback_once_per_burst_of_the_same_failure(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    rep = ErrorReporter(logging.getLogger("test.handle_error"), burst_quiet=60, clock=clock)
    with caplog.at_level(logging.ERROR, "test.handle_error"):
        rep.report("c", "ns/a", _raised("boom"), 0)
        clock.now += 1
        rep.report("c", "ns/a", _raised("boom"), 1)
        rep.report("c", "ns/b", _raised("boom"), 0)     # same failure site, other key
        rep.report("c", "ns/a", _other(), 2)              # another failure: its own burst
        clock.now += 61                                   # quiet long enough: a new burst
        rep.report("c", "ns/a", _raised("boom"), 3)
    recs = caplog.records
    assert [r.levelno for r in recs] == [logging.ERROR] * 5
    assert [r.exc_info is not None for r in recs] == [True, False, False, True, True]
    assert "syncing ns/a (retry 1)" in recs[1].getMessage()
    assert "traceback logged earlier" in recs[1].getMessage()
    assert "_fail" in caplog.text                         # the raising frame is in the log
    assert recs[0].controller == "c" and recs[2].key == "ns/b"  # type: ignore[attr-defined]


def test_pause_paces_reports_as_client_gos_min_period() -> None:
    clock = _Clock()
    rep = ErrorReporter(logging.getLogger("test.handle_error"), min_period=0.001, clock=clock)
    assert rep.report("c", "k", _raised("x"), 0) == 0.0
    clock.now += 0.0004
    assert rep.report("c", "k", _raised("x"), 1) == pytest.approx(0.0006)
    clock.now += 0.002
    assert rep.report("c", "k", _raised("x"), 2) == 0.0


async def test_controller_logs_a_failing_reconcile_at_error_with_its_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def reconcile(key: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            _fail(f"cannot sync {key}")

    ctl = Controller("failing", reconcile)
    ctl.enqueue_key("ns/x")
    with caplog.at_level(logging.WARNING, "pykcm.controller"):
        assert await ctl.process_next_work_item()
        await ctl.process_next_work_item()               # the retry succeeds
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "failing: error syncing ns/x (retry 0), requeuing: cannot sync ns/x" in caplog.text
    assert calls == ["ns/x", "ns/x"]
