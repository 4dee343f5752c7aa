"""Errors raised by the patch library, and Go-style value formatting for their messages.

Every patch function raises a subclass of :class:`PatchError`. Each error
carries the HTTP status kube-apiserver answers for it (``http_status``), so
the API server's PATCH handler turns an exception into a ``Status`` without
a table of its own. Messages follow upstream's wording (evanphx/json-patch,
apimachinery ``mergepatch``/``strategicpatch``); those embed Go's ``%v``
rendering of JSON values, which :func:`go_repr` reproduces.
"""

from __future__ import annotations

from typing import Any


class PatchError(ValueError):
    """A patch could not be applied. ``http_status`` is the code kube-apiserver uses."""

    default_status = 422

    def __init__(self, message: str, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.http_status = self.default_status if http_status is None else http_status


class InvalidPatchError(PatchError):
    """The patch document is malformed, or it does not apply to the target document.

    ``http_status`` is 400 when the document itself cannot be decoded as a
    patch of its type, 415 when strategic merge patch is asked for a kind
    without a schema, and 422 when a well-formed patch does not apply.
    """


class PatchTestFailedError(PatchError):
    """A JSON Patch ``test`` operation did not match (kube-apiserver answers 422)."""


class PatchConflictError(InvalidPatchError):
    """A patch value's JSON type contradicts the schema, e.g. a list where an object belongs.

    Upstream replaces the value and then fails to decode the patched object
    into its Go type; this library reports the same mistake earlier, with the
    field path, so nothing half-patched is ever produced.
    """


def go_type(value: Any) -> str:
    """The Go type name ``reflect.TypeOf`` prints for a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "string"


def go_repr(value: Any) -> str:
    """Render a JSON value like Go's ``fmt.Sprintf("%v", v)`` on ``interface{}`` data."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        # fmt prints map keys sorted.
        inner = " ".join(f"{k}:{go_repr(value[k])}" for k in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(go_repr(v) for v in value) + "]"
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e21:
            return str(int(value))
        return repr(value).replace("e+0", "e+").replace("e-0", "e-")
    return str(value)
