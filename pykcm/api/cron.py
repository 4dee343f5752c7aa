"""Cron schedules: robfig/cron's standard parser and next-time computation, the one
parser of every layer (the CronJob controller's schedules, the API server's CronJob
validation).

A Python rendering of what Kubernetes gets from ``github.com/robfig/cron/v3``
(``cron.ParseStandard`` and ``Schedule.Next``), with the same grammar, error messages
and time arithmetic:

* five fields ``minute hour day-of-month month day-of-week``, each a
  comma-separated list of ``*`` / ``?``, ``N``, ``N-M``, with an optional
  ``/step`` (``N/step`` means ``N-max/step``); month and weekday names
  (``jan``, ``mon``...) in any case; weekdays 0-6 from Sunday;
* descriptors ``@yearly`` / ``@annually``, ``@monthly``, ``@weekly``,
  ``@daily`` / ``@midnight``, ``@hourly`` and ``@every <duration>`` (the duration
  read by Go's ``time.ParseDuration``, ``go_duration.py``, with its error texts);
* an optional ``TZ=<zone>`` or ``CRON_TZ=<zone>`` prefix (the controller
  adds ``TZ=`` from ``spec.timeZone``), the zone loaded as Go's ``time.LoadLocation``
  loads it; without it a schedule runs in the zone of the times it is given, which the
  controller makes the process's local zone, as kube-controller-manager does. A prefix
  with nothing after it makes robfig's parser slice out of range: kube-apiserver's
  ``ParseCronScheduleWithPanicRecovery`` answers ``invalid schedule format: runtime
  error: slice bounds out of range [:-1]``, and so does this parser.

Day matching follows cron: when both day-of-month and day-of-week are
restricted, a day matching either runs; when one of them is ``*`` both must
match. :meth:`SpecSchedule.next` walks month, day, hour, minute, second
like robfig's ``Next`` - hours and smaller steps in absolute time, so a
wall-clock time skipped by a daylight-saving jump does not run that day and
one in the repeated hour runs twice; days and months in wall time. It gives up (returns None, robfig's zero time) after five years
without a match, e.g. for February 30th.

Data flow: ``parse_standard(spec)`` → a :class:`Schedule` (bit sets per
field, a zone) → ``schedule.next(datetime)`` → the first activation
strictly after it, an aware datetime in the input's zone.
"""

from __future__ import annotations

import os
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Final, Protocol

from pykcm.api.go_duration import GoDurationError, parse_go_duration_seconds

__all__ = [
    "ConstantDelaySchedule",
    "CronParseError",
    "Schedule",
    "SpecSchedule",
    "load_location",
    "local_zone",
    "parse_standard",
]


class CronParseError(ValueError):
    """A schedule that does not parse; the message is robfig/cron's."""


class Schedule(Protocol):
    """A parsed schedule: ``next(t)`` is the first activation strictly after ``t``."""

    def next(self, t: datetime) -> datetime | None: ...


# Bit 63 marks a field written as "*" or "?" (robfig's starBit): it changes
# how day-of-month and day-of-week combine.
_STAR_BIT: Final = 1 << 63


@dataclass(frozen=True, slots=True)
class _Bounds:
    lo: int
    hi: int
    names: dict[str, int] | None = None


_MONTHS: Final = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DOWS: Final = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_SECONDS: Final = _Bounds(0, 59)
_MINUTES: Final = _Bounds(0, 59)
_HOURS: Final = _Bounds(0, 23)
_DOM: Final = _Bounds(1, 31)
_MONTH: Final = _Bounds(1, 12, _MONTHS)
_DOW: Final = _Bounds(0, 6, _DOWS)

_DESCRIPTORS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_GO_INT: Final = re.compile(r"[+-]?[0-9]+")


