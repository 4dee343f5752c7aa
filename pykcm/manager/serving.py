"""The controller manager's HTTP(S) endpoints: health, metrics, configuration.

kube-controller-manager counterpart: the secure serving of
k8s.io/controller-manager (``NewBaseHandler``: ``/healthz`` from a
``MutableHealthzHandler``, ``/metrics``, ``/configz``) and the healthz
handlers of k8s.io/apiserver/pkg/server/healthz.

Endpoints:

- ``/healthz``: every check, in order: ``leaderElection`` (when electing),
  then one per running controller, named after it. All pass → 200 ``ok``
  (with ``?verbose``: ``[+]<name> ok`` lines then ``healthz check passed``).
  Any fails → 500 with every line (``[-]<name> failed: reason withheld``)
  and ``healthz check failed``; the reasons go to the log, as upstream keeps
  them off this public endpoint. ``?exclude=<name>`` skips a check.
- ``/healthz/<name>``: one check: 200 ``ok`` or 500 ``internal server
  error: <reason>``; 404 for an unknown name.
- ``/livez``, ``/readyz``: the same format; ``/livez`` has only ``ping``
  (the process serves), ``/readyz`` has every check of ``/healthz``.
- ``/metrics``: ``prometheus_client``'s default registry (workqueue, REST
  client, process metrics) followed by pykcm's own registry
  (:data:`pykcm.cache.metrics.REGISTRY`: informer metrics and
  ``leader_election_master_status``), in the Prometheus text format.
- ``/configz``: ``{"kubecontrollermanager.config.k8s.io": <options>}`` as JSON.

Data flow: the manager creates :class:`HealthChecks`, adds checks as
controllers start (the set is mutable, like upstream's), and starts a
:class:`ManagerServer` on ``--bind-address``: HTTPS on ``--secure-port``
with a self-signed certificate made at start-up (upstream
``MaybeDefaultWithSelfSignedCerts``: ``localhost``, 127.0.0.1 and the bind
address), and plain HTTP on the pykcm-only ``--port``.

Every HTTPS request passes the delegated authentication and authorization of
:mod:`pykcm.manager.delegated_auth` first (upstream's ``WithAuthentication`` and
``WithAuthorization`` filters): 401 for a token the API server rejects, 403 when
its SubjectAccessReview denies; ``--authorization-always-allow-paths``
(``/healthz``, ``/readyz``, ``/livez`` and below them by default) go to anyone.
The plain-HTTP ``--port`` is served without either, as kube-controller-manager's
insecure port was (off by default).
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from pykcm.cache.metrics import REGISTRY as PYKCM_REGISTRY
from pykcm.manager.delegated_auth import DelegatedAuth

__all__ = [
    "CONFIGZ_NAME",
    "HealthCheck",
    "HealthChecks",
    "ManagerServer",
    "render_health",
    "self_signed_context",
]

log = logging.getLogger("pykcm.manager.serving")

CONFIGZ_NAME = "kubecontrollermanager.config.k8s.io"

HealthCheck = Callable[[], str | None]
"""A named check: None when healthy, else the reason."""


class HealthChecks:
    """An ordered, mutable set of named checks (upstream ``MutableHealthzHandler``)."""

    def __init__(self) -> None:
        self._checks: dict[str, HealthCheck] = {}
        self._lock = threading.Lock()

    def add(self, name: str, check: HealthCheck) -> None:
        with self._lock:
            self._checks[name] = check

    def remove(self, name: str) -> None:
        with self._lock:
            self._checks.pop(name, None)

    def names(self) -> list[str]:
        with self._lock:
            return list(self._checks)

    def get(self, name: str) -> HealthCheck | None:
        with self._lock:
            return self._checks.get(name)

    def run(self, exclude: frozenset[str] = frozenset()) -> list[tuple[str, str | None]]:
        """(name, None or reason) for every check not excluded; a check that raises fails."""
        with self._lock:
            checks = list(self._checks.items())
        return [(name, _run_check(fn)) for name, fn in checks if name not in exclude]


def _run_check(fn: HealthCheck) -> str | None:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a broken check is a failed check
        return str(exc) or type(exc).__name__


def render_health(results: Sequence[tuple[str, str | None]], *, verbose: bool,
                  endpoint: str = "healthz") -> tuple[int, str]:
    """(status, body) of a health endpoint, in Kubernetes' format."""
    lines = "".join(f"[+]{name} ok\n" if reason is None else
                    f"[-]{name} failed: reason withheld\n" for name, reason in results)
    if any(reason is not None for _, reason in results):
        return 500, f"{lines}{endpoint} check failed\n"
    if not verbose:
        return 200, "ok"
    return 200, f"{lines}{endpoint} check passed\n"


