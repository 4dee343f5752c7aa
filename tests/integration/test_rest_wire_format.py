"""Wire details kube-apiserver v1.36 has and pykcm's server reproduces (found by the
differential tests in tests/differential/apiserver, which need the real server; these run
without it)."""

from __future__ import annotations

from tests.conftest import Api, pod

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def test_list_items_carry_no_type_meta_and_tables_are_plain_json(api: Api) -> None:
    ns = api.ns()
    code, _ = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "c"}})
    assert code == 201
    code, lst = api.get(f"/api/v1/namespaces/{ns}/configmaps")
    assert code == 200 and lst["kind"] == "ConfigMapList"
    assert "kind" not in lst["items"][0] and "apiVersion" not in lst["items"][0]
    r = api.session.get(f"{api.base}/api/v1/namespaces/{ns}/configmaps/c",
                        headers={"Accept": TABLE}, params={"includeObject": "None"}, timeout=30)
    assert r.headers["Content-Type"] == "application/json"
    assert r.json()["kind"] == "Table" and r.json()["rows"][0]["object"] is None


def test_binding_answers_and_conflicts(api: Api) -> None:
    ns = api.ns()
    assert api.post(f"/api/v1/namespaces/{ns}/pods", pod("p"))[0] == 201
    path = f"/api/v1/namespaces/{ns}/pods/p/binding"
    code, st = api.post(path, {"metadata": {"name": "p"}, "target": {"name": "n1"}})
    assert (code, st) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Success", "code": 201})
    code, st = api.post(path, {"metadata": {"name": "p"}, "target": {"name": "n2"}})
    assert code == 409 and st["details"]["kind"] == "pods/binding"
    code, st = api.post(path, {"metadata": {"name": "other"}, "target": {"name": "n2"}})
    assert code == 400 and st["message"] == "name in URL does not match name in Binding object"


def test_unbound_pod_is_marked_then_removed(api: Api) -> None:
    ns = api.ns()
    code, created = api.post(f"/api/v1/namespaces/{ns}/pods", pod("p"))
    assert code == 201 and created["spec"]["priority"] == 0
    code, gone = api.delete(f"/api/v1/namespaces/{ns}/pods/p")
    assert code == 200 and gone["metadata"]["deletionGracePeriodSeconds"] == 0
    assert gone["metadata"]["generation"] == 2
    events = api.watch(f"/api/v1/namespaces/{ns}/pods",
                       {"resourceVersion": created["metadata"]["resourceVersion"]},
                       max_events=2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]


def test_unknown_group_is_the_plain_page(api: Api) -> None:
    r = api.session.get(f"{api.base}/apis/nosuch.example.com/v1/things", timeout=30)
    assert (r.status_code, r.text) == (404, "404 page not found\n")
