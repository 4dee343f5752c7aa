"""Generic validation: name formats, field errors, metadata."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.validation import (
    TOTAL_ANNOTATION_SIZE_LIMIT_B,
    Cause,
    GoValue,
    aggregate_message,
    duplicate,
    forbidden,
    format_invalid_message,
    go_label_selector,
    go_quote,
    go_string_map,
    invalid,
    invalid_status,
    is_config_map_key,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_ip,
    is_valid_label_value,
    is_valid_percent,
    is_valid_port_name,
    name_is_dns_label,
    name_is_dns_subdomain,
    not_supported,
    required,
    too_long,
    validate_annotations,
    validate_finalizers,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_owner_references,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


# --- name formats ---------------------------------------------------------------


def test_dns1123_subdomain_messages() -> None:
    assert is_dns1123_subdomain("example.com") == []
    assert is_dns1123_subdomain("Foo_bar") == [SUBDOMAIN_MSG]
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]
    assert is_dns1123_subdomain("a\n") == [SUBDOMAIN_MSG]  # no "$ before newline" leniency


def test_dns1123_label_messages() -> None:
    assert is_dns1123_label("my-name") == []
    assert is_dns1123_label("123-abc") == []
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("-a") == [LABEL_MSG]
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


def test_dns1035_label_messages() -> None:
    assert is_dns1035_label("abc-123") == []
    assert is_dns1035_label("1abc") == [DNS1035_MSG]
    assert is_dns1035_label("") == [DNS1035_MSG]


def test_qualified_name() -> None:
    assert is_qualified_name("app") == []
    assert is_qualified_name("example.com/My_Name.1") == []
    assert is_qualified_name("/a") == ["prefix part must be non-empty"]
    assert is_qualified_name("a/") == [
        "name part must be non-empty",
        ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ]
    assert is_qualified_name("Bad_/x") == ["prefix part " + SUBDOMAIN_MSG]
    assert is_qualified_name("a/b/c")[0].startswith(
        "a valid label key must consist of alphanumeric characters")
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 bytes"]


def test_label_value() -> None:
    assert is_valid_label_value("") == []
    assert is_valid_label_value("My_value-1.2") == []
    assert is_valid_label_value("-x")[0].startswith("a valid label must be an empty string")
    assert is_valid_label_value("x" * 64) == ["must be no more than 63 bytes"]


def test_other_formats() -> None:
    assert is_config_map_key("key.name") == []
    assert is_config_map_key("..a") == ["must not start with '..'"]
    assert is_config_map_key(".") == ["must not be '.'"]
    assert is_config_map_key("a b")[0].startswith("a valid config key must consist")
    assert is_valid_percent("25%") == []
    assert is_valid_percent("25") != []
    assert is_valid_port_name("http") == []
    assert is_valid_port_name("1234") == ["must contain at least one letter (a-z)"]
    assert is_valid_port_name("a--b") == ["must not contain consecutive hyphens"]
    assert is_valid_ip("10.0.0.1") == [] and is_valid_ip("::1") == []
    assert is_valid_ip("10.0.0.01") != [] and is_valid_ip("foo") != []


def test_generate_name_prefix_masks_trailing_dash() -> None:
    assert name_is_dns_subdomain("web-", True) == []
    assert name_is_dns_subdomain("web-", False) == [SUBDOMAIN_MSG]
    assert name_is_dns_label("web-", True) == []


_DNS_ALPHABET = "abcxyz019-.A_"
_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1035_RE = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


@given(st.text(alphabet=_DNS_ALPHABET, max_size=70) | st.text(max_size=8))
def test_dns_validators_against_regex(value: str) -> None:
    assert (is_dns1123_subdomain(value) == []) == (
        bool(_SUBDOMAIN_RE.match(value)) and len(value.encode()) <= 253)
    assert (is_dns1123_label(value) == []) == (
        bool(_LABEL_RE.match(value)) and len(value.encode()) <= 63)
    assert (is_dns1035_label(value) == []) == (
        bool(_DNS1035_RE.match(value)) and len(value.encode()) <= 63)
    assert (is_valid_label_value(value) == []) == (
        bool(_VALUE_RE.match(value)) and len(value.encode()) <= 63)


@given(st.text(alphabet="ab.Z_-/", max_size=20))
def test_qualified_name_against_definition(value: str) -> None:
    parts = value.split("/")
    if len(parts) == 1:
        ok = bool(_VALUE_RE.match(value)) and 0 < len(value) <= 63
    elif len(parts) == 2:
        prefix, name = parts
        ok = (bool(prefix) and is_dns1123_subdomain(prefix) == []
              and bool(_VALUE_RE.match(name)) and 0 < len(name) <= 63)
    else:
        ok = False
    assert (is_qualified_name(value) == []) == ok


# --- field errors ---------------------------------------------------------------


def test_cause_formatting() -> None:
    c = invalid("metadata.name", "Foo_bar", SUBDOMAIN_MSG)
    assert c.error() == f'metadata.name: Invalid value: "Foo_bar": {SUBDOMAIN_MSG}'
    assert c.to_status_cause() == {
        "reason": "FieldValueInvalid",
        "message": f'Invalid value: "Foo_bar": {SUBDOMAIN_MSG}',
        "field": "metadata.name",
    }
    assert required("spec.selector").error() == "spec.selector: Required value"
    assert required("x", "why").body() == "Required value: why"
    assert forbidden("spec", "nope").body() == "Forbidden: nope"
    assert not_supported("spec.restartPolicy", "Sometimes", ["Always", "OnFailure", "Never"]
                         ).body() == ('Unsupported value: "Sometimes": supported values: '
                                      '"Always", "OnFailure", "Never"')
    assert duplicate("spec.containers[1].name", "a").body() == 'Duplicate value: "a"'
    assert too_long("metadata.annotations", 262144).body() == (
        "Too long: must have at most 262144 bytes")
    assert invalid("x", 3, "d").body() == "Invalid value: 3: d"
    assert invalid("x", None, "d").body() == "Invalid value: null: d"
    assert invalid("x", True, "d").body() == "Invalid value: true: d"
    assert invalid("x", GoValue("raw"), "d").body() == "Invalid value: raw: d"
    assert invalid("x", {"b": "2", "a": "1"}, "d").body() == (
        'Invalid value: {"a":"1","b":"2"}: d')
    assert invalid("x", ["a"], "d").body() == 'Invalid value: ["a"]: d'
    assert Cause("FieldValueRequired", "").to_status_cause() == {
        "reason": "FieldValueRequired", "message": "Required value"}


def test_go_rendering() -> None:
    assert go_quote('a"b\\c\n\x01é') == '"a\\"b\\\\c\\n\\x01é"'
    # v1.36 field errors render structured values as JSON
    assert go_string_map(None) == "null"
    assert go_string_map({}) == "{}"
    assert go_string_map({"b": "2", "a": "1"}) == '{"a":"1","b":"2"}'
    assert go_label_selector({"matchLabels": {"app": "x"}}) == '{"matchLabels":{"app":"x"}}'
    assert go_label_selector({"matchExpressions": [{"key": "k", "operator": "Exists"}]}) == (
        '{"matchExpressions":[{"key":"k","operator":"Exists"}]}')


def test_invalid_message_single_and_many() -> None:
    one = [required("spec.selector")]
    assert format_invalid_message("Deployment", "x", one) == (
        'Deployment.apps "x" is invalid: spec.selector: Required value')
    many = [required("spec.selector"),
            invalid("spec.template.metadata.labels", {"app": "x"},
                    "`selector` does not match template `labels`")]
    assert format_invalid_message("Deployment", "x", many) == (
        'Deployment.apps "x" is invalid: [spec.selector: Required value, '
        'spec.template.metadata.labels: Invalid value: {"app":"x"}: '
        '`selector` does not match template `labels`]')
    assert format_invalid_message("Pod", "p", []) == 'Pod "p" is invalid'
    assert format_invalid_message("Widget", "w", one, group="example.com").startswith(
        'Widget.example.com "w" is invalid')
    # Duplicate messages are reported once.
    assert aggregate_message(one + one) == "spec.selector: Required value"


def test_invalid_status() -> None:
    status = invalid_status("Job", "pi", [required("spec.selector")])
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Job.batch "pi" is invalid: spec.selector: Required value',
        "reason": "Invalid",
        "details": {"name": "pi", "group": "batch", "kind": "Job", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value",
             "field": "spec.selector"}]},
        "code": 422,
    }
    assert "group" not in invalid_status("Pod", "p", [])["details"]


# --- metadata --------------------------------------------------------------------


def test_validate_labels_and_annotations() -> None:
    errs = validate_labels({"ok": "v", "bad key": "v", "k": "-v"}, "metadata.labels")
    assert [c.field for c in errs] == ["metadata.labels", "metadata.labels"]
    assert errs[0].value == '"bad key"' and errs[1].value == '"-v"'
    assert validate_annotations({"Example.com/UPPER": "x"}, "metadata.annotations") == []
    big = {"a": "x" * TOTAL_ANNOTATION_SIZE_LIMIT_B}
    assert [c.error() for c in validate_annotations(big, "metadata.annotations")] == [
        "metadata.annotations: Too long: must have at most 262144 bytes"]


def _ref(kind: str, name: str, controller: bool | None = None) -> dict[str, object]:
    ref: dict[str, object] = {"apiVersion": "apps/v1", "kind": kind, "name": name,
                              "uid": f"uid-{name}"}
    if controller is not None:
        ref["controller"] = controller
    return ref


def test_owner_references() -> None:
    assert validate_owner_references([_ref("Deployment", "a", True)]) == []
    errs = validate_owner_references([_ref("Deployment", "a", True), _ref("Deployment", "b", True)])
    assert len(errs) == 1 and errs[0].field == "metadata.ownerReferences"
    assert errs[0].detail == ('Only one reference can have Controller set to true. Found "true" '
                              'in references for Deployment/a and Deployment/b')
    # v1.36 renders the structured value as JSON (as kube-apiserver answers it)
    assert errs[0].value is not None and errs[0].value.startswith(
        '[{"apiVersion":"apps/v1","kind":"Deployment","name":"a",')
    errs = validate_owner_references([{"apiVersion": "", "kind": "", "name": "", "uid": ""}])
    assert [c.error() for c in errs] == [
        'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": must not be empty',
    ]
    errs = validate_owner_references([{"apiVersion": "v1", "kind": "Event", "name": "e",
                                       "uid": "u"}])
    assert errs[0].detail == "/v1, Kind=Event is disallowed from being an owner"


def test_finalizers() -> None:
    assert validate_finalizers(["kubernetes", "example.com/f", "foregroundDeletion"]) == []
    errs = validate_finalizers(["custom"])
    assert [c.error() for c in errs] == [
        ('metadata.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer '
        'name nor is it fully qualified')]
    errs = validate_finalizers(["orphan", "foregroundDeletion"])
    assert errs[0].detail == "finalizer orphan and foregroundDeletion cannot be both set"


def test_object_meta() -> None:
    assert validate_object_meta({"name": "a", "namespace": "default"}, namespaced=True) == []
    errs = validate_object_meta({}, namespaced=True)
    assert [c.error() for c in errs] == [
        "metadata.name: Required value: name or generateName is required",
        "metadata.namespace: Required value",
    ]
    errs = validate_object_meta({"name": "a", "namespace": "x"}, namespaced=False)
    assert [c.error() for c in errs] == ["metadata.namespace: Forbidden: not allowed on this type"]
    errs = validate_object_meta({"name": "Foo_bar", "namespace": "default"}, namespaced=True)
    assert [c.error() for c in errs] == [f'metadata.name: Invalid value: "Foo_bar": {SUBDOMAIN_MSG}']
    errs = validate_object_meta({"name": "a.b", "namespace": "default"}, namespaced=True,
                                name_validator=name_is_dns_label)
    assert [c.error() for c in errs] == ['metadata.name: Invalid value: "a.b": must not contain dots']
    errs = validate_object_meta({"generateName": "Web-", "name": "web-x", "namespace": "d"},
                                namespaced=True)
    assert errs[0].field == "metadata.generateName"
    errs = validate_object_meta({"name": "a", "namespace": "d", "generation": -1}, namespaced=True)
    assert [c.error() for c in errs] == [
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"]


def test_object_meta_update() -> None:
    old = {"name": "a", "finalizers": ["a.io/x"], "deletionTimestamp": "2024-01-01T00:00:00Z",
           "generation": 3}
    new = {"name": "a", "finalizers": ["a.io/x", "b.io/y"], "generation": 2}
    assert [c.error() for c in validate_object_meta_update(new, old)] == [
        ('metadata.finalizers: Forbidden: no new finalizers can be added if the object is being '
        'deleted, found new finalizers []string{"b.io/y"}'),
        "metadata.generation: Invalid value: 2: must not be decremented",
    ]


def test_label_selector_validation() -> None:
    assert validate_label_selector(None, "spec.selector") == []
    errs = validate_label_selector({"matchExpressions": [
        {"key": "a", "operator": "In"},
        {"key": "b", "operator": "Exists", "values": ["x"]},
        {"key": "c", "operator": "Gt", "values": ["1"]},
    ]}, "spec.selector")
    assert [c.error() for c in errs] == [
        ("spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'"),
        ("spec.selector.matchExpressions[1].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'"),
        ('spec.selector.matchExpressions[2].operator: Invalid value: "Gt": not a valid selector '
        'operator'),
    ]


@pytest.mark.parametrize("name", ["a", "a-b", "a.b", "0"])
def test_valid_names(name: str) -> None:
    assert name_is_dns_subdomain(name) == []


def test_memoized_checks_hand_out_fresh_lists() -> None:
    # The string checks remember recent answers; callers still own the list.
    for check, bad in ((is_qualified_name, "a/b/c"), (is_dns1123_label, "A_B"),
                       (is_valid_label_value, "-x-"), (is_config_map_key, "..x")):
        first = check(bad)
        assert first
        first.append("mutated")
        assert check(bad) == first[:-1]
        assert check(bad) is not check(bad)
        ok = check("abc")
        assert ok == []
        ok.append("mutated")
        assert check("abc") == []


@given(st.text(alphabet="aZ0-._/ \n%é", max_size=12))
def test_memoized_checks_match_on_repeat(value: str) -> None:
    for check in (is_dns1123_label, is_dns1123_subdomain, is_dns1035_label, is_qualified_name,
                  is_valid_label_value, is_config_map_key, is_valid_port_name):
        assert check(value) == check(value)


def test_checks_on_long_and_odd_values() -> None:
    long = "a" * 300  # longer than what the memo keeps
    assert is_dns1123_subdomain(long) == ["must be no more than 253 characters"]
    assert is_dns1123_subdomain(long) == ["must be no more than 253 characters"]

    class Name(str):
        pass

    assert is_dns1123_label(Name("ok")) == []
    assert is_dns1123_label(Name("a.b")) == ["must not contain dots"]
