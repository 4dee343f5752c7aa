"""What a simulated container writes to its log, and the kubelet's log options over it.

Role: the content behind ``kubectl logs``. A simulated container has no
process, so its output is scripted and derived, never stored: a run of a
container (from its ``startedAt`` to its ``finishedAt``, or now while it
runs) writes

- the lines of the ``sim.pykcm.io/logs`` annotation, when it starts;
- with ``sim.pykcm.io/log-interval-seconds: S``, a line ``tick N`` every S
  seconds while it runs (something for ``kubectl logs -f`` to follow).

The same run therefore always shows the same log, ``--previous`` is the run
in ``lastState.terminated``, and a restarted container starts a fresh log,
as the kubelet's per-container log files do.

Options as the kubelet applies them (PodLogOptions): ``timestamps`` (each
line prefixed by its RFC 3339 nano time and a space), ``tailLines``,
``sinceSeconds``/``sinceTime``, ``limitBytes``; ``follow`` is the server's
(it keeps asking :func:`run_lines` for later lines).

Deviation: every container of the pod writes the same script (the
annotation is the pod's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

__all__ = ["ANNOTATION_LOGS", "ANNOTATION_LOG_INTERVAL", "LogLine", "format_line",
           "format_nano", "run_lines"]

ANNOTATION_LOGS: Final = "sim.pykcm.io/logs"
ANNOTATION_LOG_INTERVAL: Final = "sim.pykcm.io/log-interval-seconds"
_MAX_TICKS: Final = 100_000


@dataclass(frozen=True, slots=True)
class LogLine:
    at: float
    text: str


def _interval(ann: Mapping[str, Any]) -> float | None:
    try:
        v = float(ann.get(ANNOTATION_LOG_INTERVAL, ""))
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def run_lines(pod: Mapping[str, Any], started: float, until: float) -> list[LogLine]:
    """The lines a run that started at ``started`` has written by ``until``."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    text = str(ann.get(ANNOTATION_LOGS, ""))
    out = [LogLine(started, line) for line in text.splitlines()] if text else []
    every = _interval(ann)
    if every is not None:
        n = 1
        while started + n * every <= until and n <= _MAX_TICKS:
            out.append(LogLine(started + n * every, f"tick {n}"))
            n += 1
    return out


def next_line_at(pod: Mapping[str, Any], started: float, after: float) -> float | None:
    """When the run writes its next line after ``after`` (None: never)."""
    every = _interval((pod.get("metadata") or {}).get("annotations") or {})
    if every is None:
        return None
    n = math.floor((after - started) / every) + 1
    return started + max(1, n) * every


def format_nano(t: float) -> str:
    """RFC 3339 with nanoseconds, as the container runtime stamps log lines."""
    whole = math.floor(t)
    nanos = round((t - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, 0
    return datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"


def format_line(line: LogLine, timestamps: bool) -> bytes:
    prefix = format_nano(line.at) + " " if timestamps else ""
    return (prefix + line.text + "\n").encode()
