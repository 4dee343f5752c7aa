"""Bad input gets the right metav1.Status, and the server keeps serving."""

from __future__ import annotations

import asyncio
import concurrent.futures

import requests

from tests.conftest import Api, deployment, pod


def _status(body: object, code: int, reason: str) -> None:
    assert isinstance(body, dict), body
    assert body["kind"] == "Status" and body["status"] == "Failure"
    assert body["code"] == code and body["reason"] == reason, body


def test_malformed_bodies(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, body = api.request("POST", path, raw=b'{"metadata": {', content_type="application/json")
    assert code == 400
    _status(body, 400, "BadRequest")
    code, body = api.request("POST", path, raw=b"metadata: [unclosed",
                             content_type="application/yaml")
    assert code == 400
    code, body = api.request("POST", path, raw=b"[1, 2]", content_type="application/json")
    assert code == 400
    code, body = api.post(path, {"apiVersion": "apps/v1", "kind": "ConfigMap",
                                 "metadata": {"name": "x"}})
    _status(body, 400, "BadRequest")
    code, body = api.post(path, {"kind": "Secret", "metadata": {"name": "x"}})
    _status(body, 400, "BadRequest")
    code, body = api.post(path, {"metadata": {"name": "x", "namespace": "other"}})
    _status(body, 400, "BadRequest")
    code, body = api.request("POST", path, raw=b"{" + b'"a":"' + b"x" * (4 * 1024 * 1024) + b'"}')
    assert code == 413
    code, body = api.post(path, {"metadata": {"name": "ok"}})
    assert code == 201  # still serving


def test_yaml_body_accepted(api: Api) -> None:
    ns = api.ns()
    code, body = api.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                             raw=b"metadata:\n  name: y\ndata:\n  k: v\n",
                             content_type="application/yaml")
    assert code == 201 and body["data"] == {"k": "v"}


def test_invalid_names_labels_and_specs(api: Api) -> None:
    ns = api.ns()
    code, body = api.post(f"/api/v1/namespaces/{ns}/configmaps",
                          {"metadata": {"name": "Bad_Name"}})
    _status(body, 422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    code, body = api.post(f"/api/v1/namespaces/{ns}/configmaps",
                          {"metadata": {"name": "ok", "labels": {"bad key!": "v"}}})
    _status(body, 422, "Invalid")
    code, body = api.post(f"/api/v1/namespaces/{ns}/services",
                          {"metadata": {"name": "a.bc"}, "spec": {"ports": [{"port": 80}]}})
    _status(body, 422, "Invalid")
    d = deployment("web")
    d["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    code, body = api.post(f"/apis/apps/v1/namespaces/{ns}/deployments", d)
    _status(body, 422, "Invalid")
    assert body["message"].startswith('Deployment.apps "web" is invalid: ')
    code, body = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {}})
    assert code == 422
    _status(body, 422, "Invalid")


def test_bad_selectors_and_patch_types(api: Api) -> None:
    ns = api.ns()
    path = f"/api/v1/namespaces/{ns}/pods"
    code, body = api.get(path, params={"labelSelector": "a in (b"})
    _status(body, 400, "BadRequest")
    api.post(path, pod("p"))
    code, body = api.request("PATCH", f"{path}/p", raw=b"{}", content_type="text/plain")
    _status(body, 415, "UnsupportedMediaType")
    code, body = api.request("PATCH", f"{path}/p", raw=b"{}",
                             content_type="application/apply-patch+yaml")
    _status(body, 422, "Invalid")   # an apply needs ?fieldManager=
    code, body = api.patch(f"{path}/p", [{"op": "test", "path": "/metadata/name",
                                          "value": "nope"}],
                           content_type="application/json-patch+json")
    assert code == 422, body
    code, body = api.patch(f"{path}/missing", {"metadata": {"labels": {"a": "b"}}})
    _status(body, 404, "NotFound")


def test_unknown_paths_and_methods(api: Api) -> None:
    code, body = api.get("/api/v1/nosuchthings")
    _status(body, 404, "NotFound")
    # a group nobody serves: the mux's plain-text page, as kube-apiserver
    code, body = api.get("/apis/nosuch.group/v1")
    assert (code, body) == (404, "404 page not found\n")
    code, body = api.request("POST", "/api/v1/namespaces/default/pods/p/status", {})
    assert code == 405


