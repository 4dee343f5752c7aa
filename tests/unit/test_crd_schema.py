"""Structural schemas for custom resources: pruning, defaulting, validation,
CRD-side schema checks and selectable fields, with kube-apiserver's messages."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.apiserver.crd.schema import (
    apply_defaults,
    compile_schema,
    go_json,
    parse_field_path,
    prune,
    render_bad_value,
    selectable_field_values,
    validate,
    validate_structural,
)

Obj = dict[str, Any]


def _obj(spec: Any = None, **extra: Any) -> Obj:
    o: Obj = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "default"}}
    if spec is not None:
        o["spec"] = spec
    o.update(extra)
    return o


def _schema(spec_props: Obj, **spec_extra: Any) -> Obj:
    return {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec_props, **spec_extra},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}


def _errors(obj: Obj, schema: Obj) -> list[str]:
    return [c.error() for c in validate(obj, compile_schema(schema))]


# --- pruning --------------------------------------------------------------------------


def test_prune_unknown_fields_and_returns_paths() -> None:
    s = compile_schema(_schema({"a": {"type": "string"},
                                "items": {"type": "array", "items": {
                                    "type": "object", "properties": {"x": {"type": "integer"}}}}}))
    o = _obj({"a": "1", "b": 2, "items": [{"x": 1, "y": 2}, {"z": {"deep": 1}}]}, junk=True)
    pruned = prune(o, s)
    assert pruned == ["spec.b", "spec.items[0].y", "spec.items[1].z", "junk"]
    assert o == _obj({"a": "1", "items": [{"x": 1}, {}]})


def test_prune_keeps_root_type_and_object_meta_but_drops_unknown_metadata_keys() -> None:
    s = compile_schema({"type": "object", "properties": {"spec": {"type": "object"}}})
    o = _obj({}, )
    o["metadata"]["bogus"] = {"a": 1}
    o["metadata"]["labels"] = {"a": "b"}
    assert prune(o, s) == ["metadata.bogus"]
    assert o["apiVersion"] == "example.com/v1" and o["kind"] == "Widget"
    assert o["metadata"] == {"name": "w", "namespace": "default", "labels": {"a": "b"}}


def test_prune_empty_schema_removes_everything_but_meta() -> None:
    o = _obj({"a": 1}, status={"b": 2})
    assert sorted(prune(o, compile_schema(None))) == ["spec", "status"]
    assert set(o) == {"apiVersion", "kind", "metadata"}


def test_prune_preserve_unknown_fields_nested() -> None:
    s = compile_schema(_schema({"free": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}}}}))
    o = _obj({"free": {"anything": {"goes": [1, 2]}, "known": {"k": "v", "drop": 1}}})
    assert prune(o, s) == ["spec.free.known.drop"]
    assert o["spec"]["free"] == {"anything": {"goes": [1, 2]}, "known": {"k": "v"}}


def test_prune_preserve_unknown_fields_at_root() -> None:
    s = compile_schema({"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {"spec": {"type": "object", "properties": {
                            "a": {"type": "string"}}}}})
    o = _obj({"a": "x", "b": 1}, extra={"kept": True})
    assert prune(o, s) == ["spec.b"]
    assert o["extra"] == {"kept": True}


def test_prune_embedded_resource_keeps_type_meta_and_coerces_metadata() -> None:
    s = compile_schema(_schema({"template": {
        "type": "object", "x-kubernetes-embedded-resource": True,
        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}))
    o = _obj({"template": {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "p", "bogus": 1, "labels": {}},
                           "spec": {"a": "x", "b": "y"}, "other": 1}})
    pruned = prune(o, s)
    assert sorted(pruned) == ["spec.template.metadata.bogus", "spec.template.other",
                              "spec.template.spec.b"]
    assert o["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": "p"}, "spec": {"a": "x"}}


def test_prune_additional_properties_schema_and_true() -> None:
    s = compile_schema(_schema({
        "m": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"v": {"type": "string"}}}},
        "t": {"type": "object", "additionalProperties": True}}))
    o = _obj({"m": {"k1": {"v": "a", "w": "b"}}, "t": {"s": "x", "o": {"inner": 1}}})
    assert prune(o, s) == ["spec.m.k1.w", "spec.t.o.inner"]
    # additionalProperties: true keeps the keys; their object values have no schema (upstream).
    assert o["spec"] == {"m": {"k1": {"v": "a"}}, "t": {"s": "x", "o": {}}}


def test_prune_drops_non_nullable_nulls_without_default() -> None:
    s = compile_schema(_schema({"a": {"type": "string"},
                                "b": {"type": "string", "nullable": True},
                                "c": {"type": "string", "default": "dc"}}))
    o = _obj({"a": None, "b": None, "c": None})
    assert prune(o, s) == []
    assert o["spec"] == {"b": None, "c": None}
    apply_defaults(o, compile_schema(_schema({"a": {"type": "string"},
                                              "b": {"type": "string", "nullable": True},
                                              "c": {"type": "string", "default": "dc"}})))
    assert o["spec"] == {"b": None, "c": "dc"}


def test_prune_is_idempotent() -> None:
    s = compile_schema(_schema({"a": {"type": "object", "properties": {"b": {"type": "string"}}}}))
    o = _obj({"a": {"b": "x", "c": 1}, "d": 2})
    assert prune(o, s) == ["spec.a.c", "spec.d"]
    snapshot = copy.deepcopy(o)
    assert prune(o, s) == []
    assert o == snapshot


# --- defaulting -----------------------------------------------------------------------


def test_defaults_absent_properties_recursively() -> None:
    s = compile_schema(_schema({
        "replicas": {"type": "integer", "default": 1},
        "strategy": {"type": "object", "default": {},
                     "properties": {"type": {"type": "string", "default": "Rolling"}}},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"}}}},
        "limits": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"unit": {"type": "string", "default": "Mi"}}}}}))
    o = _obj({"ports": [{"port": 80}, {"protocol": "UDP"}], "limits": {"mem": {}}})
    apply_defaults(o, s)
    assert o["spec"] == {"ports": [{"port": 80, "protocol": "TCP"}, {"protocol": "UDP"}],
                         "limits": {"mem": {"unit": "Mi"}}, "replicas": 1,
                         "strategy": {"type": "Rolling"}}


def test_defaults_only_inside_present_objects() -> None:
    s = compile_schema(_schema({"replicas": {"type": "integer", "default": 1}}))
    o = _obj()
    apply_defaults(o, s)
    assert "spec" not in o


def test_defaults_replace_non_nullable_nulls_in_items_and_maps() -> None:
    s = compile_schema(_schema({
        "list": {"type": "array", "items": {"type": "string", "default": "d"}},
        "map": {"type": "object", "additionalProperties": {"type": "integer", "default": 7}},
        "n": {"type": "string", "nullable": True, "default": "x"}}))
    o = _obj({"list": ["a", None], "map": {"k": None}, "n": None})
    apply_defaults(o, s)
    assert o["spec"] == {"list": ["a", "d"], "map": {"k": 7}, "n": None}


def test_defaults_are_deep_copies() -> None:
    s = compile_schema(_schema({"cfg": {"type": "object", "default": {"a": [1]},
                                        "properties": {"a": {"type": "array",
                                                             "items": {"type": "integer"}}}}}))
    o1, o2 = _obj({}), _obj({})
    apply_defaults(o1, s)
    apply_defaults(o2, s)
    o1["spec"]["cfg"]["a"].append(2)
    assert o2["spec"]["cfg"] == {"a": [1]}


def test_defaulting_is_idempotent() -> None:
    s = compile_schema(_schema({"a": {"type": "object", "default": {},
                                      "properties": {"b": {"type": "object", "default": {},
                                                           "properties": {"c": {
                                                               "type": "integer",
                                                               "default": 3}}}}}}))
    o = _obj({})
    apply_defaults(o, s)
    once = copy.deepcopy(o)
    apply_defaults(o, s)
    assert o == once == _obj({"a": {"b": {"c": 3}}})


# --- validation messages ------------------------------------------------------------------


def test_type_error_message() -> None:
    schema = _schema({"replicas": {"type": "integer"}})
    assert _errors(_obj({"replicas": "string"}), schema) == [
        ('spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
        'integer: "string"')]
    causes = validate(_obj({"replicas": "x"}), compile_schema(schema))
    assert causes[0].to_status_cause() == {
        "reason": "FieldValueTypeInvalid", "field": "spec.replicas",
        "message": 'Invalid value: "string": spec.replicas in body must be of type integer: '
                   '"string"'}


def test_integer_accepts_integral_floats_and_number_accepts_ints() -> None:
    schema = _schema({"i": {"type": "integer"}, "n": {"type": "number"}})
    assert _errors(_obj({"i": 2.0, "n": 3}), schema) == []
    assert _errors(_obj({"i": 2.5}), schema) == [
        'spec.i: Invalid value: "number": spec.i in body must be of type integer: "number"']


def test_bool_is_not_a_number() -> None:
    assert _errors(_obj({"i": True}), _schema({"i": {"type": "integer", "minimum": 3}})) == [
        'spec.i: Invalid value: "boolean": spec.i in body must be of type integer: "boolean"']


def test_null_and_nullable() -> None:
    schema = _schema({"a": {"type": "string"}, "b": {"type": "string", "nullable": True}})
    assert _errors(_obj({"a": None, "b": None}), schema) == [
        'spec.a: Invalid value: "null": spec.a in body must be of type string: "null"']


def test_required() -> None:
    schema = _schema({"replicas": {"type": "integer"}}, required=["replicas"])
    assert _errors(_obj({}), schema) == ["spec.replicas: Required value"]
    root_required = {"type": "object", "required": ["spec"],
                     "properties": {"spec": {"type": "object"}}}
    assert _errors(_obj(), root_required) == ["spec: Required value"]


def test_enum() -> None:
    schema = _schema({"color": {"type": "string", "enum": ["a", "b"]},
                      "n": {"type": "integer", "enum": [1, 2.5, True]}})
    assert _errors(_obj({"color": "x", "n": 3}), schema) == [
        'spec.color: Unsupported value: "x": supported values: "a", "b"',
        'spec.n: Unsupported value: 3: supported values: "1", "2.5", "true"']
    assert _errors(_obj({"color": "a", "n": 1}), schema) == []


def test_minimum_maximum() -> None:
    schema = _schema({"i": {"type": "integer", "minimum": 1, "maximum": 10},
                      "e": {"type": "integer", "minimum": 1, "exclusiveMinimum": True,
                            "maximum": 10, "exclusiveMaximum": True},
                      "f": {"type": "number", "maximum": 1.5}})
    assert _errors(_obj({"i": 0, "e": 10, "f": 2.25}), schema) == [
        "spec.i: Invalid value: 0: spec.i in body should be greater than or equal to 1",
        "spec.e: Invalid value: 10: spec.e in body should be less than 10",
        "spec.f: Invalid value: 2.25: spec.f in body should be less than or equal to 1.5"]
    assert _errors(_obj({"i": 11, "e": 1}), schema) == [
        "spec.i: Invalid value: 11: spec.i in body should be less than or equal to 10",
        "spec.e: Invalid value: 1: spec.e in body should be greater than 1"]


def test_multiple_of() -> None:
    schema = _schema({"i": {"type": "integer", "multipleOf": 5},
                      "f": {"type": "number", "multipleOf": 0.5}})
    assert _errors(_obj({"i": 12, "f": 0.75}), schema) == [
        "spec.i: Invalid value: 12: spec.i in body should be a multiple of 5",
        "spec.f: Invalid value: 0.75: spec.f in body should be a multiple of 0.5"]
    assert _errors(_obj({"i": 15, "f": 1.5}), schema) == []


def test_string_length_and_pattern() -> None:
    schema = _schema({"a": {"type": "string", "maxLength": 3},
                      "b": {"type": "string", "minLength": 2},
                      "c": {"type": "string", "pattern": "^[a-z]+$"},
                      "d": {"type": "string", "maxLength": 1}})
    assert _errors(_obj({"a": "abcd", "b": "x", "c": "A1", "d": "xy"}), schema) == [
        "spec.a: Too long: may not be more than 3 bytes",
        'spec.b: Invalid value: "x": spec.b in body should be at least 2 chars long',
        "spec.c: Invalid value: \"A1\": spec.c in body should match '^[a-z]+$'",
        "spec.d: Too long: may not be more than 1 byte"]
    # Lengths count characters, as utf8.RuneCount does.
    assert _errors(_obj({"a": "äöü"}), schema) == []


def test_formats() -> None:
    schema = _schema({"ts": {"type": "string", "format": "date-time"},
                      "d": {"type": "string", "format": "date"},
                      "ip": {"type": "string", "format": "ipv4"},
                      "u": {"type": "string", "format": "uuid"},
                      "i": {"type": "integer", "format": "int32"},
                      "x": {"type": "string", "format": "my-own-format"}})
    good = {"ts": "2024-01-02T03:04:05Z", "d": "2024-02-29", "ip": "10.0.0.1",
            "u": "123e4567-e89b-12d3-a456-426614174000", "i": 1 << 40, "x": "whatever"}
    assert _errors(_obj(good), schema) == []
    bad = {"ts": "yesterday", "d": "2023-02-29", "ip": "::1", "u": "nope"}
    assert _errors(_obj(bad), schema) == [
        ('spec.ts: Invalid value: "yesterday": spec.ts in body must be of type date-time: '
        '"yesterday"'),
        ('spec.d: Invalid value: "2023-02-29": spec.d in body must be of type date: '
        '"2023-02-29"'),
        'spec.ip: Invalid value: "::1": spec.ip in body must be of type ipv4: "::1"',
        'spec.u: Invalid value: "nope": spec.u in body must be of type uuid: "nope"']


def test_array_counts_and_unique_items() -> None:
    schema = _schema({"a": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                      "b": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                      "c": {"type": "array", "items": {"type": "integer"},
                            "uniqueItems": True}})
    assert _errors(_obj({"a": [], "b": ["x", "y", "z"], "c": [1, 2, 1]}), schema) == [
        "spec.a: Invalid value: 0: spec.a in body should have at least 1 items",
        "spec.b: Too many: 3: must have at most 2 items",
        'spec.c: Invalid value: "": spec.c in body shouldn\'t contain duplicates']


def test_item_paths() -> None:
    schema = _schema({"l": {"type": "array", "items": {"type": "object", "required": ["n"],
                                                       "properties": {"n": {"type": "string"}}}}})
    assert _errors(_obj({"l": [{"n": "a"}, {}, {"n": 1}]}), schema) == [
        "spec.l[1].n: Required value",
        ('spec.l[2].n: Invalid value: "integer": spec.l[2].n in body must be of type string: '
        '"integer"')]


def test_property_counts() -> None:
    schema = _schema({"m": {"type": "object", "minProperties": 2,
                            "additionalProperties": {"type": "string"}},
                      "n": {"type": "object", "maxProperties": 1,
                            "additionalProperties": {"type": "string"}}})
    assert _errors(_obj({"m": {"a": "1"}, "n": {"a": "1", "b": "2"}}), schema) == [
        "spec.m: Invalid value: 1: spec.m in body should have at least 2 properties",
        "spec.n: Too many: 2: must have at most 1 item"]


def test_additional_properties_paths_and_forbidden_properties() -> None:
    schema = _schema({"labels": {"type": "object", "additionalProperties": {"type": "string"}},
                      "closed": {"type": "object", "additionalProperties": False,
                                 "properties": {"a": {"type": "string"}}}})
    assert _errors(_obj({"labels": {"k": 1}, "closed": {"a": "x", "b": "y"}}), schema) == [
        ('spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type '
        'string: "integer"'),
        'spec.closed: Invalid value: "b": spec.closed.b in body is a forbidden property']


def test_int_or_string() -> None:
    schema = _schema({"port": {"x-kubernetes-int-or-string": True,
                               "anyOf": [{"type": "integer"}, {"type": "string"}]}})
    assert _errors(_obj({"port": 80}), schema) == []
    assert _errors(_obj({"port": "http"}), schema) == []
    errs = _errors(_obj({"port": 1.5}), schema)
    assert errs[0] == ('spec.port: Invalid value: "number": spec.port in body must be of type '
                       'integer,string: "number"')
    assert ': Invalid value: "": "spec.port" must validate at least one schema (anyOf)' in errs


def test_list_type_set_and_map_duplicates() -> None:
    schema = _schema({
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "pairs": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["a", "b"],
                  "items": {"type": "object", "properties": {"a": {"type": "string"},
                                                             "b": {"type": "integer"}}}}})
    o = _obj({"tags": ["x", "y", "x", "x"], "ports": [{"name": "a"}, {"name": "a"}],
              "pairs": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"b": 1, "a": "x"}]})
    assert _errors(o, schema) == [
        'spec.tags[2]: Duplicate value: "x"',
        'spec.ports[1]: Duplicate value: {"name":"a"}',
        'spec.pairs[2]: Duplicate value: {"a":"x","b":1}']


def test_list_type_set_distinguishes_types() -> None:
    schema = _schema({"s": {"type": "array", "x-kubernetes-list-type": "set",
                            "items": {"x-kubernetes-int-or-string": True}}})
    assert _errors(_obj({"s": [1, "1"]}), schema) == []


def test_composition() -> None:
    schema = _schema({
        "a": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]},
        "o": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
        "n": {"type": "string", "not": {"enum": ["forbidden"]}}})
    assert _errors(_obj({"a": "abcd", "o": 5, "n": "forbidden"}), schema) == [
        "spec.a: Too long: may not be more than 3 bytes",
        ': Invalid value: "": "spec.a" must validate all the schemas (allOf)',
        (': Invalid value: "": "spec.o" must validate one and only one schema (oneOf). '
        "Found 2 valid alternatives"),
        ': Invalid value: "": "spec.n" must not validate the schema (not)']


def test_any_of_required_alternatives() -> None:
    schema = _schema({"a": {"type": "string"}, "b": {"type": "string"}},
                     anyOf=[{"required": ["a"]}, {"required": ["b"]}])
    assert _errors(_obj({"b": "x"}), schema) == []
    assert _errors(_obj({}), schema) == [
        ': Invalid value: "": "spec" must validate at least one schema (anyOf)',
        "spec.a: Required value"]


def test_embedded_resource_validation() -> None:
    schema = _schema({"t": {"type": "object", "x-kubernetes-embedded-resource": True,
                            "x-kubernetes-preserve-unknown-fields": True}})
    assert _errors(_obj({"t": {"metadata": {"name": "a/b"}}}), schema) == [
        "spec.t.apiVersion: Required value", "spec.t.kind: Required value",
        "spec.t.metadata.name: Invalid value: \"a/b\": may not contain '/'"]
    assert _errors(_obj({"t": {"apiVersion": "a/b/c", "kind": "Foo_Bar"}}), schema) == [
        'spec.t.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
        ('spec.t.kind: Invalid value: "Foo_Bar": may have mixed case, but should otherwise '
        "match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
        "start with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")]
    assert _errors(_obj({"t": {"apiVersion": "v1", "kind": "Pod"}}), schema) == []


def test_cel_rules_are_ignored() -> None:
    schema = _schema({"a": {"type": "integer",
                            "x-kubernetes-validations": [{"rule": "self > 100"}]}})
    assert _errors(_obj({"a": 1}), schema) == []


def test_valid_object_has_no_errors() -> None:
    schema = _schema({"replicas": {"type": "integer", "minimum": 0},
                      "selector": {"type": "object", "properties": {"matchLabels": {
                          "type": "object", "additionalProperties": {"type": "string"}}}}},
                     required=["replicas"])
    assert _errors(_obj({"replicas": 2, "selector": {"matchLabels": {"a": "b"}}},
                        status={"x": 1}), schema) == []


def test_value_rendering() -> None:
    assert render_bad_value("a\"b") == '"a\\"b"'
    assert render_bad_value(1e6) == "1e+06"
    assert render_bad_value(123456.0) == "123456"
    assert render_bad_value(0.00001) == "1e-05"
    assert render_bad_value({"b": [1, 2.0], "a": None}) == '{"a":null,"b":[1,2]}'
    assert go_json({"x": "<&>"}) == '{"x":"\\u003c\\u0026\\u003e"}'


# --- CRD-side schema checks ---------------------------------------------------------------------


def _structural(schema: Obj) -> list[str]:
    return [c.error() for c in validate_structural(schema)]


def test_structural_valid_schema() -> None:
    schema = _schema({"port": {"x-kubernetes-int-or-string": True,
                               "anyOf": [{"type": "integer"}, {"type": "string"}]},
                      "list": {"type": "array", "items": {"type": "string"}},
                      "free": {"x-kubernetes-preserve-unknown-fields": True},
                      "r": {"type": "integer", "default": 3}},
                     anyOf=[{"required": ["port"]}, {"required": ["list"]}])
    schema["properties"]["metadata"] = {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20}}}
    assert _structural(schema) == []


def test_structural_type_required() -> None:
    schema = {"type": "object", "properties": {"spec": {"properties": {
        "list": {"type": "array", "items": {"properties": {}}}}}}}
    assert _structural(schema) == [
        ("spec.validation.openAPIV3Schema.properties[spec].properties[list].items.type: "
        "Required value: must not be empty for specified array items"),
        ("spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be "
        "empty for specified object fields")]
    assert _structural({"properties": {}}) == [
        "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root"]


def test_structural_custom_path_and_root_type() -> None:
    assert [c.error() for c in validate_structural({"type": "string"},
                                                   "spec.versions[1].schema.openAPIV3Schema")] == [
        ('spec.versions[1].schema.openAPIV3Schema.type: Invalid value: "string": must be object '
        "at the root")]


def test_structural_array_needs_items_and_metadata_restricted() -> None:
    schema = {"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        "spec": {"type": "object", "properties": {"l": {"type": "array"}}}}}
    assert _structural(schema) == [
        ("spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify "
        "anything other than name and generateName, but metadata is implicitly specified"),
        ("spec.validation.openAPIV3Schema.properties[spec].properties[l].items: Required "
        "value: must be specified")]


def test_structural_nested_value_validation_rules() -> None:
    schema = _schema({"a": {"type": "string"}},
                     anyOf=[{"type": "object", "properties": {"b": {"description": "x"}}}])
    assert _structural(schema) == [
        ("spec.validation.openAPIV3Schema.properties[spec].anyOf[0].properties[b].description: "
        "Forbidden: must be empty to be structural"),
        ("spec.validation.openAPIV3Schema.properties[spec].anyOf[0].type: Forbidden: must be "
        "empty to be structural"),
        ("spec.validation.openAPIV3Schema.properties[spec].properties[b]: Required value: "
        "because it is defined in spec.validation.openAPIV3Schema.properties[spec].anyOf[0]"
        ".properties[b]")]


def test_openapi_subset() -> None:
    schema = {"type": "object", "properties": {
        "a": {"$ref": "#/definitions/x"},
        "b": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "c": {"type": "object", "properties": {"x": {"type": "string"}},
              "additionalProperties": {"type": "string"}},
        "d": {"type": "null"},
        "e": {"type": "object", "x-kubernetes-preserve-unknown-fields": False}}}
    errs = _structural(schema)
    p = "spec.validation.openAPIV3Schema.properties"
    assert errs[:6] == [
        f"{p}[a].$ref: Forbidden: $ref is not supported",
        (f"{p}[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime "
        "complexity becomes quadratic"),
        (f"{p}[c].additionalProperties: Forbidden: additionalProperties and properties are "
        "mutual exclusive"),
        (f'{p}[d].type: Unsupported value: "null": supported values: "array", "boolean", '
        '"integer", "number", "object", "string"'),
        f"{p}[d].type: Forbidden: type cannot be set to null, use nullable as an alternative",
        (f"{p}[e].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or "
        "undefined")]


def test_list_type_extension_checks() -> None:
    schema = _schema({
        "m": {"type": "array", "x-kubernetes-list-type": "map",
              "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "k": {"type": "array", "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["k"],
              "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "s": {"type": "string", "x-kubernetes-list-type": "set"}})
    p = "spec.validation.openAPIV3Schema.properties[spec].properties"
    assert _structural(schema) == [
        (f"{p}[m].x-kubernetes-list-map-keys: Required value: must not be empty if "
        "x-kubernetes-list-type is map"),
        (f"{p}[k].items.properties[k]: Required value: this property is in "
        "x-kubernetes-list-map-keys, so it must have a default or be a required property"),
        (f'{p}[s].type: Invalid value: "string": must be array if x-kubernetes-list-type is '
        "specified")]


def test_defaults_must_validate_and_be_pruned() -> None:
    p = "spec.validation.openAPIV3Schema.properties[spec].properties"
    assert _structural(_schema({"r": {"type": "integer", "default": "x"}})) == [
        f'{p}[r].default: Invalid value: "string":  in body must be of type integer: "string"']
    assert _structural(_schema({"o": {"type": "object", "default": {"a": 1, "b": 2},
                                      "properties": {"a": {"type": "integer"}}}})) == [
        f'{p}[o].default: Invalid value: {{"a":1,"b":2}}: must not have unknown fields']


def test_non_schema_input() -> None:
    assert validate_structural(None) == []


# --- selectable fields ----------------------------------------------------------------------------


def test_selectable_field_values() -> None:
    o = _obj({"color": "red", "size": 3, "on": True, "ratio": 0.5, "nested": {"x": "y"}})
    fields = [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.on"},
              {"jsonPath": ".spec.ratio"}, {"jsonPath": ".spec.missing"},
              {"jsonPath": ".spec['nested'].x"}]
    assert selectable_field_values(o, fields) == {
        "spec.color": "red", "spec.size": "3", "spec.on": "true", "spec.ratio": "0.5",
        "spec.missing": "", "spec['nested'].x": "y"}
    assert selectable_field_values(o, None) == {}


def test_parse_field_path() -> None:
    assert parse_field_path(".spec.color") == ["spec", "color"]
    assert parse_field_path(".a['b.c']") == ["a", "b.c"]
    assert parse_field_path("spec") == "expected [ or . but got: spec"
    assert parse_field_path(".") == "unexpected end of JSON path"
    assert parse_field_path(".a[b]") == "expected single quoted string but got b"


# --- properties -------------------------------------------------------------------------------------

_SCALAR_TYPES = ("string", "integer", "number", "boolean")


def _schemas(depth: int = 2) -> st.SearchStrategy[Obj]:
    scalar = st.builds(
        lambda t, nullable, default, enum: {
            "type": t, **({"nullable": True} if nullable else {}),
            **({"default": default[t]} if default else {}),
            **({"enum": enum[t]} if enum else {})},
        st.sampled_from(_SCALAR_TYPES), st.booleans(),
        st.booleans().map(lambda b: {"string": "d", "integer": 1, "number": 1.5,
                                     "boolean": True} if b else None),
        st.booleans().map(lambda b: {"string": ["a", "d"], "integer": [1, 2],
                                     "number": [1.5], "boolean": [True]} if b else None))
    if depth == 0:
        return scalar
    sub = _schemas(depth - 1)
    obj = st.builds(lambda props, req, pres: {
        "type": "object", "properties": props,
        **({"required": sorted(props)[:1]} if req and props else {}),
        **({"x-kubernetes-preserve-unknown-fields": True} if pres else {})},
        st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), sub, max_size=3),
        st.booleans(), st.booleans())
    arr = st.builds(lambda items, lt: {"type": "array", "items": items,
                                       **({"x-kubernetes-list-type": "set"} if lt else {})},
                    scalar, st.booleans())
    amap = st.builds(lambda v: {"type": "object", "additionalProperties": v}, sub)
    return st.one_of(scalar, obj, arr, amap)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-3, 3, allow_nan=False)
    | st.sampled_from(["a", "d", "", "x"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), children, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(spec_schema=_schemas(), spec=_json)
def test_prune_validate_never_raises_and_prune_is_idempotent(spec_schema: Obj,
                                                             spec: Any) -> None:
    schema = {"type": "object", "properties": {"spec": spec_schema}}
    s = compile_schema(schema)
    o = _obj(spec)
    prune(o, s)
    after_first = copy.deepcopy(o)
    assert prune(o, s) == []
    assert o == after_first
    apply_defaults(o, s)
    causes = validate(o, s)
    for c in causes:
        c.error()
        json.dumps(c.to_status_cause())


@settings(max_examples=300, deadline=None)
@given(spec_schema=_schemas(), spec=_json)
def test_defaulting_is_idempotent_property(spec_schema: Obj, spec: Any) -> None:
    s = compile_schema({"type": "object", "properties": {"spec": spec_schema}})
    o = _obj(spec)
    prune(o, s)
    apply_defaults(o, s)
    once = copy.deepcopy(o)
    apply_defaults(o, s)
    assert o == once


@settings(max_examples=100, deadline=None)
@given(spec_schema=_schemas())
def test_generated_schemas_are_structural(spec_schema: Obj) -> None:
    schema = {"type": "object", "properties": {"spec": spec_schema}}
    for c in validate_structural(schema):
        # Only the generated enums/defaults may disagree (e.g. a default outside the enum).
        assert c.field.endswith(".default"), c.error()
