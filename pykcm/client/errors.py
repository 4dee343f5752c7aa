"""Typed API errors, as apimachinery's `pkg/api/errors` reconstructs them on the client.

Every non-2xx answer of the API server becomes an `ApiError` (or one of its
subclasses) carrying the `metav1.Status` the server sent. When the body is not a
Status (a proxy's HTML page, an empty body), a Status is synthesized the way
client-go's `NewGenericServerResponse` does, with an `UnexpectedServerResponse`
cause holding the body text.

The class is chosen by the Status reason first, then, for an unknown reason, by
the HTTP code. The `is_*` helpers follow apimachinery exactly: they look at the
reason, and at the code only when the reason is not one Kubernetes defines.

Transport failures (connection refused, reset, TLS) are not `ApiError`s: they
propagate as `aiohttp.ClientError` / `asyncio.TimeoutError`;
`is_connection_error(exc)` recognizes them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Expired",
    "Forbidden",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "RequestEntityTooLarge",
    "ServerTimeout",
    "ServiceUnavailable",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "WritesFenced",
    "has_status_cause",
    "is_already_exists",
    "is_bad_request",
    "is_conflict",
    "is_connection_error",
    "is_forbidden",
    "is_gone",
    "is_internal_error",
    "is_invalid",
    "is_method_not_supported",
    "is_not_acceptable",
    "is_not_found",
    "is_request_entity_too_large",
    "is_resource_expired",
    "is_server_timeout",
    "is_service_unavailable",
    "is_timeout",
    "is_too_many_requests",
    "is_unauthorized",
    "is_unexpected_server_error",
    "is_unsupported_media_type",
    "reason_for_error",
    "status_error_from",
    "suggests_client_delay",
]

# metav1.StatusReason values apimachinery knows (StatusReasonUnknown "" is not one).
KNOWN_REASONS: frozenset[str] = frozenset({
    "Unauthorized", "Forbidden", "NotFound", "AlreadyExists", "Conflict", "Gone", "Invalid",
    "ServerTimeout", "Timeout", "TooManyRequests", "BadRequest", "MethodNotAllowed",
    "NotAcceptable", "RequestEntityTooLarge", "UnsupportedMediaType", "InternalError",
    "Expired", "ServiceUnavailable",
})

# Bodies longer than this are cut in synthesized messages (client-go: 2048 bytes).
_MAX_UNSTRUCTURED_BODY = 2048


class ApiError(Exception):
    """A failed API request: the server's `metav1.Status` and what it says."""

    def __init__(self, status: dict[str, Any], *, retry_after: float | None = None) -> None:
        self.status: dict[str, Any] = status
        self.code: int = int(status.get("code") or 0)
        self.reason: str = str(status.get("reason") or "")
        self.message: str = str(status.get("message") or "")
        if retry_after is None:
            details = status.get("details")
            if isinstance(details, dict) and (details.get("retryAfterSeconds") or 0) > 0:
                retry_after = float(details["retryAfterSeconds"])
        # Seconds the server asked the client to wait (Retry-After header or
        # details.retryAfterSeconds); None when it did not say.
        self.retry_after: float | None = retry_after
        super().__init__(self.message or f"the server responded with status code {self.code}")

    @property
    def details(self) -> dict[str, Any]:
        d = self.status.get("details")
        return d if isinstance(d, dict) else {}

    @property
    def causes(self) -> list[dict[str, Any]]:
        c = self.details.get("causes")
        return c if isinstance(c, list) else []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, reason={self.reason!r}, " \
               f"message={self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.status, self.retry_after))


def _rebuild(cls: type[ApiError], status: dict[str, Any],
             retry_after: float | None) -> ApiError:
    return cls(status, retry_after=retry_after)


class WritesFenced(RuntimeError):
    """A write the client refused to send: its write fence is closed (e.g. a controller
    manager that can no longer be sure it holds its leader lease). Never sent, never
    retried by the client; the caller's retry (a controller's requeue) meets the fence
    again until it opens."""


class BadRequest(ApiError):
    """400 BadRequest."""


class Unauthorized(ApiError):
    """401 Unauthorized."""


class Forbidden(ApiError):
    """403 Forbidden."""


class NotFound(ApiError):
    """404 NotFound."""


class MethodNotAllowed(ApiError):
    """405 MethodNotAllowed."""


class NotAcceptable(ApiError):
    """406 NotAcceptable."""


class AlreadyExists(ApiError):
    """409 AlreadyExists (a create of a name that is taken)."""


class Conflict(ApiError):
    """409 Conflict (an update against a stale resourceVersion, an apply conflict...)."""


