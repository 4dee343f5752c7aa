"""Server-side apply through the API server, on pykcm's and on the real kube-apiserver.

The field manager itself is proven step by step against kube-apiserver in
tests/differential/fieldmanager; this checks the wiring: PATCH apply-patch+yaml creates and
updates, its managedFields, conflicts and force, ``/status`` applies, custom resources,
updates of an applied object, and the refused requests. Tracking from creation (both
servers record every create) is tests/integration/test_managed_fields_tracking.py.
"""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import Api

APPLY = "application/apply-patch+yaml"


def _fields(obj: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    return [(e["manager"], e["operation"], e.get("subresource", ""), e["fieldsV1"])
            for e in obj["metadata"].get("managedFields") or []]


def _deploy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": spec}


def test_apply_creates_updates_conflicts_and_forces(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    full = _deploy(replicas=2, selector={"matchLabels": {"app": "web"}}, template={
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}})
    code, obj = api.patch(path, full, APPLY, params={"fieldManager": "deployer"})
    assert code == 201, obj
    assert obj["spec"]["progressDeadlineSeconds"] == 600       # defaulted after the merge
    assert _fields(obj) == [("deployer", "Apply", "", {"f:spec": {
        "f:replicas": {}, "f:selector": {}, "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {'k:{"name":"c"}': {
                ".": {}, "f:image": {}, "f:name": {},
                "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {
                    ".": {}, "f:containerPort": {}}}}}}}}})]
    # the same configuration again: no new revision
    code, again = api.patch(path, full, APPLY, params={"fieldManager": "deployer"})
    assert code == 200 and again["metadata"]["resourceVersion"] == obj["metadata"][
        "resourceVersion"]
    # another manager changing a field the deployer owns: 409, then force
    code, body = api.patch(path, _deploy(replicas=5), APPLY, params={"fieldManager": "hpa"})
    assert code == 409, body
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "deployer": .spec.replicas'
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                          "message": 'conflict with "deployer"',
                                          "field": ".spec.replicas"}]
    code, obj = api.patch(path, _deploy(replicas=5), APPLY,
                          params={"fieldManager": "hpa", "force": "true"})
    assert code == 200 and obj["spec"]["replicas"] == 5
    assert [(m, op) for m, op, _, _ in _fields(obj)] == [("deployer", "Apply"), ("hpa", "Apply")]
    # an Update of the applied object is tracked under its manager
    code, obj = api.patch(path, {"metadata": {"labels": {"team": "a"}}},
                          params={"fieldManager": "labeler"})
    assert code == 200, obj
    assert ("labeler", "Update", "", {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}
            ) in _fields(obj)
    # the deployer stops applying the container port (removed: nobody else owns it) and the
    # replicas the hpa took over (else a conflict with the hpa)
    full["spec"]["template"]["spec"]["containers"][0].pop("ports")
    full["spec"].pop("replicas")
    code, obj = api.patch(path, full, APPLY, params={"fieldManager": "deployer"})
    assert code == 200, obj
    assert "ports" not in obj["spec"]["template"]["spec"]["containers"][0]
    assert obj["spec"]["replicas"] == 5      # not the deployer's any more: the hpa's value


def test_status_apply_owns_status_only(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    code, obj = api.patch(path, _deploy(replicas=1, selector={"matchLabels": {"a": "b"}},
                                        template={"metadata": {"labels": {"a": "b"}}, "spec": {
                                            "containers": [{"name": "c", "image": "x"}]}}),
                          APPLY, params={"fieldManager": "deployer"})
    assert code == 201, obj
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 9}, "status": {"replicas": 1, "observedGeneration": 1}}
    code, obj = api.patch(path + "/status", status, APPLY, params={"fieldManager": "ctrl"})
    assert code == 200, obj
    assert obj["spec"]["replicas"] == 1 and obj["status"]["replicas"] == 1
    assert ("ctrl", "Apply", "status",
            {"f:status": {"f:observedGeneration": {}, "f:replicas": {}}}) in _fields(obj)


def test_custom_resource_apply(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    group = f"ssa{int(time.time() * 1000) % 10**8}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                            "type": "object", "properties": {
                                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                                         "items": {"type": "string"}}}}}}}}]}}
    code, body = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 201, body
    path = f"/apis/{group}/v1/namespaces/{ns}/widgets/w"
    cr = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
          "spec": {"tags": ["a", "b"]}}
    deadline = time.monotonic() + 30
    while True:
        code, obj = api.patch(path, cr, APPLY, params={"fieldManager": "one"})
        if code != 404 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert code == 201, obj
    cr["spec"]["tags"] = ["c"]
    code, obj = api.patch(path, cr, APPLY, params={"fieldManager": "two"})
    assert code == 200, obj
    assert obj["spec"]["tags"] == ["a", "b", "c"]          # a set: merged, not replaced
    api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")


def test_refused_applies(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps/c"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    code, body = api.patch(path, cm, APPLY)
    assert (code, body["message"]) == (422, ('PatchOptions.meta.k8s.io "" is invalid: '
                                             "fieldManager: Required value: is required for "
                                             "apply patch"))
    code, body = api.patch(path, dict(cm, kind="Secret"), APPLY, params={"fieldManager": "m"})
    assert (code, body["message"]) == (400, "invalid object type: /v1, Kind=Secret")
    code, body = api.patch(path, {"data": {"a": "1"}}, params={"force": "true",
                                                                "fieldManager": "m"})
    assert code == 422 and body["details"]["causes"][0]["field"] == "force"
    code, body = api.patch(path, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "c", "managedFields": []}}, APPLY,
                           params={"fieldManager": "m"})
    assert (code, body["message"]) == (400, "metadata.managedFields must be nil")
