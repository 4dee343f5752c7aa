"""pykcm.api.go_duration: Go's time.ParseDuration (values and error texts as Go 1.24's)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.go_duration import (
    GoDurationError,
    parse_go_duration,
    parse_go_duration_seconds,
)

S = 1_000_000_000


@pytest.mark.parametrize(("text", "ns"), [
    ("0", 0), ("+0", 0), ("-0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S),
    ("-5s", -5 * S), ("+5s", 5 * S), ("-0s", 0), ("5.6s", 5 * S + 600_000_000),
    ("5.s", 5 * S), (".5s", S // 2), ("1.0s", S), ("1.00s", S), ("1.004s", S + 4_000_000),
    ("100.00100s", 100 * S + 1_000_000), ("10ns", 10), ("11us", 11_000),
    ("12\u00b5s", 12_000), ("12\u03bcs", 12_000), ("13ms", 13_000_000), ("14s", 14 * S),
    ("15m", 15 * 60 * S), ("16h", 16 * 3600 * S), ("3h30m", (3 * 3600 + 30 * 60) * S),
    ("10.5s4m", 4 * 60 * S + 10 * S + S // 2), ("-2m3.4s", -(2 * 60 * S + 3 * S + 400_000_000)),
    ("1h2m3s4ms5us6ns", 3600 * S + 120 * S + 3 * S + 4_000_000 + 5_000 + 6),
    ("39h9m14.425s", 39 * 3600 * S + 9 * 60 * S + 14 * S + 425_000_000),
    ("52763797000ns", 52763797000), ("0.3333333333333333333h", 20 * 60 * S),
    ("9007199254740993ns", (1 << 53) + 1), ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1), ("-9223372036854775808ns", -(1 << 63)),
    ("0.100000000000000000000h", 6 * 60 * S),
    ("0.830103483285477580700h", 49 * 60 * S + 48 * S + 372_539_827),
])
def test_values_as_go(text: str, ns: int) -> None:
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize(("text", "message"), [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("1.1.1s", 'time: missing unit in duration "1.1.1s"'),
    ("1s2", 'time: missing unit in duration "1s2"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("\x85\x85", 'time: invalid duration "\\xc2\\x85\\xc2\\x85"'),
    ("\xffff", 'time: invalid duration "\\xc3\\xbfff"'),
    ("1\u00e9s", 'time: unknown unit "\\xc3\\xa9s" in duration "1\\xc3\\xa9s"'),
    ('5"s', 'time: unknown unit "\\"s" in duration "5\\"s"'),
])
def test_errors_as_go(text: str, message: str) -> None:
    with pytest.raises(GoDurationError) as err:
        parse_go_duration(text)
    assert str(err.value) == message


@given(st.integers(min_value=-(10**6), max_value=10**6),
       st.sampled_from(["ns", "us", "ms", "s", "m", "h"]))
def test_whole_numbers_scale_by_their_unit(n: int, unit: str) -> None:
    scale = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
    assert parse_go_duration(f"{n}{unit}") == n * scale[unit]


def test_seconds() -> None:
    assert parse_go_duration_seconds("1m30s") == 90.0
    assert parse_go_duration_seconds("-1.5h") == -5400.0
