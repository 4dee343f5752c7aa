"""Mechanical case families: the same request sequences over every served resource.

Each family is a function of one resource (its collection path and a minimal
valid object) returning a case in the YAML schema of cases/*.yaml (see
README.md), so a generated case reads like a written one
(``python -m tests.differential.apiserver --dump -k 'crud-*'`` prints them).
The behaviour particular to a resource (defaults, validation, subresources,
immutable fields) is in the written cases; the families cover what every
resource shares: create/get/list/update/patch/delete with their options and
errors, selectors, paging, watch from a resourceVersion and Table output.

Cluster-scoped resources run in parallel with other cases, so their lists and
watches select the case's own objects by a label (``dt={name}``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.differential.apiserver.runner import Case, parse_case

C = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
POD_SPEC = {"containers": [C]}
TEMPLATE = {"metadata": {"labels": {"app": "dt"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "dt"}}
# pods of a DaemonSet may land on no node (a Node created by another case must not get one)
DS_TEMPLATE = {"metadata": {"labels": {"app": "dt"}},
               "spec": {**POD_SPEC, "nodeSelector": {"dt.example.com/none": "x"}}}


@dataclass(frozen=True)
class Res:
    """A served resource: where it lives and a minimal valid object (without metadata)."""

    family: str  # short name used in case ids
    coll: str  # collection path; {ns} for namespaced ones
    kind: str
    api_version: str
    body: dict[str, Any]
    smp: bool = True  # strategic merge patch applies (built-in kinds)

    @property
    def namespaced(self) -> bool:
        return "{ns}" in self.coll

    @property
    def obj(self) -> str:
        return self.coll + "/{name}"

    def new(self, name: str = "{name}", labels: dict[str, str] | None = None,
            **meta: Any) -> dict[str, Any]:
        """The minimal object; cluster-scoped ones carry the case's label `dt`."""
        lab = dict(labels or {})
        if not self.namespaced:
            lab.setdefault("dt", "{name}")
        m: dict[str, Any] = {"name": name} if name else {}
        if lab:
            m["labels"] = lab
        m.update(meta)
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": m,
                **copy.deepcopy(self.body)}

    def list_query(self, **q: str) -> dict[str, str]:
        """List/watch query; cluster-scoped lists see only the case's objects."""
        if not self.namespaced:
            sel = q.get("labelSelector")
            q["labelSelector"] = "dt={name}" + ("," + sel if sel else "")
        return q


