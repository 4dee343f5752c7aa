"""FrozenObject (pykcm.cache.frozen_object): the opt-in compact cached object.

Property tests: for random JSON objects (realistic metadata, which takes the
typed FrozenMeta path, and arbitrary metadata, which takes the generic one),
the compact object reads exactly as the dict it came from through every
Mapping access path, refuses every mutation, and thaws / deep-copies /
serializes back to an equal plain dict. Then the cache machinery on it:
keys, indexes, listers with label selectors, DeltaFIFO, the mutation
detector, the managedFields transform, LIST bodies and watch lines.
"""

from __future__ import annotations

import asyncio
import copy
import pickle
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykcm.cache import DeltaFIFO, new_indexer
from pykcm.cache.frozen_object import (
    CompactDecoder,
    FrozenDict,
    FrozenList,
    FrozenMeta,
    FrozenObject,
    OwnerReference,
    freeze,
    frozen_default,
    thaw,
    to_json,
)
from pykcm.cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from pykcm.cache.keys import meta_namespace_key
from pykcm.cache.listers import Lister
from pykcm.cache.mutation_detector import CacheMutationDetector
from pykcm.client.watch import RawWatchStream, WatchStream
from pykcm.informers.transforms import strip_managed_fields

_COMMON_ORDER = ("apiVersion", "kind", "metadata", "spec", "status")

# --- strategies ---------------------------------------------------------------------

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
_scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
            | st.floats(allow_nan=False, allow_infinity=False) | _text)
json_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(_text, children, max_size=4),
    max_leaves=16)
json_objects = st.dictionaries(_text, json_values, max_size=5)

_str_map = st.dictionaries(_text, _text, max_size=4)
owner_refs = st.fixed_dictionaries({}, optional={
    "apiVersion": _text, "kind": _text, "name": _text, "uid": _text,
    "controller": st.booleans(), "blockOwnerDeletion": st.booleans() | st.none()})
object_meta = st.fixed_dictionaries({}, optional={
    "name": _text, "generateName": _text, "namespace": _text, "uid": _text,
    "resourceVersion": st.integers(min_value=1).map(str),
    "generation": st.integers(min_value=0, max_value=2**40),
    "creationTimestamp": _text, "deletionTimestamp": _text | st.none(),
    "deletionGracePeriodSeconds": st.integers(min_value=0, max_value=3600),
    "labels": _str_map, "annotations": _str_map | st.none(),
    "ownerReferences": st.lists(owner_refs, max_size=3),
    "finalizers": st.lists(_text, max_size=3),
    "managedFields": st.lists(json_objects, max_size=2),
})


@st.composite
def k8s_objects(draw: st.DrawFn) -> dict[str, Any]:
    """A Kubernetes-shaped object: typed metadata most of the time, anything else too."""
    obj: dict[str, Any] = {}
    if draw(st.booleans()):
        obj["apiVersion"] = draw(st.sampled_from(["v1", "apps/v1"]) | json_values)
    if draw(st.booleans()):
        obj["kind"] = draw(st.sampled_from(["Pod", "ConfigMap"]) | json_values)
    choice = draw(st.integers(0, 9))
    if choice < 7:
        obj["metadata"] = draw(object_meta)
    elif choice < 9:
        obj["metadata"] = draw(json_values)
    for key in ("spec", "status"):
        if draw(st.booleans()):
            obj[key] = draw(json_values)
    if draw(st.booleans()):  # other top-level keys (a ConfigMap's data ...)
        for k, v in draw(json_objects).items():
            obj.setdefault(k, v)
    return obj


def _plain(value: Any) -> bool:
    """Only plain dicts, lists and scalars, all the way down."""
    t = type(value)
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if t is list:
        return all(_plain(v) for v in value)
    return t in (str, int, float, bool, type(None))


def _check_reads(fo: Any, d: Any) -> None:
    """Every read access path of `fo` gives what the dict `d` gives."""
    if not isinstance(d, dict):
        assert fo == d
        return
    assert isinstance(fo, Mapping)
    assert fo == d and d == fo
    assert (fo != d) is False and (d != fo) is False
    assert len(fo) == len(d)
    assert sorted(fo) == sorted(d)
    assert sorted(fo.keys()) == sorted(d.keys())
    assert sorted(map(repr, fo.items())) == sorted(map(repr, d.items())) or \
        dict(fo.items()) == d
    assert dict(fo.items()) == d
    assert len(list(fo.values())) == len(d)
    for k, v in d.items():
        assert k in fo
        assert fo[k] == v and fo.get(k) == v and fo.get(k, "dflt") == v
        if isinstance(v, dict):
            _check_reads(fo[k], v)
        elif isinstance(v, list):
            got = fo[k]
            assert isinstance(got, list) and got == v
            for a, b in zip(got, v, strict=True):
                _check_reads(a, b)
    missing = "\x00missing"
    assert missing not in fo and fo.get(missing) is None and fo.get(missing, 7) == 7
    with pytest.raises(KeyError):
        fo[missing]


