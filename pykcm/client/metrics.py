"""REST client metrics under Kubernetes' names (client-go ``tools/metrics`` as
component-base registers them in every Kubernetes binary).

- ``rest_client_requests_total{code, method, host}`` (counter): HTTP requests
  sent, by status code (``"<error>"`` when no answer came: connection refused,
  reset, timeout), method (``GET``, ``POST``...) and ``host:port``.
- ``rest_client_request_duration_seconds{verb, host}`` (histogram): from
  sending a request to receiving the headers of its answer, by method and
  ``host:port``, with component-base's buckets (5 ms ... 60 s).

Data flow: :class:`pykcm.client.Client` calls :func:`observe_request` once per
HTTP attempt (a retried request counts once per try, as in client-go), after
the client-side rate limiter has let it through, so the latency is the
server's and the network's, not the limiter's. A watch counts when its
stream opens; its streaming time is not a latency.

The metrics live in ``prometheus_client``'s default registry, next to the
workqueue metrics, and are served by the controller manager's ``/metrics``.
Label children are cached per (method, host) and (code, method, host) so
the request path pays one dict lookup and two increments.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Histogram

__all__ = [
    "ERROR_CODE",
    "REQUEST_DURATION_BUCKETS",
    "REST_CLIENT_REQUESTS_TOTAL",
    "REST_CLIENT_REQUEST_DURATION_SECONDS",
    "observe_request",
]

ERROR_CODE: Final = "<error>"
"""The ``code`` of a request that got no HTTP answer (client-go's)."""

REQUEST_DURATION_BUCKETS: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0,
                                   30.0, 60.0)
"""component-base's buckets for ``rest_client_request_duration_seconds``."""

REST_CLIENT_REQUESTS_TOTAL: Final = Counter(
    "rest_client_requests",  # prometheus_client appends the "_total" of a counter
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ("code", "method", "host"))

REST_CLIENT_REQUEST_DURATION_SECONDS: Final = Histogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ("verb", "host"), buckets=REQUEST_DURATION_BUCKETS)

# Label children, cached: .labels() parses and validates its arguments each call.
_results: dict[tuple[str, str, str], Counter] = {}
_latencies: dict[tuple[str, str], Histogram] = {}


def observe_request(method: str, host: str, code: int | None, seconds: float) -> None:
    """Record one HTTP attempt: ``code`` None when it failed without an answer."""
    c = ERROR_CODE if code is None else str(code)
    rkey = (c, method, host)
    counter = _results.get(rkey)
    if counter is None:
        counter = _results[rkey] = REST_CLIENT_REQUESTS_TOTAL.labels(c, method, host)
    counter.inc()
    lkey = (method, host)
    hist = _latencies.get(lkey)
    if hist is None:
        hist = _latencies[lkey] = REST_CLIENT_REQUEST_DURATION_SECONDS.labels(method, host)
    hist.observe(seconds)
