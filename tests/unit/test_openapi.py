"""OpenAPI v3 documents (/openapi/v3) and unknown-field detection (fieldValidation)."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from pykcm.api.resources import ResourceInfo, ResourceRegistry, builtin_registry
from pykcm.apiserver.endpoints import openapi
from pykcm.apiserver.endpoints.openapi import (
    DATA_PATH,
    OpenAPI,
    custom_schema_name,
    field_validation_error,
    field_warning_headers,
    parse_field_validation,
    strict_decoding_message,
    strict_error,
    unknown_field_messages,
    warning_header,
)
from pykcm.apiserver.errors import StatusError

REF = "#/components/schemas/"
BUILTIN_PATCH_TYPES = {"application/apply-patch+yaml", "application/json-patch+json",
                       "application/merge-patch+json", "application/strategic-merge-patch+json"}

CRONTAB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "cronSpec": {"type": "string"},
                "replicas": {"type": "integer"},
                "ports": {"type": "array", "items": {
                    "type": "object", "properties": {"name": {"type": "string"},
                                                     "port": {"type": "integer"}}}},
                "workers": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"image": {"type": "string"}}}},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "tuned": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "properties": {"inner": {"type": "object",
                                                   "properties": {"a": {"type": "string"}}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object", "properties": {
                                 "x": {"type": "string"}}}}},
                "matrix": {"type": "array", "items": {"type": "array", "items": {
                    "type": "object", "properties": {"v": {"type": "integer"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "additionalProperties": True},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


@pytest.fixture(scope="module")
def api() -> OpenAPI:
    return OpenAPI(builtin_registry())


def _doc(api: OpenAPI, gv: str) -> dict[str, Any]:
    body = api.document(gv)
    assert body is not None, gv
    out: dict[str, Any] = json.loads(body)
    return out


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _schema_nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every schema node under a schema (not property names)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for sub in (schema.get("properties") or {}).values():
        yield from _schema_nodes(sub)
    for key in ("items", "additionalProperties"):
        yield from _schema_nodes(schema.get(key))
    for key in ("allOf", "oneOf", "anyOf"):
        for sub in schema.get(key) or ():
            yield from _schema_nodes(sub)


def _patch_ops(doc: dict[str, Any], gvk: dict[str, str]) -> list[dict[str, Any]]:
    """PATCH operations whose x-kubernetes-group-version-kind is gvk (kubectl's lookup)."""
    return [item["patch"] for item in doc["paths"].values()
            if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"] == gvk]


# -- data file ---------------------------------------------------------------------------------


def test_data_file_is_small_and_complete() -> None:
    assert DATA_PATH.stat().st_size < 1024 * 1024
    schemas = openapi.builtin_schemas()
    gvks = {(e.get("group", ""), e["version"], e["kind"])
            for s in schemas.values() for e in s.get("x-kubernetes-group-version-kind", [])}
    for r in builtin_registry().all():
        if r.group == "metrics.k8s.io":
            continue  # metrics-server's types: not kube-apiserver's, openapi.py defines them
        assert (r.group, r.version, r.kind) in gvks
        if r.stored:  # the reviews have no List kind
            assert (r.group, r.version, r.list_kind) in gvks
    assert ("autoscaling", "v1", "Scale") in gvks and ("", "v1", "Binding") in gvks
    assert ("authentication.k8s.io", "v1", "TokenRequest") in gvks


def test_definitions_are_openapi_v3_not_json_schema() -> None:
    schemas = openapi.builtin_schemas()
    for name, schema in schemas.items():
        for node in _schema_nodes(schema):
            assert isinstance(node.get("type", ""), str), (name, node)  # no ["string", "null"]
            assert "nullable" not in node and "$defs" not in node
            ref = node.get("$ref")
            if ref is not None:
                assert ref.startswith(REF) and ref[len(REF):] in schemas, ref
                assert set(node) == {"$ref"}, node  # siblings go through allOf
    deploy = schemas["io.k8s.api.apps.v1.Deployment"]
    # kubernetes-validate's enum on apiVersion/kind is not upstream's
    assert deploy["properties"]["apiVersion"] == {
        "description": deploy["properties"]["apiVersion"]["description"], "type": "string"}
    assert deploy["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}]
    # a reference with a description is wrapped in allOf, as upstream does
    assert deploy["properties"]["spec"]["allOf"] == [
        {"$ref": REF + "io.k8s.api.apps.v1.DeploymentSpec"}]
    assert deploy["properties"]["spec"]["description"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["items"] == {"$ref": REF + "io.k8s.api.core.v1.Container"}
    ios = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert ios["format"] == "int-or-string" and "type" not in ios
    assert [t["type"] for t in ios["oneOf"]] == ["integer", "string"]
    assert "PodSpec is a description of a pod." in schemas["io.k8s.api.core.v1.PodSpec"][
        "description"]


# -- documents -----------------------------------------------------------------------------------


def test_index_lists_every_group_version_with_hash(api: OpenAPI) -> None:
    index = api.index()
    assert sorted(index["paths"]) == [
        "api/v1", "apis/admissionregistration.k8s.io/v1", "apis/apiextensions.k8s.io/v1",
        "apis/apiregistration.k8s.io/v1", "apis/apps/v1",
        "apis/authentication.k8s.io/v1", "apis/authorization.k8s.io/v1", "apis/autoscaling/v1",
        "apis/autoscaling/v2", "apis/batch/v1", "apis/certificates.k8s.io/v1",
        "apis/coordination.k8s.io/v1", "apis/discovery.k8s.io/v1", "apis/events.k8s.io/v1",
        "apis/flowcontrol.apiserver.k8s.io/v1", "apis/metrics.k8s.io/v1beta1",
        "apis/networking.k8s.io/v1", "apis/node.k8s.io/v1", "apis/policy/v1",
        "apis/rbac.authorization.k8s.io/v1", "apis/resource.k8s.io/v1",
        "apis/scheduling.k8s.io/v1", "apis/storage.k8s.io/v1"]
    for gv, entry in index["paths"].items():
        url = entry["serverRelativeURL"]
        body = api.document(gv)
        assert body is not None
        digest = hashlib.sha512(body).hexdigest().upper()
        assert url == f"/openapi/v3/{gv}?hash={digest}"
        assert api.document_hash(gv) == digest
    assert json.loads(api.index_bytes()) == index


def test_documents_are_well_formed(api: OpenAPI) -> None:
    for gv in api.index()["paths"]:
        doc = _doc(api, gv)
        assert doc["openapi"] == "3.0.0" and doc["info"]["title"] == "Kubernetes"
        schemas = doc["components"]["schemas"]
        for key, value in _walk(doc):
            # JSONSchemaProps (CRDs) has a property named "$ref": only string values are refs.
            if key == "$ref" and isinstance(value, str):
                assert value.startswith(REF) and value[len(REF):] in schemas, (gv, value)
        for path, item in doc["paths"].items():
            assert path.startswith("/" + gv + "/"), path
            for method, op in item.items():
                if method == "parameters":
                    continue
                assert method in ("get", "post", "put", "patch", "delete")
                assert op["operationId"] and op["responses"]
                if path != "/" + gv + "/":
                    assert op["x-kubernetes-action"] in (
                        "get", "list", "post", "put", "patch", "delete", "deletecollection",
                        "watch", "watchlist")
                    assert set(op["x-kubernetes-group-version-kind"]) == {
                        "group", "kind", "version"}
            for p in item.get("parameters", []):
                if p["in"] == "path":
                    assert "{" + p["name"] + "}" in path and p["required"] is True
    # the same document twice is the same bytes (cached, stable hash)
    assert api.document("apis/apps/v1") is api.document("apis/apps/v1")
    assert OpenAPI(builtin_registry()).document("apis/apps/v1") == api.document("apis/apps/v1")


def test_every_resource_and_verb_is_documented(api: OpenAPI) -> None:
    for r in builtin_registry().all():
        gv = openapi.gv_path(r.group, r.version)
        doc = _doc(api, gv)
        base = f"/{gv}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else (
            f"/{gv}/{r.plural}")
        paths = doc["paths"]
        gvk = {"group": r.group, "kind": r.kind, "version": r.version}
        if not r.stored and "create" not in r.verbs:  # metrics.k8s.io: read only
            assert {m for m in paths[base] if m != "parameters"} == {"get"}
            assert paths[base]["get"]["x-kubernetes-action"] == "list"
            assert {m for m in paths[base + "/{name}"] if m != "parameters"} == {"get"}
            assert paths[base + "/{name}"]["get"]["x-kubernetes-group-version-kind"] == gvk
            continue
        if not r.stored:  # the reviews: POST only, nothing to read back
            assert {m for m in paths[base] if m != "parameters"} == {"post"}
            assert paths[base]["post"]["x-kubernetes-group-version-kind"] == gvk
            assert base + "/{name}" not in paths and f"/{gv}/watch/{r.plural}" not in paths
            continue
        assert paths[base]["get"]["x-kubernetes-action"] == "list"
        assert paths[base]["post"]["x-kubernetes-action"] == "post"
        if "deletecollection" in r.verbs:  # (not namespaces, as upstream)
            assert paths[base]["delete"]["x-kubernetes-action"] == "deletecollection"
        else:
            assert "delete" not in paths[base]
        obj = paths[base + "/{name}"]
        assert {m for m in obj if m != "parameters"} == {"get", "put", "patch", "delete"}
        assert obj["get"]["x-kubernetes-group-version-kind"] == gvk
        # kubectl decides server-side field validation from the PATCH operation's parameters
        for op in _patch_ops(doc, gvk):
            names = {p["name"] for p in op["parameters"]}
            assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= names
            assert set(op["requestBody"]["content"]) == BUILTIN_PATCH_TYPES
        assert _patch_ops(doc, gvk)
        for method in ("post", "put"):
            op = paths[base if method == "post" else base + "/{name}"][method]
            assert {p["name"] for p in op["parameters"]} == {
                "fieldValidation", "dryRun", "fieldManager"}
            assert op["requestBody"]["content"]["*/*"]["schema"]["$ref"].endswith("." + r.kind)
        schema_gvks = [e for s in doc["components"]["schemas"].values()
                       for e in s.get("x-kubernetes-group-version-kind", [])]
        assert gvk in schema_gvks
        assert {**gvk, "kind": r.list_kind} in schema_gvks
        if r.namespaced:
            assert paths[f"/{gv}/{r.plural}"]["get"]["operationId"].endswith("ForAllNamespaces")
        assert f"/{gv}/watch/" + base[len(gv) + 2:] in paths
        for sub in r.subresources:
            assert base + "/{name}/" + sub in paths, (r.plural, sub)
    token = _doc(api, "api/v1")["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/"
                                         "token"]
    assert set(token) == {"post", "parameters"}
    assert token["post"]["operationId"] == "createCoreV1NamespacedServiceAccountToken"
    assert token["post"]["x-kubernetes-group-version-kind"] == {
        "group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"}
    assert token["post"]["requestBody"]["content"]["*/*"]["schema"]["$ref"].endswith(
        "authentication.v1.TokenRequest")


def test_subresources(api: OpenAPI) -> None:
    apps = _doc(api, "apis/apps/v1")["paths"]
    scale = apps["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling", "kind": "Scale", "version": "v1"}
    assert scale["get"]["operationId"] == "readAppsV1NamespacedDeploymentScale"
    status = apps["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]
    assert status["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Deployment"
    assert "io.k8s.api.autoscaling.v1.Scale" in _doc(api, "apis/apps/v1")["components"][
        "schemas"]
    core = _doc(api, "api/v1")["paths"]
    binding = core["/api/v1/namespaces/{namespace}/pods/{name}/binding"]
    assert binding["post"]["x-kubernetes-group-version-kind"]["kind"] == "Binding"
    assert binding["post"]["operationId"] == "createCoreV1NamespacedPodBinding"
    finalize = core["/api/v1/namespaces/{name}/finalize"]
    assert finalize["put"]["operationId"] == "replaceCoreV1NamespaceFinalize"
    # cluster-scoped kinds have no namespace parameter and no ForAllNamespaces list
    assert [p["name"] for p in core["/api/v1/nodes/{name}"]["parameters"]] == ["name", "pretty"]
    assert "/api/v1/watch/nodes" in core and "/api/v1/watch/nodes/{name}" in core
    coord = _doc(api, "apis/coordination.k8s.io/v1")["paths"]
    assert coord["/apis/coordination.k8s.io/v1/leases"]["get"]["operationId"] == (
        "listCoordinationV1LeaseForAllNamespaces")


def test_verbs_of_the_registry_are_respected() -> None:
    reg = ResourceRegistry([ResourceInfo("apps", "v1", "ControllerRevision",
                                         "controllerrevisions", "controllerrevision", True,
                                         verbs=("get", "list"))])
    paths = _doc(OpenAPI(reg), "apis/apps/v1")["paths"]
    coll = paths["/apis/apps/v1/namespaces/{namespace}/controllerrevisions"]
    assert set(coll) == {"get", "parameters"}
    assert set(paths["/apis/apps/v1/namespaces/{namespace}/controllerrevisions/{name}"]) == {
        "get", "parameters"}
    assert not any("watch" in p for p in paths)


def test_registry_changes_change_the_document() -> None:
    reg = builtin_registry()
    api = OpenAPI(reg)
    before = api.index()["paths"]
    lease = reg.get("coordination.k8s.io", "v1", "leases")
    assert lease is not None
    reg.remove(lease)
    after = api.index()["paths"]
    assert "apis/coordination.k8s.io/v1" not in after
    assert after["apis/apps/v1"] == before["apis/apps/v1"]
    assert api.document("apis/coordination.k8s.io/v1") is None
    reg.add(lease)
    assert api.index()["paths"] == before


# -- HTTP answers --------------------------------------------------------------------------------


def test_respond(api: OpenAPI) -> None:
    r = api.respond("/openapi/v3")
    assert r.status == 200 and json.loads(r.body) == api.index()
    assert r.headers["Content-Type"] == "application/json"
    url = api.index()["paths"]["apis/apps/v1"]["serverRelativeURL"]
    digest = url.split("hash=")[1]
    r = api.respond("/openapi/v3/apis/apps/v1", digest)
    assert r.status == 200 and r.body == api.document("apis/apps/v1")
    assert r.headers["Cache-Control"] == "public, immutable" and "Expires" in r.headers
    assert r.headers["Etag"] == f'"{digest}"'
    r = api.respond("/openapi/v3/apis/apps/v1", "0BAD")
    assert r.status == 301 and r.headers["Location"] == url
    r = api.respond("/openapi/v3/apis/apps/v1")
    assert r.status == 200 and "immutable" not in r.headers["Cache-Control"]
    r = api.respond("/openapi/v3/apis/apps/v1", if_none_match=f'"{digest}"')
    assert r.status == 304 and r.body == b""
    r = api.respond("/openapi/v3/apis/apps/v1", digest, accept_encoding="gzip, deflate")
    assert r.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(r.body) == api.document("apis/apps/v1")
    r = api.respond("/openapi/v3/apis/apps/v1", accept="application/json, */*")
    assert r.status == 200
    r = api.respond("/openapi/v3/apis/apps/v1", accept=openapi.PROTOBUF_OPENAPI)
    assert r.status == 406
    for missing in ("/openapi/v3/apis/nope/v1", "/openapi/v3/apis/apps", "/openapi/v3x",
                    "/openapi/v3/api/v2"):
        r = api.respond(missing)
        assert r.status == 404 and r.body == b"404 page not found\n", missing


# -- custom resources ----------------------------------------------------------------------------


def test_custom_resource_document_and_hash() -> None:
    api = OpenAPI(builtin_registry())
    before = api.index()["paths"]
    api.add_custom("stable.example.com", "v1", "crontabs", "CronTab", True, CRONTAB_SCHEMA,
                   {"status": {}, "scale": {"specReplicasPath": ".spec.replicas"}})
    after = api.index()["paths"]
    assert set(after) == set(before) | {"apis/stable.example.com/v1"}
    assert all(after[gv] == before[gv] for gv in before)  # other documents untouched
    doc = _doc(api, "apis/stable.example.com/v1")
    schemas = doc["components"]["schemas"]
    name = custom_schema_name("stable.example.com", "v1", "CronTab")
    assert name == "com.example.stable.v1.CronTab"
    ct = schemas[name]
    assert ct["x-kubernetes-group-version-kind"] == [
        {"group": "stable.example.com", "kind": "CronTab", "version": "v1"}]
    assert ct["properties"]["metadata"]["allOf"] == [
        {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert ct["properties"]["apiVersion"]["type"] == "string"
    assert ct["properties"]["spec"]["properties"]["template"]["properties"]["metadata"]
    assert schemas[name + "List"]["x-kubernetes-group-version-kind"][0]["kind"] == "CronTabList"
    for key, value in _walk(doc):
        if key == "$ref":
            assert value[len(REF):] in schemas
    gvk = {"group": "stable.example.com", "kind": "CronTab", "version": "v1"}
    ops = _patch_ops(doc, gvk)
    assert len(ops) == 2  # the object and its status
    for op in ops:
        assert "fieldValidation" in {p["name"] for p in op["parameters"]}
        # no strategic merge patch for custom resources: kubectl falls back to merge patch
        assert set(op["requestBody"]["content"]) == BUILTIN_PATCH_TYPES - {
            "application/strategic-merge-patch+json"}
    paths = doc["paths"]
    assert paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"]["get"][
        "operationId"] == "listStableExampleComV1NamespacedCronTab"
    scale = paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"]
    assert scale["get"]["x-kubernetes-group-version-kind"]["kind"] == "Scale"
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas

    # a new schema version changes the document and its hash
    first = after["apis/stable.example.com/v1"]
    changed = json.loads(json.dumps(CRONTAB_SCHEMA))
    changed["properties"]["spec"]["properties"]["newField"] = {"type": "string"}
    api.add_custom("stable.example.com", "v1", "crontabs", "CronTab", True, changed, ["status"])
    second = api.index()["paths"]["apis/stable.example.com/v1"]
    assert second != first
    assert "newField" in json.loads(api.document("apis/stable.example.com/v1") or b"{}")[
        "components"]["schemas"][name]["properties"]["spec"]["properties"]
    r = api.respond("/openapi/v3/apis/stable.example.com/v1",
                    first["serverRelativeURL"].split("hash=")[1])
    assert r.status == 301 and r.headers["Location"] == second["serverRelativeURL"]

    api.remove_custom("stable.example.com", "v1", "crontabs")
    assert api.index()["paths"] == before
    assert api.document("apis/stable.example.com/v1") is None


def test_custom_resource_without_schema_preserves_unknown_fields() -> None:
    api = OpenAPI(builtin_registry())
    api.add_custom("example.com", "v1alpha1", "widgets", "Widget", False, None)
    doc = _doc(api, "apis/example.com/v1alpha1")
    w = doc["components"]["schemas"]["com.example.v1alpha1.Widget"]
    assert w["x-kubernetes-preserve-unknown-fields"] is True
    assert "/apis/example.com/v1alpha1/widgets/{name}" in doc["paths"]
    obj = {"apiVersion": "example.com/v1alpha1", "kind": "Widget",
           "metadata": {"name": "w", "bogus": 1}, "spec": {"anything": {"goes": [1]}}}
    assert api.unknown_fields(("example.com", "v1alpha1", "Widget"), obj) == ["metadata.bogus"]


def test_registered_kind_without_definition_gets_a_permissive_schema() -> None:
    reg = ResourceRegistry([ResourceInfo("example.com", "v1", "Gadget", "gadgets", "gadget",
                                         True)])
    api = OpenAPI(reg)
    doc = _doc(api, "apis/example.com/v1")
    assert "com.example.v1.Gadget" in doc["components"]["schemas"]
    assert "/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}" in doc["paths"]
    assert api.unknown_fields(("example.com", "v1", "Gadget"), {"spec": {"x": 1}}) == []


# -- unknown fields ------------------------------------------------------------------------------


def _deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"},
                     "annotations": {"a": "b"},
                     "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "web", "image": "nginx",
                     "env": [{"name": "A", "value": "1"}],
                     "resources": {"limits": {"cpu": "1"}},
                     "ports": [{"containerPort": 80}]},
                ]},
            },
        },
        "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]},
    }


