"""The ``kubernetes`` Service and its endpoints: kube-apiserver's own entry in the cluster.

kube-apiserver counterparts: ``pkg/controlplane/controller/kubernetesservice``
(the Service, created once with the server's port as targetPort, then left
alone), ``pkg/controlplane/reconcilers`` (the lease endpoint reconciler and the
``EndpointsAdapter`` that mirrors the Endpoints into an EndpointSlice) and the
advertise address a server picks (``--advertise-address``, else the bind
address, else for a loopback or unspecified bind the address of the interface
with the default route, as ``utilnet.ChooseHostInterface``).

Data flow::

    start ──► Service default/kubernetes (10.96.0.1:443 → the secure port), if missing
          ──► every 10 s: Endpoints default/kubernetes = [advertise address]:port
              (label endpointslice.kubernetes.io/skip-mirror=true), then
              EndpointSlice default/kubernetes (kubernetes.io/service-name=kubernetes) from it
    stop  ──► this server's address removed (the Endpoints keep no subset)

A single server holds the only "lease": its address is the whole list.
As upstream, the periodic reconcile leaves the ports alone once the Endpoints
are well formed (a restart on another port updates them after a clean stop,
which empties them), and an advertise address the Endpoints validation refuses
(a loopback one: ``--advertise-address=127.0.0.1``) only logs the 422 each
time, leaving no Endpoints, exactly as kube-apiserver does.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from typing import TYPE_CHECKING, Any, Final

from pykcm.apiserver.errors import StatusError

if TYPE_CHECKING:
    from pykcm.apiserver.registry.rest_storage import RESTStorage

__all__ = ["KubernetesServiceController", "choose_advertise_address"]

log = logging.getLogger(__name__)

NAME: Final = "kubernetes"
NAMESPACE: Final = "default"
SERVICE_IP: Final = "10.96.0.1"
PORT_NAME: Final = "https"
INTERVAL: Final = 10.0
SKIP_MIRROR: Final = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"


def choose_advertise_address(bind: str, advertise: str = "") -> str | None:
    """The address a server advertises: ``advertise`` unless unspecified, else ``bind``
    unless loopback or unspecified, else the default route's source address (None when
    there is no default route)."""
    ip = _ip(advertise)
    if ip is not None and not ip.is_unspecified:
        return str(ip)
    ip = _ip(bind)
    if ip is not None and not ip.is_unspecified and not ip.is_loopback:
        return str(ip)
    return _default_route_address()


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text) if text else None
    except ValueError:
        return None


def _default_route_address() -> str | None:
    # A UDP "connection" sends nothing; it makes the kernel pick the source address of
    # the route a packet to a public address would take: the default route's.
    for family, target in ((socket.AF_INET, "203.0.113.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((target, 9))
                addr = s.getsockname()[0]
        except OSError:
            continue
        ip = ipaddress.ip_address(addr)
        if not (ip.is_loopback or ip.is_unspecified or ip.is_link_local):
            return str(ip)
    return None


class KubernetesServiceController:
    """Keeps default/kubernetes (Service, Endpoints, EndpointSlice) in step with this server."""

    def __init__(self, rest: RESTStorage, address: str | None, port: int,
                 interval: float = INTERVAL) -> None:
        self.rest = rest
        self.address = address
        self.port = port
        self.interval = interval
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def _info(self, group: str, plural: str) -> Any:
        info = self.rest.registry.get(group, "v1", plural)
        assert info is not None
        return info

    async def ensure_service(self) -> None:
        """The Service, created once (its port is not reconciled afterwards)."""
        svc = self._info("", "services")
        if self.rest.rs(svc).current(f"{NAMESPACE}/{NAME}") is not None:
            return
        with contextlib.suppress(StatusError):  # created meanwhile
            await self.rest.create(svc, NAMESPACE, {
                "metadata": {"name": NAME, "labels": {"component": "apiserver",
                                                      "provider": "kubernetes"}},
                "spec": {"ports": [{"name": PORT_NAME, "protocol": "TCP", "port": 443,
                                    "targetPort": self.port}],
                         "clusterIP": SERVICE_IP, "ipFamilyPolicy": "SingleStack",
                         "sessionAffinity": "None", "type": "ClusterIP"},
            })

    def start(self) -> None:
        if self.address is None:
            log.warning("no advertise address (no default route): the kubernetes Service "
                        "gets no endpoints; pass --advertise-address")
            return
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await self.reconcile()
            except StatusError as exc:
                log.error("unable to sync kubernetes service: %s", exc.message)
            except Exception:  # keep reconciling, as the periodic loop upstream does
                log.exception("unable to sync kubernetes service")
            await self.rest.clock.sleep(self.interval)

    async def stop(self) -> None:
        """Remove this server's address (the Endpoints then have no subset)."""
        self._stopping = True
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        self._task = None
        try:
            await asyncio.wait_for(self.reconcile(remove=True), 2 * self.interval)
        except (StatusError, TimeoutError) as exc:
            log.error("Unable to remove endpoints from kubernetes service: %s", exc)

    def _ports(self) -> list[dict[str, Any]]:
        return [{"name": PORT_NAME, "port": self.port, "protocol": "TCP"}]

    async def reconcile(self, remove: bool = False) -> None:
        """One pass of the lease reconciler with this server as the only lease holder."""
        ep_info = self._info("", "endpoints")
        entry = self.rest.rs(ep_info).current(f"{NAMESPACE}/{NAME}")
        ips = [] if remove or self.address is None else [self.address]
        if entry is None:
            if remove:
                return
            ep: dict[str, Any] = {"metadata": {"name": NAME, "namespace": NAMESPACE}}
        else:
            ep = entry.copy()
        meta = ep.setdefault("metadata", {})
        labels = meta.get("labels") or {}
        skip_changed = labels.get(SKIP_MIRROR) != "true"
        if skip_changed:
            meta["labels"] = {**labels, SKIP_MIRROR: "true"}
        subsets = ep.get("subsets") or []
        format_ok = len(subsets) == 1
        ips_ok = format_ok and sorted(
            a.get("ip") for a in subsets[0].get("addresses") or []) == sorted(ips)
        # ports are reconciled only when the Endpoints are re-made (or on removal)
        ports_ok = format_ok and (not remove or subsets[0].get("ports") == self._ports())
        if not skip_changed and format_ok and ips_ok and ports_ok:
            await self._ensure_slice(ep)
            return
        if not format_ok:
            subsets = [{"addresses": [], "ports": self._ports()}]
        if not format_ok or not ips_ok:
            subsets[0]["addresses"] = [{"ip": ip} for ip in ips]
            # RepackSubsets: a subset without addresses goes
            subsets = [s for s in subsets if s.get("addresses") or s.get("notReadyAddresses")]
        if subsets and not ports_ok:
            subsets[0]["ports"] = self._ports()
        if subsets:
            ep["subsets"] = subsets
        else:
            ep.pop("subsets", None)
        log.info("Resetting endpoints for master service %r to %s", NAME, ips)
        if entry is None:
            try:
                created = await self.rest.create(ep_info, NAMESPACE, ep)
            except StatusError as exc:
                if exc.code != 409:
                    raise
                return
            await self._ensure_slice(created.obj)
        else:
            _, updated = await self.rest.update(ep_info, NAMESPACE, NAME, ep)
            await self._ensure_slice(updated.obj)

    async def _ensure_slice(self, ep: dict[str, Any]) -> None:
        """EndpointsAdapter.EnsureEndpointSliceFromEndpoints."""
        info = self.rest.registry.get("discovery.k8s.io", "v1", "endpointslices")
        if info is None:
            return
        want = slice_from_endpoints(ep)
        entry = self.rest.rs(info).current(f"{NAMESPACE}/{NAME}")
        if entry is None:
            with contextlib.suppress(StatusError):  # AlreadyExists: someone else made it
                await self.rest.create(info, NAMESPACE, want)
            return
        current = entry.obj
        if current.get("addressType") != want["addressType"]:
            await self.rest.delete(info, NAMESPACE, NAME, _delete_options())
            await self.rest.create(info, NAMESPACE, want)
            return
        labels = (current.get("metadata") or {}).get("labels") or {}
        if (_or_empty(current.get("endpoints")) == _or_empty(want["endpoints"])
                and _or_empty(current.get("ports")) == _or_empty(want["ports"])
                and labels == want["metadata"]["labels"]):
            return
        new = entry.copy()
        new["metadata"]["labels"] = want["metadata"]["labels"]
        for k in ("addressType", "endpoints", "ports"):
            new[k] = want[k]
        await self.rest.update(info, NAMESPACE, NAME, new)