# --- properties ------------------------------------------------------------------


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(k8s_objects())
def test_compact_object_reads_as_the_dict_it_came_from(d: dict[str, Any]) -> None:
    fo = CompactDecoder().object(orjson.dumps(d))
    assert isinstance(fo, FrozenObject)
    # Top-level order kept, or the common shape's order (decoded in one pass).
    assert list(fo) == list(d) or list(fo) == [k for k in _COMMON_ORDER if k in d]
    _check_reads(fo, d)
    if isinstance(d.get("metadata"), dict):
        meta = fo["metadata"]
        assert isinstance(meta, FrozenMeta | FrozenDict)
        assert meta == d["metadata"]
        # The key function and the namespace index read it as they read dicts.
        assert meta_namespace_key(fo) == meta_namespace_key(d)
        if all(isinstance(d["metadata"].get(k, ""), str | None)
               for k in ("namespace", "name")):
            assert meta_namespace_index_func(fo) == meta_namespace_index_func(d)
    # Built from the dict: the same object.
    assert FrozenObject.from_dict(d) == fo


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.builds(lambda m, rest: {"metadata": m, **rest}, object_meta, json_objects))
def test_realistic_metadata_takes_the_typed_path(d: dict[str, Any]) -> None:
    fo = CompactDecoder().object(orjson.dumps(d))
    meta = fo["metadata"]
    assert isinstance(meta, FrozenMeta)
    _check_reads(meta, d["metadata"])
    assert bool(meta) is bool(d["metadata"])  # truth as the dict's (``meta or {}``)
    if "labels" in d["metadata"]:
        assert type(meta["labels"]) is FrozenDict
    for ref in meta.get("ownerReferences") or ():
        assert isinstance(ref, OwnerReference) and isinstance(ref, Mapping)
    if "finalizers" in d["metadata"]:
        assert type(meta["finalizers"]) is FrozenList


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(k8s_objects())
def test_thaw_deepcopy_json_and_pickle_give_the_same_object(d: dict[str, Any]) -> None:
    fo = CompactDecoder().object(orjson.dumps(d))
    for copied in (fo.thaw(), fo.to_dict(), copy.deepcopy(fo), thaw(fo)):
        assert type(copied) is dict and _plain(copied)
        assert copied == d
        copied["added"] = 1  # mutable, and not the cache
        assert "added" not in fo or "added" in d
    assert copy.copy(fo) is fo
    assert orjson.loads(to_json(fo)) == d
    assert orjson.loads(fo.to_json()) == d
    assert orjson.loads(orjson.dumps({"x": [fo]}, default=frozen_default)) == {"x": [d]}
    assert pickle.loads(pickle.dumps(fo)) == fo
    # Values from the raw parts are fresh copies: changing one changes nothing.
    for k, v in d.items():
        got = fo[k]
        if type(got) is dict:
            got["\x00new"] = 1
            assert fo[k] == v
    if isinstance(d.get("metadata"), dict):
        m = fo["metadata"]
        assert copy.deepcopy(m) == d["metadata"] and _plain(copy.deepcopy(m))
        assert orjson.loads(orjson.dumps(m, default=frozen_default)) == d["metadata"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(k8s_objects())
def test_every_mutation_is_refused(d: dict[str, Any]) -> None:
    fo = CompactDecoder().object(orjson.dumps(d))
    attempts: list[Callable[[], object]] = [
        lambda: fo.__setitem__("k", 1), lambda: fo.__delitem__("metadata"),
        lambda: fo.pop("kind"), lambda: fo.popitem(), lambda: fo.clear(),
        lambda: fo.update({"a": 1}), lambda: fo.setdefault("a", 1)]
    for attempt in attempts:
        with pytest.raises(TypeError, match="read-only"):
            attempt()
    with pytest.raises(AttributeError):
        fo._keys = ()  # type: ignore[misc]
    meta: Any = fo.get("metadata")
    if isinstance(fo.get("metadata"), Mapping):
        with pytest.raises(TypeError, match="read-only"):
            meta["name"] = "x"
        with pytest.raises(TypeError, match="read-only"):
            meta.pop("name")
        labels = meta.get("labels")
        if isinstance(labels, dict):
            with pytest.raises(TypeError, match="read-only"):
                labels["x"] = "y"
            with pytest.raises(TypeError, match="read-only"):
                labels.update(x="y")
        finalizers = meta.get("finalizers")
        if isinstance(finalizers, list):
            with pytest.raises(TypeError, match="read-only"):
                finalizers.append("x")
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, OwnerReference):
                with pytest.raises(TypeError, match="read-only"):
                    ref["name"] = "x"
    assert fo == d  # nothing changed


