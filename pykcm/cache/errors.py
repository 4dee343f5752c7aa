"""The exceptions of the cache layer (client-go tools/cache's error values).

Every exception raised by :mod:`pykcm.cache` derives from :class:`CacheError`,
and also from the builtin a Python caller would expect (``ValueError`` for a
bad key, ``LookupError`` for an unknown index), so both ``except CacheError``
and the idiomatic builtin catch it.

Where they come from in the data flow: the key and index functions raise
:class:`NoMetaError` for an object without ``metadata``;
``split_meta_namespace_key`` raises :class:`InvalidKeyError`; the Indexer
raises :class:`IndexNotFoundError` and :class:`IndexerConflictError`; the
DeltaFIFO raises :class:`FIFOClosedError` from ``pop`` and understands a
:class:`RequeueError` raised by the function ``pop`` hands the deltas to.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CacheError",
    "FIFOClosedError",
    "IndexNotFoundError",
    "IndexerConflictError",
    "InvalidKeyError",
    "KeyFuncError",
    "NoMetaError",
    "RequeueError",
]


class CacheError(Exception):
    """Base class of every error raised by pykcm.cache."""


class KeyFuncError(CacheError, ValueError):
    """No store key can be computed for an object (client-go's ``KeyError``)."""

    def __init__(self, obj: Any, reason: str) -> None:
        super().__init__(f"couldn't create key for object: {reason}")
        self.obj = obj
        self.reason = reason


class NoMetaError(KeyFuncError, TypeError):
    """The object has no ``metadata`` mapping (client-go: "object has no meta")."""

    def __init__(self, obj: Any) -> None:
        # Only the type goes into the message: objects can be megabytes.
        super().__init__(obj, f"object has no meta: {type(obj).__name__}")


class InvalidKeyError(CacheError, ValueError):
    """A store key is not ``name`` or ``namespace/name``."""

    def __init__(self, key: str) -> None:
        super().__init__(f"unexpected key format: {key!r}")
        self.key = key


class IndexNotFoundError(CacheError, LookupError):
    """The named index is not one of the Indexer's indexers."""

    def __init__(self, index_name: str) -> None:
        super().__init__(f"index with name {index_name!r} does not exist")
        self.index_name = index_name


class IndexerConflictError(CacheError, ValueError):
    """``add_indexers`` was given a name that is already an indexer."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"indexer conflict: {names}")
        self.names = names


class RequeueError(CacheError):
    """Raised by a DeltaFIFO ``pop`` process function to put the item back.

    client-go's ``ErrRequeue``: the deltas are re-added (unless newer deltas of
    the key were queued meanwhile) and ``pop`` then raises ``err`` if one is
    given, or returns normally.
    """

    def __init__(self, err: BaseException | None = None) -> None:
        super().__init__("the item should be requeued" if err is None else str(err))
        self.err = err


class FIFOClosedError(CacheError):
    """``pop`` on a DeltaFIFO that is closed and empty (client-go's ``ErrFIFOClosed``)."""

    def __init__(self) -> None:
        super().__init__("DeltaFIFO: manipulating with closed queue")
