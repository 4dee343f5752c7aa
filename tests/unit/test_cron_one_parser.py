"""One cron parser (pykcm/api/cron.py) for both of its callers: properties that it agrees
with what each needed before the two parsers became one.

- The API server's CronJob validation: the schedule's error message. The oracle is that
  validation's former parser, kept here verbatim (``_validation_oracle``): on 5-field
  specs and descriptors without a ``TZ=`` prefix, the merged parser accepts and refuses
  the same schedules with the same messages. (With a prefix the merged parser also
  loads the zone, as kube-apiserver does and the former check did not.)
- The CronJob controller: the next activation. The oracle is a brute-force walk over the
  minutes after ``t`` matching each field's values (day of month unrestricted, so that
  day of week alone decides and an activation comes within a week).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.api.cron import CronParseError, parse_standard
from pykcm.api.go_duration import GoDurationError, parse_go_duration
from pykcm.api.validation import go_quote

_CRON_BOUNDS: Final[Any] = (
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (1, 12, {m: i + 1 for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}),
    (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)


_CRON_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})




def _cron_int(expr: str) -> int:
    body = expr[1:] if expr[:1] in "+-" else expr
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(f'failed to parse int from {expr}: strconv.Atoi: parsing '
                         f'{go_quote(expr)}: invalid syntax')
    n = int(expr)
    if n < 0:
        raise ValueError(f"negative number ({n}) not allowed: {expr}")
    return n


def _cron_range(expr: str, lo: int, hi: int, names: Mapping[str, int] | None) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    if low_and_high[0] in ("*", "?"):
        start, end = lo, hi
    else:
        def name_or_int(s: str) -> int:
            if names is not None and s.lower() in names:
                return names[s.lower()]
            return _cron_int(s)

        start = name_or_int(low_and_high[0])
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = name_or_int(low_and_high[1])
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _cron_int(range_and_step[1])
        if single:
            end = hi
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < lo:
        raise ValueError(f"beginning of range ({start}) below minimum ({lo}): {expr}")
    if end > hi:
        raise ValueError(f"end of range ({end}) above maximum ({hi}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")


def _validation_oracle(spec: str) -> str | None:
    """cron.ParseStandard's error message for `spec`, or None when it parses."""
    if not spec:
        return "empty spec string"
    if spec.startswith(("TZ=", "CRON_TZ=")):
        i = spec.find(" ")
        if i < 0:
            return f"provided bad location {spec[spec.find('=') + 1:]}: unknown time zone"
        spec = spec[i:].strip()
    if spec.startswith("@"):
        if spec in _CRON_DESCRIPTORS:
            return None
        if spec.startswith("@every "):
            dur = spec[len("@every "):]
            try:
                parse_go_duration(dur)
            except GoDurationError as e:
                return f"failed to parse duration {spec}: {e}"
            return None
        return f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        for f, (lo, hi, names) in zip(fields, _CRON_BOUNDS, strict=True):
            for part in f.split(","):
                _cron_range(part, lo, hi, names)
    except ValueError as e:
        return str(e)
    return None


def _merged(spec: str) -> str | None:
    try:
        parse_standard(spec)
    except CronParseError as e:
        return str(e)
    return None


_TERMS = st.one_of(
    st.integers(-3, 70).map(str), st.sampled_from(
        ["*", "?", "jan", "DEC", "mon", "Sun", "x", "", "1-2-3", "1/2/3", "5-1", "*/0", "*/15",
         "1-5", "2/10", "mon-fri", "+3", "0x1", "١"]),
    st.tuples(st.integers(0, 65), st.integers(0, 65), st.integers(0, 9)).map(
        lambda t: f"{t[0]}-{t[1]}/{t[2]}"))
_FIELD = st.lists(_TERMS, min_size=1, max_size=3).map(",".join)
_SPECS = st.one_of(
    st.lists(_FIELD, min_size=4, max_size=6).map(" ".join),
    st.sampled_from(["", "@daily", "@hourly", "@yearly", "@fortnightly", "@every 1h30m",
                     "@every 1x", "@every ", "@every -5s", "@every 15"]))


@settings(max_examples=400, deadline=None)
@given(_SPECS)
def test_merged_parser_gives_validation_its_messages(spec: str) -> None:
    assert _merged(spec) == _validation_oracle(spec)


def _values(field: str, lo: int, hi: int, names: Mapping[str, int] | None = None) -> set[int]:
    out: set[int] = set()
    for term in field.split(","):
        rng, _, step = term.partition("/")
        if rng == "*":
            a, b = lo, hi
        else:
            a_s, _, b_s = rng.partition("-")
            a = names[a_s] if names and a_s in names else int(a_s)
            b = (names[b_s] if names and b_s in names else int(b_s)) if b_s else (
                hi if step else a)
        out.update(range(a, b + 1, int(step) if step else 1))
    return out


def _range_term(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just("*"), st.integers(lo, hi).map(str),
        st.tuples(st.integers(lo, hi), st.integers(lo, hi), st.integers(1, 7)).map(
            lambda t: f"{min(t[0], t[1])}-{max(t[0], t[1])}/{t[2]}"),
        st.tuples(st.integers(lo, hi), st.integers(1, 20)).map(lambda t: f"{t[0]}/{t[1]}"))


def _field(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.lists(_range_term(lo, hi), min_size=1, max_size=2).map(",".join)


@settings(max_examples=60, deadline=None)
@given(_field(0, 59), _field(0, 23), _field(0, 6),
       st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)))
def test_merged_parser_gives_the_controller_its_next_times(minute: str, hour: str, dow: str,
                                                           start: datetime) -> None:
    t = start.replace(tzinfo=UTC)
    got = parse_standard(f"{minute} {hour} * * {dow}").next(t)
    minutes, hours, dows = _values(minute, 0, 59), _values(hour, 0, 23), _values(dow, 0, 6)
    c = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while not (c.minute in minutes and c.hour in hours and (c.weekday() + 1) % 7 in dows):
        c += timedelta(minutes=1)
    assert got == c
