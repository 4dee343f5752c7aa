"""Health endpoints in Kubernetes' format (k8s.io/apiserver healthz)."""

from __future__ import annotations

from pykcm.manager import HealthChecks, render_health


def test_all_pass() -> None:
    results = [("leaderElection", None), ("job-controller", None)]
    assert render_health(results, verbose=False) == (200, "ok")
    assert render_health(results, verbose=True) == (
        200, "[+]leaderElection ok\n[+]job-controller ok\nhealthz check passed\n")
    assert render_health([], verbose=False) == (200, "ok")


def test_a_failure_lists_every_check_and_withholds_the_reason() -> None:
    results = [("leaderElection", None), ("job-controller", "worker died: boom")]
    for verbose in (False, True):
        status, body = render_health(results, verbose=verbose)
        assert status == 500
        assert body == ("[+]leaderElection ok\n[-]job-controller failed: reason withheld\n"
                        "healthz check failed\n")
    assert render_health([("ping", "x")], verbose=False, endpoint="livez")[1].endswith(
        "livez check failed\n")


def test_checks_are_mutable_ordered_and_a_raising_check_fails() -> None:
    checks = HealthChecks()
    checks.add("b", lambda: None)
    checks.add("a", lambda: "broken")

    def boom() -> str | None:
        raise RuntimeError("kaput")

    checks.add("c", boom)
    assert checks.names() == ["b", "a", "c"]
    assert checks.run() == [("b", None), ("a", "broken"), ("c", "kaput")]
    assert checks.run(frozenset({"a", "c"})) == [("b", None)]
    checks.remove("a")
    assert checks.names() == ["b", "c"]

