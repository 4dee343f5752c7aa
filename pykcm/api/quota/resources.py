"""ResourceList arithmetic: ``k8s.io/apiserver/pkg/quota/v1/resources.go``.

A ResourceList here is ``dict[str, Quantity]`` (resource name → amount);
``from_wire``/``to_wire`` convert from and to the JSON form
(``{"cpu": "500m"}``). Every function returns a new dict: quotas and objects
from a cache are shared and never mutated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykcm.api.quantity import DECIMAL_SI, ZERO, Quantity

__all__ = [
    "ResourceList",
    "add",
    "equals",
    "from_wire",
    "is_negative",
    "less_than_or_equal",
    "mask",
    "pretty_print",
    "remove_zeros",
    "subtract",
    "subtract_non_negative",
    "to_wire",
]

ResourceList = dict[str, Quantity]


def from_wire(rl: Mapping[str, Any] | None) -> ResourceList:
    """A wire ResourceList ({"cpu": "1"}) as Quantities; malformed values count as 0."""
    return {k: Quantity.of(v) for k, v in (rl or {}).items()}


def to_wire(rl: Mapping[str, Quantity]) -> dict[str, str]:
    """Canonical strings, as kube-apiserver serialises them."""
    return {k: str(v) for k, v in rl.items()}


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k] + v if k in out else v
    return out


def subtract(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k] - v if k in out else Quantity(-v.value, v.format)
    return out


def subtract_non_negative(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """a - b, each value floored at zero (upstream SubtractWithNonNegativeResult)."""
    out: ResourceList = {}
    for k, v in a.items():
        d = v - b[k] if k in b else v
        out[k] = d if d.sign() >= 0 else Quantity(ZERO.value, d.format)
    for k, v in b.items():
        if k not in out:
            out[k] = Quantity(ZERO.value, v.format)
    return out


def mask(rl: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {k: v for k, v in rl.items() if k in keep}


def equals(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    if len(a) != len(b):
        return False
    return all(k in b and b[k].value == v.value for k, v in a.items())


def less_than_or_equal(a: Mapping[str, Quantity],
                       b: Mapping[str, Quantity]) -> tuple[bool, list[str]]:
    """Whether every a[k] <= b[k] for the keys of both; the keys that exceed."""
    exceeded = [k for k, v in a.items() if k in b and v.value > b[k].value]
    return not exceeded, exceeded


def is_negative(rl: Mapping[str, Quantity]) -> list[str]:
    return [k for k, v in rl.items() if v.sign() < 0]


def remove_zeros(rl: Mapping[str, Quantity]) -> ResourceList:
    return {k: v for k, v in rl.items() if v.sign() != 0}


def zero_list(names: Iterable[str]) -> ResourceList:
    """Each name at zero, DecimalSI (how CalculateUsageStats starts its sum)."""
    return {n: Quantity(ZERO.value, DECIMAL_SI) for n in names}


def pretty_print(rl: Mapping[str, Quantity]) -> str:
    """``a=1,b=2Gi`` in key order, as the admission messages print a ResourceList."""
    return ",".join(f"{k}={rl[k]}" for k in sorted(rl))
