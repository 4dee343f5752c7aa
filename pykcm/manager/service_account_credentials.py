"""Per-controller ServiceAccount credentials (``--use-service-account-credentials``).

kube-controller-manager counterpart: ``DynamicControllerClientBuilder`` and its
``tokenSourceImpl`` (k8s.io/controller-manager/pkg/clientbuilder).

Role: with the flag, each controller's client authenticates as the
ServiceAccount ``kube-system/<client name>`` (``system:serviceaccount:kube-system:replicaset-controller``,
...), which the API server's RBAC bootstrap policy binds to that controller's
``system:controller:<name>`` ClusterRole: a controller can do what its role
allows and no more. The manager's own credentials stay for the shared
informers, leader election and the service-account-token controller.

Data flow::

    ClientBuilder.client(name) ─► Config: the manager's with its credentials removed
        (server, CA, TLS name kept), user agent ".../system:serviceaccount:kube-system:<name>",
        token_source = ServiceAccountTokenSource(core client, kube-system, name)
    first request (and when the token nears its end, or after a 401):
        GET serviceaccounts/<name>; NotFound ─► ensure the namespace, POST the account
        POST serviceaccounts/<name>/token {spec: {expirationSeconds: 3600}}
        cached until 80 % of its lifetime (at least 10 minutes) has passed
        failures retried 4 times, 0.5 s doubling, then the request fails

The accounts of the controllers that were built are created before the
informers start (:meth:`ServiceAccountTokenSource.ensure_service_account`),
as upstream's builder does when a controller asks for its client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from pykcm.api.clock import Clock, clock_of
from pykcm.client import Client
from pykcm.client.errors import ApiError, is_already_exists, is_not_found

__all__ = ["DEFAULT_EXPIRATION_SECONDS", "DEFAULT_LEEWAY_PERCENT", "ServiceAccountTokenSource",
           "get_or_create_service_account"]

log = logging.getLogger("pykcm.manager")

DEFAULT_EXPIRATION_SECONDS: Final = 3600
DEFAULT_LEEWAY_PERCENT: Final = 20
MIN_LIFETIME: Final = 600.0
BACKOFF: Final = (0.5, 2.0, 4)
"""wait.Backoff of a token fetch: first delay, factor, attempts."""


async def get_or_create_service_account(core: Client, namespace: str, name: str
                                        ) -> dict[str, Any]:
    """The account, created (with its namespace, if that is missing) when it does not exist."""
    try:
        return await core.get("serviceaccounts", name, namespace)
    except ApiError as exc:
        if not is_not_found(exc):
            raise
    try:
        await core.get("namespaces", namespace)
    except ApiError as exc:
        if is_not_found(exc):
            try:
                await core.create("namespaces", {"metadata": {"name": namespace}})
            except ApiError as create_exc:
                if not is_already_exists(create_exc):
                    log.warning("create non-exist namespace %s failed:%s", namespace, create_exc)
    try:
        return await core.create("serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace}}, namespace)
    except ApiError as exc:
        if is_already_exists(exc):
            return await core.get("serviceaccounts", name, namespace)
        raise


class ServiceAccountTokenSource:
    """TokenRequest tokens of ``namespace/name``, cached and renewed (a client's TokenSource)."""

    def __init__(self, core: Client, namespace: str, name: str, *,
                 expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
                 leeway_percent: int = DEFAULT_LEEWAY_PERCENT,
                 clock: Clock | Callable[[], float] | None = None) -> None:
        self.core = core
        self.namespace = namespace
        self.name = name
        self.expiration_seconds = expiration_seconds
        self.leeway_percent = leeway_percent
        self._time = clock_of(clock)
        self._clock = self._time.now  # wall: compared with expirationTimestamp
        self._token: str | None = None
        self._expiry = 0.0
        self._lock = asyncio.Lock()
        self._ensured = False

    async def ensure_service_account(self) -> None:
        """Create the account now if it is missing (once)."""
        if not self._ensured:
            await get_or_create_service_account(self.core, self.namespace, self.name)
            self._ensured = True

    def reset(self) -> None:
        self._expiry = 0.0

    async def token(self) -> str:
        if self._token is not None and self._clock() < self._expiry:
            return self._token
        async with self._lock:
            if self._token is not None and self._clock() < self._expiry:
                return self._token
            token, expires = await self._request()
            now = self._clock()
            lifetime = max(expires - now, MIN_LIFETIME)  # clock skew: pin to 10 minutes
            self._token = token
            self._expiry = now + lifetime - lifetime * self.leeway_percent / 100
            return token

    async def _request(self) -> tuple[str, float]:
        delay, factor, attempts = BACKOFF
        last: BaseException | None = None
        for attempt in range(attempts):
            try:
                await get_or_create_service_account(self.core, self.namespace, self.name)
                tr = await self.core.create("serviceaccounts", {
                    "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "metadata": {"name": self.name},
                    "spec": {"expirationSeconds": self.expiration_seconds}},
                    self.namespace, subresource="token")
                status = tr.get("status") or {}
                token = status.get("token")
                stamp = status.get("expirationTimestamp")
                if not token or not stamp:
                    raise ValueError("nil pointer of expiration in token request")
                expires = datetime.fromisoformat(str(stamp)).astimezone(UTC).timestamp()
                return str(token), expires
            except (ApiError, ValueError, OSError) as exc:
                last = exc
                log.warning("get token failed: %s", exc)
            if attempt < attempts - 1:
                await self._time.sleep(delay)
                delay *= factor
        raise RuntimeError(f"failed to get token for {self.namespace}/{self.name}: {last}")
