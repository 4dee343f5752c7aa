"""Typed API errors: class by reason then code, apimachinery's is_* helpers, synthesized Status."""

from __future__ import annotations

import pickle

import orjson
import pytest

from pykcm.client import errors as E


def status(code: int, reason: str, message: str = "m", **details: object) -> dict[str, object]:
    s: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "code": code, "reason": reason,
                            "message": message}
    if details:
        s["details"] = details
    return s


@pytest.mark.parametrize("code,reason,cls", [
    (404, "NotFound", E.NotFound),
    (409, "AlreadyExists", E.AlreadyExists),
    (409, "Conflict", E.Conflict),
    (422, "Invalid", E.Invalid),
    (400, "BadRequest", E.BadRequest),
    (410, "Expired", E.Expired),
    (410, "Gone", E.Expired),
    (429, "TooManyRequests", E.TooManyRequests),
    (403, "Forbidden", E.Forbidden),
    (401, "Unauthorized", E.Unauthorized),
    (504, "Timeout", E.Timeout),
    (500, "ServerTimeout", E.ServerTimeout),
    (500, "InternalError", E.InternalError),
    (405, "MethodNotAllowed", E.MethodNotAllowed),
    (415, "UnsupportedMediaType", E.UnsupportedMediaType),
    (413, "RequestEntityTooLarge", E.RequestEntityTooLarge),
    (503, "ServiceUnavailable", E.ServiceUnavailable),
    (406, "NotAcceptable", E.NotAcceptable),
])
def test_class_by_reason(code: int, reason: str, cls: type[E.ApiError]) -> None:
    err = E.status_error_from(code, orjson.dumps(status(code, reason, "boom")))
    assert type(err) is cls
    assert isinstance(err, E.ApiError)
    assert (err.code, err.reason, err.message, str(err)) == (code, reason, "boom", "boom")
    assert err.status["reason"] == reason


def test_reason_wins_over_code() -> None:
    # A NotFound reason sent with an odd code is still NotFound.
    err = E.status_error_from(500, status(500, "NotFound"))
    assert isinstance(err, E.NotFound) and E.is_not_found(err)
    assert not E.is_internal_error(err)  # the reason is known: the code is not looked at


@pytest.mark.parametrize("code,cls,helper", [
    (404, E.NotFound, E.is_not_found),
    (409, E.Conflict, E.is_conflict),
    (422, E.Invalid, E.is_invalid),
    (410, E.Expired, E.is_gone),
    (403, E.Forbidden, E.is_forbidden),
    (401, E.Unauthorized, E.is_unauthorized),
    (504, E.Timeout, E.is_timeout),
    (500, E.InternalError, E.is_internal_error),
    (400, E.BadRequest, E.is_bad_request),
    (503, E.ServiceUnavailable, E.is_service_unavailable),
    (405, E.MethodNotAllowed, E.is_method_not_supported),
    (415, E.UnsupportedMediaType, E.is_unsupported_media_type),
])
def test_unknown_reason_falls_back_to_code(code: int, cls: type[E.ApiError],
                                           helper: object) -> None:
    err = E.status_error_from(code, status(code, "SomethingNew"))
    assert type(err) is cls
    assert callable(helper) and helper(err)


def test_helpers_follow_apimachinery() -> None:
    expired = E.status_error_from(410, status(410, "Expired"))
    gone = E.status_error_from(410, status(410, "Gone"))
    assert E.is_resource_expired(expired) and not E.is_gone(expired)
    assert E.is_gone(gone) and not E.is_resource_expired(gone)
    exists = E.status_error_from(409, status(409, "AlreadyExists"))
    assert E.is_already_exists(exists) and not E.is_conflict(exists)
    server_timeout = E.status_error_from(500, status(500, "ServerTimeout",
                                                     retryAfterSeconds=3))
    assert E.is_server_timeout(server_timeout) and not E.is_internal_error(server_timeout)
    assert E.suggests_client_delay(server_timeout) == 3
    # 429 and 413 count by code whatever the reason (as upstream, for compatibility)
    assert E.is_too_many_requests(E.status_error_from(429, status(429, "Forbidden")))
    assert E.is_request_entity_too_large(E.status_error_from(413, status(413, "BadRequest")))
    for helper in (E.is_not_found, E.is_conflict, E.is_invalid, E.is_gone,
                   E.is_resource_expired, E.is_forbidden, E.is_too_many_requests):
        assert not helper(None)
        assert not helper(ValueError("x"))
    assert E.reason_for_error(ValueError()) == ""


def test_retry_after_from_details_or_header() -> None:
    err = E.status_error_from(429, status(429, "TooManyRequests", retryAfterSeconds=2))
    assert isinstance(err, E.TooManyRequests) and err.retry_after == 2.0
    err = E.status_error_from(429, status(429, "TooManyRequests"), retry_after=5)
    assert err.retry_after == 5
    assert E.suggests_client_delay(err) == 5
    assert E.status_error_from(404, status(404, "NotFound")).retry_after is None


@pytest.mark.parametrize("code,method,reason,cls", [
    (404, "GET", "NotFound", E.NotFound),
    (409, "POST", "AlreadyExists", E.AlreadyExists),
    (409, "PUT", "Conflict", E.Conflict),
    (422, "PUT", "Invalid", E.Invalid),
    (429, "GET", "TooManyRequests", E.TooManyRequests),
    (502, "GET", "InternalError", E.InternalError),
    (503, "GET", "ServiceUnavailable", E.ServiceUnavailable),
    (504, "GET", "Timeout", E.Timeout),
    (418, "GET", "", E.ApiError),
])
def test_synthesized_status_for_non_status_bodies(code: int, method: str, reason: str,
                                                  cls: type[E.ApiError]) -> None:
    err = E.status_error_from(code, b"<html>proxy says no</html>\n", method=method)
    assert type(err) is cls
    assert err.code == code and err.reason == reason
    assert err.status["kind"] == "Status"
    assert E.is_unexpected_server_error(err)
    assert err.causes[0]["message"] == "<html>proxy says no</html>"
    assert err.message


def test_bodies_that_are_json_but_not_status() -> None:
    err = E.status_error_from(404, b'{"kind": "Pod"}')
    assert isinstance(err, E.NotFound) and E.is_unexpected_server_error(err)
    err = E.status_error_from(500, b"")
    assert isinstance(err, E.InternalError)
    # a Status without a code takes the answer's
    err = E.status_error_from(409, {"kind": "Status", "apiVersion": "v1", "reason": "Conflict"})
    assert err.code == 409 and isinstance(err, E.Conflict)


def test_long_bodies_are_cut_and_errors_pickle() -> None:
    err = E.status_error_from(500, b"x" * 10000)
    assert len(err.causes[0]["message"]) == 2048
    again = pickle.loads(pickle.dumps(E.status_error_from(404, status(404, "NotFound"))))
    assert isinstance(again, E.NotFound) and again.code == 404
    assert "NotFound" in repr(again)


def test_connection_errors_are_recognized() -> None:

    import aiohttp

    assert E.is_connection_error(aiohttp.ServerDisconnectedError())
    assert E.is_connection_error(TimeoutError())
    assert E.is_connection_error(ConnectionResetError())
    assert not E.is_connection_error(E.status_error_from(500, b""))
