"""Differential test of the resourcequota-controller: same objects in, same quota status out.

Run under the real kube-controller-manager v1.36 and under pykcm's on a real
kube-apiserver (tests/e2e/differential.py), whose quota admission charges creates
against the status the controller wrote. Compared: each quota's status (hard and used)
once the controller has counted what was there before it, the 403 messages of the
creates the quotas refuse, and the status after deletes were given back.
"""

from __future__ import annotations

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


def _pod(name: str, cpu: str | None, memory: str | None = None, **spec: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "nginx"}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    if requests:
        c["resources"] = {"requests": requests, "limits": dict(requests)}
    return {"metadata": {"name": name}, "spec": {"containers": [c], **spec}}


QUOTAS: dict[str, dict[str, Any]] = {
    "compute": {"hard": {"pods": "4", "requests.cpu": "2", "requests.memory": "1Gi",
                         "limits.cpu": "2", "cpu": "2", "count/pods": "4"}},
    "objects": {"hard": {"services": "2", "services.nodeports": "3",
                         "services.loadbalancers": "1", "secrets": "5", "count/secrets": "5",
                         "persistentvolumeclaims": "2", "requests.storage": "3Gi",
                         "standard.storageclass.storage.k8s.io/requests.storage": "2Gi",
                         "count/deployments.apps": "1", "count/jobs.batch": "2"}},
    "besteffort": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]},
    "terminating": {"hard": {"pods": "3", "requests.cpu": "1"},
                    "scopes": ["Terminating", "NotBestEffort"]},
}


def _used(run: Run) -> dict[str, Any]:
    return {name: (run.get("resourcequotas", name).get("status") or {}) for name in QUOTAS}


def _refused(run: Run, resource: str, obj: dict[str, Any]) -> str:
    code, body = run.api.request("POST", run.path(resource), obj)
    assert code == 403, (code, body)
    return str(body["message"])


def quota_usage(run: Run) -> dict[str, Any]:
    # What is there before the quotas: the controller's first sync must count it.
    run.create("pods", _pod("a", "500m", "128Mi"))
    run.create("pods", _pod("be", None))
    run.create("pods", _pod("deadline", "250m", activeDeadlineSeconds=600))
    run.create("services", {"metadata": {"name": "np"}, "spec": {
        "type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}})
    run.create("secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    run.create("persistentvolumeclaims", {"metadata": {"name": "c"}, "spec": {
        "storageClassName": "standard", "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1536Mi"}}}})
    for name, spec in QUOTAS.items():
        run.create("resourcequotas", {"metadata": {"name": name}, "spec": spec})

    def counted() -> dict[str, Any] | None:
        st = _used(run)
        return st if all(set(s.get("used") or {}) == set(QUOTAS[n]["hard"])
                          for n, s in st.items()) else None
    first = run.wait(counted, "every quota's usage counted")
    refused = {
        "cpu": _refused(run, "pods", _pod("big", "1500m", "64Mi")),
        "constraints": _refused(run, "pods", {"metadata": {"name": "bare"}, "spec": {
            "containers": [{"name": "x", "image": "nginx"},
                           {"name": "y", "image": "nginx",
                            "resources": {"requests": {"cpu": "1m"}}}]}}),
        "besteffort": _refused(run, "pods", _pod("be2", None)),
        "storage": _refused(run, "persistentvolumeclaims", {"metadata": {"name": "c2"}, "spec": {
            "storageClassName": "standard", "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
    }
    run.create("deployments", {
        "metadata": {"name": "d"}, "spec": {
            "replicas": 0, "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    refused["deployments"] = _refused(run, "deployments", {
        "metadata": {"name": "d2"}, "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    charged = _used(run)
    # Deletes give usage back (the controller's replenishment).
    run.api.request("DELETE", run.path("pods", "a"),
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    run.api.request("DELETE", run.path("pods", "deadline"),
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    run.delete("services", "np")
    run.delete("secrets", "s")

    def given_back() -> dict[str, Any] | None:
        st = _used(run)
        return st if (st["compute"]["used"]["requests.cpu"] == "0"
                      and st["objects"]["used"]["services"] == "0"
                      and st["objects"]["used"]["secrets"] == "0"
                      and st["terminating"]["used"]["pods"] == "0") else None
    after = run.wait(given_back, "usage given back after the deletes")
    return {"first": first, "refused": refused, "charged": charged, "after": after}


def test_differential(differential: Differential) -> None:
    """Quotas under kube-controller-manager and under pykcm: the same status and refusals."""
    kube, _pykcm = differential.run("quota-usage", quota_usage, ALLOWLIST, prefix="diff-rq")
    assert kube["first"]["compute"]["used"] == {
        "pods": "3", "count/pods": "3", "requests.cpu": "750m", "requests.memory": "128Mi",
        "limits.cpu": "750m", "cpu": "750m"}
    assert kube["refused"]["cpu"].startswith('pods "big" is forbidden: exceeded quota: compute')
    assert kube["refused"]["deployments"].startswith('deployments.apps "d2" is forbidden')
    assert kube["after"]["compute"]["used"]["count/pods"] == "1"
    assert kube["after"]["terminating"]["used"] == {"pods": "0", "requests.cpu": "0"}
