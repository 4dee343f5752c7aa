"""The API server side of quota on both servers: ResourceQuota and LimitRange objects
(defaults, canonical quantities, validation, ``kubectl get quota``'s table), quota admission
(403 messages, status.used charged on create, racing creates) and LimitRanger admission.

No quota controller runs here: the tests write a quota's status themselves, as the
resourcequota-controller would (tests/integration/test_resourcequota_controller.py runs it).
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

from tests.conftest import Api

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


def _quotas(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/resourcequotas"


def _pod(name: str, requests: dict[str, str] | None = None,
         limits: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "nginx"}
    res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    if res:
        c["resources"] = res
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [c], **spec}}


def _quota_with_status(api: Api, ns: str, name: str, hard: dict[str, str],
                       used: dict[str, str]) -> dict[str, Any]:
    code, q = api.post(_quotas(ns), {"metadata": {"name": name}, "spec": {"hard": hard}})
    assert code == 201, q
    q["status"] = {"hard": hard, "used": used}
    code, q = api.put(f"{_quotas(ns)}/{name}/status", q)
    assert code == 200, q
    return dict(q)


def _wait_in_force(api: Api, ns: str) -> None:
    """Return once quota admission enforces the namespace's quotas written so far.

    kube-apiserver's quota admission reads quotas from its own informer, and a namespace
    whose informer holds none yet is admitted with no quota at all: a quota created a
    moment ago is not enforced until its watch event is in (kubernetes PR 103472's
    "add a delay for resource quota changes to propagate"). A last quota that counts
    ConfigMaps shows when that is: once a ConfigMap created after it is charged to it,
    the informer has every quota written before it, statuses included."""
    _quota_with_status(api, ns, "in-force-probe", {"count/configmaps": "1000"},
                       {"count/configmaps": "0"})
    for i in range(200):
        code, cm = api.post(f"/api/v1/namespaces/{ns}/configmaps",
                            {"metadata": {"name": f"in-force-probe-{i}"}})
        assert code == 201, cm
        _code, q = api.get(f"{_quotas(ns)}/in-force-probe")
        if q["status"]["used"] != {"count/configmaps": "0"}:
            return
        time.sleep(0.01)
    raise AssertionError(f"quota admission did not charge namespace {ns}'s quota")


def test_resource_quota_object(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    code, q = api.post(_quotas(ns), {"metadata": {"name": "q"}, "spec": {
        "hard": {"requests.cpu": "1000m", "limits.cpu": "500m", "memory": "1024Mi",
                 "pods": "2"}}, "status": {"hard": {"pods": "9"}}})
    assert code == 201, q
    assert q["spec"]["hard"] == {"limits.cpu": "500m", "memory": "1Gi", "pods": "2",
                                 "requests.cpu": "1"}
    assert "status" not in q or q["status"] == {}
    # a write of the main resource keeps the status; /status keeps the spec
    q["status"] = {"hard": {"pods": "2"}, "used": {"pods": "1"}}
    code, q = api.put(f"{_quotas(ns)}/q/status", q)
    assert code == 200, q
    q["spec"]["hard"]["pods"] = "3"
    q["status"]["used"]["pods"] = "0"
    code, q = api.put(f"{_quotas(ns)}/q", q)
    assert code == 200, q
    assert (q["spec"]["hard"]["pods"], q["status"]["used"]) == ("3", {"pods": "1"})
    code, table = api.get(_quotas(ns), headers=TABLE)
    assert code == 200, table
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Request", "Limit", "Age"]
    assert table["rows"][0]["cells"][:3] == ["q", "pods: 1/2", ""]


def test_resource_quota_validation(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    cases = [
        ({"hard": {"pods": "-1"}},
         ('ResourceQuota "x" is invalid: spec.hard[pods]: Invalid value: "-1": '
         "must be greater than or equal to 0")),
        ({"hard": {"pods": "1500m"}},
         'ResourceQuota "x" is invalid: spec.hard[pods]: Invalid value: "1500m": must be an integer'),
        ({"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort"]},
         ('ResourceQuota "x" is invalid: spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]:'
         " conflicting scopes")),
        ({"hard": {"cpu": "1"}, "scopes": ["BestEffort"]},
         ('ResourceQuota "x" is invalid: spec.scopes: Invalid value: ["BestEffort"]: '
         "unsupported scope applied to resource")),
        ({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In"}]}},
         ('ResourceQuota "x" is invalid: spec.scopeSelector.matchExpressions.values: Required '
         "value: must be at least one value when `operator` is 'In' or 'NotIn' for scope "
         "selector")),
    ]
    for spec, message in cases:
        code, body = api.post(_quotas(ns), {"metadata": {"name": "x"}, "spec": spec})
        assert (code, body.get("message")) == (422, message), body


def test_quota_admission_charges_creates_and_refuses_the_one_over(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    _quota_with_status(api, ns, "q", {"pods": "2", "requests.cpu": "1", "limits.cpu": "2"},
                       {"pods": "0", "requests.cpu": "0", "limits.cpu": "0"})
    _quota_with_status(api, ns, "unknown", {"services": "1"}, {})
    _wait_in_force(api, ns)
    pods = f"/api/v1/namespaces/{ns}/pods"
    code, body = api.post(pods, _pod("a", {"cpu": "600m"}, {"cpu": "600m"}))
    assert code == 201, body
    code, q = api.get(f"{_quotas(ns)}/q")
    assert q["status"]["used"] == {"pods": "1", "requests.cpu": "600m", "limits.cpu": "600m"}
    code, body = api.post(pods, _pod("b", {"cpu": "600m"}, {"cpu": "600m"}))
    assert (code, body["reason"], body["message"]) == (
        403, "Forbidden", ('pods "b" is forbidden: exceeded quota: q, requested: '
        "requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"))
    assert body["details"] == {"name": "b", "kind": "pods"}
    code, body = api.post(pods, _pod("c"))
    assert (code, body["message"]) == (403, ('pods "c" is forbidden: failed quota: q: must '
                                            "specify limits.cpu for: c; requests.cpu for: c"))
    code, body = api.post(f"/api/v1/namespaces/{ns}/services", {"metadata": {"name": "s"},
                                                                "spec": {"ports": [{"port": 80}]}})
    assert (code, body["message"]) == (403, ('services "s" is forbidden: status unknown for '
                                            "quota: unknown, resources: services"))


def test_racing_creates_cannot_both_pass(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    _quota_with_status(api, ns, "q", {"count/secrets": "2"}, {"count/secrets": "0"})
    _wait_in_force(api, ns)

    def create(i: int) -> int:
        code, _ = api.post(f"/api/v1/namespaces/{ns}/secrets", {"metadata": {
            "name": f"s-{i}"}})
        return code

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(create, range(6)))
    assert sorted(codes) == [201, 201, 403, 403, 403, 403]
    _code, q = api.get(f"{_quotas(ns)}/q")
    assert q["status"]["used"] == {"count/secrets": "2"}


def test_limit_range_defaults_and_limits(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    limits = f"/api/v1/namespaces/{ns}/limitranges"
    code, lr = api.post(limits, {"metadata": {"name": "lr"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2000m"}, "min": {"cpu": "100m"},
         "defaultRequest": {"memory": "64Mi"}, "maxLimitRequestRatio": {"cpu": "4"}},
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}}]}})
    assert code == 201, lr
    assert lr["spec"]["limits"][0] == {
        "type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"},
        "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "64Mi"},
        "maxLimitRequestRatio": {"cpu": "4"}}
    pods = f"/api/v1/namespaces/{ns}/pods"
    code, p = api.post(pods, _pod("p1"))
    assert code == 201, p
    assert p["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2"}, "requests": {"cpu": "2", "memory": "64Mi"}}
    assert p["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container c; cpu limit for container c")
    code, body = api.post(pods, _pod("p2", {"cpu": "200m"}, {"cpu": "1500m"}))
    assert (code, body["message"]) == (
        403, ('pods "p2" is forbidden: cpu max limit to request ratio per Container is 4, but '
             "provided ratio is 7.500000"))
    code, body = api.post(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", {
        "metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                            "resources": {"requests": {"storage": "100Mi"}}}})
    assert (code, body["message"]) == (
        403, ('persistentvolumeclaims "c" is forbidden: minimum storage usage per '
             "PersistentVolumeClaim is 1Gi, but request is 100Mi"))
    code, body = api.post(limits, {"metadata": {"name": "bad"}, "spec": {"limits": [
        {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]}})
    assert code == 422, body
    assert [c["message"] for c in body["details"]["causes"]] == [
        'Invalid value: "2": min value 2 is greater than max value 1',
        'Invalid value: "1": min value 2 is greater than default request value 1',
        'Invalid value: "2": min value 2 is greater than default value 1']
