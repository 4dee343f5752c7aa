"""CRUD semantics of the embedded API server over raw HTTP."""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import Api, deployment, pod


def test_create_get_sets_system_metadata(api: Api) -> None:
    ns = api.ns()
    code, obj = api.post(f"/api/v1/namespaces/{ns}/pods", pod("p1", {"a": "1"}))
    assert code == 201, obj
    meta = obj["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert meta["namespace"] == ns
    assert obj["status"]["phase"] == "Pending"
    assert list(obj)[:3] == ["kind", "apiVersion", "metadata"]
    code, got = api.get(f"/api/v1/namespaces/{ns}/pods/p1")
    assert code == 200 and got == obj
    code, err = api.post(f"/api/v1/namespaces/{ns}/pods", pod("p1"))
    assert code == 409 and err["reason"] == "AlreadyExists"
    assert err["message"] == 'pods "p1" already exists'
    assert err["details"] == {"name": "p1", "kind": "pods"}


def test_generate_name(api: Api) -> None:
    ns = api.ns()
    body = pod("")
    body["metadata"] = {"generateName": "x" * 70}
    code, obj = api.post(f"/api/v1/namespaces/{ns}/pods", body)
    assert code == 201, obj
    name = obj["metadata"]["name"]
    assert len(name) == 63 and name.startswith("x" * 58)
    assert all(c in "bcdfghjklmnpqrstvwxz2456789" for c in name[58:])


def test_generation_and_noop_update(api: Api) -> None:
    ns = api.ns()
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    code, d = api.post(base, deployment("web"))
    assert code == 201, d
    assert d["metadata"]["generation"] == 1
    rv = d["metadata"]["resourceVersion"]
    # a no-op write keeps the revision
    code, same = api.put(f"{base}/web", d)
    assert code == 200 and same["metadata"]["resourceVersion"] == rv
    # label change: no generation bump
    code, d2 = api.patch(f"{base}/web", {"metadata": {"labels": {"x": "y"}}})
    assert code == 200 and d2["metadata"]["generation"] == 1
    assert int(d2["metadata"]["resourceVersion"]) > int(rv)
    # annotation change bumps a Deployment's generation
    code, d3 = api.patch(f"{base}/web", {"metadata": {"annotations": {"a": "b"}}})
    assert d3["metadata"]["generation"] == 2
    # spec change bumps it
    code, d4 = api.patch(f"{base}/web", {"spec": {"replicas": 3}})
    assert d4["metadata"]["generation"] == 3
    # the client cannot set generation
    d4["metadata"]["generation"] = 99
    code, d5 = api.put(f"{base}/web", d4)
    assert code == 200 and d5["metadata"]["generation"] == 3


def test_update_conflict_and_precondition(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, cm = api.post(path, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    stale = dict(cm)
    code, cm2 = api.put(f"{path}/c", {**cm, "data": {"a": "2"}})
    assert code == 200 and cm2["data"] == {"a": "2"}, cm2
    code, err = api.put(f"{path}/c", {**stale, "data": {"a": "3"}})
    assert code == 409 and err["reason"] == "Conflict"
    assert err["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has '
                              'been modified; please apply your changes to the latest version '
                              'and try again')


def test_status_and_main_writes_do_not_cross(api: Api) -> None:
    ns = api.ns()
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    api.post(base, deployment("web"))
    code, d = api.put(f"{base}/web/status", {**api.get(f"{base}/web")[1],
                                             "status": {"replicas": 5},
                                             "spec": {"replicas": 42}})
    assert code == 200, d
    assert d["status"] == {"replicas": 5} and d["spec"]["replicas"] == 1
    code, d = api.patch(f"{base}/web", {"spec": {"replicas": 2}, "status": {"replicas": 0}})
    assert d["spec"]["replicas"] == 2 and d["status"] == {"replicas": 5}


def test_scale_subresource(api: Api) -> None:
    ns = api.ns()
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    api.post(base, deployment("web", replicas=2))
    code, sc = api.get(f"{base}/web/scale")
    assert code == 200 and sc["kind"] == "Scale" and sc["apiVersion"] == "autoscaling/v1"
    assert sc["spec"] == {"replicas": 2}
    assert sc["status"]["selector"] == "app=web"
    sc["spec"]["replicas"] = 7
    code, sc2 = api.put(f"{base}/web/scale", sc)
    assert code == 200 and sc2["spec"]["replicas"] == 7
    code, sc3 = api.patch(f"{base}/web/scale", {"spec": {"replicas": 4}})
    assert code == 200 and sc3["spec"]["replicas"] == 4
    assert api.get(f"{base}/web")[1]["spec"]["replicas"] == 4


def test_binding_sets_node_once(api: Api) -> None:
    ns = api.ns()
    api.post(f"/api/v1/namespaces/{ns}/pods", pod("p"))
    b = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
         "target": {"kind": "Node", "name": "n1"}}
    code, st = api.post(f"/api/v1/namespaces/{ns}/pods/p/binding", b)
    assert code == 201 and st["status"] == "Success"
    p = api.get(f"/api/v1/namespaces/{ns}/pods/p")[1]
    assert p["spec"]["nodeName"] == "n1"
    assert any(c["type"] == "PodScheduled" and c["status"] == "True"
               for c in p["status"]["conditions"])
    code, err = api.post(f"/api/v1/namespaces/{ns}/pods/p/binding", b)
    assert code == 409 and err["kind"] == "Status", err


def test_delete_with_finalizers_and_propagation(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    api.post(path, {"metadata": {"name": "f", "finalizers": ["example.com/x"]}})
    code, obj = api.delete(f"{path}/f")
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    # no new finalizers once deleting
    code, err = api.patch(f"{path}/f", {"metadata": {"finalizers": ["example.com/x", "b/c"]}})
    assert code == 422, err
    # deletionTimestamp cannot be set or cleared by a write
    code, obj = api.patch(f"{path}/f", {"metadata": {"deletionTimestamp": None}})
    assert obj["metadata"]["deletionTimestamp"]
    # removing the last finalizer removes the object
    code, _ = api.patch(f"{path}/f", {"metadata": {"finalizers": None}})
    assert code == 200
    assert api.get(f"{path}/f")[0] == 404

    for policy, fin in (("Foreground", "foregroundDeletion"), ("Orphan", "orphan")):
        api.post(path, {"metadata": {"name": policy.lower()}})
        code, obj = api.delete(f"{path}/{policy.lower()}", {"propagationPolicy": policy})
        assert code == 200 and fin in obj["metadata"]["finalizers"], obj
    api.post(path, {"metadata": {"name": "bg"}})
    code, st = api.delete(f"{path}/bg", params={"propagationPolicy": "Background"})
    assert code == 200 and st["kind"] == "Status" and st["details"]["uid"]


def test_job_default_propagation_is_orphan(api: Api) -> None:
    ns = api.ns()
    job = {"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    code, j = api.post(f"/apis/batch/v1/namespaces/{ns}/jobs", job)
    assert code == 201, j
    code, j = api.delete(f"/apis/batch/v1/namespaces/{ns}/jobs/j")
    assert "orphan" in j["metadata"]["finalizers"]


def test_pod_graceful_delete(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/pods"
    # unscheduled: gone at once, and the pod itself is returned
    api.post(path, pod("u"))
    code, obj = api.delete(f"{path}/u")
    assert code == 200 and obj["kind"] == "Pod"
    assert api.get(f"{path}/u")[0] == 404
    # scheduled: deletionTimestamp with the grace period; a second delete may shorten it
    api.post(path, pod("s", nodeName="n1", terminationGracePeriodSeconds=30))
    code, obj = api.delete(f"{path}/s")
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 30
    code, obj = api.delete(f"{path}/s", {"gracePeriodSeconds": 60})
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 30
    code, obj = api.delete(f"{path}/s", {"gracePeriodSeconds": 0})
    assert code == 200
    assert api.get(f"{path}/s")[0] == 404


def test_delete_preconditions(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, cm = api.post(path, {"metadata": {"name": "c"}})
    code, err = api.delete(f"{path}/c", {"preconditions": {"uid": "nope"}})
    # BeforeDelete's wording (it checks before the storage layer does), naming the kind
    assert code == 409 and err["message"].startswith(
        'Operation cannot be fulfilled on ConfigMap "c": the UID in the precondition (nope) '
        "does not match the UID in record")
    code, err = api.delete(f"{path}/c", {"preconditions": {"resourceVersion": "1"}})
    assert code == 409
    code, st = api.delete(f"{path}/c", {"preconditions": {"uid": cm["metadata"]["uid"]}})
    assert code == 200 and st["details"]["uid"] == cm["metadata"]["uid"]


def test_dry_run_writes_nothing(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, obj = api.post(path, {"metadata": {"name": "d"}}, params={"dryRun": "All"})
    assert code == 201 and obj["metadata"]["name"] == "d"
    assert api.get(f"{path}/d")[0] == 404


def test_namespaces_lifecycle(api: Api) -> None:
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        code, ns = api.get(f"/api/v1/namespaces/{name}")
        assert code == 200 and ns["status"]["phase"] == "Active"
    code, err = api.delete("/api/v1/namespaces/default")
    assert code == 403 and err["reason"] == "Forbidden"
    code, err = api.post("/api/v1/namespaces/missing-ns/configmaps", {"metadata": {"name": "c"}})
    assert code == 404 and err["message"] == 'namespaces "missing-ns" not found'
    ns = api.ns()
    code, obj = api.get(f"/api/v1/namespaces/{ns}")
    assert obj["spec"]["finalizers"] == ["kubernetes"]
    assert obj["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns
    code, obj = api.delete(f"/api/v1/namespaces/{ns}")
    assert code == 200 and obj["status"]["phase"] == "Terminating"
    code, err = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "c"}})
    assert code == 403
    assert err["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    obj["spec"]["finalizers"] = []
    code, fin = api.put(f"/api/v1/namespaces/{ns}/finalize", obj)
    assert code == 200, fin
    assert api.get(f"/api/v1/namespaces/{ns}")[0] == 404


def _names(lst: dict[str, Any]) -> list[str]:
    return [i["metadata"]["name"] for i in lst["items"]]


def test_list_selectors_and_paging(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/pods"
    for i in range(7):
        api.post(path, pod(f"p{i}", {"idx": str(i), "even": str(i % 2 == 0).lower()}))
    code, lst = api.get(path, params={"labelSelector": "even=true"})
    assert _names(lst) == ["p0", "p2", "p4", "p6"]
    code, lst = api.get(path, params={"labelSelector": "idx in (1,2),even!=true"})
    assert _names(lst) == ["p1"]
    code, lst = api.get(path, params={"labelSelector": "!idx"})
    assert lst["items"] == []
    code, lst = api.get(path, params={"fieldSelector": "metadata.name=p3"})
    assert _names(lst) == ["p3"]
    code, err = api.get(path, params={"fieldSelector": "spec.bogus=x"})
    assert code == 400 and err["reason"] == "BadRequest"
    # paging: every page from the first page's snapshot
    code, page1 = api.get(path, params={"limit": 3})
    assert _names(page1) == ["p0", "p1", "p2"]
    assert page1["metadata"]["remainingItemCount"] == 4
    api.post(path, pod("p00"))  # created after the first page: not in this list
    api.delete(f"{path}/p4")    # deleted after the first page: still in this list
    code, page2 = api.get(path, params={"limit": 3, "continue": page1["metadata"]["continue"]})
    assert code == 200 and _names(page2) == ["p3", "p4", "p5"]
    assert page2["metadata"]["resourceVersion"] == page1["metadata"]["resourceVersion"]
    code, page3 = api.get(path, params={"limit": 3, "continue": page2["metadata"]["continue"]})
    assert _names(page3) == ["p6"] and "continue" not in page3["metadata"]


def test_list_resource_version_semantics(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, cm = api.post(path, {"metadata": {"name": "a"}})
    rv = int(cm["metadata"]["resourceVersion"])
    api.post(path, {"metadata": {"name": "b"}})
    code, lst = api.get(path, params={"resourceVersion": str(rv),
                                      "resourceVersionMatch": "Exact"})
    assert code == 200 and _names(lst) == ["a"]
    assert lst["metadata"]["resourceVersion"] == str(rv)
    code, lst = api.get(path, params={"resourceVersion": "0"})
    assert _names(lst) == ["a", "b"]
    code, err = api.get(path, params={"resourceVersionMatch": "Exact"})
    assert code == 422 and err["reason"] == "Invalid"
    code, err = api.get(path, params={"resourceVersion": "0", "resourceVersionMatch": "Exact"})
    assert code == 422
    code, err = api.get(path, params={"resourceVersion": str(rv + 10**9)})
    assert code == 504 and err["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert api.get("/api/v1/configmaps")[1]["items"] is not None


def test_kube_apiserver_bootstrap_configmap(api: Api) -> None:
    # kube-apiserver's legacytokentracking controller creates it at start; the real
    # kube-controller-manager's legacy-serviceaccount-token-cleaner logs an error without it.
    code, cm = api.get("/api/v1/namespaces/kube-system/configmaps/"
                       "kube-apiserver-legacy-service-account-token-tracking")
    assert code == 200, cm
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", cm["data"]["since"])


def test_service_addresses_allocated_and_kept(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/services"
    code, k = api.get("/api/v1/namespaces/default/services/kubernetes")
    assert code == 200 and k["spec"]["clusterIP"] == "10.96.0.1"
    code, a = api.post(path, {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}],
                                                                   "selector": {"app": "a"}}})
    assert code == 201, a
    ip = a["spec"]["clusterIP"]
    assert ip.startswith("10.") and a["spec"]["clusterIPs"] == [ip]
    code, b = api.post(path, {"metadata": {"name": "b"}, "spec": {
        "type": "NodePort", "ports": [{"port": 80}]}})
    assert b["spec"]["clusterIP"] != ip
    assert 30000 <= b["spec"]["ports"][0]["nodePort"] <= 32767
    code, err = api.post(path, {"metadata": {"name": "c"}, "spec": {"clusterIP": ip,
                                                                     "ports": [{"port": 80}]}})
    assert code == 422 and "already allocated" in err["message"]
    code, h = api.post(path, {"metadata": {"name": "h"}, "spec": {"clusterIP": "None",
                                                                   "ports": [{"port": 80}]}})
    assert h["spec"]["clusterIPs"] == ["None"]
    # an update that leaves the addresses out keeps them
    code, a2 = api.put(f"{path}/a", {"metadata": {"name": "a", "resourceVersion": a[
        "metadata"]["resourceVersion"]}, "spec": {"ports": [{"port": 81}]}})
    assert code == 200, a2
    assert a2["spec"]["clusterIP"] == ip
    # a deleted service frees its address
    api.delete(f"{path}/a")
    code, c = api.post(path, {"metadata": {"name": "c"}, "spec": {"clusterIP": ip,
                                                                   "ports": [{"port": 80}]}})
    assert code == 201, c


def test_aggregated_discovery(api: Api) -> None:
    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json")
    r = api.session.get(api.base + "/apis", headers={"Accept": accept}, timeout=10)
    assert r.headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    body = r.json()
    assert body["kind"] == "APIGroupDiscoveryList"
    apps = next(i for i in body["items"] if i["metadata"]["name"] == "apps")
    deploy = next(x for x in apps["versions"][0]["resources"] if x["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced" and deploy["shortNames"] == ["deploy"]
    assert {"subresource": "scale", "responseKind": {
        "group": "autoscaling", "version": "v1", "kind": "Scale"},
        "verbs": ["get", "patch", "update"]} in deploy["subresources"]
    r = api.session.get(api.base + "/api", headers={"Accept": accept}, timeout=10)
    core = r.json()["items"][0]
    assert core["metadata"]["name"] == ""
    pods = next(x for x in core["versions"][0]["resources"] if x["resource"] == "pods")
    assert pods["singularResource"] == "pod" and "all" in pods["categories"]
    # plain JSON first: the legacy documents
    r = api.session.get(api.base + "/api", headers={"Accept": "application/json"}, timeout=10)
    assert r.json()["kind"] == "APIVersions"


def test_events_k8s_io_is_a_view_of_core_events(api: Api) -> None:
    ns = api.ns()
    view = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
          "eventTime": "2026-11-29T10:00:00.000000Z", "reportingController": "me/ctl",
          "reportingInstance": "me-1", "action": "Sync", "reason": "Synced", "type": "Normal",
          "note": "all good", "regarding": {"kind": "Pod", "name": "p", "namespace": ns}}
    code, got = api.post(view, ev)
    assert code == 201, got
    assert got["apiVersion"] == "events.k8s.io/v1" and got["note"] == "all good"
    code, core = api.get(f"/api/v1/namespaces/{ns}/events/e1")
    assert core["message"] == "all good" and core["involvedObject"]["name"] == "p"
    assert core["reportingComponent"] == "me/ctl"
    code, lst = api.get(view)
    assert lst["kind"] == "EventList" and lst["items"][0]["regarding"]["kind"] == "Pod"
    # what the reporter wrote is fixed through events.k8s.io (ValidateEventUpdate)
    code, err = api.patch(f"{view}/e1", {"note": "changed"})
    assert code == 422 and err["details"]["causes"][0]["field"] == "message"
    code, patched = api.patch(f"{view}/e1", {"metadata": {"labels": {"seen": "yes"}}})
    assert code == 200 and patched["metadata"]["labels"] == {"seen": "yes"}
    assert api.get(f"/api/v1/namespaces/{ns}/events/e1")[1]["metadata"]["labels"] == {
        "seen": "yes"}
    evs = api.watch(view, {"resourceVersion": "0"}, max_events=1)
    assert evs[0]["object"]["apiVersion"] == "events.k8s.io/v1"
    assert evs[0]["object"]["note"] == "all good"
    code, err = api.get(f"{view}/missing")
    assert code == 404 and err["message"] == 'events.events.k8s.io "missing" not found'
    assert err["details"]["group"] == "events.k8s.io"
    code, _ = api.delete(f"{view}/e1")
    assert code == 200 and api.get(f"/api/v1/namespaces/{ns}/events/e1")[0] == 404


def test_status_writes_follow_each_kinds_status_strategy(api: Api) -> None:
    """Built-in /status writes reset the spec, not the metadata (Deployment: labels kept;
    Pod: ownerReferences kept); the generation does not move."""
    ns = api.ns()
    code, d = api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("st"))
    assert code == 201, d
    d["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = "1"
    d["metadata"]["labels"] = {"changed": "yes"}
    d["spec"]["replicas"] = 7
    d["status"] = {"observedGeneration": 1, "replicas": 0}
    code, out = api.put(f"/apis/apps/v1/namespaces/{ns}/deployments/st/status", d)
    assert code == 200, out
    assert out["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert out["metadata"].get("labels") != {"changed": "yes"}
    assert out["metadata"]["generation"] == 1
    assert out["spec"]["replicas"] == 1
    assert out["status"]["observedGeneration"] == 1

    code, p = api.post(f"/api/v1/namespaces/{ns}/pods", pod("sp"))
    assert code == 201, p
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x",
           "uid": "6a3b7c2e-0000-4000-8000-000000000001"}
    code, out = api.patch(f"/api/v1/namespaces/{ns}/pods/sp/status",
                          {"metadata": {"labels": {"via": "status"}, "ownerReferences": [ref]},
                           "status": {"phase": "Running"}})
    assert code == 200, out
    assert out["metadata"]["labels"] == {"via": "status"}
    assert "ownerReferences" not in out["metadata"]
    assert out["status"]["phase"] == "Running"
