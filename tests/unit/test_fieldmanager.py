"""Unit tests of pykcm.apiserver.fieldmanager: path sets, fieldsV1, typed field sets, the
apply merge and ownership rules, conflicts, managedFields entries, manager names.

The differential proof against kube-apiserver is tests/differential/fieldmanager.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.api.resources import builtin_registry
from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.fieldmanager import FieldManager, fields_v1
from pykcm.apiserver.fieldmanager import path as fp
from pykcm.apiserver.fieldmanager.apply_options import check_applied_name, validate_patch_options
from pykcm.apiserver.fieldmanager.factory import field_manager_for
from pykcm.apiserver.fieldmanager.manager_name import manager_or_user_agent
from pykcm.apiserver.fieldmanager.path_set import PathSet, debug
from pykcm.apiserver.fieldmanager.reset_fields import reset_fields
from pykcm.apiserver.fieldmanager.scale_handler import to_parent, to_subresource
from pykcm.apiserver.fieldmanager.schema import for_builtin, for_crd
from pykcm.apiserver.fieldmanager.to_field_set import to_field_set

T = "2026-12-02T03:00:00Z"


def _cm_manager() -> FieldManager:
    s = for_builtin("", "v1", "ConfigMap")
    assert s is not None
    return FieldManager(s, "", "v1", "ConfigMap", now=lambda: T)


def _deploy_manager() -> FieldManager:
    s = for_builtin("apps", "v1", "Deployment")
    assert s is not None
    return FieldManager(s, "apps", "v1", "Deployment",
                        reset_fields=reset_fields("apps", "deployments"), now=lambda: T)


def _cm(data: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta},
            "data": data}


# --- path elements and sets ------------------------------------------------------------------

def test_path_elements_print_and_encode_as_smd() -> None:
    k = fp.key({"protocol": "TCP", "containerPort": 80})
    assert fp.element_key(k) == 'k:{"containerPort":80,"protocol":"TCP"}'
    assert fp.element_string(k) == '[containerPort=80,protocol="TCP"]'
    assert fp.element_key(fp.value("a<b")) == 'v:"a\\u003cb"'
    assert fp.path_string((fp.field("spec"), fp.index(2))) == ".spec[2]"
    assert fp.element_string(fp.value(True)) == "[=true]"
    # True and 1 are different set items
    assert fp.value(True) != fp.value(1)


def test_element_order_is_fields_keys_values_indices() -> None:
    pes = [fp.index(0), fp.value("b"), fp.value(1), fp.key({"name": "a"}), fp.field("z"),
           fp.field("a")]
    assert fp.sorted_elements(pes) == [fp.field("a"), fp.field("z"), fp.key({"name": "a"}),
                                       fp.value(1), fp.value("b"), fp.index(0)]


def test_fields_v1_dot_marks_a_member_that_has_children() -> None:
    s = PathSet.of([fp.field("metadata"), fp.field("labels")],
                   [fp.field("metadata"), fp.field("labels"), fp.field("app")])
    assert fields_v1.encode(s) == b'{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}'
    assert fields_v1.decode(fields_v1.encode(s)) == s


def test_recursive_difference_drops_everything_under_a_member() -> None:
    s = PathSet.of([fp.field("status"), fp.field("replicas")], [fp.field("spec")])
    out = s.recursive_difference(PathSet.of([fp.field("status")]))
    assert debug(out) == [".spec"]
    # a plain difference keeps the children of a removed member
    assert debug(s.difference(PathSet.of([fp.field("status")]))) == [".spec", ".status.replicas"]


_scalars = st.one_of(st.integers(-5, 5), st.text("ab<&\"", max_size=3), st.booleans())
_elements = st.one_of(
    st.text("abf:.", min_size=1, max_size=3).map(fp.field),
    st.dictionaries(st.sampled_from(["name", "port"]), _scalars, min_size=1).map(fp.key),
    _scalars.map(fp.value),
    st.integers(0, 3).map(fp.index))
_sets = st.lists(st.lists(_elements, min_size=1, max_size=3), max_size=8).map(
    lambda paths: PathSet.of(*paths))


@settings(max_examples=200, deadline=None)
@given(_sets)
def test_fields_v1_round_trips(s: PathSet) -> None:
    raw = fields_v1.encode(s)
    assert fields_v1.decode(raw) == s
    assert fields_v1.encode(fields_v1.decode(raw)) == raw
    assert json.loads(raw) == fields_v1.to_json(s)


@settings(max_examples=200, deadline=None)
@given(_sets, _sets, _sets)
def test_path_set_algebra(a: PathSet, b: PathSet, c: PathSet) -> None:
    def paths(s: PathSet) -> set[fp.Path]:
        return set(s.paths())

    assert paths(a.union(b)) == paths(a) | paths(b)
    assert paths(a.intersection(b)) == paths(a) & paths(b)
    assert paths(a.difference(b)) == paths(a) - paths(b)
    assert a.union(b) == b.union(a)
    assert a.union(b).union(c) == a.union(b.union(c))
    assert a.difference(a).empty()
    # recursive difference also drops what lies under a member of the other set
    for p in a.recursive_difference(b).paths():
        assert not any(p[:i] in paths(b) for i in range(1, len(p) + 1))


# --- schema and typed field sets ---------------------------------------------------------------

def test_field_set_of_a_deployment_follows_the_list_and_map_types() -> None:
    s = for_builtin("apps", "v1", "Deployment")
    assert s is not None
    obj = {"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
           "spec": {"selector": {"matchLabels": {"app": "w"}},
                    "template": {"spec": {"containers": [
                        {"name": "c", "ports": [{"containerPort": 80}], "args": ["-v"]}]}}}}
    assert debug(to_field_set(s, obj)) == [
        '.metadata.finalizers[="x"]', ".metadata.labels.a", ".spec.selector",
        '.spec.template.spec.containers[name="c"]',
        '.spec.template.spec.containers[name="c"].args',
        '.spec.template.spec.containers[name="c"].name',
        '.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"]',
        ('.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"]'
         '.containerPort')]


def test_crd_schema_lists_and_preserved_fields() -> None:
    s = for_crd({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}})
    obj = {"spec": {"tags": ["b", "a"], "args": ["x"], "free": {"k": {"n": 1}}}}
    assert debug(to_field_set(s, obj)) == [
        ".spec.args", ".spec.free.k", ".spec.free.k.n", '.spec.tags[="a"]', '.spec.tags[="b"]']


# --- apply --------------------------------------------------------------------------------------

def test_create_on_apply_owns_exactly_the_configuration() -> None:
    out = _cm_manager().apply(None, _cm({"a": "1"}, labels={"l": "x"}), "alpha")
    assert out["data"] == {"a": "1"}
    assert out["metadata"]["managedFields"] == [{
        "manager": "alpha", "operation": "Apply", "apiVersion": "v1", "time": T,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:l": {}}}}}]


def test_conflict_names_each_field_and_manager_and_force_takes_them() -> None:
    fm = _cm_manager()
    live = fm.apply(None, _cm({"a": "1", "b": "1"}), "alpha")
    with pytest.raises(StatusError) as e:
        fm.apply(live, _cm({"a": "2", "b": "2"}), "beta")
    assert e.value.code == 409
    assert e.value.message == ('Apply failed with 2 conflicts: conflicts with "alpha":\n'
                               "- .data.a\n- .data.b")
    assert e.value.details == {"causes": [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alpha"', "field": ".data.a"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "alpha"', "field": ".data.b"}]}
    forced = fm.apply(live, _cm({"a": "2"}), "beta", force=True)
    owners = {e["manager"]: e["fieldsV1"] for e in forced["metadata"]["managedFields"]}
    assert owners == {"alpha": {"f:data": {"f:b": {}}}, "beta": {"f:data": {"f:a": {}}}}


def test_same_value_is_shared_and_removal_waits_for_the_last_owner() -> None:
    fm = _cm_manager()
    live = fm.apply(None, _cm({"a": "1", "b": "1"}), "alpha")
    live = fm.apply(live, _cm({"a": "1"}), "beta")          # same value: no conflict
    live = fm.apply(live, _cm({}), "alpha")                  # alpha stops applying a and b
    assert live["data"] == {"a": "1"}                        # b removed, a still beta's
    owners = {e["manager"]: e["fieldsV1"] for e in live["metadata"]["managedFields"]}
    # an empty map applied is owned as a leaf
    assert owners == {"alpha": {"f:data": {}}, "beta": {"f:data": {"f:a": {}}}}


def test_update_after_apply_conflicts_with_the_update_manager() -> None:
    fm = _cm_manager()
    live = fm.apply(None, _cm({"a": "1"}), "alpha")
    edited = json.loads(json.dumps(live))
    edited["data"]["a"] = "edited"
    live = fm.update(live, edited, "kubectl-edit")
    with pytest.raises(StatusError) as e:
        fm.apply(live, _cm({"a": "1"}), "alpha")
    assert e.value.message == ('Apply failed with 1 conflict: conflict with "kubectl-edit" using '
                               "v1: .data.a")


def test_status_is_never_owned_through_the_main_resource() -> None:
    fm = _deploy_manager()
    out = fm.apply(None, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                          "spec": {"replicas": 2}, "status": {"replicas": 5}}, "alpha")
    assert out["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


def test_wrong_kind_and_managed_fields_in_the_configuration_are_bad_requests() -> None:
    fm = _cm_manager()
    with pytest.raises(StatusError) as e:
        fm.apply(None, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}, "a")
    assert (e.value.code, e.value.message) == (400, "invalid object type: /v1, Kind=Secret")
    with pytest.raises(StatusError) as e:
        fm.apply(None, _cm({}, managedFields=[]), "a")
    assert e.value.message == "metadata.managedFields must be nil"


def test_update_managers_are_capped_at_ten() -> None:
    fm = _cm_manager()
    live = fm.update(None, _cm({"base": "1"}), "creator")
    for i in range(11):
        new = json.loads(json.dumps(live))
        new["data"][f"k{i}"] = "v"
        live = fm.update(live, new, f"m{i:02d}")
    managers = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert len(managers) == 10 and "ancient-changes" in managers


def test_managed_fields_reset_by_an_empty_list() -> None:
    fm = _cm_manager()
    live = fm.update(None, _cm({"a": "1"}), "creator")
    live["metadata"]["uid"] = "u"
    new = json.loads(json.dumps(live))
    new["metadata"]["managedFields"] = []
    out = fm.update(live, new, "resetter")
    assert "managedFields" not in out["metadata"]
    # an untracked object stays untracked on update; the first apply records the rest
    out2 = fm.apply(out, _cm({"b": "2"}), "applier")
    assert [e["manager"] for e in out2["metadata"]["managedFields"]] == [
        "applier", "before-first-apply"]


_DATA = st.dictionaries(st.sampled_from("abcd"), st.sampled_from(["1", "2"]), max_size=4)


@settings(max_examples=100, deadline=None)
@given(_DATA, _DATA, st.sampled_from(["alpha", "beta"]))
def test_apply_is_idempotent(first: dict[str, str], second: dict[str, str], who: str) -> None:
    fm = _cm_manager()
    live = fm.apply(None, _cm(first), "alpha")
    once = fm.apply(live, _cm(second), who, force=True)
    twice = fm.apply(once, _cm(second), who, force=True)
    assert twice == once
    assert fm.apply(once, _cm(second), who) == once       # and without force: no conflict


def test_manager_name_from_the_user_agent() -> None:
    assert manager_or_user_agent("", "kubectl/v1.36.2 (linux/amd64) kubernetes/abc") == "kubectl"
    assert manager_or_user_agent("mine", "kubectl/v1.36.2") == "mine"
    assert manager_or_user_agent(None, "x" * 200) == "x" * 128
    assert manager_or_user_agent("", "a\x00b/1") == "ab"


# --- /scale and request options -----------------------------------------------------------------

def _entry(manager: str, op: str, api_version: str, fields: dict[str, Any],
           sub: str = "") -> dict[str, Any]:
    e: dict[str, Any] = {"manager": manager, "operation": op, "apiVersion": api_version,
                         "time": T, "fieldsType": "FieldsV1", "fieldsV1": fields}
    if sub:
        e["subresource"] = sub
    return e


def test_scale_view_and_back_to_the_parent() -> None:
    replicas: dict[str, Any] = {"f:spec": {"f:replicas": {}}}
    parent = [_entry("deployer", "Apply", "apps/v1",
                     {"f:spec": {"f:replicas": {}, "f:selector": {}}}),
              _entry("labeler", "Update", "apps/v1", {"f:metadata": {"f:labels": {}}})]
    view = to_subresource(parent)
    assert view == [_entry("deployer", "Apply", "autoscaling/v1", replicas)]
    # hpa takes the replicas through /scale (forced): the deployer keeps the rest
    scale = [_entry("hpa", "Apply", "autoscaling/v1", replicas, "scale")]
    back = to_parent(parent, scale, "apps/v1")
    assert back is not None
    by = {e["manager"]: e for e in back}
    assert by["deployer"]["fieldsV1"] == {"f:spec": {"f:selector": {}}}
    assert by["labeler"] == parent[1]
    assert by["hpa"]["fieldsV1"] == replicas and by["hpa"]["apiVersion"] == "apps/v1"
    assert "time" not in by["hpa"]       # the parent's time for a new manager: none


def test_refused_patch_options() -> None:
    with pytest.raises(StatusError) as e:
        validate_patch_options(True, "", False)
    assert e.value.code == 422 and e.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
        "for apply patch")
    with pytest.raises(StatusError) as e:
        validate_patch_options(False, "m", True)
    assert e.value.message.endswith("force: Forbidden: may not be specified for non-apply patch")
    validate_patch_options(True, "m", True)
    with pytest.raises(StatusError) as e:
        check_applied_name({"metadata": {"name": "a"}}, "b")
    assert (e.value.code, e.value.message) == (
        400, "the name of the object (a) does not match the name on the URL (b)")
    check_applied_name({"metadata": {}}, "b")


def test_field_manager_for_served_endpoints() -> None:
    reg = builtin_registry()
    deploy = next(r for r in reg.all() if r.kind == "Deployment" and r.group == "apps")
    main = field_manager_for(deploy)
    status = field_manager_for(deploy, "status")
    assert main is not None and status is not None
    assert main is field_manager_for(deploy)      # one per endpoint
    out = status.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "d", "uid": "u"}},
                       {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                        "spec": {"replicas": 1}, "status": {"replicas": 1}}, "ctrl")
    assert [(e["manager"], e.get("subresource"), e["fieldsV1"])
            for e in out["metadata"]["managedFields"]] == [
        ("ctrl", "status", {"f:status": {"f:replicas": {}}})]
    scale = field_manager_for(deploy, "scale")
    assert scale is not None and scale.kind == "Scale"