def test_authentication(api: Api) -> None:
    url = api.base + "/api/v1/namespaces"
    bare = requests.Session()
    bare.trust_env = False
    r = bare.get(url, verify=api.ca_path, timeout=10)
    assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
    r = bare.get(url, verify=api.ca_path, headers={"Authorization": "Bearer wrong"},
                 timeout=10)
    assert r.status_code == 401
    # a non-ASCII token is just another wrong token
    r = bare.get(url, verify=api.ca_path,
                 headers={"Authorization": "Bearer t\u00f6ken\u2603".encode()}, timeout=10)
    assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
    r = bare.get(api.base + "/healthz", verify=api.ca_path, timeout=10)
    assert r.status_code == 200 and r.text == "ok"
    r = bare.get(api.base + "/version", verify=api.ca_path, timeout=10)
    assert r.status_code == 200 and r.json()["major"] == "1"


def test_too_many_requests_has_retry_after(pykcm_apiserver_factory: object) -> None:
    """A full queue: kube-apiserver's plain-text 429 with Retry-After."""
    st = pykcm_apiserver_factory(max_mutating_requests_inflight=1)  # type: ignore[operator]
    a = Api(st)
    level = st.server.mutating_level
    level.executing, level.queue_length = 1, 0  # as if one write were in flight, no queue
    r = a.session.post(a.base + "/api/v1/namespaces/default/configmaps",
                       json={"metadata": {"name": "x"}}, timeout=10)
    assert r.status_code == 429 and r.headers["Retry-After"] == "1"
    assert r.text == "Too many requests, please try again later.\n"
    level.executing, level.queue_length = 0, 300
    assert a.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "x"}})[0] == 201


def test_beyond_the_inflight_limit_a_request_waits_for_a_seat(
        pykcm_apiserver_factory: object) -> None:
    """APF towards clients: the request queues, and runs once the seat is free."""
    st = pykcm_apiserver_factory(max_mutating_requests_inflight=1)  # type: ignore[operator]
    a = Api(st)
    level = st.server.mutating_level
    level.executing = 1  # as if one write were in flight
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(a.post, "/api/v1/namespaces/default/configmaps",
                          {"metadata": {"name": "queued"}})

        async def queued() -> int:
            while not level.waiting:
                await asyncio.sleep(0.01)
            return level.waiting

        assert st.call(queued()) == 1

        async def finish_the_write_in_flight() -> None:
            level._release()

        st.call(finish_the_write_in_flight())
        assert fut.result(timeout=30)[0] == 201
    assert level.executing == 0


def test_owner_references_and_immutable_fields(api: Api) -> None:
    ns = api.ns()
    refs = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": n, "uid": f"uid-{n}",
             "controller": True} for n in ("a", "b")]
    code, body = api.post(f"/api/v1/namespaces/{ns}/pods",
                          {**pod("p"), "metadata": {"name": "p", "ownerReferences": refs}})
    _status(body, 422, "Invalid")
    assert "Only one reference can have Controller set to true" in body["message"]
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    code, d = api.post(base, deployment("web"))
    assert code == 201, d
    code, body = api.patch(f"{base}/web", {"spec": {"selector": {"matchLabels": {"app": "x"}},
                                                    "template": {"metadata": {"labels": {
                                                        "app": "x"}}}}})
    _status(body, 422, "Invalid")
    assert "field is immutable" in body["message"]
    code, body = api.patch(f"/api/v1/namespaces/{ns}/pods/nope", {})
    assert code == 404


def test_a_different_uid_in_a_write_is_refused_as_immutable(api: Api) -> None:
    """A UID in a patch works as a precondition (controllers' adopt/release patches rely on it)."""
    ns = api.ns()
    code, body = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "u"}})
    assert code == 201, body
    uid = body["metadata"]["uid"]
    path = f"/api/v1/namespaces/{ns}/configmaps/u"
    code, body = api.patch(path, {"metadata": {"uid": "wrong-uid", "labels": {"a": "b"}}},
                           content_type="application/strategic-merge-patch+json")
    assert code == 422, body
    assert body["message"] == ('ConfigMap "u" is invalid: metadata.uid: Invalid value: '
                               '"wrong-uid": field is immutable')
    assert body["details"]["causes"][0]["field"] == "metadata.uid"
    code, body = api.patch(path, {"metadata": {"uid": uid, "labels": {"a": "b"}}},
                           content_type="application/strategic-merge-patch+json")
    assert code == 200, body
    assert body["metadata"]["labels"] == {"a": "b"}