class Expired(ApiError):
    """410 Expired or Gone: the resourceVersion or continue token is too old."""


class RequestEntityTooLarge(ApiError):
    """413 RequestEntityTooLarge."""


class UnsupportedMediaType(ApiError):
    """415 UnsupportedMediaType."""


class Invalid(ApiError):
    """422 Invalid: the object failed validation; `causes` lists the fields."""


class TooManyRequests(ApiError):
    """429 TooManyRequests; `retry_after` says when to come back."""


class InternalError(ApiError):
    """500 InternalError."""


class ServerTimeout(ApiError):
    """ServerTimeout (code 500 usually): a transient error, the client should retry."""


class ServiceUnavailable(ApiError):
    """503 ServiceUnavailable."""


class Timeout(ApiError):
    """504 Timeout: the request did not finish in time but may still complete."""


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "NotAcceptable": NotAcceptable,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Expired,
    "Gone": Expired,
    "RequestEntityTooLarge": RequestEntityTooLarge,
    "UnsupportedMediaType": UnsupportedMediaType,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServerTimeout": ServerTimeout,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": Timeout,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    410: Expired,
    413: RequestEntityTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: Timeout,
}


def error_class_for(reason: str, code: int) -> type[ApiError]:
    """The exception class for a Status: by reason first, then by code."""
    cls = _BY_REASON.get(reason)
    if cls is not None:
        return cls
    return _BY_CODE.get(code, ApiError)


def _generic_status(code: int, method: str, server_message: str,
                    retry_after: float | None) -> dict[str, Any]:
    """A Status for a response that carried none (apimachinery NewGenericServerResponse)."""
    reason = ""
    message = f"the server responded with the status code {code} but did not return more " \
              "information"
    if code == 409:
        reason = "AlreadyExists" if method.upper() == "POST" else "Conflict"
        message = "the server reported a conflict"
    elif code == 404:
        reason, message = "NotFound", "the server could not find the requested resource"
    elif code == 400:
        reason, message = "BadRequest", "the server rejected our request for an unknown reason"
    elif code == 401:
        reason = "Unauthorized"
        message = "the server has asked for the client to provide credentials"
    elif code == 403:
        reason, message = "Forbidden", server_message
    elif code == 406:
        reason = "NotAcceptable"
        message = server_message if server_message and server_message != "unknown" else \
            "the server was unable to respond with a content type that the client supports"
    elif code == 415:
        reason, message = "UnsupportedMediaType", server_message
    elif code == 405:
        reason = "MethodNotAllowed"
        message = "the server does not allow this method on the requested resource"
    elif code == 410:
        reason = "Gone"
        message = server_message or "the requested resource is no longer available"
    elif code == 413:
        reason = "RequestEntityTooLarge"
        message = server_message or "the request entity is too large"
    elif code == 422:
        reason = "Invalid"
        message = "the server rejected our request due to an error in our request"
    elif code == 503:
        reason = "ServiceUnavailable"
        message = "the server is currently unable to handle the request"
    elif code == 504:
        reason = "Timeout"
        message = "the server was unable to return a response in the time allotted, but may " \
                  "still be processing the request"
    elif code == 429:
        reason = "TooManyRequests"
        message = "the server has received too many requests and has asked us to try again later"
    elif code >= 500:
        reason = "InternalError"
        message = f"an error on the server ({server_message!r}) has prevented the request " \
                  "from succeeding"
    details: dict[str, Any] = {
        "causes": [{"reason": "UnexpectedServerResponse", "message": server_message}]}
    if retry_after:
        details["retryAfterSeconds"] = int(retry_after)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code, "details": details}


def status_error_from(code: int, body: bytes | str | dict[str, Any] | None, *,
                      method: str = "", retry_after: float | None = None) -> ApiError:
    """The typed error for an HTTP answer `code` whose body is `body`.

    A body that is a `metav1.Status` is used as is (its code filled from the
    answer when missing); anything else becomes a synthesized Status.
    """
    status: dict[str, Any] | None = None
    if isinstance(body, dict):
        parsed: Any = body
    else:
        raw = body.encode() if isinstance(body, str) else (body or b"")
        try:
            parsed = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            parsed = None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status" and \
            parsed.get("apiVersion") in ("v1", "meta.k8s.io/v1", None):
        status = dict(parsed)
        if not status.get("code"):
            status["code"] = code
    if status is None:
        if isinstance(body, dict):
            text = orjson.dumps(body).decode()
        elif isinstance(body, bytes):
            text = body.decode("utf-8", "replace")
        else:
            text = body or ""
        text = text.strip()[:_MAX_UNSTRUCTURED_BODY]
        status = _generic_status(code, method, text, retry_after)
    cls = error_class_for(str(status.get("reason") or ""), int(status.get("code") or code))
    return cls(status, retry_after=retry_after)


