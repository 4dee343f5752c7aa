"""The simulated scheduler: binds Pending pods to nodes (a small kube-scheduler).

Role: for every pod whose ``spec.schedulerName`` is ours (``default-scheduler``,
which the API server defaults an empty one to) and which has no
``spec.nodeName``, pick a node and POST ``pods/<name>/binding``, as
kube-scheduler v1.36 does with its default profile, reduced to the plugins
that matter without real machines:

- filters, in upstream's order, first failure wins per node:
  NodeUnschedulable (``spec.unschedulable``), TaintToleration (NoSchedule and
  NoExecute taints; a node whose Ready condition is not True counts as
  tainted ``node.kubernetes.io/not-ready`` / ``unreachable``, as the node
  lifecycle controller would taint it), NodeAffinity (``nodeSelector`` and
  required node affinity), NodeResourcesFit (pod count, cpu, memory,
  ephemeral-storage and extended resources vs ``status.allocatable``);
- scores: NodeResourcesFit LeastAllocated plus NodeResourcesBalancedAllocation
  on the non-zero requests (spreads pods; ties broken at random, as upstream);
- the number of nodes examined per pod follows upstream's
  ``percentageOfNodesToScore`` (all nodes below 100);
- no fit: the pod gets ``PodScheduled=False, reason Unschedulable`` and
  upstream's message ("0/3 nodes are available: 3 Insufficient cpu.
  preemption: ..."), a FailedScheduling event, and waits in the unschedulable
  set until a cluster event may make room (a node added or changed, an
  assigned pod deleted or finished) or 5 minutes pass
  (``podMaxInUnschedulablePodsDuration``);
- pods with ``spec.schedulingGates`` get ``PodScheduled=False, reason
  SchedulingGated`` and are not scheduled;
- VolumeBinding (:mod:`pykcm.sim.volume_binding`, when the simulator gives the
  claims, volumes and classes informers): claims must exist and be bound, or be
  of a WaitForFirstConsumer class; a node must satisfy the node affinity of the
  pod's volumes and have a volume to bind or a way to provision for each unbound
  claim; once a node is chosen the volumes are pre-bound or the claims annotated
  with the node, and the pod is bound only when all its claims are Bound.

Left out: inter-pod (anti-)affinity, topology spread constraints, host
ports, preemption, priority ordering (the queue is FIFO).

Data flow::

    pods informer ──handlers──► cache: NodeInfo per node (requested resources, pod count)
        │ unassigned pod of ours      ▲ assigned pods (and assumed ones) accounted
        ▼                             │
    Controller "scheduler" queue of keys ─ worker: filter + score (no await: the
        │ decision and the assumption are atomic) ─► assume on node ─► POST binding
        │   binding fails → forget the assumption, retry with backoff
        ▼   binding ok    → the informer's update confirms the assumption
    nodes informer ──handlers──► NodeInfo (allocatable, labels, taints, ready)

The PodScheduled=True condition is set by the API server's binding (as
kube-apiserver's BindingREST does).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.pod_util import get_pod_condition, is_pod_terminal
from pykcm.api.randomness import REAL_RANDOM, RandomSource
from pykcm.api.scheduling import required_node_affinity_matches, tolerations_tolerate_taint
from pykcm.api.timestamps import format_time
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client, is_conflict, is_not_found
from pykcm.controller.controller import Controller, Result
from pykcm.controller.event_recorder import EventRecorder
from pykcm.informers import GenericInformer
from pykcm.sim.resources import Resources, node_allocatable, non_zero_requests, pod_requests
from pykcm.sim.volume_binding import BindPlan, PodVolumes, VolumeBinder

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "NodeInfo",
    "Scheduler",
    "fit_error_message",
    "node_matches_affinity",
    "num_feasible_nodes_to_find",
    "prefilter_error_message",
    "run_filters",
    "score_node",
    "tolerates",
]

log = logging.getLogger("pykcm.sim.scheduler")

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
UNSCHEDULABLE_RETRY_SECONDS: Final = 300.0
"""Upstream's podMaxInUnschedulablePodsDuration: retry at the latest after 5 minutes."""

ERR_UNSCHEDULABLE: Final = "node(s) were unschedulable"
ERR_NODE_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_TOO_MANY_PODS: Final = "Too many pods"
PREEMPTION_NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_VICTIMS: Final = "No preemption victims found for incoming pod"


