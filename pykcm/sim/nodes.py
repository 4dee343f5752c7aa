"""Simulated nodes: Node objects, their registration and their heartbeats (the kubelet's
node side: ``pkg/kubelet/kubelet_node_status.go`` and ``nodelease``).

Role: make N Nodes exist and look alive to anything watching the API server
(the scheduler, the node lifecycle controller, ``kubectl get nodes``), with
no machine behind them, like kwok.

Data flow::

    NodeConfig ── build_node(name, index) ──► POST /api/v1/nodes (status included,
        │                                     as the kubelet registers)
        │          already there (a restart) ─► PATCH labels + PATCH /status (Ready again)
        ▼
    NodeHeartbeats.run():
        every lease_renew_interval (10 s)  PUT  kube-node-lease/leases/<node>  renewTime
        every status_report_interval (5 min) PATCH nodes/<node>/status  lastHeartbeatTime

Both periods are the kubelet's v1.36 defaults: the Lease is renewed every
10 s (a quarter of its 40 s duration) and is the liveness signal; the node
status is written only when something changes or every
``nodeStatusReportFrequency`` (5 min) otherwise. Nodes are left in place on
stop, as a stopped kubelet leaves its Node (the node lifecycle controller
then marks it NotReady after the grace period).

Defaults for a node (documented choices, all in :class:`NodeConfig`): 32 cpu,
256Gi memory, 110 pods (the kubelet's ``--max-pods`` default), 1Ti
ephemeral-storage, linux/amd64; allocatable equals capacity (no system
reservations, as kwok). Pod CIDRs: node i owns a block of 10.244.0.0/16
upwards (10.244.i.0/24 while 254 addresses suffice); its InternalIP is
10.0.0.2 + i (:func:`node_internal_ip`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.timestamps import format_micro_time, format_time
from pykcm.client import Client, is_already_exists, is_conflict, is_forbidden, is_not_found

__all__ = [
    "HEARTBEAT_ANNOTATION",
    "KUBELET_VERSION",
    "LEASE_DURATION_SECONDS",
    "NODE_LEASE_NAMESPACE",
    "NodeConfig",
    "NodeHeartbeats",
    "build_lease",
    "build_node",
    "build_node_status",
    "node_internal_ip",
    "node_names",
    "pod_cidr",
]

log = logging.getLogger("pykcm.sim.nodes")

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
LEASE_DURATION_SECONDS: Final = 40
"""The kubelet's node lease duration (``nodeLeaseDurationSeconds``)."""
KUBELET_VERSION: Final = "v1.36.0-pykcm"
SIM_NODE_ANNOTATION: Final = "sim.pykcm.io/node"
"""Marks a Node as one of the simulator's (value: "true")."""
HEARTBEAT_ANNOTATION: Final = "sim.pykcm.io/heartbeat"
"""``stopped`` on a Node: its simulated kubelet is dead (no Lease renewals, no status
reports, its pods left as they are) until the annotation is removed or set to
anything else (see :mod:`pykcm.sim.heartbeat_control`)."""
_POD_NETWORK: Final = int(ipaddress.IPv4Address("10.244.0.0"))
_NODE_NETWORK: Final = int(ipaddress.IPv4Address("10.0.0.0"))


@dataclass(frozen=True)
class NodeConfig:
    """What every simulated node looks like (capacity is also its allocatable)."""

    cpu: str = "32"
    memory: str = "256Gi"
    pods: int = 110
    ephemeral_storage: str = "1Ti"
    arch: str = "amd64"
    os: str = "linux"
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra labels on every node (on top of hostname, os, arch and type)."""
    taints: Sequence[Mapping[str, Any]] = ()
    """Taints registered with the node (the kubelet's ``--register-with-taints``)."""
    kubelet_port: int = 10250
    """status.daemonEndpoints.kubeletEndpoint.Port (the simulator's kubelet server's)."""
    kubelet_host: str | None = None
    """Where the API server reaches the kubelet server: an InternalDNS address (None: none)."""

    def capacity(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods),
                "ephemeral-storage": self.ephemeral_storage,
                "hugepages-1Gi": "0", "hugepages-2Mi": "0"}

    def pod_block_size(self) -> int:
        """Addresses in each node's pod CIDR: a /24, or larger for more than 254 pods."""
        size = 256
        while size - 2 < self.pods:
            size *= 2
        return size


def node_names(prefix: str, count: int) -> list[str]:
    """``<prefix>-0`` .. ``<prefix>-<count-1>``."""
    return [f"{prefix}-{i}" for i in range(count)]


def pod_cidr(index: int, config: NodeConfig) -> str:
    """Node ``index``'s pod CIDR (10.244.<index>.0/24 with the default block size)."""
    size = config.pod_block_size()
    net = ipaddress.IPv4Network((_POD_NETWORK + index * size, 32 - (size.bit_length() - 1)))
    return str(net)


