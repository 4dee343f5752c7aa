"""managedFields on every write, on pykcm's server and on the real kube-apiserver.

A create, update or patch that is no apply records an Update entry for its manager
(``?fieldManager=``, else the user agent up to its first ``/``) and subresource; a
later apply conflicts with those managers by name. The field manager's algorithm is
proven in tests/differential/fieldmanager; this checks that the server calls it on
every write path: POST, PUT, merge patch, ``/status`` and custom resources.
"""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import Api

APPLY = "application/apply-patch+yaml"
KUBECTL_CREATE = {"User-Agent": "kubectl-create/v1.36.2 (linux/amd64) kubernetes/abcdef0"}
KCM = {"User-Agent": "kube-controller-manager/v1.36.2 (linux/amd64) kubernetes/abcdef0/"
                     "system:serviceaccount:kube-system:deployment-controller"}


def _entries(obj: dict[str, Any]) -> list[tuple[str, str, str, str, Any]]:
    return [(e["manager"], e["operation"], e["apiVersion"], e.get("subresource", ""),
             e["fieldsV1"]) for e in obj["metadata"].get("managedFields") or []]


def test_create_then_apply_conflicts_with_the_creator(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    code, cm = api.post(f"/api/v1/namespaces/{ns}/configmaps",
                        {"metadata": {"name": "cm", "labels": {"l": "1"}}, "data": {"a": "1"}},
                        headers=KUBECTL_CREATE)
    assert code == 201, cm
    assert _entries(cm) == [("kubectl-create", "Update", "v1", "", {
        "f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:l": {}}}})]
    path = f"/api/v1/namespaces/{ns}/configmaps/cm"
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
               "data": {"a": "2"}}
    code, body = api.patch(path, applied, APPLY, params={"fieldManager": "applier"})
    assert code == 409, body
    assert body["message"] == ('Apply failed with 1 conflict: conflict with "kubectl-create" '
                               'using v1: .data.a')
    # an update by another client takes the fields it changed from the creator
    cm["data"]["a"] = "3"
    cm["data"]["b"] = "1"
    code, cm = api.put(path, cm, params={"fieldManager": "editor"})
    assert code == 200, cm
    assert sorted(_entries(cm), key=str) == sorted([
        ("kubectl-create", "Update", "v1", "", {"f:data": {},
                                                "f:metadata": {"f:labels": {".": {},
                                                                           "f:l": {}}}}),
        ("editor", "Update", "v1", "", {"f:data": {"f:a": {}, "f:b": {}}})], key=str)
    code, cm = api.patch(path, applied, APPLY, params={"fieldManager": "applier", "force": "true"})
    assert code == 200, cm
    assert _entries(cm)[0][:2] == ("applier", "Apply")
    assert {m for m, *_ in _entries(cm)} == {"applier", "kubectl-create", "editor"}
    # a write that changes nothing keeps the entries and the revision
    code, same = api.patch(path, {"data": {"a": "2"}}, params={"fieldManager": "noop"})
    assert code == 200 and same["metadata"]["managedFields"] == cm["metadata"]["managedFields"]
    assert same["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


def test_controller_status_updates_are_entries_of_the_status_subresource(
        apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    code, obj = api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deploy,
                         headers=KUBECTL_CREATE)
    assert code == 201, obj
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    status = {"status": {"observedGeneration": 1, "replicas": 1, "conditions": [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
         "lastUpdateTime": "2026-12-02T00:00:00Z", "lastTransitionTime": "2026-12-02T00:00:00Z"}]}}
    code, obj = api.patch(path + "/status", status, headers=KCM)
    assert code == 200, obj
    kcm = [e for e in _entries(obj) if e[0] == "kube-controller-manager"]
    assert kcm == [("kube-controller-manager", "Update", "apps/v1", "status", {"f:status": {
        "f:conditions": {".": {}, 'k:{"type":"Available"}': {
            ".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:reason": {},
            "f:status": {}, "f:type": {}}},
        "f:observedGeneration": {}, "f:replicas": {}}})]
    # the creator still owns the spec: a server-side apply of other replicas conflicts
    applied = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": 3}}
    code, body = api.patch(path, applied, APPLY, params={"fieldManager": "kubectl"})
    assert code == 409, body
    assert body["message"] == ('Apply failed with 1 conflict: conflict with "kubectl-create" '
                               'using apps/v1: .spec.replicas')


def test_custom_resources_are_tracked_from_create(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    group = f"track{int(time.time() * 1000) % 10**8}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"gadgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                            "type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}
    code, body = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 201, body
    cr = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"},
          "spec": {"size": 1}}
    deadline = time.monotonic() + 30
    while True:
        code, obj = api.post(f"/apis/{group}/v1/namespaces/{ns}/gadgets", cr,
                             params={"fieldManager": "maker"})
        if code != 404 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert code == 201, obj
    assert _entries(obj) == [("maker", "Update", f"{group}/v1", "",
                              {"f:spec": {".": {}, "f:size": {}}})]
    api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}")


def test_scale_writes_and_applies_are_tracked_on_the_parent(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    code, obj = api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", deploy,
                         headers=KUBECTL_CREATE)
    assert code == 201, obj
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    code, scale = api.get(path + "/scale")
    assert code == 200, scale
    assert "managedFields" not in scale["metadata"]     # the Scale read is a plain view
    code, scale = api.patch(path + "/scale", {"spec": {"replicas": 3}},
                            headers={"User-Agent": "kubectl/v1.36.2 (linux/amd64)"})
    assert code == 200 and scale["spec"]["replicas"] == 3, scale
    code, obj = api.get(path)
    mine = {e[0]: e for e in _entries(obj)}
    assert mine["kubectl"] == ("kubectl", "Update", "apps/v1", "scale",
                               {"f:spec": {"f:replicas": {}}})
    assert "f:replicas" not in mine["kubectl-create"][4]["f:spec"]
    # an apply through /scale conflicts with the manager that scaled, then forces
    applied = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},
               "spec": {"replicas": 5}}
    code, body = api.patch(path + "/scale", applied, APPLY, params={"fieldManager": "hpa"})
    assert code == 409, body
    code, scale = api.patch(path + "/scale", applied, APPLY,
                            params={"fieldManager": "hpa", "force": "true"})
    assert code == 200, scale
    assert scale["spec"]["replicas"] == 5
    code, obj = api.get(path)
    assert obj["spec"]["replicas"] == 5
    assert ("hpa", "Apply", "apps/v1", "scale", {"f:spec": {"f:replicas": {}}}) in _entries(obj)