def self_signed_context(hosts: list[str]) -> ssl.SSLContext:
    """A server SSLContext with a fresh self-signed certificate for ``hosts`` (+ localhost,
    127.0.0.1). The key never touches a disk file readable by others."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
    ips = {"127.0.0.1"}
    for h in hosts:
        try:
            addr = ipaddress.ip_address(h)
        except ValueError:
            if h:
                sans.append(x509.DNSName(h))
            continue
        if not addr.is_unspecified:
            ips.add(str(addr))
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in sorted(ips)]
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                         f"localhost@{int(now.timestamp())}")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    # load_cert_chain reads files only: a private temporary directory, removed at once.
    with tempfile.TemporaryDirectory(prefix="pykcm-cm-") as d:
        crt, pem = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        with open(crt, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        fd = os.open(pem, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        ctx.load_cert_chain(crt, pem)
    return ctx


class ManagerServer:
    """The aiohttp server of the endpoints above, on one or two ports."""

    def __init__(self, checks: HealthChecks, configz: Callable[[], dict[str, Any]], *,
                 bind_address: str, secure_port: int = 0, port: int = 0,
                 auth: DelegatedAuth | None = None) -> None:
        self.checks = checks
        self.auth = auth
        self._configz = configz
        self.bind_address = bind_address
        self.secure_port = secure_port
        self.port = port
        self._runner: web.AppRunner | None = None
        self.urls: list[str] = []

    @web.middleware
    async def _delegated_auth(self, request: web.Request,
                              handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        """HTTPS requests: authenticated and authorized by the API server first."""
        if self.auth is not None and request.secure:
            refusal = await self.auth.check(request.headers.get("Authorization"),
                                            request.method, request.path, request.path_qs)
            if refusal is not None:
                headers = {"X-Content-Type-Options": "nosniff"}
                if isinstance(refusal.body, str):
                    return web.Response(status=refusal.code, text=refusal.body,
                                        content_type="text/plain", headers=headers)
                # Go's json.Encoder ends the body with a newline
                return web.Response(status=refusal.code, body=orjson.dumps(refusal.body) + b"\n",
                                    content_type="application/json", headers=headers)
        response: web.StreamResponse = await handler(request)
        return response

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._delegated_auth])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/healthz/{name}", self._healthz_one)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/readyz/{name}", self._healthz_one)
        app.router.add_get("/livez", self._livez)
        app.router.add_get("/livez/ping", self._ping)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/configz", self._configz_handler)
        return app

    async def start(self) -> None:
        """Listen on the configured ports (OSError when a port is taken)."""
        if not self.secure_port and not self.port:
            return
        self._runner = web.AppRunner(self._app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        host = self.bind_address
        try:
            if self.secure_port:
                ctx = self_signed_context([host])
                site = web.TCPSite(self._runner, host, self.secure_port, ssl_context=ctx)
                await site.start()
                self.urls.append(f"https://{_url_host(host)}:{self.secure_port}")
            if self.port:
                site = web.TCPSite(self._runner, host, self.port)
                await site.start()
                self.urls.append(f"http://{_url_host(host)}:{self.port}")
        except BaseException:
            await self.stop()
            raise
        log.info("Serving healthz, metrics and configz on %s", ", ".join(self.urls))

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- handlers --------------------------------------------------------------------

    def _health(self, request: web.Request, endpoint: str,
                results: list[tuple[str, str | None]]) -> web.Response:
        status, body = render_health(results, verbose="verbose" in request.query,
                                     endpoint=endpoint)
        failed = [f"[-]{n} failed: {r}" for n, r in results if r is not None]
        if failed:
            log.info("%s check failed:\n%s", endpoint, "\n".join(failed))
        return web.Response(status=status, text=body, content_type="text/plain",
                            charset="utf-8", headers={"X-Content-Type-Options": "nosniff"})

    async def _healthz(self, request: web.Request) -> web.Response:
        exclude = frozenset(request.query.getall("exclude", []))
        return self._health(request, "healthz", self.checks.run(exclude))

    async def _readyz(self, request: web.Request) -> web.Response:
        exclude = frozenset(request.query.getall("exclude", []))
        return self._health(request, "readyz", [("ping", None), *self.checks.run(exclude)])

    async def _livez(self, request: web.Request) -> web.Response:
        return self._health(request, "livez", [("ping", None)])

    async def _ping(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def _healthz_one(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name == "ping":
            return await self._ping(request)
        check = self.checks.get(name)
        if check is None:
            return web.Response(status=404, text="404 page not found\n",
                                content_type="text/plain")
        reason = _run_check(check)
        if reason is not None:
            return web.Response(status=500, text=f"internal server error: {reason}\n",
                                content_type="text/plain")
        return web.Response(text="ok", content_type="text/plain")

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(REGISTRY) + PYKCM_REGISTRY.expose().encode()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _configz_handler(self, request: web.Request) -> web.Response:
        body = orjson.dumps({CONFIGZ_NAME: self._configz()})
        return web.Response(body=body, content_type="application/json")


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host
