"""Indexed Jobs: completion indexes and their interval sets (upstream ``indexed_job_utils.go``).

An Indexed Job (``spec.completionMode: Indexed``) runs one pod per index
``0 .. completions-1``. The index travels on each pod as the annotation and
label ``batch.kubernetes.io/job-completion-index``, the ``JOB_COMPLETION_INDEX``
environment variable (a fieldRef to that label), and the hostname
``<job>-<index>``.

The Job's status keeps the finished indexes compressed as intervals, in the
string form ``"1,3-5,7"`` (``completedIndexes``, ``failedIndexes``);
:class:`OrderedIntervals` is that set: parsed from the string, merged with
newly finished indexes, printed back. Other helpers choose which indexes
still need a pod, which duplicated pods to remove, and, with
``backoffLimitPerIndex``, carry the per-index failure count from a failed pod
to its replacement (annotation ``batch.kubernetes.io/job-index-failure-count``).

Pure functions over wire-form dicts; templates passed to the ``add_*``
helpers are edited in place (the caller's own copy).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pykcm.controller.active_pods import is_pod_terminating
from pykcm.controllers.job.backoff import get_finished_time, get_remaining_time_for_failures_count
from pykcm.controllers.job.pod_failure_policy import ACTION_FAIL_INDEX, match_pod_failure_policy
from pykcm.controllers.job.tracking_utils import has_job_tracking_finalizer
from pykcm.controllers.job.utils import is_pod_failed, only_replace_failed_pods

__all__ = [
    "COMPLETION_INDEX_ANNOTATION",
    "COMPLETION_INDEX_ENV_NAME",
    "INDEX_FAILURE_COUNT_ANNOTATION",
    "INDEX_IGNORED_FAILURE_COUNT_ANNOTATION",
    "MAX_GENERATED_NAME_LENGTH",
    "UNKNOWN_COMPLETION_INDEX",
    "Interval",
    "OrderedIntervals",
    "add_completion_index_annotation",
    "add_completion_index_env_variables",
    "add_completion_index_label",
    "add_index_failure_count_annotation",
    "append_duplicated_index_pods_for_removal",
    "calculate_failed_indexes",
    "calculate_succeeded_indexes",
    "first_pending_indexes",
    "get_completion_index",
    "get_index_absolute_failure_count",
    "get_index_failure_count",
    "get_indexes",
    "get_new_index_failure_counts",
    "get_pods_with_delayed_deletion_per_index",
    "get_remaining_time_per_index",
    "has_backoff_limit_per_index",
    "is_index_failed",
    "is_indexed_job",
    "parse_indexes_from_string",
    "pod_generate_name_with_index",
    "sort_by_completion_index",
]

log = logging.getLogger("pykcm.controllers.job")

COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: Final = \
    "batch.kubernetes.io/job-index-ignored-failure-count"
COMPLETION_INDEX_ENV_NAME: Final = "JOB_COMPLETION_INDEX"
UNKNOWN_COMPLETION_INDEX: Final = -1
#: apiserver names.MaxGeneratedNameLength: 63 minus the 5 random characters.
MAX_GENERATED_NAME_LENGTH: Final = 58
_MAX_INT32: Final = 2**31 - 1
_GO_INT = re.compile(r"[+-]?[0-9]+")


def _spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    spec: Mapping[str, Any] = job.get("spec") or {}
    return spec


def _completions(job: Mapping[str, Any]) -> int:
    return int(_spec(job).get("completions") or 0)


def _annotations(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    ann: Mapping[str, Any] = (pod.get("metadata") or {}).get("annotations") or {}
    return ann


def is_indexed_job(job: Mapping[str, Any]) -> bool:
    """spec.completionMode is Indexed."""
    return _spec(job).get("completionMode") == "Indexed"


def has_backoff_limit_per_index(job: Mapping[str, Any]) -> bool:
    """spec.backoffLimitPerIndex is set (JobBackoffLimitPerIndex is GA)."""
    return _spec(job).get("backoffLimitPerIndex") is not None


@dataclass(frozen=True, slots=True)
class Interval:
    """The indexes ``first .. last``, both included."""

    first: int
    last: int


class OrderedIntervals:
    """A set of indexes as sorted, disjoint, non-adjacent intervals (orderedIntervals)."""

    __slots__ = ("intervals",)

    def __init__(self, intervals: Iterable[Interval] = ()) -> None:
        self.intervals: list[Interval] = list(intervals)

    def with_ordered_indexes(self, new_indexes: Iterable[int]) -> OrderedIntervals:
        """A new set holding these intervals and ``new_indexes`` (given in increasing order)."""
        return self.merge(OrderedIntervals(Interval(i, i) for i in new_indexes))

    def merge(self, other: OrderedIntervals) -> OrderedIntervals:
        """The union with ``other``, adjacent intervals joined."""
        result: list[list[int]] = []

        def append(iv: Interval) -> None:
            if not result or iv.first > result[-1][1] + 1:
                result.append([iv.first, iv.last])
            elif result[-1][1] < iv.last:
                result[-1][1] = iv.last

        a, b = self.intervals, other.intervals
        i = j = 0
        while i < len(a) and j < len(b):
            if a[i].first < b[j].first:
                append(a[i])
                i += 1
            else:
                append(b[j])
                j += 1
        for iv in a[i:]:
            append(iv)
        for iv in b[j:]:
            append(iv)
        return OrderedIntervals(Interval(f, last) for f, last in result)

    def total(self) -> int:
        """How many indexes the set holds."""
        return sum(iv.last - iv.first + 1 for iv in self.intervals)

    def has(self, ix: int) -> bool:
        """Whether ``ix`` is in the set (binary search)."""
        lo, hi = 0, len(self.intervals)
        while hi > lo:
            mid = lo + (hi - lo) // 2
            if self.intervals[mid].last >= ix:
                hi = mid
            else:
                lo = mid + 1
        return hi != len(self.intervals) and self.intervals[hi].first <= ix

    def __len__(self) -> int:
        return len(self.intervals)

    def __iter__(self) -> Any:
        return iter(self.intervals)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrderedIntervals) and self.intervals == other.intervals

    def __hash__(self) -> int:
        return hash(tuple(self.intervals))

    def __str__(self) -> str:
        # Two-element intervals print as "a,b", longer ones as "a-b" (upstream's form).
        parts: list[str] = []
        for iv in self.intervals:
            if iv.last == iv.first:
                parts.append(str(iv.first))
            elif iv.last == iv.first + 1:
                parts.append(f"{iv.first},{iv.last}")
            else:
                parts.append(f"{iv.first}-{iv.last}")
        return ",".join(parts)

    def __repr__(self) -> str:
        return f"OrderedIntervals({str(self)!r})"


def _atoi(s: str) -> int | None:
    """Go's strconv.Atoi: optional sign and decimal digits, nothing else."""
    return int(s) if _GO_INT.fullmatch(s) else None


