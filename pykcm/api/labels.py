"""Label selectors, as apimachinery's pkg/labels defines them.

A selector arrives in one of two shapes: the string form a client puts in a
`labelSelector=` query parameter (``app=web,tier in (a,b),!canary``), or the
metav1.LabelSelector dict a workload carries in ``spec.selector``
(``matchLabels`` + ``matchExpressions``). Both are turned into the same
immutable :class:`LabelSelector`: a sorted tuple of :class:`Requirement`.

Data flow: ``parse_label_selector`` lexes the string, parses requirements with
upstream's recursive-descent grammar and validates every key (qualified name)
and value (label value); ``selector_from_label_selector`` converts the dict.
On construction the selector compiles its requirements into per-operator
tuples, so :meth:`LabelSelector.matches` -- run for every object on every
watch event and list -- is a handful of dict lookups with no allocation.
``str(selector)`` gives the canonical string (requirements sorted by key,
multi-value sets sorted), which parses back to an equal selector.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pykcm.api.validation import go_quote as _go_quote
from pykcm.api.validation import is_qualified_name, is_valid_label_value

__all__ = [
    "DOES_NOT_EXIST",
    "DOUBLE_EQUALS",
    "EQUALS",
    "EXISTS",
    "GREATER_THAN",
    "IN",
    "LESS_THAN",
    "NOT_EQUALS",
    "NOT_IN",
    "LabelSelector",
    "Requirement",
    "SelectorParseError",
    "everything",
    "go_label_selector_string",
    "new_requirement",
    "nothing",
    "parse_label_selector",
    "selector_from_label_selector",
    "selector_from_set",
]


class SelectorParseError(ValueError):
    """A label or field selector that cannot be parsed or is invalid.

    The message is the one kube-apiserver puts in its 400 response.
    """


# Operators, spelled as apimachinery's selection.Operator values.
DOES_NOT_EXIST: Final = "!"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
IN: Final = "in"
NOT_EQUALS: Final = "!="
NOT_IN: Final = "notin"
EXISTS: Final = "exists"
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"

_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_UNARY_OPERATORS: Final = (EXISTS, DOES_NOT_EXIST)
_VALID_OPERATORS: Final = _BINARY_OPERATORS + _UNARY_OPERATORS
_EMPTY: Final[Mapping[str, str]] = {}
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


def _parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64): optional sign, ASCII digits only."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not body.isascii() or not body.isdigit():
        return None
    v = int(s)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


class Requirement:
    """One ``key op values`` term; immutable and hashable."""

    __slots__ = ("key", "operator", "values")

    key: str
    operator: str
    values: tuple[str, ...]

    def __init__(self, key: str, operator: str, values: Iterable[str] = ()) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "operator", operator)
        object.__setattr__(self, "values", tuple(values))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Requirement is immutable")

    def _norm(self) -> tuple[str, str, tuple[str, ...]]:
        return (self.key, self.operator, tuple(sorted(set(self.values))))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return self._norm() == other._norm()

    def __hash__(self) -> int:
        return hash(self._norm())

    def __repr__(self) -> str:
        return f"Requirement({self.key!r}, {self.operator!r}, {list(self.values)!r})"

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether this single requirement holds for a label set."""
        return LabelSelector((self,)).matches(labels)

    def __str__(self) -> str:
        op = self.operator
        out = ("!" + self.key) if op == DOES_NOT_EXIST else self.key
        if op in (EXISTS, DOES_NOT_EXIST):
            return out
        sym = {
            EQUALS: "=",
            DOUBLE_EQUALS: "==",
            NOT_EQUALS: "!=",
            IN: " in ",
            NOT_IN: " notin ",
            GREATER_THAN: ">",
            LESS_THAN: "<",
        }.get(op, "")
        vals = self.values
        # Upstream sorts only when there is more than one value (safeSort).
        joined = vals[0] if len(vals) == 1 else ",".join(sorted(vals))
        if op in (IN, NOT_IN):
            return f"{out}{sym}({joined})"
        return f"{out}{sym}{joined}"


