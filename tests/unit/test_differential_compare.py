"""The differential tests' comparison and masking (tests/e2e/differential.py), without a cluster."""

from __future__ import annotations

import pytest

from tests.e2e.differential import Allowed, Masker, check_hash_format, compare, diff, report


def test_diff_by_path_and_absent_values() -> None:
    kube = {"a": {"b": [1, 2, 3]}, "c": "x", "only_kube": 1}
    pykcm = {"a": {"b": [1, 5]}, "c": "x", "only_pykcm": 2}
    got = {(d.path, str(d.kube), str(d.pykcm)) for d in diff(kube, pykcm)}
    assert got == {("a.b[1]", "2", "5"), ("a.b[2]", "3", "<absent>"),
                   ("only_kube", "1", "<absent>"), ("only_pykcm", "<absent>", "2")}
    assert diff(kube, kube) == []


def test_allowlist_entries_match_scenario_and_path_patterns() -> None:
    allow = [Allowed("job-*", "status.ready", "why")]
    kube, pykcm = {"status": {"ready": 1, "failed": 0}}, {"status": {"ready": 0, "failed": 1}}
    assert [d.path for d in compare("job-x", kube, pykcm, allow)] == ["status.failed"]
    assert [d.path for d in compare("cronjob-x", kube, pykcm, allow)] == [
        "status.failed", "status.ready"]
    text = report("job-x", kube, pykcm, compare("job-x", kube, pykcm, allow))
    assert "status.failed" in text and "kube-controller-manager: 0" in text


def test_masker_keeps_hashes_unless_asked() -> None:
    m = Masker()
    assert m.hash("5d8c7b9f6") == "5d8c7b9f6" and m.hashes == ["5d8c7b9f6"]
    assert m.mask("web-5d8c7b9f6-x7zq4") == "web-5d8c7b9f6-{rand}"


def test_masker_numbers_hashes_and_hides_random_suffixes() -> None:
    m = Masker(mask_hashes=True)
    assert m.hash("5d8c7b9f6") == "{hash1}" and m.hash("bcd") == "{hash2}"
    assert m.hash("5d8c7b9f6") == "{hash1}"
    m.literal("ns-1a2b3c", "{namespace}")
    got = m.mask({"web-5d8c7b9f6": ["Created pod: web-5d8c7b9f6-x7zq4",
                                    "Deleted pod: ns-1a2b3c/web-bcd-kq2mn", "web-5d8c7b9f6x"]})
    assert got == {"web-{hash1}": ["Created pod: web-{hash1}-{rand}",
                                   "Deleted pod: {namespace}/web-{hash2}-{rand}",
                                   "web-5d8c7b9f6x"]}


def test_hash_format() -> None:
    check_hash_format("5d8c7b9f6")
    for bad in ("", "abc", "12345678901", "5D8C"):
        with pytest.raises(AssertionError):
            check_hash_format(bad)
