"""The corpus and the allowlist are well formed (no servers needed)."""

from __future__ import annotations

from tests.differential.apiserver.corpus import load_corpus
from tests.differential.apiserver.runner import (
    ABSENT,
    AllowEntry,
    Allowlist,
    Case,
    Diff,
    Step,
    StepResult,
    Vars,
    diff,
    normalize,
)


def test_corpus_loads_with_unique_case_ids() -> None:
    groups = load_corpus()
    ids = [c.id for cases in groups.values() for c in cases]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 500
    for cases in groups.values():
        for c in cases:
            assert c.steps, c.id


def test_allowlist_entries_have_reasons_and_paths() -> None:
    allow = Allowlist.load()
    assert allow.entries
    for e in allow.entries:
        assert len(e.reason) > 20 and e.paths and e.cases, e.index


def test_allowlist_patterns() -> None:
    e = AllowEntry(cases=["crud-pods/*"], paths=["body.items[*].spec.tolerations"], reason="r",
                   req=[], index=1)
    step = Step("GET", "/api/v1/namespaces/{ns}/pods")
    assert e.matches("crud-pods/create", step, Diff("body.items[3].spec.tolerations[1]", 1, 2))
    assert not e.matches("crud-pods/create", step,
                         Diff("body.items[0].spec.template.spec.tolerations", 1, 2))
    assert not e.matches("crud-nodes/create", step, Diff("body.items[3].spec.tolerations", 1, 2))


def test_placeholders_keep_types_and_merge_saved_answers() -> None:
    v = Vars("ns1", "n1", "r")
    v.saved["c"] = {"metadata": {"name": "x", "resourceVersion": "7", "labels": {"a": "b"}},
                    "spec": {"replicas": 3}}
    assert v.expand("{c.spec.replicas}") == 3
    assert v.expand("/api/v1/namespaces/{ns}/pods/{name}-{c.metadata.resourceVersion}") == (
        "/api/v1/namespaces/ns1/pods/n1-7")
    merged = v.expand({"$saved": "c", "$merge": {"metadata": {"labels": {"a": None, "x": "y"}}}})
    assert merged["metadata"]["labels"] == {"x": "y"} and merged["spec"] == {"replicas": 3}
    assert v.expand("{c.metadata.missing}") == "<missing c.metadata.missing>"


def test_normalize_masks_what_legitimately_differs() -> None:
    obj = {"metadata": {"name": "web-x7k2p", "generateName": "web-",
                        "uid": "0f075f4f-4127-4977-8e4d-ec55ae02e01e", "resourceVersion": "12",
                        "creationTimestamp": "2026-12-01T20:32:42Z"},
           "spec": {"clusterIP": "10.96.0.10", "ports": [{"nodePort": 31234}]}}
    st = {"kind": "Status", "message": 'pods "web-x7k2p" not found; too old resource version: '
                                       "5 (120)"}
    out = normalize([StepResult(201, "application/json", [], obj),
                     StepResult(404, "application/json", [], st)])
    meta = out[0]["body"]["metadata"]
    assert meta == {"name": "web-<rand>", "generateName": "web-", "uid": "<uid:1>",
                    "resourceVersion": "<rv>", "creationTimestamp": "<time>"}
    assert out[0]["body"]["spec"] == {"clusterIP": "<clusterIP>",
                                      "ports": [{"nodePort": "<nodePort>"}]}
    assert out[1]["body"]["message"] == (
        'pods "web-<rand>" not found; too old resource version: <rv> (<rv>)')


def test_diff_paths() -> None:
    got = diff({"a": {"b": [1, 2]}, "c": 1, "x.y": 1}, {"a": {"b": [1]}, "d": 2, "x.y": 2})
    assert [(d.path, d.kube, d.pykcm) for d in got] == [
        ("a.b[1]", 2, ABSENT), ("c", 1, ABSENT), ('["x.y"]', 1, 2), ("d", ABSENT, 2)]
    assert diff(1, 1.0) == [Diff("", 1, 1.0)]


def test_case_uses_namespace() -> None:
    c = Case("g", "n", [Step("GET", "/api/v1/nodes")])
    assert not c.uses_namespace()
    c = Case("g", "n", [Step("GET", "/api/v1/namespaces/{ns}/pods")])
    assert c.uses_namespace()
