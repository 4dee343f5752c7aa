"""Label selectors: parsing, canonical form, matching, metav1.LabelSelector conversion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykcm.api.labels import (
    DOES_NOT_EXIST,
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_EQUALS,
    NOT_IN,
    LabelSelector,
    Requirement,
    SelectorParseError,
    everything,
    new_requirement,
    nothing,
    parse_label_selector,
    selector_from_label_selector,
    selector_from_set,
)

# --- parsing and canonical form ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("a=b", "a=b"),
        ("a==b", "a==b"),
        ("a!=b", "a!=b"),
        ("a", "a"),
        ("!a", "!a"),
        ("a in (x,y)", "a in (x,y)"),
        ("a in (y,x,y)", "a in (x,y)"),
        ("a notin (x)", "a notin (x)"),
        ("a>1", "a>1"),
        ("a<3", "a<3"),
        ("  b = 1 ,\ta\n", "a,b=1"),
        ("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()"),
        ("a=", "a="),
        ("a in (,)", "a in ()"),
        ("example.com/app=web", "example.com/app=web"),
        ("in in (in),notin notin (notin)", "in in (in),notin notin (notin)"),
        ("z=1,a=2,m", "a=2,m,z=1"),
    ],
)
def test_parse_canonical(text: str, canonical: str) -> None:
    sel = parse_label_selector(text)
    assert str(sel) == canonical
    assert parse_label_selector(str(sel)) == sel


def test_empty_and_nothing() -> None:
    assert parse_label_selector("").empty
    assert parse_label_selector(" ").empty
    assert everything().empty and everything().matches({"a": "b"}) and everything().matches(None)
    assert not nothing().empty and not nothing().matches({}) and not nothing().matches(None)
    assert nothing().is_nothing and not everything().is_nothing
    assert not parse_label_selector("a").empty
    assert str(nothing()) == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
        ("a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a in (b,c", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("!=b", "found '!=', expected: !, identifier, or 'end of string'"),
        ("! =b", "unable to parse requirement: found '=', expected: identifier"),
        ("a<-3", ("unable to parse requirement: values[0][a]: Invalid value: \"-3\": a valid label "
                 "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
                 "'my_value',  or '12345', regex used for validation is "
                 "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")),
        ("a>b", ("unable to parse requirement: values[0]: Invalid value: \"b\": "
                "for 'Gt', 'Lt' operators, the value must be an integer")),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorParseError) as exc:
        parse_label_selector(text)
    assert str(exc.value) == message
    assert isinstance(exc.value, ValueError)


def test_invalid_key_message_names_nil_path() -> None:
    with pytest.raises(SelectorParseError) as exc:
        parse_label_selector("A_=b")
    assert str(exc.value) == (
        "unable to parse requirement: <nil>: Invalid value: \"A_\": name part must consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def test_invalid_value_message() -> None:
    with pytest.raises(SelectorParseError) as exc:
        parse_label_selector("a=-x")
    assert str(exc.value).startswith(
        "unable to parse requirement: values[0][a]: Invalid value: \"-x\": a valid label must be "
        "an empty string or consist of alphanumeric characters")


def test_too_long_value() -> None:
    with pytest.raises(SelectorParseError) as exc:
        parse_label_selector("a=" + "x" * 64)
    assert "must be no more than 63 bytes" in str(exc.value)


def test_nul_ends_input() -> None:
    # Upstream's lexer reads NUL as end of input.
    assert str(parse_label_selector("a\x00=b")) == "a"


# --- matching --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a=", {}, False),
        ("a=", {"a": ""}, True),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a!=b", {"a": "c"}, True),
        ("a in (x,y)", {"a": "y"}, True),
        ("a in (x,y)", {"a": "z"}, False),
        ("a in (x,y)", {}, False),
        ("a notin (x,y)", {}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": ""}, False),
        ("!a", {"b": ""}, True),
        ("!a", {"a": "x"}, False),
        ("a>5", {"a": "6"}, True),
        ("a>5", {"a": "5"}, False),
        ("a>5", {"a": "x"}, False),
        ("a>5", {}, False),
        ("a<5", {"a": "-10"}, True),
        ("a<5", {"a": "+4"}, True),
        ("a=b,c", {"a": "b"}, False),
        ("a=b,c", {"a": "b", "c": "1"}, True),
        ("", {}, True),
    ],
)
def test_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_matches_none_labels() -> None:
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)


def test_requires_exact_match_and_add() -> None:
    sel = parse_label_selector("a=b,c in (d),e in (f,g)")
    assert sel.requires_exact_match("a") == "b"
    assert sel.requires_exact_match("c") == "d"
    assert sel.requires_exact_match("e") is None
    assert sel.requires_exact_match("zzz") is None
    added = sel.add(Requirement("z", EXISTS))
    assert str(added) == "a=b,c in (d),e in (f,g),z"
    assert nothing().add(Requirement("z", EXISTS)) == nothing()


def test_selector_is_immutable_and_hashable() -> None:
    sel = parse_label_selector("a=b")
    with pytest.raises(AttributeError):
        sel.requirements = ()  # type: ignore[misc]
    assert {sel: 1}[parse_label_selector("a=b")] == 1
    assert parse_label_selector("a in (x,y)") == parse_label_selector("a in (y,x)")


def test_new_requirement_errors() -> None:
    with pytest.raises(SelectorParseError, match="exact-match compatibility requires one"):
        new_requirement("a", EQUALS, ["x", "y"])
    with pytest.raises(SelectorParseError, match="values set must be empty"):
        new_requirement("a", EXISTS, ["x"])
    with pytest.raises(SelectorParseError, match=r"Unsupported value: \"bogus\""):
        new_requirement("a", "bogus", [])
    with pytest.raises(SelectorParseError) as exc:
        new_requirement("A_", EQUALS, ["-x"])
    # Two errors aggregate into brackets.
    assert str(exc.value).startswith("[key: Invalid value: \"A_\"")


# --- metav1.LabelSelector -----------------------------------------------------------------


def test_from_label_selector() -> None:
    assert selector_from_label_selector(None) == nothing()
    assert selector_from_label_selector({}).empty
    assert selector_from_label_selector({"matchLabels": {}, "matchExpressions": []}).empty
    sel = selector_from_label_selector({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe", "be"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "x", "operator": "Exists"},
            {"key": "y", "operator": "DoesNotExist"},
        ],
    })
    assert str(sel) == "app=web,env notin (prod),tier in (be,fe),x,!y"
    assert sel.matches({"app": "web", "tier": "fe", "x": "1"})
    assert not sel.matches({"app": "web", "tier": "fe", "x": "1", "y": "1"})
    assert not sel.matches({"app": "web", "tier": "fe", "x": "1", "env": "prod"})


def test_from_label_selector_errors() -> None:
    with pytest.raises(SelectorParseError) as exc:
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "Gt"}]})
    assert str(exc.value) == '"Gt" is not a valid label selector operator'
    with pytest.raises(SelectorParseError) as exc:
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "In"}]})
    assert str(exc.value) == ("values: Invalid value: []string{}: for 'in', 'notin' operators, "
                              "values set can't be empty")
    with pytest.raises(SelectorParseError, match="key: Invalid value"):
        selector_from_label_selector({"matchLabels": {"bad key": "x"}})


def test_selector_from_set() -> None:
    assert selector_from_set(None).empty
    assert selector_from_set({}).empty
    sel = selector_from_set({"b": "2", "a": "1"})
    assert str(sel) == "a=1,b=2"
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})


# --- properties ---------------------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c", "x.io/d", "in", "notin"])
_VALUES = st.sampled_from(["", "1", "v", "w", "10", "in"])
# Gt/Lt bounds must also be valid label values, so no sign.
_INTS = st.integers(min_value=0, max_value=20).map(str)
_LABEL_INTS = st.integers(min_value=-20, max_value=20).map(str)


@st.composite
def _requirements(draw: st.DrawFn) -> Requirement:
    key = draw(_KEYS)
    op = draw(st.sampled_from([EQUALS, DOUBLE_EQUALS, NOT_EQUALS, IN, NOT_IN, EXISTS,
                               DOES_NOT_EXIST, GREATER_THAN, LESS_THAN]))
    if op in (EXISTS, DOES_NOT_EXIST):
        values: list[str] = []
    elif op in (GREATER_THAN, LESS_THAN):
        values = [draw(_INTS)]
    elif op in (IN, NOT_IN):
        values = sorted(set(draw(st.lists(_VALUES, min_size=1, max_size=3))))
    else:
        values = [draw(_VALUES)]
    return new_requirement(key, op, values)


_SELECTORS = st.lists(_requirements(), max_size=4).map(LabelSelector)
_LABELS = st.dictionaries(_KEYS, st.one_of(_VALUES, _LABEL_INTS), max_size=6)


def _reference_match(sel: LabelSelector, labels: dict[str, str]) -> bool:
    """A direct transcription of upstream's Requirement.Matches."""
    for r in sel.requirements:
        has = r.key in labels
        val = labels.get(r.key)
        if r.operator in (IN, EQUALS, DOUBLE_EQUALS):
            ok = has and val in r.values
        elif r.operator in (NOT_IN, NOT_EQUALS):
            ok = not has or val not in r.values
        elif r.operator == EXISTS:
            ok = has
        elif r.operator == DOES_NOT_EXIST:
            ok = not has
        else:
            try:
                n = int(val) if val is not None else None
            except ValueError:
                n = None
            bound = int(r.values[0])
            ok = n is not None and (n > bound if r.operator == GREATER_THAN else n < bound)
        if not ok:
            return False
    return True


