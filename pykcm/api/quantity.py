"""resource.Quantity values: the number a quantity string stands for.

The one Quantity parser of every layer. Strict mode (``parse_quantity(q, strict=True)``)
is Go's grammar, ``k8s.io/apimachinery/pkg/api/resource``'s ParseQuantity (a number
``[+-]?[0-9.]+``, then a suffix: ``n u m k M G T P E``, ``Ki Mi Gi Ti Pi Ei`` or an
exponent ``e3``/``E-2``): the API server's body decoder and validation use it, so that
a quantity Go refuses is refused while decoding ("NaN", "1_000", "Infinity" included).
The default mode reads what the API server already accepted (the simulated scheduler's
requests, the PersistentVolume binder's capacities, the provisioner's sizes, the quota
evaluators' Quantities): Go's grammar first, then, for what Go refuses, Python's Decimal
syntax with an optional suffix (the pre-merge behaviour of those readers, kept as it was).
Both read ``"100m"``, ``"1Gi"``, ``"1e3"``, ``"1.5G"`` or a JSON number to an exact
Decimal, and agree wherever the strict mode accepts (tests/unit/test_quantity_one_parser.py).
``Quantity`` adds what the quota evaluators need on top of the value: Go's
``Format`` (DecimalSI, BinarySI, DecimalExponent, chosen by the suffix),
``Add``/``Sub`` (a zero takes the other operand's format) and the canonical
``String()`` (``"1500m"``, ``"128Mi"``, ``"2"``), which kube-apiserver and
kube-controller-manager write into ResourceQuota status and messages.
Deliberate deviation: values are exact Decimals rounded up to nano units at
parse time, as Go's; Go's int64 fast path (and its overflow to inf.Dec) is
not modelled, which changes nothing a user sees.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Final

__all__ = ["BINARY_SI", "DECIMAL_EXPONENT", "DECIMAL_SI", "MEMO_MAX_LEN", "Quantity",
           "parse_quantity"]

DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_BINARY: Final = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
                  "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL: Final = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
                   "": Decimal(1), "k": Decimal("1e3"), "M": Decimal("1e6"),
                   "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
                   "E": Decimal("1e18")}


# Go's grammar (resource.ParseQuantity's splitting of number and suffix)
_GO_QUANTITY: Final = re.compile(
    r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eEinumkKMGTP]*[-+]?[0-9]*)")
_SUFFIX: Final = {**_DECIMAL, **{k: Decimal(v) for k, v in _BINARY.items()}}
# Pure functions of a string, called for every container of every write with
# the same few strings ("100m", "128Mi", an image name): remember them.
MEMO_MAX_LEN: Final = 512


@lru_cache(maxsize=2048)
def _parse_go(q: str) -> Decimal | None:
    """Go's grammar: the value, or None for what ParseQuantity refuses."""
    m = _GO_QUANTITY.fullmatch(q.strip())
    if not m:
        return None
    num, suffix = m.groups()
    try:
        value = Decimal(num)
        if suffix in _SUFFIX:
            return value * _SUFFIX[suffix]
        if suffix[:1] in ("e", "E"):
            return value * (Decimal(10) ** int(suffix[1:]))
    except (InvalidOperation, ValueError):
        return None
    return None


@lru_cache(maxsize=1024)
def _parse_lenient(s: str) -> Decimal | None:
    """Go's grammar, else Decimal's syntax with an optional suffix."""
    value = _parse_go(s) if len(s) <= MEMO_MAX_LEN else _parse_go.__wrapped__(s)
    if value is not None:
        return value
    s = s.strip()
    if not s:
        return None
    i = len(s)
    # The suffix is the trailing run of letters, or an exponent "e3" / "E-2".
    while i > 0 and s[i - 1].isalpha():
        i -= 1
    number, suffix = s[:i], s[i:]
    try:
        if suffix in _BINARY:
            return Decimal(number) * _BINARY[suffix]
        if suffix in _DECIMAL:
            return Decimal(number) * _DECIMAL[suffix]
        return Decimal(s)  # "1e3", "1E-2": Decimal reads exponents itself
    except InvalidOperation:
        return None


