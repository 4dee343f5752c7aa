"""core/v1 ``bindings`` and ``componentstatuses`` on both API servers (pykcm's and the real
kube-apiserver v1.36.2): the same answers, statuses and messages.

- bindings: a POST of a Binding binds the pod its metadata names (pods/binding's rules: a
  second bind is a 409); no list, no named route; the name and namespace checks;
- componentstatuses: get and list of controller-manager, scheduler and etcd-0 (each a single
  Healthy condition; the HTTP components probed at kube-apiserver's loopback ports, so both
  servers see the same processes there), the deprecation warning, no watch.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Api

DEPRECATED = '299 - "v1 ComponentStatus is deprecated in v1.19+"'


def _pod(api: Api, ns: str) -> str:
    name = "p-" + uuid.uuid4().hex[:6]
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods", {
        "metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert code == 201, body
    return name


def _binding(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, **meta},
            "target": {"kind": "Node", "name": "node-a"}}


def test_bindings_bind_the_named_pod(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    pod = _pod(api, ns)
    path = f"/api/v1/namespaces/{ns}/bindings"
    code, body = api.post(path, _binding(pod))
    assert (code, body) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Success", "code": 201})
    code, got = api.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    assert got["spec"]["nodeName"] == "node-a"
    code, body = api.post(path, _binding(pod))
    assert code == 409
    assert body["message"] == (f'Operation cannot be fulfilled on pods/binding "{pod}": pod '
                               f'{pod} is already assigned to node "node-a"')
    assert body["details"] == {"name": pod, "kind": "pods/binding"}
    code, body = api.post(path, _binding(""))
    assert (code, body["message"]) == (400, "Name parameter required.")
    code, body = api.post(path, _binding(pod, namespace="elsewhere"))
    assert (code, body["message"]) == (400, ("the namespace of the provided object does not "
                                            "match the namespace sent on the request"))
    code, body = api.post(path, _binding("missing"))
    assert (code, body["reason"]) == (404, "NotFound")
    assert api.get(path)[0] == 405
    assert api.get(f"{path}/{pod}")[0] == 404
    assert api.post("/api/v1/bindings", _binding(pod))[0] == 404


def test_componentstatuses_get_and_list(apiserver_api: Api) -> None:
    api = apiserver_api
    r = api.session.get(api.base + "/api/v1/componentstatuses", timeout=60)
    assert r.status_code == 200 and r.headers.get("Warning") == DEPRECATED
    listed = r.json()
    assert listed["kind"] == "ComponentStatusList" and listed["metadata"] == {}
    by_name = {i["metadata"]["name"]: i for i in listed["items"]}
    assert sorted(by_name) == ["controller-manager", "etcd-0", "scheduler"]
    assert by_name["etcd-0"]["conditions"] == [{"type": "Healthy", "status": "True",
                                                "message": "ok"}]
    for name, port in (("controller-manager", 10257), ("scheduler", 10259)):
        [cond] = by_name[name]["conditions"]
        assert cond["type"] == "Healthy" and "kind" not in by_name[name]
        if cond["status"] == "False":  # nothing listens there
            assert cond["message"] == (f'Get "https://127.0.0.1:{port}/healthz": dial tcp '
                                       f"127.0.0.1:{port}: connect: connection refused")
        else:
            assert cond == {"type": "Healthy", "status": "True", "message": "ok"}
    code, one = api.get("/api/v1/componentstatuses/etcd-0")
    assert code == 200 and one == {"kind": "ComponentStatus", "apiVersion": "v1",
                                   **by_name["etcd-0"]}
    code, sel = api.get("/api/v1/componentstatuses",
                        params={"fieldSelector": "metadata.name=etcd-0"})
    assert [i["metadata"]["name"] for i in sel["items"]] == ["etcd-0"]
    code, sel = api.get("/api/v1/componentstatuses", params={"labelSelector": "a=b"})
    assert (code, sel["items"]) == (200, [])
    code, body = api.get("/api/v1/componentstatuses/nope")
    assert (code, body["message"]) == (404, 'componentstatus "nope" not found')
    code, body = api.get("/api/v1/componentstatuses", params={"watch": "true"})
    assert (code, body["message"]) == (405, ('watch is not supported on resources of kind '
                                            '"componentstatuses"'))
    assert api.delete("/api/v1/componentstatuses/etcd-0")[0] == 405
