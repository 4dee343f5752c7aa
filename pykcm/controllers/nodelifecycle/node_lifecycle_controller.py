"""The node lifecycle controller (kube-controller-manager's ``node-lifecycle-controller``).

kube-controller-manager v1.36 ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``.

Four loops, as upstream's ``Run``:

1. **monitor** every ``--node-monitor-period`` (5 s): for each Node of the cache,
   :func:`~pykcm.controllers.nodelifecycle.node_health.observe_node_health` with
   its Lease (``kube-node-lease/<node>``); a node silent for
   ``--node-monitor-grace-period`` (50 s in v1.36) gets Ready, MemoryPressure,
   DiskPressure and PIDPressure Unknown (``NodeStatusUnknown``, "Kubelet stopped
   posting node status.", PUT nodes/<n>/status). Then the NoExecute taint
   decision (``processTaintBaseEviction``): Ready False or Unknown queues the node
   in its zone's rate-limited tainting queue (or swaps ``not-ready`` and
   ``unreachable`` at once); Ready True removes both taints. A node that just
   left Ready gets the event ``NodeNotReady`` ("Node <n> status is now:
   NodeNotReady") and its pods Ready=False (``MarkPodsNotReady``: PUT
   pods/<p>/status, a Warning ``NodeNotReady`` "Node is not ready" on each).
   New and gone nodes get ``RegisteredNode`` / ``RemovingNode`` events. Zone
   states (Normal, PartialDisruption, FullDisruption) set each zone queue's rate:
   ``--node-eviction-rate`` (0.1/s) normally and in a full disruption,
   ``--secondary-node-eviction-rate`` (0.01/s) in a partial one when the zone has
   more than ``--large-cluster-size-threshold`` (50) nodes, else 0; when every zone
   is fully disrupted, NoExecute taints are removed from all nodes and tainting
   stops (the control plane is more likely cut off than every node dead).
2. **NoExecute tainting** every 100 ms: each zone queue hands due nodes, at its
   rate, to the taint swap (``unreachable`` or ``not-ready``, ``NoExecute``, with
   ``timeAdded``). The taint-eviction controller does the deleting.
3. **NoSchedule tainting** on every Node event: the condition taints
   (``not-ready``, ``unreachable``, ``memory-pressure``, ``disk-pressure``,
   ``pid-pressure``, ``network-unavailable``) and ``unschedulable`` follow the
   conditions and ``spec.unschedulable`` (TaintNodesByCondition).
4. **pods** assigned to a node (add or node change): Ready=False if the node is not
   Ready (a pod the monitor pass missed).

Taints are written with a JSON merge patch of ``spec.taints`` carrying the
cached ``resourceVersion``; on a conflict the node is read again (upstream's
PatchNodeTaints + retry).

Time: decisions read ``clock()`` (wall seconds of the injected
:class:`pykcm.api.clock.Clock`; the monitor passes and queues wait on it too),
so a fake clock drives the logic in tests. Metrics: upstream's ``node_collector_*``
(:mod:`pykcm.controllers.nodelifecycle.metrics`).

Deviations: the label reconciliation of ``doNodeProcessingPassWorker``
(``beta.kubernetes.io/os``/``arch`` from the GA labels) is left out; the
monitor pass writes nodes with bounded concurrency (8, upstream's
``nodeUpdateWorkerSize``) but does not retry a failed status write within the
pass (the next pass does).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.pod_util import pod_node_name
from pykcm.api.timestamps import format_time, parse_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.synced import wait_for_named_cache_sync
from pykcm.client import Client, is_conflict, is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controllers.nodelifecycle.metrics import (
    EVICTIONS_TOTAL,
    UNHEALTHY_NODES,
    UPDATE_ALL_NODES_HEALTH_DURATION,
    UPDATE_NODE_HEALTH_DURATION,
    ZONE_HEALTH,
    ZONE_SIZE,
)
from pykcm.controllers.nodelifecycle.node_health import (
    NOT_READY_TAINT,
    STATE_FULL_DISRUPTION,
    STATE_INITIAL,
    STATE_NORMAL,
    STATE_PARTIAL_DISRUPTION,
    UNREACHABLE_TAINT,
    NodeHealth,
    compute_zone_state,
    get_node_condition,
    no_schedule_taints,
    observe_node_health,
    taint_exists,
    zone_key,
)
from pykcm.controllers.nodelifecycle.rate_limited_queue import RateLimitedTimedQueue, TimedValue
from pykcm.informers.generic import GenericInformer

__all__ = ["NODE_EVICTION_PERIOD", "NODE_LEASE_NAMESPACE", "NodeLifecycleController",
           "pod_ref"]

log = logging.getLogger("pykcm.controllers.nodelifecycle")

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
NODE_EVICTION_PERIOD: Final = 0.1
"""upstream scheduler.NodeEvictionPeriod: how often the tainting queues are tried."""
NODE_UPDATE_WORKERS: Final = 8
EXCLUDE_DISRUPTION_LABEL: Final = "node.kubernetes.io/exclude-disruption"
_POD_NODE_INDEX: Final = "spec.nodeName"



def _pod_node_index(obj: Any) -> list[str]:
    name = (obj.get("spec") or {}).get("nodeName") if isinstance(obj, Mapping) else None
    return [str(name)] if name else []


def node_ref(node: Mapping[str, Any]) -> dict[str, Any]:
    """The reference upstream's RecordNodeEvent builds (no namespace: the Event lands
    in ``default``)."""
    ref = {"apiVersion": "v1", "kind": "Node", "name": meta_of(node).get("name")}
    if meta_of(node).get("uid"):
        ref["uid"] = meta_of(node).get("uid")
    return ref


def pod_ref(pod: Mapping[str, Any]) -> dict[str, Any]:
    m = meta_of(pod)
    ref = {"apiVersion": "v1", "kind": "Pod", "namespace": m.get("namespace"),
           "name": m.get("name")}
    for k in ("uid", "resourceVersion"):
        if m.get(k):
            ref[k] = m.get(k)
    return ref


class NodeLifecycleController(ControllerHost):
    """Marks silent nodes Unknown, taints unhealthy ones, marks their pods not ready."""

    def __init__(self, *, client: Client, node_informer: GenericInformer,
                 pod_informer: GenericInformer, lease_informer: GenericInformer,
                 recorder: EventRecorder | None,
                 node_monitor_period: float = 5.0,
                 node_monitor_grace_period: float = 50.0,
                 node_startup_grace_period: float = 60.0,
                 eviction_limiter_qps: float = 0.1,
                 secondary_eviction_limiter_qps: float = 0.01,
                 large_cluster_threshold: int = 50,
                 unhealthy_zone_threshold: float = 0.55,
                 clock: Clock | Callable[[], float] | None = None) -> None:
        self.name = "node-lifecycle"
        self.client = client
        self.recorder = recorder
        self.node_monitor_period = node_monitor_period
        self.node_monitor_grace_period = node_monitor_grace_period
        self.node_startup_grace_period = node_startup_grace_period
        self.eviction_limiter_qps = eviction_limiter_qps
        self.secondary_eviction_limiter_qps = secondary_eviction_limiter_qps
        self.large_cluster_threshold = large_cluster_threshold
        self.unhealthy_zone_threshold = unhealthy_zone_threshold
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.now
        self.node_lister = node_informer.lister
        self.lease_lister = lease_informer.lister
        self.node_health: dict[str, NodeHealth] = {}
        self.known_nodes: dict[str, Mapping[str, Any]] = {}
        self.zone_states: dict[str, str] = {}
        self.zone_tainters: dict[str, RateLimitedTimedQueue] = {}
        # set when a node is queued for tainting: the 100 ms pass sleeps on it while
        # every zone queue is empty (see _tainting_loop)
        self._tainting_wake = asyncio.Event()
        self.nodes_to_retry: set[str] = set()

        pod_inf = pod_informer.informer
        if _POD_NODE_INDEX not in pod_inf.get_indexer().get_indexers():
            pod_inf.add_indexers({_POD_NODE_INDEX: _pod_node_index})
        self.pod_indexer = pod_inf.get_indexer()
        self.pod_lister = pod_informer.lister

        # NoSchedule tainting, keyed by node name.
        self.node_controller = Controller("node-lifecycle-noschedule", self.sync_no_schedule,
                                          clock=self._time)
        self.pod_controller = Controller("node-lifecycle-pods", self.sync_pod, clock=self._time)
        self._synced: list[Callable[[], bool]] = []
        reg = node_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self._node_added,
            update_func=lambda _old, new: self.node_controller.enqueue(new),
            delete_func=self._node_deleted))
        self.node_controller.add_synced(reg.has_synced)
        self._synced.append(reg.has_synced)
        reg = pod_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self._pod_added,
            update_func=self._pod_updated))
        self.pod_controller.add_synced(reg.has_synced)
        self._synced.append(reg.has_synced)
        reg = lease_informer.informer.add_event_handler(ResourceEventHandlerFuncs())
        self.node_controller.add_synced(reg.has_synced)
        self._synced.append(reg.has_synced)
        self.controller = self.node_controller

    # -- event handlers -------------------------------------------------------------

    def _node_added(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self.node_controller.enqueue(obj)

    def _pod_added(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._pod_updated(None, obj)

    def _node_deleted(self, obj: Any) -> None:
        self.node_health.pop(str(meta_of(obj).get("name") or ""), None)
        self.node_controller.enqueue(obj)

    def _pod_updated(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        # pod_node_name: kept with a compact cached pod once read (every pod event)
        node = pod_node_name(new)
        if node and (old is None or pod_node_name(old) != node):
            self.pod_controller.enqueue(new)

    # -- run ------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Wait for the caches, then run the four loops until :meth:`shutdown`."""
        pod_task = asyncio.create_task(self.pod_controller.run(4))
        loops: list[asyncio.Task[None]] = []
        try:
            await wait_for_named_cache_sync(self.name, *self._synced)
            loops = [asyncio.create_task(self._tainting_loop()),
                     asyncio.create_task(self._every(self.node_monitor_period,
                                                     self.monitor_node_health))]
            await self.node_controller.run(NODE_UPDATE_WORKERS)
        finally:
            for t in loops:
                t.cancel()
            self.pod_controller.shutdown()
            await asyncio.gather(pod_task, *loops, return_exceptions=True)

    def shutdown(self) -> None:
        self.node_controller.shutdown()
        self.pod_controller.shutdown()

    async def _tainting_loop(self) -> None:
        """The NoExecute tainting pass every NODE_EVICTION_PERIOD, as upstream's
        ``wait.Until``, except that while every zone queue is empty (a pass would do
        nothing) it waits for a node to be queued instead of a 100 ms timer. Deviation
        for virtual time: an idle cluster then has no timer every 100 ms for autojump to
        step through; a queued node is tried at once rather than at the next tick."""
        while True:
            try:
                await self.do_no_execute_tainting_pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("node lifecycle pass do_no_execute_tainting_pass failed")
            if any(len(q) for q in self.zone_tainters.values()):
                await self._time.sleep(NODE_EVICTION_PERIOD)
            else:
                self._tainting_wake.clear()
                await self._tainting_wake.wait()

    async def _every(self, period: float, fn: Callable[[], Any]) -> None:
        while True:
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("node lifecycle pass %s failed", getattr(fn, "__name__", fn))
            await self._time.sleep(period)

    # -- monitor --------------------------------------------------------------------

    def pods_on_node(self, node_name: str) -> list[Mapping[str, Any]]:
        return list(self.pod_indexer.by_index(_POD_NODE_INDEX, node_name))

    def _lease_renew_time(self, node_name: str) -> float | None:
        try:
            lease = self.lease_lister.by_namespace(NODE_LEASE_NAMESPACE).get(node_name)
        except Exception:  # noqa: BLE001 - not in the cache
            return None
        if lease is None:
            return None
        return parse_time((lease.get("spec") or {}).get("renewTime"))

    def _tainter(self, zone: str) -> RateLimitedTimedQueue:
        q = self.zone_tainters.get(zone)
        if q is None:
            q = self.zone_tainters[zone] = RateLimitedTimedQueue(self.eviction_limiter_qps,
                                                                 self.clock)
            self.zone_states.setdefault(zone, STATE_INITIAL)
        return q

    def _event(self, ref: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(ref, type_, reason, message)

    async def monitor_node_health(self) -> None:
        nodes = list(self.node_lister.list())
        names = {str(meta_of(n).get("name")) for n in nodes}
        for n in nodes:
            name = str(meta_of(n).get("name"))
            if name not in self.known_nodes:
                log.info("Controller observed a new Node %s", name)
                self._event(node_ref(n), "Normal", "RegisteredNode",
                            f"Node {name} event: Registered Node {name} in Controller")
                self.known_nodes[name] = n
                self._tainter(zone_key(n))
                await self.mark_node_as_reachable(n)
            else:
                self._tainter(zone_key(n))
        for name in list(self.known_nodes):
            if name not in names:
                gone = self.known_nodes.pop(name)
                log.info("Controller observed a Node deletion %s", name)
                self._event(node_ref(gone), "Normal", "RemovingNode",
                            f"Node {name} event: Removing Node {name} from Controller")

        zone_conditions: dict[str, list[Mapping[str, Any] | None]] = {}
        sem = asyncio.Semaphore(NODE_UPDATE_WORKERS)

        async def one(node: Mapping[str, Any]) -> None:
            async with sem:
                with UPDATE_NODE_HEALTH_DURATION.time():
                    await self._update_node(node, zone_conditions)

        with UPDATE_ALL_NODES_HEALTH_DURATION.time():
            await asyncio.gather(*(one(n) for n in nodes))
        await self.handle_disruption(zone_conditions, nodes)

    async def _update_node(self, node: Mapping[str, Any],
                           zone_conditions: dict[str, list[Mapping[str, Any] | None]]) -> None:
        name = str(meta_of(node).get("name"))
        now = self.clock()
        obs = observe_node_health(node, self.node_health.get(name),
                                  self._lease_renew_time(name), now,
                                  monitor_grace_period=self.node_monitor_grace_period,
                                  startup_grace_period=self.node_startup_grace_period)
        self.node_health[name] = obs.health
        if obs.new_status is not None:
            body = copy.deepcopy(dict(node))
            body["status"] = obs.new_status
            try:
                written = await self.client.update("nodes", body, subresource="status")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the next pass tries again
                log.error("Error updating node %s: %s", name, exc)
                return
            node = written
            self.node_health[name] = NodeHealth(written.get("status") or obs.new_status,
                                                obs.health.probe_timestamp, self.clock(),
                                                obs.health.lease_renew_time)
        if EXCLUDE_DISRUPTION_LABEL not in (meta_of(node).get("labels") or {}):
            zone_conditions.setdefault(zone_key(node), []).append(obs.current_ready)
        current = obs.current_ready
        if current is None:
            self.nodes_to_retry.discard(name)
            return
        await self.process_taint_base_eviction(node, current)
        needs_retry = name in self.nodes_to_retry
        went_not_ready = (current.get("status") != "True"
                          and obs.observed_ready.get("status") == "True")
        if went_not_ready:
            self._event(node_ref(node), "Normal", "NodeNotReady",
                        f"Node {name} status is now: NodeNotReady")
        retry = needs_retry and obs.observed_ready.get("status") != "True"
        if ((went_not_ready or retry)
                and not await self.mark_pods_not_ready(self.pods_on_node(name), name)):
            self.nodes_to_retry.add(name)
            return
        self.nodes_to_retry.discard(name)

    async def process_taint_base_eviction(self, node: Mapping[str, Any],
                                          ready: Mapping[str, Any]) -> None:
        taints = (node.get("spec") or {}).get("taints") or ()
        status = ready.get("status")
        if status == "False":
            if taint_exists(taints, UNREACHABLE_TAINT, "NoExecute"):
                await self.swap_taints(node, [_no_execute(NOT_READY_TAINT)],
                                       [_no_execute(UNREACHABLE_TAINT)])
            else:
                self.mark_node_for_tainting(node, "False")
        elif status == "Unknown":
            if taint_exists(taints, NOT_READY_TAINT, "NoExecute"):
                await self.swap_taints(node, [_no_execute(UNREACHABLE_TAINT)],
                                       [_no_execute(NOT_READY_TAINT)])
            else:
                self.mark_node_for_tainting(node, "Unknown")
        elif status == "True" and await self.mark_node_as_reachable(node):
            log.info("Node %s is healthy again, removed all taints", meta_of(node).get("name"))

    def mark_node_for_tainting(self, node: Mapping[str, Any], status: str) -> bool:
        """Queue the node in its zone (back of the queue unless it holds the taint)."""
        name = str(meta_of(node).get("name"))
        q = self._tainter(zone_key(node))
        taints = (node.get("spec") or {}).get("taints") or ()
        key = NOT_READY_TAINT if status == "False" else UNREACHABLE_TAINT
        if not taint_exists(taints, key, "NoExecute"):
            q.remove(name)
        added = q.add(name, str(meta_of(node).get("uid") or ""))
        self._tainting_wake.set()
        return added

    async def mark_node_as_reachable(self, node: Mapping[str, Any]) -> bool:
        """Remove both NoExecute taints and drop the node from its zone's queue."""
        self._tainter(zone_key(node)).remove(str(meta_of(node).get("name")))
        taints = (node.get("spec") or {}).get("taints") or ()
        gone = [_no_execute(k) for k in (UNREACHABLE_TAINT, NOT_READY_TAINT)
                if taint_exists(taints, k, "NoExecute")]
        if not gone:
            return False
        return await self.swap_taints(node, [], gone)

    # -- zones ----------------------------------------------------------------------

    def _zone_qps(self, zone_size: int, state: str) -> float:
        if state == STATE_PARTIAL_DISRUPTION:
            return (self.secondary_eviction_limiter_qps
                    if zone_size > self.large_cluster_threshold else 0.0)
        return self.eviction_limiter_qps

    async def handle_disruption(self, zone_conditions: Mapping[str, Sequence[Mapping[str, Any]
                                                                             | None]],
                                nodes: Sequence[Mapping[str, Any]]) -> None:
        new_states: dict[str, str] = {}
        all_are_fully = True
        for zone, conds in zone_conditions.items():
            unhealthy, state = compute_zone_state(conds, self.unhealthy_zone_threshold)
            ZONE_SIZE.labels(zone).set(len(conds))
            ZONE_HEALTH.labels(zone).set(100 * (len(conds) - unhealthy) / len(conds))
            UNHEALTHY_NODES.labels(zone).set(unhealthy)
            if state != STATE_FULL_DISRUPTION:
                all_are_fully = False
            new_states[zone] = state
            self.zone_states.setdefault(zone, STATE_INITIAL)
        all_were_fully = True
        for zone, state in list(self.zone_states.items()):
            if zone not in zone_conditions:
                ZONE_SIZE.labels(zone).set(0)
                ZONE_HEALTH.labels(zone).set(100)
                UNHEALTHY_NODES.labels(zone).set(0)
                del self.zone_states[zone]
                continue
            if state != STATE_FULL_DISRUPTION:
                all_were_fully = False
                break
        if all_are_fully and all_were_fully:
            return
        if all_are_fully:
            log.info("Controller detected that all Nodes are not-Ready. "
                     "Entering master disruption mode")
            for n in nodes:
                await self.mark_node_as_reachable(n)
            for zone in self.zone_states:
                self._tainter(zone).swap_limiter(0.0)
                self.zone_states[zone] = STATE_FULL_DISRUPTION
            return
        if all_were_fully:
            log.info("Controller detected that some Nodes are Ready. "
                     "Exiting master disruption mode")
            now = self.clock()
            for n in nodes:
                h = self.node_health.get(str(meta_of(n).get("name")))
                if h is not None:
                    h.probe_timestamp = h.ready_transition_timestamp = now
            for zone in self.zone_states:
                state = new_states.get(zone, STATE_NORMAL)
                self._tainter(zone).swap_limiter(
                    self._zone_qps(len(zone_conditions.get(zone, ())), state))
                self.zone_states[zone] = state
            return
        for zone, state in list(self.zone_states.items()):
            new = new_states.get(zone, STATE_NORMAL)
            if new == state:
                continue
            log.info("Controller detected that zone %r is now in state %s", zone, new)
            self._tainter(zone).swap_limiter(self._zone_qps(len(zone_conditions[zone]), new))
            self.zone_states[zone] = new

    # -- NoExecute tainting ---------------------------------------------------------

    async def do_no_execute_tainting_pass(self) -> None:
        for q in list(self.zone_tainters.values()):
            await q.try_(self._taint_one)

    async def _taint_one(self, item: TimedValue) -> tuple[bool, float]:
        node = self.node_lister.get(item.value)
        if node is None:
            log.info("Node %s no longer present in nodeLister", item.value)
            return True, 0.0
        cond = get_node_condition(node.get("status"), "Ready")
        if cond is None:
            return False, 0.05
        if cond.get("status") == "False":
            add, opposite = NOT_READY_TAINT, UNREACHABLE_TAINT
        elif cond.get("status") == "Unknown":
            add, opposite = UNREACHABLE_TAINT, NOT_READY_TAINT
        else:
            return True, 0.0
        ok = await self.swap_taints(node, [_no_execute(add)], [_no_execute(opposite)])
        if ok:
            EVICTIONS_TOTAL.labels(zone_key(node)).inc()
        return ok, 0.0

    async def swap_taints(self, node: Mapping[str, Any], add: Sequence[Mapping[str, Any]],
                          remove: Sequence[Mapping[str, Any]]) -> bool:
        """upstream SwapNodeControllerTaint: add (with timeAdded) and remove taints."""
        name = str(meta_of(node).get("name"))
        stamp = format_time(self.clock())
        current: Mapping[str, Any] | None = node
        for attempt in range(5):
            if current is None:
                try:
                    current = await self.client.get("nodes", name)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001
                    if is_not_found(exc):
                        return False
                    log.error("Failed to get node %s: %s", name, exc)
                    return False
            taints = [dict(t) for t in (current.get("spec") or {}).get("taints") or ()]
            new = [t for t in taints
                   if not any(t.get("key") == r["key"] and t.get("effect") == r["effect"]
                              for r in remove)]
            for t in add:
                if not taint_exists(new, t["key"], t["effect"]):
                    new.append({"key": t["key"], "effect": t["effect"], "timeAdded": stamp})
            if new == taints:
                return True
            patch = {"metadata": {"resourceVersion": meta_of(current).get("resourceVersion")},
                     "spec": {"taints": new or None}}
            try:
                await self.client.patch("nodes", name, patch, "merge")
                return True
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                if is_conflict(exc) and attempt < 4:
                    current = None
                    continue
                log.error("Failed to update taints of node %s: %s", name, exc)
                return False
        return False

    # -- NoSchedule tainting and pods -----------------------------------------------

    async def sync_no_schedule(self, key: str) -> Result:
        node = self.node_lister.get(key)
        if node is None:
            return Result()
        add, remove = no_schedule_taints(node)
        if (add or remove) and not await self.swap_taints(node, add, remove):
            log.error("Failed to taint NoSchedule on node %s", key)
        return Result()

    async def sync_pod(self, key: str) -> Result:
        ns, _, name = key.partition("/")
        pod = self.pod_lister.by_namespace(ns).get(name)
        if pod is None:
            return Result()
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        health = self.node_health.get(node_name)
        if health is None or self.node_lister.get(node_name) is None:
            return Result()
        ready = get_node_condition(health.status, "Ready")
        if (ready is not None and ready.get("status") != "True"
                and not await self.mark_pods_not_ready([pod], node_name)):
            raise RuntimeError(f"unable to mark pod {key} NotReady")
        return Result()

    async def mark_pods_not_ready(self, pods: Sequence[Mapping[str, Any]],
                                  node_name: str) -> bool:
        """Ready=False on each pod of the node (PUT status), a NodeNotReady event each."""
        ok = True
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") != node_name:
                continue
            conds = (pod.get("status") or {}).get("conditions") or ()
            ready = next((c for c in conds if c.get("type") == "Ready"), None)
            if ready is None or ready.get("status") == "False":
                continue
            body = copy.deepcopy(dict(pod))
            for c in body["status"]["conditions"]:
                if c.get("type") == "Ready":
                    c["status"] = "False"
                    c["lastTransitionTime"] = format_time(self.clock())
            try:
                await self.client.update("pods", body, meta_of(pod).get("namespace"),
                                         subresource="status")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                if is_not_found(exc):
                    continue
                log.info("Failed to update status for pod %s/%s: %s",
                         meta_of(pod).get("namespace"), meta_of(pod).get("name"), exc)
                ok = False
            self._event(pod_ref(pod), "Warning", "NodeNotReady", "Node is not ready")
        return ok


def _no_execute(key: str) -> dict[str, Any]:
    return {"key": key, "effect": "NoExecute"}