def parse_indexes_from_string(indexes: str, completions: int) -> OrderedIntervals:
    """Parse ``"1,3-5"``; indexes ``>= completions`` are dropped (parseIndexesFromString).

    A corrupted interval is skipped with a log line; parsing stops at the
    first interval starting at or beyond ``completions``.
    """
    result: list[list[int]] = []
    if not indexes:
        return OrderedIntervals()
    for interval_str in indexes.split(","):
        limits = interval_str.split("-")
        first = _atoi(limits[0])
        if first is None:
            log.info("Corrupted indexes interval, ignoring: %r", interval_str)
            continue
        if first >= completions:
            break
        if len(limits) > 1:
            last = _atoi(limits[1])
            if last is None:
                log.info("Corrupted indexes interval, ignoring: %r", interval_str)
                continue
            last = min(last, completions - 1)
        else:
            last = first
        if result and result[-1][1] == first - 1:
            result[-1][1] = last
        else:
            result.append([first, last])
    return OrderedIntervals(Interval(f, last) for f, last in result)


def get_completion_index(annotations: Mapping[str, Any] | None) -> int:
    """The completion index annotation as an int; -1 when absent, invalid or negative."""
    if not annotations:
        return UNKNOWN_COMPLETION_INDEX
    v = annotations.get(COMPLETION_INDEX_ANNOTATION)
    if not isinstance(v, str):
        return UNKNOWN_COMPLETION_INDEX
    i = _atoi(v)
    if i is None or i < 0:
        return UNKNOWN_COMPLETION_INDEX
    return i


