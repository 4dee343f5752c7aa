"""LegacySATokenCleaner: labels, then deletes, auto-generated legacy tokens nobody uses.

kube-controller-manager v1.36 ``pkg/controller/serviceaccount/legacy_serviceaccount_token_cleaner.go``
(manager name ``legacy-serviceaccount-token-cleaner-controller``, on by default;
client ``legacy-service-account-token-cleaner``).

Data flow (no queue: one pass at start, then every ``sync_interval``, 24 h)::

    GET kube-system/kube-apiserver-legacy-service-account-token-tracking
        data.since = the day the API server began tracking token use
        tracking for less than --legacy-service-account-token-clean-up-period (365 d)
        after the day after ``since``? ─► nothing this time
    every cached Secret of type service-account-token, created before now - period,
    not being deleted, whose kubernetes.io/legacy-token-last-used label (if any) is older
    than the period, that its account (cached, UID-matched) lists in ``.secrets`` (an
    auto-generated one) and that no pod of its namespace references:
        no valid kubernetes.io/legacy-token-invalid-since label ─► merge patch it to today
        invalid since before now - period ─► DELETE (resourceVersion precondition)

With upstream's defaults this does nothing for a year after the API server
starts tracking: on a new cluster the pass is a single GET a day. The
label patch is a JSON merge patch of the apply configuration upstream sends
(name, namespace, uid, the label).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock, wait_event
from pykcm.api.serviceaccount import (
    INVALID_SINCE_LABEL_KEY,
    LAST_USED_LABEL_KEY,
    LEGACY_TOKEN_TRACKING_CONFIGMAP,
    LEGACY_TOKEN_TRACKING_SINCE_KEY,
    SECRET_TYPE_SERVICE_ACCOUNT_TOKEN,
    SERVICE_ACCOUNT_NAME_KEY,
    SERVICE_ACCOUNT_UID_KEY,
    pod_secret_names,
)
from pykcm.api.timestamps import parse_datetime
from pykcm.cache.synced import wait_for_named_cache_sync
from pykcm.client import Client
from pykcm.client.errors import ApiError, is_conflict, is_not_found
from pykcm.informers.generic import GenericInformer

__all__ = ["DEFAULT_CLEAN_UP_PERIOD", "DEFAULT_SYNC_INTERVAL", "LegacySATokenCleaner"]

log = logging.getLogger("pykcm.controllers.serviceaccount")

DEFAULT_CLEAN_UP_PERIOD: Final = 365 * 24 * 3600.0
"""--legacy-service-account-token-clean-up-period's default (8760h)."""
DEFAULT_SYNC_INTERVAL: Final = 24 * 3600.0
DATE_FORMAT: Final = "%Y-%m-%d"


