"""The cron parser and next-time computation (robfig/cron ParseStandard semantics)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from pykcm.api.cron import (
    ConstantDelaySchedule,
    CronParseError,
    SpecSchedule,
    load_location,
    parse_standard,
)

NY = ZoneInfo("America/New_York")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
        second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def nexts(spec: str, start: datetime, n: int) -> list[datetime]:
    sched = parse_standard(spec)
    out: list[datetime] = []
    t: datetime | None = start
    for _ in range(n):
        assert t is not None
        t = sched.next(t)
        assert t is not None
        out.append(t)
    return out


@pytest.mark.parametrize(("spec", "start", "want"), [
    ("* * * * *", utc(2024, 1, 1, 12, 0, 0), utc(2024, 1, 1, 12, 1)),
    ("* * * * *", utc(2024, 1, 1, 12, 0, 59), utc(2024, 1, 1, 12, 1)),
    ("*/15 * * * *", utc(2024, 1, 1, 12, 7, 30), utc(2024, 1, 1, 12, 15)),
    ("5/20 * * * *", utc(2024, 1, 1, 12, 30), utc(2024, 1, 1, 12, 45)),
    ("0 9-17/4 * * *", utc(2024, 1, 1, 14, 0), utc(2024, 1, 1, 17, 0)),
    ("30 6 1,15 * *", utc(2024, 1, 1, 7, 0), utc(2024, 1, 15, 6, 30)),
    ("0 0 * jan-mar,DEC *", utc(2024, 3, 31, 23, 59), utc(2024, 12, 1)),
    ("0 12 * * MON-fri", utc(2024, 1, 5, 13, 0), utc(2024, 1, 8, 12, 0)),
    ("0 12 ? * sun", utc(2024, 1, 1), utc(2024, 1, 7, 12)),
    ("0 0 29 2 *", utc(2023, 3, 1), utc(2024, 2, 29)),
    ("59 23 31 * *", utc(2024, 4, 1), utc(2024, 5, 31, 23, 59)),
])
def test_next(spec: str, start: datetime, want: datetime) -> None:
    assert parse_standard(spec).next(start) == want


@pytest.mark.parametrize(("macro", "want"), [
    ("@yearly", utc(2025, 1, 1)),
    ("@annually", utc(2025, 1, 1)),
    ("@monthly", utc(2024, 4, 1)),
    ("@weekly", utc(2024, 3, 17)),
    ("@daily", utc(2024, 3, 14)),
    ("@midnight", utc(2024, 3, 14)),
    ("@hourly", utc(2024, 3, 13, 11)),
])
def test_macros(macro: str, want: datetime) -> None:
    # 2024-03-13 is a Wednesday.
    assert parse_standard(macro).next(utc(2024, 3, 13, 10, 30)) == want


def test_every() -> None:
    sched = parse_standard("@every 1h30m")
    assert sched == ConstantDelaySchedule(5400)
    assert sched.next(utc(2024, 1, 1, 0, 0, 10)) == utc(2024, 1, 1, 1, 30, 10)
    assert parse_standard("@every 500ms") == ConstantDelaySchedule(1)


def test_day_of_month_or_day_of_week() -> None:
    # Both restricted: either matches (the 13th, or a Friday).
    got = nexts("0 0 13 * 5", utc(2024, 9, 1), 4)
    assert got == [utc(2024, 9, 6), utc(2024, 9, 13), utc(2024, 9, 20), utc(2024, 9, 27)]
    # One of them "*": both must match (every Friday).
    assert nexts("0 0 * * 5", utc(2024, 9, 1), 2) == [utc(2024, 9, 6), utc(2024, 9, 13)]
    # "*/1" keeps the star; "*/2" does not (then either matches).
    assert nexts("0 0 */1 * 5", utc(2024, 9, 1), 1) == [utc(2024, 9, 6)]
    assert nexts("0 0 */2 * 5", utc(2024, 9, 1), 2) == [utc(2024, 9, 3), utc(2024, 9, 5)]


def test_result_in_input_zone_and_schedule_zone() -> None:
    sched = parse_standard("TZ=America/New_York 0 9 * * *")
    got = sched.next(utc(2024, 1, 10, 15, 0))
    assert got == datetime(2024, 1, 11, 9, tzinfo=NY)
    assert got is not None and got.tzinfo is UTC
    sched = parse_standard("CRON_TZ=Asia/Tokyo 0 9 * * *")
    assert sched.next(utc(2024, 1, 9, 23)) == utc(2024, 1, 10, 0, 0)
    # Strictly after: 09:00 Tokyo itself gives the next day.
    assert sched.next(utc(2024, 1, 10)) == utc(2024, 1, 11)
    # No zone: the zone of the time given.
    assert parse_standard("0 9 * * *").next(datetime(2024, 1, 10, 10, tzinfo=NY)) == \
        datetime(2024, 1, 11, 9, tzinfo=NY)


def test_dst_spring_forward_skips_the_missing_time() -> None:
    # 2021-03-14 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day.
    got = nexts("TZ=America/New_York 30 2 * * *", datetime(2021, 3, 12, 12, tzinfo=NY), 3)
    assert [g.astimezone(NY) for g in got] == [
        datetime(2021, 3, 13, 2, 30, tzinfo=NY), datetime(2021, 3, 15, 2, 30, tzinfo=NY),
        datetime(2021, 3, 16, 2, 30, tzinfo=NY)]
    # Hourly keeps ticking in absolute time across the jump.
    got = nexts("TZ=America/New_York 0 * * * *", datetime(2021, 3, 14, 0, 30, tzinfo=NY), 3)
    # (Aware datetimes of one zone subtract as wall times: compare instants.)
    assert [g.timestamp() - got[0].timestamp() for g in got] == [0, 3600, 7200]
    assert [g.astimezone(NY).hour for g in got] == [1, 3, 4]


def test_dst_fall_back_repeats_the_hour() -> None:
    # 2021-11-07 02:00 EDT falls back to 01:00 EST: 01:30 happens twice.
    got = nexts("TZ=America/New_York 30 1 * * *", datetime(2021, 11, 6, 12, tzinfo=NY), 3)
    assert got[1].timestamp() - got[0].timestamp() == 3600
    assert [g.astimezone(NY).strftime("%m-%d %H:%M %Z") for g in got] == [
        "11-07 01:30 EDT", "11-07 01:30 EST", "11-08 01:30 EST"]
    # A daily midnight schedule stays at local midnight on both sides.
    got = nexts("TZ=America/New_York @daily", datetime(2021, 11, 6, 12, tzinfo=NY), 2)
    assert [g.astimezone(NY).strftime("%m-%d %H:%M") for g in got] == [
        "11-07 00:00", "11-08 00:00"]
    assert got[1].timestamp() - got[0].timestamp() == 25 * 3600


def test_never_matching_date_gives_up() -> None:
    assert parse_standard("0 0 30 2 *").next(utc(2024, 1, 1)) is None
    assert parse_standard("0 0 31 4 *").next(utc(2024, 1, 1)) is None


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty spec string"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("* * * 13 *", "end of range (13) above maximum (12): 13"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    # Go's time.ParseDuration text, as kube-apiserver v1.36.2 answers it (the controller's
    # own duration parser, merged into go_duration.py, said "invalid duration")
    ("@every 1x", ('failed to parse duration @every 1x: time: unknown unit "x" in duration '
                  '"1x"')),
    ("TZ=Europe/Paris", ("invalid schedule format: runtime error: slice bounds out of range "
                        "[:-1]")),
    ("TZ=Mars/Olympus * * * * *",
     "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"),
])
def test_parse_errors(spec: str, message: str) -> None:
    with pytest.raises(CronParseError) as info:
        parse_standard(spec)
    assert str(info.value) == message


def test_fields_are_bit_sets() -> None:
    sched = parse_standard("0,30 */6 1-3 feb sat")
    assert isinstance(sched, SpecSchedule)
    assert sched.minute == (1 << 0) | (1 << 30)
    assert sched.hour == sum(1 << h for h in (0, 6, 12, 18))
    assert sched.dom == 0b1110
    assert sched.month == 1 << 2
    assert sched.dow == 1 << 6
    assert sched.second == 1


def test_load_location() -> None:
    assert load_location("") is UTC
    assert load_location("UTC") is UTC
    assert load_location("Europe/Paris") == ZoneInfo("Europe/Paris")
    with pytest.raises(CronParseError, match="unknown time zone Nowhere/Land"):
        load_location("Nowhere/Land")