def test_known_object_has_no_unknown_fields(api: OpenAPI) -> None:
    assert api.unknown_fields(("apps", "v1", "Deployment"), _deployment()) == []
    assert api.unknown_fields("io.k8s.api.apps.v1.Deployment", _deployment()) == []
    assert api.unknown_fields(REF + "io.k8s.api.apps.v1.Deployment", _deployment()) == []


def test_unknown_fields_nested_and_in_lists(api: OpenAPI) -> None:
    d = _deployment()
    d["spec"]["foo"] = 1
    d["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    d["spec"]["template"]["spec"]["containers"].append(
        {"name": "b", "image": "x", "env": [{"name": "E", "bogus": True}]})
    d["metadata"]["bad"] = {"nested": 1}
    d["spec"]["strategy"]["rollingUpdate"]["maxSurgee"] = 1
    d["status"]["conditions"][0]["extra"] = ""
    d["top"] = []
    assert api.unknown_fields(("apps", "v1", "Deployment"), d) == [
        "metadata.bad",
        "spec.strategy.rollingUpdate.maxSurgee",
        "spec.template.spec.containers[0].imagee",
        "spec.template.spec.containers[1].env[0].bogus",
        "spec.foo",
        "status.conditions[0].extra",
        "top",
    ]


def test_unknown_fields_follow_document_order(api: OpenAPI) -> None:
    obj = {"zeta": 1, "apiVersion": "v1", "kind": "ConfigMap", "alpha": 2, "data": {"k": "v"}}
    assert api.unknown_fields(("", "v1", "ConfigMap"), obj) == ["zeta", "alpha"]


