"""The pod garbage collector: deletes pods nothing else will ever clean up.

kube-controller-manager v1.36 ``pkg/controller/podgc/gc_controller.go``.

Every 20 s (``gc``), from the informers' caches:

1. terminated pods (phase neither Pending, Running nor Unknown) beyond
   ``--terminated-pod-gc-threshold`` (12500; <= 0 turns this off), evicted ones first,
   then the oldest;
2. terminating pods on a NotReady node tainted ``node.kubernetes.io/out-of-service``;
3. orphaned pods: bound to a node that is gone: a missing node is quarantined 40 s
   and confirmed with an uncached GET before its pods go, each marked Failed with the
   condition ``DisruptionTarget=True`` (reason ``DeletionByPodGC``, "PodGC: node no
   longer exists");
4. unscheduled pods being deleted (no kubelet will finish them).

Each pod not yet Succeeded or Failed is first patched to phase Failed (status
observedGeneration = the pod's generation), then deleted with grace period 0. No events
(upstream records none either).

Data flow: a one-key :class:`~pykcm.controller.Controller` whose reconcile runs one gc
pass and asks to run again after the period; the pod and node informers are only read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.pod_util import pod_node_name, pod_phase_and_ready
from pykcm.api.timestamps import format_time, parse_time
from pykcm.client import Client
from pykcm.client.errors import is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.informers.generic import GenericInformer

__all__ = ["GC_CHECK_PERIOD", "QUARANTINE_TIME", "PodGCController"]

log = logging.getLogger("pykcm.controllers.podgc")

GC_CHECK_PERIOD: Final = 20.0
QUARANTINE_TIME: Final = 40.0
OUT_OF_SERVICE_TAINT: Final = "node.kubernetes.io/out-of-service"
_KEY: Final = "gc"


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def is_pod_terminated(pod: Mapping[str, Any]) -> bool:
    # the phase through pod_phase_and_ready: a compact cached pod keeps it once read
    return pod_phase_and_ready(pod)[0] not in ("Pending", "Running", "Unknown")


def _is_evicted(pod: Mapping[str, Any]) -> bool:
    st = _status(pod)
    return st.get("phase") == "Failed" and st.get("reason") == "Evicted"


def eviction_and_creation_key(pod: Mapping[str, Any]) -> tuple[int, float, str]:
    """Evicted pods first, then the oldest, then by name (upstream byEvictionAndCreationTimestamp)."""
    return (0 if _is_evicted(pod) else 1, parse_time(meta_of(pod).get("creationTimestamp")) or 0.0,
            str(meta_of(pod).get("name") or ""))


def _node_ready(node: Mapping[str, Any]) -> bool:
    for c in _status(node).get("conditions") or ():
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


class PodGCController(ControllerHost):
    """Deletes terminated pods beyond a threshold, orphaned and stuck terminating pods."""

    def __init__(self, *, client: Client, pod_informer: GenericInformer,
                 node_informer: GenericInformer, terminated_pod_threshold: int,
                 gc_check_period: float = GC_CHECK_PERIOD,
                 quarantine_time: float = QUARANTINE_TIME,
                 clock: Clock | Callable[[], float] | None = None) -> None:
        self.name = "podgc"
        self.client = client
        self.terminated_pod_threshold = terminated_pod_threshold
        self.gc_check_period = gc_check_period
        self.quarantine_time = quarantine_time
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.monotonic  # the orphan quarantine
        self.pod_lister = pod_informer.lister
        self.node_lister = node_informer.lister
        self.node_indexer = node_informer.informer.get_indexer()
        # node name -> when its quarantine ends (upstream's delaying queue)
        self.node_queue: dict[str, float] = {}
        self.controller = Controller("podgc", self.reconcile, clock=self._time)
        for inf in (pod_informer, node_informer):
            # The informers' own HasSynced, no handler (as upstream): a handler that does
            # nothing still costs a delivery at every event of every pod
            self.controller.add_synced(inf.informer.has_synced)

    async def run(self, workers: int | None = None) -> None:
        self.controller.enqueue_key(_KEY)
        await self.controller.run(1)

    async def reconcile(self, key: str) -> Result:
        await self.gc()
        return Result(requeue_after=self.gc_check_period)

    async def gc(self) -> None:
        """One pass over the caches."""
        pods = self.pod_lister.list()
        nodes = self.node_lister.list()
        if self.terminated_pod_threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_terminating(pods)
        await self.gc_orphaned(pods, nodes)
        await self.gc_unscheduled_terminating(pods)

    async def _delete_all(self, pods: Sequence[Mapping[str, Any]], what: str,
                          condition: Mapping[str, Any] | None = None) -> None:
        async def one(pod: Mapping[str, Any]) -> None:
            try:
                await self.mark_failed_and_delete_pod(pod, condition)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - logged, retried at the next pass
                log.error("Failed to delete %s pod %s/%s: %s", what,
                          meta_of(pod).get("namespace"), meta_of(pod).get("name"), exc)
        await asyncio.gather(*(one(p) for p in pods))

    async def gc_terminated(self, pods: Sequence[Mapping[str, Any]]) -> None:
        terminated = [p for p in pods if is_pod_terminated(p)]
        delete_count = len(terminated) - self.terminated_pod_threshold
        if delete_count <= 0:
            return
        log.info("Garbage collecting %d pods", delete_count)
        terminated.sort(key=eviction_and_creation_key)
        await self._delete_all(terminated[:delete_count], "terminated")

    async def gc_terminating(self, pods: Sequence[Mapping[str, Any]]) -> None:
        out: list[Mapping[str, Any]] = []
        for pod in pods:
            if not meta_of(pod).get("deletionTimestamp"):
                continue
            node = self.node_indexer.get_by_key(str((pod.get("spec") or {}).get("nodeName")
                                                    or ""))
            if node is None:
                continue
            taints = (node.get("spec") or {}).get("taints") or ()
            if not _node_ready(node) and any(t.get("key") == OUT_OF_SERVICE_TAINT
                                             for t in taints):
                out.append(pod)
        if out:
            out.sort(key=eviction_and_creation_key)
            await self._delete_all(out, "terminating")

    async def gc_orphaned(self, pods: Sequence[Mapping[str, Any]],
                          nodes: Sequence[Mapping[str, Any]]) -> None:
        existing = {str(meta_of(n).get("name")) for n in nodes}
        now = self.clock()
        for pod in pods:
            node_name = pod_node_name(pod)
            if node_name and node_name not in existing and node_name not in self.node_queue:
                self.node_queue[node_name] = now + self.quarantine_time
        deleted: set[str] = set()
        for node_name, ready_at in list(self.node_queue.items()):
            if ready_at > now:
                continue
            del self.node_queue[node_name]
            if node_name in existing:
                continue
            try:
                await self.client.get("nodes", node_name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - logged
                if is_not_found(exc):
                    deleted.add(node_name)
                else:
                    log.error("Error while getting node %s: %s", node_name, exc)
        if not deleted:  # nothing to delete: no second pass over every pod
            return
        for pod in pods:
            if pod_node_name(pod) not in deleted:
                continue
            log.info("Found orphaned Pod %s/%s assigned to the Node %s, deleting",
                     meta_of(pod).get("namespace"), meta_of(pod).get("name"),
                     (pod.get("spec") or {}).get("nodeName"))
            condition = {"type": "DisruptionTarget", "status": "True",
                         "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists"}
            await self._delete_all([pod], "orphaned", condition)

    async def gc_unscheduled_terminating(self, pods: Sequence[Mapping[str, Any]]) -> None:
        out = [p for p in pods if meta_of(p).get("deletionTimestamp")
               and not (p.get("spec") or {}).get("nodeName")]
        if out:
            await self._delete_all(out, "unscheduled terminating")

    async def mark_failed_and_delete_pod(self, pod: Mapping[str, Any],
                                         condition: Mapping[str, Any] | None = None) -> None:
        meta = meta_of(pod)
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        log.info("PodGC is force deleting Pod %s/%s", ns, name)
        if _status(pod).get("phase") not in ("Succeeded", "Failed"):
            generation = int(meta.get("generation") or 0)
            status: dict[str, Any] = {"phase": "Failed"}
            if generation:
                status["observedGeneration"] = generation
            if condition is not None:
                cond = dict(condition)
                if generation:
                    cond["observedGeneration"] = generation
                cond["lastTransitionTime"] = format_time(self._time.now())
                status["conditions"] = [cond]
            await self.client.patch("pods", name, {"metadata": {"uid": meta.get("uid")},
                                                   "status": status}, "strategic", ns,
                                    subresource="status")
        await self.client.delete("pods", name, ns, grace_period_seconds=0)