# -- helpers (apimachinery IsNotFound & co) -------------------------------------------


def _reason_code(exc: BaseException | None) -> tuple[str, int]:
    if isinstance(exc, ApiError):
        return exc.reason, exc.code
    return "", 0


def _is(exc: BaseException | None, reason: str, code: int) -> bool:
    r, c = _reason_code(exc)
    if r == reason:
        return True
    return r not in KNOWN_REASONS and c == code and c != 0


def reason_for_error(exc: BaseException | None) -> str:
    """The Status reason of an ApiError, "" (StatusReasonUnknown) for anything else."""
    return _reason_code(exc)[0]


def is_not_found(exc: BaseException | None) -> bool:
    return _is(exc, "NotFound", 404)


def is_already_exists(exc: BaseException | None) -> bool:
    return reason_for_error(exc) == "AlreadyExists"


def is_conflict(exc: BaseException | None) -> bool:
    return _is(exc, "Conflict", 409)


def is_invalid(exc: BaseException | None) -> bool:
    return _is(exc, "Invalid", 422)


def is_gone(exc: BaseException | None) -> bool:
    """Reason Gone, or an unknown reason with code 410."""
    return _is(exc, "Gone", 410)


def is_resource_expired(exc: BaseException | None) -> bool:
    """Reason Expired (a resourceVersion or continue token too old)."""
    return reason_for_error(exc) == "Expired"


def is_not_acceptable(exc: BaseException | None) -> bool:
    return _is(exc, "NotAcceptable", 406)


def is_unsupported_media_type(exc: BaseException | None) -> bool:
    return _is(exc, "UnsupportedMediaType", 415)


def is_method_not_supported(exc: BaseException | None) -> bool:
    return _is(exc, "MethodNotAllowed", 405)


def is_service_unavailable(exc: BaseException | None) -> bool:
    return _is(exc, "ServiceUnavailable", 503)


def is_bad_request(exc: BaseException | None) -> bool:
    return _is(exc, "BadRequest", 400)


def is_unauthorized(exc: BaseException | None) -> bool:
    return _is(exc, "Unauthorized", 401)


def is_forbidden(exc: BaseException | None) -> bool:
    return _is(exc, "Forbidden", 403)


def is_timeout(exc: BaseException | None) -> bool:
    return _is(exc, "Timeout", 504)


def is_server_timeout(exc: BaseException | None) -> bool:
    # No HTTP code is specific to retryable server timeouts: the reason only.
    return reason_for_error(exc) == "ServerTimeout"


def is_internal_error(exc: BaseException | None) -> bool:
    return _is(exc, "InternalError", 500)


def is_too_many_requests(exc: BaseException | None) -> bool:
    # As apimachinery: the code counts whatever the reason.
    r, c = _reason_code(exc)
    return r == "TooManyRequests" or c == 429


def is_request_entity_too_large(exc: BaseException | None) -> bool:
    r, c = _reason_code(exc)
    return r == "RequestEntityTooLarge" or c == 413


def has_status_cause(exc: BaseException | None, cause_type: str) -> bool:
    """Whether the error's Status lists a cause of ``cause_type`` (client-go errors.HasStatusCause).

    On the wire a StatusCause's type is the JSON field ``reason``
    (metav1.StatusCause ``Type CauseType `json:"reason"` ``), not ``type``.
    """
    return isinstance(exc, ApiError) and any(
        isinstance(c, dict) and c.get("reason") == cause_type for c in exc.causes)


def is_unexpected_server_error(exc: BaseException | None) -> bool:
    """The server's answer was not a Status (a synthesized error)."""
    if not isinstance(exc, ApiError):
        return False
    return any(c.get("reason") == "UnexpectedServerResponse" or
               c.get("type") == "UnexpectedServerResponse" for c in exc.causes)


def suggests_client_delay(exc: BaseException | None) -> float | None:
    """Seconds the server asked to wait before retrying, or None."""
    if not isinstance(exc, ApiError):
        return None
    if exc.reason == "ServerTimeout" and "retryAfterSeconds" in exc.details:
        return float(exc.details.get("retryAfterSeconds") or 0)
    return exc.retry_after


def is_connection_error(exc: BaseException | None) -> bool:
    """A transport failure: refused, reset, closed mid-body, TLS, or a timeout."""
    return isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError,
                            asyncio.TimeoutError, ConnectionError))
