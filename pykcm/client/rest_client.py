"""The async REST client: client-go's rest + dynamic clients in one.

Connections are created lazily on the running loop (`pykcm.client.connections`):
requests share a bounded keep-alive pool of HTTP/1.1 connections
(`config.max_connections_per_host`, 25: a burst waits for a free connection
rather than paying a TLS handshake per concurrent request), and each watch
holds a connection of its own outside it. That module says why this, and not
client-go's HTTP/2, measured by bench/client_connections.py.
Objects travel as their JSON wire form (dicts in, dicts out; orjson both
ways). Every request waits for the client-side rate limiter first (a watch's
request does; its streaming does not), carries `Accept: application/json`, the
User-Agent and the credentials, and is retried as client-go would:

- 429 TooManyRequests, for every verb (the server did not process it), after
  its Retry-After or an exponential backoff (1 s doubling to 10 s);
- 5xx answers and connection errors (refused, reset, closed) only for reads
  (GET, HEAD, a watch's setup): 502/503/504 always, other 5xx only when the
  server sent Retry-After (as client-go, a plain 500 is an answer, not a
  glitch); timeouts and TLS verification failures are not retried;
- 401 once, when renewing the credential (token file re-read, exec plugin
  re-run) gives a different one.

All of that at most `config.max_retries` (10) times. An answer that is not
2xx raises the typed `ApiError` built from its Status. Every attempt is
counted in `rest_client_requests_total` and timed in
`rest_client_request_duration_seconds` (`pykcm.client.metrics`).
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal, Self
from urllib.parse import quote, urlsplit

import aiohttp
import orjson

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.resources import ResourceInfo, ResourceRegistry, builtin_registry
from pykcm.client._auth import Authenticator
from pykcm.client._discovery import (
    DiscoveryCache,
    NoResourceMatchError,
    find,
    parse_resource_name,
)
from pykcm.client._tls import build_ssl_context
from pykcm.client.config import Config, default_user_agent
from pykcm.client.connections import Connections
from pykcm.client.errors import WritesFenced, is_gone, is_resource_expired, status_error_from
from pykcm.client.metrics import observe_request
from pykcm.client.rate_limit import TokenBucketRateLimiter
from pykcm.client.watch import CHUNK_SIZE, RawWatchStream, StreamSource, WatchStream

__all__ = ["PATCH_CONTENT_TYPES", "Client", "Object", "ResourceRef"]

log = logging.getLogger("pykcm.client")

Object = dict[str, Any]
ResourceRef = ResourceInfo | str
PatchType = Literal["merge", "json", "strategic", "apply"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
JSON = "application/json"
_IDEMPOTENT = frozenset({"GET", "HEAD"})
_READS = _IDEMPOTENT
# A body announced at least this large is read into one buffer of its length (_call_large).
_PREALLOCATE_MIN = 1 << 20
_RETRY_5XX = frozenset({502, 503, 504})

_DEFAULT_REGISTRY: ResourceRegistry | None = None


def _default_registry() -> ResourceRegistry:
    global _DEFAULT_REGISTRY
    if _DEFAULT_REGISTRY is None:
        _DEFAULT_REGISTRY = builtin_registry()
    return _DEFAULT_REGISTRY


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        secs = float(value.strip())
    except ValueError:
        return None  # the HTTP-date form: client-go ignores it too
    return max(0.0, secs)


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _path_segment(name: str) -> str:
    if not name:
        raise ValueError("a name is required")
    return quote(name, safe=":@")


def _delete_options(propagation_policy: str | None, grace_period_seconds: int | None,
                    preconditions: Mapping[str, Any] | None, dry_run: bool) -> bytes:
    body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy is not None:
        body["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        body["gracePeriodSeconds"] = int(grace_period_seconds)
    if preconditions:
        body["preconditions"] = dict(preconditions)
    if dry_run:
        body["dryRun"] = ["All"]
    return orjson.dumps(body)


def _mapping_default(obj: Any) -> Any:
    """orjson ``default=`` for request bodies: any other read-only Mapping (an informer's
    compact cached object, or a piece of one, copied into a write) is written as a dict."""
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def _dumps(body: Any) -> bytes:
    return orjson.dumps(body, default=_mapping_default)


def _list_params(*, label_selector: str | None = None, field_selector: str | None = None,
                 limit: int | None = None, continue_: str | None = None,
                 resource_version: str | None = None, resource_version_match: str | None = None,
                 timeout_seconds: int | None = None) -> dict[str, str]:
    p: dict[str, str] = {}
    if label_selector:
        p["labelSelector"] = label_selector
    if field_selector:
        p["fieldSelector"] = field_selector
    if limit:
        p["limit"] = str(int(limit))
    if continue_:
        p["continue"] = continue_
    if resource_version is not None:
        p["resourceVersion"] = str(resource_version)
    if resource_version_match:
        p["resourceVersionMatch"] = resource_version_match
    if timeout_seconds is not None:
        p["timeoutSeconds"] = str(int(timeout_seconds))
    return p


def _write_params(field_manager: str | None, dry_run: bool,
                  field_validation: str | None) -> dict[str, str]:
    p: dict[str, str] = {}
    if field_manager:
        p["fieldManager"] = field_manager
    if dry_run:
        p["dryRun"] = "All"
    if field_validation:
        p["fieldValidation"] = field_validation
    return p


class _InFlight:
    """This process's requests on the wire: sent and not yet answered, or whose answer's
    body is being read (a watch until its headers are in, not its stream; the rate
    limiter's and retries' waits are not on the wire). Virtual time's idle check reads it (pykcm.client.clock_follower)."""

    def __init__(self) -> None:
        self.requests = 0

    def __enter__(self) -> None:
        self.requests += 1

    def __exit__(self, *exc: object) -> None:
        self.requests -= 1