def pod_completion_index(pod: Mapping[str, Any]) -> int:
    """:func:`get_completion_index` of a pod's annotations."""
    return get_completion_index(_annotations(pod))


def sort_by_completion_index(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods sorted by completion index, unknown (-1) first; stable (byCompletionIndex)."""
    return sorted(pods, key=pod_completion_index)


def calculate_succeeded_indexes(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
                                ) -> tuple[OrderedIntervals, OrderedIntervals]:
    """``(previous, current)`` succeeded indexes (calculateSucceededIndexes).

    Previous: parsed from status.completedIndexes. Current: those plus the
    valid indexes of succeeded pods still carrying the tracking finalizer
    (not counted yet).
    """
    completions = _completions(job)
    prev = parse_indexes_from_string(str((job.get("status") or {}).get("completedIndexes")
                                         or ""), completions)
    new: set[int] = set()
    for p in pods:
        ix = pod_completion_index(p)
        if ((p.get("status") or {}).get("phase") == "Succeeded"
                and ix != UNKNOWN_COMPLETION_INDEX and ix < completions
                and has_job_tracking_finalizer(p)):
            new.add(ix)
    return prev, prev.with_ordered_indexes(sorted(new))


def calculate_failed_indexes(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
                             ) -> OrderedIntervals:
    """status.failedIndexes plus the indexes newly failed by their pods (calculateFailedIndexes)."""
    completions = _completions(job)
    failed_str = (job.get("status") or {}).get("failedIndexes")
    prev = (parse_indexes_from_string(str(failed_str), completions) if failed_str is not None
            else OrderedIntervals())
    new: set[int] = set()
    for p in pods:
        ix = pod_completion_index(p)
        if (ix != UNKNOWN_COMPLETION_INDEX and ix < completions and has_job_tracking_finalizer(p)
                and is_index_failed(job, p)):
            new.add(ix)
    return prev.with_ordered_indexes(sorted(new))


def is_index_failed(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether ``pod``'s failure fails its index (isIndexFailed).

    A FailIndex rule fails it at once; otherwise a counted failure fails it
    once the index already failed backoffLimitPerIndex times.
    """
    counted = False
    if is_pod_failed(pod, job):
        policy = _spec(job).get("podFailurePolicy")
        if policy is not None:
            _, count_failed, action = match_pod_failure_policy(policy, pod)
            if action == ACTION_FAIL_INDEX:
                return True
            counted = count_failed
        else:
            counted = True
    limit = int(_spec(job).get("backoffLimitPerIndex") or 0)
    return counted and get_index_failure_count(pod) >= limit


def get_indexes(pods: Iterable[Mapping[str, Any]]) -> set[int]:
    """The known completion indexes of ``pods``."""
    return {ix for ix in map(pod_completion_index, pods) if ix != UNKNOWN_COMPLETION_INDEX}


def first_pending_indexes(job: Mapping[str, Any], active_pods: Sequence[Mapping[str, Any]],
                          all_pods: Sequence[Mapping[str, Any]],
                          succeeded_indexes: OrderedIntervals,
                          failed_indexes: OrderedIntervals | None, count: int,
                          completions: int) -> list[int]:
    """The first ``count`` indexes below ``completions`` that need a pod (firstPendingIndexes).

    An index is taken when it succeeded, failed, has an active pod, or - when
    only failed pods are replaced - has a pod still terminating.
    """
    if count == 0:
        return []
    non_pending = succeeded_indexes.with_ordered_indexes(sorted(get_indexes(active_pods)))
    if only_replace_failed_pods(job):
        terminating = get_indexes(p for p in all_pods if is_pod_terminating(p))
        non_pending = non_pending.with_ordered_indexes(sorted(terminating))
    if failed_indexes is not None:
        non_pending = non_pending.merge(failed_indexes)
    result: list[int] = []
    candidate = 0
    for iv in non_pending:
        while candidate < completions and len(result) < count and candidate < iv.first:
            result.append(candidate)
            candidate += 1
        candidate = max(candidate, iv.last + 1)
    while candidate < completions and len(result) < count:
        result.append(candidate)
        candidate += 1
    return result


SortPods = Callable[[list[Mapping[str, Any]]], list[Mapping[str, Any]]]


def append_duplicated_index_pods_for_removal(
        rm: list[Mapping[str, Any]], left: list[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]], completions: int, sort_active: SortPods,
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """Split active ``pods`` into removals and keepers (appendDuplicatedIndexPodsForRemoval).

    Pods without an index or with one out of range go to ``rm``; of pods
    sharing an index, all but the best-ranked one (``sort_active`` orders
    active pods, the ones to delete first) go to ``rm``; the rest to ``left``.
    """
    ordered = sort_by_completion_index(pods)
    groups: dict[int, list[Mapping[str, Any]]] = {}
    order: list[int] = []
    for i, p in enumerate(ordered):
        ix = pod_completion_index(p)
        if ix >= completions:
            rm.extend(ordered[i:])
            break
        if ix not in groups:
            groups[ix] = []
            order.append(ix)
        groups[ix].append(p)
    for ix in order:
        same = groups[ix]
        if ix == UNKNOWN_COMPLETION_INDEX:
            rm.extend(same)
        elif len(same) == 1:
            left.append(same[0])
        else:
            ranked = sort_active(list(same))
            rm.extend(ranked[:-1])
            left.append(ranked[-1])
    return rm, left


def _parse_int32(value: Any) -> int:
    if not isinstance(value, str):
        return 0
    v = _atoi(value)
    if v is None:
        log.error("Failed to parse the value %r", value)
        return 0
    if v < 0 or v > _MAX_INT32:
        log.info("The value is invalid: %d", v)
        return 0
    return v


def get_index_failure_count(pod: Mapping[str, Any]) -> int:
    """The index-failure-count annotation; 0 when absent or invalid."""
    return _parse_int32(_annotations(pod).get(INDEX_FAILURE_COUNT_ANNOTATION))


def get_index_ignored_failure_count(pod: Mapping[str, Any]) -> int:
    """The index-ignored-failure-count annotation; 0 when absent or invalid."""
    return _parse_int32(_annotations(pod).get(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION))


def get_index_absolute_failure_count(pod: Mapping[str, Any]) -> int:
    """Counted plus ignored failures of the pod's index before this pod."""
    return get_index_failure_count(pod) + get_index_ignored_failure_count(pod)


def get_pods_with_delayed_deletion_per_index(
        job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]],
        active_pods: Iterable[Mapping[str, Any]], succeeded_indexes: OrderedIntervals,
        failed_indexes: OrderedIntervals | None, expected_rm_finalizers: Iterable[str] = (),
) -> dict[int, Mapping[str, Any]]:
    """Per index, the failed pod whose deletion waits for its replacement.

    With backoffLimitPerIndex the replacement inherits the failure count
    from the last failed pod of its index, so that pod keeps its tracking
    finalizer until the replacement exists (getPodsWithDelayedDeletionPerIndex).
    Only pods still tracked (finalizer, not being removed) and of indexes
    with no success, failure or active pod are considered.
    """
    completions = _completions(job)
    active_indexes = get_indexes(active_pods)
    expected = set(expected_rm_finalizers)
    result: dict[int, Mapping[str, Any]] = {}
    for p in pods:
        uid = str((p.get("metadata") or {}).get("uid") or "")
        if not has_job_tracking_finalizer(p) or uid in expected:
            continue
        ix = pod_completion_index(p)
        if ix == UNKNOWN_COMPLETION_INDEX or ix >= completions or not is_pod_failed(p, job):
            continue
        if (succeeded_indexes.has(ix) or (failed_indexes is not None and failed_indexes.has(ix))
                or ix in active_indexes):
            continue
        last = result.get(ix)
        if last is None or (
                get_index_absolute_failure_count(last) <= get_index_absolute_failure_count(p)
                and not get_finished_time(p) < get_finished_time(last)):
            result[ix] = p
    return result


