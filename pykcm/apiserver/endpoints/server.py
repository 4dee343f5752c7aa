"""The embedded API server: storage, REST handlers, discovery, TLS and auth put together.

    APIServer.start()
      ├─ Store (+ SqliteLog under --data-dir)   state; loaded from disk
      ├─ RESTStorage                            create/update/patch/delete/list
      ├─ APIHandlers + Discovery                HTTP ↔ REST storage
      ├─ TokenAuthenticator                     bearer tokens (admin + token file)
      │    + ServiceAccountTokens                 service-account keys: TokenRequest,
      │                                           legacy and bound token authenticators
      ├─ KubernetesServiceController            default/kubernetes: the Service, and
      │                                           Endpoints/EndpointSlice of this server
      ├─ IdentityLease                          kube-system/apiserver-<hash>, renewed
      └─ aiohttp site on host:port (HTTPS with a generated CA by default)

`start()` returns once the server is listening; `stop()` ends watches, lets
in-flight requests finish, and flushes every acknowledged write to disk.

The service-account signing key is ``--service-account-signing-key-file``, else
DIR/pki/sa.key (with sa.pub; made on first start, as kubeadm makes them); an
in-memory server takes the process's one generated key (RSA generation is slow).
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
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import Token
from http import HTTPStatus
from typing import Any, Self

import orjson
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.randomness import REAL_RANDOM, RandomSource
from pykcm.api.resources import ResourceRegistry, builtin_registry
from pykcm.api.serviceaccount import LAST_USED_LABEL_KEY
from pykcm.api.virtual_clock import VirtualClock
from pykcm.apiserver import errors
from pykcm.apiserver.auth.authentication import (
    ANONYMOUS_PATHS,
    AuthResponse,
    TokenAuthenticator,
    User,
    load_or_create_admin_token,
)
from pykcm.apiserver.auth.certs import ensure_serving_certs
from pykcm.apiserver.auth.kubeconfig import build_kubeconfig, write_kubeconfig
from pykcm.apiserver.auth.service_accounts import ServiceAccountTokens
from pykcm.apiserver.controlplane.identity_lease import IdentityLease
from pykcm.apiserver.controlplane.kubernetes_service import (
    KubernetesServiceController,
    choose_advertise_address,
)
from pykcm.apiserver.controlplane.post_start_objects import ensure_post_start_objects
from pykcm.apiserver.controlplane.virtual_time import CLOCK_PATH, ClockHost
from pykcm.apiserver.endpoints.discovery import GIT_VERSION, Discovery
from pykcm.apiserver.endpoints.flow_control import (
    TOO_MANY_REQUESTS_MESSAGE,
    ConcurrencyLevel,
    Rejected,
)
from pykcm.apiserver.endpoints.handlers import AUTHENTICATED, MAX_BODY, APIHandlers, status_response
from pykcm.apiserver.endpoints.metrics import APIMetrics
from pykcm.apiserver.endpoints.openapi import OpenAPI
from pykcm.apiserver.rbac.authorizer import RBACAuthorizer, forbidden_error
from pykcm.apiserver.rbac.bootstrap import reconcile_bootstrap_policy
from pykcm.apiserver.rbac.escalation import CURRENT as ESCALATION_CONTEXT
from pykcm.apiserver.rbac.escalation import RequestAuth
from pykcm.apiserver.rbac.request_filter import impersonate, request_attributes
from pykcm.apiserver.rbac.stored_objects import StoredRBAC
from pykcm.apiserver.registry.rest_storage import RESTStorage
from pykcm.apiserver.storage import SqliteLog, Store, object_key

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


_LONG_RUNNING_SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward", "proxy"})


def _long_running(path: str, query: Any) -> bool:
    """A watch or a streaming subresource (kube-apiserver's long-running check): not a
    request in flight for virtual time's autojump (it would hold it for its whole life)."""
    if query.get("watch") in ("1", "true", "True") or "/watch/" in path:
        return True
    return path.rpartition("/")[2] in _LONG_RUNNING_SUBRESOURCES or "/proxy/" in path


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
        advertise_address: str = "",
        endpoint_reconciler_type: str = "lease",
        service_account_signing_key_file: str = "",
        service_account_key_files: Sequence[str] = (),
        service_account_issuers: Sequence[str] = (),
        api_audiences: Sequence[str] = (),
        service_account_max_token_expiration: int = 0,
        service_account_extend_token_expiration: bool = True,
        clock: Clock = REAL_CLOCK,
        rng: RandomSource = REAL_RANDOM,
        autojump: bool = True,
        clock_followers: int = 0,
    ) -> None:
        # The server's one clock (issue 21), held by its Store: every time it writes or
        # waits on (timestamps, managedFields, leases, deletion deadlines, watch timeouts
        # and bookmarks, tokens, ages, compaction). TLS and request I/O stay on real time.
        self.clock = clock
        # The server's one random source (--seed: seeded(seed, "kube-apiserver")), held by
        # its REST storage: UIDs, generated names, admission's draws, eviction and watch
        # timeout jitter, the identity lease's holder. Credentials stay on secrets/the OS.
        self.rng = rng
        # On a VirtualClock the server hosts the cluster's time (/pykcm/v1/clock,
        # controlplane/virtual_time.py): autojump unless told not to, once
        # `clock_followers` followers (the simulator, the controller manager) have joined.
        self.autojump = autojump
        self.clock_followers = clock_followers
        self.clock_host: ClockHost | None = None
        # Requests being served and a count that moves with each one started or ended
        # (watches, other long-running requests and the clock's own excluded): the
        # autojump's "nothing in flight, nothing happened since the probe".
        self.requests_in_flight = 0
        self._requests_seen = 0
        self.data_dir = os.path.abspath(data_dir) if data_dir else None
        self.fsync = fsync  # fsync every commit (see storage/log.py); False: --unsafe-no-fsync
        self.host = host
        self.port = port
        self.tls = tls
        self.token_file = token_file
        self._admin_token = admin_token
        # kube-apiserver's --advertise-address and --endpoint-reconciler-type (lease | none)
        self.advertise_address = advertise_address
        self.endpoint_reconciler_type = endpoint_reconciler_type
        # kube-apiserver's --service-account-* and --api-audiences
        self.service_account_signing_key_file = service_account_signing_key_file
        self.service_account_key_files = list(service_account_key_files)
        self.service_account_issuers = list(service_account_issuers)
        self.api_audiences = list(api_audiences)
        self.service_account_max_token_expiration = service_account_max_token_expiration
        self.service_account_extend_token_expiration = service_account_extend_token_expiration
        self.service_accounts: ServiceAccountTokens | None = None
        self.kubernetes_service: KubernetesServiceController | None = None
        self.identity_lease: IdentityLease | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.registry = registry or builtin_registry()
        self.store: Store | None = None
        self.rest: RESTStorage | None = None
        self.handlers: APIHandlers | None = None
        self.discovery = Discovery(self.registry)
        self.auth = TokenAuthenticator(clock=clock)
        self.authorizer: RBACAuthorizer | None = None
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
        # Beyond the limit requests wait in a bounded queue (flow_control.py, APF's
        # behaviour towards clients) before a 429.
        self.readonly_level = ConcurrencyLevel(max_requests_inflight)
        self.mutating_level = ConcurrencyLevel(max_mutating_requests_inflight)
        self.metrics = APIMetrics(lambda: self.store,
                                  lambda: (self.readonly_level.executing,
                                           self.mutating_level.executing))

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
        self.service_accounts = ServiceAccountTokens.load(
            os.path.join(state_dir, "pki"),
            signing_key_file=self.service_account_signing_key_file,
            key_files=self.service_account_key_files, issuers=self.service_account_issuers,
            api_audiences=self.api_audiences,
            max_expiration_seconds=self.service_account_max_token_expiration,
            extend_expiration=self.service_account_extend_token_expiration,
            ephemeral=self.data_dir is None, clock=self.clock)
        self.service_accounts.install(self.auth, self._committed_object,
                                      self._legacy_token_used)
        log_ = (SqliteLog(os.path.join(state_dir, "state.db"), fsync=self.fsync)
                if self.data_dir else None)
        self.store = Store(log_, clock=self.clock)
        self.store.on_fatal = self._on_fatal
        await self.store.start()
        rng = self.rng
        if self.store.rv:
            # A resumed data dir: a seeded run must not draw the first run's UIDs and
            # names again (the stored objects hold them); still one stream per state.
            rng = rng.stream(f"resumed-at-{self.store.rv}")
        self.rest = RESTStorage(self.store, self.registry, rng=rng)
        self.openapi = OpenAPI(self.registry, server_version=GIT_VERSION)
        self.rest.custom.listeners.append(self._publish_custom_resources)
        await self.rest.ensure_system_namespaces()
        await reconcile_bootstrap_policy(self.rest, self.registry)
        await ensure_post_start_objects(self.rest, self.registry)
        rest = self.rest
        self.authorizer = RBACAuthorizer(StoredRBAC(
            lambda plural: rest.rs(info) if (info := self.registry.get(
                "rbac.authorization.k8s.io", "v1", plural)) is not None else None))
        # The loaded state lives as long as the server: keep the cyclic GC from
        # scanning it again and again (it dominates large-list costs in Python).
        gc.collect()
        gc.freeze()
        self.handlers = APIHandlers(self.rest, self.registry, self.discovery, self.openapi,
                                    auth=self.auth, service_accounts=self.service_accounts)
        app = web.Application(client_max_size=MAX_BODY + 64 * 1024,
                              middlewares=[self._unrouted])
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
        address = choose_advertise_address(self.host, self.advertise_address)
        host = address or self.host
        self.discovery.server_address = (f"[{host}]:{self.port}" if ":" in host
                                         else f"{host}:{self.port}")
        self.kubernetes_service = KubernetesServiceController(self.rest, address, self.port)
        await self.kubernetes_service.ensure_service()
        if self.endpoint_reconciler_type != "none":
            self.kubernetes_service.start()
        self.identity_lease = IdentityLease(self.rest)
        self.identity_lease.start()
        if isinstance(self.clock, VirtualClock):
            self.clock_host = ClockHost(
                self.clock, autojump=self.autojump, followers_expected=self.clock_followers,
                activity=self._activity, in_flight=lambda: self.requests_in_flight,
                unsent=self._unsent_watch_events)
            self.clock_host.start()
        self.kubeconfig_path = os.path.join(state_dir, "kubeconfig")
        write_kubeconfig(self.kubeconfig_path, self.kubeconfig())
        log.info("API server listening on %s (kubeconfig %s)", self.url, self.kubeconfig_path)

    async def stop(self) -> None:
        self.discovery.ready = False
        if self.clock_host is not None:
            await self.clock_host.stop()
            self.clock_host = None
        if self.identity_lease is not None:
            await self.identity_lease.stop()
            self.identity_lease = None
        if self.kubernetes_service is not None:
            # this server's address leaves the kubernetes Service's endpoints
            await self.kubernetes_service.stop()
            self.kubernetes_service = None
        for t in list(self._background):
            t.cancel()
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

    def _committed_object(self, resource: str, namespace: str,
                          name: str) -> dict[str, Any] | None:
        """A core/v1 object as stored (committed), for the token authenticators."""
        info = self.registry.get("", "v1", resource)
        if info is None or self.rest is None:
            return None
        entry = self.rest.rs(info).get(object_key(namespace if info.namespaced else "", name))
        return entry.obj if entry is not None else None

    def _legacy_token_used(self, secret: dict[str, Any]) -> None:
        """Label a legacy token's Secret with the day it was last used (in the background)."""
        meta = secret.get("metadata") or {}
        body = orjson.dumps({"metadata": {"uid": meta.get("uid"), "labels": {
            LAST_USED_LABEL_KEY: time.strftime("%Y-%m-%d", time.gmtime(self.clock.now()))}}})

        async def patch() -> None:
            info = self.registry.get("", "v1", "secrets")
            if self.rest is None or info is None:
                return
            try:
                await self.rest.patch(info, str(meta.get("namespace") or ""),
                                      str(meta.get("name") or ""),
                                      "application/merge-patch+json", body)
            except errors.StatusError as exc:
                log.error("Failed to label legacy service account token %s/%s with last-used "
                          "date, err: %s", meta.get("name"), meta.get("namespace"), exc)

        task = asyncio.get_running_loop().create_task(patch())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _activity(self) -> int:
        """Moves with every counted request started or ended and every committed write."""
        return self._requests_seen + (self.store.rv if self.store is not None else 0)

    def _unsent_watch_events(self) -> int:
        """Watch events queued in a watcher or being written to its client, and writes
        not yet committed (their events are still to come)."""
        if self.store is None:
            return 0
        return self.store.writes_in_progress + sum(
            len(w.queue) + w.sending for rs in self.store.resources() for w in rs.watchers)

    def _on_fatal(self, exc: BaseException) -> None:
        log.error("storage failure, the API server must be restarted: %s", exc)
        if self.fatal is not None and not self.fatal.done():
            self.fatal.set_result(exc)

    # -- request entry -----------------------------------------------------------------

    @web.middleware
    async def _unrouted(self, request: web.Request,
                        handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                        ) -> web.StreamResponse:
        """A request aiohttp's router matches to nothing (CONNECT's authority-form target)
        is ours to answer too: a Status, never aiohttp's plain-text 404."""
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return await self._entry(request)

    async def _entry(self, request: web.Request) -> web.StreamResponse:
        try:
            authn = self.auth.authenticate_request(request.headers.get("Authorization"))
        except PermissionError:
            return status_response(errors.unauthorized())
        if authn is None and request.path not in ANONYMOUS_PATHS:
            return status_response(errors.unauthorized())
        token: Token[RequestAuth | None] | None = None
        if authn is not None:
            # impersonation, then RBAC (kube-apiserver's WithImpersonation, WithAuthorization)
            assert self.authorizer is not None
            try:
                user = impersonate(self.authorizer, authn.user, request.headers,
                                   list(request.headers.items()))
                if user is not authn.user:
                    authn = AuthResponse(user, authn.audiences, authn.warnings)
                attrs = request_attributes(user, request.method, request.path, request.query)
                clock_host = self.clock_host
                if clock_host is not None and request.path.startswith(CLOCK_PATH):
                    if clock_host.needs_authorization(request.method, request.path):
                        allowed, reason = self.authorizer.authorize(attrs)
                        if not allowed:
                            raise forbidden_error(attrs, reason)
                    return await clock_host.handle(request)
                allowed, reason = self.authorizer.authorize(attrs)
                if not allowed:
                    raise forbidden_error(attrs, reason)
            except errors.StatusError as exc:
                return status_response(exc)
            request[AUTHENTICATED] = authn
            token = ESCALATION_CONTEXT.set(RequestAuth(self.authorizer, user))
        assert self.handlers is not None
        q = request.query
        counted = not _long_running(request.path, q)
        if counted:
            self.requests_in_flight += 1
            self._requests_seen += 1
        try:
            resp = await self._serve(request)
        finally:
            if counted:
                self.requests_in_flight -= 1
                self._requests_seen += 1
            if token is not None:
                ESCALATION_CONTEXT.reset(token)
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
            level = self.readonly_level
        else:
            level = self.mutating_level
        handlers = self.handlers
        try:
            return await level.run(lambda: handlers.handle(request))
        except Rejected as exc:
            # kube-apiserver's http.Error: text/plain, not a Status
            return web.Response(status=429, text=TOO_MANY_REQUESTS_MESSAGE + "\n",
                                headers={"Retry-After": str(exc.retry_after),
                                         "X-Content-Type-Options": "nosniff"})
