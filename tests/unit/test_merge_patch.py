"""RFC 7386 JSON merge patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.api.patch import InvalidPatchError, apply_merge_patch

# RFC 7386 Appendix A, minus the cases whose patch is not an object (see below).
RFC_EXAMPLES: list[tuple[Any, dict[str, Any], Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC_EXAMPLES)
def test_rfc7386_examples(target: Any, patch: dict[str, Any], expected: Any) -> None:
    assert apply_merge_patch(target, patch) == expected


@pytest.mark.parametrize("patch", [["c", "d"], None, "bar", 1, True])
def test_non_object_patch_rejected(patch: Any) -> None:
    # The RFC lets these replace the whole document; kube-apiserver objects
    # must stay objects, so they are refused with 400.
    with pytest.raises(InvalidPatchError) as exc:
        apply_merge_patch({"a": "b"}, patch)
    assert exc.value.http_status == 400
    assert str(exc.value) == "Invalid JSON Patch"


def test_lists_replace_wholesale_keeping_inner_nulls() -> None:
    result = apply_merge_patch({"a": [1, 2, 3]}, {"a": [{"x": None}, None]})
    assert result == {"a": [{"x": None}, None]}


def test_untouched_subtrees_shared_and_patch_not_aliased() -> None:
    original: dict[str, Any] = {
        "metadata": {"labels": {"a": "1"}},
        "spec": {"x": [1], "y": {"z": 1}},
    }
    patch: dict[str, Any] = {"spec": {"x": [2], "w": {"v": [3]}}}
    result = apply_merge_patch(original, patch)
    assert result == {
        "metadata": {"labels": {"a": "1"}},
        "spec": {"x": [2], "y": {"z": 1}, "w": {"v": [3]}},
    }
    assert result["metadata"] is original["metadata"]
    assert result["spec"]["y"] is original["spec"]["y"]
    assert result["spec"] is not original["spec"]
    assert result["spec"]["x"] is not patch["spec"]["x"]
    assert result["spec"]["w"] is not patch["spec"]["w"]
    assert result["spec"]["w"]["v"] is not patch["spec"]["w"]["v"]


def test_kubernetes_style_label_patch() -> None:
    obj = {"metadata": {"name": "x", "labels": {"app": "a", "tier": "b"}}, "spec": {"replicas": 1}}
    result = apply_merge_patch(
        obj, {"metadata": {"labels": {"tier": None, "v": "2"}}, "spec": {"replicas": 3}}
    )
    assert result == {
        "metadata": {"name": "x", "labels": {"app": "a", "v": "2"}},
        "spec": {"replicas": 3},
    }


def reference_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 section 2 pseudo-code, transcribed independently (mutates a deep copy)."""
    if isinstance(patch, dict):
        target = copy.deepcopy(target) if isinstance(target, dict) else {}
        for name, value in patch.items():
            if value is None:
                if name in target:
                    del target[name]
            else:
                target[name] = reference_merge_patch(target.get(name), value)
        return target
    return copy.deepcopy(patch)


KEYS = st.sampled_from(["a", "b", "c", "d", "e"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.text(alphabet="xy", max_size=2)
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=15,
)


@settings(max_examples=500)
@given(JSON, st.dictionaries(KEYS, JSON, max_size=5))
def test_property_matches_rfc_reference(target: Any, patch: dict[str, Any]) -> None:
    before_t = copy.deepcopy(target)
    before_p = copy.deepcopy(patch)
    assert apply_merge_patch(target, patch) == reference_merge_patch(target, patch)
    assert target == before_t
    assert patch == before_p


@settings(max_examples=200)
@given(st.dictionaries(KEYS, JSON, max_size=5), st.dictionaries(KEYS, JSON, max_size=5))
def test_property_idempotent(target: dict[str, Any], patch: dict[str, Any]) -> None:
    once = apply_merge_patch(target, patch)
    assert apply_merge_patch(once, patch) == once
