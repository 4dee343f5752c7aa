"""metav1.Time and metav1.MicroTime on the wire: RFC 3339 in UTC, seconds or microseconds.

Controllers stamp conditions, events and statuses with these, and read back
the server's stamps (creationTimestamp, lastTransitionTime, finishedAt ...).
One formatter and one parser for every layer above.
"""

from __future__ import annotations

import datetime as _dt
from functools import lru_cache

__all__ = ["format_micro_time", "format_time", "parse_time"]


def format_time(t: float) -> str:
    """``t`` (epoch seconds) as metav1.Time serialises it: ``2026-11-29T12:00:00Z``."""
    return _format_seconds(int(t))


@lru_cache(maxsize=256)
def _format_seconds(t: int) -> str:
    # Status writes stamp the same few seconds over and over: format each once.
    return _dt.datetime.fromtimestamp(t, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(t: float) -> str:
    """``t`` as metav1.MicroTime (Lease renewTime, events.k8s.io eventTime)."""
    return _dt.datetime.fromtimestamp(t, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str | None) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None for None, "" or a malformed value."""
    if not value:
        return None
    try:
        return _dt.datetime.fromisoformat(value).timestamp()  # 3.11+ reads "Z"
    except ValueError:
        return None
