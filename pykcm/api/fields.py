"""Field selectors, as apimachinery's pkg/fields defines them.

A client sends ``fieldSelector=spec.nodeName=node-1,status.phase!=Running``.
:func:`parse_field_selector` splits it on unescaped commas, sorts the terms
(as upstream does, so the canonical form is deterministic), splits each term
at its first operator (``!=``, ``==`` or ``=``) and unescapes the value
(``\\,``, ``\\=`` and ``\\\\`` are the only escapes). The result is an
immutable :class:`FieldSelector`; the API server checks its fields against the
kind's supported set (``pykcm.apiserver.registry.selectable_fields``) and then calls
:meth:`FieldSelector.matches` with each object's field set. A field absent
from the set reads as the empty string, as in upstream's ``fields.Set``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.labels import SelectorParseError

__all__ = [
    "EQUALS",
    "NOT_EQUALS",
    "FieldSelector",
    "SelectorParseError",
    "escape_value",
    "everything",
    "parse_field_selector",
    "selector_from_set",
    "unescape_value",
]

EQUALS: Final = "="
NOT_EQUALS: Final = "!="
# Order matters: the first operator found at the earliest position wins, and
# "!=" / "==" must be tried before "=".
_TERM_OPERATORS: Final = ("!=", "==", "=")


def escape_value(s: str) -> str:
    """EscapeValue: escape the characters that are special in a selector value."""
    return s.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(s: str) -> str:
    """UnescapeValue: undo escape_value; unknown escapes and bare ',' '=' are errors."""
    if "\\" not in s and "," not in s and "=" not in s:
        return s
    out: list[str] = []
    in_slash = False
    for c in s:
        if in_slash:
            if c in ("\\", ",", "="):
                out.append(c)
            else:
                raise SelectorParseError(
                    f"invalid field selector: invalid escape sequence: \\{c}")
            in_slash = False
            continue
        if c == "\\":
            in_slash = True
        elif c in (",", "="):
            # Go prints the rune with %v, i.e. as its code point.
            raise SelectorParseError(
                f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise SelectorParseError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(s: str) -> list[str]:
    terms: list[str] = []
    start = 0
    in_slash = False
    for i, c in enumerate(s):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(s[start:i])
            start = i + 1
    terms.append(s[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in _TERM_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


class FieldSelector:
    """An AND of ``field = value`` / ``field != value`` terms; immutable.

    ``requirements`` holds (field, op, value) with op "=" (for both "=" and
    "==") or "!=".
    """

    __slots__ = ("_eq", "_ne", "requirements")

    requirements: tuple[tuple[str, str, str], ...]
    _eq: tuple[tuple[str, str], ...]
    _ne: tuple[tuple[str, str], ...]

    def __init__(self, requirements: tuple[tuple[str, str, str], ...] = ()) -> None:
        object.__setattr__(self, "requirements", tuple(requirements))
        object.__setattr__(self, "_eq", tuple((f, v) for f, op, v in requirements if op == EQUALS))
        object.__setattr__(self, "_ne", tuple((f, v) for f, op, v in requirements if op != EQUALS))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FieldSelector is immutable")

    @property
    def empty(self) -> bool:
        return not self.requirements

    def fields(self) -> frozenset[str]:
        """The field names the selector refers to."""
        return frozenset(f for f, _, _ in self.requirements)

    def matches(self, fields: Mapping[str, str]) -> bool:
        get = fields.get
        for f, v in self._eq:
            if get(f, "") != v:
                return False
        for f, v in self._ne:
            if get(f, "") == v:
                return False
        return True

    __call__ = matches

    def requires_exact_match(self, field: str) -> str | None:
        """The value the selector pins `field` to with an equality term, if any."""
        for f, op, v in self.requirements:
            if f == field and op == EQUALS:
                return v
        return None

    def __str__(self) -> str:
        return ",".join(f"{f}{op}{escape_value(v)}" for f, op, v in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    # Equality ignores term order: an AND does not depend on it.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelector):
            return NotImplemented
        return sorted(self.requirements) == sorted(other.requirements)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.requirements)))


_EVERYTHING: Final = FieldSelector()


def everything() -> FieldSelector:
    return _EVERYTHING


def selector_from_set(fields: Mapping[str, str] | None) -> FieldSelector:
    """fields.SelectorFromSet: equality on every pair, sorted by field."""
    if not fields:
        return _EVERYTHING
    return FieldSelector(tuple((k, EQUALS, fields[k]) for k in sorted(fields)))


def parse_field_selector(s: str) -> FieldSelector:
    """fields.ParseSelector; raises SelectorParseError with upstream's message."""
    if not s:
        return _EVERYTHING
    reqs: list[tuple[str, str, str]] = []
    for part in sorted(_split_terms(s)):
        if part == "":
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorParseError(f"invalid selector: '{s}'; can't understand '{part}'")
        lhs, op, rhs = split
        reqs.append((lhs, NOT_EQUALS if op == "!=" else EQUALS, unescape_value(rhs)))
    return FieldSelector(tuple(reqs))
