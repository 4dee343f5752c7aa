"""The embedded API server: storage, REST handlers, discovery, TLS and auth put together.

    APIServer.start()
      ├─ Store (+ SqliteLog under --data-dir)   state; loaded from disk
      ├─ RESTStorage                            create/update/patch/delete/list
      ├─ APIHandlers + Discovery                HTTP ↔ REST storage
      ├─ TokenAuthenticator                     bearer tokens (admin + token file)
      └─ aiohttp site on host:port (HTTPS with a generated CA by default)

`start()` returns once the server is listening; `stop()` ends watches, lets
in-flight requests finish, and flushes every acknowledged write to disk.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import logging
import os
import shutil
import ssl
import tempfile
from http import HTTPStatus
from typing import Any, Self

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from pykcm.api.resources import ResourceRegistry, builtin_registry
from pykcm.apiserver import errors
from pykcm.apiserver.auth import (
    ANONYMOUS_PATHS,
    TokenAuthenticator,
    User,
    load_or_create_admin_token,
)
from pykcm.apiserver.certs import ensure_serving_certs
from pykcm.apiserver.discovery import GIT_VERSION, Discovery
from pykcm.apiserver.handlers import MAX_BODY, APIHandlers, status_response
from pykcm.apiserver.kubeconfig import build_kubeconfig, write_kubeconfig
from pykcm.apiserver.metrics import APIMetrics
from pykcm.apiserver.openapi import OpenAPI
from pykcm.apiserver.rest_storage import RESTStorage
from pykcm.apiserver.storage import SqliteLog, Store

log = logging.getLogger(__name__)


class _StatusRequestHandler(RequestHandler):
    """aiohttp's connection handler, whose own answers (to a request it cannot parse: a
    method its parser does not know, a malformed request line or header) are metav1.Status
    bodies as all of kube-apiserver's are, logged at debug level (a client's mistake is no
    server error)."""

    __slots__ = ()

    def handle_error(self, request: BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        log.debug("bad request from %s: %s", request.remote, exc or message)
        if request.writer.output_size > 0:
            raise ConnectionError("response already sent, cannot send the error")
        if isinstance(exc, BadHttpMethod):
            # kube-apiserver has no route for a method it does not know
            err = errors.method_not_allowed()
        elif status >= 500:
            err = errors.StatusError(status, "InternalError", "Internal error occurred")
        else:
            text = (message or "").strip().splitlines()
            err = errors.StatusError(status, "BadRequest" if status == 400 else "",
                                     text[0] if text else HTTPStatus(status).phrase)
        resp = status_response(err)
        resp.force_close()
        return resp


class _StatusServer(web.Server):
    """The aiohttp server whose connections are `_StatusRequestHandler`s."""

    def __call__(self) -> RequestHandler:
        return _StatusRequestHandler(self, loop=self._loop, **self._kwargs)


class DataDirLocked(RuntimeError):
    """Another API server already serves this data dir."""


def lock_data_dir(state_dir: str) -> int:
    """Take the data dir's lock (an open fd, held for the process's life); raise
    :class:`DataDirLocked` if another API server holds it."""
    fd = os.open(os.path.join(state_dir, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirLocked(
            f"another pykcm API server is using {state_dir}; stop it or choose another "
            "--data-dir") from None
    return fd


class APIServer:
    """A Kubernetes-compatible API server in this process's event loop."""

    def __init__(
        self,
        data_dir: str | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = True,
        token_file: str | None = None,
        admin_token: str | None = None,
        registry: ResourceRegistry | None = None,
        max_requests_inflight: int = 400,
        max_mutating_requests_inflight: int = 200,
        fsync: bool = True,
    ) -> None:
        self.data_dir = os.path.abspath(data_dir) if data_dir else None
        self.fsync = fsync  # fsync every commit (see storage/log.py); False: --unsafe-no-fsync
        self.host = host
        self.port = port
        self.tls = tls
        self.token_file = token_file
        self._admin_token = admin_token
        self.registry = registry or builtin_registry()
        self.store: Store | None = None
        self.rest: RESTStorage | None = None
        self.handlers: APIHandlers | None = None
        self.discovery = Discovery(self.registry)
        self.auth = TokenAuthenticator()
        self.token = ""
        self.ca_pem: bytes | None = None
        self.kubeconfig_path = ""
        self._runner: web.AppRunner | None = None
        self._tmpdir: str | None = None
        self._lock_fd: int | None = None
        self.fatal: asyncio.Future[BaseException] | None = None
        self.openapi: OpenAPI | None = None
        self._published: dict[str, list[tuple[str, str, str]]] = {}
        # kube-apiserver's --max-requests-inflight / --max-mutating-requests-inflight
        # (0 = unlimited); watches are long-running and not counted.
        self.max_inflight = max_requests_inflight
        self.max_mutating_inflight = max_mutating_requests_inflight
        self.inflight = 0
        self.inflight_mutating = 0
        self.metrics = APIMetrics(lambda: self.store,
                                  lambda: (self.inflight, self.inflight_mutating))

    # -- properties --------------------------------------------------------------

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    def kubeconfig(self) -> dict[str, Any]:
        return build_kubeconfig(self.url, self.token, self.ca_pem if self.tls else None)

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            # Leave nothing behind: lock, temp dir, half-started store or site.
            await self.stop()
            raise

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self.fatal = loop.create_future()
        state_dir = self.data_dir
        if state_dir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="pykcm-apiserver-")
            os.chmod(self._tmpdir, 0o700)
            state_dir = self._tmpdir
        else:
            os.makedirs(state_dir, mode=0o700, exist_ok=True)
            self._lock(state_dir)
        self.token = self._admin_token or load_or_create_admin_token(
            self.data_dir if self.data_dir else None)
        self.auth.add(self.token, User("admin", "admin", ("system:masters",
                                                            "system:authenticated")))
        if self.token_file:
            self.auth.load_csv(self.token_file)
        log_ = (SqliteLog(os.path.join(state_dir, "state.db"), fsync=self.fsync)
                if self.data_dir else None)
        self.store = Store(log_)
        self.store.on_fatal = self._on_fatal
        await self.store.start()
        self.rest = RESTStorage(self.store, self.registry)
        self.openapi = OpenAPI(self.registry, server_version=GIT_VERSION)
        self.rest.custom.listeners.append(self._publish_custom_resources)
        await self.rest.ensure_system_namespaces()
        # The loaded state lives as long as the server: keep the cyclic GC from
        # scanning it again and again (it dominates large-list costs in Python).
        gc.collect()
        gc.freeze()
        self.handlers = APIHandlers(self.rest, self.registry, self.discovery, self.openapi)
        app = web.Application(client_max_size=MAX_BODY + 64 * 1024)
        # [\s\S]: a path with an encoded newline (%0a) is still ours to answer
        app.router.add_route("*", r"/{tail:[\s\S]*}", self._entry)
        # auto_decompress=False: kube-apiserver reads a request body as sent whatever its
        # Content-Encoding (garbage "gzip" is a JSON decode error, not a transport one).
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     shutdown_timeout=5.0, auto_decompress=False)
        await self._runner.setup()
        assert self._runner.server is not None
        self._runner.server.__class__ = _StatusServer
        ssl_ctx = None
        if self.tls:
            certs = ensure_serving_certs(os.path.join(state_dir, "pki"), (self.host,))
            self.ca_pem = certs.ca_pem
            ssl_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_ctx.load_cert_chain(certs.cert_path, certs.key_path)
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_ctx,
                           reuse_address=True)
        await site.start()
        if self.port == 0:
            server = site._server
            assert server is not None
            sockets = getattr(server, "sockets", None) or []
            self.port = sockets[0].getsockname()[1]
        self.discovery.server_address = f"{self.host}:{self.port}"
        self.kubeconfig_path = os.path.join(state_dir, "kubeconfig")
        write_kubeconfig(self.kubeconfig_path, self.kubeconfig())
        log.info("API server listening on %s (kubeconfig %s)", self.url, self.kubeconfig_path)

    async def stop(self) -> None:
        self.discovery.ready = False
        if self.handlers is not None:
            self.handlers.shutting_down.set()
        if self.store is not None:
            # Closing the watchers wakes their stream loops, which then return.
            for rs in self.store.resources():
                for w in list(rs.watchers):
                    w.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.rest is not None:
            await self.rest.close()
        if self.store is not None:
            await self.store.close()
            self.store = None
        gc.unfreeze()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _lock(self, state_dir: str) -> None:
        self._lock_fd = lock_data_dir(state_dir)

    def _publish_custom_resources(self, event: str, crd: dict[str, Any]) -> None:
        """Keep the OpenAPI documents in step with the served custom resources."""
        if self.openapi is None or self.rest is None:
            return
        name = crd["metadata"]["name"]
        for key in self._published.pop(name, []):
            self.openapi.remove_custom(*key)
        if event != "sync":
            return
        keys = []
        for crv in self.rest.custom.versions_of(name):
            i = crv.info
            subs: dict[str, Any] = {s: {} for s in i.subresources}
            self.openapi.add_custom(i.group, i.version, i.plural, i.kind, i.namespaced,
                                    crv.raw_schema, subs)
            keys.append((i.group, i.version, i.plural))
        self._published[name] = keys

    def _on_fatal(self, exc: BaseException) -> None:
        log.error("storage failure, the API server must be restarted: %s", exc)
        if self.fatal is not None and not self.fatal.done():
            self.fatal.set_result(exc)

    # -- request entry -----------------------------------------------------------------

    async def _entry(self, request: web.Request) -> web.StreamResponse:
        try:
            user = self.auth.authenticate(request.headers.get("Authorization"))
        except PermissionError:
            return status_response(errors.unauthorized())
        if user is None and request.path not in ANONYMOUS_PATHS:
            return status_response(errors.unauthorized())
        assert self.handlers is not None
        resp = await self._serve(request)
        q = request.query
        self.metrics.observe(request.method, request.path,
                             q.get("watch") in ("1", "true", "True"), resp.status)
        return resp

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        assert self.handlers is not None
        if request.path == "/metrics":
            return web.Response(body=self.metrics.render(),
                                content_type="text/plain", charset="utf-8")
        if request.method in ("GET", "HEAD"):
            q = request.query
            if q.get("watch") in ("1", "true", "True") or "/watch/" in request.path:
                return await self.handlers.handle(request)
            limit, mutating = self.max_inflight, False
            current = self.inflight
        else:
            limit, mutating = self.max_mutating_inflight, True
            current = self.inflight_mutating
        if limit and current >= limit:
            return status_response(errors.too_many_requests(
                "Too many requests, please try again later."))
        if mutating:
            self.inflight_mutating += 1
        else:
            self.inflight += 1
        try:
            return await self.handlers.handle(request)
        finally:
            if mutating:
                self.inflight_mutating -= 1
            else:
                self.inflight -= 1