def test_mutation_error_names_the_object() -> None:
    fo = FrozenObject.from_dict({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "p", "namespace": "ns"}})
    with pytest.raises(TypeError, match=r"Pod ns/p"):
        fo["spec"] = {}
    with pytest.raises(TypeError, match=r"ns/p"):
        fo["metadata"]["name"] = "q"
    assert "Pod ns/p" in repr(fo)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(k8s_objects())
def test_managed_fields_stripped_while_decoding_or_by_the_transform(d: dict[str, Any]) -> None:
    raw = orjson.dumps(d)
    expected = strip_managed_fields(copy.deepcopy(d))
    assert CompactDecoder(strip_managed_fields=True).object(raw) == expected
    assert strip_managed_fields(CompactDecoder().object(raw)) == expected


def test_truth_of_typed_metadata_stops_at_the_first_set_field(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``pod.get("metadata") or {}`` runs for every pod of every sync: its truth test must
    # not walk every field, as __len__ does
    meta = CompactDecoder().object(orjson.dumps(
        {"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}}}))["metadata"]
    ref = OwnerReference(uid="u")
    empty = CompactDecoder().object(orjson.dumps({"metadata": {}}))["metadata"]
    assert isinstance(meta, FrozenMeta) and isinstance(empty, FrozenMeta)

    def walk(self: object) -> int:
        raise AssertionError("__len__ called for a truth test")

    monkeypatch.setattr(FrozenMeta, "__len__", walk)
    monkeypatch.setattr(OwnerReference, "__len__", walk)
    assert bool(meta) and bool(ref) and not empty
    fallback: Mapping[str, Any] = {}
    assert (meta or fallback)["name"] == "p"


def test_memo_computes_once_per_object_and_is_not_part_of_it() -> None:
    dec = CompactDecoder()
    line = orjson.dumps({"metadata": {"name": "p"}, "status": {"phase": "Running"}})
    fo, other = dec.object(line), dec.object(line)
    calls: list[object] = []

    def phase(o: FrozenObject) -> str:
        calls.append(o)
        return str(o["status"]["phase"])

    assert fo.memo("phase", phase) == "Running" and fo.memo("phase", phase) == "Running"
    assert calls == [fo]  # kept with the object
    assert fo.memo("name", lambda o: o["metadata"]["name"]) == "p"
    assert fo.memo("phase", phase) == "Running" and len(calls) == 1  # both kept
    assert other.memo("phase", phase) == "Running" and len(calls) == 2  # per object
    # not part of the object's value: equality, JSON, thaw, pickle
    assert fo == other and fo.to_json() == other.to_json() == line
    assert fo.thaw() == orjson.loads(line)
    assert pickle.loads(pickle.dumps(other)) == fo


def test_freeze_and_thaw_round_trip() -> None:
    value = {"a": [1, {"b": [2, 3]}], "c": {"d": None}}
    frozen = freeze(value)
    assert type(frozen) is FrozenDict and type(frozen["a"]) is FrozenList
    assert frozen == value and thaw(frozen) == value and _plain(thaw(frozen))
    with pytest.raises(TypeError):
        frozen["a"].append(4)
    assert orjson.loads(orjson.dumps(frozen)) == value  # dict/list subclasses: native
    assert pickle.loads(pickle.dumps(frozen)) == value
    assert copy.copy(frozen) == value and type(copy.copy(frozen)) is dict


# --- the decoder on API server bytes --------------------------------------------------


def _pod(i: int, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": f"p{i}", "namespace": ns, "uid": f"u{i}",
                         "resourceVersion": str(10 + i), "labels": labels,
                         "managedFields": [{"manager": "m", "operation": "Update"}]},
            "spec": {"nodeName": f"n{i % 2}", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"}}


def test_list_body_items_get_the_list_kind() -> None:
    items = [_pod(i) for i in range(3)]
    body = orjson.dumps({"apiVersion": "v1", "kind": "PodList",
                         "metadata": {"resourceVersion": "99"}, "items": items})
    out = CompactDecoder(strip_managed_fields=True).list(body)
    assert out["metadata"] == {"resourceVersion": "99"} and out["kind"] == "PodList"
    for fo, d in zip(out["items"], items, strict=True):
        want = {"apiVersion": "v1", "kind": "Pod", **strip_managed_fields(d)}
        assert fo == want and list(fo) == list(_COMMON_ORDER)
    empty = CompactDecoder().list(b'{"kind":"PodList","apiVersion":"v1","metadata":{},'
                                  b'"items":null}')
    assert empty["items"] == []


def test_one_decoder_for_objects_of_both_shapes() -> None:
    """The one-pass path for the common shape, the generic one for the others, mixed."""
    dec = CompactDecoder()
    shapes = [_pod(1), {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "namespace": "n"}, "data": {"k": "v"}},
              {"metadata": {"name": "x", "unknownField": 1}, "spec": {}},
              {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"a": 1}, "status": {}}]
    for _ in range(3):
        for d in shapes * 2:
            fo = dec.object(orjson.dumps(d))
            assert fo == d
            assert meta_namespace_key(fo) == meta_namespace_key(d)
    body = orjson.dumps({"apiVersion": "v1", "kind": "PodList", "metadata": {},
                         "items": shapes})
    assert CompactDecoder().list(body)["items"] == [
        {"apiVersion": "v1", "kind": "Pod", **d} for d in shapes]


def test_watch_lines_and_errors() -> None:
    dec = CompactDecoder()
    typ, obj = dec.event(orjson.dumps({"type": "ADDED", "object": _pod(1)}))
    assert typ == "ADDED" and isinstance(obj, FrozenObject) and obj == _pod(1)
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
              "reason": "Expired", "metadata": {}}
    typ, obj = dec.event(orjson.dumps({"type": "ERROR", "object": status}))
    assert typ == "ERROR" and type(obj) is dict and obj == status
    with pytest.raises(ValueError):
        dec.event(b'{"type": "ADDED", "object": ')


async def test_watch_stream_with_the_compact_decoder() -> None:
    dec = CompactDecoder()
    lines = [orjson.dumps({"type": "MODIFIED", "object": _pod(i)}) for i in range(5)]
    body = b"\n".join(lines) + b"\nnot json\n"

    async def chunks() -> Any:
        for i in range(0, len(body), 7):
            yield body[i:i + 7]

    stream = WatchStream.decoding(RawWatchStream.from_chunks(chunks()), dec.event)
    got = [ev async for ev in stream]
    assert [t for t, _ in got] == ["MODIFIED"] * 5 + ["ERROR"]
    assert [o for _, o in got[:5]] == [_pod(i) for i in range(5)]
    assert all(isinstance(o, FrozenObject) for _, o in got[:5])
    assert got[5][1]["reason"] == "InternalError"


def test_indexer_lister_and_label_selectors() -> None:
    dec = CompactDecoder(strip_managed_fields=True)
    objs = [dec.object(orjson.dumps(_pod(i, "a" if i < 6 else "b", tier=str(i % 3))))
            for i in range(10)]
    indexer = new_indexer(meta_namespace_key, {NAMESPACE_INDEX: meta_namespace_index_func})
    for o in objs:
        indexer.add(o)
    lister = Lister(indexer, "pods")
    assert sorted(o["metadata"]["name"] for o in lister.by_namespace("a").list("tier=1")) \
        == ["p1", "p4"]
    assert sorted(o["metadata"]["name"] for o in lister.list({"tier": "2"})) \
        == ["p2", "p5", "p8"]
    assert lister.by_namespace("b").get("p7") is objs[7]
    assert indexer.index_keys(NAMESPACE_INDEX, "b") and \
        sorted(indexer.index_keys(NAMESPACE_INDEX, "b")) == ["b/p6", "b/p7", "b/p8", "b/p9"]
    # An update moves the key between index values as for dicts.
    moved = dec.object(orjson.dumps(_pod(7, "b", tier="9")))
    indexer.update(moved)
    assert [o["metadata"]["name"] for o in lister.list("tier=9")] == ["p7"]
    indexer.delete(moved)
    assert "b/p7" not in indexer.index_keys(NAMESPACE_INDEX, "b")


async def test_delta_fifo_and_mutation_detector() -> None:
    dec = CompactDecoder()
    objs = [dec.object(orjson.dumps(_pod(i))) for i in range(4)]
    known = new_indexer(meta_namespace_key)
    fifo = DeltaFIFO(meta_namespace_key, known,
                     transformer=strip_managed_fields)
    fifo.replace(objs, "13")
    popped: list[Any] = []
    for _ in range(4):
        await fifo.pop(lambda deltas, initial: popped.extend(d.object for d in deltas))
    assert [o["metadata"]["name"] for o in popped] == ["p0", "p1", "p2", "p3"]
    assert all("managedFields" not in o["metadata"] for o in popped)
    detector = CacheMutationDetector("pods", failure_func=pytest.fail)
    for o in popped:
        detector.add_object(o)
    detector.check()  # deep copies (plain dicts) still equal the cached objects


def test_without_msgspec_the_default_path_works_and_the_knob_says_why() -> None:
    """msgspec is needed only for the compact objects, and imported only then."""
    import subprocess
    import sys
    code = (
        "import sys; sys.modules['msgspec'] = None\n"
        "import pykcm.cache, pykcm.informers, pykcm.cache.list_watch\n"
        "from pykcm.client import Client, Config\n"
        "from pykcm.cache import ListWatch\n"
        "lw = ListWatch(Client(Config(host='http://127.0.0.1:1')), 'pods')\n"
        "try:\n"
        "    ListWatch(Client(Config(host='http://127.0.0.1:1')), 'pods', compact=True)\n"
        "except ImportError as e:\n"
        "    print('IMPORT-ERROR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "IMPORT-ERROR" in out.stdout and "msgspec" in out.stdout
    assert "ListWatch(compact=True)" in out.stdout


_BATCH_LINES = st.lists(st.sampled_from(["pod", "configmap", "bookmark", "error", "bad",
                                         "blank"]), max_size=25)


@settings(max_examples=150, deadline=None)
@given(kinds=_BATCH_LINES, cuts=st.lists(st.integers(0, 10**6), max_size=30),
       final_newline=st.booleans())
def test_watch_stream_batch_decoding_gives_the_per_line_events(
        kinds: list[str], cuts: list[int], final_newline: bool) -> None:
    """WatchStream with CompactDecoder.events (a chunk's lines decoded at once) gives the
    events of the per-line decoding, whatever the chunking: objects of the common shape
    and others (a ConfigMap), bookmarks, ERROR events, a line that is not JSON (an
    ERROR event, then the end) and blank lines."""
    lines = []
    for i, k in enumerate(kinds):
        if k == "pod":
            lines.append(orjson.dumps({"type": "MODIFIED", "object": _pod(i)}))
        elif k == "configmap":
            lines.append(orjson.dumps({"type": "ADDED", "object": {
                "kind": "ConfigMap", "metadata": {"name": f"c{i}", "resourceVersion": str(i)},
                "data": {"k": "v\n"}}}))
        elif k == "bookmark":
            lines.append(orjson.dumps({"type": "BOOKMARK", "object": {
                "kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": str(i)}}}))
        elif k == "error":
            lines.append(orjson.dumps({"type": "ERROR", "object": {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "code": 410, "reason": "Expired"}}))
        elif k == "bad":
            lines.append(b'{"type": "ADDED", "obj')
        else:
            lines.append(b"   ")
    body = b"\n".join(lines) + (b"\n" if final_newline else b"")
    points = sorted({c % (len(body) + 1) for c in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]

    async def read(batch: bool) -> list[tuple[str, Any]]:
        dec = CompactDecoder(strip_managed_fields=True)

        async def gen() -> Any:
            for c in chunks:
                yield c

        args: Any = (dec.event, dec.events) if batch else (dec.event,)
        stream = WatchStream.decoding(RawWatchStream.from_chunks(gen()), *args)
        out: list[tuple[str, Any]] = []
        while events := await stream.next_batch():
            out.extend(events)
        return out

    per_line = asyncio.run(read(False))
    batched = asyncio.run(read(True))
    assert [t for t, _ in batched] == [t for t, _ in per_line]
    assert [o for _, o in batched] == [o for _, o in per_line]
    assert [type(o) for _, o in batched] == [type(o) for _, o in per_line]


def test_raw_part_is_the_json_of_a_part_kept_raw() -> None:
    fo = FrozenObject.from_dict({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "p", "namespace": "n"},
                                 "spec": {"nodeName": "n1", "containers": []}})
    raw = fo.raw_part("spec")
    assert raw is not None and orjson.loads(raw) == {"nodeName": "n1", "containers": []}
    # decoded parts and absent keys have no raw JSON
    assert fo.raw_part("metadata") is None
    assert fo.raw_part("kind") is None
    assert fo.raw_part("status") is None
