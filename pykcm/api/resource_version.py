"""Comparing resourceVersions as apimachinery's ``util/resourceversion`` does.

A resourceVersion is opaque to clients, except that v1.35+ defines an order on
the well-formed ones: decimal integers without leading zeros (what etcd and
pykcm's API server hand out). :func:`compare_resource_version` orders two of
them; anything else is not comparable (:class:`InvalidResourceVersion`), and
callers such as the controllers' consistency store then skip the check rather
than block on it.
"""

from __future__ import annotations

__all__ = ["InvalidResourceVersion", "compare_resource_version"]


class InvalidResourceVersion(ValueError):
    """A resourceVersion that is not a decimal integer without leading zeros."""

    def __init__(self, rv: str) -> None:
        super().__init__(f"resource version is not well formed: {rv}")
        self.rv = rv


def _well_formed(rv: str) -> bool:
    # str.isdigit accepts other scripts' digits; Go's check is ASCII only.
    return bool(rv) and rv[0] != "0" and rv.isascii() and rv.isdigit()


def compare_resource_version(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, the same as or newer than ``b``
    (CompareResourceVersion). Raises InvalidResourceVersion for a malformed one."""
    for rv in (a, b):
        if not _well_formed(rv):
            raise InvalidResourceVersion(rv)
    # Same length: lexical order is numeric order (no leading zeros).
    ka, kb = (len(a), a), (len(b), b)
    return (ka > kb) - (ka < kb)