def test_maps_and_free_form_fields(api: OpenAPI) -> None:
    # maps of scalars: any key; free-form JSON (RawExtension, FieldsV1): anything inside
    cr = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
          "revision": 1, "data": {"spec": {"anything": [{"goes": 1}]}}}
    assert api.unknown_fields(("apps", "v1", "ControllerRevision"), cr) == []
    cm = {"metadata": {"labels": {"x/y": "z"}}, "data": {"any-key": "v"},
          "binaryData": {"b": "AA=="}}
    assert api.unknown_fields(("", "v1", "ConfigMap"), cm) == []
    # a wrong type is not an unknown field (validation reports it)
    assert api.unknown_fields(("", "v1", "ConfigMap"), {"data": "oops", "metadata": 5}) == []
    node = {"status": {"capacity": {"cpu": "4"}, "images": [{"names": ["a"], "sizeBytes": 1,
                                                             "x": 1}]}}
    assert api.unknown_fields(("", "v1", "Node"), node) == ["status.images[0].x"]


def test_subresource_bodies(api: OpenAPI) -> None:
    reg = builtin_registry()
    deploy = reg.get("apps", "v1", "deployments")
    pods = reg.get("", "v1", "pods")
    assert deploy is not None and pods is not None
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},
             "spec": {"replicas": 2, "bogus": 1}}
    assert api.unknown_fields_for(deploy, scale, "scale") == ["spec.bogus"]
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "n1", "nodeName": "x"}}
    assert api.unknown_fields_for(pods, binding, "binding") == ["target.nodeName"]
    assert api.unknown_fields_for(deploy, {"spec": {"x": 1}}, "status") == ["spec.x"]


