"""ControllerRevision history and template hashing, checked against kube-controller-manager.

The golden file holds pod templates as the real kube-apiserver v1.36.2 served
them and the names the real kube-controller-manager v1.36.2 gave (Deployment
pod-template-hash, DaemonSet and StatefulSet ControllerRevisions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pykcm.api.deep_hash import compute_hash, deep_hash_text, fnv32a, parse_quantity
from pykcm.api.labels import selector_from_set
from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.store import new_indexer
from pykcm.client.errors import AlreadyExists
from pykcm.controller.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    ControllerRevisionControllerRefManager,
    History,
    add_controller_revision_controller_indexer,
    controller_revision_name,
    equal_revision,
    find_equal_revisions,
    fnv32,
    hash_controller_revision,
    marshal_go_json,
    new_controller_revision,
    revision_data_bytes,
    sort_controller_revisions,
    template_patch,
)

GOLDEN = json.loads((Path(__file__).parent / "data" / "controller_hashes_v1.36.json")
                    .read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", GOLDEN["deployments"], ids=lambda c: c["name"])
def test_compute_hash_equals_kube_controller_managers_pod_template_hash(case: Any) -> None:
    assert compute_hash(case["template"], None) == case["hash"]


@pytest.mark.parametrize("case", GOLDEN["daemonsets"], ids=lambda c: c["name"])
def test_daemonset_revision_name_and_data_equal_upstreams(case: Any) -> None:
    h = compute_hash(case["template"], None)
    assert f"{case['name']}-{h}" == case["revision"]
    assert case["labels"]["controller-revision-hash"] == h
    owner = {"spec": {"template": case["template"]}}
    assert marshal_go_json(template_patch(owner)) == revision_data_bytes(case)


@pytest.mark.parametrize("case", GOLDEN["statefulsets"], ids=lambda c: c["name"])
def test_statefulset_revision_name_equals_upstreams(case: Any) -> None:
    owner = {"metadata": {"name": case["name"], "namespace": "default", "uid": "u"},
             "spec": {"template": case["template"]}}
    cr = new_controller_revision(owner, "apps/v1", "StatefulSet",
                                 case["template"]["metadata"]["labels"], template_patch(owner),
                                 1, 0)
    assert cr["metadata"]["name"] == case["revision"]
    assert cr["metadata"]["labels"] == case["labels"]
    assert revision_data_bytes(cr) == revision_data_bytes(case)
    assert cr["metadata"]["ownerReferences"][0] == {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "name": case["name"], "uid": "u",
        "controller": True, "blockOwnerDeletion": True}


def test_deep_hash_text_prints_go_values() -> None:
    text = deep_hash_text({"metadata": {"labels": {"b": "2", "a": "1"}},
                           "spec": {"containers": [{"name": "c", "ports": [
                               {"containerPort": 80}]}],
                               "terminationGracePeriodSeconds": 30}})
    assert text.startswith("(v1.PodTemplateSpec){ObjectMeta:(v1.ObjectMeta){Name:(string) ")
    assert "Labels:(map[string]string)map[a:1 b:2] Annotations:(map[string]string)<nil>" in text
    assert "CreationTimestamp:(v1.Time){Time:(time.Time){wall:(uint64)0 ext:(int64)0 " \
           "loc:(*time.Location)<nil>}}" in text
    assert "Containers:([]v1.Container)[{Name:(string)c " in text
    assert "Ports:([]v1.ContainerPort)[{Name:(string) HostPort:(int32)0 " \
           "ContainerPort:(int32)80 " in text
    assert "TerminationGracePeriodSeconds:(*int64)30 " in text
    assert "ActiveDeadlineSeconds:(*int64)<nil> " in text


@pytest.mark.parametrize(("s", "want"), [
    ("0", {"i": {"value": 0, "scale": 0}, "s": "0", "Format": "DecimalSI"}),
    ("100m", {"i": {"value": 100, "scale": -3}, "s": "100m", "Format": "DecimalSI"}),
    ("1500m", {"i": {"value": 1500, "scale": -3}, "s": "1500m", "Format": "DecimalSI"}),
    ("1k", {"i": {"value": 1, "scale": 3}, "s": "1k", "Format": "DecimalSI"}),
    ("128Mi", {"i": {"value": 128 << 20, "scale": 0}, "s": "", "Format": "BinarySI"}),
    ("100Mi", {"i": {"value": 100 << 20, "scale": 0}, "s": "100Mi", "Format": "BinarySI"}),
    ("1e3", {"i": {"value": 1, "scale": 3}, "s": "1e3", "Format": "DecimalExponent"}),
])
def test_parse_quantity_int64_path(s: str, want: dict[str, Any]) -> None:
    q = parse_quantity(s)
    assert q["d"] == {"Dec": None}
    assert {k: q[k] for k in want} == want


def test_parse_quantity_inf_dec_path() -> None:
    q = parse_quantity("100Ti")  # too many digits for the int64 fast path of BinarySI
    assert q["i"] == {"value": 0, "scale": 0}
    assert q["d"]["Dec"] == {"unscaled": {"neg": False, "abs": [100 * 2**40 * 10**9 % 2**64,
                                                                100 * 2**40 * 10**9 >> 64]},
                             "scale": 9}
    assert q["Format"] == "BinarySI"


def test_compute_hash_mixes_in_the_collision_count() -> None:
    t = GOLDEN["deployments"][0]["template"]
    assert compute_hash(t, 0) != compute_hash(t, None)
    assert compute_hash(t, 1) != compute_hash(t, 0)


def test_fnv_variants() -> None:
    assert fnv32(b"") == 0x811C9DC5
    assert fnv32(b"a") == 0x050C5D7E  # FNV-1
    assert fnv32a(b"a") == 0xE40C292C  # FNV-1a


def test_marshal_go_json_sorts_keys_and_escapes_as_go() -> None:
    got = marshal_go_json({"b": [1, 2.5, None, True], "a": "<&>\u2028\n\x01\"é"})
    assert got == '{"a":"\\u003c\\u0026\\u003e\\u2028\\n\\u0001\\"é","b":[1,2.5,null,true]}' \
        .encode()


def test_controller_revision_name_cuts_long_prefixes() -> None:
    assert controller_revision_name("web", "abc") == "web-abc"
    assert len(controller_revision_name("x" * 300, "abcdefghij")) == 234


def _cr(name: str, revision: int, ts: str, data: Any = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": ts},
            "revision": revision, "data": data}


def test_sort_and_equality() -> None:
    a = _cr("a", 2, "2024-01-01T00:00:02Z", {"x": 1})
    b = _cr("b", 1, "2024-01-01T00:00:05Z", {"x": 2})
    c = _cr("c", 2, "2024-01-01T00:00:01Z", {"x": 1})
    d = _cr("d", 2, "2024-01-01T00:00:01Z", {"x": 3})
    assert [r["metadata"]["name"] for r in sort_controller_revisions([a, b, c, d])] == \
        ["b", "c", "d", "a"]
    assert equal_revision(a, c) and not equal_revision(a, b)
    assert equal_revision(None, None) and not equal_revision(a, None)
    assert find_equal_revisions([a, b, c], c) == [a, c]


class _FakeClient:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []

    async def create(self, resource: str, body: dict[str, Any], namespace: str) -> Any:
        name = body["metadata"]["name"]
        self.calls.append(("create", name))
        if name in self.objects:
            raise AlreadyExists({"kind": "Status", "reason": "AlreadyExists", "code": 409,
                                 "message": "exists"})
        self.objects[name] = body
        return body

    async def get(self, resource: str, name: str, namespace: str) -> Any:
        self.calls.append(("get", name))
        return self.objects[name]

    async def patch(self, resource: str, name: str, body: Any, kind: str,
                    namespace: str) -> Any:
        self.calls.append(("patch", name))
        return body


async def test_create_controller_revision_resolves_name_collisions() -> None:
    client = _FakeClient()
    owner = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
             "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}
    hist = History(client, new_indexer(meta_namespace_key))  # type: ignore[arg-type]
    cr = new_controller_revision(owner, "apps/v1", "StatefulSet", {"a": "b"},
                                 template_patch(owner), 1, 0)
    # someone else's revision holds the name the first hash gives
    squatter = dict(cr, data={"other": True})
    client.objects[cr["metadata"]["name"]] = squatter
    created, count = await hist.create_controller_revision(owner, cr, 0)
    assert count == 1
    assert created["metadata"]["name"] == "web-" + hash_controller_revision(cr, 1)
    # the same data again: the existing revision is returned, no new name
    again, count2 = await hist.create_controller_revision(owner, cr, 1)
    assert count2 == 1 and again is created
    assert CONTROLLER_REVISION_HASH_LABEL in cr["metadata"]["labels"]


def test_list_controller_revisions_owned_or_orphans() -> None:
    cache = new_indexer(meta_namespace_key)
    add_controller_revision_controller_indexer(cache)
    add_controller_revision_controller_indexer(cache)  # a second controller asks too

    def cr(name: str, labels: dict[str, str], owner: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels}
        if owner:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                        "name": "web", "uid": owner, "controller": True}]
        return {"metadata": meta}

    for o in (cr("mine", {"app": "web"}, "u1"), cr("theirs", {"app": "web"}, "u2"),
              cr("orphan", {"app": "web"}, None), cr("other", {"app": "x"}, None)):
        cache.add(o)
    hist = History(None, cache)  # type: ignore[arg-type]
    owner = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}}
    got = hist.list_controller_revisions(owner, "StatefulSet", selector_from_set({"app": "web"}))
    assert sorted(r["metadata"]["name"] for r in got) == ["mine", "orphan"]


async def test_claim_adopts_orphans_and_releases_non_matching() -> None:
    client = _FakeClient()
    owner = {"kind": "DaemonSet", "apiVersion": "apps/v1",
             "metadata": {"name": "ds", "namespace": "ns", "uid": "u1"}}
    ref = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u1",
            "controller": True}]
    orphan = {"metadata": {"name": "o", "namespace": "ns", "uid": "c1", "labels": {"a": "1"}}}
    stray = {"metadata": {"name": "s", "namespace": "ns", "uid": "c2", "labels": {"a": "2"},
                          "ownerReferences": ref}}
    mine = {"metadata": {"name": "m", "namespace": "ns", "uid": "c3", "labels": {"a": "1"},
                         "ownerReferences": ref}}

    async def can_adopt() -> None:
        return None

    m = ControllerRevisionControllerRefManager(client, owner,  # type: ignore[arg-type]
                                               selector_from_set({"a": "1"}), "apps/v1",
                                               "DaemonSet", can_adopt)
    claimed = await m.claim_controller_revisions([orphan, stray, mine])
    assert [c["metadata"]["name"] for c in claimed] == ["o", "m"]
    assert sorted(client.calls) == [("patch", "o"), ("patch", "s")]
