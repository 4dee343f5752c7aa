"""Field selectors: parsing, escaping, matching."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.fields import (
    FieldSelector,
    SelectorParseError,
    escape_value,
    everything,
    parse_field_selector,
    selector_from_set,
    unescape_value,
)
from pykcm.api.labels import SelectorParseError as LabelsSelectorParseError


def test_shared_error_type() -> None:
    assert SelectorParseError is LabelsSelectorParseError


@pytest.mark.parametrize(
    ("text", "requirements", "canonical"),
    [
        ("", (), ""),
        ("a=b", (("a", "=", "b"),), "a=b"),
        ("a==b", (("a", "=", "b"),), "a=b"),
        ("a!=b", (("a", "!=", "b"),), "a!=b"),
        ("a=", (("a", "=", ""),), "a="),
        # Terms are sorted before parsing, as upstream does.
        ("z=1,a=2", (("a", "=", "2"), ("z", "=", "1")), "a=2,z=1"),
        ("a=b,", (("a", "=", "b"),), "a=b"),
        (r"a=b\,c", (("a", "=", "b,c"),), r"a=b\,c"),
        (r"a=b\=c", (("a", "=", "b=c"),), r"a=b\=c"),
        (r"a=b\\c", (("a", "=", "b\\c"),), r"a=b\\c"),
        # The field is split at the first operator; nothing is trimmed.
        ("a = b", (("a ", "=", " b"),), "a = b"),
        ("spec.nodeName=node-1,status.phase!=Running",
         (("spec.nodeName", "=", "node-1"), ("status.phase", "!=", "Running")),
         "spec.nodeName=node-1,status.phase!=Running"),
    ],
)
def test_parse(text: str, requirements: tuple[tuple[str, str, str], ...], canonical: str) -> None:
    sel = parse_field_selector(text)
    assert sel.requirements == requirements
    assert str(sel) == canonical
    assert sel.empty == (not requirements)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a", "invalid selector: 'a'; can't understand 'a'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("x=a=b", "invalid field selector: unescaped character in value: 61"),
        ("x=a,b=c,d,", "invalid selector: 'x=a,b=c,d,'; can't understand 'd'"),
        (r"a=\q", r"invalid field selector: invalid escape sequence: \q"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorParseError) as exc:
        parse_field_selector(text)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("text", "fields", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a=", {}, True),  # a missing field reads as ""
        ("a!=b", {}, True),
        ("a!=", {}, False),
        ("a!=b", {"a": "b"}, False),
        ("a=b,c!=d", {"a": "b", "c": "e"}, True),
        ("a=b,c!=d", {"a": "b", "c": "d"}, False),
        ("", {"x": "y"}, True),
    ],
)
def test_matches(text: str, fields: dict[str, str], expected: bool) -> None:
    assert parse_field_selector(text).matches(fields) is expected


def test_helpers() -> None:
    sel = parse_field_selector("spec.nodeName=n1,status.phase!=Failed")
    assert sel.fields() == frozenset({"spec.nodeName", "status.phase"})
    assert sel.requires_exact_match("spec.nodeName") == "n1"
    assert sel.requires_exact_match("status.phase") is None
    assert everything().empty
    assert selector_from_set({"b": "1", "a": "x,y"}) == parse_field_selector(r"a=x\,y,b=1")
    assert selector_from_set(None).empty
    with pytest.raises(AttributeError):
        sel.requirements = ()  # type: ignore[misc]
    assert hash(sel) == hash(parse_field_selector("status.phase!=Failed,spec.nodeName=n1"))


_TEXT = st.text(alphabet="ab\\,=!.x", max_size=12)


@given(_TEXT)
def test_escape_round_trip(value: str) -> None:
    assert unescape_value(escape_value(value)) == value


_FIELDS = st.sampled_from(["metadata.name", "spec.nodeName", "status.phase", "x"])


@given(st.lists(st.tuples(_FIELDS, st.sampled_from(["=", "!="]), _TEXT), max_size=4))
def test_string_round_trip(reqs: list[tuple[str, str, str]]) -> None:
    text = ",".join(f"{f}{op}{escape_value(v)}" for f, op, v in reqs)
    sel = parse_field_selector(text)
    assert sorted(sel.requirements) == sorted(reqs)
    assert parse_field_selector(str(sel)) == sel


@given(st.lists(st.tuples(_FIELDS, st.sampled_from(["=", "!="]), _TEXT), max_size=4),
       st.dictionaries(_FIELDS, _TEXT))
def test_matches_reference(reqs: list[tuple[str, str, str]], fields: dict[str, str]) -> None:
    sel = FieldSelector(tuple(reqs))
    expected = all((fields.get(f, "") == v) == (op == "=") for f, op, v in reqs)
    assert sel.matches(fields) is expected


@given(st.text(alphabet="ab=!,\\", max_size=15))
def test_parser_never_crashes(text: str) -> None:
    try:
        sel = parse_field_selector(text)
    except SelectorParseError:
        return
    assert parse_field_selector(str(sel)) == sel
