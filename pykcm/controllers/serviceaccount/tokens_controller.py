"""TokensController: fills in and cleans up ``kubernetes.io/service-account-token`` Secrets.

kube-controller-manager v1.36 ``pkg/controller/serviceaccount/tokens_controller.go``
(manager name ``serviceaccount-token-controller``, client ``tokens-controller``).

Data flow::

    serviceaccount informer ── add / update / delete ──► SA queue    (ns, name, uid)
    secret informer (type service-account-token only)
                            ── add / update / delete ──► secret queue (ns, name, uid,
                                                                       account name, uid)
    both queues "serviceaccount_tokens_service", workers × --concurrent-serviceaccount-token-syncs

    sync_service_account: the account is gone from the cache
        ─► DELETE each of its token Secrets (UID precondition)
    sync_secret:
        Secret gone ─► its account (cached) still lists it in .secrets: PUT the account
                       without it (retried on conflict)
        account gone (cache, then a GET) ─► DELETE the Secret
        else, if ca.crt differs from the root CA, namespace or token is empty:
            GET the live Secret (a newer one than the cache: skip, an event will follow)
            set ca.crt, namespace, token (a legacy JWT: pykcm.api.serviceaccount),
            the account name/uid annotations ─► PUT (a conflict: skip)

A failed step is retried through the rate limiter at most ``max_retries``
(10) times when the failure is worth retrying, as upstream's ``retryOrForget``.
Keys are JSON arrays of the parts above (the queues hold strings).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.randomness import RandomSource, random_of
from pykcm.api.serviceaccount import (
    SECRET_TYPE_SERVICE_ACCOUNT_TOKEN,
    SERVICE_ACCOUNT_NAME_KEY,
    SERVICE_ACCOUNT_NAMESPACE_KEY,
    SERVICE_ACCOUNT_ROOT_CA_KEY,
    SERVICE_ACCOUNT_TOKEN_KEY,
    SERVICE_ACCOUNT_UID_KEY,
    JWTTokenGenerator,
    is_service_account_token,
    legacy_claims,
)
from pykcm.cache.event_handlers import FilteringResourceEventHandler, ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.client.errors import ApiError, is_conflict, is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.informers.generic import GenericInformer

__all__ = ["MAX_RETRIES", "QUEUE_NAME", "TokensController"]

log = logging.getLogger("pykcm.controllers.serviceaccount")

MAX_RETRIES: Final = 10
QUEUE_NAME: Final = "serviceaccount_tokens_service"
"""Both queues' name (upstream gives the secret queue the service queue's name too)."""
REMOVE_TOKEN_BACKOFF: Final = (10, 0.1, 1.0)
"""RetryOnConflict of removing a reference: steps, duration, jitter (upstream RemoveTokenBackoff)."""


def _data(secret: Mapping[str, Any], key: str) -> bytes:
    raw = (secret.get("data") or {}).get(key)
    if not raw:
        return b""
    try:
        return base64.b64decode(raw)
    except ValueError:
        return b""


class TokensController(ControllerHost):
    """Keeps the token Secrets of service accounts populated, and deletes orphaned ones.

    ``token_generator`` signs the legacy tokens; ``root_ca`` goes into ``ca.crt``
    (empty: not set). Build it before the informers start.
    """

    name = "serviceaccount-token"
    default_workers = 5

    def __init__(self, *, client: Client, sa_informer: GenericInformer,
                 secret_informer: GenericInformer, token_generator: JWTTokenGenerator,
                 root_ca: bytes = b"", max_retries: int = MAX_RETRIES,
                 clock: Clock | None = None, rng: RandomSource | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self._rng = random_of(rng)  # the ServiceAccount update retries' jitter
        self.client = client
        self.token = token_generator
        self.root_ca = root_ca
        self.max_retries = max_retries
        self.sa_lister = sa_informer.lister
        self.secret_lister = secret_informer.lister
        self.sa_controller = Controller(QUEUE_NAME, self.sync_service_account, clock=self._time)
        self.secret_controller = Controller(QUEUE_NAME, self.sync_secret, clock=self._time)
        self.controller = self.sa_controller

        def queue_sa(obj: Any) -> None:
            o = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            m = meta_of(o)
            self.sa_controller.enqueue_key(json.dumps(
                [m.get("namespace") or "", m.get("name") or "", m.get("uid") or ""]))

        def queue_secret(obj: Any) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                return  # upstream's handler ignores tombstones
            m = meta_of(obj)
            ann = m.get("annotations") or {}
            self.secret_controller.enqueue_key(json.dumps(
                [m.get("namespace") or "", m.get("name") or "", m.get("uid") or "",
                 ann.get(SERVICE_ACCOUNT_NAME_KEY) or "", ann.get(SERVICE_ACCOUNT_UID_KEY) or ""]))

        self.sa_controller.watch(sa_informer, ResourceEventHandlerFuncs(
            add_func=queue_sa, update_func=lambda old, new: queue_sa(new),
            delete_func=queue_sa))
        self.sa_controller.add_synced(secret_informer.informer.has_synced)
        self.secret_controller.watch(secret_informer, FilteringResourceEventHandler(
            lambda o: not isinstance(o, DeletedFinalStateUnknown)
            and o.get("type") == SECRET_TYPE_SERVICE_ACCOUNT_TOKEN,
            ResourceEventHandlerFuncs(add_func=queue_secret,
                                      update_func=lambda old, new: queue_secret(new),
                                      delete_func=queue_secret)))
        self.secret_controller.add_synced(sa_informer.informer.has_synced)

    # -- running -------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Both queues' workers (``workers`` each) until :meth:`shutdown`."""
        n = self.default_workers if workers is None else workers
        tasks = [asyncio.create_task(self.sa_controller.run(n), name="tokens-serviceaccounts"),
                 asyncio.create_task(self.secret_controller.run(n), name="tokens-secrets")]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.shutdown()
            for t in tasks:
                if not t.done():
                    t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def health_check(self) -> str | None:
        return self.sa_controller.health_check() or self.secret_controller.health_check()

    def shutdown(self) -> None:
        self.sa_controller.shutdown()
        self.secret_controller.shutdown()

    def _retry(self, ctl: Controller, key: str, retry: bool) -> Result | None:
        """upstream retryOrForget: rate-limited retry while under max_retries."""
        if retry and ctl.queue.num_requeues(key) < self.max_retries:
            return Result(requeue=True)
        if retry:
            log.debug("retried several times: %s", key)
        return None

    # -- service accounts ----------------------------------------------------------------

    async def sync_service_account(self, key: str) -> Result | None:
        parts = json.loads(key)
        if len(parts) != 3 or not all(parts):
            log.error("invalid serviceaccount key: %s", key)
            return None
        ns, name, uid = parts
        retry = False
        try:
            sa = await self._get_service_account(ns, name, uid, fetch_on_cache_miss=False)
            if sa is None:
                log.debug("Service account deleted, removing tokens: %s/%s", ns, name)
                retry = await self._delete_tokens(ns, name, uid)
        except ApiError as exc:
            log.error("Getting service account %s/%s: %s", ns, name, exc)
            retry = True
        return self._retry(self.sa_controller, key, retry)

    async def _delete_tokens(self, ns: str, name: str, uid: str) -> bool:
        sa = {"metadata": {"namespace": ns, "name": name, "uid": uid}}
        retry = False
        errors: list[str] = []
        for secret in self.secret_lister.by_namespace(ns).list():
            if not is_service_account_token(secret, sa):
                continue
            m = meta_of(secret)
            r, err = await self._delete_token(ns, str(m.get("name")), str(m.get("uid") or ""))
            retry = retry or r
            if err is not None:
                errors.append(err)
        if errors:
            log.error("Error deleting serviceaccount tokens of %s/%s: %s", ns, name,
                      "; ".join(errors))
        return retry

    async def _delete_token(self, ns: str, name: str, uid: str) -> tuple[bool, str | None]:
        try:
            await self.client.delete("secrets", name, ns,
                                     preconditions={"uid": uid} if uid else None)
        except ApiError as exc:
            if is_not_found(exc) or is_conflict(exc):
                return False, None
            return True, str(exc)
        return False, None

    # -- secrets -------------------------------------------------------------------------

    async def sync_secret(self, key: str) -> Result | None:
        parts = json.loads(key)
        if len(parts) != 5 or not all(parts[:4]):
            log.error("invalid secret key: %s", key)
            return None
        ns, name, uid, sa_name, sa_uid = parts
        retry = False
        secret = self._get_secret(ns, name, uid)
        if secret is None:
            # The Secret is gone: drop the account's reference to it.
            try:
                sa = await self._get_service_account(ns, sa_name, sa_uid,
                                                     fetch_on_cache_miss=False)
            except ApiError:
                sa = None
            if sa is not None:
                try:
                    await self._remove_secret_reference(ns, sa_name, sa_uid, name)
                except ApiError as exc:
                    log.error("Removing secret reference %s/%s: %s", ns, name, exc)
            return self._retry(self.secret_controller, key, False)
        try:
            sa = await self._get_service_account(ns, sa_name, sa_uid, fetch_on_cache_miss=True)
        except ApiError as exc:
            log.error("Getting service account %s/%s: %s", ns, sa_name, exc)
            return self._retry(self.secret_controller, key, True)
        if sa is None:
            log.debug("Service account does not exist, deleting token %s/%s", ns, name)
            retry, err = await self._delete_token(ns, name, uid)
            if err is not None:
                log.error("Deleting serviceaccount token %s/%s: %s", ns, name, err)
        else:
            try:
                retry = await self._generate_token_if_needed(sa, secret)
            except ApiError as exc:
                log.error("Populating serviceaccount token %s/%s: %s", ns, name, exc)
                retry = not is_not_found(exc)
        return self._retry(self.secret_controller, key, retry)

    def _update_needed(self, secret: Mapping[str, Any]) -> tuple[bool, bool, bool]:
        needs_ca = bool(self.root_ca) and _data(secret, SERVICE_ACCOUNT_ROOT_CA_KEY) != self.root_ca
        needs_ns = not _data(secret, SERVICE_ACCOUNT_NAMESPACE_KEY)
        needs_token = not _data(secret, SERVICE_ACCOUNT_TOKEN_KEY)
        return needs_ca, needs_ns, needs_token

    async def _generate_token_if_needed(self, sa: Mapping[str, Any],
                                        cached: Mapping[str, Any]) -> bool:
        """Fill the Secret in; True when a failure should be retried (ApiError: the GET)."""
        if not any(self._update_needed(cached)):
            return False
        m = meta_of(cached)
        ns, name = str(m.get("namespace")), str(m.get("name"))
        live = await self.client.get("secrets", name, ns)
        if meta_of(live).get("resourceVersion") != m.get("resourceVersion"):
            log.debug("Secret is not up to date, skipping token population: %s/%s", ns, name)
            return False
        needs_ca, needs_ns, needs_token = self._update_needed(live)
        if not (needs_ca or needs_ns or needs_token):
            return False
        data = live.setdefault("data", {})
        if data is None:
            data = live["data"] = {}
        if needs_ca:
            data[SERVICE_ACCOUNT_ROOT_CA_KEY] = base64.b64encode(self.root_ca).decode()
        if needs_ns:
            data[SERVICE_ACCOUNT_NAMESPACE_KEY] = base64.b64encode(ns.encode()).decode()
        if needs_token:
            claims, private = legacy_claims(sa, live)
            token = self.token.generate_token(claims, private)
            data[SERVICE_ACCOUNT_TOKEN_KEY] = base64.b64encode(token.encode()).decode()
        meta = live.setdefault("metadata", {})
        ann = meta.get("annotations") or {}
        ann[SERVICE_ACCOUNT_NAME_KEY] = meta_of(sa).get("name")
        ann[SERVICE_ACCOUNT_UID_KEY] = meta_of(sa).get("uid")
        meta["annotations"] = ann
        try:
            await self.client.update("secrets", live, ns)
        except ApiError as exc:
            if is_conflict(exc) or is_not_found(exc):
                return False
            log.error("Populating serviceaccount token %s/%s: %s", ns, name, exc)
            return True
        return False

    async def _remove_secret_reference(self, ns: str, sa_name: str, sa_uid: str,
                                       secret_name: str) -> None:
        steps, duration, jitter = REMOVE_TOKEN_BACKOFF
        for step in range(steps):
            try:
                sa = await self.client.get("serviceaccounts", sa_name, ns)
            except ApiError as exc:
                if is_not_found(exc):
                    return
                raise
            if sa_uid and sa_uid != meta_of(sa).get("uid"):
                return
            refs = sa.get("secrets") or []
            if not any(r.get("name") == secret_name for r in refs):
                return
            sa["secrets"] = [r for r in refs if r.get("name") != secret_name]
            try:
                await self.client.update("serviceaccounts", sa, ns)
                return
            except ApiError as exc:
                if is_not_found(exc):
                    return
                if not is_conflict(exc) or step == steps - 1:
                    raise
            await self._time.sleep(duration * (1 + self._rng.random() * jitter))

    # -- lookups -------------------------------------------------------------------------

    async def _get_service_account(self, ns: str, name: str, uid: str, *,
                                   fetch_on_cache_miss: bool) -> dict[str, Any] | None:
        """The account (cache, then the server when asked); None if gone or another UID."""
        try:
            sa: Mapping[str, Any] | None = self.sa_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            sa = None
        if sa is not None and (not uid or uid == meta_of(sa).get("uid")):
            return copy.deepcopy(dict(sa))
        if not fetch_on_cache_miss:
            return None
        try:
            live = await self.client.get("serviceaccounts", name, ns)
        except ApiError as exc:
            if is_not_found(exc):
                return None
            raise
        if not uid or uid == meta_of(live).get("uid"):
            return live
        return None

    def _get_secret(self, ns: str, name: str, uid: str) -> Mapping[str, Any] | None:
        try:
            secret: Mapping[str, Any] = self.secret_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if is_not_found(exc):
                return None
            raise
        if not uid or uid == meta_of(secret).get("uid"):
            return secret
        return None
