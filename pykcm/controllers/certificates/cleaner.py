"""The CSR cleaner controller: CertificateSigningRequests past their usefulness are deleted.

kube-controller-manager v1.36 ``pkg/controller/certificates/cleaner``
(``certificatesigningrequest-cleaner-controller``).

Data flow: every hour (and once at start) a pass over the informer's cache deletes each CSR
that is issued and approved more than 1 h ago, denied or failed more than 1 h ago (by the
condition's lastUpdateTime), pending (no condition) for more than 24 h since its creation,
approved but unissued for more than 24 h, or whose issued certificate has expired.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from cryptography import x509

from pykcm.api.clock import Clock, clock_of
from pykcm.api.timestamps import parse_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client
from pykcm.client.errors import is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.informers.generic import GenericInformer

__all__ = ["POLLING_INTERVAL", "CSRCleanerController", "should_clean"]

log = logging.getLogger("pykcm.controllers.certificates.cleaner")

POLLING_INTERVAL: Final = 3600.0
_APPROVED: Final = 3600.0
_DENIED: Final = 3600.0
_PENDING: Final = 24 * 3600.0
_KEY: Final = "csr-cleaner"


def _older(value: Any, age: float, now: float) -> bool:
    t = parse_time(value) if isinstance(value, str) else None
    return t is not None and now - t > age


def _certificate_expired(data: Any, now: float) -> bool:
    try:
        pem = base64.b64decode(data)
        cert = x509.load_pem_x509_certificate(pem)
    except (binascii.Error, ValueError, TypeError):
        return False
    return now > cert.not_valid_after_utc.timestamp()


def should_clean(csr: Mapping[str, Any], now: float) -> bool:
    """Whether the cleaner deletes ``csr`` at ``now`` (seconds since the epoch)."""
    status = csr.get("status") or {}
    conditions = status.get("conditions") or []
    issued = bool(status.get("certificate"))
    for c in conditions:
        t = c.get("type")
        updated = c.get("lastUpdateTime")
        if t == "Approved":
            if issued and (_older(updated, _APPROVED, now)
                           or _certificate_expired(status["certificate"], now)):
                return True
            if not issued and _older(updated, _PENDING, now):
                return True
        elif t in ("Denied", "Failed") and _older(updated, _DENIED, now):
            return True
    created = (csr.get("metadata") or {}).get("creationTimestamp")
    return not conditions and _older(created, _PENDING, now)


class CSRCleanerController(ControllerHost):
    def __init__(self, *, csr_informer: GenericInformer, client: Client,
                 polling_interval: float = POLLING_INTERVAL,
                 clock: Clock | Callable[[], float] | None = None) -> None:
        self.name = "certificatesigningrequest-cleaner"
        self.client = client
        self.polling_interval = polling_interval
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.now
        self.lister = csr_informer.lister
        self.controller = Controller("csrcleaner", self.reconcile, clock=self._time)
        reg = csr_informer.informer.add_event_handler(ResourceEventHandlerFuncs())
        self.controller.add_synced(reg.has_synced)

    async def run(self, workers: int | None = None) -> None:
        self.controller.enqueue_key(_KEY)
        await self.controller.run(1)

    async def reconcile(self, key: str) -> Result:
        await self.clean()
        return Result(requeue_after=self.polling_interval)

    async def clean(self) -> None:
        """One pass over the cache."""
        now = self.clock()
        for csr in self.lister.list():
            if not should_clean(csr, now):
                continue
            name = str((csr.get("metadata") or {}).get("name"))
            try:
                await self.client.delete("certificatesigningrequests", name)
            except Exception as exc:
                if not is_not_found(exc):
                    raise
            log.info("Cleaned CSR %s", name)


