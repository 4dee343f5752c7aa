"""Hostile request bodies cost what kube-apiserver lets them cost (issue 17), without a server:
Go's regexp (RE2) for CRD patterns, go-yaml's alias limit and the decoded-size bound of YAML
bodies, JSON patch copy bytes, etcd's request size in the store, Go's typed decoding of
bodies (go_types.py); right-sized stored bytes and a history window bounded by bytes."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from pykcm.api.patch import apply_json_patch
from pykcm.api.patch._errors import InvalidPatchError
from pykcm.api.patch.json_patch import ACCUMULATED_COPY_SIZE_LIMIT
from pykcm.apiserver.crd import go_regexp
from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.serializer.go_types import GoDecodeError, check_object, drop_go_empty
from pykcm.apiserver.serializer.yaml_body import DecodedTooLarge, YAMLBodyError, decode_yaml
from pykcm.apiserver.storage import Store, resource_id
from pykcm.apiserver.storage import store as store_mod
from pykcm.apiserver.storage.store import MAX_REQUEST_BYTES


def test_catastrophic_pattern_matches_in_linear_time() -> None:
    # Python's backtracking re takes ~2**n steps here; RE2 answers at once even for 10^5.
    r = go_regexp.compile("^(a+)+$")
    assert not r.search("a" * 100_000 + "!")
    assert r.search("a" * 100_000)


@pytest.mark.parametrize(("pattern", "message"), [
    ("(", "error parsing regexp: missing closing ): `(`"),
    ("(?=a)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
    ("a**", "error parsing regexp: invalid nested repetition operator: `**`"),
    ("\\8", "error parsing regexp: invalid escape sequence: `\\8`"),
    ("x{2,1}", "error parsing regexp: invalid repeat count: `{2,1}`"),
    ("*a", "error parsing regexp: missing argument to repetition operator: `*`"),
])
def test_pattern_errors_are_gos(pattern: str, message: str) -> None:
    with pytest.raises(go_regexp.GoRegexpError) as exc:
        go_regexp.compile(pattern)
    assert str(exc.value) == message


BOMB = b"""a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""


def test_yaml_alias_bomb_is_refused_before_expansion() -> None:
    with pytest.raises(YAMLBodyError, match="document contains excessive aliasing"):
        decode_yaml(BOMB, 3 * 1024 * 1024)
    with pytest.raises(YAMLBodyError, match="excessive aliasing"):
        decode_yaml(b"a: &a [*a]\n", 1 << 20)  # a recursive alias


def test_yaml_decoded_size_is_bounded() -> None:
    few_big = b"x: &s " + b"y" * 100_000 + b"\nl: [" + b"*s," * 50 + b"]\n"
    with pytest.raises(DecodedTooLarge):
        decode_yaml(few_big, 3 * 1024 * 1024)


def test_yaml_values_json_cannot_hold_read_as_go_yaml_reads_them() -> None:
    doc = decode_yaml(b"a: &x hello\nb: *x\nc: !!binary aGVsbG8=\nd: 2001-12-14t21:59:43.10-05:00\n"
                      b"e: 2002-12-14\nf: !!set {p, q}\n1: one\nl: &l [1]\nm: *l\n", 1 << 20)
    assert doc == {"a": "hello", "b": "hello", "c": "hello", "d": "2001-12-14t21:59:43.10-05:00",
                   "e": "2002-12-14", "f": {"p": None, "q": None}, "1": "one", "l": [1],
                   "m": [1]}
    assert doc["l"] is not doc["m"]  # an alias is a copy: writing one leaves the other
    with pytest.raises(YAMLBodyError, match=r"json: unsupported value: \+Inf"):
        decode_yaml(b"a: .inf\n", 1024)


def test_json_patch_copies_are_bounded_by_bytes() -> None:
    ops = [{"op": "add", "path": "/a", "value": {"x": "a" * 40}}]
    ops += [{"op": "copy", "from": "/a", "path": f"/a/c{i}"} for i in range(24)]
    with pytest.raises(InvalidPatchError, match="accumulated size increase of copy"):
        apply_json_patch({}, ops)
    # under the limit, a copy is independent of its source
    out = apply_json_patch({"a": {"x": [1]}}, [{"op": "copy", "from": "/a", "path": "/b"},
                                                {"op": "add", "path": "/b/x/-", "value": 2}])
    assert out == {"a": {"x": [1]}, "b": {"x": [1, 2]}}
    assert ACCUMULATED_COPY_SIZE_LIMIT == 3 * 1024 * 1024


async def test_store_refuses_objects_over_etcds_request_limit() -> None:
    store = Store()
    await store.start()
    try:
        rs = store.resource(resource_id("", "configmaps"))
        big = {"metadata": {"name": "big"}, "data": {"x": "a" * MAX_REQUEST_BYTES}}
        with pytest.raises(StatusError) as exc:
            await store.write(rs, "ns/big", big, None)
        assert (exc.value.code, exc.value.reason) == (500, "")
        assert exc.value.message == "etcdserver: request is too large"
        huge = {"metadata": {"name": "huge"}, "data": {"x": "a" * (3 * 1024 * 1024)}}
        with pytest.raises(StatusError, match="ResourceExhausted desc = trying to send message"):
            await store.write(rs, "ns/huge", huge, None)
        # the refused writes used no revision
        entry = await store.write(rs, "ns/ok", {"metadata": {"name": "ok"}}, None)
        assert entry.rv == 1 and rs.get("ns/big") is None
    finally:
        await store.close()


