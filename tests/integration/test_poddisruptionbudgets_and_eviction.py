"""policy/v1 PodDisruptionBudgets and the pods/eviction subresource, on both API servers.

The same requests, the same answers expected from pykcm's server and kube-apiserver v1.36:
create defaults (the zero status, generation 1), validation messages, the Table columns of
``kubectl get pdb``, the status subresource; evictions refused (429 with upstream's causes,
403, 500 for two budgets, 400/422 for a bad Eviction) or done (201, the budget's
disruptionsAllowed decremented and the pod in disruptedPods, the pod's DisruptionTarget
condition). Budget statuses are written by the test as the disruption controller would.
"""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import Api

PDBS = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _pod(api: Api, ns: str, name: str, labels: dict[str, str], phase: str = "Running",
         ready: bool = True, finalizer: bool = False) -> None:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if finalizer:
        meta["finalizers"] = ["test.pykcm.io/hold"]
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods", {
        "metadata": meta, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    assert code == 201, body
    code, body = api.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": {
        "phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                        "lastTransitionTime": _now()}]}})
    assert code == 200, body


def _pdb(api: Api, ns: str, name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    code, body = api.post(PDBS.format(ns=ns), {"apiVersion": "policy/v1",
                                               "kind": "PodDisruptionBudget",
                                               "metadata": {"name": name}, "spec": spec})
    assert code == 201, body
    out: dict[str, Any] = body
    return out


def _set_status(api: Api, ns: str, name: str, **status: Any) -> dict[str, Any]:
    code, pdb = api.get(f"{PDBS.format(ns=ns)}/{name}")
    assert code == 200, pdb
    pdb["status"] = {"observedGeneration": pdb["metadata"]["generation"], "currentHealthy": 0,
                     "desiredHealthy": 0, "expectedPods": 0, "disruptionsAllowed": 0, **status}
    code, body = api.put(f"{PDBS.format(ns=ns)}/{name}/status", pdb)
    assert code == 200, body
    out: dict[str, Any] = body
    return out


def _evict(api: Api, ns: str, name: str, **extra: Any) -> tuple[int, Any]:
    return api.post(f"/api/v1/namespaces/{ns}/pods/{name}/eviction", {
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": name, "namespace": ns}, **extra})


def _refused(cause: str, retry_after: int = 0) -> dict[str, Any]:
    details: dict[str, Any] = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": TOO_MANY, "reason": "TooManyRequests", "details": details, "code": 429}


SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
           "code": 201}


def test_create_status_generation_and_table(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    created = _pdb(api, ns, "a", minAvailable=2,
                   unhealthyPodEvictionPolicy="AlwaysAllow")
    assert created["status"] == {"currentHealthy": 0, "desiredHealthy": 0,
                                 "disruptionsAllowed": 0, "expectedPods": 0}
    assert created["metadata"]["generation"] == 1
    _pdb(api, ns, "b", maxUnavailable="25%")
    # a status sent on create is dropped; a spec write keeps the status, a status write the spec
    _set_status(api, ns, "a", disruptionsAllowed=1, currentHealthy=3, desiredHealthy=2,
                expectedPods=3)
    code, pdb = api.patch(f"{PDBS.format(ns=ns)}/a", {"spec": {"minAvailable": 1},
                                                      "status": {"disruptionsAllowed": 7}})
    assert code == 200, pdb
    assert pdb["metadata"]["generation"] == 2
    assert pdb["status"]["disruptionsAllowed"] == 1
    code, pdb = api.patch(f"{PDBS.format(ns=ns)}/a/status", {"spec": {"minAvailable": 5},
                                                             "status": {"expectedPods": 4}})
    assert code == 200, pdb
    assert (pdb["spec"]["minAvailable"], pdb["status"]["expectedPods"],
            pdb["metadata"]["generation"]) == (1, 4, 2)
    code, table = api.get(PDBS.format(ns=ns),
                          headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert code == 200, table
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"), ("Min Available", "string"), ("Max Unavailable", "string"),
        ("Allowed Disruptions", "integer"), ("Age", "string")]
    assert [r["cells"][:4] for r in table["rows"]] == [["a", "1", "N/A", 1],
                                                        ["b", "N/A", "25%", 0]]
    code, resources = api.get("/apis/policy/v1")
    assert code == 200
    assert {(r["name"], tuple(r.get("shortNames") or ()), tuple(r["verbs"]))
            for r in resources["resources"]} == {
        ("poddisruptionbudgets", ("pdb",), ("create", "delete", "deletecollection", "get",
                                            "list", "patch", "update", "watch")),
        ("poddisruptionbudgets/status", (), ("get", "patch", "update"))}
    code, core = api.get("/api/v1")
    eviction = next(r for r in core["resources"] if r["name"] == "pods/eviction")
    assert eviction == {"name": "pods/eviction", "singularName": "", "namespaced": True,
                        "group": "policy", "version": "v1", "kind": "Eviction",
                        "verbs": ["create"]}


def _invalid(name: str, causes: list[tuple[str, str, str]]) -> dict[str, Any]:
    def text(field: str, message: str) -> str:
        return f"{field}: {message}"
    msgs = [text(f, m) for _, f, m in causes]
    summary = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'PodDisruptionBudget.policy "{name}" is invalid: {summary}',
            "reason": "Invalid", "details": {
                "name": name, "group": "policy", "kind": "PodDisruptionBudget",
                "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes]},
            "code": 422}


def test_validation_messages(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    code, body = api.post(PDBS.format(ns=ns), {"metadata": {"name": "x1"}, "spec": {
        "minAvailable": 1, "maxUnavailable": "120%", "selector": {"matchLabels": {"a": "b"}}}})
    assert (code, body) == (422, _invalid("x1", [
        ("FieldValueInvalid", "spec", ('Invalid value: {"MinAvailable":1,"Selector":'
         '{"matchLabels":{"a":"b"}},"MaxUnavailable":"120%","UnhealthyPodEvictionPolicy":null}'
         ": minAvailable and maxUnavailable cannot be both set")),
        ("FieldValueInvalid", "spec.maxUnavailable",
         'Invalid value: "120%": must not be greater than 100%')]))
    code, body = api.post(PDBS.format(ns=ns), {"metadata": {"name": "x2"}, "spec": {
        "minAvailable": -1, "unhealthyPodEvictionPolicy": "Never",
        "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}})
    assert (code, body) == (422, _invalid("x2", [
        ("FieldValueInvalid", "spec.minAvailable",
         "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueRequired", "spec.selector.matchExpressions[0].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("FieldValueNotSupported", "spec.unhealthyPodEvictionPolicy",
         'Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"')]))
    code, body = api.post(PDBS.format(ns=ns), {"metadata": {"name": "x3"},
                                               "spec": {"maxUnavailable": "-5%"}})
    assert (code, body) == (422, _invalid("x3", [
        ("FieldValueInvalid", "spec.maxUnavailable",
         ("Invalid value: \"-5%\": a valid percent string must be a numeric string followed by "
          "an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"))]))
    _pdb(api, ns, "ok", minAvailable=1)
    code, pdb = api.get(f"{PDBS.format(ns=ns)}/ok")
    pdb["status"] = {"disruptionsAllowed": -1, "conditions": [
        {"type": "DisruptionAllowed", "status": "Maybe", "reason": "", "message": "",
         "lastTransitionTime": _now()}]}
    code, body = api.put(f"{PDBS.format(ns=ns)}/ok/status", pdb)
    assert code == 422, body
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("status.conditions[0].status",
         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
        ("status.conditions[0].reason", "Required value"),
        ("status.disruptionsAllowed", "Invalid value: -1: must be greater than or equal to 0")]


def test_eviction_honours_the_budget(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    _pod(api, ns, "free", {"app": "free"})
    assert _evict(api, ns, "free") == (201, SUCCESS)
    assert api.get(f"/api/v1/namespaces/{ns}/pods/free")[0] == 404
    for i in range(3):
        _pod(api, ns, f"web-{i}", {"app": "web"}, finalizer=True)
    _pod(api, ns, "done", {"app": "web"}, phase="Succeeded", ready=False)
    _pod(api, ns, "sick", {"app": "web"}, ready=False)
    _pdb(api, ns, "budget", minAvailable=2)
    # no controller has looked at the budget yet
    assert _evict(api, ns, "web-0") == (429, _refused(
        "The disruption budget budget is still being processed by the server.", 10))
    # terminal pods go whatever the budget
    assert _evict(api, ns, "done") == (201, SUCCESS)
    _set_status(api, ns, "budget", currentHealthy=2, desiredHealthy=2, expectedPods=4)
    assert _evict(api, ns, "web-0") == (429, _refused(
        "The disruption budget budget needs 2 healthy pods and has 2 currently"))
    # an unready pod of a budget that is met goes without using the budget
    assert _evict(api, ns, "sick") == (201, SUCCESS)
    _set_status(api, ns, "budget", currentHealthy=3, desiredHealthy=2, expectedPods=3,
                disruptionsAllowed=1)
    assert _evict(api, ns, "web-0", deleteOptions={"dryRun": ["All"]}) == (201, SUCCESS)
    _, pdb = api.get(f"{PDBS.format(ns=ns)}/budget")
    assert pdb["status"]["disruptionsAllowed"] == 1 and "disruptedPods" not in pdb["status"]
    assert _evict(api, ns, "web-0") == (201, SUCCESS)
    _, pdb = api.get(f"{PDBS.format(ns=ns)}/budget")
    st = pdb["status"]
    assert st["disruptionsAllowed"] == 0 and list(st["disruptedPods"]) == ["web-0"]
    assert [(c["type"], c["status"], c["reason"], c["message"], c["observedGeneration"])
            for c in st["conditions"]] == [("DisruptionAllowed", "False", "InsufficientPods",
                                            "", 1)]
    _, pod = api.get(f"/api/v1/namespaces/{ns}/pods/web-0")
    assert pod["metadata"].get("deletionTimestamp")
    target = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (target["status"], target["reason"], target["message"]) == (
        "True", "EvictionByEvictionAPI", "Eviction API: evicting")
    assert _evict(api, ns, "web-1") == (429, _refused(
        "The disruption budget budget does not allow evicting pods currently"))
    # a failed sync's message is passed on
    _set_status(api, ns, "budget", currentHealthy=5, desiredHealthy=2, conditions=[
        {"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed",
         "message": "boom", "lastTransitionTime": _now()}])
    assert _evict(api, ns, "web-1") == (429, _refused(
        "The disruption budget budget does not allow evicting pods currently because it "
        "failed sync: boom"))
    _pdb(api, ns, "second", maxUnavailable=1)
    assert _evict(api, ns, "web-2") == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction "
                   "subresource does not support.", "code": 500})
    for i in range(3):
        api.patch(f"/api/v1/namespaces/{ns}/pods/web-{i}", {"metadata": {"finalizers": None}})


def test_bad_evictions(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    _pod(api, ns, "p", {"app": "x"})
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods/p/eviction", {
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}})
    assert (code, body["message"]) == (400, "name in URL does not match name in Eviction object")
    code, body = _evict(api, ns, "p", deleteOptions={
        "ignoreStoreReadErrorWithClusterBreakingPotential": True})
    assert (code, body["details"]["causes"]) == (422, [{
        "reason": "FieldValueInvalid",
        "message": "Invalid value: true: can not be set for pod eviction, try after removing "
                   "the option",
        "field": "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential"}])
    code, body = _evict(api, ns, "nosuch")
    assert (code, body["message"]) == (404, 'pods "nosuch" not found')
    # policy/v1beta1 Evictions are accepted too
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods/p/eviction", {
        "apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "p"}})
    assert (code, body) == (201, SUCCESS)
