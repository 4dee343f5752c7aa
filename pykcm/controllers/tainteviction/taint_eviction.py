"""The taint eviction controller (kube-controller-manager's ``taint-eviction-controller``).

kube-controller-manager v1.36 ``pkg/controller/tainteviction/taint_eviction.go`` and
``timed_workers.go``.

Role: deletes the pods bound to a node with ``NoExecute`` taints they do not
tolerate: at once when some taint is not tolerated, after the smallest
``tolerationSeconds`` of the tolerations used when all are (a toleration
without ``tolerationSeconds`` tolerates forever; <= 0 means now). An eviction
already scheduled keeps its start time, so a node update does not postpone it.
When the taints go (or the pod now tolerates them forever, or is gone) the
eviction is cancelled.

Each eviction records, on the pod's reference, the event ``TaintManagerEviction``
"Marking for deletion Pod <ns>/<name>" (or "Cancelling deletion of Pod
<ns>/<name>"); the pod first gets the condition ``DisruptionTarget=True``
(reason ``DeletionByTaintManager``, "Taint manager: deleting due to NoExecute
taint", a strategic merge patch of its status), then is deleted (default
grace period), retried 5 times 10 ms apart.

Data flow: node and pod informer events are handled at once, in memory
(upstream's node/pod update queues and their sharded workers exist to keep
the informers' goroutines short; here a handler only reads the cache and
arms timers). Timers are ``clock.call_at`` (:class:`pykcm.api.clock.Clock`),
so a ``FakeClock`` drives them in tests; a due timer starts the deletion as a
task.

Metrics: upstream's ``taint_eviction_controller_pod_deletions_total`` and
``taint_eviction_controller_pod_deletion_duration_seconds`` (from the due time).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import Counter, Histogram

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock, TimerHandle
from pykcm.api.pod_util import pod_node_name
from pykcm.api.scheduling import toleration_tolerates_taint
from pykcm.api.timestamps import format_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.synced import wait_for_named_cache_sync
from pykcm.client import Client, is_not_found
from pykcm.controller.event_recorder import EventRecorder
from pykcm.informers.generic import GenericInformer

__all__ = ["TaintEvictionController", "get_matching_tolerations", "get_min_toleration_time"]

log = logging.getLogger("pykcm.controllers.tainteviction")

_POD_NODE_INDEX: Final = "spec.nodeName"
_RETRIES: Final = 5

POD_DELETIONS_TOTAL = Counter(
    "taint_eviction_controller_pod_deletions",  # prometheus_client appends _total
    "Total number of Pods deleted by TaintEvictionController since its start.")
POD_DELETION_DURATION = Histogram(
    "taint_eviction_controller_pod_deletion_duration_seconds",
    "Latency, in seconds, between the time when a taint effect has been activated for the "
    "Pod and its deletion via TaintEvictionController.",
    buckets=[0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240])



def _pod_node_index(obj: Any) -> list[str]:
    name = (obj.get("spec") or {}).get("nodeName") if isinstance(obj, Mapping) else None
    return [str(name)] if name else []


def no_execute_taints(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in (node.get("spec") or {}).get("taints") or ()
            if t.get("effect") == "NoExecute"]


def get_matching_tolerations(taints: Sequence[Mapping[str, Any]],
                             tolerations: Sequence[Mapping[str, Any]]
                             ) -> tuple[bool, list[Mapping[str, Any]]]:
    """(every taint tolerated, the first toleration tolerating each taint)."""
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        match = next((t for t in tolerations if toleration_tolerates_taint(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def get_min_toleration_time(tolerations: Sequence[Mapping[str, Any]]) -> float:
    """Seconds the pod may stay: 0 without tolerations or with one <= 0, -1 for ever."""
    if not tolerations:
        return 0.0
    least: int | None = None
    for t in tolerations:
        seconds = t.get("tolerationSeconds")
        if seconds is None:
            continue
        if int(seconds) <= 0:
            return 0.0
        least = int(seconds) if least is None else min(least, int(seconds))
    return -1.0 if least is None else float(least)


@dataclass
class _Work:
    created_at: float
    fire_at: float
    timer: TimerHandle | None


class TaintEvictionController:
    """Deletes pods from nodes with NoExecute taints they do not tolerate (long enough)."""

    def __init__(self, *, client: Client, pod_informer: GenericInformer,
                 node_informer: GenericInformer, recorder: EventRecorder | None,
                 clock: Clock = REAL_CLOCK,
                 spawn: Callable[[str, Awaitable[None]], Any] | None = None) -> None:
        self.name = "taint-eviction-controller"
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self._spawn_fn = spawn
        self.node_lister = node_informer.lister
        pod_inf = pod_informer.informer
        if _POD_NODE_INDEX not in pod_inf.get_indexer().get_indexers():
            pod_inf.add_indexers({_POD_NODE_INDEX: _pod_node_index})
        self.pod_indexer = pod_inf.get_indexer()
        self.pod_lister = pod_informer.lister
        self.tainted_nodes: dict[str, list[Mapping[str, Any]]] = {}
        self.work: dict[str, _Work] = {}
        """Scheduled evictions by ``namespace/name``."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()
        self._running = False
        self._synced: list[Callable[[], bool]] = []
        reg = node_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.node_updated, update_func=lambda _o, n: self.node_updated(n),
            delete_func=self.node_deleted))
        self._synced.append(reg.has_synced)
        reg = pod_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.pod_updated, update_func=lambda _o, n: self.pod_updated(n),
            delete_func=self.pod_deleted))
        self._synced.append(reg.has_synced)

    # -- manager protocol -----------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        self._running = True
        try:
            await wait_for_named_cache_sync(self.name, *self._synced)
            # Catch up on what arrived before the caches synced (handled then already,
            # but a node seen before its pods needs its pods looked at again).
            for node in self.node_lister.list():
                self.node_updated(node)
            await self._stop.wait()
        finally:
            for w in self.work.values():
                if w.timer is not None:
                    w.timer.cancel()
            self.work.clear()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._running = False

    def health_check(self) -> str | None:
        return None

    def shutdown(self) -> None:
        self._stop.set()

    # -- events ---------------------------------------------------------------------

    def _event(self, key: str, message: str) -> None:
        if self.recorder is None:
            return
        ns, _, name = key.partition("/")
        self.recorder.event({"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name},
                            "Normal", "TaintManagerEviction", message)

    # -- handlers -------------------------------------------------------------------

    def node_updated(self, node: Mapping[str, Any]) -> None:
        name = str(meta_of(node).get("name"))
        taints = no_execute_taints(node)
        if taints:
            self.tainted_nodes[name] = taints
        else:
            self.tainted_nodes.pop(name, None)
        pods = list(self.pod_indexer.by_index(_POD_NODE_INDEX, name))
        if not taints:
            for pod in pods:
                self.cancel_work(_key(pod))
            return
        now = self.clock.monotonic()
        for pod in pods:
            self.process_pod_on_node(_key(pod), pod, taints, now)

    def node_deleted(self, obj: Any) -> None:
        self.tainted_nodes.pop(str(meta_of(obj).get("name") or ""), None)

    def pod_updated(self, pod: Mapping[str, Any]) -> None:
        node = pod_node_name(pod)  # kept with a compact cached pod once read
        if not node:
            return
        taints = self.tainted_nodes.get(node)
        if taints is None:
            return
        self.process_pod_on_node(_key(pod), pod, taints, self.clock.monotonic())

    def pod_deleted(self, obj: Any) -> None:
        m = meta_of(obj) if isinstance(obj, Mapping) else {}
        key = f"{m.get('namespace')}/{m.get('name')}" if m else str(getattr(obj, "key", ""))
        self.cancel_work(key)

    # -- scheduling -----------------------------------------------------------------

    def process_pod_on_node(self, key: str, pod: Mapping[str, Any],
                            taints: Sequence[Mapping[str, Any]], now: float) -> None:
        if not taints:
            self.cancel_work(key)
        tolerations = (pod.get("spec") or {}).get("tolerations") or ()
        all_tolerated, used = get_matching_tolerations(taints, tolerations)
        if not all_tolerated:
            self.cancel_work(key)
            self.add_work(key, now, now)
            return
        least = get_min_toleration_time(used)
        if least < 0:
            self.cancel_work(key)
            return
        start, trigger = now, now + least
        scheduled = self.work.get(key)
        if scheduled is not None:
            start = scheduled.created_at
            if start + least < trigger:
                return
            self.cancel_work(key)
        self.add_work(key, start, trigger)

    def add_work(self, key: str, created_at: float, fire_at: float) -> None:
        if key in self.work:
            return
        work = _Work(created_at, fire_at, None)
        self.work[key] = work
        work.timer = self.clock.call_at(fire_at, lambda: self._fire(key, work))

    def cancel_work(self, key: str) -> bool:
        work = self.work.pop(key, None)
        if work is None:
            return False
        if work.timer is not None:
            work.timer.cancel()
        self._event(key, f"Cancelling deletion of Pod {key}")
        return True

    def _fire(self, key: str, work: _Work) -> None:
        if self.work.get(key) is not work:
            return
        self._spawn(key, self._evict(key, work))

    def _spawn(self, key: str, coro: Awaitable[None]) -> None:
        """Run an eviction (``spawn(key, coro)`` instead, when given: tests)."""
        if self._spawn_fn is not None:
            self._spawn_fn(key, coro)
            return
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _evict(self, key: str, work: _Work) -> None:
        log.info("Deleting pod %s", key)
        self._event(key, f"Marking for deletion Pod {key}")
        ns, _, name = key.partition("/")
        try:
            for attempt in range(_RETRIES):
                try:
                    await self.add_condition_and_delete_pod(ns, name)
                    POD_DELETIONS_TOTAL.inc()
                    POD_DELETION_DURATION.observe(max(0.0, self.clock.monotonic() - work.fire_at))
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - retried, then logged
                    if is_not_found(exc):
                        break
                    if attempt == _RETRIES - 1:
                        log.error("Failed to delete pod %s: %s", key, exc)
                    await self.clock.sleep(0.01)
        finally:
            if self.work.get(key) is work:
                del self.work[key]

    async def add_condition_and_delete_pod(self, namespace: str, name: str) -> None:
        pod = await self.client.get("pods", name, namespace)
        conds = (pod.get("status") or {}).get("conditions") or ()
        old = next((c for c in conds if c.get("type") == "DisruptionTarget"), None)
        cond: dict[str, Any] = {"type": "DisruptionTarget", "status": "True",
                                "reason": "DeletionByTaintManager",
                                "message": "Taint manager: deleting due to NoExecute taint"}
        generation = int(meta_of(pod).get("generation") or 0)
        if generation:
            cond["observedGeneration"] = generation
        if old is None or any(old.get(k) != v for k, v in cond.items()):
            keep = old.get("lastTransitionTime") if old and old.get("status") == "True" else None
            cond["lastTransitionTime"] = keep or format_time(self.clock.now())
            await self.client.patch(
                "pods", name, {"metadata": {"uid": meta_of(pod).get("uid")},
                               "status": {"conditions": [cond]}},
                "strategic", namespace, subresource="status")
        await self.client.delete("pods", name, namespace)


def _key(pod: Mapping[str, Any]) -> str:
    return f"{meta_of(pod).get('namespace')}/{meta_of(pod).get('name')}"