@pytest.mark.parametrize(("kind", "body", "message"), [
    (("", "v1", "ConfigMap"), {"metadata": {"name": 5}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"),
    (("", "v1", "ConfigMap"), {"metadata": {"labels": ["x"]}},
     ("json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type "
     "map[string]string")),
    # the first type error in document order wins ...
    (("", "v1", "ConfigMap"), {"metadata": {"finalizers": [1], "annotations": 5}},
     ("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.finalizers of "
     "type string")),
    # ... unless a hand-written decoder fails later: it ends the decoding
    (("", "v1", "ConfigMap"), {"data": [1], "metadata": {"creationTimestamp": "x"}},
     'parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"'),
    (("", "v1", "Pod"), {"spec": {"containers": [{"ports": [{"containerPort": 1.5}]}]}},
     ("json: cannot unmarshal number 1.5 into Go struct field "
     "ContainerPort.spec.containers.ports.containerPort of type int32")),
    # inline structs name themselves in the path, named types keep their package
    (("", "v1", "Pod"), {"spec": {"containers": [{"livenessProbe": {"httpGet": {"port": True}},
                                                  "imagePullPolicy": 5}]}},
     ("json: cannot unmarshal bool into Go struct field "
     "HTTPGetAction.spec.containers.livenessProbe.ProbeHandler.httpGet.port of type int32")),
    (("", "v1", "Pod"), {"spec": {"containers": [{"resources": {"limits": {"cpu": "1e999999999"}}}]}},
     ("quantities must match the regular expression "
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")),
    (("meta.k8s.io", "v1", "DeleteOptions"), {"gracePeriodSeconds": "abc"},
     ("json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of "
     "type int64")),
])
def test_body_types_are_checked_as_go_decodes(kind: tuple[str, str, str], body: Any,
                                              message: str) -> None:
    with pytest.raises(GoDecodeError) as exc:
        check_object(*kind, body)
    assert str(exc.value) == message


def test_well_typed_bodies_pass() -> None:
    check_object("apps", "v1", "Deployment", {
        "metadata": {"name": "d", "labels": {"a": "b"}, "creationTimestamp": None},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "c", "image": "x", "ports": [{"containerPort": 80}],
             "resources": {"limits": {"cpu": "100m", "memory": 1024}},
             "livenessProbe": {"httpGet": {"port": "http"}}}]}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}}})


async def test_stored_revisions_keep_right_sized_bytes() -> None:
    """orjson's output keeps its growth buffer (about 3x a pod); a stored revision lives long,
    so the store keeps an exact-size copy: memory per object is its bytes plus a small index."""
    store = Store()
    await store.start()
    try:
        rs = store.resource(resource_id("", "configmaps"))
        objs = [{"metadata": {"name": f"c{i}", "labels": {"app": "x"}},
                 "data": {f"k{j}": "v" * 40 for j in range(60)}} for i in range(300)]
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for i, o in enumerate(objs):
            await store.write(rs, f"ns/c{i}", o, None)
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        size = sum(len(e.raw) for e in rs.items.values()) / len(objs)
        assert grown / len(objs) < 1.5 * size, (grown / len(objs), size)
    finally:
        await store.close()


async def test_history_window_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_mod, "HISTORY_BYTES", 1024 * 1024)
    store = Store()
    await store.start()
    try:
        rs = store.resource(resource_id("", "configmaps"))
        first = await store.write(rs, "ns/c", {"metadata": {"name": "c"}, "data": {"x": ""}},
                                  None)
        cur = first
        for i in range(60):  # 60 revisions of 100 KB: 6 MB, all younger than five minutes
            cur = await store.write(rs, "ns/c", {"metadata": {"name": "c"},
                                                 "data": {"x": str(i) * 100_000}}, cur)
        assert rs.history_bytes <= 1024 * 1024
        assert rs.oldest_rv > first.rv  # a watch from the first revision now gets 410
        assert len(rs.history) < 60
        await store.write(rs, "ns/c", None, cur)  # a deletion keeps its final state too
        assert 0 < rs.history_bytes <= 1024 * 1024
    finally:
        await store.close()


def test_stored_objects_are_encoded_as_go_encodes_them() -> None:
    """omitempty fields at their zero value disappear; pointers, structs (a zero metav1.Time
    is null) and fields without omitempty stay."""
    status: dict[str, Any] = {"status": {"readyReplicas": 0, "replicas": 0, "conditions": [],
                                         "observedGeneration": 1, "collisionCount": 0}}
    drop_go_empty(status, "apps/v1.Deployment")
    assert status == {"status": {"observedGeneration": 1, "collisionCount": 0}}
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "generateName": ""},
        "spec": {"hostNetwork": False, "nodeName": "", "containers": [
            {"name": "c", "ports": [{"containerPort": 80, "hostPort": 0}], "tty": False,
             "resources": {}}]},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}]}}
    drop_go_empty(pod, "core/v1.Pod")
    assert pod == {"metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}],
                                            "resources": {}}]},
                   "status": {"conditions": [{"type": "Ready", "status": "True",
                                              "lastProbeTime": None}]}}