def node_internal_ip(index: int) -> str:
    """Node ``index``'s InternalIP: 10.0.0.2, 10.0.0.3, ... (unique up to ~16M nodes)."""
    return str(ipaddress.IPv4Address(_NODE_NETWORK + 2 + index))


def _conditions(now: float, old: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The four conditions a healthy kubelet reports, keeping unchanged transition times."""
    prev = {c.get("type"): c for c in old}
    out = []
    for ctype, status, reason, message in (
            ("MemoryPressure", "False", "KubeletHasSufficientMemory",
             "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure",
             "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID",
             "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status")):
        p = prev.get(ctype)
        since = p.get("lastTransitionTime") if p and p.get("status") == status else None
        out.append({"type": ctype, "status": status, "lastHeartbeatTime": format_time(now),
                    "lastTransitionTime": since or format_time(now), "reason": reason,
                    "message": message})
    return out


def build_node_status(name: str, index: int, config: NodeConfig, now: float,
                      old_conditions: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The status a simulated kubelet posts for node ``name``."""
    cap = config.capacity()
    # Stable per node name, as a machine's IDs are across kubelet restarts.
    machine = uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.sim.pykcm.io")
    return {
        "capacity": cap,
        "allocatable": dict(cap),
        "conditions": _conditions(now, old_conditions),
        "addresses": [{"type": "InternalIP", "address": node_internal_ip(index)},
                      *([{"type": "InternalDNS", "address": config.kubelet_host}]
                        if config.kubelet_host else []),
                      {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": config.kubelet_port}},
        "nodeInfo": {
            "machineID": machine.hex,
            "systemUUID": str(machine),
            "bootID": str(uuid.uuid5(machine, "boot")),
            "kernelVersion": "6.8.0-pykcm",
            "osImage": "pykcm simulated node",
            "containerRuntimeVersion": "containerd://2.1.0",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": config.os,
            "architecture": config.arch,
        },
        "phase": "Running",
    }


def build_node(name: str, index: int, config: NodeConfig, now: float) -> dict[str, Any]:
    """A whole Node as the kubelet registers it (status included: nodes accept it on create)."""
    labels = {
        "beta.kubernetes.io/arch": config.arch,
        "beta.kubernetes.io/os": config.os,
        "kubernetes.io/arch": config.arch,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": config.os,
        "node.kubernetes.io/instance-type": "pykcm-sim",
        "type": "pykcm-sim",
    }
    labels.update(config.labels)
    cidr = pod_cidr(index, config)
    spec: dict[str, Any] = {"podCIDR": cidr, "podCIDRs": [cidr]}
    if config.taints:
        spec["taints"] = [dict(t) for t in config.taints]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {SIM_NODE_ANNOTATION: "true",
                                     "node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach":
                                         "true"}},
        "spec": spec,
        "status": build_node_status(name, index, config, now),
    }


def build_lease(node_name: str, node_uid: str | None, now: float) -> dict[str, Any]:
    """The node's heartbeat Lease (owned by the Node, as the kubelet makes it)."""
    meta: dict[str, Any] = {"name": node_name, "namespace": NODE_LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_name,
                                    "uid": node_uid}]
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": node_name,
                     "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                     "renewTime": format_micro_time(now)}}


