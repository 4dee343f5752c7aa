"""Go's encoding/json syntax-error messages, for the Status bodies that quote them.

kube-apiserver decodes bodies, patches and continue tokens with Go's
encoding/json and passes its error text through ("error decoding patch:
invalid character 'b' looking for beginning of object key string"). pykcm
decodes with orjson, whose messages differ, so this module re-scans a
document that failed to parse and names the first error the way Go's scanner
(encoding/json/scanner.go) does. It only describes errors; it never decodes.
"""

from __future__ import annotations

__all__ = ["quote_char", "syntax_error"]

_WS = b" \t\r\n"


def quote_char(c: int) -> str:
    """Go's quoteChar: one byte as strconv.Quote shows it ('x', '\\'', '"', '\\n',
    '\\x00'; a byte of 0x80 and above is not UTF-8 on its own: '\\x9e')."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    if 0x20 <= c < 0x7F:
        return "'\\\\'" if c == 0x5C else f"'{chr(c)}'"
    named = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r"}
    if c in named:
        return f"'\\{named[c]}'"
    return f"'\\x{c:02x}'"


class _Err(Exception):
    pass


class _Scanner:
    def __init__(self, data: bytes) -> None:
        self.d = data
        self.i = 0

    def peek(self) -> int | None:
        return self.d[self.i] if self.i < len(self.d) else None

    def ws(self) -> None:
        while self.i < len(self.d) and self.d[self.i] in _WS:
            self.i += 1

    def fail(self, context: str) -> _Err:
        c = self.peek()
        if c is None:
            return _Err("unexpected end of JSON input")
        return _Err(f"invalid character {quote_char(c)} {context}")

    def value(self) -> None:
        self.ws()
        c = self.peek()
        if c == 0x7B:  # {
            self.obj()
        elif c == 0x5B:  # [
            self.arr()
        elif c == 0x22:
            self.string()
        elif c is not None and (c == 0x2D or 0x30 <= c <= 0x39):
            self.number()
        elif c is not None and c in b"tfn":
            self.literal()
        else:
            raise self.fail("looking for beginning of value")

    def literal(self) -> None:
        for word in (b"true", b"false", b"null"):
            if self.d[self.i] == word[0]:
                for ch in word:
                    if self.peek() != ch:
                        raise self.fail(f"in literal {word.decode()} (expecting "
                                        f"{quote_char(ch)})")
                    self.i += 1
                return

    def number(self) -> None:
        if self.peek() == 0x2D:
            self.i += 1
            c = self.peek()
            if c is None or not 0x30 <= c <= 0x39:
                raise self.fail("in numeric literal")
        if self.peek() == 0x30:
            self.i += 1
        else:
            while (c := self.peek()) is not None and 0x30 <= c <= 0x39:
                self.i += 1
        if self.peek() == 0x2E:  # .
            self.i += 1
            c = self.peek()
            if c is None or not 0x30 <= c <= 0x39:
                raise self.fail("after decimal point in numeric literal")
            while (c := self.peek()) is not None and 0x30 <= c <= 0x39:
                self.i += 1
        if self.peek() in (0x65, 0x45):  # e E
            self.i += 1
            if self.peek() in (0x2B, 0x2D):
                self.i += 1
            c = self.peek()
            if c is None or not 0x30 <= c <= 0x39:
                raise self.fail("in exponent of numeric literal")
            while (c := self.peek()) is not None and 0x30 <= c <= 0x39:
                self.i += 1

    def string(self) -> None:
        self.i += 1  # opening quote
        while True:
            c = self.peek()
            if c is None:
                raise _Err("unexpected end of JSON input")
            if c == 0x22:
                self.i += 1
                return
            if c < 0x20:
                raise self.fail("in string literal")
            if c == 0x5C:  # backslash
                self.i += 1
                e = self.peek()
                if e is None:
                    raise _Err("unexpected end of JSON input")
                if e == 0x75:  # u
                    self.i += 1
                    for _ in range(4):
                        h = self.peek()
                        if h is None:
                            raise _Err("unexpected end of JSON input")
                        if chr(h) not in "0123456789abcdefABCDEF":
                            raise self.fail("in \\u hexadecimal character escape")
                        self.i += 1
                    continue
                if e not in b'"\\/bfnrt':
                    raise self.fail("in string escape code")
            self.i += 1

    def obj(self) -> None:
        self.i += 1
        self.ws()
        if self.peek() == 0x7D:
            self.i += 1
            return
        while True:
            self.ws()
            if self.peek() != 0x22:
                raise self.fail("looking for beginning of object key string")
            self.string()
            self.ws()
            if self.peek() != 0x3A:
                raise self.fail("after object key")
            self.i += 1
            self.value()
            self.ws()
            c = self.peek()
            if c == 0x2C:
                self.i += 1
                continue
            if c == 0x7D:
                self.i += 1
                return
            raise self.fail("after object key:value pair")

    def arr(self) -> None:
        self.i += 1
        self.ws()
        if self.peek() == 0x5D:
            self.i += 1
            return
        while True:
            self.value()
            self.ws()
            c = self.peek()
            if c == 0x2C:
                self.i += 1
                continue
            if c == 0x5D:
                self.i += 1
                return
            raise self.fail("after array element")


def syntax_error(data: bytes) -> str | None:
    """Go's message for the first syntax error in `data`, None if it is valid JSON."""
    s = _Scanner(data)
    try:
        s.value()
        s.ws()
        if s.peek() is not None:
            raise s.fail("after top-level value")
    except _Err as e:
        return str(e)
    return None
