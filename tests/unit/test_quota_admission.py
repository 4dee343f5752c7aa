"""Unit tests of the API server's ResourceQuota and LimitRanger admission plugins.

The expected messages are kube-apiserver v1.36.2's (asked of the real server: the same
cases run on both servers in tests/integration/test_resource_quota_admission.py).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from pykcm.api.quota import Attributes
from pykcm.api.quota.registry import new_registry
from pykcm.apiserver import errors
from pykcm.apiserver.admission import limit_ranger
from pykcm.apiserver.admission.resource_quota import QuotaAdmission, QuotaRefused, check_request


def quota(name: str, hard: dict[str, str], used: dict[str, str] | None = None,
          **spec: Any) -> dict[str, Any]:
    q: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
                         "spec": {"hard": hard, **spec}, "status": {"hard": hard}}
    if used is not None:
        q["status"]["used"] = used
    return q


def pod(name: str = "p", cpu: str | None = None, **spec: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "nginx"}
    if cpu:
        c["resources"] = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [c], **spec}}


def create(obj: dict[str, Any], resource: str = "pods") -> Attributes:
    return Attributes("CREATE", "", resource, "", "ns", obj["metadata"]["name"], obj)


PODS = new_registry().get("", "pods")


def test_a_create_over_quota_is_refused_with_upstreams_message() -> None:
    assert PODS is not None
    q = quota("q", {"pods": "2", "requests.cpu": "1"}, {"pods": "1", "requests.cpu": "600m"})
    with pytest.raises(QuotaRefused, match="^exceeded quota: q, requested: requests.cpu=600m, "
                                           "used: requests.cpu=600m, limited: requests.cpu=1$"):
        check_request([q], create(pod(cpu="600m")), PODS)
    [charged] = check_request([q], create(pod(cpu="400m")), PODS)
    assert charged["status"]["used"] == {"pods": "2", "requests.cpu": "1"}
    assert q["status"]["used"] == {"pods": "1", "requests.cpu": "600m"}  # input unchanged


def test_constraints_and_unknown_status() -> None:
    assert PODS is not None
    with pytest.raises(QuotaRefused, match="^failed quota: q: must specify limits.cpu for: c; "
                                           "requests.cpu for: c$"):
        check_request([quota("q", {"requests.cpu": "1", "limits.cpu": "1"}, {})],
                      create(pod()), PODS)
    with pytest.raises(QuotaRefused, match="^status unknown for quota: q, resources: pods$"):
        check_request([quota("q", {"pods": "1"})], create(pod()), PODS)


def test_a_quota_out_of_scope_is_not_charged() -> None:
    assert PODS is not None
    q = quota("q", {"pods": "1"}, {"pods": "1"}, scopes=["Terminating"])
    assert check_request([q], create(pod()), PODS) == []


def test_an_update_is_charged_its_growth_only() -> None:
    svcs = new_registry().get("", "services")
    assert svcs is not None
    old: dict[str, Any] = {"metadata": {"name": "s", "resourceVersion": "5"},
                           "spec": {"type": "ClusterIP", "ports": [{"port": 1}]}}
    new = copy.deepcopy(old)
    new["spec"]["type"] = "NodePort"
    q = quota("q", {"services": "1", "services.nodeports": "1"},
              {"services": "1", "services.nodeports": "0"})
    a = Attributes("UPDATE", "", "services", "", "ns", "s", new, old)
    [charged] = check_request([q], a, svcs)
    assert charged["status"]["used"] == {"services": "1", "services.nodeports": "1"}


def test_racing_creates_cannot_both_pass() -> None:
    store = {"q": quota("q", {"pods": "1"}, {"pods": "0"})}
    writes: list[str] = []

    async def get_quotas(ns: str) -> list[dict[str, Any]]:
        await asyncio.sleep(0)  # let the other create run meanwhile
        return [copy.deepcopy(q) for q in store.values()]

    async def update_status(q: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        current = store[q["metadata"]["name"]]
        if current["metadata"]["resourceVersion"] != q["metadata"]["resourceVersion"]:
            raise errors.conflict("resourcequotas", "", "q", "the object has been modified")
        q["metadata"]["resourceVersion"] = str(int(q["metadata"]["resourceVersion"]) + 1)
        store["q"] = q
        writes.append(q["status"]["used"]["pods"])

    plugin = QuotaAdmission(get_quotas, update_status)

    async def main() -> list[Any]:
        return list(await asyncio.gather(plugin.admit(create(pod("a"))),
                                         plugin.admit(create(pod("b"))), return_exceptions=True))

    results = asyncio.run(main())
    refused = [r for r in results if isinstance(r, errors.StatusError)]
    assert len(refused) == 1 and results.count(None) == 1
    assert refused[0].code == 403
    assert writes == ["1"]


def test_object_counts_for_any_resource() -> None:
    store = [quota("q", {"count/deployments.apps": "0"}, {"count/deployments.apps": "0"})]

    async def get_quotas(ns: str) -> list[dict[str, Any]]:
        return store

    async def update_status(q: dict[str, Any]) -> None:
        raise AssertionError("not charged when refused")

    plugin = QuotaAdmission(get_quotas, update_status)
    d = {"metadata": {"name": "d", "namespace": "ns"}}
    with pytest.raises(errors.StatusError) as e:
        asyncio.run(plugin.admit(Attributes("CREATE", "apps", "deployments", "", "ns", "d", d)))
    assert e.value.message == (
        'deployments.apps "d" is forbidden: exceeded quota: q, requested: '
        "count/deployments.apps=1, used: count/deployments.apps=0, limited: "
        "count/deployments.apps=0")


LR = {"spec": {"limits": [
    {"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"},
     "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "64Mi"},
     "maxLimitRequestRatio": {"cpu": "4"}},
    {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}}]}}


def test_limit_ranger_defaults_and_annotates() -> None:
    p = pod("p1")
    p["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {"cpu": "1"},
                                                               "requests": {"cpu": "1"}}}]
    limit_ranger.mutate_pod(p, [LR])
    assert p["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2"}, "requests": {"cpu": "2", "memory": "64Mi"}}
    assert p["metadata"]["annotations"] == {"kubernetes.io/limit-ranger": (
        "LimitRanger plugin set: cpu, memory request for container c; cpu limit for container c; "
        "memory request for init container i")}


@pytest.mark.parametrize(("requests", "limits", "message"), [
    ({"cpu": "3"}, {"cpu": "3"}, "maximum cpu usage per Container is 2, but limit is 3"),
    ({"cpu": "200m"}, {"cpu": "1500m"},
     "cpu max limit to request ratio per Container is 4, but provided ratio is 7.500000"),
    ({"cpu": "50m"}, {"cpu": "50m"}, "minimum cpu usage per Container is 100m, but request is 50m"),
    ({}, {"cpu": "1"}, "minimum cpu usage per Container is 100m.  No request is specified"),
])
def test_limit_ranger_validation_messages(requests: dict[str, str], limits: dict[str, str],
                                          message: str) -> None:
    p = pod()
    p["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": limits}
    got = limit_ranger.validate("Pod", p, [LR])
    assert got is not None
    assert got == message or got.startswith("[" + message)


def test_limit_ranger_aggregates_and_checks_claims() -> None:
    p = pod()
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}, "limits": {"cpu": "3"}}
    lr = {"spec": {"limits": [*LR["spec"]["limits"], {"type": "Pod", "max": {"memory": "1Gi"}}]}}
    assert limit_ranger.validate("Pod", p, [lr]) == (
        "[maximum cpu usage per Container is 2, but limit is 3, "
        "maximum memory usage per Pod is 1Gi.  No limit is specified]")
    claim = {"spec": {"resources": {"requests": {"storage": "100Mi"}}}}
    assert limit_ranger.validate("PersistentVolumeClaim", claim, [LR]) == (
        "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Mi")
    assert limit_ranger.supports("Pod", "", "CREATE", "")
    assert not limit_ranger.supports("Pod", "", "UPDATE", "")
