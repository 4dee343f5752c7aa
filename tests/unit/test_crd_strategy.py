"""CustomResourceDefinition defaulting, validation and status, with upstream's
field paths and messages."""

from __future__ import annotations

import copy
from typing import Any

from pykcm.api.validation import format_invalid_message
from pykcm.apiserver.crd.definitions import (
    compiled_schemas,
    crd_status_on_accept,
    default_crd,
    names_conflict,
    names_conflict_reason,
    storage_version,
    validate_crd_create,
    validate_crd_update,
    version_schema,
)

Obj = dict[str, Any]

SCHEMA: Obj = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "color": {"type": "string"}, "replicas": {"type": "integer"},
        "on": {"type": "boolean"}, "obj": {"type": "object"}}},
    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}


def crd(plural: str = "widgets", kind: str = "Widget", group: str = "example.com",
        **spec: Any) -> Obj:
    base: Obj = {
        "group": group, "scope": "Namespaced",
        "names": {"plural": plural, "kind": kind},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)}}]}
    base.update(spec)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"}, "spec": base}


def _create(obj: Obj) -> list[str]:
    default_crd(obj)
    return [c.error() for c in validate_crd_create(obj)]


def _update(new: Obj, old: Obj) -> list[str]:
    default_crd(new)
    return [c.error() for c in validate_crd_update(new, old)]


def _accepted(obj: Obj) -> Obj:
    default_crd(obj)
    obj["status"] = crd_status_on_accept(obj, previous_status={}, now="2024-01-01T00:00:00Z")
    return obj


# --- defaulting ------------------------------------------------------------------------


def test_defaults() -> None:
    obj = crd(versions=[{"name": "v1", "storage": True}, {"name": "v2"}])
    obj["status"] = {}
    default_crd(obj)
    spec = obj["spec"]
    assert spec["names"] == {"plural": "widgets", "kind": "Widget", "singular": "widget",
                             "listKind": "WidgetList"}
    assert spec["conversion"] == {"strategy": "None"}
    assert spec["versions"] == [{"name": "v1", "storage": True, "served": False},
                                {"name": "v2", "served": False, "storage": False}]
    assert spec["scope"] == "Namespaced"
    assert obj["status"]["storedVersions"] == ["v1"]