def parse_quantity(q: Any, *, strict: bool = False) -> Decimal | None:
    """The value of a ``resource.Quantity`` ("100m", "1Gi", "1e3", 2); None if malformed.
    ``strict``: only Go's grammar (the body decoder's), else also Decimal's syntax."""
    if q.__class__ is str and len(q) <= MEMO_MAX_LEN:
        return _parse_go(q) if strict else _parse_lenient(q)  # Decimals are immutable
    if isinstance(q, bool):
        return None
    if isinstance(q, int):
        return Decimal(q)
    if isinstance(q, float):
        return Decimal(str(q))
    if isinstance(q, str):
        return _parse_go.__wrapped__(q) if strict else _parse_lenient.__wrapped__(q)
    return None


_NANO: Final = Decimal("1e-9")
_SI_SUFFIX_OF_EXPONENT: Final = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G",
                                 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX_OF_POWER: Final = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}


@lru_cache(maxsize=1024)
def _format_of_str(s: str) -> str:
    i = len(s)
    while i > 0 and s[i - 1].isalpha():
        i -= 1
    suffix = s[i:]
    if suffix in _BINARY:
        return BINARY_SI
    if suffix == "" and any(c in "eE" for c in s):
        return DECIMAL_EXPONENT  # "1e3": the trailing letters stopped at the exponent's digits
    return DECIMAL_SI


@dataclass(frozen=True, slots=True)
class Quantity:
    """A resource.Quantity: its exact value and the format its String() uses."""

    value: Decimal
    format: str = DECIMAL_SI

    @classmethod
    def parse(cls, q: Any) -> Quantity | None:
        """The Quantity of a wire value ("100m", "1Gi", "1e3", 2); None if malformed."""
        value = parse_quantity(q)
        if value is None:
            return None
        text = q.strip() if isinstance(q, str) else str(q)
        fmt = _format_of_str(text) if text else DECIMAL_SI
        if value.as_tuple().exponent < -9:  # type: ignore[operator]
            # Go keeps nano precision and rounds away from zero past it.
            value = value.quantize(_NANO, rounding=ROUND_UP)
        return cls(value, fmt)

    @classmethod
    def of(cls, q: Any) -> Quantity:
        """parse() for values the API server already accepted (malformed: zero)."""
        return cls.parse(q) or ZERO

    def __add__(self, other: Quantity) -> Quantity:
        # Go's Add: a zero receiver takes the other's format.
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value + other.value, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value - other.value, fmt)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self.value >= other.value

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def round_up(self) -> Quantity:
        """RoundUp(0): the next whole unit (PVC storage requests are quota'd so)."""
        return Quantity(self.value.to_integral_value(rounding=ROUND_UP), self.format)

    def __str__(self) -> str:
        return _canonical(self.value, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


ZERO: Final = Quantity(Decimal(0), DECIMAL_SI)


def _canonical(value: Decimal, fmt: str) -> str:
    """Go's Quantity.String(): the canonical form for the value's format."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and -1024 < value < 1024:
        fmt = DECIMAL_SI  # avoids rounding and confusion, as upstream says
    if fmt == BINARY_SI and value != value.to_integral_value():
        fmt = DECIMAL_SI  # would lose precision
    sign = "-" if value < 0 else ""
    if fmt == BINARY_SI:
        amount, power = int(abs(value)), 0
        while amount % 1024 == 0 and power < 6:
            amount //= 1024
            power += 1
        return f"{sign}{amount}{_BINARY_SUFFIX_OF_POWER[power]}"
    _, digits, exponent = abs(value).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digits)))
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if fmt == DECIMAL_SI and exponent in _SI_SUFFIX_OF_EXPONENT:
        return f"{sign}{mantissa}{_SI_SUFFIX_OF_EXPONENT[exponent]}"
    return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
