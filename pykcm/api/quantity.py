"""resource.Quantity values: the number a quantity string stands for.

One parser for every layer that compares quantities (the simulated scheduler's
requests, the PersistentVolume binder's capacities, the provisioner's sizes):
``"100m"``, ``"1Gi"``, ``"1e3"``, ``"1.5G"`` or a JSON number, as
``k8s.io/apimachinery/pkg/api/resource`` reads them, to an exact Decimal.
Formatting (the canonical form Go prints) is not here: nothing in these
layers writes a quantity it did not read.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Final

__all__ = ["parse_quantity"]

_BINARY: Final = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
                  "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL: Final = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
                   "": Decimal(1), "k": Decimal("1e3"), "M": Decimal("1e6"),
                   "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
                   "E": Decimal("1e18")}


@lru_cache(maxsize=1024)
def _parse_str(s: str) -> Decimal | None:
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


def parse_quantity(q: Any) -> Decimal | None:
    """The value of a ``resource.Quantity`` ("100m", "1Gi", "1e3", 2); None if malformed."""
    if isinstance(q, bool):
        return None
    if isinstance(q, int):
        return Decimal(q)
    if isinstance(q, float):
        return Decimal(str(q))
    if isinstance(q, str):
        return _parse_str(q)
    return None