def _field_error(path: str, body: str) -> str:
    # field.Error.Error(): "<field>: <body>"; a nil *field.Path prints "<nil>".
    return f"{path}: {body}"


def _validate_key(key: str, path: str) -> str | None:
    errs = is_qualified_name(key)
    if errs:
        return _field_error(path, f"Invalid value: {_go_quote(key)}: " + "; ".join(errs))
    return None


def _aggregate(errs: list[str]) -> str:
    # utilerrors.NewAggregate(...).Error(): deduplicated, bracketed when > 1.
    seen: list[str] = []
    for e in errs:
        if e not in seen:
            seen.append(e)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def _go_string_slice(vals: Iterable[str]) -> str:
    return "[]string{" + ", ".join(_go_quote(v) for v in vals) + "}"


def new_requirement(key: str, operator: str, values: Iterable[str] = ()) -> Requirement:
    """labels.NewRequirement: build a validated requirement or raise SelectorParseError."""
    vals = list(values)
    errs: list[str] = []
    e = _validate_key(key, "key")
    if e:
        errs.append(e)
    if operator in (IN, NOT_IN):
        if not vals:
            errs.append(_field_error("values", f"Invalid value: {_go_string_slice(vals)}: "
                                     "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(vals) != 1:
            errs.append(_field_error("values", f"Invalid value: {_go_string_slice(vals)}: "
                                     "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            errs.append(_field_error("values", f"Invalid value: {_go_string_slice(vals)}: "
                                     "values set must be empty for exists and does not exist"))
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            errs.append(_field_error("values", f"Invalid value: {_go_string_slice(vals)}: "
                                     "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(vals):
            if _parse_int64(v) is None:
                errs.append(_field_error(f"values[{i}]", f"Invalid value: {_go_quote(v)}: "
                                         "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        supported = ", ".join(_go_quote(o) for o in _VALID_OPERATORS)
        errs.append(_field_error("operator", f"Unsupported value: {_go_quote(operator)}: "
                                 f"supported values: {supported}"))
    for i, v in enumerate(vals):
        verrs = is_valid_label_value(v)
        if verrs:
            errs.append(_field_error(f"values[{i}][{key}]",
                                     f"Invalid value: {_go_quote(v)}: " + "; ".join(verrs)))
    if errs:
        raise SelectorParseError(_aggregate(errs))
    return Requirement(key, operator, vals)


class LabelSelector:
    """An AND of requirements (or the selector that matches nothing).

    Immutable; equal selectors compare and hash equal. ``empty`` is true for
    the selector that matches everything (no requirements).
    """

    __slots__ = (
        "_eq",
        "_exists",
        "_gtlt",
        "_in",
        "_ne",
        "_not_exists",
        "_nothing",
        "_notin",
        "requirements",
    )

    requirements: tuple[Requirement, ...]
    _nothing: bool
    _eq: tuple[tuple[str, str], ...]
    _ne: tuple[tuple[str, str], ...]
    _in: tuple[tuple[str, frozenset[str]], ...]
    _notin: tuple[tuple[str, frozenset[str]], ...]
    _exists: tuple[str, ...]
    _not_exists: tuple[str, ...]
    _gtlt: tuple[tuple[str, bool, int | None], ...]

    def __init__(self, requirements: Iterable[Requirement] = (), *, _nothing: bool = False) -> None:
        # Upstream sorts by key (deterministic String()); a stable sort keeps
        # same-key requirements in the order given.
        reqs = tuple(sorted(requirements, key=lambda r: r.key))
        object.__setattr__(self, "requirements", reqs)
        object.__setattr__(self, "_nothing", _nothing)
        eq: list[tuple[str, str]] = []
        ne: list[tuple[str, str]] = []
        in_: list[tuple[str, frozenset[str]]] = []
        notin: list[tuple[str, frozenset[str]]] = []
        exists: list[str] = []
        not_exists: list[str] = []
        gtlt: list[tuple[str, bool, int | None]] = []
        for r in reqs:
            op = r.operator
            if op in (EQUALS, DOUBLE_EQUALS) and len(r.values) == 1:
                eq.append((r.key, r.values[0]))
            elif op in (IN, EQUALS, DOUBLE_EQUALS):
                in_.append((r.key, frozenset(r.values)))
            elif op == NOT_EQUALS and len(r.values) == 1:
                ne.append((r.key, r.values[0]))
            elif op in (NOT_IN, NOT_EQUALS):
                notin.append((r.key, frozenset(r.values)))
            elif op == EXISTS:
                exists.append(r.key)
            elif op == DOES_NOT_EXIST:
                not_exists.append(r.key)
            elif op in (GREATER_THAN, LESS_THAN):
                bound = _parse_int64(r.values[0]) if len(r.values) == 1 else None
                gtlt.append((r.key, op == GREATER_THAN, bound))
            else:
                # An unknown operator matches nothing, as upstream's default case.
                object.__setattr__(self, "_nothing", True)
        object.__setattr__(self, "_eq", tuple(eq))
        object.__setattr__(self, "_ne", tuple(ne))
        object.__setattr__(self, "_in", tuple(in_))
        object.__setattr__(self, "_notin", tuple(notin))
        object.__setattr__(self, "_exists", tuple(exists))
        object.__setattr__(self, "_not_exists", tuple(not_exists))
        object.__setattr__(self, "_gtlt", tuple(gtlt))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("LabelSelector is immutable")

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (matches everything)."""
        return not self._nothing and not self.requirements

    @property
    def is_nothing(self) -> bool:
        """True for the selector that matches no object (a nil metav1.LabelSelector)."""
        return bool(self._nothing)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        if labels is None:
            labels = _EMPTY
        get = labels.get
        # A missing key reads as None, which equals no string: that gives
        # In/= "must exist" and NotIn/!= "absent is fine" with one lookup.
        for k, v in self._eq:
            if get(k) != v:
                return False
        for k in self._exists:
            if k not in labels:
                return False
        for k, vs in self._in:
            if get(k) not in vs:
                return False
        for k, v in self._ne:
            if get(k) == v:
                return False
        for k, vs in self._notin:
            if get(k) in vs:
                return False
        for k in self._not_exists:
            if k in labels:
                return False
        for k, gt, bound in self._gtlt:
            val = get(k)
            if val is None or bound is None:
                return False
            n = _parse_int64(val)
            if n is None or not (n > bound if gt else n < bound):
                return False
        return True

    __call__ = matches

    def add(self, *reqs: Requirement) -> LabelSelector:
        """A new selector with extra requirements (Nothing stays Nothing)."""
        if self._nothing:
            return self
        return LabelSelector(self.requirements + reqs)

    def requires_exact_match(self, label: str) -> str | None:
        """The single value the selector requires for `label`, if it pins one."""
        for r in self.requirements:
            if r.key == label:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        if self._nothing:
            return ""
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        if self._nothing:
            return "LabelSelector(<nothing>)"
        return f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self._nothing == other._nothing and self.requirements == other.requirements

    def __hash__(self) -> int:
        return hash((self._nothing, self.requirements))


_EVERYTHING: Final = LabelSelector()
_NOTHING: Final = LabelSelector(_nothing=True)


def everything() -> LabelSelector:
    """The selector that matches every label set."""
    return _EVERYTHING


def nothing() -> LabelSelector:
    """The selector that matches no label set."""
    return _NOTHING


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    """labels.SelectorFromSet: equality on every pair; empty/None selects everything.

    Like upstream, the pairs are not validated.
    """
    if not labels:
        return _EVERYTHING
    return LabelSelector(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


# --- the string parser -------------------------------------------------------

# Token kinds.
_ERROR, _EOS, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(14)

_STRING_TO_TOKEN: Final = {
    ")": _CLOSE,
    ",": _COMMA,
    "!": _NOT,
    "==": _DEQ,
    "=": _EQ,
    ">": _GT,
    "in": _IN,
    "<": _LT,
    "!=": _NEQ,
    "notin": _NOTIN,
    "(": _OPEN,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[int, str]]:
    # Upstream's lexer reads a NUL byte as the end of input.
    s = s.split("\x00", 1)[0]
    items: list[tuple[int, str]] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _WHITESPACE:
            i += 1
        if i >= n:
            items.append((_EOS, ""))
            return items
        ch = s[i]
        if ch in _SPECIAL:
            # Longest run of special characters that is still a token ("!=", "==").
            j = i + 1
            tok, lit = _STRING_TO_TOKEN[ch], ch
            if j < n and s[j] in _SPECIAL and (ch + s[j]) in _STRING_TO_TOKEN:
                tok, lit = _STRING_TO_TOKEN[ch + s[j]], ch + s[j]
                j += 1
            items.append((tok, lit))
            i = j
        else:
            j = i
            while j < n and s[j] not in _SPECIAL and s[j] not in _WHITESPACE:
                j += 1
            word = s[i:j]
            items.append((_STRING_TO_TOKEN.get(word, _ID), word))
            i = j


class _Parser:
    __slots__ = ("items", "pos")

    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        self.pos = 0

    # In the Values context "in"/"notin" are ordinary identifiers (`x in (in)`).
    def lookahead(self, values_ctx: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values_ctx and tok in (_IN, _NOTIN):
            tok = _ID
        return tok, lit

    def consume(self, values_ctx: bool) -> tuple[int, str]:
        tok, lit = self.lookahead(values_ctx)
        self.pos += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_ID, _NOT):
                try:
                    reqs.append(self.parse_requirement())
                except SelectorParseError as e:
                    raise SelectorParseError(f"unable to parse requirement: {e}") from None
                t, lt = self.consume(True)
                if t == _EOS:
                    return reqs
                if t == _COMMA:
                    t2, l2 = self.lookahead(True)
                    if t2 not in (_ID, _NOT):
                        raise SelectorParseError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise SelectorParseError(f"found '{lt}', expected: ',' or 'end of string'")
            elif tok == _EOS:
                return reqs
            else:
                raise SelectorParseError(
                    f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op in (EXISTS, DOES_NOT_EXIST):
            return new_requirement(key, op, [])
        op = self.parse_operator()
        if op in (IN, NOT_IN):
            values = self.parse_values()
        else:
            values = self.parse_exact_value()
        return new_requirement(key, op, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume(True)
        if tok == _NOT:
            op = DOES_NOT_EXIST
            tok, lit = self.consume(True)
        if tok != _ID:
            raise SelectorParseError(f"found '{lit}', expected: identifier")
        err = _validate_key(lit, "<nil>")
        if err:
            raise SelectorParseError(err)
        t, _ = self.lookahead(True)
        if t in (_EOS, _COMMA) and op != DOES_NOT_EXIST:
            op = EXISTS
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(False)
        op = {
            _IN: IN, _EQ: EQUALS, _DEQ: DOUBLE_EQUALS, _GT: GREATER_THAN, _LT: LESS_THAN,
            _NOTIN: NOT_IN, _NEQ: NOT_EQUALS,
        }.get(tok)
        if op is None:
            raise SelectorParseError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return op

    def parse_values(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok != _OPEN:
            raise SelectorParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_ID, _COMMA):
            s = self.parse_identifiers_list()
            t, _ = self.consume(True)
            if t != _CLOSE:
                # Upstream reports the literal it looked at before the list.
                raise SelectorParseError(f"found '{lit}', expected: ')'")
            return s
        if tok == _CLOSE:
            self.consume(True)
            return {""}
        raise SelectorParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        s: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok == _ID:
                s.add(lit)
                t2, l2 = self.lookahead(True)
                if t2 == _COMMA:
                    continue
                if t2 == _CLOSE:
                    return s
                raise SelectorParseError(f"found '{l2}', expected: ',' or ')'")
            if tok == _COMMA:
                # "(," ",)" and ",," each stand for an empty value.
                if not s:
                    s.add("")
                t2, _ = self.lookahead(True)
                if t2 == _CLOSE:
                    s.add("")
                    return s
                if t2 == _COMMA:
                    self.consume(True)
                    s.add("")
                continue
            raise SelectorParseError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        tok, _ = self.lookahead(True)
        if tok in (_EOS, _COMMA):
            return {""}
        tok, lit = self.consume(True)
        if tok == _ID:
            return {lit}
        raise SelectorParseError(f"found '{lit}', expected: identifier")


def parse_label_selector(s: str) -> LabelSelector:
    """labels.Parse: the string form of a selector; "" selects everything."""
    if not s:
        return _EVERYTHING
    return LabelSelector(_Parser(s).parse())


_METAV1_OPS: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


_COMPILED_MAX_ENTRIES: Final = 1024
_COMPILED_MAX_CHARS: Final = 2048
# Workload validation converts the same few selectors on every write; a
# LabelSelector is immutable, so converted ones are shared (bounded memo).
_compiled: dict[tuple[Any, ...], LabelSelector] = {}


def _selector_memo_key(match_labels: Any, match_exprs: Any) -> tuple[Any, ...] | None:
    """A hashable key for a wire-form selector made of plain strings, else None."""
    if match_labels.__class__ is not dict or match_exprs.__class__ is not list:
        return None
    size = 0
    labels = tuple(match_labels.items())
    for k, v in labels:
        if k.__class__ is not str or v.__class__ is not str:
            return None
        size += len(k) + len(v)
    exprs: list[tuple[str, str, tuple[str, ...]]] = []
    for expr in match_exprs:
        if expr.__class__ is not dict:
            return None
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = expr.get("values") or []
        if key.__class__ is not str or op.__class__ is not str or values.__class__ is not list:
            return None
        for v in values:
            if v.__class__ is not str:
                return None
            size += len(v)
        size += len(key) + len(op)
        exprs.append((key, op, tuple(values)))
    if size > _COMPILED_MAX_CHARS:
        return None
    return labels, tuple(exprs)


def selector_from_label_selector(d: Mapping[str, Any] | None) -> LabelSelector:
    """metav1.LabelSelectorAsSelector.

    None selects nothing, an empty selector selects everything; invalid keys,
    values or operators raise SelectorParseError.
    """
    if d is None:
        return _NOTHING
    match_labels = d.get("matchLabels") or {}
    match_exprs = d.get("matchExpressions") or []
    if not match_labels and not match_exprs:
        return _EVERYTHING
    key = _selector_memo_key(match_labels, match_exprs)
    if key is None:
        return _convert_label_selector(match_labels, match_exprs)
    sel = _compiled.get(key)
    if sel is None:
        sel = _convert_label_selector(match_labels, match_exprs)  # errors are not kept
        if len(_compiled) >= _COMPILED_MAX_ENTRIES:
            _compiled.clear()
        _compiled[key] = sel
    return sel


def _convert_label_selector(match_labels: Any, match_exprs: Any) -> LabelSelector:
    reqs: list[Requirement] = []
    for k, v in match_labels.items():
        reqs.append(new_requirement(k, EQUALS, [v]))
    for expr in match_exprs:
        op_name = expr.get("operator", "")
        op = _METAV1_OPS.get(op_name)
        if op is None:
            raise SelectorParseError(f"{_go_quote(op_name)} is not a valid label selector operator")
        reqs.append(new_requirement(expr.get("key", ""), op, list(expr.get("values") or [])))
    return LabelSelector(reqs)


def go_label_selector_string(sel: Mapping[str, Any] | None) -> str:
    """``%v`` of a ``*metav1.LabelSelector`` (its generated ``String()``): the disruption
    controller's messages, the admission policy bindings' ParamRef column."""
    if sel is None:
        return "nil"
    labels = sel.get("matchLabels") or {}
    exprs = sel.get("matchExpressions") or []
    ml = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    me = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in e.get('values') or [])}],}},"
        for e in exprs)
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{ml}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{me}}},}}")
