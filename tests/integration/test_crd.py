"""CustomResourceDefinitions and custom resources over raw HTTP."""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import Api

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd(group: str, plural: str = "widgets", kind: str = "Widget", scope: str = "Namespaced",
        subresources: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "shortNames": ["wd" + group[:3]]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": subresources or {},
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "additionalPrinterColumns": [
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["color"], "properties": {
                            "color": {"type": "string", "enum": ["red", "blue"]},
                            "size": {"type": "integer", "minimum": 1, "default": 3},
                            "replicas": {"type": "integer"},
                            "free": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True},
                        }},
                        "status": {"type": "object", "properties": {
                            "phase": {"type": "string"}, "replicas": {"type": "integer"}}},
                    }}},
            }],
        },
    }


def _group(api: Api) -> str:
    return api.ns() + ".example.com"


def test_crd_established_and_served(api: Api) -> None:
    g = _group(api)
    code, c = api.post(CRDS, crd(g, subresources={"status": {}}))
    assert code == 201, c
    # The create's answer is the CRD before the controllers' write, as upstream's
    assert c["status"]["conditions"] is None
    assert c["status"]["acceptedNames"] == {"plural": "", "kind": ""}
    code, c = api.get(f"{CRDS}/{c['metadata']['name']}")
    conds = {x["type"]: x for x in c["status"]["conditions"]}
    assert conds["NamesAccepted"]["status"] == "True"
    assert conds["Established"]["status"] == "True"
    assert c["status"]["acceptedNames"]["kind"] == "Widget"
    assert c["status"]["storedVersions"] == ["v1"]
    code, rl = api.get(f"/apis/{g}/v1")
    assert code == 200
    names = {r["name"]: r for r in rl["resources"]}
    assert names["widgets"]["kind"] == "Widget" and names["widgets"]["namespaced"]
    assert "widgets/status" in names
    code, groups = api.get("/apis")
    assert any(x["name"] == g for x in groups["groups"])


def test_custom_resource_pipeline(api: Api) -> None:
    g = _group(api)
    api.post(CRDS, crd(g, subresources={"status": {}}))
    ns = api.ns()
    path = f"/apis/{g}/v1/namespaces/{ns}/widgets"
    w = {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "w1"},
         "spec": {"color": "red", "unknown": 1, "free": {"any": {"thing": 1}}},
         "status": {"phase": "ignored"}}
    code, obj = api.post(path, w)
    assert code == 201, obj
    assert obj["spec"] == {"color": "red", "size": 3, "free": {"any": {"thing": 1}}}  # pruned,
    assert "status" not in obj  # status is a subresource: reset on create
    assert obj["metadata"]["generation"] == 1
    # schema validation
    bad = {**w, "metadata": {"name": "w2"}, "spec": {"color": "green", "size": 0}}
    code, err = api.post(path, bad)
    assert code == 422 and err["reason"] == "Invalid", err
    fields = {c["field"] for c in err["details"]["causes"]}
    assert {"spec.color", "spec.size"} <= fields
    # resourceVersion is required on update
    code, err = api.put(f"{path}/w1", {**w, "spec": {"color": "blue"}})
    assert code == 422
    code, upd = api.put(f"{path}/w1", {**obj, "spec": {"color": "blue"}})
    assert code == 200 and upd["metadata"]["generation"] == 2
    # metadata-only change: same generation
    code, upd = api.patch(f"{path}/w1", {"metadata": {"labels": {"a": "b"}}})
    assert upd["metadata"]["generation"] == 2
    # status subresource
    code, st = api.patch(f"{path}/w1/status", {"status": {"phase": "Ready"}})
    assert code == 200 and st["status"] == {"phase": "Ready"}
    assert st["metadata"]["generation"] == 2
    # strategic merge patch is refused for custom resources
    code, err = api.patch(f"{path}/w1", {"spec": {"color": "red"}},
                          content_type="application/strategic-merge-patch+json")
    assert code == 415
    # selectable fields
    api.post(path, {**w, "metadata": {"name": "w3"}, "spec": {"color": "red"}})
    code, lst = api.get(path, params={"fieldSelector": "spec.color=red"})
    assert [i["metadata"]["name"] for i in lst["items"]] == ["w3"]
    code, err = api.get(path, params={"fieldSelector": "spec.size=3"})
    assert code == 400
    # table output with the printer columns
    r = api.session.get(api.base + path, headers={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, timeout=10)
    t = r.json()
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Color", "Age"]
    assert t["rows"][0]["cells"][:2] == ["w1", "blue"]


def test_cluster_scoped_and_scale(api: Api) -> None:
    g = _group(api)
    code, c = api.post(CRDS, crd(g, plural="gadgets", kind="Gadget", scope="Cluster",
                                 subresources={"status": {}, "scale": {
                                     "specReplicasPath": ".spec.replicas",
                                     "statusReplicasPath": ".status.replicas"}}))
    assert code == 201, c
    path = f"/apis/{g}/v1/gadgets"
    code, obj = api.post(path, {"apiVersion": f"{g}/v1", "kind": "Gadget",
                                "metadata": {"name": "x"},
                                "spec": {"color": "blue", "replicas": 2}})
    assert code == 201, obj
    assert "namespace" not in obj["metadata"]
    code, sc = api.get(f"{path}/x/scale")
    assert code == 200 and sc["spec"]["replicas"] == 2, sc
    code, sc = api.patch(f"{path}/x/scale", {"spec": {"replicas": 5}})
    assert code == 200 and sc["spec"]["replicas"] == 5
    assert api.get(f"{path}/x")[1]["spec"]["replicas"] == 5


def test_deleting_crd_deletes_resources_and_discovery(api: Api) -> None:
    g = _group(api)
    api.post(CRDS, crd(g))
    ns = api.ns()
    path = f"/apis/{g}/v1/namespaces/{ns}/widgets"
    for i in range(3):
        code, _ = api.post(path, {"apiVersion": f"{g}/v1", "kind": "Widget",
                                  "metadata": {"name": f"w{i}"}, "spec": {"color": "red"}})
        assert code == 201
    code, c = api.delete(f"{CRDS}/widgets.{g}")
    assert code == 200, c
    for _ in range(100):
        if api.get(f"{CRDS}/widgets.{g}")[0] == 404:
            break
        time.sleep(0.05)
    assert api.get(f"{CRDS}/widgets.{g}")[0] == 404
    assert api.get(path)[0] == 404
    assert api.get(f"/apis/{g}/v1")[0] == 404


def test_crd_validation(api: Api) -> None:
    g = _group(api)
    bad = crd(g)
    bad["metadata"]["name"] = "wrong.name"
    code, err = api.post(CRDS, bad)
    assert code == 422 and err["reason"] == "Invalid", err