IN_FLIGHT = _InFlight()


class Client:
    """An async client of one API server (client-go's RESTClient + dynamic client).

    Use it as `async with Client(config) as client:` or call `close()`.
    `resource` arguments are a `ResourceInfo` or a name ("pods",
    "deployments.apps", "apps/v1/deployments", "Deployment", a CRD's plural...)
    resolved through the built-in registry, else through discovery.
    """

    def __init__(
        self,
        config: Config,
        *,
        registry: ResourceRegistry | None = None,
        rate_limiter: TokenBucketRateLimiter | None = None,
        write_fence: Callable[[], str | None] | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.config = config
        # The client's clock (issue 21): the token bucket, retry backoffs and Retry-After
        # waits, credentials' expiry. Request timeouts stay real (I/O).
        self.clock = clock
        # Asked before every write is sent: None lets it through, a reason refuses it
        # (WritesFenced). Reads and watches are never fenced.
        self.write_fence = write_fence
        self._base = config.host
        self._metrics_host = urlsplit(config.host).netloc  # rest_client_* metrics' host label
        self._registry = registry if registry is not None else _default_registry()
        self.rate_limiter = rate_limiter if rate_limiter is not None else \
            TokenBucketRateLimiter(config.qps, config.burst, clock=clock)
        self._auth = Authenticator(config, clock)
        headers = {"Accept": JSON,
                   "User-Agent": config.user_agent or default_user_agent()}
        if config.impersonate_user:
            headers["Impersonate-User"] = config.impersonate_user
        if config.impersonate_uid:
            headers["Impersonate-Uid"] = config.impersonate_uid
        self._headers = headers
        self._multi_headers: list[tuple[str, str]] = [
            ("Impersonate-Group", g) for g in config.impersonate_groups]
        for k, vs in config.impersonate_extra.items():
            self._multi_headers += [(f"Impersonate-Extra-{quote(k, safe='')}", v) for v in vs]
        self._conns: Connections | None = None
        self._session_cert: tuple[bytes, bytes] | None = None
        self._closed = False
        self._timeout = aiohttp.ClientTimeout(total=config.timeout, sock_connect=30)
        self.discovery = DiscoveryCache(self._discovery_get)
        self._resolved: dict[str, ResourceInfo] = {}

    # -- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the session and its connections (open watches end)."""
        self._closed = True
        conns, self._conns = self._conns, None
        if conns is not None:
            await conns.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _new_connections(self, cert: tuple[bytes, bytes] | None) -> Connections:
        ctx: ssl.SSLContext | None = build_ssl_context(
            self.config, cert_data=cert[0] if cert else None, key_data=cert[1] if cert else None)
        return Connections(ctx, max_per_host=self.config.max_connections_per_host,
                           timeout=self._timeout)

    async def _get_session(self, watch: bool = False) -> aiohttp.ClientSession:
        """The session for a request (bounded keep-alive pool) or a watch (its own
        connection)."""
        if self._closed:
            raise RuntimeError("the client is closed")
        cert: tuple[bytes, bytes] | None = None
        if self._auth.exec is not None:
            cred = await self._auth.exec_credential()
            if cred is not None and cred.client_certificate_data and cred.client_key_data:
                cert = (cred.client_certificate_data, cred.client_key_data)
        conns = self._conns
        if conns is not None and cert != self._session_cert:
            # A rotated exec certificate: new connections (client-go closes the old ones).
            self._conns = None
            await conns.close()
            conns = None
        if conns is None:
            self._conns = conns = self._new_connections(cert)
            self._session_cert = cert
        return conns.watches if watch else conns.requests

    # -- the request core ------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        return float(min(self.config.backoff_max, self.config.backoff_base * (2 ** attempt)))

    async def _open(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        data: bytes | None = None,
        content_type: str | None = None,
        accept: str | None = None,
        timeout: aiohttp.ClientTimeout | None = None,
        idempotent: bool | None = None,
        watch: bool = False,
    ) -> aiohttp.ClientResponse:
        """Send a request (with rate limit, auth and retries); a 2xx response, open.

        `watch`: a long-lived stream, sent on a connection of its own (outside the
        bounded pool of the other requests)."""
        if idempotent is None:
            idempotent = method in _IDEMPOTENT
        url = self._base + path
        attempt = 0
        reauthenticated = False
        cfg = self.config
        while True:
            await self.rate_limiter.wait()
            session = await self._get_session(watch)
            headers: dict[str, str] | list[tuple[str, str]]
            h = dict(self._headers)
            auth, used = await self._auth.credential()
            if auth is not None:
                h["Authorization"] = auth
            if content_type is not None:
                h["Content-Type"] = content_type
            if accept is not None:
                h["Accept"] = accept
            if self.write_fence is not None and method not in _READS:
                # Checked last, after the rate limiter's wait: right before sending.
                why = self.write_fence()
                if why is not None:
                    raise WritesFenced(f"{method} {path} not sent: {why}")
            headers = list(h.items()) + self._multi_headers if self._multi_headers else h
            start = time.perf_counter()  # request latency metrics: real work
            try:
                # On the wire until the response's headers are in, a watch too: the server
                # registers a watch before it answers, so a watch being opened (after a
                # LIST, after a timeout) holds virtual time's autojump until it is
                # established; its stream afterwards is no request in flight.
                with IN_FLIGHT:
                    resp = await session.request(
                        method, url, params=params, data=data, headers=headers,
                        timeout=timeout or self._timeout, proxy=cfg.proxy_url,
                        server_hostname=cfg.tls_server_name, allow_redirects=False)
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                observe_request(method, self._metrics_host, None, time.perf_counter() - start)
                # Timeouts and TLS failures (a wrong CA, a wrong name) are answers,
                # not glitches: only connection trouble is retried.
                if isinstance(exc, (TimeoutError, aiohttp.ClientSSLError)) or \
                        not idempotent or attempt >= cfg.max_retries:
                    raise
                delay = self._backoff(attempt)
                attempt += 1
                log.debug("%s %s: %s; retry %d in %.1fs", method, path, exc, attempt, delay)
                await self.clock.sleep(delay)
                continue
            status = resp.status
            observe_request(method, self._metrics_host, status, time.perf_counter() - start)
            if 200 <= status < 300:
                if "Warning" in resp.headers:
                    for w in resp.headers.getall("Warning"):
                        if cfg.warning_handler is None:
                            log.warning("server warning: %s", w)
                        else:
                            cfg.warning_handler(w)
                return resp
            try:
                with IN_FLIGHT:
                    body = await resp.read()
            except (TimeoutError, aiohttp.ClientError):
                body = b""
            finally:
                resp.release()
            retry_after = _retry_after(resp.headers)
            if status == 401 and not reauthenticated and self._auth.refreshable:
                reauthenticated = True
                if await self._auth.refresh(used):
                    log.debug("%s %s: 401, retrying with renewed credentials", method, path)
                    continue
            retryable = status == 429 or (idempotent and status >= 500 and (
                status in _RETRY_5XX or retry_after is not None))
            if retryable and attempt < cfg.max_retries:
                delay = retry_after if retry_after is not None else self._backoff(attempt)
                attempt += 1
                log.debug("%s %s: %d; retry %d in %.1fs", method, path, status, attempt, delay)
                await self.clock.sleep(delay)
                continue
            raise status_error_from(status, body, method=method, retry_after=retry_after)

    async def _call(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                    body: bytes | None = None, content_type: str | None = None,
                    timeout: float | None = None, idempotent: bool | None = None,
                    accept: str | None = None) -> bytes:
        tmo = aiohttp.ClientTimeout(total=timeout, sock_connect=30) if timeout else None
        resp = await self._open(method, path, params=params, data=body,
                                content_type=content_type, timeout=tmo, idempotent=idempotent,
                                accept=accept)
        try:
            with IN_FLIGHT:
                return await resp.read()
        finally:
            resp.release()

    async def _call_large(self, method: str, path: str, *,
                          params: Mapping[str, str] | None = None, timeout: float | None = None,
                          accept: str | None = None) -> bytes | bytearray:
        """``_call`` for a body that may be large (a LIST): read into one buffer of the
        announced Content-Length, each chunk copied once (aiohttp's ``read()`` joins the
        chunks twice: 115 MB for 50,000 pods). A compressed body, or one without a
        length, is read as by ``_call``."""
        tmo = aiohttp.ClientTimeout(total=timeout, sock_connect=30) if timeout else None
        resp = await self._open(method, path, params=params, timeout=tmo, idempotent=True,
                                accept=accept)
        try:
            with IN_FLIGHT:
                size = resp.content_length
                if size is None or size < _PREALLOCATE_MIN or \
                        resp.headers.get("Content-Encoding", "identity") != "identity":
                    return await resp.read()
                buf = bytearray(size)
                view = memoryview(buf)
                pos = 0
                async for chunk in resp.content.iter_any():
                    end = pos + len(chunk)
                    if end > size:  # more than announced: aiohttp would have refused it
                        raise aiohttp.ClientPayloadError(
                            f"response body longer than its Content-Length {size}")
                    view[pos:end] = chunk
                    pos = end
                view.release()
                if pos != size:  # a short body: aiohttp raises before, but be safe
                    del buf[pos:]
                return buf
        finally:
            resp.release()

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      body: Any = None, content_type: str = JSON,
                      timeout: float | None = None) -> Any:
        """Any request by path ("/version", "/healthz", ...): the JSON answer parsed, a
        text answer as str, an empty one as None."""
        data: bytes | None
        if body is None:
            data = None
        elif isinstance(body, (bytes, bytearray)):
            data = bytes(body)
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = _dumps(body)
        raw = await self._call(method.upper(), path, params=params, body=data,
                               content_type=content_type if data is not None else None,
                               timeout=timeout)
        if not raw.strip():
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw.decode("utf-8", "replace")

    async def server_version(self) -> Object:
        """GET /version."""
        out: Object = await self.request("GET", "/version")
        return out

    # -- resources -------------------------------------------------------------------

    async def _discovery_get(self, path: str, accept: str) -> tuple[bytes, str]:
        resp = await self._open("GET", path, accept=accept)
        try:
            with IN_FLIGHT:
                return await resp.read(), resp.headers.get("Content-Type", "")
        finally:
            resp.release()

    async def resolve(self, resource: ResourceRef) -> ResourceInfo:
        """The ResourceInfo of a resource name: built-in registry, else discovery."""
        if isinstance(resource, ResourceInfo):
            return resource
        hit = self._resolved.get(resource)
        if hit is not None:
            return hit
        candidates = parse_resource_name(resource)
        found = find(self._registry.all(), candidates)
        if found is None:
            found = await self.discovery.lookup(candidates)
        if found is None:
            raise NoResourceMatchError(resource)
        self._resolved[resource] = found
        return found

    def invalidate_discovery(self) -> None:
        """Forget discovered resources (e.g. after installing a CRD)."""
        self.discovery.invalidate()
        self._resolved.clear()

    @staticmethod
    def _path(info: ResourceInfo, namespace: str | None, name: str | None = None,
              subresource: str | None = None, *, need_namespace: bool = True) -> str:
        if info.namespaced and not namespace and need_namespace:
            raise ValueError(f"{info.group_resource} is namespaced: a namespace is required")
        base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
        if info.namespaced and namespace:
            base += f"/namespaces/{_path_segment(namespace)}"
        base += f"/{info.plural}"
        if name is not None:
            base += f"/{_path_segment(name)}"
            if subresource:
                base += f"/{subresource}"
        return base

    @staticmethod
    def _body_ns(body: Mapping[str, Any], namespace: str | None) -> str | None:
        if namespace:
            return namespace
        meta = body.get("metadata")
        return meta.get("namespace") if isinstance(meta, Mapping) else None

    @staticmethod
    def _body_name(body: Mapping[str, Any]) -> str:
        meta = body.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not name:
            raise ValueError("the object has no metadata.name")
        return str(name)

    async def _json(self, method: str, path: str, **kw: Any) -> Object:
        raw = await self._call(method, path, **kw)
        if not raw.strip():
            return {}
        out: Object = orjson.loads(raw)
        return out

    async def get(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
                  subresource: str | None = None, resource_version: str | None = None,
                  timeout: float | None = None) -> Object:
        """GET one object (or its subresource, e.g. "status", "scale")."""
        info = await self.resolve(resource)
        params = {"resourceVersion": resource_version} if resource_version is not None else None
        return await self._json("GET", self._path(info, namespace, name, subresource),
                                params=params, timeout=timeout)

    async def get_raw(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
                      subresource: str | None = None, timeout: float | None = None) -> bytes:
        """GET one object, its JSON bytes undecoded."""
        info = await self.resolve(resource)
        return await self._call("GET", self._path(info, namespace, name, subresource),
                                timeout=timeout)

    async def list(self, resource: ResourceRef, namespace: str | None = None, *,
                   label_selector: str | None = None, field_selector: str | None = None,
                   limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None,
                   resource_version_match: str | None = None,
                   timeout_seconds: int | None = None, timeout: float | None = None) -> Object:
        """LIST (one page when `limit` is set): the list object, parsed."""
        raw = await self.list_raw(
            resource, namespace, label_selector=label_selector, field_selector=field_selector,
            limit=limit, continue_=continue_, resource_version=resource_version,
            resource_version_match=resource_version_match, timeout_seconds=timeout_seconds,
            timeout=timeout)
        out: Object = orjson.loads(raw)
        return out

    async def list_raw(self, resource: ResourceRef, namespace: str | None = None, *,
                       label_selector: str | None = None, field_selector: str | None = None,
                       limit: int | None = None, continue_: str | None = None,
                       resource_version: str | None = None,
                       resource_version_match: str | None = None,
                       timeout_seconds: int | None = None,
                       timeout: float | None = None, accept: str | None = None
                       ) -> bytes | bytearray:
        """LIST, the JSON bytes of the list undecoded (for callers that decode their way).

        ``accept`` replaces the Accept header (e.g. ``as=PartialObjectMetadataList``)."""
        info = await self.resolve(resource)
        params = _list_params(label_selector=label_selector, field_selector=field_selector,
                              limit=limit, continue_=continue_,
                              resource_version=resource_version,
                              resource_version_match=resource_version_match,
                              timeout_seconds=timeout_seconds)
        return await self._call_large("GET", self._path(info, namespace, need_namespace=False),
                                      params=params, timeout=timeout, accept=accept)

    async def list_pages(self, resource: ResourceRef, namespace: str | None = None, *,
                         limit: int = 500, label_selector: str | None = None,
                         field_selector: str | None = None,
                         resource_version: str | None = None,
                         resource_version_match: str | None = None,
                         timeout: float | None = None) -> AsyncIterator[Object]:
        """The pages of a LIST (`limit` items each), following continue tokens."""
        info = await self.resolve(resource)
        cont: str | None = None
        while True:
            page = await self.list(
                info, namespace, label_selector=label_selector, field_selector=field_selector,
                limit=limit, continue_=cont,
                # resourceVersion goes with the first page only; the token carries it after.
                resource_version=resource_version if cont is None else None,
                resource_version_match=resource_version_match if cont is None else None,
                timeout=timeout)
            yield page
            cont = (page.get("metadata") or {}).get("continue") or None
            if not cont:
                return

    async def list_all(self, resource: ResourceRef, namespace: str | None = None, *,
                       limit: int = 500, label_selector: str | None = None,
                       field_selector: str | None = None, resource_version: str | None = None,
                       resource_version_match: str | None = None,
                       full_list_if_expired: bool = True,
                       timeout: float | None = None) -> Object:
        """A whole LIST read page by page, as one list object (client-go's pager).

        When a continue token expires mid-way (410), the list is read again in
        one request with the original options (pager's FullListIfExpired).
        """
        info = await self.resolve(resource)
        items: list[Any] = []
        last: Object = {}
        first = True
        try:
            async for page in self.list_pages(
                    info, namespace, limit=limit, label_selector=label_selector,
                    field_selector=field_selector, resource_version=resource_version,
                    resource_version_match=resource_version_match, timeout=timeout):
                first = False
                items.extend(page.get("items") or [])
                last = page
        except Exception as exc:
            if first or not full_list_if_expired or not (is_resource_expired(exc) or
                                                         is_gone(exc)):
                raise
            log.info("list of %s: continue token expired, listing again in full",
                     info.group_resource)
            return await self.list(info, namespace, label_selector=label_selector,
                                   field_selector=field_selector,
                                   resource_version=resource_version,
                                   resource_version_match=resource_version_match,
                                   timeout=timeout)
        meta = dict(last.get("metadata") or {})
        meta.pop("continue", None)
        meta.pop("remainingItemCount", None)
        return {"apiVersion": last.get("apiVersion", info.api_version),
                "kind": last.get("kind", info.list_kind), "metadata": meta, "items": items}

    def watch(self, resource: ResourceRef, namespace: str | None = None, *,
              resource_version: str | None = None, allow_watch_bookmarks: bool = False,
              send_initial_events: bool | None = None,
              resource_version_match: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None,
              timeout_seconds: int | None = None) -> WatchStream:
        """A WATCH: an async iterator of (event_type, object); sends on first use."""
        return WatchStream(self._watch_opener(
            resource, namespace, resource_version, allow_watch_bookmarks, send_initial_events,
            resource_version_match, label_selector, field_selector, timeout_seconds))

    def watch_raw(self, resource: ResourceRef, namespace: str | None = None, *,
                  resource_version: str | None = None, allow_watch_bookmarks: bool = False,
                  send_initial_events: bool | None = None,
                  resource_version_match: str | None = None, label_selector: str | None = None,
                  field_selector: str | None = None,
                  timeout_seconds: int | None = None, accept: str | None = None
                  ) -> RawWatchStream:
        """A WATCH yielding each event's JSON line undecoded (``accept``: as list_raw's)."""
        return RawWatchStream(self._watch_opener(
            resource, namespace, resource_version, allow_watch_bookmarks, send_initial_events,
            resource_version_match, label_selector, field_selector, timeout_seconds, accept))

    def _watch_opener(self, resource: ResourceRef, namespace: str | None,
                      resource_version: str | None, allow_watch_bookmarks: bool,
                      send_initial_events: bool | None, resource_version_match: str | None,
                      label_selector: str | None, field_selector: str | None,
                      timeout_seconds: int | None, accept: str | None = None
                      ) -> Callable[[], Awaitable[StreamSource]]:
        async def opener() -> StreamSource:
            info = await self.resolve(resource)
            params = _list_params(label_selector=label_selector, field_selector=field_selector,
                                  resource_version=resource_version,
                                  resource_version_match=resource_version_match,
                                  timeout_seconds=timeout_seconds)
            params["watch"] = "true"
            if allow_watch_bookmarks:
                params["allowWatchBookmarks"] = "true"
            if send_initial_events is not None:
                params["sendInitialEvents"] = _bool(send_initial_events)
            # No total timeout for a stream; a silent connection is given up
            # only well after the server should have ended the watch.
            read = float(timeout_seconds) + 60.0 if timeout_seconds else None
            tmo = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=read)
            resp = await self._open("GET", self._path(info, namespace, need_namespace=False),
                                    params=params, timeout=tmo, idempotent=True,
                                    accept=accept, watch=True)
            return resp.content.iter_chunked(CHUNK_SIZE), resp.close
        return opener

    async def create(self, resource: ResourceRef, body: Mapping[str, Any],
                     namespace: str | None = None, *, subresource: str | None = None,
                     field_manager: str | None = None, dry_run: bool = False,
                     field_validation: str | None = None,
                     timeout: float | None = None) -> Object:
        """POST an object (or, with `subresource`, e.g. a Binding or an Eviction, to
        the subresource of the object named in body.metadata.name)."""
        info = await self.resolve(resource)
        ns = self._body_ns(body, namespace)
        if subresource:
            path = self._path(info, ns, self._body_name(body), subresource)
        else:
            path = self._path(info, ns)
        return await self._json("POST", path, body=_dumps(body), content_type=JSON,
                                params=_write_params(field_manager, dry_run, field_validation),
                                timeout=timeout)

    async def update(self, resource: ResourceRef, body: Mapping[str, Any],
                     namespace: str | None = None, *, subresource: str | None = None,
                     field_manager: str | None = None, dry_run: bool = False,
                     field_validation: str | None = None,
                     timeout: float | None = None) -> Object:
        """PUT an object (name and namespace from its metadata unless given)."""
        info = await self.resolve(resource)
        path = self._path(info, self._body_ns(body, namespace), self._body_name(body),
                          subresource)
        return await self._json("PUT", path, body=_dumps(body), content_type=JSON,
                                params=_write_params(field_manager, dry_run, field_validation),
                                timeout=timeout)

    async def update_status(self, resource: ResourceRef, body: Mapping[str, Any],
                            namespace: str | None = None, *, field_manager: str | None = None,
                            dry_run: bool = False, timeout: float | None = None) -> Object:
        """PUT the status subresource."""
        return await self.update(resource, body, namespace, subresource="status",
                                 field_manager=field_manager, dry_run=dry_run, timeout=timeout)

    async def patch(self, resource: ResourceRef, name: str, body: Any,
                    patch_type: PatchType = "merge", namespace: str | None = None, *,
                    subresource: str | None = None, field_manager: str | None = None,
                    force: bool | None = None, dry_run: bool = False,
                    field_validation: str | None = None,
                    timeout: float | None = None) -> Object:
        """PATCH: "merge" (RFC 7386), "json" (RFC 6902), "strategic", or "apply"
        (server-side apply: needs `field_manager`; `force` takes fields over)."""
        info = await self.resolve(resource)
        try:
            ctype = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(f"unknown patch type {patch_type!r} (one of "
                             f"{', '.join(PATCH_CONTENT_TYPES)})") from None
        if isinstance(body, (bytes, bytearray)):
            data = bytes(body)
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = _dumps(body)
        params = _write_params(field_manager, dry_run, field_validation)
        if force is not None:
            params["force"] = _bool(force)
        return await self._json("PATCH", self._path(info, namespace, name, subresource),
                                body=data, content_type=ctype, params=params, timeout=timeout)

    async def delete(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
                     propagation_policy: str | None = None,
                     grace_period_seconds: int | None = None,
                     preconditions: Mapping[str, Any] | None = None, dry_run: bool = False,
                     timeout: float | None = None) -> Object:
        """DELETE: the answer is the object (still there, being finalized, or as it
        was) or a Success Status."""
        info = await self.resolve(resource)
        return await self._json(
            "DELETE", self._path(info, namespace, name), content_type=JSON,
            body=_delete_options(propagation_policy, grace_period_seconds, preconditions,
                                 dry_run), timeout=timeout)

    async def delete_collection(self, resource: ResourceRef, namespace: str | None = None, *,
                                label_selector: str | None = None,
                                field_selector: str | None = None,
                                propagation_policy: str | None = None,
                                grace_period_seconds: int | None = None,
                                dry_run: bool = False, timeout: float | None = None) -> Object:
        """DELETE a collection (the objects matching the selectors)."""
        info = await self.resolve(resource)
        params = _list_params(label_selector=label_selector, field_selector=field_selector)
        return await self._json(
            "DELETE", self._path(info, namespace, need_namespace=False), params=params,
            content_type=JSON, body=_delete_options(propagation_policy, grace_period_seconds,
                                                    None, dry_run), timeout=timeout)

    # -- subresources ------------------------------------------------------------------

    async def get_status(self, resource: ResourceRef, name: str,
                         namespace: str | None = None) -> Object:
        return await self.get(resource, name, namespace, subresource="status")

    async def get_scale(self, resource: ResourceRef, name: str,
                        namespace: str | None = None) -> Object:
        """The autoscaling/v1 Scale of a scalable resource."""
        return await self.get(resource, name, namespace, subresource="scale")

    async def update_scale(self, resource: ResourceRef, name: str,
                           scale: Mapping[str, Any] | int, namespace: str | None = None, *,
                           dry_run: bool = False) -> Object:
        """PUT the Scale (a Scale object, or just the replica count)."""
        info = await self.resolve(resource)
        if isinstance(scale, int):
            body: Mapping[str, Any] = {
                "apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": name, "namespace": namespace} if namespace else
                {"name": name}, "spec": {"replicas": scale}}
        else:
            body = scale
        return await self._json("PUT", self._path(info, namespace, name, "scale"),
                                body=_dumps(body), content_type=JSON,
                                params=_write_params(None, dry_run, None))

    async def bind(self, pod_name: str, namespace: str, node_name: str, *,
                   uid: str | None = None, dry_run: bool = False) -> Object:
        """Bind a pod to a node (POST pods/<name>/binding), as a scheduler does."""
        meta: dict[str, Any] = {"name": pod_name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        return await self.create("pods", body, namespace, subresource="binding",
                                 dry_run=dry_run)

    async def finalize_namespace(self, namespace: Mapping[str, Any]) -> Object:
        """PUT namespaces/<name>/finalize with the namespace's new spec.finalizers."""
        return await self.update("namespaces", namespace, subresource="finalize")

    # -- misc ----------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"Client({self._base!r})"
