"""The TTL controller: the ``node.alpha.kubernetes.io/ttl`` annotation on every node.

kube-controller-manager v1.36 ``pkg/controller/ttl/ttl_controller.go``. Kubelets cache
the Secrets and ConfigMaps their pods use for as many seconds as this annotation says;
the bigger the cluster, the longer (fewer requests to the API server):

==============  ======
nodes           TTL
==============  ======
up to 100       0 s
90 .. 500       15 s
450 .. 1000     30 s
900 .. 2000     60 s
1800 and more   300 s
==============  ======

(the ranges overlap: the step goes up when the count passes a range's maximum and down
when it drops below its minimum, so the TTL does not flap around a boundary).

Data flow: node informer ── add (count +1, maybe a step up) / update ──► queue of node
names ── 5 workers ──► patch the annotation (strategic merge) when it is not the desired
value; delete: count -1, maybe a step down (no write).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.informers.generic import GenericInformer

__all__ = ["OBJECT_TTL_ANNOTATION", "TTL_BOUNDARIES", "TTLController"]

log = logging.getLogger("pykcm.controllers.ttl")

OBJECT_TTL_ANNOTATION: Final = "node.alpha.kubernetes.io/ttl"
TTL_BOUNDARIES: Final = ((0, 100, 0), (90, 500, 15), (450, 1000, 30), (900, 2000, 60),
                         (1800, (1 << 31) - 1, 300))
"""(minimum nodes, maximum nodes, TTL seconds) per step."""


class TTLController(ControllerHost):
    """Keeps the node TTL annotation in line with the number of nodes."""

    default_workers = 5

    def __init__(self, *, node_informer: GenericInformer, client: Client,
                 clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.name = "ttlcontroller"
        self.client = client
        self.node_count = 0
        self.boundary_step = 0
        self.desired_ttl_seconds = 0
        self.controller = Controller("ttlcontroller", self.update_node_if_needed, clock=self._time)
        self.queue = self.controller.queue
        inf = node_informer.informer
        self.node_indexer = inf.get_indexer()
        reg = inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_node, update_func=lambda old, new: self._enqueue(new),
            delete_func=self.delete_node))
        self.controller.add_synced(reg.has_synced)

    def _enqueue(self, node: Mapping[str, Any]) -> None:
        self.queue.add(str((node.get("metadata") or {}).get("name")))

    def add_node(self, node: Any) -> None:
        self.node_count += 1
        if self.node_count > TTL_BOUNDARIES[self.boundary_step][1]:
            self.boundary_step += 1
            self.desired_ttl_seconds = TTL_BOUNDARIES[self.boundary_step][2]
        self._enqueue(node)

    def delete_node(self, obj: Any) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(node, Mapping):
            log.error("unexpected object type: %r", obj)
            return
        self.node_count -= 1
        if self.node_count < TTL_BOUNDARIES[self.boundary_step][0]:
            self.boundary_step -= 1
            self.desired_ttl_seconds = TTL_BOUNDARIES[self.boundary_step][2]

    async def update_node_if_needed(self, key: str) -> None:
        node = self.node_indexer.get_by_key(key)
        if node is None:
            return
        desired = self.desired_ttl_seconds
        value = ((node.get("metadata") or {}).get("annotations") or {}).get(
            OBJECT_TTL_ANNOTATION)
        if value is not None:
            try:
                if int(value) == desired:
                    return
            except ValueError:
                log.info("Could not convert the value %r with annotation key %s for the node "
                         "%s", value, OBJECT_TTL_ANNOTATION, key)
        await self.client.patch("nodes", key, {"metadata": {"annotations": {
            OBJECT_TTL_ANNOTATION: str(desired)}}}, "strategic")
        log.debug("Changed ttl annotation for node %s to %ds", key, desired)
