"""Go's encoding/json syntax-error messages, as kube-apiserver quotes them."""

from __future__ import annotations

import pytest

from pykcm.apiserver.serializer.go_json import quote_char, syntax_error


@pytest.mark.parametrize(("data", "message"), [
    (b'{"a": 1}', None),
    (b"{bad", "invalid character 'b' looking for beginning of object key string"),
    (b'{"metadata": {"name": "x"', "unexpected end of JSON input"),
    (b"", "unexpected end of JSON input"),
    (b'{"a":1 x', "invalid character 'x' after object key:value pair"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b"[1 2]", "invalid character '2' after array element"),
    (b"nul", "unexpected end of JSON input"),
    (b"nulx", "invalid character 'x' in literal null (expecting 'l')"),
    (b"\x9e\xe9", "invalid character '\\x9e' looking for beginning of value"),
    (b"{} {}", "invalid character '{' after top-level value"),
])
def test_syntax_error(data: bytes, message: str | None) -> None:
    assert syntax_error(data) == message


def test_quote_char() -> None:
    assert [quote_char(c) for c in (ord("b"), 0x27, 0x22, 10, 0, 0x5C, 0x9E)] == [
        "'b'", "'\\''", "'\"'", "'\\n'", "'\\x00'", "'\\\\'", "'\\x9e'"]