def _go_quote(s: str) -> str:
    """Go's %q of an ASCII string (enough for the error messages here)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _must_parse_int(expr: str) -> int:
    if not _GO_INT.fullmatch(expr):
        raise CronParseError(f"failed to parse int from {expr}: strconv.Atoi: parsing "
                             f"{_go_quote(expr)}: invalid syntax")
    n = int(expr)
    if n < 0:
        raise CronParseError(f"negative number ({n}) not allowed: {expr}")
    return n


def _parse_int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _get_range(expr: str, r: _Bounds) -> int:
    """The bits of one ``a-b/step`` term (robfig getRange)."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single_digit = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = r.lo, r.hi, _STAR_BIT
    else:
        start = _parse_int_or_name(low_and_high[0], r.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], r.names)
        else:
            raise CronParseError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        # "N/step" means "N-max/step".
        if single_digit:
            end = r.hi
        if step > 1:
            extra = 0
    else:
        raise CronParseError(f"too many slashes: {expr}")
    if start < r.lo:
        raise CronParseError(f"beginning of range ({start}) below minimum ({r.lo}): {expr}")
    if end > r.hi:
        raise CronParseError(f"end of range ({end}) above maximum ({r.hi}): {expr}")
    if start > end:
        raise CronParseError(f"beginning of range ({start}) beyond end of range ({end}): "
                             f"{expr}")
    if step == 0:
        raise CronParseError(f"step of range should be a positive number: {expr}")
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits | extra


def _get_field(field: str, r: _Bounds) -> int:
    bits = 0
    for expr in field.split(","):
        bits |= _get_range(expr, r)
    return bits


@lru_cache(maxsize=1)
def local_zone() -> tzinfo:
    """The process's local time zone as a zoneinfo zone (``$TZ``, /etc/localtime, else UTC).

    A zoneinfo zone rather than a fixed offset, so that schedules without a
    time zone still follow the local daylight-saving rules.
    """
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    try:
        with open("/etc/localtime", "rb") as f:
            return zoneinfo.ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        return UTC


def load_location(name: str) -> tzinfo:
    """Go's time.LoadLocation: "" and "UTC" are UTC, "Local" the local zone, else IANA.

    Raises :class:`CronParseError` (``unknown time zone <name>``) for an unknown name.
    """
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return local_zone()
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronParseError(f"unknown time zone {name}") from None


# -- Go time arithmetic ------------------------------------------------------------------


def _offset_at(instant: int, loc: tzinfo) -> int:
    off = datetime.fromtimestamp(instant, tz=loc).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _go_date(year: int, month: int, day: int, hour: int, minute: int, second: int,
             loc: tzinfo) -> datetime:
    """Go's time.Date: out-of-range fields normalise (month 13 is next January, day 32
    next month...), and a wall time in a daylight-saving gap or overlap resolves the way
    Go resolves it (the offset in force at the wall time read as UTC, corrected once)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    base = datetime(year, month, 1, tzinfo=UTC) + timedelta(
        days=day - 1, hours=hour, minutes=minute, seconds=second)
    unix = int(base.timestamp())
    offset = _offset_at(unix, loc)
    if offset != 0:
        utc = unix - offset
        corrected = _offset_at(utc, loc)
        if corrected != offset:
            offset = corrected
    return datetime.fromtimestamp(unix - offset, tz=loc)


def _add(t: datetime, seconds: int) -> datetime:
    """Go's t.Add: absolute-time addition, the result shown in t's zone."""
    assert t.tzinfo is not None
    return datetime.fromtimestamp(int(t.timestamp()) + seconds, tz=t.tzinfo)


def _weekday(t: datetime) -> int:
    """Go's Weekday (Sunday is 0)."""
    return (t.weekday() + 1) % 7