@dataclass(slots=True)
class NodeInfo:
    """What the scheduler knows of one node: the Node itself and the pods placed on it."""

    name: str
    node: Mapping[str, Any] | None = None
    """None while pods name a node the informer has not shown yet."""
    allocatable: Resources = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: list[Mapping[str, Any]] = field(default_factory=list)
    unschedulable: bool = False
    requested: Resources = field(default_factory=dict)
    non_zero_cpu: int = 0
    non_zero_memory: int = 0
    pod_count: int = 0

    def set_node(self, node: Mapping[str, Any] | None) -> None:
        self.node = node
        if node is None:
            return
        self.allocatable = node_allocatable(node)
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        self.labels = meta.get("labels") or {}
        self.unschedulable = bool(spec.get("unschedulable"))
        taints = list(spec.get("taints") or ())
        # Without a node lifecycle controller nobody taints a dead node: read the
        # Ready condition and add the taint it would have added.
        ready = "Unknown"
        for c in (node.get("status") or {}).get("conditions") or ():
            if c.get("type") == "Ready":
                ready = str(c.get("status"))
        if ready != "True":
            key = ("node.kubernetes.io/not-ready" if ready == "False"
                   else "node.kubernetes.io/unreachable")
            if not any(t.get("key") == key for t in taints):
                taints.append({"key": key, "effect": "NoSchedule"})
        self.taints = taints

    def add_pod(self, requests: Mapping[str, int], nz_cpu: int, nz_mem: int,
                sign: int = 1) -> None:
        for k, v in requests.items():
            self.requested[k] = self.requested.get(k, 0) + sign * v
        self.non_zero_cpu += sign * nz_cpu
        self.non_zero_memory += sign * nz_mem
        self.pod_count += sign


# -- filters and scores (pure) -------------------------------------------------------------