RESOURCES = [
    Res("namespaces", "/api/v1/namespaces", "Namespace", "v1", {}),
    Res("nodes", "/api/v1/nodes", "Node", "v1", {}),
    Res("pods", "/api/v1/namespaces/{ns}/pods", "Pod", "v1", {"spec": POD_SPEC}),
    Res("events", "/api/v1/namespaces/{ns}/events", "Event", "v1", {
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "{ns}", "apiVersion": "v1"},
        "reason": "Tested", "message": "a test event", "type": "Normal",
        "source": {"component": "dt"}}),
    Res("configmaps", "/api/v1/namespaces/{ns}/configmaps", "ConfigMap", "v1",
        {"data": {"k": "v"}}),
    Res("secrets", "/api/v1/namespaces/{ns}/secrets", "Secret", "v1",
        {"data": {"k": "dmFsdWU="}}),
    Res("services", "/api/v1/namespaces/{ns}/services", "Service", "v1",
        {"spec": {"ports": [{"port": 80}]}}),
    Res("serviceaccounts", "/api/v1/namespaces/{ns}/serviceaccounts", "ServiceAccount", "v1",
        {}),
    Res("endpoints", "/api/v1/namespaces/{ns}/endpoints", "Endpoints", "v1", {
        "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}]}),
    Res("podtemplates", "/api/v1/namespaces/{ns}/podtemplates", "PodTemplate", "v1",
        {"template": TEMPLATE}),
    Res("deployments", "/apis/apps/v1/namespaces/{ns}/deployments", "Deployment", "apps/v1",
        {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    Res("replicasets", "/apis/apps/v1/namespaces/{ns}/replicasets", "ReplicaSet", "apps/v1",
        {"spec": {"replicas": 0, "selector": SELECTOR, "template": TEMPLATE}}),
    Res("statefulsets", "/apis/apps/v1/namespaces/{ns}/statefulsets", "StatefulSet", "apps/v1",
        {"spec": {"replicas": 0, "selector": SELECTOR, "template": TEMPLATE}}),
    Res("daemonsets", "/apis/apps/v1/namespaces/{ns}/daemonsets", "DaemonSet", "apps/v1",
        {"spec": {"selector": SELECTOR, "template": DS_TEMPLATE}}),
    Res("controllerrevisions", "/apis/apps/v1/namespaces/{ns}/controllerrevisions",
        "ControllerRevision", "apps/v1", {"data": {"spec": {"x": 1}}, "revision": 1}),
    Res("jobs", "/apis/batch/v1/namespaces/{ns}/jobs", "Job", "batch/v1", {
        "spec": {"suspend": True, "template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}}}),
    Res("cronjobs", "/apis/batch/v1/namespaces/{ns}/cronjobs", "CronJob", "batch/v1", {
        "spec": {"schedule": "*/5 * * * *", "suspend": True, "jobTemplate": {"spec": {
            "template": {"spec": {**POD_SPEC, "restartPolicy": "OnFailure"}}}}}}),
    Res("leases", "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", "Lease",
        "coordination.k8s.io/v1", {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
    Res("endpointslices", "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
        "EndpointSlice", "discovery.k8s.io/v1", {
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.2.3"]}],
            "ports": [{"port": 80}]}),
    Res("persistentvolumes", "/api/v1/persistentvolumes", "PersistentVolume", "v1", {
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp/dt"}}}),
    Res("persistentvolumeclaims", "/api/v1/namespaces/{ns}/persistentvolumeclaims",
        "PersistentVolumeClaim", "v1", {"spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "resources": {"requests": {"storage": "1Gi"}}}}),
    Res("replicationcontrollers", "/api/v1/namespaces/{ns}/replicationcontrollers",
        "ReplicationController", "v1", {"spec": {"replicas": 0, "template": TEMPLATE}}),
    Res("storageclasses", "/apis/storage.k8s.io/v1/storageclasses", "StorageClass",
        "storage.k8s.io/v1", {"provisioner": "dt.example.com/p"}),
    Res("poddisruptionbudgets", "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
        "PodDisruptionBudget", "policy/v1", {"spec": {"minAvailable": 1, "selector": SELECTOR}}),
    # (a class named: a default IngressClass another case makes meanwhile would be taken)
    Res("ingresses", "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses", "Ingress",
        "networking.k8s.io/v1", {"spec": {"ingressClassName": "dt", "defaultBackend": {
            "service": {"name": "web", "port": {"number": 80}}}}}),
    Res("ingressclasses", "/apis/networking.k8s.io/v1/ingressclasses", "IngressClass",
        "networking.k8s.io/v1", {"spec": {"controller": "dt.example.com/ingress"}}),
    Res("networkpolicies", "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
        "NetworkPolicy", "networking.k8s.io/v1", {"spec": {"podSelector": SELECTOR}}),
    # (IPv6 only: kube-apiserver allocates the IPv4 Services of other cases from any IPv4
    # ServiceCIDR, and their cluster IPs are masked only in 10.96.0.0/12)
    Res("servicecidrs", "/apis/networking.k8s.io/v1/servicecidrs", "ServiceCIDR",
        "networking.k8s.io/v1", {"spec": {"cidrs": ["fd00:d7::/112"]}}),
    # (no ipaddresses: their names are IP addresses, not the families' {name}s)
    Res("runtimeclasses", "/apis/node.k8s.io/v1/runtimeclasses", "RuntimeClass",
        "node.k8s.io/v1", {"handler": "runc"}),
    Res("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass",
        "scheduling.k8s.io/v1", {"value": 100}),
    Res("eventsv1", "/apis/events.k8s.io/v1/namespaces/{ns}/events", "Event", "events.k8s.io/v1",
        {"eventTime": "2026-01-02T03:04:05.000000Z", "reportingController": "dt.example.com/c",
         "reportingInstance": "i-1", "action": "Testing", "reason": "Tested", "type": "Normal",
         "regarding": {"kind": "Pod", "name": "p", "namespace": "{ns}", "apiVersion": "v1"},
         "note": "a test event"}),
]


def _post(res: Res, body: Any, status: int | None = 201, **kw: Any) -> dict[str, Any]:
    step = {"req": f"POST {res.coll}", "body": body, **kw}
    if status is not None:
        step["status"] = status
    return step


def _get(res: Res, name: str = "{name}", status: int | None = 200, **kw: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"req": f"GET {res.coll}/{name}", **kw}
    if status is not None:
        step["status"] = status
    return step


def _list(res: Res, status: int | None = 200, **q: str) -> dict[str, Any]:
    step: dict[str, Any] = {"req": f"GET {res.coll}", "query": res.list_query(**q)}
    if status is not None:
        step["status"] = status
    return step


# -- create ----------------------------------------------------------------------------------

def create(res: Res) -> dict[str, Any]:
    return {"name": "create", "doc": "a minimal object: defaults, status, system metadata",
            "steps": [_post(res, res.new()), _get(res), _list(res)]}


def create_yaml(res: Res) -> dict[str, Any]:
    import yaml

    return {"name": "create-yaml", "doc": "a YAML body (application/yaml)",
            "steps": [{"req": f"POST {res.coll}", "type": "yaml", "status": 201,
                       "raw": yaml.safe_dump(res.new(), sort_keys=False)}]}


def create_dry_run(res: Res) -> dict[str, Any]:
    return {"name": "create-dry-run", "doc": "dryRun=All answers the object, stores nothing",
            "steps": [_post(res, res.new(), query={"dryRun": "All"}), _get(res, status=404)]}


def create_generate_name(res: Res) -> dict[str, Any]:
    return {"name": "create-generate-name", "steps": [
        _post(res, res.new(name="", generateName="{name}-"), save="c"),
        _get(res, name="{c.metadata.name}")]}


def create_exists(res: Res) -> dict[str, Any]:
    return {"name": "create-exists", "doc": "409 AlreadyExists with details",
            "steps": [_post(res, res.new()), _post(res, res.new(), status=409)]}


def create_invalid_name(res: Res) -> dict[str, Any]:
    # core/v1 Events and PodDisruptionBudgets take any name that fits a URL
    return {"name": "create-invalid-name", "doc": "422 with the name's causes",
            "steps": [_post(res, res.new(name="Bad_Name.x"),
                            status=201 if res.family in ("events", "poddisruptionbudgets")
                            else 422)]}


def create_no_name(res: Res) -> dict[str, Any]:
    return {"name": "create-no-name", "steps": [_post(res, res.new(name=""), status=422)]}


def create_kind_mismatch(res: Res) -> dict[str, Any]:
    body = res.new()
    body["kind"] = "Widget"
    return {"name": "create-kind-mismatch", "steps": [_post(res, body, status=None)]}


def create_api_version_mismatch(res: Res) -> dict[str, Any]:
    body = res.new()
    body["apiVersion"] = "example.com/v9"
    return {"name": "create-apiversion-mismatch", "steps": [_post(res, body, status=None)]}


def create_no_kind(res: Res) -> dict[str, Any]:
    body = res.new()
    del body["kind"], body["apiVersion"]
    return {"name": "create-no-typemeta", "doc": "kind and apiVersion may be left out",
            "steps": [_post(res, body, status=None)]}


def create_namespace_mismatch(res: Res) -> dict[str, Any] | None:
    if not res.namespaced:
        return None
    return {"name": "create-namespace-mismatch", "steps": [
        _post(res, res.new(namespace="elsewhere"), status=400)]}


def create_bad_json(res: Res) -> dict[str, Any]:
    return {"name": "create-bad-json", "steps": [
        {"req": f"POST {res.coll}", "raw": '{"metadata": {"name": "x"', "status": 400},
        {"req": f"POST {res.coll}", "raw": "[1, 2]", "status": 400},
        {"req": f"POST {res.coll}", "raw": '{"metadata": "x"}', "status": 400}]}


def create_unknown_content_type(res: Res) -> dict[str, Any]:
    return {"name": "create-unknown-content-type", "steps": [
        {"req": f"POST {res.coll}", "type": "text/plain", "raw": '{"metadata": {}}',
         "status": 415}]}


def create_unknown_field(res: Res) -> dict[str, Any]:
    body = res.new()
    body["bogus"] = 1
    body["metadata"]["bogusMeta"] = "x"
    return {"name": "create-unknown-fields", "doc": "fieldValidation Strict, Warn, default",
            "steps": [_post(res, body, query={"fieldValidation": "Strict"}, status=400),
                      _post(res, body, query={"fieldValidation": "Warn"}),
                      _get(res)]}


# -- read ------------------------------------------------------------------------------------

def get_missing(res: Res) -> dict[str, Any]:
    return {"name": "get-missing", "steps": [_get(res, name="missing-{name}", status=404)]}


def list_label_selector(res: Res) -> dict[str, Any]:
    steps = [_post(res, res.new(name="{name}-a", labels={"tier": "a"})),
             _post(res, res.new(name="{name}-b", labels={"tier": "b"})),
             _post(res, res.new(name="{name}-c"))]
    for sel in ("tier=a", "tier!=a", "tier in (a,b)", "!tier", "tier", "tier notin (a)"):
        steps.append(_list(res, labelSelector=sel))
    steps.append(_list(res, status=400, labelSelector="tier in a"))
    return {"name": "list-label-selector", "steps": steps}


def list_field_selector(res: Res) -> dict[str, Any]:
    steps = [_post(res, res.new(name="{name}-a")), _post(res, res.new(name="{name}-b")),
             _list(res, fieldSelector="metadata.name={name}-b"),
             _list(res, fieldSelector="metadata.name!={name}-b")]
    if res.namespaced:
        steps.append(_list(res, fieldSelector="metadata.namespace={ns}"))
    steps.append(_list(res, status=400, fieldSelector="spec.bogus=x"))
    return {"name": "list-field-selector", "steps": steps}


def list_paging(res: Res) -> dict[str, Any]:
    return {"name": "list-paging", "doc": "limit/continue, remainingItemCount", "steps": [
        _post(res, res.new(name="{name}-a")), _post(res, res.new(name="{name}-b")),
        _post(res, res.new(name="{name}-c")),
        {**_list(res, limit="2"), "save": "p1"},
        _list(res, limit="2", **{"continue": "{p1.metadata.continue}"}),
        _list(res, status=400, **{"continue": "not-a-token"})]}


def list_resource_version(res: Res) -> dict[str, Any]:
    return {"name": "list-resource-version", "doc": "resourceVersion/resourceVersionMatch",
            "steps": [
                _post(res, res.new(name="{name}-a"), save="a"),
                _post(res, res.new(name="{name}-b")),
                # A consistent list first: kube-apiserver serves it from its watch cache
                # once the cache has caught up with etcd (ConsistentListFromCache), so the
                # "any" and NotOlderThan lists below see b too (they once missed it under
                # load: a stale cache is their documented answer, not a difference).
                _list(res),
                _list(res, resourceVersion="0"),
                _list(res, resourceVersion="{a.metadata.resourceVersion}",
                      resourceVersionMatch="NotOlderThan"),
                _list(res, resourceVersion="{a.metadata.resourceVersion}",
                      resourceVersionMatch="Exact"),
                _list(res, status=422, resourceVersionMatch="Exact"),
                _list(res, status=422, resourceVersion="0", resourceVersionMatch="Exact"),
                _list(res, status=422, resourceVersion="1", resourceVersionMatch="Bogus"),
                _list(res, status=400, resourceVersion="abc")]}


def table(res: Res) -> dict[str, Any]:
    return {"name": "table", "doc": "as=Table: columns, cells, includeObject", "steps": [
        _post(res, res.new(labels={"x": "y"})),
        _get(res, accept="table"),
        {**_list(res), "accept": "table"},
        {**_list(res, includeObject="None"), "accept": "table"},
        {**_list(res, includeObject="Object"), "accept": "table"},
        _get(res, accept="table", query={"includeObject": "Bogus"}, status=400)]}


# -- update / patch --------------------------------------------------------------------------

def _labelled(saved: str, **labels: str) -> dict[str, Any]:
    return {"$saved": saved, "$merge": {"metadata": {"labels": labels}}}


def update(res: Res) -> dict[str, Any]:
    return {"name": "update", "doc": "PUT with the current resourceVersion, then without",
            "steps": [_post(res, res.new()), _get(res, save="g"),
                      {"req": f"PUT {res.obj}", "body": _labelled("g", changed="yes"),
                       "status": 200, "save": "u"},
                      {"req": f"PUT {res.obj}", "status": None,
                       "body": {"$saved": "u", "$merge": {"metadata": {
                           "resourceVersion": None, "labels": {"again": "yes"}}}}},
                      _get(res)]}


def update_stale(res: Res) -> dict[str, Any]:
    return {"name": "update-stale", "doc": "409 Conflict on an old resourceVersion",
            "steps": [_post(res, res.new(), save="c"),
                      {"req": f"PUT {res.obj}", "body": _labelled("c", v="1"), "status": 200},
                      {"req": f"PUT {res.obj}", "body": _labelled("c", v="2"), "status": 409},
                      {"req": f"PUT {res.obj}", "status": None, "body": {
                          "$saved": "c", "$merge": {"metadata": {"resourceVersion": "abc"}}}}]}


def update_name_mismatch(res: Res) -> dict[str, Any]:
    return {"name": "update-name-mismatch", "steps": [
        _post(res, res.new(), save="c"),
        {"req": f"PUT {res.obj}", "status": 400,
         "body": {"$saved": "c", "$merge": {"metadata": {"name": "other-{name}"}}}}]}


def update_missing(res: Res) -> dict[str, Any]:
    return {"name": "update-missing", "doc": "404, or a create where the kind allows it",
            "steps": [{"req": f"PUT {res.obj}", "body": res.new(), "status": None}, _get(res, status=None)]}


def patch_merge(res: Res) -> dict[str, Any]:
    return {"name": "patch-merge", "steps": [
        _post(res, res.new(labels={"a": "1", "b": "2"})),
        {"req": f"PATCH {res.obj}", "type": "merge", "status": 200,
         "body": {"metadata": {"labels": {"a": None, "c": "3"}, "annotations": {"n": "v"}}}},
        {"req": f"PATCH {res.obj}", "type": "merge", "status": 409,
         "body": {"metadata": {"resourceVersion": "1", "labels": {"d": "4"}}}},
        {"req": f"PATCH {res.obj}", "type": "merge", "status": None,
         "body": {"metadata": {"name": "renamed-{name}"}}}]}


def patch_json(res: Res) -> dict[str, Any]:
    return {"name": "patch-json", "steps": [
        _post(res, res.new(labels={"a": "1"})),
        {"req": f"PATCH {res.obj}", "type": "json-patch", "status": 200, "body": [
            {"op": "add", "path": "/metadata/annotations", "value": {"x/y": "z"}},
            {"op": "replace", "path": "/metadata/labels/a", "value": "2"}]},
        {"req": f"PATCH {res.obj}", "type": "json-patch", "status": 422, "body": [
            {"op": "test", "path": "/metadata/labels/a", "value": "1"}]},
        {"req": f"PATCH {res.obj}", "type": "json-patch", "status": None, "body": [
            {"op": "remove", "path": "/metadata/labels/missing"}]},
        {"req": f"PATCH {res.obj}", "type": "json-patch", "status": None, "body": [
            {"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/b"}]},
        {"req": f"PATCH {res.obj}", "type": "json-patch", "status": 400,
         "body": {"op": "add"}}]}


def patch_strategic(res: Res) -> dict[str, Any] | None:
    if not res.smp:
        return None
    return {"name": "patch-strategic", "steps": [
        _post(res, res.new(labels={"a": "1"}, finalizers=["example.com/f1"])),
        {"req": f"PATCH {res.obj}", "type": "strategic", "status": 200,
         "body": {"metadata": {"labels": {"a": None, "b": "2"},
                               "finalizers": ["example.com/f2"]}}},
        {"req": f"PATCH {res.obj}", "type": "strategic", "status": 200,
         "body": {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/f1"]}}},
        {"req": f"PATCH {res.obj}", "type": "strategic", "status": None,
         "body": {"metadata": {"$patch": "replace", "name": "{name}"}}},
        {"req": f"PATCH {res.obj}", "type": "merge", "status": 200,
         "body": {"metadata": {"finalizers": None}}}]}


def patch_errors(res: Res) -> dict[str, Any]:
    return {"name": "patch-errors", "doc": "bad bodies, unknown patch types, missing object",
            "steps": [
                _post(res, res.new()),
                {"req": f"PATCH {res.obj}", "type": "merge", "raw": "{bad", "status": 400},
                {"req": f"PATCH {res.obj}", "type": "json", "raw": "{}", "status": 415},
                {"req": f"PATCH {res.obj}", "type": "text/plain", "raw": "{}", "status": 415},
                {"req": f"PATCH {res.coll}/missing-{{name}}", "type": "merge", "raw": "{}",
                 "status": 404},
                {"req": f"PATCH {res.obj}", "type": "merge", "status": 200,
                 "body": {"metadata": {"labels": {"x": "y"}}},
                 "query": {"dryRun": "All"}},
                _get(res)]}


def patch_apply(res: Res) -> dict[str, Any]:
    import yaml

    return {"name": "patch-apply", "doc": "server-side apply creates, then updates",
            "steps": [
                {"req": f"PATCH {res.obj}", "type": "apply", "query": {"fieldManager": "dt"},
                 "raw": yaml.safe_dump(res.new(labels={"a": "1"}), sort_keys=False),
                 "status": None},
                {"req": f"PATCH {res.obj}", "type": "apply", "status": None,
                 "raw": yaml.safe_dump(res.new(labels={"a": "2"}), sort_keys=False)}]}


# -- delete ----------------------------------------------------------------------------------

def delete(res: Res) -> dict[str, Any]:
    return {"name": "delete", "steps": [
        _post(res, res.new()),
        {"req": f"DELETE {res.obj}", "status": None},
        _get(res, status=None),
        {"req": f"DELETE {res.coll}/missing-{{name}}", "status": 404}]}


def delete_preconditions(res: Res) -> dict[str, Any]:
    return {"name": "delete-preconditions", "steps": [
        _post(res, res.new(), save="c"),
        {"req": f"PATCH {res.obj}", "type": "merge", "body": {"metadata": {"labels": {"x": "1"}}},
         "status": 200},
        {"req": f"DELETE {res.obj}", "status": 409,
         "body": {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}},
        {"req": f"DELETE {res.obj}", "status": 409,
         "body": {"preconditions": {"resourceVersion": "{c.metadata.resourceVersion}"}}},
        {"req": f"DELETE {res.obj}", "status": None, "body": {
            "kind": "DeleteOptions", "apiVersion": "v1",
            "preconditions": {"uid": "{c.metadata.uid}"}}}]}


def delete_dry_run(res: Res) -> dict[str, Any]:
    return {"name": "delete-dry-run", "steps": [
        _post(res, res.new()),
        {"req": f"DELETE {res.obj}", "query": {"dryRun": "All"}, "status": None},
        _get(res),
        {"req": f"DELETE {res.obj}", "query": {"dryRun": "Bogus"}, "status": 422}]}


def delete_options(res: Res) -> dict[str, Any]:
    return {"name": "delete-options", "doc": "propagationPolicy values and conflicts",
            "steps": [
                _post(res, res.new()),
                {"req": f"DELETE {res.obj}", "query": {"propagationPolicy": "Sideways"},
                 "status": None},
                {"req": f"DELETE {res.obj}", "status": None,
                 "body": {"propagationPolicy": "Orphan", "orphanDependents": False}},
                {"req": f"DELETE {res.obj}", "status": None,
                 "body": {"propagationPolicy": "Foreground", "gracePeriodSeconds": 0}},
                _get(res, status=None),
                {"req": f"PATCH {res.obj}", "type": "merge", "status": None,
                 "body": {"metadata": {"finalizers": None}}},
                _get(res, status=None)]}


def delete_collection(res: Res) -> dict[str, Any]:
    return {"name": "deletecollection", "steps": [
        _post(res, res.new(name="{name}-a", labels={"g": "x"})),
        _post(res, res.new(name="{name}-b", labels={"g": "x"})),
        _post(res, res.new(name="{name}-c")),
        {"req": f"DELETE {res.coll}", "query": res.list_query(labelSelector="g=x"),
         "status": None},
        _list(res)]}


# -- watch -----------------------------------------------------------------------------------

def watch(res: Res) -> dict[str, Any]:
    return {"name": "watch", "doc": "events after a resourceVersion: MODIFIED, DELETED",
            "steps": [
                _post(res, res.new(), save="c"),
                {"req": f"PATCH {res.obj}", "type": "merge", "status": 200,
                 "body": {"metadata": {"labels": {"x": "1"}}}},
                {"req": f"DELETE {res.obj}", "status": None, "query": {
                    "gracePeriodSeconds": "0"}},
                # MODIFIED, DELETED (a pod is marked before it goes: one MODIFIED more)
                {"req": f"GET {res.coll}", "watch": 3 if res.family == "pods" else 2,
                 "timeout": 3,
                 "query": res.list_query(resourceVersion="{c.metadata.resourceVersion}")}]}


def watch_selector(res: Res) -> dict[str, Any]:
    return {"name": "watch-selector", "doc": "label changes in and out of a selector",
            "steps": [
                _post(res, res.new(labels={"w": "no"}), save="c"),
                {"req": f"PATCH {res.obj}", "type": "merge", "status": 200,
                 "body": {"metadata": {"labels": {"w": "yes"}}}},
                {"req": f"PATCH {res.obj}", "type": "merge", "status": 200,
                 "body": {"metadata": {"annotations": {"a": "1"}}}},
                {"req": f"PATCH {res.obj}", "type": "merge", "status": 200,
                 "body": {"metadata": {"labels": {"w": "no"}}}},
                {"req": f"GET {res.coll}", "watch": 3, "timeout": 3, "query": res.list_query(
                    resourceVersion="{c.metadata.resourceVersion}", labelSelector="w=yes")},
                {"req": f"GET {res.coll}", "watch": 3, "timeout": 3, "query": res.list_query(
                    resourceVersion="{c.metadata.resourceVersion}",
                    fieldSelector="metadata.name={name}")}]}


def watch_initial_events(res: Res) -> dict[str, Any]:
    return {"name": "watch-initial-events", "doc": "sendInitialEvents with a bookmark",
            "steps": [
                _post(res, res.new(name="{name}-a")),
                _post(res, res.new(name="{name}-b")),
                {"req": f"GET {res.coll}", "watch": 3, "timeout": 3, "query": res.list_query(
                    sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
                    allowWatchBookmarks="true")},
                {"req": f"GET {res.coll}", "watch": 2, "timeout": 3,
                 "query": res.list_query(resourceVersion="0")},
                {"req": f"GET {res.coll}", "status": 422, "watch": 1,
                 "query": res.list_query(sendInitialEvents="true")}]}


# -- errors ----------------------------------------------------------------------------------

def methods(res: Res) -> dict[str, Any]:
    return {"name": "method-not-allowed", "steps": [
        _post(res, res.new()),
        {"req": f"PUT {res.coll}", "body": res.new(), "status": 405},
        {"req": f"POST {res.obj}", "body": res.new(), "status": 405},
        {"req": f"PATCH {res.coll}", "type": "merge", "body": {}, "status": 405},
        {"req": f"GET {res.obj}/bogus", "status": 404}]}


FAMILIES: list[Callable[[Res], dict[str, Any] | None]] = [
    create, create_yaml, create_dry_run, create_generate_name, create_exists,
    create_invalid_name, create_no_name, create_kind_mismatch, create_api_version_mismatch,
    create_no_kind, create_namespace_mismatch, create_bad_json, create_unknown_content_type,
    create_unknown_field, get_missing, list_label_selector, list_field_selector, list_paging,
    list_resource_version, table, update, update_stale, update_name_mismatch, update_missing,
    patch_merge, patch_json, patch_strategic, patch_errors, patch_apply, delete,
    delete_preconditions, delete_dry_run, delete_options, delete_collection, watch,
    watch_selector, watch_initial_events, methods,
]


# -- hostile input: limits that need bodies too large to write in a case file -------------

_CM = "/api/v1/namespaces/{ns}/configmaps"
_PT = "/api/v1/namespaces/{ns}/podtemplates"
_YAML_BOMB = """apiVersion: v1
kind: ConfigMap
metadata:
  name: "{name}-bomb"
  annotations:
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""


def _pod_template(name: str, args: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "template": {"metadata": {}, "spec": {"containers": [
        {"name": "c", "image": "x", "args": ["a" * 1000] * args}]}}}


def limit_cases() -> list[dict[str, Any]]:
    """kube-apiserver's limits on what one request may cost: JSON patch operations and copy
    bytes, the body size, etcd's request size, YAML alias expansion."""
    copy_ops: list[dict[str, Any]] = [
        {"op": "add", "path": "/metadata/annotations", "value": {"x": "a" * 40}}]
    copy_ops += [{"op": "copy", "from": "/metadata/annotations",
                  "path": f"/metadata/annotations/c{i}"} for i in range(24)]
    test_op = {"op": "test", "path": "/metadata/name", "value": "{name}"}
    return [
        {"name": "json-patch-limits", "doc": "10,000 operations at most (413); copy operations "
         "may copy 3 MiB together (JSONPatchMaxCopyBytes: a generic 422), the object is left "
         "as it was", "steps": [
            {"req": f"POST {_CM}", "status": 201, "body": {"metadata": {"name": "{name}"}}},
            {"req": f"PATCH {_CM}/{{name}}", "type": "json-patch", "status": 413,
             "body": [test_op] * 10_001},
            {"req": f"PATCH {_CM}/{{name}}", "type": "json-patch", "status": 200,
             "body": [test_op] * 10_000},
            {"req": f"PATCH {_CM}/{{name}}", "type": "json-patch", "status": 422,
             "body": copy_ops},
            {"req": f"GET {_CM}/{{name}}", "status": 200}]},
        {"name": "body-and-object-size", "doc": "a body over 3 MiB is 413; an object over "
         "etcd's 1.5 MiB request limit a bare 500 from the storage; 1.4 MB is stored", "steps": [
            {"req": f"POST {_CM}", "status": 413,
             "body": {"metadata": {"name": "{name}"}, "data": {"x": "a" * (3 * 1024 * 1024)}}},
            {"req": f"POST {_PT}", "status": 500, "body": _pod_template("{name}-big", 1700)},
            {"req": f"POST {_PT}", "status": 201, "body": _pod_template("{name}", 1400)},
            {"req": f"PATCH {_PT}/{{name}}", "type": "json-patch", "status": 500,
             "body": [{"op": "add", "path": "/template/spec/containers/0/args/-",
                       "value": "b" * 1000}] * 300},
            {"req": f"GET {_PT}/{{name}}-big", "status": 404}]},
        {"name": "yaml-aliases-and-tags", "doc": "go-yaml refuses a document that is mostly "
         "alias expansion; a few aliases, !!binary and timestamps decode", "steps": [
            {"req": f"POST {_CM}", "type": "yaml", "status": 400, "raw": _YAML_BOMB},
            {"req": f"POST {_CM}", "type": "yaml", "status": 201,
             "raw": "metadata:\n  name: \"{name}\"\ndata:\n  a: &x hello\n  b: *x\n"
                    "  c: !!binary aGVsbG8=\n  d: 2001-12-14t21:59:43.10-05:00\n"
                    "  e: 2002-12-14\n"}]},
    ]


def families() -> dict[str, list[Case]]:
    """"crud-<resource>" -> the shared families over that resource; "limits"."""
    out: dict[str, list[Case]] = {}
    out["limits"] = [parse_case("limits", d, f"generators.py limit_cases ({d['name']})")
                     for d in limit_cases()]
    for res in RESOURCES:
        group = f"crud-{res.family}"
        cases = []
        for fam in FAMILIES:
            d = fam(res)
            if d is not None:
                if res.namespaced:
                    # One namespace per family: its cases touch one resource each, and the
                    # two views of Events share one storage, so they keep apart.
                    d["namespace"] = fam.__name__ + ("-v1" if res.family == "eventsv1" else "")
                cases.append(parse_case(group, d, f"generators.py {fam.__name__}({res.family})"))
        out[group] = cases
    return out
