"""pykcm.api.timestamps: the one home of metav1.Time / MicroTime formatting and parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from pykcm.api.timestamps import (
    format_micro_time,
    format_time,
    format_unix,
    parse_datetime,
    parse_time,
)

T = datetime(2024, 5, 6, 7, 8, 9, 12, tzinfo=UTC)


def test_time_is_seconds_and_micro_time_keeps_microseconds() -> None:
    assert format_time(T.timestamp()) == "2024-05-06T07:08:09Z"
    assert format_unix(int(T.timestamp()), 12) == "2024-05-06T07:08:09.000012Z"
    # epoch seconds and datetimes (naive ones are UTC) give the same MicroTime
    assert format_micro_time(T) == format_micro_time(T.replace(tzinfo=None)) == \
        format_micro_time(T.timestamp()) == "2024-05-06T07:08:09.000012Z"
    assert format_micro_time(T.astimezone(timezone(timedelta(hours=2)))) == \
        "2024-05-06T07:08:09.000012Z"


def test_parse_reads_offsets_and_rejects_garbage() -> None:
    assert parse_datetime("2024-05-06T09:08:09.000012+02:00") == T
    assert parse_datetime("2024-05-06T07:08:09.000012+02:00") is not None
    assert parse_datetime("2024-05-06T07:08:09.000012Z") == T
    assert parse_datetime("2024-05-06T07:08:09.000012Z").tzinfo is UTC  # type: ignore[union-attr]
    assert parse_datetime("2024-05-06T07:08:09") == T.replace(microsecond=0)  # no offset: UTC
    assert parse_time("2024-05-06T07:08:09Z") == T.replace(microsecond=0).timestamp()
    for bad in (None, "", "yesterday", 17):
        assert parse_datetime(bad) is None
    assert parse_time(None) is None and parse_time("x") is None
