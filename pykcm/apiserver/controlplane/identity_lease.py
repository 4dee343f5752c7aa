"""The API server's identity Lease: kube-system/apiserver-<hash>, renewed while it runs.

kube-apiserver counterparts: the ``start-kube-apiserver-identity-lease-controller`` post-start
hook (``pkg/controlplane/apiserver/server.go``: client-go's ``lease.Controller`` with
``labelAPIServerHeartbeatFunc``) and the server ID of ``k8s.io/apiserver``'s config
(``apiserver-`` + base32 of the first 16 bytes of SHA-256 over the length-prefixed host
name and ``kube-apiserver``). Every cluster has one per API server; clients (``kubectl
get leases -n kube-system``, storage-version and peer-proxy machinery) read it.

Data flow::

    start ──► Lease kube-system/apiserver-<hash> (labels apiserver.kubernetes.io/identity:
              kube-apiserver, kubernetes.io/hostname), holderIdentity <name>_<uuid of this
              run>, leaseDurationSeconds 3600, renewTime now; created if missing
          ──► every 10 s: renewTime moved (and the labels and holder restored)

Deliberate deviation: the garbage collection of expired identity leases (of servers gone,
hourly upstream) is left out: one server, one host name, one lease.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import socket
import struct
from typing import TYPE_CHECKING, Any, Final

from pykcm.api.timestamps import format_micro_time
from pykcm.apiserver.errors import StatusError

if TYPE_CHECKING:
    from pykcm.apiserver.registry.rest_storage import RESTStorage

__all__ = ["IdentityLease", "server_id"]

log = logging.getLogger(__name__)

NAMESPACE: Final = "kube-system"
DURATION_SECONDS: Final = 3600
RENEW_INTERVAL: Final = 10.0
IDENTITY_LABEL: Final = "apiserver.kubernetes.io/identity"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
COMPONENT: Final = "kube-apiserver"


def server_id(hostname: str) -> str:
    """The server ID kube-apiserver derives from its host name."""
    data = b"".join(struct.pack(">H", len(part)) + part
                    for part in (hostname.encode(), COMPONENT.encode()))
    digest = hashlib.sha256(data).digest()[:16]
    return "apiserver-" + base64.b32encode(digest).decode().rstrip("=").lower()


class IdentityLease:
    """Creates and renews this server's identity Lease."""

    def __init__(self, rest: RESTStorage, hostname: str | None = None,
                 interval: float = RENEW_INTERVAL) -> None:
        self.rest = rest
        self.hostname = hostname or socket.gethostname()
        self.name = server_id(self.hostname)
        # <name>_<uuid> as kube-apiserver's; the UUID from the server's random source
        self.holder = f"{self.name}_{rest.rng.stream('identity-lease').uuid4()}"
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.renew()
            except StatusError as exc:
                log.error("failed to renew the identity lease %s: %s", self.name, exc.message)
            except Exception:  # keep renewing, as the lease controller does
                log.exception("failed to renew the identity lease %s", self.name)
            await self.rest.clock.sleep(self.interval)

    async def renew(self) -> None:
        """One pass of the lease controller: create the Lease, or move its renewTime."""
        info = self.rest.registry.get("coordination.k8s.io", "v1", "leases")
        if info is None:
            return
        labels = {IDENTITY_LABEL: COMPONENT, HOSTNAME_LABEL: self.hostname}
        spec: dict[str, Any] = {"holderIdentity": self.holder,
                                "leaseDurationSeconds": DURATION_SECONDS,
                                "renewTime": format_micro_time(self.rest.clock.now())}
        entry = self.rest.rs(info).current(f"{NAMESPACE}/{self.name}")
        if entry is None:
            await self.rest.create(info, NAMESPACE, {
                "metadata": {"name": self.name, "namespace": NAMESPACE, "labels": labels},
                "spec": spec})
            return
        lease = entry.copy()
        meta = lease["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
        lease["spec"] = {**(lease.get("spec") or {}), **spec}
        await self.rest.update(info, NAMESPACE, self.name, lease)
