"""Reporting a failed reconcile: client-go's ``utilruntime.HandleError`` for pykcm.

Role: every error a controller's sync returns is logged at ERROR (shown at the
command's default level), as kube-controller-manager logs each failed sync
(``"Unhandled Error" err="sync \\"ns/name\\" failed ..."``); the caller's worker is
then paced as client-go's ``rudimentaryErrorBackoff`` paces it (at least 1 ms between
two reports, process-wide), so an error loop cannot flood the log faster than that.

Data flow::

    Controller._sync ── exception ──► report(controller, key, exc, retries)
                                        │ signature = type + raising frame
                                        │ first of its burst? ──► log.error + traceback
                                        │ else               ──► log.error, one line
                                        ▼
                                     pause (s) the worker awaits before requeuing

Deliberate deviation: Go errors carry no stack, so upstream has nothing to print but the
message. A Python exception has a traceback, which is what a controller author needs;
printing it for each retry of the same failure would bury the log (a key retries up to
every 1000 s, and an API server outage fails every key at once), so it is printed once
per *failure burst*: the first failure of a signature (exception type and the frame that
raised it) after ``burst_quiet`` seconds without one. Later reports of the same burst are
one line naming the retry count.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from pykcm.api.clock import REAL_CLOCK

__all__ = ["BURST_QUIET", "MIN_PERIOD", "ErrorReporter", "reporter"]

MIN_PERIOD: Final = 0.001
"""client-go's global minimum period between two handled errors (1 ms)."""
BURST_QUIET: Final = 60.0
"""Seconds without a failure of a signature after which its next failure starts a new
burst (and shows its traceback again)."""


def _signature(exc: BaseException) -> tuple[str, str, int]:
    """What makes two failures "the same": the exception type and where it was raised."""
    # The innermost frame, walked to by hand: traceback.extract_tb would also read every
    # frame's source line (linecache), which made each failed sync cost milliseconds.
    tb = exc.__traceback__
    if tb is None:
        return (type(exc).__qualname__, "", 0)
    while tb.tb_next is not None:
        tb = tb.tb_next
    return (type(exc).__qualname__, tb.tb_frame.f_code.co_filename, tb.tb_lineno or 0)


class ErrorReporter:
    """Logs failed syncs; one instance per process (:data:`reporter`) as client-go's is."""

    def __init__(self, logger: logging.Logger, *, min_period: float = MIN_PERIOD,
                 burst_quiet: float = BURST_QUIET,
                 clock: Callable[[], float] = REAL_CLOCK.monotonic) -> None:
        self._log = logger
        self._min_period = min_period
        self._burst_quiet = burst_quiet
        self._clock = clock
        self._last_report = float("-inf")
        self._last_seen: dict[tuple[str, str, int], float] = {}

    def report(self, controller: str, key: str, exc: BaseException, retries: int) -> float:
        """Log ``exc`` from syncing ``key``; return the seconds the worker should pause."""
        now = self._clock()
        sig = _signature(exc)
        seen = self._last_seen.get(sig)
        first = seen is None or now - seen >= self._burst_quiet
        self._last_seen[sig] = now
        if len(self._last_seen) > 1024:  # bounded: forget the signatures of past bursts
            cutoff = now - self._burst_quiet
            self._last_seen = {s: t for s, t in self._last_seen.items() if t >= cutoff}
        extra = {"controller": controller, "key": key}
        if first:
            self._log.error("%s: error syncing %s (retry %d), requeuing: %s", controller, key,
                            retries, exc, exc_info=exc, extra=extra)
        else:
            self._log.error("%s: error syncing %s (retry %d), requeuing: %s "
                            "(traceback logged earlier for this %s)", controller, key,
                            retries, exc, type(exc).__qualname__, extra=extra)
        pause = self._min_period - (now - self._last_report)
        self._last_report = now
        return max(0.0, pause)


reporter = ErrorReporter(logging.getLogger("pykcm.controller"))
"""The process's reporter, used by every :class:`~pykcm.controller.Controller`."""
