"""RFC 6902 JSON Patch."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykcm.api.patch import InvalidPatchError, PatchError, PatchTestFailedError, apply_json_patch
from pykcm.api.patch.json_patch import parse_pointer


def apply(doc: Any, patch: list[dict[str, Any]]) -> Any:
    before_d = copy.deepcopy(doc)
    before_p = copy.deepcopy(patch)
    result = apply_json_patch(doc, patch)
    assert doc == before_d, "document was mutated"
    assert patch == before_p, "patch was mutated"
    return result


# RFC 6902 Appendix A (A.1-A.16).
RFC_OK: list[tuple[str, Any, list[dict[str, Any]], Any]] = [
    (
        "A.1 add object member",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux"}],
        {"baz": "qux", "foo": "bar"},
    ),
    (
        "A.2 add array element",
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    (
        "A.3 remove object member",
        {"baz": "qux", "foo": "bar"},
        [{"op": "remove", "path": "/baz"}],
        {"foo": "bar"},
    ),
    (
        "A.4 remove array element",
        {"foo": ["bar", "qux", "baz"]},
        [{"op": "remove", "path": "/foo/1"}],
        {"foo": ["bar", "baz"]},
    ),
    (
        "A.5 replace value",
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        "A.6 move value",
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        "A.7 move array element",
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        "A.8 test value success",
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        "A.10 add nested member object",
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        "A.11 ignore unrecognized elements",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    (
        "A.14 ~ escape ordering",
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}],
        {"/": 9, "~1": 10},
    ),
    (
        "A.16 add array value",
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
]


@pytest.mark.parametrize(("name", "doc", "patch", "expected"), RFC_OK, ids=[c[0] for c in RFC_OK])
def test_rfc6902_examples(name: str, doc: Any, patch: list[dict[str, Any]], expected: Any) -> None:
    assert apply(doc, patch) == expected


def test_a9_test_value_error() -> None:
    with pytest.raises(PatchTestFailedError, match="testing value /baz failed: test failed"):
        apply_json_patch({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}])


def test_a12_add_to_nonexistent_target() -> None:
    with pytest.raises(InvalidPatchError) as exc:
        apply_json_patch({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}])
    assert (
        str(exc.value)
        == 'add operation does not apply: doc is missing path: "/baz/bat": missing value'
    )
    assert exc.value.http_status == 422


def test_a15_comparing_strings_and_numbers() -> None:
    with pytest.raises(PatchTestFailedError):
        apply_json_patch({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}])


def test_test_distinguishes_booleans_from_numbers() -> None:
    with pytest.raises(PatchTestFailedError):
        apply_json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": True}])
    apply_json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}])
    apply_json_patch(
        {"a": {"x": [1, {"y": None}]}},
        [{"op": "test", "path": "/a", "value": {"x": [1, {"y": None}]}}],
    )


def test_kubernetes_test_then_replace() -> None:
    obj = {"spec": {"replicas": 1}, "metadata": {"labels": {"app": "a"}}}
    patch = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 3},
    ]
    result = apply(obj, patch)
    assert result == {"spec": {"replicas": 3}, "metadata": {"labels": {"app": "a"}}}
    assert result["metadata"] is obj["metadata"]
    with pytest.raises(
        PatchTestFailedError, match="testing value /spec/replicas failed: test failed"
    ) as exc:
        apply_json_patch(result, patch)
    assert exc.value.http_status == 422


def test_replace_missing_key_message() -> None:
    with pytest.raises(InvalidPatchError) as exc:
        apply_json_patch({"spec": {}}, [{"op": "replace", "path": "/spec/foo", "value": 1}])
    assert (
        str(exc.value)
        == "replace operation does not apply: doc is missing key: /spec/foo: missing value"
    )


def test_remove_missing_key_message() -> None:
    with pytest.raises(
        InvalidPatchError, match="Unable to remove nonexistent key: foo: missing value"
    ):
        apply_json_patch({"spec": {}}, [{"op": "remove", "path": "/spec/foo"}])
    with pytest.raises(
        InvalidPatchError, match='remove operation does not apply: doc is missing path: "/x/y"'
    ):
        apply_json_patch({"spec": {}}, [{"op": "remove", "path": "/x/y"}])


def test_json_pointer_escapes() -> None:
    doc = {"metadata": {"annotations": {"example.com/a~b": "1"}}}
    patch = [{"op": "replace", "path": "/metadata/annotations/example.com~1a~0b", "value": "2"}]
    assert apply(doc, patch) == {"metadata": {"annotations": {"example.com/a~b": "2"}}}
    assert parse_pointer("/a~1b/c~0d/~01") == ("a/b", "c~d", "~1")
    assert parse_pointer("") == ()
    assert parse_pointer("/") == ("",)


@pytest.mark.parametrize("pointer", ["a/b", "/a~2", "/a~", "/~x"])
def test_bad_pointer(pointer: str) -> None:
    with pytest.raises(InvalidPatchError, match="invalid JSON pointer"):
        apply_json_patch({"a": 1}, [{"op": "add", "path": pointer, "value": 1}])


def test_array_append_and_bounds() -> None:
    doc = {"l": [1, 2]}
    assert apply(doc, [{"op": "add", "path": "/l/-", "value": 3}]) == {"l": [1, 2, 3]}
    assert apply(doc, [{"op": "add", "path": "/l/2", "value": 3}]) == {"l": [1, 2, 3]}
    assert apply(doc, [{"op": "add", "path": "/l/0", "value": 0}]) == {"l": [0, 1, 2]}
    with pytest.raises(InvalidPatchError, match="invalid index referenced"):
        apply_json_patch(doc, [{"op": "add", "path": "/l/3", "value": 3}])
    for bad in ["/l/-1", "/l/01", "/l/x", "/l/ 1"]:
        with pytest.raises(InvalidPatchError):
            apply_json_patch(doc, [{"op": "add", "path": bad, "value": 3}])
    with pytest.raises(InvalidPatchError, match="invalid index referenced"):
        apply_json_patch(doc, [{"op": "remove", "path": "/l/2"}])
    with pytest.raises(InvalidPatchError, match="doc is missing key"):
        apply_json_patch(doc, [{"op": "replace", "path": "/l/2", "value": 0}])
    with pytest.raises(InvalidPatchError, match="doc is missing key"):
        apply_json_patch(doc, [{"op": "replace", "path": "/l/-", "value": 0}])


def test_move_copy() -> None:
    doc = {"a": {"b": [1, 2]}, "c": {}}
    result = apply(
        doc,
        [
            {"op": "copy", "from": "/a/b", "path": "/c/d"},
            {"op": "add", "path": "/c/d/-", "value": 3},
        ],
    )
    assert result == {"a": {"b": [1, 2]}, "c": {"d": [1, 2, 3]}}
    assert result["a"] is doc["a"]
    result = apply(doc, [{"op": "move", "from": "/a/b", "path": "/c/b"}])
    assert result == {"a": {}, "c": {"b": [1, 2]}}
    assert apply(doc, [{"op": "move", "from": "/a", "path": "/a"}]) == doc
    with pytest.raises(InvalidPatchError, match="prefix"):
        apply_json_patch(doc, [{"op": "move", "from": "/a", "path": "/a/b/x"}])
    with pytest.raises(
        InvalidPatchError, match="move operation does not apply: doc is missing from path: /zz"
    ):
        apply_json_patch(doc, [{"op": "move", "from": "/zz", "path": "/c/x"}])
    with pytest.raises(
        InvalidPatchError, match="copy operation does not apply: doc is missing from path: /zz"
    ):
        apply_json_patch(doc, [{"op": "copy", "from": "/zz", "path": "/c/x"}])
    with pytest.raises(
        InvalidPatchError, match="copy operation does not apply: doc is missing destination path"
    ):
        apply_json_patch(doc, [{"op": "copy", "from": "/a", "path": "/q/x"}])


def test_whole_document_ops() -> None:
    assert apply({"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}]) == {"b": 2}
    assert apply({"a": 1}, [{"op": "add", "path": "", "value": [1]}]) == [1]
    apply({"a": 1}, [{"op": "test", "path": "", "value": {"a": 1}}])


def test_malformed_patches() -> None:
    with pytest.raises(InvalidPatchError) as exc:
        apply_json_patch({}, {"op": "add"})
    assert exc.value.http_status == 400
    assert str(exc.value) == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    with pytest.raises(InvalidPatchError) as exc:
        apply_json_patch({}, ["add"])
    assert exc.value.http_status == 400
    with pytest.raises(InvalidPatchError, match="Unexpected kind: frobnicate"):
        apply_json_patch({}, [{"op": "frobnicate", "path": "/a"}])
    with pytest.raises(InvalidPatchError, match="Unexpected kind: unknown"):
        apply_json_patch({}, [{"path": "/a"}])
    with pytest.raises(InvalidPatchError, match="operation missing path field"):
        apply_json_patch({}, [{"op": "add", "value": 1}])
    with pytest.raises(InvalidPatchError, match="missing value field"):
        apply_json_patch({}, [{"op": "add", "path": "/a"}])
    with pytest.raises(InvalidPatchError, match="missing value field"):
        apply_json_patch({"a": 1}, [{"op": "test", "path": "/a"}])


def test_failed_patch_leaves_no_trace() -> None:
    doc = {"a": {"b": 1}}
    with pytest.raises(PatchError):
        apply_json_patch(
            doc, [{"op": "replace", "path": "/a/b", "value": 2}, {"op": "remove", "path": "/nope"}]
        )
    assert doc == {"a": {"b": 1}}


def test_inserted_values_do_not_alias_patch() -> None:
    value = {"x": [1]}
    patch = [{"op": "add", "path": "/v", "value": value}]
    result = apply_json_patch({}, patch)
    assert result["v"] == value and result["v"] is not value and result["v"]["x"] is not value["x"]


# --- property: agree with the `jsonpatch` package on random documents and operations ------------

KEYS = st.sampled_from(["a", "b", "c", "a/b", "m~n", ""])
# Booleans are left out: the jsonpatch package compares with Python's ==
# (True == 1), RFC 6902 does not.
SCALARS = st.one_of(st.none(), st.integers(-3, 3), st.text(alphabet="xy", max_size=2))
DOCS = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


def pointers(doc: Any, prefix: str = "") -> list[str]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += pointers(v, prefix + "/" + k.replace("~", "~0").replace("/", "~1"))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += pointers(v, f"{prefix}/{i}")
    return out


@st.composite
def doc_and_ops(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    doc = draw(st.dictionaries(KEYS, DOCS, max_size=4))
    existing = pointers(doc)
    some_path = st.one_of(
        st.sampled_from(existing),
        st.sampled_from(existing).map(
            lambda p: p + "/" + draw(st.sampled_from(["a", "0", "1", "zz"]))
        ),
        st.sampled_from(["/zz", "/a/zz/q", "/0"]),
    )
    ops: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]))
        path = draw(some_path)
        op: dict[str, Any] = {"op": kind, "path": path}
        if kind == "add" and draw(st.booleans()) and path:
            op["path"] = path.rsplit("/", 1)[0] + "/-"
        if kind in ("add", "replace", "test"):
            if kind == "test" and draw(st.booleans()):
                try:
                    op["value"] = copy.deepcopy(jsonpointer.resolve_pointer(doc, path))
                except jsonpointer.JsonPointerException:
                    op["value"] = draw(DOCS)
            else:
                op["value"] = draw(DOCS)
        if kind in ("move", "copy"):
            op["from"] = draw(some_path)
        ops.append(op)
    return doc, ops


@settings(
    max_examples=600, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(doc_and_ops())
def test_property_agrees_with_jsonpatch_package(case: tuple[Any, list[dict[str, Any]]]) -> None:
    doc, ops = case
    before_d = copy.deepcopy(doc)
    before_o = copy.deepcopy(ops)
    try:
        expected = jsonpatch.apply_patch(copy.deepcopy(doc), copy.deepcopy(ops))
        expected_error: Exception | None = None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as e:
        expected_error = e
    try:
        got = apply_json_patch(doc, ops)
        got_error: Exception | None = None
    except PatchError as e:
        got_error = e
    assert doc == before_d and ops == before_o
    if expected_error is None:
        assert got_error is None, f"jsonpatch succeeded, we failed: {got_error}"
        assert got == expected
    else:
        assert got_error is not None, f"jsonpatch failed ({expected_error!r}), we returned {got!r}"