def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether any toleration tolerates ``taint`` (v1.Toleration.ToleratesTaint)."""
    return tolerations_tolerate_taint(tolerations, taint)


def node_matches_affinity(pod: Mapping[str, Any], node_name: str,
                          labels: Mapping[str, str]) -> bool:
    """``nodeSelector`` and required node affinity (ORed terms of ANDed expressions)."""
    return required_node_affinity_matches(
        pod, {"metadata": {"name": node_name, "labels": labels}})


def run_filters(pod: Mapping[str, Any], requests: Mapping[str, int],
                info: NodeInfo) -> tuple[list[str], bool]:
    """Why ``pod`` cannot go to ``info``'s node: (reasons, resolvable by preemption).

    An empty list means the pod fits. As upstream, the first failing plugin
    decides; only NodeResourcesFit may give several reasons, and only its
    failures could be resolved by preempting other pods.
    """
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or ()
    if info.unschedulable and not tolerates(
            tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
        return [ERR_UNSCHEDULABLE], False
    for taint in info.taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not tolerates(tolerations, taint):
            msg = (f"node(s) had untolerated taint {{{taint.get('key', '')}: "
                   f"{taint.get('value', '')}}}")
            return [msg], False
    if (spec.get("nodeSelector") or spec.get("affinity")) and \
            not node_matches_affinity(pod, info.name, info.labels):
        return [ERR_NODE_AFFINITY], False
    reasons: list[str] = []
    if info.pod_count + 1 > info.allocatable.get("pods", 0):
        reasons.append(ERR_TOO_MANY_PODS)
    for name, amount in requests.items():
        if amount and info.requested.get(name, 0) + amount > info.allocatable.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons, True


def score_node(info: NodeInfo, nz_cpu: int, nz_mem: int) -> float:
    """LeastAllocated + BalancedAllocation (0..200) for placing a pod of these requests.

    Both on cpu and memory with upstream's default weights (1 each), on the
    non-zero requests. Written out for two resources: it runs for every
    node for every pod.
    """
    cpu_alloc = info.allocatable.get("cpu", 0)
    mem_alloc = info.allocatable.get("memory", 0)
    fc = (info.non_zero_cpu + nz_cpu) / cpu_alloc if cpu_alloc > 0 else 1.0
    fm = (info.non_zero_memory + nz_mem) / mem_alloc if mem_alloc > 0 else 1.0
    fc, fm = min(fc, 1.0), min(fm, 1.0)
    least = (1.0 - fc) * 50.0 + (1.0 - fm) * 50.0  # the mean of the two, times 100
    # BalancedAllocation: 1 - the standard deviation of the two fractions (|a-b|/2).
    return least + (1.0 - abs(fc - fm) / 2.0) * 100.0


def num_feasible_nodes_to_find(num_all_nodes: int) -> int:
    """How many feasible nodes to look for (upstream's adaptive percentageOfNodesToScore)."""
    if num_all_nodes < 100:
        return num_all_nodes
    pct = max(5, 50 - num_all_nodes // 125)
    return max(100, num_all_nodes * pct // 100)


def _histogram(counts: Mapping[str, int]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def fit_error_message(num_nodes: int, reasons: Mapping[str, Sequence[str]],
                      resolvable: Mapping[str, bool]) -> str:
    """kube-scheduler's FitError text for a pod that fits no node.

    ``reasons`` maps node name → why it failed; ``resolvable`` whether
    preemption could help on it (it never does here: all pods have the same
    priority, so there are no victims).
    """
    counts: dict[str, int] = {}
    for rs in reasons.values():
        for r in rs:
            counts[r] = counts.get(r, 0) + 1
    msg = f"0/{num_nodes} nodes are available"
    if counts:
        msg += ": " + _histogram(counts)
    msg += "."
    post: dict[str, int] = {}
    for name in reasons:
        r = NO_VICTIMS if resolvable.get(name) else PREEMPTION_NOT_HELPFUL
        post[r] = post.get(r, 0) + 1
    msg += f" preemption: 0/{num_nodes} nodes are available"
    if post:
        msg += ": " + _histogram(post)
    return msg + "."


def prefilter_error_message(num_nodes: int, why: str) -> str:
    """kube-scheduler's FitError text when a PreFilter plugin rejected the pod: its message
    instead of per-node reasons, and no node where preemption could help."""
    return (f"0/{num_nodes} nodes are available: {why}. preemption: 0/{num_nodes} nodes are "
            f"available: {num_nodes} {PREEMPTION_NOT_HELPFUL}.")


def _object_of(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


# -- the scheduler ---------------------------------------------------------------------------

class Scheduler:
    """Binds this scheduler's Pending pods to nodes; see the module docstring.

    Built before the informer factory starts (it registers its handlers on
    ``pods`` and ``nodes``); :meth:`run` then runs ``workers`` workers, each
    deciding and binding one pod at a time (decisions never interleave).
    """

    def __init__(self, client: Client, pods: GenericInformer, nodes: GenericInformer, *,
                 scheduler_name: str = DEFAULT_SCHEDULER_NAME,
                 recorder: EventRecorder | None = None,
                 unschedulable_retry: float = UNSCHEDULABLE_RETRY_SECONDS,
                 claims: GenericInformer | None = None,
                 volumes: GenericInformer | None = None,
                 classes: GenericInformer | None = None,
                 clock: Clock = REAL_CLOCK, rng: RandomSource = REAL_RANDOM) -> None:
        self._client = client
        # ties between equally scored nodes (the simulator's "scheduler" stream)
        self._rng = rng
        # the simulator's clock: retries of unschedulable pods, the volume binding
        # timeout, PodScheduled condition times
        self.clock = clock
        self.scheduler_name = scheduler_name
        self._recorder = recorder
        self._unschedulable_retry = unschedulable_retry
        self._pods_store = pods.informer.get_indexer()
        self._nodes: dict[str, NodeInfo] = {}
        self._accounted: dict[str, tuple[str, Resources, int, int]] = {}
        self._assumed: set[str] = set()
        self._unschedulable: set[str] = set()
        self._next_start = 0
        self.bound = 0
        """Successful bindings so far."""
        self.controller = Controller("scheduler", self._schedule_one, clock=clock)
        self.controller.watch(pods, _PodHandler(self))
        self.controller.watch(nodes, _NodeHandler(self))
        self.volume_binder: VolumeBinder | None = None
        if claims is not None and volumes is not None and classes is not None:
            self.volume_binder = VolumeBinder(claims.informer.get_indexer(),
                                              volumes.informer.get_indexer(),
                                              classes.informer.get_indexer(), clock=clock)
            retry = _StorageHandler(self)
            for inf in (claims, volumes, classes):
                self.controller.watch(inf, retry)

    # -- cache maintenance (informer handlers) ----------------------------------------------

    def _info(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        return info

    def _account(self, key: str, node_name: str, pod: Mapping[str, Any]) -> None:
        have = self._accounted.get(key)
        if have is not None:
            if have[0] == node_name:
                return
            self._unaccount(key)
        req = pod_requests(pod)
        nz_cpu, nz_mem = non_zero_requests(pod)
        self._accounted[key] = (node_name, req, nz_cpu, nz_mem)
        self._info(node_name).add_pod(req, nz_cpu, nz_mem)

    def _unaccount(self, key: str) -> bool:
        self._assumed.discard(key)
        have = self._accounted.pop(key, None)
        if have is None:
            return False
        node_name, req, nz_cpu, nz_mem = have
        info = self._nodes.get(node_name)
        if info is not None:
            info.add_pod(req, nz_cpu, nz_mem, sign=-1)
            if info.node is None and info.pod_count <= 0:
                del self._nodes[node_name]
        return True

    def _responsible(self, pod: Mapping[str, Any]) -> bool:
        return ((pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME) \
            == self.scheduler_name

    def pod_changed(self, pod: Mapping[str, Any]) -> None:
        key = _key(pod)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            self._assumed.discard(key)  # the binding is confirmed
            self._unschedulable.discard(key)
            if is_pod_terminal(pod):
                if self._unaccount(key):
                    self.move_all_to_active()
            else:
                self._account(key, node_name, pod)
            return
        if key in self._assumed:
            return  # bound already, the informer has not shown it yet
        if self._accounted.get(key) is not None:
            self._unaccount(key)
        if (self._responsible(pod) and not is_pod_terminal(pod)
                and not (pod.get("metadata") or {}).get("deletionTimestamp")
                and key not in self._unschedulable):
            self.controller.enqueue_key(key)

    def pod_deleted(self, pod: Mapping[str, Any]) -> None:
        key = _key(pod)
        self._unschedulable.discard(key)
        if self._unaccount(key):
            self.move_all_to_active()

    def node_changed(self, node: Mapping[str, Any]) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        self._info(name).set_node(node)
        self.move_all_to_active()

    def node_deleted(self, node: Mapping[str, Any]) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        info = self._nodes.get(name)
        if info is None:
            return
        if info.pod_count > 0:
            info.node = None  # pods still name it; they leave through their own events
        else:
            del self._nodes[name]

    def forget_unschedulable(self, key: str) -> None:
        self._unschedulable.discard(key)

    def move_all_to_active(self) -> None:
        """Retry every unschedulable pod (a cluster event may have made room)."""
        if not self._unschedulable:
            return
        keys, self._unschedulable = self._unschedulable, set()
        for key in keys:
            self.controller.enqueue_key(key)

    # -- scheduling ------------------------------------------------------------------------

    def find_node(self, pod: Mapping[str, Any]) -> tuple[str | None, str]:
        """(the chosen node, "") or (None, the FitError message). Pure of I/O."""
        node, message, _ = self._find_node(pod)
        return node, message

    def _find_node(self, pod: Mapping[str, Any]) -> tuple[str | None, str, BindPlan | None]:
        nodes = [info for info in self._nodes.values() if info.node is not None]
        if not nodes:
            return None, "no nodes available to schedule pods", None
        volumes = PodVolumes()
        if self.volume_binder is not None:
            volumes, rejected = self.volume_binder.pre_filter(pod)
            if rejected:  # a PreFilter failure: every node is ruled out by it
                return None, prefilter_error_message(len(nodes), rejected), None
        requests = pod_requests(pod)
        nz_cpu, nz_mem = non_zero_requests(pod)
        want = num_feasible_nodes_to_find(len(nodes))
        reasons: dict[str, list[str]] = {}
        resolvable: dict[str, bool] = {}
        best: list[NodeInfo] = []
        best_score = -1.0
        found = 0
        n = len(nodes)
        start = self._next_start % n
        examined = 0
        for i in range(n):
            info = nodes[(start + i) % n]
            examined += 1
            why, can_preempt = run_filters(pod, requests, info)
            if not why and volumes and self.volume_binder is not None and \
                    info.node is not None:
                why, can_preempt = self.volume_binder.filter(volumes, info.node), False
            if why:
                reasons[info.name] = why
                resolvable[info.name] = can_preempt
                continue
            found += 1
            s = score_node(info, nz_cpu, nz_mem)
            if s > best_score:
                best, best_score = [info], s
            elif s == best_score:
                best.append(info)
            if found >= want:
                break
        self._next_start = (start + examined) % n
        if not best:
            return None, fit_error_message(n, reasons, resolvable), None
        chosen = self._rng.choice(best)
        plan = None
        if volumes and self.volume_binder is not None and chosen.node is not None:
            plan = self.volume_binder.plan(volumes, chosen.node)
        return chosen.name, "", plan

    async def _schedule_one(self, key: str) -> Result | None:
        pod = self._pods_store.get_by_key(key)
        if pod is None or key in self._assumed:
            return None
        spec = pod.get("spec") or {}
        if (spec.get("nodeName") or not self._responsible(pod) or is_pod_terminal(pod)
                or (pod.get("metadata") or {}).get("deletionTimestamp")):
            return None
        if spec.get("schedulingGates"):
            await self._set_unschedulable(pod, "SchedulingGated",
                                          "Scheduling is blocked due to non-empty "
                                          "scheduling gates", event=False)
            return None
        node, message, plan = self._find_node(pod)
        if node is None:
            self._unschedulable.add(key)
            await self._set_unschedulable(pod, "Unschedulable", message)
            return Result(requeue_after=self._unschedulable_retry)
        # Assume before the first await: the next decision sees this pod's room taken.
        self._account(key, node, pod)
        self._assumed.add(key)
        meta = pod["metadata"]
        if plan is not None and self.volume_binder is not None:
            try:
                await self.volume_binder.bind(self._client, plan)  # PreBind
            except Exception:
                # a volume taken meanwhile (409) or a claim not bound in time: unreserve
                # and retry the pod with backoff, as upstream's PreBind failure does
                if key in self._assumed:
                    self._unaccount(key)
                raise
        try:
            await self._client.bind(meta["name"], meta["namespace"], node, uid=meta.get("uid"))
        except Exception as exc:
            if key in self._assumed:
                self._unaccount(key)
            if is_not_found(exc) or is_conflict(exc):
                return None  # deleted, or bound by someone else: the informer will tell
            raise
        self.bound += 1
        if self._recorder is not None:
            self._recorder.event(pod, "Normal", "Scheduled",
                                 f"Successfully assigned {meta['namespace']}/{meta['name']} "
                                 f"to {node}")
        return None

    async def _set_unschedulable(self, pod: Mapping[str, Any], reason: str, message: str,
                                 event: bool = True) -> None:
        cond = get_pod_condition(pod, "PodScheduled")
        if cond is not None and cond.get("status") == "False" and \
                cond.get("reason") == reason and cond.get("message") == message:
            return  # already said; upstream does not rewrite an unchanged condition
        if event and self._recorder is not None:
            self._recorder.event(pod, "Warning", "FailedScheduling", message)
        patch = {"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
            "lastProbeTime": None, "lastTransitionTime": format_time(self.clock.now())}]}}
        meta = pod["metadata"]
        try:
            await self._client.patch("pods", meta["name"], patch, "strategic",
                                     meta["namespace"], subresource="status")
        except Exception as exc:
            if not is_not_found(exc):
                raise

    # -- running ---------------------------------------------------------------------------

    async def run(self, workers: int = 16) -> None:
        """Wait for the caches, then schedule until :meth:`shutdown` or cancellation."""
        await self.controller.run(workers)

    def shutdown(self) -> None:
        self.controller.shutdown()

    def node_info(self, name: str) -> NodeInfo | None:
        """The cached view of one node (for tests and status lines)."""
        return self._nodes.get(name)


class _PodHandler:
    __slots__ = ("_s",)

    def __init__(self, s: Scheduler) -> None:
        self._s = s

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._s.pod_changed(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if not (new.get("spec") or {}).get("nodeName") and \
                old.get("spec") != new.get("spec"):
            # A changed spec (tolerations, selector, gates) may fit now: upstream
            # moves such a pod out of the unschedulable set too.
            self._s.forget_unschedulable(_key(new))
        self._s.pod_changed(new)

    def on_delete(self, obj: Any) -> None:
        self._s.pod_deleted(_object_of(obj))


class _NodeHandler:
    __slots__ = ("_s",)

    def __init__(self, s: Scheduler) -> None:
        self._s = s

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._s.node_changed(obj)

    def on_update(self, old: Any, new: Any) -> None:
        # Heartbeats change only timestamps: no reason to retry unschedulable pods.
        if _node_sched_view(old) != _node_sched_view(new):
            self._s.node_changed(new)

    def on_delete(self, obj: Any) -> None:
        self._s.node_deleted(_object_of(obj))


def _node_sched_view(node: Any) -> Any:
    if not isinstance(node, Mapping):
        return None
    status = node.get("status") or {}
    ready = [c.get("status") for c in status.get("conditions") or ()
             if c.get("type") == "Ready"]
    return ((node.get("metadata") or {}).get("labels"), node.get("spec"),
            status.get("allocatable"), ready)


class _StorageHandler:
    """Claims, volumes and classes: any change may make a waiting pod's volumes fit
    (upstream's VolumeBinding registers these cluster events)."""

    __slots__ = ("_s",)

    def __init__(self, s: Scheduler) -> None:
        self._s = s

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not is_in_initial_list:
            self._s.move_all_to_active()

    def on_update(self, old: Any, new: Any) -> None:
        self._s.move_all_to_active()

    def on_delete(self, obj: Any) -> None:
        self._s.move_all_to_active()
