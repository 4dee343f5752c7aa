"""Pod failure policy matching (FailJob, FailIndex, Ignore, Count on exit codes and conditions)."""

from __future__ import annotations

from typing import Any

from pykcm.controllers.job.pod_failure_policy import match_pod_failure_policy


def failed_pod(*codes: tuple[str, int], init: tuple[str, int] | None = None,
               conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    def cs(name: str, code: int) -> dict[str, Any]:
        return {"name": name, "state": {"terminated": {"exitCode": code}}}

    status: dict[str, Any] = {"phase": "Failed",
                              "containerStatuses": [cs(n, c) for n, c in codes],
                              "conditions": conditions or []}
    if init is not None:
        status["initContainerStatuses"] = [cs(*init)]
    return {"metadata": {"name": "p-1", "namespace": "ns"}, "status": status}


POLICY = {"rules": [
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                          "values": [42]}},
    {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}},
    {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2, 3]}},
]}


def test_no_policy_counts_the_failure() -> None:
    assert match_pod_failure_policy(None, failed_pod(("main", 1))) == (None, True, None)


def test_fail_job_on_exit_code_with_upstream_message() -> None:
    msg, count, action = match_pod_failure_policy(POLICY, failed_pod(("main", 42)))
    assert action == "FailJob" and count is True
    assert msg == ("Container main for pod ns/p-1 failed with exit code 42 matching FailJob "
                   "rule at index 1")


def test_container_name_restricts_the_rule() -> None:
    # Exit 42 in another container does not match rule 1; NotIn [1,2,3] matches rule 3.
    assert match_pod_failure_policy(POLICY, failed_pod(("side", 42))) == (None, True, "Count")


def test_ignore_on_pod_condition_takes_precedence_by_order() -> None:
    pod = failed_pod(("main", 42), conditions=[{"type": "DisruptionTarget", "status": "True"}])
    assert match_pod_failure_policy(POLICY, pod) == (None, False, "Ignore")
    # The condition must have the pattern's status (defaulted True).
    pod = failed_pod(("main", 1), conditions=[{"type": "DisruptionTarget", "status": "False"}])
    assert match_pod_failure_policy(POLICY, pod) == (None, True, None)


def test_fail_index_and_count_and_no_match() -> None:
    assert match_pod_failure_policy(POLICY, failed_pod(("main", 3))) == (None, True, "FailIndex")
    assert match_pod_failure_policy(POLICY, failed_pod(("main", 7))) == (None, True, "Count")
    assert match_pod_failure_policy(POLICY, failed_pod(("main", 1))) == (None, True, None)


def test_zero_and_running_containers_never_match() -> None:
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "NotIn",
                                                              "values": [5]}}]}
    assert match_pod_failure_policy(policy, failed_pod(("main", 0))) == (None, True, None)
    pod = failed_pod(("main", 0))
    pod["status"]["containerStatuses"].append({"name": "x", "state": {"running": {}}})
    assert match_pod_failure_policy(policy, pod) == (None, True, None)


def test_init_containers_are_checked_after_containers() -> None:
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In",
                                                              "values": [9]}}]}
    msg, _, action = match_pod_failure_policy(policy, failed_pod(init=("setup", 9)))
    assert action == "FailJob"
    assert msg is not None and msg.startswith("Container setup for pod ns/p-1 failed with exit "
                                              "code 9")


def test_fail_job_on_pod_condition_message() -> None:
    policy = {"rules": [{"action": "FailJob", "onPodConditions": [
        {"type": "ConfigIssue", "status": "True"}]}]}
    pod = failed_pod(conditions=[{"type": "ConfigIssue", "status": "True"}])
    assert match_pod_failure_policy(policy, pod) == (
        "Pod ns/p-1 has condition ConfigIssue matching FailJob rule at index 0", True, "FailJob")
