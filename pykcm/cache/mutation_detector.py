"""The cache mutation detector: catches consumers that mutate cached objects.

client-go tools/cache mutation_detector.go. Objects handed out by an
informer (to handlers, through listers) are the cache's shared references;
a consumer that mutates one corrupts every other reader's view and the
Indexer's indexes. Making JSON dicts immutable is not cheap in Python, so,
as in client-go, mutations are *detected* in testing instead.

Data flow: with the environment variable ``KUBE_CACHE_MUTATION_DETECTOR``
set to a true value (``1``, ``t``, ``true``, ...) when an informer is
created, ``SharedIndexInformer.handle_deltas`` hands every object it adds or
updates to :meth:`CacheMutationDetector.add_object`, which keeps the object
and a deep copy of it. Every ``period`` (1 s) while the informer runs, and
whenever :meth:`~CacheMutationDetector.check` is called, each kept object is
compared with its copy; a difference is logged at CRITICAL level naming the
object's key and the first differing field, then raises
:class:`CacheMutationError` (or calls ``failure_func``). Raised from the
periodic task, the error ends the informer's ``run()``: the failure is loud.

Off by default, at zero cost: :func:`new_cache_mutation_detector` returns
``None`` and the informer skips the call. Enabled, it retains every object
version it saw for two rotation periods (``retain_duration``): a deliberate
memory leak for tests.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable
from typing import Any, Final

from pykcm.api.clock import Clock, clock_of
from pykcm.cache.errors import CacheError
from pykcm.cache.keys import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key

__all__ = [
    "MUTATION_DETECTOR_ENV",
    "CacheMutationDetector",
    "CacheMutationError",
    "mutation_detection_enabled",
    "new_cache_mutation_detector",
]

log = logging.getLogger("pykcm.cache.mutation_detector")

MUTATION_DETECTOR_ENV: Final = "KUBE_CACHE_MUTATION_DETECTOR"
_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # Go's strconv.ParseBool


def mutation_detection_enabled() -> bool:
    """Whether ``KUBE_CACHE_MUTATION_DETECTOR`` is set to a true value (read now)."""
    return os.environ.get(MUTATION_DETECTOR_ENV, "") in _TRUE


class CacheMutationError(CacheError, RuntimeError):
    """A cached object was mutated by a consumer; ``keys`` names the objects."""

    def __init__(self, message: str, keys: list[str]) -> None:
        super().__init__(message)
        self.keys = keys


def _key(obj: Any) -> str:
    try:
        return deletion_handling_meta_namespace_key(obj)
    except Exception:  # noqa: BLE001 - only for a message
        return f"<{type(obj).__name__}>"


def _first_difference(cached: Any, copied: Any, path: str = "") -> str:
    """A short description of the first place where ``cached`` differs from ``copied``."""
    if isinstance(cached, dict) and isinstance(copied, dict):
        for k in copied:
            if k not in cached:
                return f"{path}.{k}: removed"
        for k in cached:
            if k not in copied:
                return f"{path}.{k}: added {cached[k]!r:.80}"
            if cached[k] != copied[k]:
                return _first_difference(cached[k], copied[k], f"{path}.{k}")
    elif isinstance(cached, list) and isinstance(copied, list):
        if len(cached) != len(copied):
            return f"{path}: length {len(copied)} -> {len(cached)}"
        for i, (a, b) in enumerate(zip(cached, copied, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{i}]")
    return f"{path or '.'}: {copied!r:.80} -> {cached!r:.80}"


class CacheMutationDetector:
    """Keeps deep copies of cached objects and compares them (client-go's default one)."""

    def __init__(
        self,
        name: str,
        *,
        period: float = 1.0,
        retain_duration: float = 120.0,
        failure_func: Callable[[str], None] | None = None,
        clock: Clock | Callable[[], float] | None = None,
    ) -> None:
        self.name = name
        self.period = period
        self.retain_duration = retain_duration
        self.failure_func = failure_func
        self._time = clock_of(clock)
        self._clock = self._time.monotonic
        # (cached object, its deep copy). Added since the last check, checked
        # in this rotation, and those of the previous rotation.
        self._added: list[tuple[Any, Any]] = []
        self._cached: list[tuple[Any, Any]] = []
        self._retained: list[tuple[Any, Any]] = []
        self._last_rotated: float | None = None

    def add_object(self, obj: Any) -> None:
        """Remember ``obj`` and a deep copy of it (tombstones are ignored)."""
        if isinstance(obj, DeletedFinalStateUnknown):
            return
        self._added.append((obj, copy.deepcopy(obj)))

    def check(self) -> None:
        """Compare every kept object with its copy; fail loudly on a difference."""
        self._cached.extend(self._added)
        self._added = []
        altered: list[str] = []
        for cached, copied in (*self._cached, *self._retained):
            if cached != copied:
                key = _key(cached)
                altered.append(key)
                log.critical("CACHE %s[%s] ALTERED: %s", self.name, key,
                             _first_difference(cached, copied))
        if altered:
            msg = f"cache {self.name} modified: {', '.join(sorted(set(altered)))}"
            if self.failure_func is not None:
                self.failure_func(msg)
                return
            raise CacheMutationError(msg, altered)

    def _rotate(self) -> None:
        now = self._clock()
        if self._last_rotated is None:
            self._last_rotated = now
        elif now - self._last_rotated > self.retain_duration:
            self._retained = self._cached
            self._cached = []
            self._last_rotated = now

    async def run(self) -> None:
        """Check every ``period`` seconds until cancelled (raises on a mutation)."""
        while True:
            self._rotate()
            self.check()
            await self._time.sleep(self.period)

    def __len__(self) -> int:
        return len(self._added) + len(self._cached) + len(self._retained)


def new_cache_mutation_detector(name: str) -> CacheMutationDetector | None:
    """A detector if ``KUBE_CACHE_MUTATION_DETECTOR`` is true, else ``None`` (no cost)."""
    if not mutation_detection_enabled():
        return None
    log.warning("Mutation detector is enabled, this will result in memory leakage.")
    return CacheMutationDetector(name)