def test_unknown_target(api: OpenAPI) -> None:
    assert api.unknown_fields(("nope", "v1", "Thing"), {"a": 1}) == []
    assert api.unknown_fields("io.k8s.nope.Thing", {"a": 1}) == []
    assert api.unknown_fields(("apps", "v1", "Deployment"), "not an object") == []


def test_custom_resource_unknown_fields() -> None:
    api = OpenAPI(builtin_registry())
    api.add_custom("stable.example.com", "v1", "crontabs", "CronTab", True, CRONTAB_SCHEMA,
                   ["status"])
    gvk = ("stable.example.com", "v1", "CronTab")
    ok = {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
          "metadata": {"name": "c", "labels": {"a": "b"}},
          "spec": {"cronSpec": "* * * * *", "ports": [{"name": "p", "port": 1}],
                   "workers": {"w1": {"image": "i"}}, "config": {"any": {"thing": 1}},
                   "tuned": {"other": 1, "inner": {"a": "x"}},
                   "template": {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": "t"}, "spec": {"x": "y"}},
                   "matrix": [[{"v": 1}]], "labels": {"k": "v"}, "free": {"x": 1}},
          "status": {"phase": "Running"}}
    assert api.unknown_fields(gvk, ok) == []
    bad = json.loads(json.dumps(ok))
    bad["metadata"]["nope"] = 1
    bad["spec"]["ports"][0]["protocol"] = "TCP"
    bad["spec"]["workers"]["w1"]["replicas"] = 2
    bad["spec"]["tuned"]["inner"]["b"] = 1  # known properties under preserve are still checked
    bad["spec"]["template"]["metadata"]["bogus"] = 1
    bad["spec"]["template"]["spec"]["y"] = 1
    bad["spec"]["matrix"][0][0]["w"] = 1
    bad["spec"]["extra"] = 1
    bad["status"]["message"] = "x"
    bad["spec"]["free"]["x"] = {"y": 1, "z": 2}  # additionalProperties: true keeps keys only
    assert api.unknown_fields(gvk, bad) == [
        "metadata.nope",
        "spec.ports[0].protocol",
        "spec.workers.w1.replicas",
        "spec.tuned.inner.b",
        "spec.template.metadata.bogus",
        "spec.template.spec.y",
        "spec.matrix[0][0].w",
        "spec.free.x.y",
        "spec.free.x.z",
        "spec.extra",
        "status.message",
    ]
    assert api.unknown_fields("com.example.stable.v1.CronTab", bad)[0] == "metadata.nope"


def test_structural_schemas_prune_objects_without_properties() -> None:
    # apiextensions semantics for custom resources: an object schema without properties,
    # additionalProperties or x-kubernetes-preserve-unknown-fields keeps no field
    api = OpenAPI(builtin_registry())
    api.add_custom("example.com", "v1", "things", "Thing", True, {
        "type": "object", "properties": {"spec": {"type": "object", "properties": {
            "closed": {"type": "object"},
            "list": {"type": "array", "items": {"type": "object"}},
            "names": {"type": "array", "items": {"type": "string"}},
        }}}})
    obj = {"spec": {"closed": {"a": 1}, "list": [{"b": 2}], "names": ["x", "y"]}}
    assert api.unknown_fields(("example.com", "v1", "Thing"), obj) == [
        "spec.closed.a", "spec.list[0].b"]
    # built-in free-form objects (RawExtension, FieldsV1) keep everything
    assert api.unknown_fields(("apps", "v1", "ControllerRevision"), {"data": {"a": {"b": 1}}}) == []


def test_drop_unknown_fields(api: OpenAPI) -> None:
    d = _deployment()
    expected = copy.deepcopy(d)
    d["spec"]["foo"] = {"x": 1}
    d["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    d["metadata"]["bad"] = 1
    dropped = api.drop_unknown_fields(("apps", "v1", "Deployment"), d)
    assert dropped == ["metadata.bad", "spec.template.spec.containers[0].imagee", "spec.foo"]
    assert d == expected
    assert api.drop_unknown_fields(("apps", "v1", "Deployment"), d) == []
    reg = builtin_registry()
    deploy = reg.get("apps", "v1", "deployments")
    assert deploy is not None
    scale = {"spec": {"replicas": 1, "x": 1}}
    assert api.drop_unknown_fields_for(deploy, scale, "scale") == ["spec.x"]
    assert scale == {"spec": {"replicas": 1}}


def test_messages() -> None:
    unknown = ["spec.foo", "spec.bar"]
    assert unknown_field_messages(unknown) == ['unknown field "spec.foo"',
                                               'unknown field "spec.bar"']
    assert strict_decoding_message(unknown) == (
        'strict decoding error: unknown field "spec.foo", unknown field "spec.bar"')
    assert field_validation_error("Deployment", unknown) == strict_decoding_message(unknown)
    assert field_validation_error("Deployment", ["spec.foo"], version="v1") == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.foo"')
    err = strict_error("Pod", ["spec.x"], version="v1")
    assert isinstance(err, StatusError)
    assert err.code == 400 and err.reason == "BadRequest"
    assert err.status()["message"].endswith('strict decoding error: unknown field "spec.x"')


def test_warning_headers() -> None:
    assert warning_header('unknown field "spec.foo"') == '299 - "unknown field \\"spec.foo\\""'
    assert warning_header("a\\b") == '299 - "a\\\\b"'
    assert field_warning_headers(["spec.foo", "metadata.x"]) == [
        '299 - "unknown field \\"spec.foo\\""', '299 - "unknown field \\"metadata.x\\""']


def test_parse_field_validation() -> None:
    assert parse_field_validation(None) == "Warn"
    assert parse_field_validation("") == "Warn"
    for v in ("Ignore", "Warn", "Strict"):
        assert parse_field_validation(v) == v
    with pytest.raises(StatusError) as exc:
        parse_field_validation("strict", "PatchOptions")
    assert exc.value.code == 422 and exc.value.reason == "Invalid"
    assert exc.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": '
        'supported values: "", "Ignore", "Strict", "Warn"')
