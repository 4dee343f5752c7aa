"""Job tracking finalizer helpers, uncounted pods, conditions and small predicates."""

from __future__ import annotations

from typing import Any

from pykcm.controllers.job.job_controller import past_backoff_limit_on_failure
from pykcm.controllers.job.tracking_utils import (
    JOB_TRACKING_FINALIZER,
    UIDTrackingExpectations,
    UncountedTerminatedPods,
    clean_uncounted_pods_without_finalizers,
    has_job_tracking_finalizer,
    remove_tracking_finalizer_patch,
)
from pykcm.controllers.job.utils import (
    ensure_job_condition_status,
    is_job_finished,
    is_job_succeeded,
    is_pod_failed,
    managed_by_external_controller,
    new_condition,
)


def test_finalizer_patch_removes_only_ours() -> None:
    pod = {"metadata": {"finalizers": ["other", JOB_TRACKING_FINALIZER]}}
    assert has_job_tracking_finalizer(pod)
    assert remove_tracking_finalizer_patch(pod) == {
        "metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}
    assert remove_tracking_finalizer_patch({"metadata": {"finalizers": ["other"]}}) is None


def test_clean_uncounted_moves_uids_without_finalizer_to_counters() -> None:
    status: dict[str, Any] = {"succeeded": 2, "failed": 1, "uncountedTerminatedPods": {
        "succeeded": ["a", "b"], "failed": ["c", "d"]}}
    assert clean_uncounted_pods_without_finalizers(status, {"b", "d"})
    assert status["succeeded"] == 3 and status["failed"] == 2
    assert status["uncountedTerminatedPods"] == {"succeeded": ["b"], "failed": ["d"]}
    assert not clean_uncounted_pods_without_finalizers(status, {"b", "d"})
    assert clean_uncounted_pods_without_finalizers(status, set())
    assert status["uncountedTerminatedPods"] == {}
    assert (status["succeeded"], status["failed"]) == (4, 3)
    u = UncountedTerminatedPods({"succeeded": ["x"], "failed": []})
    assert u.succeeded == {"x"} and u.failed == set()


def test_uid_tracking_expectations() -> None:
    e = UIDTrackingExpectations()
    assert e.get_expected_uids("ns/j") == set()
    e.expect_finalizers_removed("ns/j", ["a", "b"])
    e.finalizer_removal_observed("ns/j", "a")
    e.finalizer_removal_observed("ns/j", "zzz")
    e.finalizer_removal_observed("ns/other", "b")
    assert e.get_expected_uids("ns/j") == {"b"}
    e.delete_expectations("ns/j")
    assert e.get_expected_uids("ns/j") == set()


def test_ensure_job_condition_status() -> None:
    conds: list[dict[str, Any]] = []
    # Nothing to False says nothing.
    assert not ensure_job_condition_status(conds, "Suspended", "False", "JobResumed",
                                           "Job resumed", 100.0)
    assert conds == []
    assert ensure_job_condition_status(conds, "Suspended", "True", "JobSuspended",
                                       "Job suspended", 100.0)
    assert conds == [new_condition("Suspended", "True", "JobSuspended", "Job suspended", 100.0)]
    assert conds[0]["lastTransitionTime"] == "1970-01-01T00:01:40Z"
    assert not ensure_job_condition_status(conds, "Suspended", "True", "JobSuspended",
                                           "Job suspended", 200.0)
    assert ensure_job_condition_status(conds, "Suspended", "False", "JobResumed",
                                       "Job resumed", 200.0)
    assert conds[0]["status"] == "False" and conds[0]["lastProbeTime"] == "1970-01-01T00:03:20Z"
    assert "reason" not in new_condition("Complete", "True", "", "", 0.0)


def test_job_finished_and_succeeded() -> None:
    done = {"status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                      {"type": "Complete", "status": "True"}]}}
    assert is_job_finished(done) and is_job_succeeded(done)
    failed = {"status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    assert is_job_finished(failed) and not is_job_succeeded(failed)
    interim = {"status": {"conditions": [{"type": "FailureTarget", "status": "True"}]}}
    assert not is_job_finished(interim)


def test_is_pod_failed_depends_on_replacement_policy() -> None:
    deleting = {"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"},
                "status": {"phase": "Running"}}
    job: dict[str, Any] = {"spec": {"podReplacementPolicy": "TerminatingOrFailed"}}
    assert is_pod_failed(deleting, job)
    assert not is_pod_failed(deleting, {"spec": {"podReplacementPolicy": "Failed"}})
    assert not is_pod_failed(deleting, {"spec": {"podFailurePolicy": {"rules": []}}})
    assert is_pod_failed({"metadata": {}, "status": {"phase": "Failed"}},
                         {"spec": {"podFailurePolicy": {"rules": []}}})


def test_managed_by() -> None:
    assert managed_by_external_controller({"spec": {}}) is None
    assert managed_by_external_controller(
        {"spec": {"managedBy": "kubernetes.io/job-controller"}}) is None
    assert managed_by_external_controller({"spec": {"managedBy": "kueue.x-k8s.io/mk"}}) == \
        "kueue.x-k8s.io/mk"


def test_backoff_limit_on_failure_counts_restarts_of_live_pods() -> None:
    def job(limit: int) -> dict[str, Any]:
        return {"spec": {"backoffLimit": limit,
                         "template": {"spec": {"restartPolicy": "OnFailure"}}}}

    def pod(phase: str, restarts: int) -> dict[str, Any]:
        return {"status": {"phase": phase, "containerStatuses": [{"restartCount": restarts}],
                           "initContainerStatuses": [{"restartCount": 1}]}}

    assert past_backoff_limit_on_failure(job(3), [pod("Running", 2)])
    assert not past_backoff_limit_on_failure(job(4), [pod("Running", 2)])
    assert not past_backoff_limit_on_failure(job(1), [pod("Failed", 9)])
    assert past_backoff_limit_on_failure(job(0), [pod("Pending", 0)])
    never = {"spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never"}}}}
    assert not past_backoff_limit_on_failure(never, [pod("Running", 5)])