def get_new_index_failure_counts(job: Mapping[str, Any],
                                 pod_being_replaced: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(failure_count, ignored_failure_count)`` for the replacement of a failed pod."""
    if pod_being_replaced is None:
        return 0, 0
    failures = get_index_failure_count(pod_being_replaced)
    ignored = get_index_ignored_failure_count(pod_being_replaced)
    policy = _spec(job).get("podFailurePolicy")
    if policy is not None:
        _, count_failed, _ = match_pod_failure_policy(policy, pod_being_replaced)
        if count_failed:
            failures += 1
        else:
            ignored += 1
    else:
        failures += 1
    return failures, ignored


def add_index_failure_count_annotation(template: dict[str, Any], job: Mapping[str, Any],
                                       pod_being_replaced: Mapping[str, Any] | None) -> None:
    """Stamp the failure-count annotations on a pod template (addIndexFailureCountAnnotation)."""
    failures, ignored = get_new_index_failure_counts(job, pod_being_replaced)
    ann = template.setdefault("metadata", {}).setdefault("annotations", {})
    ann[INDEX_FAILURE_COUNT_ANNOTATION] = str(failures)
    if ignored > 0:
        ann[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)


def add_completion_index_env_variables(template: dict[str, Any]) -> None:
    """Give every container and init container JOB_COMPLETION_INDEX (unless it has one).

    The value is a fieldRef to the completion index label (PodIndexLabel is GA).
    """
    spec = template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            env = container.setdefault("env", [])
            if any(v.get("name") == COMPLETION_INDEX_ENV_NAME for v in env):
                continue
            env.append({"name": COMPLETION_INDEX_ENV_NAME, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"}}})


def add_completion_index_annotation(template: dict[str, Any], index: int) -> None:
    """Set the completion index annotation on a pod template."""
    meta = template.setdefault("metadata", {})
    if meta.get("annotations") is None:
        meta["annotations"] = {}
    meta["annotations"][COMPLETION_INDEX_ANNOTATION] = str(index)


def add_completion_index_label(template: dict[str, Any], index: int) -> None:
    """Set the completion index label on a pod template (same key as the annotation)."""
    meta = template.setdefault("metadata", {})
    if meta.get("labels") is None:
        meta["labels"] = {}
    meta["labels"][COMPLETION_INDEX_ANNOTATION] = str(index)


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """``<job>-<index>-``, the job name cut so the generated name stays a DNS label."""
    append = f"-{index}-"
    prefix = job_name + append
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[:MAX_GENERATED_NAME_LENGTH - len(append)] + append
    return prefix


def get_remaining_time_per_index(now: float, default_backoff: float, max_backoff: float,
                                 last_failed_pod: Mapping[str, Any] | None) -> float:
    """Seconds left before the index of ``last_failed_pod`` may get a new pod.

    The failure count is the pod's failure-count annotations (counted plus
    ignored) plus one for the pod itself, timed from its finish time
    (getRemainingTimePerIndex).
    """
    if last_failed_pod is None:
        return 0.0
    failures = get_index_absolute_failure_count(last_failed_pod) + 1
    return get_remaining_time_for_failures_count(now, default_backoff, max_backoff, failures,
                                                 get_finished_time(last_failed_pod))
