"""API errors as kube-apiserver reports them: a `metav1.Status` body with a code and reason.

Every failure inside the API server is raised as a `StatusError`; the REST layer
turns it into the HTTP response (or, inside a watch stream, into an ERROR
event). The constructors below reproduce kube-apiserver's message forms
(apimachinery `pkg/api/errors`), because clients match on them.
"""

from __future__ import annotations

from typing import Any

import orjson

from pykcm.api.validation import go_quote


class StatusError(Exception):
    """A failure that becomes a metav1.Status response."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure"}
        # message and reason are omitempty in metav1.Status (a bare 500 has no reason)
        if self.message:
            body["message"] = self.message
        if self.reason:
            body["reason"] = self.reason
        body["code"] = self.code
        if self.details is not None:
            body["details"] = self.details
        return body

    def body(self) -> bytes:
        return orjson.dumps(self.status())


class PageNotFound(Exception):
    """A path no API group serves: kube-apiserver's plain-text `404 page not found`
    (its mux, not an API handler, answers)."""


def _details(name: str | None, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:  # omitempty
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = kind
    d.update(extra)
    return d


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f"{_qualified(resource, group)} {go_quote(name)} not found",
        details=_details(name, group, resource),
    )


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f"{_qualified(resource, group)} {go_quote(name)} already exists",
        details=_details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {_qualified(resource, group)} {go_quote(name)}: {why}",
        details=_details(name, group, resource),
    )


OPTIMISTIC_LOCK_MSG = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, causes: list[dict[str, Any]]) -> StatusError:
    qualified = f"{kind}.{group}" if group else kind
    # ErrorList.ToAggregate() drops repeated messages (the causes keep them all)
    parts = list(dict.fromkeys(_cause_text(c) for c in causes))
    if len(parts) == 1:
        summary = parts[0]
    else:
        summary = "[" + ", ".join(parts) + "]"
    return StatusError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {summary}',
        details=_details(name, group, kind, causes=causes),
    )


def _cause_text(cause: dict[str, Any]) -> str:
    field = cause.get("field")
    msg = str(cause.get("message", ""))
    return f"{field}: {msg}" if field else msg


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def forbidden(resource: str, group: str, name: str, why: str) -> StatusError:
    target = f'{_qualified(resource, group)} "{name}"' if name else _qualified(resource, group)
    return StatusError(
        403, "Forbidden", f"{target} is forbidden: {why}", details=_details(name or None, group,
                                                                             resource)
    )


METHOD_NOT_ALLOWED_MSG = "the server does not allow this method on the requested resource"


def method_not_allowed(message: str = METHOD_NOT_ALLOWED_MSG) -> StatusError:
    # kube-apiserver answers an unregistered verb with a generic response: empty details
    return StatusError(405, "MethodNotAllowed", message, details={})


def generic_invalid() -> StatusError:
    """422 as NewGenericServerResponse builds it (e.g. a JSON patch that does not apply):
    the cause's text is not passed on."""
    return StatusError(422, "Invalid",
                       "the server rejected our request due to an error in our request",
                       details={})


def bare_internal(message: str) -> StatusError:
    """A plain Go error the handler returns as is: 500 without reason or details."""
    return StatusError(500, "", message)


def go_parse_int_error(func: str, value: str) -> str:
    """strconv's message for a number that does not parse (func: ParseInt, ParseUint)."""
    digits = value[1:] if value[:1] in "+-" and func == "ParseInt" else value
    why = ("value out of range" if value and digits.isdigit() and digits.isascii()
           else "invalid syntax")
    return f'strconv.{func}: parsing "{value}": {why}'


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def too_old_resource_version(requested: int, oldest: int) -> StatusError:
    return expired(f"too old resource version: {requested} ({oldest})")


def too_large_resource_version(requested: int, current: int) -> StatusError:
    return StatusError(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        details={
            "causes": [
                {
                    "reason": "ResourceVersionTooLarge",
                    "message": "Too large resource version",
                }
            ],
            "retryAfterSeconds": 1,
        },
    )


def unsupported_media_type(message: str) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", message)


def not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


def too_many_requests(message: str, retry_after: int = 1) -> StatusError:
    return StatusError(
        429,
        "TooManyRequests",
        message,
        details={"retryAfterSeconds": retry_after},
        headers={"Retry-After": str(retry_after)},
    )


def internal(message: str) -> StatusError:
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )


def request_entity_too_large(message: str) -> StatusError:
    """NewRequestEntityTooLargeError: 413, the message after "Request entity too large: "."""
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def timeout(message: str) -> StatusError:
    return StatusError(504, "Timeout", message)
