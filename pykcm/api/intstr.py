"""IntOrString values: ``maxSurge: 25%`` or ``maxSurge: 2`` (apimachinery ``util/intstr``).

Deployments, PodDisruptionBudgets and rolling updates take a number or a
percentage; :func:`get_scaled_value_from_int_or_percent` turns either into a
count against a total, rounding as the caller asks (a Deployment rounds
``maxSurge`` up and ``maxUnavailable`` down).
"""

from __future__ import annotations

import math

__all__ = ["IntOrStringError", "get_scaled_value_from_int_or_percent"]


class IntOrStringError(ValueError):
    """An IntOrString that is neither an integer nor ``<integer>%``."""


def _percent(value: str) -> int:
    if not value.endswith("%"):
        raise IntOrStringError(f"invalid value for IntOrString: invalid type: string is not a "
                               f"percentage: {value!r}")
    try:
        return int(value[:-1])
    except ValueError:
        raise IntOrStringError(f"invalid value for IntOrString: invalid value {value!r}") from None


def get_scaled_value_from_int_or_percent(value: int | str | None, total: int,
                                         round_up: bool) -> int:
    """``value`` as a count: an int as is, ``"N%"`` as N percent of ``total``, rounded up or down.

    None counts as 0. Raises :class:`IntOrStringError` for anything else
    (upstream ``GetScaledValueFromIntOrPercent``).
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        raise IntOrStringError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        pct = _percent(value)
        scaled = pct * total / 100
        # Integer arithmetic where exact, so 25% of 4 is exactly 1 either way.
        if (pct * total) % 100 == 0:
            return pct * total // 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    raise IntOrStringError(f"invalid value for IntOrString: {value!r}")