@dataclass(frozen=True, slots=True)
class SpecSchedule:
    """A cron field schedule: one bit set per field (robfig SpecSchedule)."""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    location: tzinfo | None
    """The zone of the schedule; None means the zone of the time given to :meth:`next`."""

    def _day_matches(self, t: datetime) -> bool:
        dom_match = (1 << t.day) & self.dom > 0
        dow_match = (1 << _weekday(t)) & self.dow > 0
        if self.dom & _STAR_BIT or self.dow & _STAR_BIT:
            return dom_match and dow_match
        return dom_match or dow_match

    def next(self, t: datetime) -> datetime | None:
        """The first activation strictly after ``t`` (an aware datetime), in ``t``'s zone.

        None when nothing matches within five years.
        """
        if t.tzinfo is None:
            raise ValueError("SpecSchedule.next needs an aware datetime")
        orig = t.tzinfo
        loc = self.location if self.location is not None else orig
        t = datetime.fromtimestamp(int(t.timestamp()), tz=loc)
        # Start at the upcoming second (sub-second parts dropped).
        t = _add(t, 1)
        added = False
        year_limit = t.year + 5
        while True:  # robfig's WRAP label
            if t.year > year_limit:
                return None
            wrapped = False
            while not (1 << t.month) & self.month:
                if not added:
                    added = True
                    t = _go_date(t.year, t.month, 1, 0, 0, 0, loc)
                t = _go_date(t.year, t.month + 1, t.day, t.hour, t.minute, t.second, loc)
                if t.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(t):
                if not added:
                    added = True
                    t = _go_date(t.year, t.month, t.day, 0, 0, 0, loc)
                t = _go_date(t.year, t.month, t.day + 1, t.hour, t.minute, t.second, loc)
                # Midnight may not exist on a daylight-saving day: get back to it.
                if t.hour != 0:
                    if t.hour > 12:
                        t = _add(t, (24 - t.hour) * 3600)
                    else:
                        t = _add(t, -t.hour * 3600)
                if t.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.hour) & self.hour:
                if not added:
                    added = True
                    t = _go_date(t.year, t.month, t.day, t.hour, 0, 0, loc)
                t = _add(t, 3600)
                if t.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.minute) & self.minute:
                if not added:
                    added = True
                    t = _add(t, -(t.second))
                t = _add(t, 60)
                if t.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.second) & self.second:
                if not added:
                    added = True
                t = _add(t, 1)
                if t.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return t.astimezone(orig)


@dataclass(frozen=True, slots=True)
class ConstantDelaySchedule:
    """``@every <duration>``: a fixed period, whole seconds, at least one (robfig Every)."""

    delay: int

    def next(self, t: datetime) -> datetime | None:
        """``t`` plus the delay, sub-second parts dropped."""
        if t.tzinfo is None:
            raise ValueError("ConstantDelaySchedule.next needs an aware datetime")
        return datetime.fromtimestamp(int(t.timestamp()) + self.delay, tz=t.tzinfo)


def _parse_descriptor(descriptor: str, loc: tzinfo | None) -> Schedule:
    if descriptor in _DESCRIPTORS:
        return _parse_fields(_DESCRIPTORS[descriptor].split(), loc)
    every = "@every "
    if descriptor.startswith(every):
        try:
            seconds = parse_go_duration_seconds(descriptor[len(every):])
        except GoDurationError as exc:
            raise CronParseError(f"failed to parse duration {descriptor}: {exc}") from None
        # robfig's Every: under a second becomes a second; sub-seconds are dropped.
        return ConstantDelaySchedule(max(1, int(seconds)))
    raise CronParseError(f"unrecognized descriptor: {descriptor}")


def _parse_fields(fields: list[str], loc: tzinfo | None) -> SpecSchedule:
    minute = _get_field(fields[0], _MINUTES)
    hour = _get_field(fields[1], _HOURS)
    dom = _get_field(fields[2], _DOM)
    month = _get_field(fields[3], _MONTH)
    dow = _get_field(fields[4], _DOW)
    # The standard parser has no seconds field: activations at second 0.
    return SpecSchedule(second=1, minute=minute, hour=hour, dom=dom, month=month, dow=dow,
                        location=loc)


def parse_standard(spec: str) -> Schedule:
    """Parse a standard 5-field cron spec or descriptor (robfig cron.ParseStandard).

    Raises :class:`CronParseError` with robfig's message for invalid input.
    Without a ``TZ=`` / ``CRON_TZ=`` prefix the schedule runs in the zone of
    the times given to ``next`` (the controller passes local times).
    """
    if not spec:
        raise CronParseError("empty spec string")
    # No zone: robfig's time.Local, which Next replaces by the zone of the time
    # it is given (the controller gives local times).
    loc: tzinfo | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        i = spec.find(" ")
        eq = spec.find("=")
        if i < 0:
            # robfig slices spec[eq+1:-1] and panics; kube's recovery wraps the panic
            raise CronParseError("invalid schedule format: runtime error: slice bounds out "
                                 "of range [:-1]")
        name = spec[eq + 1:i]
        try:
            loc = load_location(name)
        except CronParseError as exc:
            raise CronParseError(f"provided bad location {name}: {exc}") from None
        spec = spec[i:].strip()
    if spec.startswith("@"):
        return _parse_descriptor(spec, loc)
    fields = spec.split()
    if len(fields) != 5:
        raise CronParseError(f"expected exactly 5 fields, found {len(fields)}: "
                             f"[{' '.join(fields)}]")
    return _parse_fields(fields, loc)
