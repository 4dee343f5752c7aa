"""Differential test of the disruption controller: the same budgets under the real
kube-controller-manager v1.36 and under pykcm's, on the session's real kube-apiserver with
``pykcm sim`` nodes (tests/e2e/differential.py), compared as a user sees them.

Budgets: ``minAvailable: 2`` over a 3-replica Deployment; ``maxUnavailable: 50%`` over a
4-replica Deployment plus a pod of no controller (expected pods from the Deployment's scale,
the ``UnmanagedPods`` warning); percentages and ``maxUnavailable`` over a StatefulSet, a
ReplicationController and a ReplicaSet of no Deployment (each one's own scale); ``maxUnavailable: 1`` over a pod whose controller is a
ConfigMap (no ``/scale``: the fail-safe ``SyncFailed`` status and its message); then
``disruptedPods`` as the eviction handler writes them: a fresh entry (the pod is not counted
healthy) and a 10-minute-old one (dropped, with the ``NotDeleted`` warning). Compared: every
status field but times, the DisruptionAllowed condition, and the controller's events
(source ``controllermanager``) as a set (how often a warning repeats depends on how many
syncs the machine's speed makes).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.testing.upstream import KubeCluster
from tests.e2e.differential import Differential, Run
from tests.e2e.differential_allowlist import ALLOWLIST

pytestmark = [pytest.mark.e2e, pytest.mark.upstream]


@pytest.fixture(scope="module")
def differential(kube_cluster: KubeCluster) -> Iterator[Differential]:
    d = Differential(kube_cluster)
    yield d
    d.restore()


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def _pdb(name: str, app: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec}}


def _ready(p: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (p.get("status") or {}).get("conditions") or ())


def _view(p: dict[str, Any]) -> dict[str, Any]:
    st = dict(p.get("status") or {})
    st["disruptedPods"] = sorted(st.get("disruptedPods") or {})
    st["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                        for c in st.get("conditions") or ()]
    return st


def _counts(p: dict[str, Any]) -> tuple[Any, ...]:
    st = p.get("status") or {}
    return tuple(st.get(k) for k in ("expectedPods", "desiredHealthy", "currentHealthy",
                                     "disruptionsAllowed"))


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def budgets(run: Run) -> dict[str, Any]:
    run.create("deployments", _deployment("web", 3))
    run.create("deployments", _deployment("api", 4))
    run.create("statefulsets", {"metadata": {"name": "db"}, "spec": {
        "replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    run.create("replicationcontrollers", {"metadata": {"name": "rc"}, "spec": {
        "replicas": 2, "selector": {"app": "rc"},
        "template": {"metadata": {"labels": {"app": "rc"}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    run.create("replicasets", {"metadata": {"name": "bare"}, "spec": {
        "replicas": 3, "selector": {"matchLabels": {"app": "bare"}},
        "template": {"metadata": {"labels": {"app": "bare"}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    run.create("configmaps", {"metadata": {"name": "owner"}})
    owner = run.get("configmaps", "owner")
    run.create("pods", {"metadata": {"name": "stray", "labels": {"app": "api"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    run.create("pods", {"metadata": {"name": "odd", "labels": {"app": "odd"}, "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
         "uid": owner["metadata"]["uid"], "controller": True}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})

    def all_ready() -> bool:
        pods = run.list("pods")
        return len(pods) == 16 and all(_ready(p) for p in pods)
    run.wait(all_ready, "16 pods ready")
    run.create("poddisruptionbudgets", _pdb("min", "web", minAvailable=2))
    run.create("poddisruptionbudgets", _pdb("pct", "api", maxUnavailable="50%"))
    run.create("poddisruptionbudgets", _pdb("odd", "odd", maxUnavailable=1))
    run.create("poddisruptionbudgets", _pdb("db", "db", minAvailable="50%"))
    run.create("poddisruptionbudgets", _pdb("rc", "rc", maxUnavailable=1))
    run.create("poddisruptionbudgets", _pdb("bare", "bare", maxUnavailable="34%"))
    out: dict[str, Any] = {}

    def status(name: str, want: tuple[Any, ...]) -> dict[str, Any]:
        def ok() -> dict[str, Any] | None:
            p = run.get("poddisruptionbudgets", name)
            return p if _counts(p) == want else None
        found: dict[str, Any] = run.wait(ok, f"{name} at {want}")
        return found

    out["min"] = _view(status("min", (3, 2, 3, 1)))
    out["pct"] = _view(status("pct", (4, 2, 5, 3)))
    out["db"] = _view(status("db", (2, 1, 2, 1)))
    out["rc"] = _view(status("rc", (2, 1, 2, 1)))
    out["bare"] = _view(status("bare", (3, 1, 3, 2)))

    def failed() -> dict[str, Any] | None:
        p = run.get("poddisruptionbudgets", "odd")
        conds = (p.get("status") or {}).get("conditions") or ()
        return p if any(c.get("reason") == "SyncFailed" for c in conds) else None
    out["odd"] = _view(run.wait(failed, "odd SyncFailed"))
    # the eviction handler's record of two approved evictions: one fresh, one long expired
    web = sorted(p["metadata"]["name"] for p in run.list("pods", "app=web"))
    p = run.get("poddisruptionbudgets", "min")
    p["status"]["disruptedPods"] = {web[0]: _stamp(time.time()),
                                    web[1]: _stamp(time.time() - 600)}
    p["status"]["disruptionsAllowed"] = 0
    run.api.ok("PUT", run.path("poddisruptionbudgets", "min", "status"), p)

    def one_disrupted() -> dict[str, Any] | None:
        p = run.get("poddisruptionbudgets", "min")
        st = p.get("status") or {}
        return p if _counts(p) == (3, 2, 2, 0) and len(st.get("disruptedPods") or {}) == 1 \
            else None
    got = run.wait(one_disrupted, "min with web-0 disrupted, web-1's entry dropped")
    out["min-disrupted"] = _view(got)
    out["min-disrupted"]["disruptedPods"] = ["web[0]"] if \
        got["status"]["disruptedPods"].keys() == {web[0]} else got["status"]["disruptedPods"]
    events: Any = run.events()  # Any: Run.list shadows the builtin in its annotations
    out["events"] = sorted({(e["object"], e["type"], e["reason"], e["message"])
                            for e in events if e["source"] == "controllermanager"})
    return out


def test_differential(differential: Differential) -> None:
    """PodDisruptionBudget statuses and events: kube-controller-manager's and pykcm's agree."""
    kube, _pykcm = differential.run("disruption-budgets", budgets, ALLOWLIST, prefix="diff-pdb")
    assert kube["min"]["conditions"] == [{"type": "DisruptionAllowed", "status": "True",
                                          "reason": "SufficientPods", "message": "",
                                          "observedGeneration": 1}]
    assert kube["odd"]["conditions"][0]["reason"] == "SyncFailed"
    assert {e[2] for e in kube["events"]} >= {"UnmanagedPods", "NotDeleted"}
