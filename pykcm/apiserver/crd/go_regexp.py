"""Go's regexp for user-supplied patterns: RE2 semantics, linear-time matching, Go's messages.

CRD schemas carry `pattern` regular expressions that kube-apiserver compiles
with Go's `regexp` package, an RE2 engine: matching takes time linear in the
input whatever the pattern, and Perl-only syntax (look-around,
backreferences) does not compile. Python's `re` backtracks: `^(a+)+$` against
28 `a` and a `!` held the event loop for seconds. This module compiles such
patterns with Google's RE2 (the `google-re2` package) and words compile errors
as Go's `regexp/syntax` does (`error parsing regexp: missing closing ): `(``),
because CRD validation passes them on to clients.

Data flow: crd_strategy / crd_schema hand a pattern string to :func:`compile`,
get a `GoRegexp` (cached per pattern) whose :meth:`GoRegexp.search` is Go's
`MatchString`, or a :class:`GoRegexpError` with Go's message.

Deliberate deviations: RE2's C++ dialect accepts `\\C` (any byte), Go's does
not; the fragment quoted in a message is RE2's, which is Go's in every case
the differential tests cover.
"""

from __future__ import annotations

import functools
from typing import Any

import re2  # type: ignore[import-untyped]

__all__ = ["GoRegexp", "GoRegexpError", "compile"]

# RE2's error code texts → Go's regexp/syntax ErrorCode texts.
_GO_CODES = (
    ("missing ]", "missing closing ]"),
    ("missing )", "missing closing )"),
    ("unexpected )", "unexpected )"),
    ("bad repetition operator", "invalid nested repetition operator"),
    ("invalid perl operator", "invalid or unsupported Perl syntax"),
    ("invalid repetition size", "invalid repeat count"),
    ("no argument for repetition operator", "missing argument to repetition operator"),
    ("invalid character class range", "invalid character class range"),
    ("invalid character class", "invalid character class"),
    ("invalid escape sequence", "invalid escape sequence"),
    ("invalid named capture group", "invalid named capture"),
    ("invalid UTF-8", "invalid UTF-8"),
    ("trailing \\", "trailing backslash at end of expression"),
    ("pattern too large", "expression too large"),
)

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern on stderr


class GoRegexpError(ValueError):
    """A pattern Go's regexp.Compile refuses; str() is Go's error text."""


class GoRegexp:
    """A compiled pattern; `search` answers Go's `MatchString` (unanchored)."""

    __slots__ = ("_re", "pattern")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._re = compiled

    def search(self, text: str) -> bool:
        return self._re.search(text) is not None


def _go_message(raw: str) -> str:
    code, _, arg = raw.partition(": ")
    for re2_code, go_code in _GO_CODES:
        if code.startswith(re2_code):
            if re2_code == "trailing \\":
                return f"error parsing regexp: {go_code}: ``"
            return f"error parsing regexp: {go_code}: `{arg}`"
    return f"error parsing regexp: {raw}"


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> GoRegexp | str:
    try:
        return GoRegexp(pattern, re2.compile(pattern, _OPTIONS))
    except re2.error as exc:
        arg = exc.args[0] if exc.args else ""
        raw = arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)
        return _go_message(raw)


def compile(pattern: str) -> GoRegexp:
    """Go's regexp.Compile; raises GoRegexpError with Go's message."""
    got = _compile(pattern)
    if isinstance(got, str):
        raise GoRegexpError(got)
    return got
