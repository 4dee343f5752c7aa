"""pykcm/api/accessors.py: the metadata accessors every layer shares answer the part or
"" / an empty mapping, whatever shape a cached object or tombstone has."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.api.accessors import meta_of, name_of, namespace_of, spec_of, status_of, uid_of


@pytest.mark.parametrize("obj", [{}, {"metadata": None}, {"metadata": "x"}, {"spec": 3}])
def test_missing_or_malformed_parts(obj: dict[str, Any]) -> None:
    assert dict(meta_of(obj)) == {} and dict(spec_of(obj)) == {}
    assert (name_of(obj), namespace_of(obj), uid_of(obj)) == ("", "", "")
    assert dict(status_of(obj)) == {}


def test_present_parts_are_the_objects_own() -> None:
    meta = {"name": "a", "namespace": "ns", "uid": "u-1"}
    obj = {"metadata": meta, "spec": {"x": 1}}
    assert meta_of(obj) is meta and spec_of(obj) is obj["spec"]
    assert (name_of(obj), namespace_of(obj), uid_of(obj)) == ("a", "ns", "u-1")
