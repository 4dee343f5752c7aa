"""One Quantity parser (pykcm/api/quantity.py) for both of its callers: Hypothesis
properties that it gives each what it had before the two parsers became one. The oracles
are the two former parsers, kept here verbatim: the API server's decoder parser
(``_old_strict``, registry/defaults.py: Go's grammar) and the other layers' (``_old_lenient``,
pykcm/api/quantity.py: Decimal's syntax with a suffix)."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.api.quantity import parse_quantity
from pykcm.apiserver.registry import defaults

# --- the former lenient parser (pykcm/api/quantity.py) ---------------------------------

_OB: Final = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
                  "Pi": 2 ** 50, "Ei": 2 ** 60}
_OD: Final = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
                   "": Decimal(1), "k": Decimal("1e3"), "M": Decimal("1e6"),
                   "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
                   "E": Decimal("1e18")}


def _old_str(s: str) -> Decimal | None:
    s = s.strip()
    if not s:
        return None
    i = len(s)
    # The suffix is the trailing run of letters, or an exponent "e3" / "E-2".
    while i > 0 and s[i - 1].isalpha():
        i -= 1
    number, suffix = s[:i], s[i:]
    try:
        if suffix in _OB:
            return Decimal(number) * _OB[suffix]
        if suffix in _OD:
            return Decimal(number) * _OD[suffix]
        return Decimal(s)  # "1e3", "1E-2": Decimal reads exponents itself
    except InvalidOperation:
        return None


def _old_lenient(q: Any) -> Decimal | None:
    """The value of a ``resource.Quantity`` ("100m", "1Gi", "1e3", 2); None if malformed."""
    if isinstance(q, bool):
        return None
    if isinstance(q, int):
        return Decimal(q)
    if isinstance(q, float):
        return Decimal(str(q))
    if isinstance(q, str):
        return _old_str(q)
    return None



# --- the former strict parser (registry/defaults.py) -----------------------------------

_QUANTITY_RE: Final = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eEinumkKMGTP]*[-+]?[0-9]*)")
_OS: Final = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}




def _old_strict_str(q: str) -> Decimal | None:
    m = _QUANTITY_RE.fullmatch(q.strip())
    if not m:
        return None
    num, suffix = m.groups()
    try:
        value = Decimal(num)
        if suffix in _OS:
            return value * _OS[suffix]
        if suffix[:1] in ("e", "E"):
            return value * (Decimal(10) ** int(suffix[1:]))
    except (InvalidOperation, ValueError):
        return None
    return None


def _old_strict(q: Any) -> Decimal | None:
    """The numeric value of a resource.Quantity ("100m", "1Gi", "1e3", 2); None if malformed."""
    if isinstance(q, bool):
        return None
    if isinstance(q, (int, float)):
        return Decimal(str(q))
    if not isinstance(q, str):
        return None
    return _old_strict_str(q)



_CHARS = st.sampled_from(list("0123456789.+-eEinumkKMGTPEi_ aNfy") + ["Ki", "Mi", "Gi"])
_TEXT = st.one_of(
    st.lists(_CHARS, max_size=8).map("".join),
    st.sampled_from(["NaN", "nan", "1_000", "Infinity", "-inf", "1e3", "1E-2", "1.5Gi", ".5",
                     "5.", "+1k", "1e", "1ki", "1e3m", " 2Mi ", "0x10", "1Ei", "1E"]),
    st.text(max_size=6))
_VALUES = st.one_of(_TEXT, st.integers(-10**20, 10**20), st.booleans(), st.none(),
                    st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_strict_mode_is_the_decoders_former_parser(q: Any) -> None:
    assert parse_quantity(q, strict=True) == _old_strict(q)
    assert defaults.parse_quantity(q) == _old_strict(q)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_default_mode_is_the_other_layers_former_parser(q: Any) -> None:
    got, want = parse_quantity(q), _old_lenient(q)
    if got is None or want is None:
        assert got is want
    elif got.is_nan() or want.is_nan():  # NaN is not equal to itself; comparing sNaN raises
        assert got.is_nan() and want.is_nan()
    else:
        assert got == want


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_modes_agree_wherever_go_accepts(q: str) -> None:
    strict = parse_quantity(q, strict=True)
    if strict is not None:
        assert parse_quantity(q) == strict


def test_what_only_the_default_mode_reads() -> None:
    for q in ("NaN", "1_000", "Infinity"):
        assert parse_quantity(q, strict=True) is None
        assert parse_quantity(q) is not None
