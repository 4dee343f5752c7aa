"""Stopping and restarting a simulated node's heartbeat on request (a dead kubelet).

Role: lets a user or a test exercise node lifecycle (NotReady/Unknown,
``node.kubernetes.io/unreachable`` taints, taint-based eviction) on simulated nodes:

    kubectl annotate node pykcm-node-1 sim.pykcm.io/heartbeat=stopped
    kubectl annotate node pykcm-node-1 sim.pykcm.io/heartbeat-      # back to life

Data flow: the simulator's node informer calls :meth:`HeartbeatControl.observe`
on every Node event; a node of the simulator whose annotation
:data:`~pykcm.sim.nodes.HEARTBEAT_ANNOTATION` is ``stopped`` has its Lease
renewals and status reports stopped (:meth:`NodeHeartbeats.stop`) and its
kubelet stops acting on its pods (no status writes, no deletions: a pod
deleted meanwhile stays Terminating, as on a real dead node). Any other value,
or none, restarts it: status posted (Ready again) and Lease renewed at once,
then the pods synced again.

The annotation lives on the Node, so it survives a simulator restart and is
seen by whoever runs the simulator (``pykcm up`` or ``pykcm sim``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from pykcm.sim.kubelet import Kubelet
from pykcm.sim.nodes import HEARTBEAT_ANNOTATION, NodeHeartbeats

__all__ = ["HEARTBEAT_STOPPED", "HeartbeatControl"]

log = logging.getLogger("pykcm.sim")

HEARTBEAT_STOPPED = "stopped"


class HeartbeatControl:
    """Applies the heartbeat annotation of the simulator's Nodes."""

    def __init__(self, heartbeats: NodeHeartbeats, kubelet: Kubelet | None) -> None:
        self.heartbeats = heartbeats
        self.kubelet = kubelet
        self._tasks: set[asyncio.Task[None]] = set()

    def observe(self, node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        meta = node.get("metadata") or {}
        name = str(meta.get("name") or "")
        if name not in self.heartbeats.index:
            return
        stopped = (meta.get("annotations") or {}).get(HEARTBEAT_ANNOTATION) == HEARTBEAT_STOPPED
        was = name in self.heartbeats.stopped
        if stopped:
            if self.kubelet is not None:
                self.kubelet.stop_node(name)
            if not was:
                log.info("node %s: heartbeat stopped", name)
                self.heartbeats.stop(name)
        elif was:
            log.info("node %s: heartbeat restarted", name)
            task = asyncio.ensure_future(self._resume(name))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _resume(self, name: str) -> None:
        try:
            await self.heartbeats.resume(name)
        except Exception as exc:  # noqa: BLE001 - the periodic loops heartbeat anyway
            log.warning("node %s: restarting its heartbeat failed: %s", name, exc)
        if self.kubelet is not None:
            self.kubelet.start_node(name)

    def close(self) -> None:
        for t in self._tasks:
            t.cancel()