def _or_empty(v: Any) -> Any:
    return v or []


def _delete_options() -> Any:
    from pykcm.apiserver.registry.rest_storage import DeleteOptions

    return DeleteOptions()


def slice_from_endpoints(ep: dict[str, Any]) -> dict[str, Any]:
    """endpointSliceFromEndpoints: one EndpointSlice of the Endpoints' first subset."""
    meta = ep.get("metadata") or {}
    out: dict[str, Any] = {
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                     "labels": {SERVICE_NAME_LABEL: meta.get("name")}},
        "addressType": "IPv4", "endpoints": None, "ports": None}
    subsets = ep.get("subsets") or []
    if not subsets:
        return out
    subset = subsets[0]
    ports = [{"name": p.get("name", ""), "protocol": p.get("protocol"), "port": p.get("port")}
             for p in subset.get("ports") or []]
    out["ports"] = ports or None
    ready = subset.get("addresses") or []
    not_ready = subset.get("notReadyAddresses") or []
    everything = [*ready, *not_ready]
    if everything and all(":" in str(a.get("ip") or "") for a in everything):
        out["addressType"] = "IPv6"
    v6 = out["addressType"] == "IPv6"
    endpoints = []
    for addresses, is_ready in ((ready, True), (not_ready, False)):
        for a in addresses:
            if (":" in str(a.get("ip") or "")) != v6:
                continue
            e: dict[str, Any] = {"addresses": [a.get("ip")], "conditions": {"ready": is_ready}}
            if a.get("targetRef"):
                e["targetRef"] = a["targetRef"]
            if a.get("nodeName"):
                e["nodeName"] = a["nodeName"]
            endpoints.append(e)
    out["endpoints"] = endpoints or None
    return out
