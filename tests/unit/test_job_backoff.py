"""Pod-failure backoff of the Job controller: delays, records, finish times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from pykcm.controllers.job.backoff import (
    DEFAULT_JOB_POD_FAILURE_BACKOFF,
    MAX_JOB_POD_FAILURE_BACKOFF,
    BackoffRecord,
    BackoffStore,
    get_finished_time,
    get_remaining_time_for_failures_count,
)
from pykcm.controllers.job.indexed_job_utils import (
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    get_remaining_time_per_index,
)

T0 = 1_700_000_000.0


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(finished: float | None = None, *, ready_false: float | None = None,
        deleted: float | None = None, grace: int = 0, created: float = T0 - 1000,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "creationTimestamp": ts(created),
                            "annotations": annotations or {}}
    status: dict[str, Any] = {}
    if finished is not None:
        status["containerStatuses"] = [
            {"name": "a", "state": {"terminated": {"exitCode": 1, "finishedAt": ts(finished - 5)}}},
            {"name": "b", "state": {"terminated": {"exitCode": 1, "finishedAt": ts(finished)}}},
        ]
    if ready_false is not None:
        status["conditions"] = [{"type": "Ready", "status": "False",
                                 "lastTransitionTime": ts(ready_false)}]
    if deleted is not None:
        meta["deletionTimestamp"] = ts(deleted)
        meta["deletionGracePeriodSeconds"] = grace
    return {"metadata": meta, "status": status}


def test_defaults_are_upstreams() -> None:
    assert DEFAULT_JOB_POD_FAILURE_BACKOFF == 10.0
    assert MAX_JOB_POD_FAILURE_BACKOFF == 600.0


@pytest.mark.parametrize(("failures", "delay"), [
    (0, 0.0), (1, 10.0), (2, 20.0), (3, 40.0), (4, 80.0), (5, 160.0), (6, 320.0), (7, 600.0),
    (20, 600.0),
])
def test_delay_doubles_from_10s_up_to_10_minutes(failures: int, delay: float) -> None:
    assert get_remaining_time_for_failures_count(T0, 10.0, 600.0, failures, T0) == delay


def test_remaining_time_counts_from_last_failure() -> None:
    assert get_remaining_time_for_failures_count(T0 + 15, 10.0, 600.0, 2, T0) == 5.0
    assert get_remaining_time_for_failures_count(T0 + 25, 10.0, 600.0, 2, T0) == 0.0
    assert get_remaining_time_for_failures_count(T0 + 20, 10.0, 600.0, 2, T0) == 0.0


def test_finished_time_sources_in_order() -> None:
    # Latest container finishedAt when every container terminated.
    assert get_finished_time(pod(T0, ready_false=T0 - 50)) == T0
    # A running container: the Ready=False transition.
    p = pod(T0, ready_false=T0 - 50)
    p["status"]["containerStatuses"][0]["state"] = {"running": {}}
    assert get_finished_time(p) == T0 - 50
    # Deletion timestamp minus the grace period.
    assert get_finished_time(pod(deleted=T0, grace=30)) == T0 - 30
    # Creation time, last.
    assert get_finished_time(pod(created=T0 - 7)) == T0 - 7


def with_sidecars(p: dict[str, Any], **finished: float | None) -> dict[str, Any]:
    """``p`` with restartable init containers (sidecars) named and finished as given (None:
    still running), plus a plain init container that finished long before."""
    p["spec"] = {"initContainers": [
        {"name": "setup"}, *({"name": n, "restartPolicy": "Always"} for n in finished)]}
    p["status"]["initContainerStatuses"] = [
        {"name": "setup", "state": {"terminated": {"exitCode": 0, "finishedAt": ts(T0 + 500)}}},
        *({"name": n, "state": {"running": {}} if t is None
           else {"terminated": {"exitCode": 0, "finishedAt": ts(t)}}}
          for n, t in finished.items())]
    return p


def test_finished_time_waits_for_sidecars() -> None:
    # Sidecars stop after the regular containers: the pod finished with the last of them
    # (a plain init container, even one that finished later, does not count).
    assert get_finished_time(with_sidecars(pod(T0), log=T0 + 3, proxy=T0 + 2)) == T0 + 3
    # A sidecar finished before the regular containers: theirs is the finish.
    assert get_finished_time(with_sidecars(pod(T0), log=T0 - 20)) == T0
    # A sidecar still running: not finished by the containers; Ready=False decides.
    assert get_finished_time(with_sidecars(pod(T0, ready_false=T0 - 50),
                                           log=None)) == T0 - 50
    # As upstream: a running regular container leaves the sidecars to decide.
    p = with_sidecars(pod(T0, ready_false=T0 - 50), log=T0 + 9)
    p["status"]["containerStatuses"][0]["state"] = {"running": {}}
    assert get_finished_time(p) == T0 + 9


def test_new_record_counts_failures_after_last_success() -> None:
    store = BackoffStore()
    r = store.new_backoff_record("ns/j", [], [pod(T0), pod(T0 + 10)])
    assert r == BackoffRecord("ns/j", 2, T0 + 10)
    # Not stored until the status carrying the pods was written.
    assert store.get("ns/j") is None
    store.update_backoff_record(r)
    r = store.new_backoff_record("ns/j", [], [pod(T0 + 20)])
    assert r == BackoffRecord("ns/j", 3, T0 + 20)
    # No new pods: the stored record.
    assert store.new_backoff_record("ns/j", [], []) == BackoffRecord("ns/j", 2, T0 + 10)


def test_success_resets_and_only_later_failures_count() -> None:
    store = BackoffStore()
    store.update_backoff_record(BackoffRecord("ns/j", 5, T0))
    assert store.new_backoff_record("ns/j", [pod(T0 + 5)], []) == BackoffRecord("ns/j", 0, None)
    r = store.new_backoff_record("ns/j", [pod(T0 + 5)],
                                 [pod(T0 + 1), pod(T0 + 7), pod(T0 + 9)])
    assert r == BackoffRecord("ns/j", 2, T0 + 9)


def test_record_remaining_time_and_removal() -> None:
    r = BackoffRecord("ns/j", 3, T0)
    assert r.get_remaining_time(T0 + 10) == 30.0
    assert r.get_remaining_time(T0 + 10, 1.0, 2.0) == 0.0
    store = BackoffStore()
    store.update_backoff_record(r)
    store.remove_backoff_record("ns/j")
    store.remove_backoff_record("ns/j")
    assert store.get("ns/j") is None


def test_remaining_time_per_index_uses_failure_count_annotations() -> None:
    assert get_remaining_time_per_index(T0, 10.0, 600.0, None) == 0.0
    first = pod(T0)
    # Counted + ignored failures before this pod, plus this one.
    assert get_remaining_time_per_index(T0 + 4, 10.0, 600.0, first) == 6.0
    later = pod(T0, annotations={INDEX_FAILURE_COUNT_ANNOTATION: "1",
                                 INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: "1"})
    assert get_remaining_time_per_index(T0, 10.0, 600.0, later) == 40.0