@given(_SELECTORS, _LABELS)
def test_matches_agrees_with_reference(sel: LabelSelector, labels: dict[str, str]) -> None:
    assert sel.matches(labels) == _reference_match(sel, labels)


@given(_SELECTORS, st.lists(_LABELS, max_size=5))
def test_round_trip_preserves_semantics(sel: LabelSelector, label_sets: list[dict[str, str]]
                                        ) -> None:
    text = str(sel)
    again = parse_label_selector(text)
    assert again == sel
    assert str(again) == text
    for labels in label_sets:
        assert again.matches(labels) == sel.matches(labels)


@given(st.text(alphabet="ab=!,() inotx<>1\t", max_size=20))
def test_parser_never_crashes(text: str) -> None:
    try:
        sel = parse_label_selector(text)
    except SelectorParseError:
        return
    # Whatever parses has a canonical form that parses to the same selector.
    assert parse_label_selector(str(sel)) == sel


def test_converted_selectors_are_shared_and_errors_repeat() -> None:
    d = {"matchLabels": {"app": "web"},
         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}
    first = selector_from_label_selector(d)
    again = selector_from_label_selector({"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["a", "b"]}]})
    assert again == first
    assert str(again) == "app=web,tier in (a,b)"
    assert not selector_from_label_selector({"matchLabels": {"app": "db"}}).matches({"app": "web"})
    for _ in range(2):  # a rejected selector is rejected every time
        with pytest.raises(SelectorParseError, match="key: Invalid value"):
            selector_from_label_selector({"matchLabels": {"bad key": "x"}})
    # Values that are not strings take the unmemoized path, as before.
    sel = selector_from_label_selector({"matchLabels": {"a": ""}, "matchExpressions": [
        {"key": "b", "operator": "Exists", "values": None}]})
    assert str(sel) == "a=,b"
