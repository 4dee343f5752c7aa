"""The registry's strategy mechanism: registration and lookup by (group, kind), and the
base Strategy's generic rules (system metadata, status/spec split, generation)."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.api.resources import BUILTIN_RESOURCES, ResourceInfo
from pykcm.apiserver.registry.lookup import register, strategy_class, strategy_for
from pykcm.apiserver.registry.printers import DEFAULT_PRINTER
from pykcm.apiserver.registry.strategy import Strategy

WIDGETS = ResourceInfo(group="example.com", version="v1", kind="Widget", plural="widgets",
                       singular="widget", namespaced=True, subresources=("status",),
                       track_generation=True, status_subresource=True)


def test_every_stored_builtin_kind_has_its_own_strategy() -> None:
    missing = [(r.group, r.kind) for r in BUILTIN_RESOURCES
               if r.stored and strategy_class(r.group, r.kind) is Strategy]
    assert missing == []


def test_a_kind_without_a_module_gets_the_default_strategy() -> None:
    st = strategy_for(WIDGETS)
    assert type(st) is Strategy and st.info is WIDGETS
    assert st.printer is DEFAULT_PRINTER
    assert strategy_for(WIDGETS) is st  # one per resource


def test_two_strategies_for_one_kind_are_refused() -> None:
    pod_strategy = strategy_class("", "Pod")  # loads the registered ones first

    class Again(Strategy):
        kind = "Pod"

    with pytest.raises(TypeError, match="two strategies"):
        register(Again)
    assert strategy_class("", "Pod") is pod_strategy


def test_default_create_resets_system_metadata_and_drops_the_status() -> None:
    obj = {"metadata": {"name": "w", "resourceVersion": "7", "generation": 9,
                        "deletionTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"a": 1}, "status": {"ready": True}}
    strategy_for(WIDGETS).prepare_for_create(obj)
    assert obj == {"metadata": {"name": "w", "generation": 1}, "spec": {"a": 1}}


def test_default_update_keeps_status_and_system_fields_and_moves_generation() -> None:
    st = strategy_for(WIDGETS)
    old = {"metadata": {"name": "w", "uid": "u1", "generation": 3,
                        "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"a": 1}, "status": {"ready": True}}
    new = {"metadata": {"name": "w", "uid": "other", "generation": 10}, "spec": {"a": 2},
           "status": {"ready": False}}
    st.prepare_for_update(new, old)
    assert new == {"metadata": {"name": "w", "uid": "u1", "generation": 4,
                                "creationTimestamp": "2026-01-01T00:00:00Z"},
                   "spec": {"a": 2}, "status": {"ready": True}}
    same: dict[str, Any] = {"metadata": {"name": "w"}, "spec": {"a": 1}}
    st.prepare_for_update(same, old)
    assert same["metadata"]["generation"] == 3


def test_default_status_update_takes_only_the_status() -> None:
    st = strategy_for(WIDGETS)
    old = {"metadata": {"name": "w", "generation": 3, "labels": {"x": "1"}},
           "spec": {"a": 1}, "status": {"ready": True}}
    new = {"metadata": {"name": "w", "generation": 8, "labels": {"x": "2"}},
           "spec": {"a": 2}, "status": {"ready": False}}
    stored = st.prepare_for_status_update(new, old)
    # the spec and the generation stay; built-in status strategies let labels through
    assert stored == {"metadata": {"name": "w", "generation": 3, "labels": {"x": "2"}},
                      "spec": {"a": 1}, "status": {"ready": False}}
    assert old["spec"] == {"a": 1} and old["status"] == {"ready": True}


def test_default_validation_is_the_object_metadata() -> None:
    causes = strategy_for(WIDGETS).validate_create({"metadata": {"name": "Bad"}})
    assert [(c.field, c.type) for c in causes] == [
        ("metadata.name", "FieldValueInvalid"), ("metadata.namespace", "FieldValueRequired")]
    assert strategy_for(WIDGETS).grace_period({}, None) is None
