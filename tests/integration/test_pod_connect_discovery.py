"""Discovery of the pods' connect subresources (log, exec, attach, portforward).

Runs on pykcm's API server and the real kube-apiserver (``apiserver``): the
entries pykcm lists for what pykcm.apiserver.endpoints.pod_proxy serves are the ones
kube-apiserver v1.36 lists, in /api/v1 and in the aggregated /api document.
pods/proxy is not served by pykcm, so it is not compared.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import Api

CONNECT = ("pods/attach", "pods/exec", "pods/log", "pods/portforward")


def test_api_v1_lists_the_connect_subresources_as_kube_apiserver(apiserver_api: Api) -> None:
    code, core = apiserver_api.get("/api/v1")
    assert code == 200, core
    got = {r["name"]: r for r in core["resources"] if r["name"] in CONNECT}

    def options(kind: str) -> dict[str, Any]:
        return {"singularName": "", "namespaced": True, "kind": kind,
                "verbs": ["create", "get"]}

    assert got == {
        "pods/attach": {"name": "pods/attach", **options("PodAttachOptions")},
        "pods/exec": {"name": "pods/exec", **options("PodExecOptions")},
        "pods/log": {"name": "pods/log", "singularName": "", "namespaced": True,
                     "kind": "Pod", "verbs": ["get"]},
        "pods/portforward": {"name": "pods/portforward", **options("PodPortForwardOptions")},
    }


def test_aggregated_discovery_lists_them_too(apiserver_api: Api) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    r = apiserver_api.session.get(apiserver_api.base + "/api", headers={"Accept": accept},
                                  timeout=10)
    core = r.json()["items"][0]
    pods = next(x for x in core["versions"][0]["resources"] if x["resource"] == "pods")
    subs = {s["subresource"]: s for s in pods["subresources"]}

    def kind(name: str) -> dict[str, str]:
        # kube-apiserver leaves the version of a connect subresource's kind empty here
        return {"group": "", "version": "", "kind": name}

    assert {n: subs.get(n) for n in ("attach", "exec", "log", "portforward")} == {
        "attach": {"subresource": "attach", "responseKind": kind("PodAttachOptions"),
                   "verbs": ["create", "get"]},
        "exec": {"subresource": "exec", "responseKind": kind("PodExecOptions"),
                 "verbs": ["create", "get"]},
        "log": {"subresource": "log", "responseKind": kind("Pod"), "verbs": ["get"]},
        "portforward": {"subresource": "portforward",
                        "responseKind": kind("PodPortForwardOptions"),
                        "verbs": ["create", "get"]},
    }
    names = [s["subresource"] for s in pods["subresources"]]
    assert names == sorted(names)