def _parse_date(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text, DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


class LegacySATokenCleaner:
    """Deletes auto-generated legacy token Secrets unused for ``clean_up_period`` seconds.

    ``clock()`` is the current time (aware datetime; tests move it).
    """

    name = "legacy-serviceaccount-token-cleaner"

    def __init__(self, *, client: Client, sa_informer: GenericInformer,
                 secret_informer: GenericInformer, pod_informer: GenericInformer,
                 clean_up_period: float = DEFAULT_CLEAN_UP_PERIOD,
                 sync_interval: float = DEFAULT_SYNC_INTERVAL,
                 clock: Clock | Callable[[], datetime] | None = None) -> None:
        if not clean_up_period > 0:
            raise ValueError(f"invalid CleanUpPeriod: {clean_up_period}")
        if not sync_interval > 0:
            raise ValueError(f"invalid SyncInterval: {sync_interval}")
        self.client = client
        self.sa_lister = sa_informer.lister
        self.secret_lister = secret_informer.lister
        self.pod_lister = pod_informer.lister
        self._synced = [sa_informer.informer.has_synced, secret_informer.informer.has_synced,
                        pod_informer.informer.has_synced]
        self.minimum_since_last_used = timedelta(seconds=clean_up_period)
        self.sync_interval = sync_interval
        # A Clock (its utcnow, and the pass interval waits on it), or a bare function
        # returning an aware datetime (tests), with real-time intervals.
        self._time: Clock = clock if isinstance(clock, Clock) else REAL_CLOCK
        self.clock: Callable[[], datetime] = (clock if clock is not None and not isinstance(
            clock, Clock) else self._time.utcnow)
        self._stop = asyncio.Event()
        self._failure: str | None = None

    async def run(self, workers: int | None = None) -> None:
        """Evaluate the tokens now and every ``sync_interval`` until :meth:`shutdown`."""
        log.info("Starting legacy service account token cleaner controller")
        try:
            if not await wait_for_named_cache_sync(self.name, *self._synced):
                return
            while not self._stop.is_set():
                try:
                    await self.evaluate_sa_tokens()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - upstream logs and waits for the next pass
                    log.error("legacy token cleaner pass failed: %s", exc)
                await wait_event(self._time, self._stop, self.sync_interval)
        finally:
            log.info("Shutting down legacy service account token cleaner controller")

    def shutdown(self) -> None:
        self._stop.set()

    def health_check(self) -> str | None:
        return self._failure

    async def _tracked_since(self) -> datetime:
        cm = await self.client.get("configmaps", LEGACY_TOKEN_TRACKING_CONFIGMAP, "kube-system")
        since = (cm.get("data") or {}).get(LEGACY_TOKEN_TRACKING_SINCE_KEY)
        if since is None:
            raise ValueError("configMap does not have since label")
        t = _parse_date(since)
        if t is None:
            raise ValueError(f"error parsing trackedSince time: {since!r}")
        return t + timedelta(days=1)

    async def evaluate_sa_tokens(self) -> None:
        """One pass (upstream ``evaluateSATokens``)."""
        now = self.clock().astimezone(UTC)
        try:
            tracked_since = await self._tracked_since()
        except (ApiError, ValueError) as exc:
            log.error("Getting lastest possible tracked_since time: %s", exc)
            return
        if now < tracked_since + self.minimum_since_last_used:
            return  # not tracking long enough
        preserve_created_after = now - self.minimum_since_last_used
        preserve_used_after = preserve_created_after.strftime(DATE_FORMAT)
        used_by_namespace: dict[str, set[str]] = {}
        for secret in self.secret_lister.list():
            if secret.get("type") != SECRET_TYPE_SERVICE_ACCOUNT_TOKEN:
                continue
            m = meta_of(secret)
            created = parse_datetime(m.get("creationTimestamp"))
            if created is None or not created < preserve_created_after:
                continue
            if m.get("deletionTimestamp"):
                continue
            labels = m.get("labels") or {}
            ns, name = str(m.get("namespace")), str(m.get("name"))
            last_used = labels.get(LAST_USED_LABEL_KEY)
            if last_used is not None:
                if _parse_date(last_used) is None:
                    log.error("Parsing lastUsed time of %s/%s: %r", ns, name, last_used)
                    continue
                if last_used >= preserve_used_after:
                    continue
            sa = self._service_account(secret)
            if sa is None or not any(r.get("name") == name for r in sa.get("secrets") or ()):
                continue  # cannot tell it was auto-generated
            if ns not in used_by_namespace:
                used: set[str] = set()
                for pod in self.pod_lister.by_namespace(ns).list():
                    used |= pod_secret_names(pod)
                used_by_namespace[ns] = used
            if name in used_by_namespace[ns]:
                continue  # still mounted
            invalid_since = labels.get(INVALID_SINCE_LABEL_KEY)
            if _parse_date(invalid_since) is None:
                today = now.strftime(DATE_FORMAT)
                log.info("Mark the auto-generated service account token as invalid: %s/%s "
                         "(invalidSince %s)", ns, name, today)
                try:
                    await self.client.patch("secrets", name, {
                        "kind": "Secret", "apiVersion": "v1",
                        "metadata": {"name": name, "namespace": ns, "uid": m.get("uid"),
                                     "labels": {INVALID_SINCE_LABEL_KEY: today}}},
                        "merge", ns)
                except ApiError as exc:
                    log.error("Failed to label legacy service account token secret with "
                              "invalid since date: %s", exc)
                continue
            assert invalid_since is not None
            if invalid_since >= preserve_used_after:
                continue
            log.info("Delete auto-generated service account token %s/%s", ns, name)
            try:
                await self.client.delete("secrets", name, ns, preconditions={
                    "resourceVersion": m.get("resourceVersion")})
            except ApiError as exc:
                if not (is_conflict(exc) or is_not_found(exc)):
                    log.error("Deleting legacy service account token %s/%s: %s", ns, name, exc)

    def _service_account(self, secret: Mapping[str, Any]) -> Mapping[str, Any] | None:
        ann = meta_of(secret).get("annotations") or {}
        sa_name = ann.get(SERVICE_ACCOUNT_NAME_KEY)
        if not sa_name:
            return None
        try:
            sa: Mapping[str, Any] = self.sa_lister.by_namespace(
                str(meta_of(secret).get("namespace"))).get(sa_name)
        except ApiError as exc:
            if is_not_found(exc):
                return None
            raise
        uid = ann.get(SERVICE_ACCOUNT_UID_KEY)
        return sa if not uid or uid == meta_of(sa).get("uid") else None
