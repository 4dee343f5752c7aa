"""Indexed Jobs: interval sets ("1,3-5"), completion indexes, pending indexes, duplicates."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.controllers.job.indexed_job_utils import (
    COMPLETION_INDEX_ANNOTATION,
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    Interval,
    OrderedIntervals,
    add_completion_index_env_variables,
    add_index_failure_count_annotation,
    append_duplicated_index_pods_for_removal,
    calculate_failed_indexes,
    calculate_succeeded_indexes,
    first_pending_indexes,
    get_completion_index,
    is_index_failed,
    parse_indexes_from_string,
    pod_generate_name_with_index,
)
from pykcm.controllers.job.job_controller import active_pods_for_removal

FIN = "batch.kubernetes.io/job-tracking"


def pod(name: str, index: int | str | None, phase: str = "Running", *, finalizer: bool = True,
        deleting: bool = False, failures: int | None = None,
        node: str = "n1", ready: bool = False) -> dict[str, Any]:
    ann: dict[str, str] = {}
    if index is not None:
        ann[COMPLETION_INDEX_ANNOTATION] = str(index)
    if failures is not None:
        ann[INDEX_FAILURE_COUNT_ANNOTATION] = str(failures)
    meta: dict[str, Any] = {"name": name, "uid": "uid-" + name, "annotations": ann,
                            "finalizers": [FIN] if finalizer else [],
                            "creationTimestamp": "2024-01-01T00:00:00Z"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:01:00Z"
    status: dict[str, Any] = {"phase": phase}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True",
                                 "lastTransitionTime": "2024-01-01T00:00:10Z"}]
    return {"metadata": meta, "spec": {"nodeName": node}, "status": status}


def indexed_job(completions: int = 10, **spec: Any) -> dict[str, Any]:
    s = {"completionMode": "Indexed", "completions": completions}
    s.update(spec)
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": s, "status": {}}


@pytest.mark.parametrize(("text", "completions", "want"), [
    ("", 10, ""),
    ("1,3-5", 10, "1,3-5"),
    ("0,1,2", 10, "0-2"),
    ("1,2", 10, "1,2"),
    ("3-5,6,7", 10, "3-7"),
    ("2,8-12", 10, "2,8,9"),
    ("2,12", 10, "2"),
    ("a,3,4-x,5", 10, "3,5"),
    ("+1,-", 10, "1"),
])
def test_parse_and_print_intervals(text: str, completions: int, want: str) -> None:
    assert str(parse_indexes_from_string(text, completions)) == want


def test_total_has_and_merge() -> None:
    iv = parse_indexes_from_string("1,3-5,9", 10)
    assert iv.total() == 5
    assert [iv.has(i) for i in range(11)] == [False, True, False, True, True, True, False,
                                              False, False, True, False]
    merged = iv.with_ordered_indexes([0, 2, 6, 9])
    assert str(merged) == "0-6,9"
    assert merged.intervals == [Interval(0, 6), Interval(9, 9)]
    assert str(iv.merge(parse_indexes_from_string("7,8", 10))) == "1,3-5,7-9"
    assert OrderedIntervals().total() == 0 and not OrderedIntervals().has(0)


@pytest.mark.parametrize(("value", "want"), [
    ("3", 3), ("0", 0), ("-1", -1), ("x", -1), ("", -1), ("+4", 4), (" 4", -1)])
def test_completion_index_annotation(value: str, want: int) -> None:
    assert get_completion_index({COMPLETION_INDEX_ANNOTATION: value}) == want
    assert get_completion_index(None) == -1
    assert get_completion_index({}) == -1


def test_succeeded_indexes_from_status_and_tracked_pods() -> None:
    job = indexed_job(5)
    job["status"]["completedIndexes"] = "0,1"
    pods = [pod("a", 3, "Succeeded"), pod("b", 4, "Succeeded", finalizer=False),
            pod("c", 7, "Succeeded"), pod("d", 2, "Failed"), pod("e", None, "Succeeded")]
    prev, cur = calculate_succeeded_indexes(job, pods)
    assert str(prev) == "0,1"
    # Without its finalizer "b" is counted already (or never will be); 7 is out of range.
    assert str(cur) == "0,1,3"


def test_failed_indexes_with_backoff_limit_per_index() -> None:
    job = indexed_job(5, backoffLimitPerIndex=1)
    job["status"]["failedIndexes"] = "0"
    pods = [pod("a", 1, "Failed", failures=0), pod("b", 2, "Failed", failures=1),
            pod("c", 3, "Failed", failures=2, finalizer=False)]
    assert not is_index_failed(job, pods[0])
    assert is_index_failed(job, pods[1])
    assert str(calculate_failed_indexes(job, pods)) == "0,2"
    job["spec"]["podFailurePolicy"] = {"rules": [
        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [5]}}]}
    p = pod("d", 1, "Failed", failures=0)
    p["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {"exitCode": 5}}}]
    assert is_index_failed(job, p)


def test_first_pending_indexes() -> None:
    job = indexed_job(8)
    succeeded = parse_indexes_from_string("0,3", 8)
    failed = parse_indexes_from_string("5", 8)
    active = [pod("a", 1), pod("b", 6)]
    assert first_pending_indexes(job, active, active, succeeded, failed, 10, 8) == [2, 4, 7]
    assert first_pending_indexes(job, active, active, succeeded, None, 2, 8) == [2, 4]
    assert first_pending_indexes(job, active, active, succeeded, None, 0, 8) == []


def test_first_pending_indexes_skips_terminating_when_only_failed_are_replaced() -> None:
    job = indexed_job(4, podReplacementPolicy="Failed")
    terminating = pod("t", 0, deleting=True)
    assert first_pending_indexes(job, [], [terminating], OrderedIntervals(), None, 4, 4) == [
        1, 2, 3]
    job["spec"]["podReplacementPolicy"] = "TerminatingOrFailed"
    assert first_pending_indexes(job, [], [terminating], OrderedIntervals(), None, 4, 4) == [
        0, 1, 2, 3]


def test_duplicated_and_invalid_indexes_are_removed() -> None:
    pods = [pod("x", None), pod("a1", 1), pod("a2", 1, ready=True), pod("b", 2),
            pod("big", 9), pod("c", 3)]
    rm, left = append_duplicated_index_pods_for_removal(
        [], [], pods, 5, lambda ps: sorted(ps, key=lambda p: p["metadata"]["name"]))
    assert sorted(p["metadata"]["name"] for p in rm) == ["a1", "big", "x"]
    assert sorted(p["metadata"]["name"] for p in left) == ["a2", "b", "c"]


def test_active_pods_for_removal_prefers_duplicates_then_early_stage() -> None:
    job = indexed_job(5)
    pods = [pod("a1", 1, ready=True), pod("a2", 1), pod("b", 2, ready=True),
            pod("c", 3, node="")]
    # The not-ready duplicate goes first; then the unscheduled pod.
    assert [p["metadata"]["name"] for p in active_pods_for_removal(job, pods, 0)] == ["a2"]
    assert [p["metadata"]["name"] for p in active_pods_for_removal(job, pods, 2)] == ["a2", "c"]
    nonindexed = {"spec": {"completions": 5}}
    assert [p["metadata"]["name"] for p in active_pods_for_removal(nonindexed, pods, 1)] == [
        "c"]


def test_env_variable_and_generate_name() -> None:
    tmpl: dict[str, Any] = {"spec": {
        "initContainers": [{"name": "i"}],
        "containers": [{"name": "a"}, {"name": "b", "env": [
            {"name": "JOB_COMPLETION_INDEX", "value": "mine"}]}]}}
    add_completion_index_env_variables(tmpl)
    assert tmpl["spec"]["initContainers"][0]["env"] == [{
        "name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}]
    assert len(tmpl["spec"]["containers"][0]["env"]) == 1
    assert tmpl["spec"]["containers"][1]["env"] == [{"name": "JOB_COMPLETION_INDEX",
                                                     "value": "mine"}]
    assert pod_generate_name_with_index("job", 7) == "job-7-"
    long = "j" * 60
    name = pod_generate_name_with_index(long, 12)
    assert len(name) == 58 and name.endswith("-12-")


def test_index_failure_count_annotation_of_replacement() -> None:
    job = indexed_job(3, backoffLimitPerIndex=3)
    tmpl: dict[str, Any] = {"metadata": {"annotations": {}}}
    add_index_failure_count_annotation(tmpl, job, None)
    assert tmpl["metadata"]["annotations"] == {INDEX_FAILURE_COUNT_ANNOTATION: "0"}
    failed = pod("f", 1, "Failed", failures=1)
    add_index_failure_count_annotation(tmpl, job, failed)
    assert tmpl["metadata"]["annotations"][INDEX_FAILURE_COUNT_ANNOTATION] == "2"
    # An ignored failure counts apart.
    job["spec"]["podFailurePolicy"] = {"rules": [{"action": "Ignore", "onExitCodes": {
        "operator": "In", "values": [1]}}]}
    failed["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {
        "exitCode": 1}}}]
    tmpl = {"metadata": {"annotations": {}}}
    add_index_failure_count_annotation(tmpl, job, failed)
    assert tmpl["metadata"]["annotations"] == {INDEX_FAILURE_COUNT_ANNOTATION: "1",
                                               INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: "1"}
