"""Issue 14's quota acceptance with the real kubectl: ``kubectl create quota``, a LimitRange
whose defaults let request-less pods in, ``kubectl describe quota`` and ``kubectl get quota``
showing the usage, the pod over quota refused with upstream's message, and a deleted pod's
usage given back by the resourcequota-controller.

Runs on each cluster of conftest's ``cluster``: ``pykcm up``; pykcm's controller manager on
the real kube-apiserver; the real kube-controller-manager on pykcm's API server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.cluster_helpers import wait_until
from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

NS_PREFIX = "quota"

LIMIT_RANGE = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"},
               "spec": {"limits": [{"type": "Container", "default": {"cpu": "300m"},
                                    "defaultRequest": {"cpu": "300m", "memory": "64Mi"}}]}}


def _quota(k: Kubectl, ns: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(k.ok("get", "quota", "q", "-n", ns, "-o", "json"))
    return out


def _used(k: Kubectl, ns: str) -> dict[str, str]:
    return dict((_quota(k, ns).get("status") or {}).get("used") or {})


def test_quota_refuses_the_pod_over_it_and_shows_usage(kubectl_up: Kubectl, ns: str) -> None:
    k = kubectl_up
    wait_until(lambda: k.run("get", "serviceaccount", "default", "-n", ns).returncode == 0,
               "the default ServiceAccount")
    k.ok("create", "-n", ns, "-f", "-", stdin=json.dumps(LIMIT_RANGE))
    k.ok("create", "quota", "q", "-n", ns, "--hard=pods=3,requests.cpu=700m,limits.cpu=1,"
         "requests.memory=1Gi")
    wait_until(lambda: _used(k, ns) == {"pods": "0", "requests.cpu": "0", "limits.cpu": "0",
                                        "requests.memory": "0"}, "the quota's status")
    k.ok("run", "a", "-n", ns, "--image=nginx:1.27")
    pod = json.loads(k.ok("get", "pod", "a", "-n", ns, "-o", "json"))
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "300m"}, "requests": {"cpu": "300m", "memory": "64Mi"}}
    k.ok("run", "b", "-n", ns, "--image=nginx:1.27")
    refused = k.run("run", "c", "-n", ns, "--image=nginx:1.27")
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "c" is forbidden: exceeded quota: q, requested: '
        "requests.cpu=300m, used: requests.cpu=600m, limited: requests.cpu=700m")
    assert _used(k, ns) == {"pods": "2", "requests.cpu": "600m", "limits.cpu": "600m",
                            "requests.memory": "128Mi"}
    described = k.ok("describe", "quota", "q", "-n", ns)
    rows = [line.split() for line in described.splitlines()]
    assert ["Resource", "Used", "Hard"] in rows
    assert {("limits.cpu", "600m", "1"), ("pods", "2", "3"), ("requests.cpu", "600m", "700m"),
            ("requests.memory", "128Mi", "1Gi")} <= {tuple(r) for r in rows if len(r) == 3}
    table = k.ok("get", "quota", "-n", ns, "--no-headers").split(None, 1)[1]
    assert table.startswith("pods: 2/3, requests.cpu: 600m/700m, requests.memory: 128Mi/1Gi   "
                            "limits.cpu: 600m/1")
    k.ok("delete", "pod", "a", "-n", ns, "--grace-period=0", "--force")
    wait_until(lambda: _used(k, ns).get("requests.cpu") == "300m",
               "the deleted pod's usage given back")
    k.ok("run", "c", "-n", ns, "--image=nginx:1.27")
    assert _used(k, ns)["pods"] == "2"
