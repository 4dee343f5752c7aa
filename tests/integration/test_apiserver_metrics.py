"""The API server's /metrics: request counts, stored objects and watchers in Prometheus text."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Api


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def test_metrics_count_requests_and_objects(api: Api) -> None:
    ns = api.ns()
    for i in range(3):
        code, body = api.post(f"/api/v1/namespaces/{ns}/configmaps",
                              {"metadata": {"name": f"cm-{i}"}, "data": {"k": "v"}})
        assert code == 201, body
    code, text = api.get("/metrics")
    assert code == 200
    s = _samples(text)
    creates = [v for lab, v in s["apiserver_request_total"]
               if lab["verb"] == "POST" and lab["resource"] == "configmaps"
               and lab["code"] == "201" and lab["scope"] == "namespace"]
    assert creates and creates[0] >= 3
    objects = {lab["resource"]: v for lab, v in s["apiserver_storage_objects"]}
    assert objects["configmaps"] >= 3
    assert "apiserver_registered_watchers" in s
    (_, revision), = s["etcd_debugging_mvcc_current_revision"]
    assert revision >= 3
    assert {lab["request_kind"] for lab, _ in s["apiserver_current_inflight_requests"]} == {
        "readOnly", "mutating"}
