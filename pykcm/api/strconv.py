"""Go's strconv.ParseInt / ParseUint in base 10, for values Kubernetes stores as strings.

Annotations such as ``deployment.kubernetes.io/revision`` and ``max-replicas``
are parsed by the controllers with strconv; Python's ``int()`` accepts more
(surrounding whitespace, ``_`` separators, non-ASCII digits, any size), so a
value upstream rejects would be used here. These parse exactly what Go does:
an optional sign (ParseInt only), ASCII digits, within the bit size.
"""

from __future__ import annotations

__all__ = ["parse_int", "parse_uint"]


def _digits(s: str) -> bool:
    return bool(s) and s.isascii() and s.isdigit()


def parse_int(s: str, bit_size: int = 64) -> int:
    """strconv.ParseInt(s, 10, bit_size); ValueError as Go's syntax or range error."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not _digits(body):
        raise ValueError(f'strconv.ParseInt: parsing "{s}": invalid syntax')
    v = int(s)
    if not -(1 << (bit_size - 1)) <= v < (1 << (bit_size - 1)):
        raise ValueError(f'strconv.ParseInt: parsing "{s}": value out of range')
    return v


def parse_uint(s: str, bit_size: int = 64) -> int:
    """strconv.ParseUint(s, 10, bit_size): no sign; ValueError as Go's."""
    if not _digits(s):
        raise ValueError(f'strconv.ParseUint: parsing "{s}": invalid syntax')
    v = int(s)
    if v >= 1 << bit_size:
        raise ValueError(f'strconv.ParseUint: parsing "{s}": value out of range')
    return v