class NodeHeartbeats:
    """Registers the simulated nodes and keeps them alive (Leases and status reports).

    ``names[i]`` is node ``i`` (its index picks its pod CIDR and InternalIP).
    """

    def __init__(self, client: Client, names: Sequence[str], config: NodeConfig, *,
                 lease_renew_interval: float = 10.0,
                 status_report_interval: float = 300.0,
                 parallelism: int = 32, clock: Clock = REAL_CLOCK) -> None:
        self._client = client
        # the simulator's clock: heartbeat periods, Lease renewTime, condition times
        self.clock = clock
        self.names = list(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.config = config
        self.lease_renew_interval = lease_renew_interval
        self.status_report_interval = status_report_interval
        self._sem = asyncio.Semaphore(parallelism)
        self._uids: dict[str, str] = {}
        self._leases: dict[str, dict[str, Any]] = {}
        self.lease_renewals = 0
        """Successful Lease writes so far (for tests and status lines)."""
        self.stopped: set[str] = set()
        """Nodes whose heartbeat is stopped (:data:`HEARTBEAT_ANNOTATION`)."""

    # -- registration ---------------------------------------------------------------

    async def register_all(self) -> None:
        """Create the lease namespace if missing, then register every node and its Lease."""
        try:
            await self._client.create("namespaces", {"metadata": {"name": NODE_LEASE_NAMESPACE}})
        except Exception as exc:
            # a node's identity may not create namespaces (the API server makes this one)
            if not (is_already_exists(exc) or is_forbidden(exc)):
                raise
        await asyncio.gather(*(self._bounded(self.register(n)) for n in self.names))
        await asyncio.gather(*(self._bounded(self.renew_lease(n)) for n in self.names
                               if n not in self.stopped))

    async def _bounded(self, coro: Any) -> Any:
        async with self._sem:
            return await coro

    async def register(self, name: str) -> None:
        """Create the Node, or (a restart) reuse it: labels merged, status Ready again."""
        i = self.index[name]
        now = self.clock.now()
        body = build_node(name, i, self.config, now)
        try:
            created = await self._client.create("nodes", body)
        except Exception as exc:
            if not is_already_exists(exc):
                raise
        else:
            self._uids[name] = created["metadata"]["uid"]
            if (created.get("status") or {}).get("conditions"):
                return
            # A server that drops status on create: post it as the kubelet's first update.
            await self._client.patch("nodes", name, {"status": body["status"]},
                                     subresource="status")
            return
        existing = await self._client.get("nodes", name)
        self._uids[name] = existing["metadata"]["uid"]
        if ((existing["metadata"].get("annotations") or {}).get(HEARTBEAT_ANNOTATION)
                == "stopped"):
            self.stopped.add(name)  # still dead across a simulator restart
            return
        # The kubelet reconciles its own labels on an existing Node, leaving others'.
        await self._client.patch("nodes", name, {"metadata": {
            "labels": body["metadata"]["labels"],
            "annotations": body["metadata"]["annotations"]}})
        await self.report_status(name, existing)

    async def report_status(self, name: str, current: Mapping[str, Any] | None = None) -> None:
        """Post the node status (fresh heartbeat times); re-register a Node gone missing."""
        if current is None:
            try:
                current = await self._client.get("nodes", name)
            except Exception as exc:
                if not is_not_found(exc):
                    raise
                log.info("node %s disappeared: registering it again", name)
                await self.register(name)
                return
        old = (current.get("status") or {}).get("conditions") or ()
        status = build_node_status(name, self.index[name], self.config, self.clock.now(), old)
        await self._client.patch("nodes", name, {"status": status}, subresource="status")

    # -- leases ---------------------------------------------------------------------

    async def renew_lease(self, name: str) -> None:
        """Renew (or create) the node's Lease, as the kubelet's lease controller does."""
        now = self.clock.now()
        lease = self._leases.get(name)
        if lease is not None:
            body = dict(lease)
            body["spec"] = {**lease.get("spec", {}), "holderIdentity": name,
                            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                            "renewTime": format_micro_time(now)}
            try:
                self._leases[name] = await self._client.update(
                    "leases", body, NODE_LEASE_NAMESPACE)
                self.lease_renewals += 1
                return
            except Exception as exc:
                if not (is_conflict(exc) or is_not_found(exc)):
                    raise
                self._leases.pop(name, None)
        try:
            current = await self._client.get("leases", name, NODE_LEASE_NAMESPACE)
        except Exception as exc:
            if not is_not_found(exc):
                raise
            self._leases[name] = await self._client.create(
                "leases", build_lease(name, self._uids.get(name), now), NODE_LEASE_NAMESPACE)
            self.lease_renewals += 1
            return
        body = dict(current)
        body["spec"] = {**current.get("spec", {}), "holderIdentity": name,
                        "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                        "renewTime": format_micro_time(now)}
        self._leases[name] = await self._client.update("leases", body, NODE_LEASE_NAMESPACE)
        self.lease_renewals += 1

    # -- stopping and restarting a node's heartbeat --------------------------------

    def stop(self, name: str) -> None:
        """No more Lease renewals nor status reports for ``name``."""
        if name in self.index:
            self.stopped.add(name)

    async def resume(self, name: str) -> None:
        """Heartbeat again, at once, as a restarted kubelet: status, then Lease."""
        if name not in self.stopped:
            return
        self.stopped.discard(name)
        await self.report_status(name)
        await self.renew_lease(name)

    # -- the loops ------------------------------------------------------------------

    async def run(self) -> None:
        """Renew leases and report status periodically until cancelled."""
        await asyncio.gather(self._loop(self.lease_renew_interval, self.renew_lease),
                             self._loop(self.status_report_interval, self.report_status))

    async def _loop(self, period: float, action: Any) -> None:
        clock = self.clock
        next_at = clock.monotonic() + period
        while True:
            await clock.sleep(max(0.0, next_at - clock.monotonic()))
            next_at += period
            names = [n for n in self.names if n not in self.stopped]
            results = await asyncio.gather(
                *(self._bounded(action(n)) for n in names), return_exceptions=True)
            for name, res in zip(names, results, strict=True):
                if isinstance(res, asyncio.CancelledError):
                    raise res
                if isinstance(res, BaseException):
                    # A missed heartbeat is retried next period, as the kubelet does.
                    log.warning("node %s: heartbeat failed: %s", name, res)
