"""Success policy matching on succeeded indexes and counts."""

from __future__ import annotations

from pykcm.controllers.job.indexed_job_utils import parse_indexes_from_string
from pykcm.controllers.job.success_policy import (
    has_success_criteria_met_condition,
    is_success_criteria_met_condition,
    match_succeeded_indexes_rule,
    match_success_policy,
)


def test_no_policy_or_no_success_never_matches() -> None:
    assert match_success_policy(None, 10, parse_indexes_from_string("0-9", 10)) == ("", False)
    policy = {"rules": [{"succeededCount": 0}]}
    assert match_success_policy(policy, 10, parse_indexes_from_string("", 10)) == ("", False)


def test_succeeded_indexes_rule_needs_all_of_them() -> None:
    policy = {"rules": [{"succeededIndexes": "0,2-4"}]}
    assert match_success_policy(policy, 10, parse_indexes_from_string("0,2,3", 10)) == (
        "", False)
    assert match_success_policy(policy, 10, parse_indexes_from_string("0-5", 10)) == (
        "Matched rules at index 0", True)


def test_succeeded_indexes_with_count() -> None:
    policy = {"rules": [{"succeededIndexes": "1-5", "succeededCount": 2}]}
    assert match_success_policy(policy, 10, parse_indexes_from_string("0,6-9", 10))[1] is False
    assert match_success_policy(policy, 10, parse_indexes_from_string("0,3,5", 10)) == (
        "Matched rules at index 0", True)


def test_count_only_rule_and_rule_order() -> None:
    policy = {"rules": [{"succeededIndexes": "7"}, {"succeededCount": 3}]}
    assert match_success_policy(policy, 10, parse_indexes_from_string("0-2", 10)) == (
        "Matched rules at index 1", True)
    assert match_success_policy(policy, 10, parse_indexes_from_string("7", 10)) == (
        "Matched rules at index 0", True)


def test_out_of_range_rule_is_skipped() -> None:
    policy = {"rules": [{"succeededIndexes": "12-14"}, {"succeededCount": 1}]}
    assert match_success_policy(policy, 10, parse_indexes_from_string("1", 10)) == (
        "Matched rules at index 1", True)


def test_match_succeeded_indexes_rule_overlaps() -> None:
    rule = parse_indexes_from_string("0-3,10-12", 100)
    done = parse_indexes_from_string("2-11", 100)
    # Overlap: 2,3 and 10,11 = 4 of 7.
    assert not match_succeeded_indexes_rule(rule, done, None)
    assert match_succeeded_indexes_rule(rule, done, 4)
    assert not match_succeeded_indexes_rule(rule, done, 5)
    assert match_succeeded_indexes_rule(rule, parse_indexes_from_string("0-20", 100), None)


def test_success_criteria_met_condition_helpers() -> None:
    cond = {"type": "SuccessCriteriaMet", "status": "True"}
    assert is_success_criteria_met_condition(cond)
    assert not is_success_criteria_met_condition({"type": "SuccessCriteriaMet",
                                                  "status": "False"})
    assert not is_success_criteria_met_condition(None)
    assert has_success_criteria_met_condition({"status": {"conditions": [cond]}}) == cond
    assert has_success_criteria_met_condition({"status": {}}) is None
