"""Job tracking with finalizers (upstream ``tracking_utils.go`` and the uncounted-pods
helpers of ``job_controller.go``).

Every pod a Job creates carries the finalizer ``batch.kubernetes.io/job-tracking``,
so a finished pod cannot disappear before the Job has counted it. Counting
is a two-step protocol that survives a controller crash at any point:

1. the UIDs of newly finished pods are written to the Job's
   ``status.uncountedTerminatedPods`` (``succeeded`` / ``failed`` lists);
2. the finalizers are removed from those pods (a strategic merge patch);
3. UIDs whose pod no longer has the finalizer move from the uncounted
   lists into the ``succeeded`` / ``failed`` counters
   (:func:`clean_uncounted_pods_without_finalizers`).

:class:`UIDTrackingExpectations` remembers the pods whose finalizer
removal was sent but not yet seen by the informer, so a sync running
before the pod update arrives does not count them twice.

The status dicts passed here are the caller's own copy and are edited in
place; pods are read only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "JOB_TRACKING_FINALIZER",
    "UIDTrackingExpectations",
    "UncountedTerminatedPods",
    "clean_uncounted_pods_without_finalizers",
    "filter_in_uncounted_uids",
    "has_job_tracking_finalizer",
    "is_finished_pod_with_tracking_finalizer",
    "remove_tracking_finalizer_patch",
]

log = logging.getLogger("pykcm.controllers.job")

JOB_TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"


def has_job_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    """Whether the pod still carries the job-tracking finalizer."""
    return JOB_TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def is_finished_pod_with_tracking_finalizer(pod: Mapping[str, Any] | None) -> bool:
    """A Succeeded or Failed pod the Job has not counted yet (it keeps the finalizer)."""
    if pod is None:
        return False
    return ((pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            and has_job_tracking_finalizer(pod))


def remove_tracking_finalizer_patch(pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The strategic merge patch removing the finalizer, or None if the pod has none.

    ``$deleteFromPrimitiveList`` removes just this value, leaving other
    finalizers alone even if they changed since the cache saw the pod.
    """
    if not has_job_tracking_finalizer(pod):
        return None
    return {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}


class UncountedTerminatedPods:
    """The UIDs in a Job's status.uncountedTerminatedPods, as sets (uncountedTerminatedPods)."""

    __slots__ = ("failed", "succeeded")

    def __init__(self, uncounted: Mapping[str, Any] | None = None) -> None:
        u = uncounted or {}
        self.succeeded: set[str] = {str(x) for x in u.get("succeeded") or ()}
        self.failed: set[str] = {str(x) for x in u.get("failed") or ()}


def filter_in_uncounted_uids(uncounted: Iterable[str], include: set[str]) -> list[str]:
    """The UIDs of ``uncounted`` that are in ``include``, order kept."""
    return [uid for uid in uncounted if uid in include]


def clean_uncounted_pods_without_finalizers(status: dict[str, Any],
                                            uids_with_finalizer: set[str]) -> bool:
    """Count the uncounted pods whose finalizer is gone; return whether status changed.

    Their UIDs leave ``status.uncountedTerminatedPods`` and the
    ``succeeded`` / ``failed`` counters grow by as many.
    """
    updated = False
    uncounted = status.setdefault("uncountedTerminatedPods", {})
    for field in ("succeeded", "failed"):
        old = list(uncounted.get(field) or ())
        new = filter_in_uncounted_uids(old, uids_with_finalizer)
        if len(new) != len(old):
            updated = True
            status[field] = int(status.get(field) or 0) + len(old) - len(new)
            if new:
                uncounted[field] = new
            else:
                uncounted.pop(field, None)
    return updated


class UIDTrackingExpectations:
    """Per Job key, the pod UIDs whose tracking-finalizer removal is not yet observed.

    Upstream's uidTrackingExpectations (a set per key, no counts, no
    expiry): added before the patches are sent, removed as pod updates
    without the finalizer (or pod deletions) arrive.
    """

    def __init__(self) -> None:
        self._store: dict[str, set[str]] = {}

    def get_expected_uids(self, key: str) -> set[str]:
        """A copy of the UIDs still expected for ``key`` (empty when none)."""
        return set(self._store.get(key, ()))

    def expect_finalizers_removed(self, key: str, uids: Iterable[str]) -> None:
        """Expect the finalizer of these pods to be removed."""
        uids = list(uids)
        log.debug("Expecting tracking finalizers removed: %s %s", key, uids)
        self._store.setdefault(key, set()).update(uids)

    def finalizer_removal_observed(self, key: str, uid: str) -> None:
        """The pod ``uid`` was seen without its finalizer (or deleted)."""
        s = self._store.get(key)
        if s is not None and uid in s:
            log.debug("Observed tracking finalizer removed: %s %s", key, uid)
            s.discard(uid)

    def delete_expectations(self, key: str) -> None:
        """Forget ``key`` (the Job is gone)."""
        self._store.pop(key, None)
