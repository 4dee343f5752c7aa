"""Controller expectations: what a controller waits to observe before acting again.

The counterpart of ``ControllerExpectations``, ``ControlleeExpectations`` and
``UIDTrackingControllerExpectations`` in kube-controller-manager's
``pkg/controller/controller_utils.go``.

Why it exists
-------------
A controller reads its world from informer caches, which lag behind the API
server. After a ReplicaSet controller creates three pods, its pod lister does
not show them yet; a second sync run at that moment would see too few pods
and create three more. Expectations close that gap: before writing, the sync
records how many creations (or deletions) it is about to cause; the event
handlers lower the count as the informer delivers them; and a sync does not
act on the counts in the cache until they have all been seen.

How controllers use it
----------------------
::

    expectations = ControllerExpectations()

    # informer event handlers (the informer delivers what was written)
    def on_add(pod):      # a pod owned by rs_key appeared
        expectations.creation_observed(rs_key)
        queue.add(rs_key)

    def on_delete(pod):   # a pod owned by rs_key is gone
        expectations.deletion_observed(rs_key)
        queue.add(rs_key)

    # sync(key)
    need_sync = expectations.satisfied_expectations(key)
    ...  # always refresh status from the cache
    if need_sync:
        diff = desired - len(pods)
        if diff > 0:
            expectations.expect_creations(key, diff)   # BEFORE the writes
            ... create diff pods; for each failed create:
            expectations.creation_observed(key)        # it will never be seen
        elif diff < 0:
            expectations.expect_deletions(key, -diff)
            ...

    # when the controller object itself is deleted
    expectations.delete_expectations(key)

Rules (the same as Kubernetes'):

* A key with no recorded expectations is satisfied: a new controller, or one
  whose expectations were deleted, syncs at once.
* Expectations are satisfied once both counts are ``<= 0``; observing more
  than was expected (negative counts) is fine.
* Expectations expire: ``EXPECTATIONS_TIMEOUT`` (5 minutes) after they were
  set, they count as satisfied even if some events never arrived (a missed
  watch event must not wedge a controller forever). Expiry is judged at each
  :meth:`ControllerExpectations.satisfied_expectations` call; the entry is
  not removed, and the next ``set_expectations`` starts a new period.
* ``set_expectations`` / ``expect_*`` replace whatever was recorded before;
  ``raise_expectations`` / ``lower_expectations`` / ``*_observed`` adjust an
  existing record and do nothing for an unknown key.

:class:`UIDTrackingControllerExpectations` also remembers *which* objects
are expected to go away, so that a deletion seen twice (an update setting
``deletionTimestamp``, then the real delete) lowers the count only once.

Concurrency: pykcm runs controllers on one asyncio event loop, and every
method here is synchronous with no ``await`` inside, so no method can
interleave with another. There are no locks; the classes are **not** safe to
share between OS threads.

Time comes from an injectable ``clock`` (seconds, monotonic; default
:data:`~pykcm.api.clock.REAL_CLOCK`.monotonic) so tests can expire expectations without sleeping.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from pykcm.api.clock import REAL_CLOCK

__all__ = [
    "EXPECTATIONS_TIMEOUT",
    "Clock",
    "ControlleeExpectations",
    "ControllerExpectations",
    "ControllerExpectationsInterface",
    "UIDTrackingControllerExpectations",
]

logger = logging.getLogger(__name__)

#: How long expectations may stay unfulfilled before a sync ignores them
#: (kube-controller-manager's ``ExpectationsTimeout``: 5 minutes), in seconds.
EXPECTATIONS_TIMEOUT: float = 5 * 60.0

#: A source of monotonic time in seconds.
Clock = Callable[[], float]


class ControlleeExpectations:
    """The pending creations and deletions of one controller, and when they were set."""

    __slots__ = ("_add", "_del", "key", "timestamp")

    def __init__(self, key: str, add: int, del_: int, timestamp: float) -> None:
        self.key = key
        self._add = add
        self._del = del_
        #: Clock reading at the moment the expectations were set.
        self.timestamp = timestamp

    def add(self, add: int, del_: int) -> None:
        """Increment the add and del counters (pass negatives to decrement)."""
        self._add += add
        self._del += del_

    def fulfilled(self) -> bool:
        """True once every expected creation and deletion has been observed."""
        return self._add <= 0 and self._del <= 0

    def get_expectations(self) -> tuple[int, int]:
        """The outstanding ``(add, del)`` counts; negative when more was observed."""
        return self._add, self._del

    def is_expired(self, now: float, timeout: float = EXPECTATIONS_TIMEOUT) -> bool:
        """True when strictly more than ``timeout`` seconds have passed since they were set."""
        return now - self.timestamp > timeout

    def __repr__(self) -> str:
        return (f"ControlleeExpectations(key={self.key!r}, add={self._add}, "
                f"del={self._del}, timestamp={self.timestamp})")


class ControllerExpectationsInterface(Protocol):
    """What a controller needs from an expectations store (Go's interface of the same name)."""

    def get_expectations(self, controller_key: str) -> ControlleeExpectations | None: ...
    def satisfied_expectations(self, controller_key: str) -> bool: ...
    def delete_expectations(self, controller_key: str) -> None: ...
    def set_expectations(self, controller_key: str, add: int, del_: int) -> None: ...
    def expect_creations(self, controller_key: str, adds: int) -> None: ...
    def expect_deletions(self, controller_key: str, dels: int) -> None: ...
    def creation_observed(self, controller_key: str) -> None: ...
    def deletion_observed(self, controller_key: str) -> None: ...
    def raise_expectations(self, controller_key: str, add: int, del_: int) -> None: ...
    def lower_expectations(self, controller_key: str, add: int, del_: int) -> None: ...


class ControllerExpectations:
    """Maps controller keys to what they expect to observe before their next sync acts.

    Keys are the controller's cache key (``namespace/name``). One instance must
    not be shared by controllers of different kinds: their keys could clash.
    Not thread safe (see the module docstring).
    """

    def __init__(self, clock: Clock = REAL_CLOCK.monotonic, *,
                 timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock = clock
        self._timeout = timeout
        self._store: dict[str, ControlleeExpectations] = {}

    def get_expectations(self, controller_key: str) -> ControlleeExpectations | None:
        """The recorded expectations of ``controller_key``, or None if there are none."""
        return self._store.get(controller_key)

    def satisfied_expectations(self, controller_key: str) -> bool:
        """True if the controller may act: nothing recorded, all observed, or expired."""
        exp = self._store.get(controller_key)
        if exp is None:
            # A new controller, or one whose expectations were deleted.
            logger.debug("controller %s has no expectations recorded", controller_key)
            return True
        if exp.fulfilled():
            return True
        if exp.is_expired(self._clock(), self._timeout):
            logger.debug("controller expectations expired: %r", exp)
            return True
        logger.debug("controller still waiting on expectations: %r", exp)
        return False

    def delete_expectations(self, controller_key: str) -> None:
        """Forget the expectations of ``controller_key`` (e.g. the controller was deleted)."""
        self._store.pop(controller_key, None)

    def set_expectations(self, controller_key: str, add: int, del_: int) -> None:
        """Record new expectations, replacing existing ones, and start their timeout."""
        exp = ControlleeExpectations(controller_key, add, del_, self._clock())
        logger.debug("setting expectations %r", exp)
        self._store[controller_key] = exp

    def expect_creations(self, controller_key: str, adds: int) -> None:
        """``set_expectations(controller_key, adds, 0)``."""
        self.set_expectations(controller_key, adds, 0)

    def expect_deletions(self, controller_key: str, dels: int) -> None:
        """``set_expectations(controller_key, 0, dels)``."""
        self.set_expectations(controller_key, 0, dels)

    def lower_expectations(self, controller_key: str, add: int, del_: int) -> None:
        """Decrement the counts of an existing record; no-op for an unknown key."""
        exp = self._store.get(controller_key)
        if exp is not None:
            exp.add(-add, -del_)
            logger.debug("lowered expectations %r", exp)

    def raise_expectations(self, controller_key: str, add: int, del_: int) -> None:
        """Increment the counts of an existing record; no-op for an unknown key.

        The timestamp is left alone: raising does not extend the timeout.
        """
        exp = self._store.get(controller_key)
        if exp is not None:
            exp.add(add, del_)
            logger.debug("raised expectations %r", exp)

    def creation_observed(self, controller_key: str) -> None:
        """One expected creation was seen (or will never be: a failed create)."""
        self.lower_expectations(controller_key, 1, 0)

    def deletion_observed(self, controller_key: str) -> None:
        """One expected deletion was seen (or will never be: a failed delete)."""
        self.lower_expectations(controller_key, 0, 1)


class UIDTrackingControllerExpectations:
    """Expectations that also remember which objects are expected to be deleted.

    Needed to handle graceful deletion safely: a controller treats the update
    that sets ``deletionTimestamp`` as a delete, and later sees the real
    delete of the same object; remembering the expected keys (UIDs or
    ``namespace/name``) makes each one lower the deletion count only once, and
    ignores deletions nobody expected.

    Every method of the wrapped :class:`ControllerExpectationsInterface` is
    available; ``expect_deletions``, ``deletion_observed`` and
    ``delete_expectations`` take the tracked keys into account.
    Not thread safe (see the module docstring).
    """

    def __init__(self, expectations: ControllerExpectationsInterface | None = None, *,
                 clock: Clock = REAL_CLOCK.monotonic) -> None:
        """Wrap ``expectations`` (a new :class:`ControllerExpectations` using ``clock``
        when None)."""
        self.expectations: ControllerExpectationsInterface = (
            expectations if expectations is not None else ControllerExpectations(clock))
        self._uids: dict[str, set[str]] = {}

    # -- UID tracking ------------------------------------------------------------------

    def get_uids(self, controller_key: str) -> frozenset[str]:
        """The keys still expected to be deleted for ``controller_key`` (empty if none)."""
        return frozenset(self._uids.get(controller_key, ()))

    def expect_deletions(self, rc_key: str, deleted_keys: Iterable[str]) -> None:
        """Expect the deletion of each distinct key in ``deleted_keys``, replacing
        what was expected before."""
        existing = self._uids.get(rc_key)
        if existing:
            logger.error("clobbering existing delete keys of %s: %s", rc_key, sorted(existing))
        expected = set(deleted_keys)
        logger.debug("controller %s waiting on deletions for: %s", rc_key, sorted(expected))
        self._uids[rc_key] = expected
        self.expectations.expect_deletions(rc_key, len(expected))

    def deletion_observed(self, rc_key: str, delete_key: str) -> None:
        """Record the deletion of ``delete_key``; counts only if expected and not seen yet."""
        uids = self._uids.get(rc_key)
        if uids is not None and delete_key in uids:
            logger.debug("controller %s received delete for %s", rc_key, delete_key)
            self.expectations.deletion_observed(rc_key)
            uids.discard(delete_key)

    def delete_expectations(self, rc_key: str) -> None:
        """Forget both the counts and the tracked keys of ``rc_key``."""
        self.expectations.delete_expectations(rc_key)
        self._uids.pop(rc_key, None)

    # -- delegated to the wrapped expectations ----------------------------------------

    def get_expectations(self, controller_key: str) -> ControlleeExpectations | None:
        """See :meth:`ControllerExpectations.get_expectations`."""
        return self.expectations.get_expectations(controller_key)

    def satisfied_expectations(self, controller_key: str) -> bool:
        """See :meth:`ControllerExpectations.satisfied_expectations`."""
        return self.expectations.satisfied_expectations(controller_key)

    def set_expectations(self, controller_key: str, add: int, del_: int) -> None:
        """See :meth:`ControllerExpectations.set_expectations` (tracked keys are kept)."""
        self.expectations.set_expectations(controller_key, add, del_)

    def expect_creations(self, controller_key: str, adds: int) -> None:
        """See :meth:`ControllerExpectations.expect_creations`."""
        self.expectations.expect_creations(controller_key, adds)

    def creation_observed(self, controller_key: str) -> None:
        """See :meth:`ControllerExpectations.creation_observed`."""
        self.expectations.creation_observed(controller_key)

    def raise_expectations(self, controller_key: str, add: int, del_: int) -> None:
        """See :meth:`ControllerExpectations.raise_expectations`."""
        self.expectations.raise_expectations(controller_key, add, del_)

    def lower_expectations(self, controller_key: str, add: int, del_: int) -> None:
        """See :meth:`ControllerExpectations.lower_expectations`."""
        self.expectations.lower_expectations(controller_key, add, del_)