def test_defaults_keep_given_names_and_webhook_port() -> None:
    obj = crd(conversion={"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "s", "namespace": "n"}},
        "conversionReviewVersions": ["v1"]}})
    obj["spec"]["names"].update(singular="wid", listKind="Widgets")
    default_crd(obj)
    assert obj["spec"]["names"]["singular"] == "wid"
    assert obj["spec"]["names"]["listKind"] == "Widgets"
    assert obj["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443


def test_no_scope_default_in_v1() -> None:
    obj = crd()
    del obj["spec"]["scope"]
    assert _create(obj) == ["spec.scope: Required value"]


# --- create validation ---------------------------------------------------------------------


def test_valid_crd() -> None:
    assert _create(crd()) == []


def test_name_must_be_plural_dot_group() -> None:
    obj = crd()
    obj["metadata"]["name"] = "widget.example.com"
    errs = _create(obj)
    assert errs == [('metadata.name: Invalid value: "widget.example.com": must be '
                    'spec.names.plural+"."+spec.group')]
    msg = format_invalid_message("CustomResourceDefinition", "widget.example.com",
                                 validate_crd_create(obj), group="apiextensions.k8s.io")
    assert msg.startswith('CustomResourceDefinition.apiextensions.k8s.io "widget.example.com" '
                          "is invalid: metadata.name")


def test_group_needs_a_dot() -> None:
    obj = crd(group="example")
    assert _create(obj) == [('spec.group: Invalid value: "example": should be a domain with at '
                            "least one dot")]
    obj = crd(group="Example.com")
    assert _create(obj)[1].startswith('spec.group: Invalid value: "Example.com": a lowercase '
                                      "RFC 1123 subdomain")


def test_scope_values() -> None:
    assert _create(crd(scope="Global")) == [
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"']


def test_exactly_one_storage_version() -> None:
    obj = crd()
    obj["spec"]["versions"].append({"name": "v2", "served": True, "storage": True,
                                    "schema": {"openAPIV3Schema": SCHEMA}})
    errs = _create(obj)
    assert len(errs) == 2
    # the internal versions' JSON (Go field names), as v1.36 renders the value
    assert errs[0].startswith('spec.versions: Invalid value: [{"Name":"v1"')
    assert errs[0].endswith(": must have exactly one version marked as storage version")
    # PrepareForCreate records only the first storage version, as upstream.
    assert errs[1].startswith('status.storedVersions: Invalid value: {"name":"v2"')
    assert errs[1].endswith(": must have the storage version v2")
    obj = crd()
    obj["spec"]["versions"][0]["storage"] = False
    assert [e.split(": ", 1)[0] + ": " + e.rsplit(": ", 1)[1] for e in _create(obj)] == [
        "spec.versions: must have exactly one version marked as storage version",
        "status.storedVersions: must have at least one stored version"]


def test_version_names() -> None:
    obj = crd()
    v1 = obj["spec"]["versions"][0]
    obj["spec"]["versions"] = [v1, {**copy.deepcopy(v1), "storage": False},
                               {**copy.deepcopy(v1), "name": "V3", "storage": False}]
    errs = _create(obj)
    assert errs[0].startswith('spec.versions[2].name: Invalid value: "V3": a DNS-1035 label')
    assert errs[1].endswith(": must contain unique version names")


def test_names() -> None:
    obj = crd(plural="Widgets", kind="widget")
    obj["spec"]["names"].update(listKind="widget", shortNames=["w_1"])
    obj["metadata"]["name"] = "Widgets.example.com"
    errs = [e for e in _create(obj) if e.startswith("spec.names")]
    assert errs[0].startswith('spec.names.plural: Invalid value: "Widgets": a DNS-1035 label')
    assert errs[1].startswith('spec.names.shortNames[0]: Invalid value: "w_1"')
    assert errs[2] == ('spec.names.listKind: Invalid value: "widget": kind and listKind may '
                       "not be the same")
    obj = crd()
    obj["spec"]["names"] = {}
    assert [e for e in _create(obj) if e.startswith("spec.names")] == [
        "spec.names.plural: Required value", "spec.names.singular: Required value",
        "spec.names.kind: Required value", "spec.names.listKind: Required value"]


def test_mixed_case_kind_is_fine() -> None:
    assert _create(crd(kind="MyWidget")) == []
    errs = _create(crd(kind="My_Widget"))
    # The singular is defaulted from the kind, so it is reported too.
    assert errs[0].startswith('spec.names.singular: Invalid value: "my_widget": ')
    assert errs[1].startswith('spec.names.kind: Invalid value: "My_Widget": may have mixed '
                              "case, but should otherwise match: ")


def test_schema_required() -> None:
    obj = crd()
    del obj["spec"]["versions"][0]["schema"]
    assert _create(obj) == ["spec.versions[0].schema.openAPIV3Schema: Required value"]


def test_schema_errors_hoisted_when_identical() -> None:
    bad = {"type": "object", "properties": {"spec": {"properties": {}}}}
    obj = crd()
    obj["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": bad}
    assert _create(obj) == [
        ("spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be "
        "empty for specified object fields")]
    obj = crd()
    obj["spec"]["versions"].append({"name": "v2", "served": True, "storage": False,
                                    "schema": {"openAPIV3Schema": bad}})
    assert _create(obj) == [
        ("spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must "
        "not be empty for specified object fields")]


def test_subresources() -> None:
    obj = crd()
    obj["spec"]["versions"][0]["subresources"] = {"status": {}, "scale": {
        "specReplicasPath": ".replicas", "statusReplicasPath": "status.replicas",
        "labelSelectorPath": ".metadata.labels"}}
    assert _create(obj) == [
        ('spec.subresources.scale.specReplicasPath: Invalid value: ".replicas": should be a json '
        "path under .spec"),
        ('spec.subresources.scale.statusReplicasPath: Invalid value: "status.replicas": must be '
        "a simple json path starting with ."),
        ('spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.labels": should '
        "be a json path under either .spec or .status")]
    obj["spec"]["versions"][0]["subresources"]["scale"] = {}
    assert _create(obj) == ["spec.subresources.scale.specReplicasPath: Required value",
                            "spec.subresources.scale.statusReplicasPath: Required value"]


def test_selectable_fields() -> None:
    obj = crd()
    obj["spec"]["versions"][0]["selectableFields"] = [
        {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.replicas"}, {"jsonPath": ".spec.on"},
        {"jsonPath": ".spec.obj"}, {"jsonPath": ".spec.nope"}, {"jsonPath": "spec.color"},
        {"jsonPath": ".spec.color"}, {"jsonPath": ".metadata.name"}, {}]
    assert _create(obj) == [
        ('spec.selectableFields[3].jsonPath: Invalid value: ".spec.obj": must point to a field '
        "of type string, boolean or integer. Enum string fields and strings with formats are "
        "allowed."),
        ('spec.selectableFields[4].jsonPath: Invalid value: ".spec.nope": is an invalid path: '
        "does not refer to a valid field"),
        ('spec.selectableFields[5].jsonPath: Invalid value: "spec.color": is an invalid path: '
        "expected [ or . but got: spec"),
        'spec.selectableFields[6].jsonPath: Duplicate value: ".spec.color"',
        ('spec.selectableFields[7].jsonPath: Invalid value: ".metadata.name": is an invalid '
        "path: does not refer to a valid field"),
        "spec.selectableFields[8].jsonPath: Required value"]


def test_printer_columns() -> None:
    obj = crd()
    obj["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
        {"type": "colour", "format": "hex", "jsonPath": "spec.color"}]
    assert _create(obj) == [
        "spec.additionalPrinterColumns[1].name: Required value",
        ('spec.additionalPrinterColumns[1].type: Invalid value: "colour": must be one of '
        "boolean,date,integer,number,string"),
        ('spec.additionalPrinterColumns[1].format: Invalid value: "hex": must be one of '
        "byte,date,date-time,double,float,int32,int64,password"),
        ('spec.additionalPrinterColumns[1].JSONPath: Invalid value: "spec.color": must be a '
        "simple json path starting with .")]


def test_conversion() -> None:
    assert _create(crd(conversion={"strategy": "Webhook"})) == [
        ("spec.conversion.webhookClientConfig: Required value: required when strategy is set "
        "to Webhook"),
        "spec.conversion.conversionReviewVersions: Required value"]
    obj = crd(conversion={"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "http://example.com/convert?x=1"},
        "conversionReviewVersions": ["v2"]}})
    assert _create(obj) == [
        ('spec.conversion.webhookClientConfig.url: Invalid value: "http": \'https\' is the only '
        "allowed URL scheme"),
        ('spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query parameters are '
        "not permitted in the URL"),
        ('spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at least '
        "one of v1, v1beta1")]
    obj = crd(conversion={"strategy": "None", "webhook": {
        "clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}})
    assert _create(obj) == [
        ("spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not "
        "set to Webhook"),
        ("spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy "
        "is not set to Webhook")]
    assert _create(crd(conversion={"strategy": "Magic"})) == [
        ('spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", '
        '"Webhook"')]


# --- update validation ------------------------------------------------------------------------------


def test_update_immutable_group_and_plural() -> None:
    old = _accepted(crd())
    new = copy.deepcopy(old)
    new["spec"]["group"] = "other.com"
    new["spec"]["names"]["plural"] = "gadgets"
    assert _update(new, old) == [
        'spec.group: Invalid value: "other.com": field is immutable',
        'spec.names.plural: Invalid value: "gadgets": field is immutable']


def test_update_scope_and_kind_immutable_once_established() -> None:
    old = _accepted(crd())
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["spec"]["names"]["kind"] = "Gadget"
    new["spec"]["names"]["listKind"] = "GadgetList"
    new["spec"]["names"]["singular"] = "gadget"
    assert _update(new, old) == [
        'spec.scope: Invalid value: "Cluster": field is immutable',
        'spec.names.kind: Invalid value: "Gadget": field is immutable']
    not_established = copy.deepcopy(old)
    del not_established["status"]["conditions"]
    assert _update(copy.deepcopy(new), not_established) == []


def test_update_stored_versions_must_stay_in_spec() -> None:
    old = _accepted(crd())
    new = copy.deepcopy(old)
    new["spec"]["versions"][0]["name"] = "v2"
    assert _update(new, old) == [
        'status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions']
    new["spec"]["versions"].append({"name": "v1", "served": False, "storage": False,
                                    "schema": {"openAPIV3Schema": SCHEMA}})
    assert _update(new, old) == []


def test_update_preserve_unknown_fields() -> None:
    old = _accepted(crd())
    new = copy.deepcopy(old)
    new["spec"]["preserveUnknownFields"] = True
    assert _update(new, old) == [
        ("spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
        "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")]


# --- status ------------------------------------------------------------------------------------------------


def test_status_on_accept() -> None:
    obj = crd()
    obj["spec"]["names"]["shortNames"] = ["wd"]
    obj["spec"]["names"]["categories"] = ["all"]
    default_crd(obj)
    assert crd_status_on_accept(obj, previous_status={}, now="2024-01-01T00:00:00Z") == {
        "conditions": [
            {"type": "NamesAccepted", "status": "True",
             "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True",
             "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"}],
        "acceptedNames": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"],
                          "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]},
        "storedVersions": ["v1"]}


def test_status_keeps_transition_times_and_merges_stored_versions() -> None:
    obj = _accepted(crd())
    obj["status"]["conditions"].append({"type": "Terminating", "status": "False"})
    obj["spec"]["versions"] = [
        {"name": "v1", "served": True, "storage": False, "schema": {"openAPIV3Schema": SCHEMA}},
        {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}}]
    st = crd_status_on_accept(obj, now="2025-05-05T00:00:00Z")
    assert [c["lastTransitionTime"] for c in st["conditions"][:2]] == [
        "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"]
    assert st["conditions"][2] == {"type": "Terminating", "status": "False"}
    assert st["storedVersions"] == ["v1", "v2"]


def test_names_conflicts() -> None:
    widgets = _accepted(crd())
    same_plural = crd(plural="widgets", kind="Gizmo")
    same_plural["metadata"]["name"] = "widgets2.example.com"
    assert names_conflict_reason(same_plural, [widgets]) == (
        "PluralConflict", '"widgets" is already in use')
    plural_is_singular = crd(plural="widget", kind="Gizmo")
    assert names_conflict(plural_is_singular, [widgets]) == '"widget" is already in use'
    same_kind = crd(plural="gizmos", kind="Widget")
    assert names_conflict_reason(same_kind, [widgets]) == (
        "ListKindConflict", '"WidgetList" is already in use')
    short = crd(plural="gizmos", kind="Gizmo")
    short["spec"]["names"]["shortNames"] = ["widget", "gz"]
    assert names_conflict_reason(short, [widgets]) == (
        "ShortNamesConflict", '"widget" is already in use')
    assert names_conflict(crd(plural="gizmos", kind="Gizmo"), [widgets]) is None
    assert names_conflict(crd(group="other.com"), [widgets]) is None
    # The CRD itself never conflicts with its own names.
    assert names_conflict(copy.deepcopy(widgets), [widgets]) is None


def test_status_with_conflict() -> None:
    widgets = _accepted(crd())
    other = crd(plural="gizmos", kind="Widget")
    default_crd(other)
    st = crd_status_on_accept(other, other_crds=[widgets], previous_status={}, now="T")
    assert st["conditions"] == [
        {"type": "NamesAccepted", "status": "False", "lastTransitionTime": "T",
         "reason": "ListKindConflict", "message": '"WidgetList" is already in use'},
        {"type": "Established", "status": "False", "lastTransitionTime": "T",
         "reason": "NotAccepted", "message": "not all names are accepted"}]
    # "widget" (the defaulted singular) is taken too; only the plural is accepted.
    assert st["acceptedNames"] == {"plural": "gizmos", "kind": ""}
    # An established CRD stays established when a later rename conflicts.
    est = _accepted(crd(plural="gizmos", kind="Gizmo"))
    est["spec"]["names"]["kind"] = "Widget"
    est["spec"]["names"]["listKind"] = "WidgetList"
    st = crd_status_on_accept(est, other_crds=[widgets], now="T2")
    assert st["conditions"][0]["reason"] == "ListKindConflict"
    assert st["conditions"][1]["status"] == "True"
    assert st["acceptedNames"]["kind"] == "Gizmo"


def test_helpers() -> None:
    obj = crd()
    assert storage_version(obj) == "v1"
    assert version_schema(obj, "v1") == SCHEMA
    assert version_schema(obj, "v9") is None
    schemas = compiled_schemas(obj)
    assert list(schemas) == ["v1"]
    assert schemas["v1"].root.type == "object"
