"""PartialObjectMetadata(List) answers, on pykcm's API server and on kube-apiserver v1.36.

The metadata-only clients (client-go's metadata client, pykcm's metadata informers)
read any resource as ``meta.k8s.io`` PartialObjectMetadata: each test asks both servers
the same and expects the same answer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api


def _as(kind: str, version: str = "v1", media: str = "application/json") -> dict[str, str]:
    return {"Accept": f"{media};as={kind};g=meta.k8s.io;v={version}"}


LIST = _as("PartialObjectMetadataList")
ONE = _as("PartialObjectMetadata")


def _watch(api: Api, path: str, params: dict[str, str], accept: dict[str, str],
           stop: str) -> list[dict[str, Any]]:
    """Watch events up to the first of type ``stop``."""
    events: list[dict[str, Any]] = []
    with api.session.get(f"{api.base}{path}", headers=accept, stream=True, timeout=30,
                         params={"watch": "1", **params}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line:
                events.append(json.loads(line))
                if events[-1]["type"] == stop:
                    break
    return events


def _make(api: Api) -> tuple[str, dict[str, Any]]:
    ns = api.ns()
    code, cm = api.post(f"/api/v1/namespaces/{ns}/configmaps", {
        "metadata": {"name": "a", "labels": {"x": "y"}, "annotations": {"n": "1"}},
        "data": {"k": "v"}})
    assert code == 201, cm
    return ns, cm


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_list_get_and_watch_as_partial_object_metadata(apiserver_api: Api, version: str
                                                       ) -> None:
    api = apiserver_api
    ns, cm = _make(api)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    gv = f"meta.k8s.io/{version}"

    code, lst = api.get(path, headers=_as("PartialObjectMetadataList", version))
    assert code == 200, lst
    assert (lst["kind"], lst["apiVersion"]) == ("PartialObjectMetadataList", gv)
    assert set(lst["metadata"]) == {"resourceVersion"}
    mine = [i for i in lst["items"] if i["metadata"]["name"] == "a"]
    # The whole ObjectMeta (managedFields too), nothing else, each item with its type.
    assert mine == [{"kind": "PartialObjectMetadata", "apiVersion": gv,
                     "metadata": cm["metadata"]}]

    code, one = api.get(f"{path}/a", headers=_as("PartialObjectMetadata", version))
    assert code == 200
    assert one == {"kind": "PartialObjectMetadata", "apiVersion": gv,
                   "metadata": cm["metadata"]}

    rv = cm["metadata"]["resourceVersion"]
    code, _ = api.delete(f"{path}/a")
    assert code == 200
    # only "a": on the real cluster the root CA publisher adds kube-root-ca.crt meanwhile
    events = _watch(api, path, {"resourceVersion": rv, "fieldSelector": "metadata.name=a"},
                    _as("PartialObjectMetadata", version), "DELETED")
    assert [e["type"] for e in events] == ["DELETED"]
    gone = events[0]["object"]
    assert (gone["kind"], gone["apiVersion"]) == ("PartialObjectMetadata", gv)
    assert set(gone) == {"kind", "apiVersion", "metadata"}
    assert gone["metadata"]["uid"] == cm["metadata"]["uid"]


def test_watch_from_start_has_partial_bookmark(apiserver_api: Api) -> None:
    api = apiserver_api
    ns, cm = _make(api)
    events = _watch(api, f"/api/v1/namespaces/{ns}/configmaps",
                    {"allowWatchBookmarks": "true", "sendInitialEvents": "true",
                     "resourceVersionMatch": "NotOlderThan"}, ONE, "BOOKMARK")
    added = [e for e in events if e["type"] == "ADDED" and
             e["object"]["metadata"].get("name") == "a"]
    assert added == [{"type": "ADDED", "object": {
        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": cm["metadata"]}}]
    mark = events[-1]["object"]
    assert (mark["kind"], mark["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert mark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert set(mark["metadata"]) == {"resourceVersion", "annotations"}


def test_empty_list_has_null_items_and_wrong_shapes_are_406(apiserver_api: Api) -> None:
    api = apiserver_api
    ns, _ = _make(api)
    code, lst = api.get(f"/apis/apps/v1/namespaces/{ns}/deployments", headers=LIST)
    assert code == 200
    assert lst["items"] is None and lst["kind"] == "PartialObjectMetadataList"

    code, st = api.get(f"/api/v1/namespaces/{ns}/configmaps", headers=ONE)
    assert (code, st["reason"], st["message"]) == (
        406, "NotAcceptable", ("you requested PartialObjectMetadata, but the requested object "
                              "is a list (*core.ConfigMapList)"))
    code, st = api.get(f"/api/v1/namespaces/{ns}/configmaps/a", headers=LIST)
    assert (code, st["reason"], st["message"]) == (
        406, "NotAcceptable", ("you requested PartialObjectMetadataList, but the requested "
                              "object is not a list (*core.ConfigMap)"))
    code, st = api.get(f"/apis/apps/v1/namespaces/{ns}/deployments", headers=ONE)
    assert code == 406 and st["message"].endswith("(*apps.DeploymentList)")

    # A paged list keeps its continue token; client-go's metadata client's Accept
    # (protobuf first, then JSON) is answered as PartialObjectMetadataList.
    api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "b"}})
    accept = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;"
              "g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;"
              "g=meta.k8s.io;v=v1,application/json")
    r = api.session.get(f"{api.base}/api/v1/namespaces/{ns}/configmaps",
                        params={"limit": "1"}, headers={"Accept": accept}, timeout=30)
    assert r.status_code == 200
    if r.headers["Content-Type"] == "application/json":
        page = r.json()
        assert page["kind"] == "PartialObjectMetadataList" and page["metadata"]["continue"]
        assert len(page["items"]) == 1
    else:  # kube-apiserver answers the protobuf clause in protobuf
        assert r.headers["Content-Type"].startswith("application/vnd.kubernetes.protobuf")
        assert b"PartialObjectMetadataList" in r.content


def test_table_clause_before_partial_still_gets_table(apiserver_api: Api) -> None:
    api = apiserver_api
    ns, _ = _make(api)
    accept = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
              "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    code, t = api.get(f"/api/v1/namespaces/{ns}/configmaps", headers={"Accept": accept})
    assert code == 200 and t["kind"] == "Table"
    accept = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
              "application/json;as=Table;v=v1;g=meta.k8s.io")
    code, t = api.get(f"/api/v1/namespaces/{ns}/configmaps", headers={"Accept": accept})
    assert code == 200 and t["kind"] == "PartialObjectMetadataList"
