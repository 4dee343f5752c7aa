"""metav1.Time and metav1.MicroTime on the wire: RFC 3339, in seconds or microseconds.

Controllers stamp conditions, events and statuses with these, and read back
the server's stamps (creationTimestamp, lastTransitionTime, finishedAt ...);
the protobuf decoder writes the JSON form of the times it decodes; the
leader elector writes Lease times. One formatter per Go layout and one parser
for every layer above:

- :func:`format_time`: metav1.Time (``t.UTC().Format(time.RFC3339)``, seconds)
  of epoch seconds; :func:`format_unix`: the same, any year Go can print
  (integer arithmetic, no datetime range), with microseconds for MicroTime.
- :func:`format_micro_time`: metav1.MicroTime (RFC3339Micro, UTC).
- :func:`format_rfc3339`: ``time.RFC3339`` keeping the time's own offset (the
  CronJob scheduled-timestamp annotation is in the CronJob's time zone).
- :func:`format_rfc3339_nano`: ``time.RFC3339Nano`` in UTC, trailing zeros of
  the fraction dropped (the endpoints last-change-trigger-time annotation).
- :func:`parse_time` (epoch seconds) and :func:`parse_datetime` (an aware UTC
  datetime): None for an absent or malformed value; a value without an
  offset is read as UTC.
"""

from __future__ import annotations

import datetime as _dt
from functools import lru_cache
from typing import Any

__all__ = [
    "format_micro_time",
    "format_rfc3339",
    "format_rfc3339_nano",
    "format_time",
    "format_unix",
    "parse_datetime",
    "parse_time",
]


def format_time(t: float) -> str:
    """``t`` (epoch seconds) as metav1.Time serialises it: ``2026-11-29T12:00:00Z``."""
    return _format_seconds(int(t))


@lru_cache(maxsize=256)
def _format_seconds(t: int) -> str:
    # Status writes stamp the same few seconds over and over: format each once.
    return format_unix(t)


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def format_unix(seconds: int, micros: int | None = None) -> str:
    """Go's ``t.UTC().Format(time.RFC3339)`` (or RFC3339Micro with ``micros``) of the
    Unix time ``seconds``: any year, including the zero time and negative years."""
    days, rem = divmod(seconds, 86400)
    year, month, day = _civil_from_days(days)
    hh, rem = divmod(rem, 3600)
    mm, ss = divmod(rem, 60)
    ys = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    frac = "" if micros is None else f".{micros:06d}"
    return f"{ys}-{month:02d}-{day:02d}T{hh:02d}:{mm:02d}:{ss:02d}{frac}Z"


def format_micro_time(t: float | _dt.datetime) -> str:
    """``t`` (epoch seconds, or a datetime: naive is UTC) as metav1.MicroTime (Lease
    renewTime, events.k8s.io eventTime): ``2026-11-29T12:00:00.000012Z``."""
    if isinstance(t, _dt.datetime):
        d = t if t.tzinfo is not None else t.replace(tzinfo=_dt.UTC)
    else:
        d = _dt.datetime.fromtimestamp(t, tz=_dt.UTC)
    return d.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_rfc3339(t: _dt.datetime) -> str:
    """Go's ``time.RFC3339`` layout of ``t`` in its own zone: ``Z`` for a zero offset,
    ``+hh:mm`` otherwise."""
    off = t.utcoffset() or _dt.timedelta(0)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if off == _dt.timedelta(0):
        return base + "Z"
    minutes = int(off.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    minutes = abs(minutes)
    return f"{base}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def format_rfc3339_nano(t: _dt.datetime) -> str:
    """Go's ``t.UTC().Format(time.RFC3339Nano)``: fractional seconds without trailing zeros."""
    t = t.astimezone(_dt.UTC)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        base += "." + f"{t.microsecond:06d}".rstrip("0")
    return base + "Z"


def parse_datetime(value: Any) -> _dt.datetime | None:
    """An RFC 3339 timestamp as an aware datetime in UTC; None for None, "", a non-string
    or a malformed value."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = _dt.datetime.fromisoformat(value)  # 3.11+ reads "Z"
    except ValueError:
        return None
    return t.replace(tzinfo=_dt.UTC) if t.tzinfo is None else t.astimezone(_dt.UTC)


def parse_time(value: str | None) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None for None, "" or a malformed value."""
    t = parse_datetime(value)
    return None if t is None else t.timestamp()
