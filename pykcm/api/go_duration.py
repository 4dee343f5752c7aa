"""Go durations: ``time.ParseDuration``, the one parser of every layer.

Kubernetes writes durations as Go does ("1h2m3.5s", "300ms", "-1.5h", "0"): in
metav1.Duration fields, in flags (``--node-monitor-grace-period=40s``), in a
CronJob's ``@every 1h`` schedule, in protobuf's Duration. This module reads them
as Go's ``time.ParseDuration`` does, to integer nanoseconds, and fails with Go's
error texts (``time: invalid duration "x"``, ``time: missing unit in duration "1"``,
``time: unknown unit "d" in duration "1d"``), which the API server and the
controller manager pass on to clients as upstream does.

Data flow: a string in, an int of nanoseconds out (or :class:`GoDurationError`);
callers convert to seconds where they need them (:func:`parse_go_duration_seconds`).
"""

from __future__ import annotations

from typing import Final

__all__ = ["GoDurationError", "go_time_quote", "parse_go_duration",
           "parse_go_duration_seconds"]

_UNITS: Final = {
    "ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
    "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000,
}
_MAX: Final = 1 << 63


class GoDurationError(ValueError):
    """A string ``time.ParseDuration`` refuses; ``str()`` is Go's error text."""


def go_time_quote(s: str) -> str:
    """The time package's quote(): like strconv.Quote for printable ASCII, every byte of
    any other character as ``\\xNN``."""
    out = ['"']
    for ch in s:
        if ord(ch) >= 0x80 or ch < " ":
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            if ch in ('"', "\\"):
                out.append("\\")
            out.append(ch)
    out.append('"')
    return "".join(out)


def _invalid(orig: str) -> GoDurationError:
    return GoDurationError("time: invalid duration " + go_time_quote(orig))


def parse_go_duration(text: str) -> int:
    """``time.ParseDuration``: nanoseconds; raises :class:`GoDurationError` (Go's text)."""
    orig = text
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise _invalid(orig)
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise _invalid(orig)
        # the integer part (Go's leadingInt: overflow is an invalid duration)
        i = 0
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        whole_digits, s = s[:i], s[i:]
        whole = int(whole_digits) if whole_digits else 0
        if whole > _MAX:
            raise _invalid(orig)
        # the fraction (Go's leadingFraction: digits past int64 precision are dropped)
        frac, scale, post = 0, 1, False
        if s and s[0] == ".":
            s = s[1:]
            j = 0
            overflow = False
            while j < len(s) and "0" <= s[j] <= "9":
                if not overflow:
                    y = frac * 10 + int(s[j])
                    if frac > (_MAX - 1) // 10 or y > _MAX:
                        overflow = True
                    else:
                        frac = y
                        scale *= 10
                j += 1
            post = j > 0
            s = s[j:]
        if not whole_digits and not post:
            raise _invalid(orig)
        k = 0
        while k < len(s) and not (s[k] == "." or "0" <= s[k] <= "9"):
            k += 1
        if k == 0:
            raise GoDurationError("time: missing unit in duration " + go_time_quote(orig))
        unit_text, s = s[:k], s[k:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise GoDurationError(f"time: unknown unit {go_time_quote(unit_text)} in duration "
                                  + go_time_quote(orig))
        if whole > _MAX // unit:
            raise _invalid(orig)
        v = whole * unit
        if frac > 0:
            # Go: v += uint64(float64(f) * (float64(unit) / scale))
            v += int(float(frac) * (float(unit) / float(scale)))
            if v > _MAX:
                raise _invalid(orig)
        total += v
        if total > _MAX:
            raise _invalid(orig)
    if neg:
        return -total
    if total > _MAX - 1:
        raise _invalid(orig)
    return total


def parse_go_duration_seconds(text: str) -> float:
    """:func:`parse_go_duration` in seconds."""
    return parse_go_duration(text) / 1_000_000_000
