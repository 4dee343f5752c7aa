"""The simulated kubelet: runs the lifecycle of the pods bound to simulated nodes.

Role: what the kubelet's pod workers and status manager report for a pod, with
no container behind it, like kwok's pod stages. One logical kubelet per node,
one process-wide pods informer and one work queue for all of them: a pod is
handled by "its" kubelet through the node it is bound to (its ``nodeName``
must be one of the simulated nodes).

A pod's life (times from when the kubelet first sees it bound)::

    bound ──► Running, containers running, Ready=False (ContainersNotReady)
                │ ready-after-seconds (default 0.5 s; 0 merges this write into the first)
                ▼
              Ready=True, ContainersReady=True
                │ run-seconds (restartPolicy Never/OnFailure: default 3 s;
                │              Always: forever unless the annotation says otherwise)
                ▼
     exit code 0 (Never, OnFailure) ─► Succeeded (terminated, reason Completed)
     exit code ≠0, Never            ─► Failed (terminated, reason Error)
     exit code ≠0 OnFailure, or any exit under Always
                                    ─► restarted: restartCount + 1, lastState terminated,
                                       running again (not ready until ready-after-seconds);
                                       the first restart at once, later ones after the
                                       kubelet's CrashLoopBackOff (10 s doubling to 5 min,
                                       reset after 10 min running; pykcm.sim.crash_backoff),
                                       waiting with reason CrashLoopBackOff meanwhile and a
                                       BackOff event
    deletionTimestamp set ─► Terminating: Killing events, the containers run on until they
                             stop (killed, exit 137, when the grace period ends; or by
                             themselves: sim.pykcm.io/termination-seconds; see
                             pykcm.sim.termination), then the terminal status (Succeeded
                             if every container exited 0, else Failed) and a DELETE with
                             gracePeriodSeconds 0 and a UID precondition; finalizers then
                             keep the pod as the API server decides

Annotations script a pod (read when the kubelet handles it):
``sim.pykcm.io/run-seconds`` (float), ``sim.pykcm.io/exit-code`` (int),
``sim.pykcm.io/ready-after-seconds`` (float), ``sim.pykcm.io/never-ready``
("true": Running and started, Ready=False forever, as a failing readiness
probe), ``sim.pykcm.io/termination-seconds`` and
``sim.pykcm.io/termination-exit-code`` (how the containers stop on deletion).

Status fields written, as the v1.36 kubelet reports them: phase, hostIP and
hostIPs, podIP and podIPs (from the node's pod CIDR, 10.244.<node>.2 upwards,
handed out round-robin as the host-local IPAM does), startTime,
containerStatuses (name, image normalised as containerd reports it, imageID,
containerID ``containerd://<64 hex>``, ready, started, restartCount, state,
lastState), initContainerStatuses (ordinary init containers terminated with
reason Completed, sidecars running), and the conditions
PodReadyToStartContainers, Initialized, Ready, ContainersReady (readiness
gates honoured) and PodScheduled (added when the pod was created with a
nodeName and never went through a scheduler), each keeping its
lastTransitionTime while its status does not change.

Data flow::

    pods informer (all pods, shared with the scheduler)
        │ handler: nodeName is a simulated node → enqueue ns/name
        ▼
    Controller "kubelet" (N workers, one key at a time):
        PodRecord (local, per pod: IP, start time, container IDs, restarts, what was
        last written) ── advance(now) ── build_status() ── fingerprint changed?
        │                                                   │ yes
        │ Result(requeue_after = next transition)           ▼
        ▼                                     PATCH pods/<name>/status (merge patch)

Writes are merge patches of the status subresource: no resourceVersion, so
no conflicts with other writers of the pod, and the lists we send
(conditions, containerStatuses) are complete (conditions of other types
already on the pod are kept in them). What was last written is remembered
per pod, so a cache that lags behind our own writes never causes a
duplicate write. After a restart the record is rebuilt from the pod's
status (IP, start time, container IDs), so nothing is rewritten.

Volumes: with a claims informer, a pod using PersistentVolumeClaims stays Pending,
its containers waiting (ContainerCreating), until every claim is Bound; a missing
claim gets the kubelet's FailedMount event (see :mod:`pykcm.sim.volumes`).

Probes (:mod:`pykcm.sim.probes`): a scripted liveness failure ends a run
like an exit (code 137) with Unhealthy and Killing events; a scripted
readiness failure holds the pod unready with an Unhealthy event. Image
pulls (:mod:`pykcm.sim.image_pull`): a scripted pull error keeps the pod
Pending in ErrImagePull / ImagePullBackOff. Events as the kubelet records them
(source component ``kubelet``, the container's fieldPath): Pulling, Pulled,
Created, Started at each container start, Killing, BackOff, Unhealthy,
Failed, FailedMount. Logs, exec and attach: :mod:`pykcm.sim.kubelet_server`.

Init containers (:mod:`pykcm.sim.init_containers`): they complete at once,
or after ``sim.pykcm.io/init-seconds`` during which the pod is Pending and
initializing; sidecars run with the pod.

Left out: activeDeadlineSeconds, resource usage, startup probes, init
containers that fail; no restarts while a pod terminates; one back-off entry per pod
(the kubelet keeps one per container; the simulator's containers crash
together).
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.pod_util import new_pod_condition, parse_time, pod_claim_names
from pykcm.api.randomness import REAL_RANDOM, RandomSource
from pykcm.api.timestamps import format_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client, is_conflict, is_not_found
from pykcm.controller.controller import Controller, Result
from pykcm.controller.event_recorder import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    EventRecorder,
)
from pykcm.informers import GenericInformer
from pykcm.sim.crash_backoff import CrashBackoff, backoff_message, pod_description
from pykcm.sim.image_pull import image_pull_error, pull_error_message, pull_failure_status
from pykcm.sim.init_containers import ANNOTATION_INIT_SECONDS, init_phase_status
from pykcm.sim.probes import (
    LIVENESS_KILL_EXIT_CODE,
    liveness_kill_after,
    probe_failure_message,
    readiness_fails,
)
from pykcm.sim.termination import plan_stop
from pykcm.sim.volumes import volumes_ready, waiting_status

__all__ = [
    "ANNOTATION_EXIT_CODE",
    "ANNOTATION_NEVER_READY",
    "ANNOTATION_READY_AFTER",
    "ANNOTATION_RUN_SECONDS",
    "ContainerRun",
    "Kubelet",
    "NodeNetwork",
    "PodIPAllocator",
    "PodRecord",
    "PodScript",
    "advance",
    "build_pod_status",
    "image_id",
    "normalize_image",
    "parse_script",
]

log = logging.getLogger("pykcm.sim.kubelet")

ANNOTATION_RUN_SECONDS: Final = "sim.pykcm.io/run-seconds"
ANNOTATION_EXIT_CODE: Final = "sim.pykcm.io/exit-code"
ANNOTATION_READY_AFTER: Final = "sim.pykcm.io/ready-after-seconds"
ANNOTATION_NEVER_READY: Final = "sim.pykcm.io/never-ready"

DEFAULT_READY_AFTER: Final = 0.5
DEFAULT_RUN_SECONDS: Final = 3.0


# -- annotations ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PodScript:
    """How a simulated pod behaves (from its annotations and restartPolicy)."""

    run_seconds: float | None
    """Seconds the containers run before exiting; None: forever."""
    exit_code: int
    ready_after: float
    never_ready: bool
    restart_policy: str
    liveness_kill_after: float | None = None
    """Seconds after each start at which a failing liveness probe kills the containers."""
    init_seconds: float = 0.0
    """Seconds the ordinary init containers run before the containers start."""

    def run_end(self) -> tuple[float | None, int, bool]:
        """(seconds a run lasts or None: forever, its exit code, ended by the liveness probe)."""
        live = self.liveness_kill_after
        if live is not None and (self.run_seconds is None or live < self.run_seconds):
            return live, LIVENESS_KILL_EXIT_CODE, True
        return self.run_seconds, self.exit_code, False


def _float(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and f >= 0 else None


def parse_script(pod: Mapping[str, Any], *, default_ready_after: float = DEFAULT_READY_AFTER,
                 default_run_seconds: float = DEFAULT_RUN_SECONDS) -> PodScript:
    """The pod's script; malformed annotations fall back to the defaults."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    run = _float(ann.get(ANNOTATION_RUN_SECONDS)) if ANNOTATION_RUN_SECONDS in ann else None
    if run is None and policy != "Always":
        run = default_run_seconds
    try:
        code = int(str(ann.get(ANNOTATION_EXIT_CODE, "0")).strip())
    except ValueError:
        code = 0
    ready = _float(ann.get(ANNOTATION_READY_AFTER)) if ANNOTATION_READY_AFTER in ann else None
    never = str(ann.get(ANNOTATION_NEVER_READY, "")).strip().lower() in ("true", "1", "yes")
    return PodScript(run_seconds=run, exit_code=code & 0xFF if code >= 0 else 1,
                     ready_after=default_ready_after if ready is None else ready,
                     never_ready=never or readiness_fails(pod), restart_policy=policy,
                     liveness_kill_after=liveness_kill_after(pod),
                     init_seconds=_float(ann.get(ANNOTATION_INIT_SECONDS)) or 0.0)


# -- images and IDs ---------------------------------------------------------------------------

@lru_cache(maxsize=1024)
def normalize_image(image: str) -> str:
    """The image as containerd reports it: ``nginx`` → ``docker.io/library/nginx:latest``."""
    if not image:
        return image
    first, sep, rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        domain, remainder = first, rest
    else:
        domain, remainder = "docker.io", image
    if domain == "docker.io" and "/" not in remainder:
        remainder = "library/" + remainder
    last = remainder.rsplit("/", 1)[-1]
    if "@" not in remainder and ":" not in last:
        remainder += ":latest"
    return f"{domain}/{remainder}"


@lru_cache(maxsize=1024)
def image_id(image: str) -> str:
    """A stable fake ``repo@sha256:<digest>`` for an image (its own digest if pinned)."""
    norm = normalize_image(image)
    if "@" in norm:
        return norm
    repo = norm.rsplit(":", 1)[0] if ":" in norm.rsplit("/", 1)[-1] else norm
    return f"{repo}@sha256:{hashlib.sha256(norm.encode()).hexdigest()}"


def _container_id(rng: RandomSource) -> str:
    # an identifier, not a secret: from the kubelet's random source (seeded runs repeat it)
    return "containerd://" + rng.hex(32)


# -- per-pod runtime state ----------------------------------------------------------------------

@dataclass(slots=True)
class ContainerRun:
    """One container's runtime state."""

    container_id: str
    restart_count: int = 0
    last_terminated: dict[str, Any] | None = None


@dataclass(slots=True)
class PodRecord:
    """What the kubelet remembers of one pod (rebuilt from its status after a restart)."""

    uid: str
    node: str
    ip: str
    start_time: float
    cycle_start: float
    """When the current run of the containers started (start_time, or the last restart)."""
    containers: dict[str, ContainerRun] = field(default_factory=dict)
    init_containers: dict[str, ContainerRun] = field(default_factory=dict)
    restarts: int = 0
    finished: tuple[int, float] | None = None
    """(exit code, when) once the pod has finished for good."""
    written: tuple[Any, ...] | None = None
    """The fingerprint of the last status written (None: nothing yet)."""
    written_rv: str | None = None
    """The pod's resourceVersion our last write produced."""
    next_wake: float | None = None
    """When the next transition is due (a requeue is pending for it)."""
    backoff: CrashBackoff = field(default_factory=CrashBackoff)
    """The containers' CrashLoopBackOff entry."""
    last_exit_at: float | None = None
    """When the containers last exited (and were or will be restarted)."""
    waiting_until: float | None = None
    """In CrashLoopBackOff: when the containers are restarted."""
    terminating_since: float | None = None
    """When the kubelet first saw the pod's deletionTimestamp."""
    deleted: bool = False
    """The final DELETE (grace 0) has been sent."""
    init_until: float | None = None
    """When the init containers finish (sim.pykcm.io/init-seconds), None: at once."""
    backoff_reported: float | None = None
    """The waiting_until whose BackOff event has been recorded."""
    liveness_kills: list[float] = field(default_factory=list)
    """Liveness kills not yet reported (Unhealthy, Killing events)."""
    starts_reported: int = -1
    """The restart count whose start events (Pulled, Created, Started) were recorded."""
    readiness_reported: bool = False
    ids: RandomSource = field(default=REAL_RANDOM, repr=False, compare=False)
    """Where new container IDs come from (the kubelet's stream of the simulator's source)."""


def advance(record: PodRecord, script: PodScript, now: float) -> None:
    """Move the pod's containers through their exits, back-offs and restarts up to ``now``.

    Replays what happened since the last call at the simulated times (an exit at
    cycle_start + run_seconds, a restart at once or when its back-off ends), so a
    kubelet that syncs late still reports the schedule a real one would have.
    """
    if record.terminating_since is not None:
        return  # no restarts while the pod terminates
    for _ in range(1000):  # bounded catch-up (a 5 min back-off caps the cycles)
        run_seconds, code, by_liveness = script.run_end()
        if record.finished is not None or run_seconds is None and (
                record.waiting_until is None):
            return
        if record.waiting_until is not None:
            # CrashLoopBackOff: restarted when the back-off ends
            if now < record.waiting_until:
                return
            _restart(record, record.waiting_until)
            continue
        assert run_seconds is not None
        finish_at = record.cycle_start + run_seconds
        if now < finish_at:
            return
        if by_liveness:
            record.liveness_kills.append(finish_at)
        if script.restart_policy == "Never" or (
                script.restart_policy == "OnFailure" and code == 0):
            record.finished = (code, finish_at)
            return
        reason = "Completed" if code == 0 else "Error"
        for run in record.containers.values():
            run.last_terminated = {"exitCode": code, "reason": reason,
                                   "startedAt": format_time(record.cycle_start),
                                   "finishedAt": format_time(finish_at),
                                   "containerID": run.container_id}
        record.last_exit_at = finish_at
        if record.backoff.in_backoff_since(finish_at, finish_at):
            record.waiting_until = finish_at + record.backoff.delay
        else:
            _restart(record, finish_at)


def _restart(record: PodRecord, at: float) -> None:
    """The containers start again at ``at`` (restartCount + 1, a new container ID)."""
    record.backoff.next(record.last_exit_at if record.last_exit_at is not None else at, at)
    for run in record.containers.values():
        run.restart_count += 1
        run.container_id = _container_id(record.ids)
    record.restarts += 1
    record.cycle_start = at
    record.waiting_until = None


def _gates_message(pod: Mapping[str, Any],
                   conds: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why the readiness gates hold the pod unready (upstream's messages), or None."""
    msgs = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or ():
        ctype = gate.get("conditionType", "")
        c = conds.get(ctype)
        if c is None:
            msgs.append(f'corresponding condition of pod readiness gate "{ctype}" '
                        "does not exist.")
        elif c.get("status") != "True":
            msgs.append(f'the status of pod readiness gate "{ctype}" is not "True", '
                        f'but {c.get("status")}')
    return ", ".join(msgs) if msgs else None


_OWN_CONDITIONS: Final = frozenset({"PodReadyToStartContainers", "Initialized", "Ready",
                                    "ContainersReady", "PodScheduled"})


def build_pod_status(pod: Mapping[str, Any], record: PodRecord, script: PodScript,
                     host_ip: str, now: float
                     ) -> tuple[dict[str, Any], tuple[Any, ...], float | None]:
    """(status to write, its fingerprint, when the next transition is due or None).

    Pure: call :func:`advance` first. The fingerprint holds what changes
    over a pod's life (phase, readiness, restarts, readiness gates), so an
    equal fingerprint means nothing new to write.
    """
    spec = pod.get("spec") or {}
    finished = record.finished
    if record.init_until is not None and now < record.init_until and finished is None:
        def init_id(name: str) -> str:
            run = record.init_containers.get(name)
            if run is None:
                run = record.init_containers[name] = ContainerRun(_container_id(record.ids))
            return run.container_id

        init = init_phase_status(pod, host_ip, record.ip, record.start_time, now, init_id,
                                 normalize_image, image_id)
        return init, ("Pending", "initializing"), record.init_until
    old_status = pod.get("status") or {}
    old_conds = {c.get("type", ""): c for c in old_status.get("conditions") or ()}
    running = finished is None
    crashed = running and record.waiting_until is not None
    ready_at = record.cycle_start + script.ready_after
    containers_ready = (running and not crashed and not script.never_ready
                        and now >= ready_at)
    meta = pod.get("metadata") or {}
    who = pod_description(meta.get("name", ""), meta.get("namespace", ""), meta.get("uid", ""))
    names = [c.get("name", "") for c in spec.get("containers") or ()]
    start = format_time(record.start_time)
    cycle = format_time(record.cycle_start)

    def term(code: int, started: str, at: float, cid: str) -> dict[str, Any]:
        return {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                               "startedAt": started, "finishedAt": format_time(at),
                               "containerID": cid}}

    statuses = []
    for c in spec.get("containers") or ():
        name = c.get("name", "")
        run = record.containers.get(name)
        if run is None:
            run = record.containers[name] = ContainerRun(_container_id(record.ids),
                                                         record.restarts)
        if finished:
            state = term(finished[0], cycle, finished[1], run.container_id)
        elif crashed:
            state = {"waiting": {"reason": "CrashLoopBackOff", "message": backoff_message(
                record.backoff.delay, name, who)}}
        else:
            state = {"running": {"startedAt": cycle}}
        statuses.append({
            "name": name, "image": normalize_image(c.get("image", "")),
            "imageID": image_id(c.get("image", "")), "containerID": run.container_id,
            "ready": containers_ready, "started": running and not crashed,
            "restartCount": run.restart_count, "state": state,
            "lastState": {"terminated": run.last_terminated} if run.last_terminated else {}})
    init_statuses = []
    for c in spec.get("initContainers") or ():
        name = c.get("name", "")
        run = record.init_containers.get(name)
        if run is None:
            run = record.init_containers[name] = ContainerRun(_container_id(record.ids))
        sidecar = c.get("restartPolicy") == "Always"
        if sidecar:
            state = (term(0, start, finished[1], run.container_id) if finished
                     else {"running": {"startedAt": start}})
            ready, started = containers_ready, running
        else:
            state = term(0, start, record.init_until or record.start_time, run.container_id)
            ready, started = True, False
        init_statuses.append({
            "name": name, "image": normalize_image(c.get("image", "")),
            "imageID": image_id(c.get("image", "")), "containerID": run.container_id,
            "ready": ready, "started": started, "restartCount": 0, "state": state,
            "lastState": {}})

    if finished is None:
        phase = "Running"
    else:
        phase = "Succeeded" if finished[0] == 0 else "Failed"
    has_init = bool(spec.get("initContainers"))
    if phase == "Succeeded":
        cr_status, cr_reason, cr_msg = "False", "PodCompleted", ""
    elif containers_ready:
        cr_status, cr_reason, cr_msg = "True", "", ""
    else:
        unready = " ".join(names)
        cr_status, cr_reason = "False", "ContainersNotReady"
        cr_msg = f"containers with unready status: [{unready}]"
    gates = _gates_message(pod, old_conds) if cr_status == "True" else None
    if gates is not None:
        ready_cond = new_pod_condition("Ready", "False", now, old_conds.get("Ready"),
                                "ReadinessGatesNotReady", gates)
    else:
        ready_cond = new_pod_condition("Ready", cr_status, now, old_conds.get("Ready"),
                                cr_reason, cr_msg)
    conditions = [
        new_pod_condition("PodReadyToStartContainers", "True" if running else "False", now,
                   old_conds.get("PodReadyToStartContainers")),
        new_pod_condition("Initialized", "True", now, old_conds.get("Initialized"),
                   "PodCompleted" if phase == "Succeeded" and has_init else ""),
        ready_cond,
        new_pod_condition("ContainersReady", cr_status, now, old_conds.get("ContainersReady"),
                   cr_reason, cr_msg),
        dict(old_conds["PodScheduled"]) if "PodScheduled" in old_conds else
        new_pod_condition("PodScheduled", "True", record.start_time, None),
    ]
    # Conditions other writers own (DisruptionTarget, readiness gates ...) are kept.
    conditions += [dict(c) for t, c in old_conds.items() if t not in _OWN_CONDITIONS]

    status: dict[str, Any] = {
        "phase": phase, "conditions": conditions,
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": record.ip, "podIPs": [{"ip": record.ip}],
        "startTime": start, "containerStatuses": statuses,
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    fingerprint = (phase, containers_ready, ready_cond["status"], record.restarts,
                   ready_cond.get("message"), len(statuses), len(init_statuses), crashed)
    wake: float | None = None
    if crashed:
        wake = record.waiting_until
    elif running:
        due = []
        if not containers_ready and not script.never_ready:
            due.append(ready_at)
        run_seconds = script.run_end()[0]
        if run_seconds is not None:
            due.append(record.cycle_start + run_seconds)
        wake = min(due) if due else None
    return status, fingerprint, wake


# -- pod IPs ------------------------------------------------------------------------------------

class PodIPAllocator:
    """Hands out the addresses of one node's pod CIDR, round-robin (host-local IPAM)."""

    __slots__ = ("_first", "_last", "_next", "_used")

    def __init__(self, cidr: str) -> None:
        net = ipaddress.IPv4Network(cidr)
        base = int(net.network_address)
        # .0 is the network, .1 the node's bridge (the gateway), the last the broadcast.
        self._first = base + 2
        self._last = base + net.num_addresses - 2
        self._next = self._first
        self._used: set[int] = set()

    def allocate(self) -> str:
        span = self._last - self._first + 1
        for _ in range(span):
            ip = self._next
            self._next = self._first if ip >= self._last else ip + 1
            if ip not in self._used:
                self._used.add(ip)
                return str(ipaddress.IPv4Address(ip))
        raise RuntimeError("no pod IP addresses left in the node's pod CIDR")

    def reserve(self, ip: str) -> None:
        try:
            self._used.add(int(ipaddress.IPv4Address(ip)))
        except ValueError:
            pass

    def release(self, ip: str) -> None:
        try:
            self._used.discard(int(ipaddress.IPv4Address(ip)))
        except ValueError:
            pass

    def __len__(self) -> int:
        return len(self._used)


@dataclass(frozen=True, slots=True)
class NodeNetwork:
    """A simulated node as its kubelet needs it: its InternalIP and pod CIDR."""

    host_ip: str
    pod_cidr: str


# -- the kubelet ----------------------------------------------------------------------------------

def _object_of(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class Kubelet:
    """The kubelets of all simulated nodes: one queue, ``workers`` concurrent pod syncs.

    ``nodes`` maps each simulated node's name to its network. Built before
    the informer factory starts (it registers its handler on ``pods``).
    """

    def __init__(self, client: Client, pods: GenericInformer,
                 nodes: Mapping[str, NodeNetwork], *,
                 ready_after: float = DEFAULT_READY_AFTER,
                 run_seconds: float = DEFAULT_RUN_SECONDS,
                 claims: GenericInformer | None = None,
                 recorder: EventRecorder | None = None,
                 max_grace_period: float | None = None,
                 node_recorders: Mapping[str, EventRecorder] | None = None,
                 clock: Clock = REAL_CLOCK, rng: RandomSource = REAL_RANDOM) -> None:
        self._client = client
        # container IDs (the simulator's "kubelet" stream; unseeded by default)
        self._ids = rng
        # the simulator's clock: run and ready delays, crash-loop backoff, probes, grace
        # periods and every time written into pods (startTime, startedAt, conditions)
        self.clock = clock
        # Caps the grace period of pods without sim.pykcm.io/termination-seconds
        # (None: killed when their own grace period ends, as a real kubelet)
        self.max_grace_period = max_grace_period
        # PersistentVolumeClaims (None: pods start whatever their claims): a pod waits
        # in ContainerCreating until its claims are Bound (pykcm.sim.volumes)
        self._claims = claims.informer.get_indexer() if claims is not None else None
        self._recorder = recorder
        # one recorder per node (source.host, reportingInstance: the node, as each
        # kubelet's own); the shared one for nodes without
        self._node_recorders = dict(node_recorders or {})
        self._volume_wait: dict[str, tuple[Any, ...]] = {}
        self._pulls: dict[str, _PullState] = {}
        self._store = pods.informer.get_indexer()
        self._nodes = dict(nodes)
        self._ipam = {n: PodIPAllocator(net.pod_cidr) for n, net in self._nodes.items()}
        self.ready_after = ready_after
        self.run_seconds = run_seconds
        self._records: dict[str, PodRecord] = {}
        self.status_writes = 0
        """Pod status writes so far."""
        self.deletes = 0
        """Pods deleted (grace 0) so far."""
        self.stopped_nodes: set[str] = set()
        """Nodes whose kubelet is dead: their pods are left as they are."""
        self.controller = Controller("kubelet", self._sync_pod, clock=clock)
        self.controller.watch(pods, _PodHandler(self))
        if claims is not None:
            self.controller.watch(claims, ResourceEventHandlerFuncs(
                add_func=self._claim_changed,
                update_func=lambda _old, new: self._claim_changed(new)))

    def _claim_changed(self, claim: Any) -> None:
        """Wake the waiting pods of the claim's namespace."""
        ns = (claim.get("metadata") or {}).get("namespace")
        for key in list(self._volume_wait):
            if key.startswith(f"{ns}/"):
                self.controller.enqueue_key(key)

    def stop_node(self, node: str) -> None:
        self.stopped_nodes.add(node)

    def start_node(self, node: str) -> None:
        """Back to life: sync the node's pods again, rewriting their status (others,
        the node lifecycle controller, may have changed it meanwhile)."""
        self.stopped_nodes.discard(node)
        for key, rec in self._records.items():
            if rec.node == node:
                rec.written = rec.written_rv = None
                self.controller.enqueue_key(key)
        for pod in self._store.list():
            if (pod.get("spec") or {}).get("nodeName") == node:
                self.controller.enqueue(pod)

    def pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """A pod of a simulated node from the cache (the kubelet server's lookup)."""
        pod = self._store.get_by_key(f"{namespace}/{name}")
        return pod if pod is not None and self.owns(pod) else None

    def owns(self, pod: Mapping[str, Any]) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self._nodes

    def pods_on(self, node: str) -> int:
        """Pods holding an IP on ``node``."""
        ipam = self._ipam.get(node)
        return len(ipam) if ipam is not None else 0

    # -- records ------------------------------------------------------------------------

    def _drop_pull(self, key: str) -> None:
        pull = self._pulls.pop(key, None)
        if pull is not None:
            ipam = self._ipam.get(pull.node)
            if ipam is not None:
                ipam.release(pull.ip)

    def _drop(self, key: str) -> None:
        self._drop_pull(key)
        self._volume_wait.pop(key, None)
        rec = self._records.pop(key, None)
        if rec is not None and rec.finished is None:
            self._release(rec)

    def _release(self, rec: PodRecord) -> None:
        ipam = self._ipam.get(rec.node)
        if ipam is not None:
            ipam.release(rec.ip)

    def _record_for(self, pod: Mapping[str, Any], node: str, now: float) -> PodRecord:
        uid = pod["metadata"].get("uid", "")
        status = pod.get("status") or {}
        ipam = self._ipam[node]
        ip = status.get("podIP")
        start = parse_time(status.get("startTime"))
        cstatuses = status.get("containerStatuses") or ()
        if ip and start is not None and cstatuses and all(
                c.get("containerID") for c in cstatuses):
            # Ours from before a restart: continue where the status says we were.
            ipam.reserve(ip)
            running = [parse_time(((c.get("state") or {}).get("running") or {})
                                  .get("startedAt")) for c in cstatuses]
            cycle = max((t for t in running if t is not None), default=start)
            rec = PodRecord(uid=uid, node=node, ip=ip, start_time=start, cycle_start=cycle,
                            ids=self._ids)
            for c in cstatuses:
                last = (c.get("lastState") or {}).get("terminated")
                rec.containers[c.get("name", "")] = ContainerRun(
                    c["containerID"], int(c.get("restartCount") or 0),
                    dict(last) if last else None)
                rec.restarts = max(rec.restarts, int(c.get("restartCount") or 0))
            for c in status.get("initContainerStatuses") or ():
                if c.get("containerID"):
                    rec.init_containers[c.get("name", "")] = ContainerRun(c["containerID"])
            return rec
        init = 0.0
        if any(c.get("restartPolicy") != "Always"
               for c in (pod.get("spec") or {}).get("initContainers") or ()):
            init = parse_script(pod).init_seconds
        return PodRecord(uid=uid, node=node, ip=ipam.allocate(), start_time=now,
                         cycle_start=now + init, init_until=now + init if init else None,
                         ids=self._ids)

    # -- the sync -----------------------------------------------------------------------

    async def _sync_pod(self, key: str) -> Result | None:
        pod = self._store.get_by_key(key)
        if pod is None or not self.owns(pod):
            self._drop(key)
            return None
        meta = pod["metadata"]
        node = pod["spec"]["nodeName"]
        if node in self.stopped_nodes:
            return None  # a dead kubelet: start_node syncs the pod again
        rec = self._records.get(key)
        if rec is not None and rec.uid != meta.get("uid"):
            self._drop(key)
            rec = None
        if meta.get("deletionTimestamp"):
            return await self._terminate(key, pod, node, rec)
        phase = (pod.get("status") or {}).get("phase")
        if rec is None:
            if phase in ("Succeeded", "Failed"):
                return None  # finished before we met it: nothing left to run
            if self._claims is not None and pod_claim_names(pod) and phase != "Running":
                waiting = await self._wait_for_volumes(key, pod, node)
                if waiting is not None:
                    return waiting
            pull_error = image_pull_error(pod)
            if pull_error is not None:
                return await self._failing_pull(key, pod, node, pull_error)
            self._drop_pull(key)
            now = self.clock.now()
            rec = self._records[key] = self._record_for(pod, node, now)
        elif rec.finished is not None or phase in ("Succeeded", "Failed"):
            return None
        now = self.clock.now()
        if rec.written_rv is not None and meta.get("resourceVersion") == rec.written_rv and (
                rec.next_wake is None or now < rec.next_wake):
            # The echo of our own write, before the next transition (whose requeue
            # is pending): nothing can have changed.
            return None
        script = parse_script(pod, default_ready_after=self.ready_after,
                              default_run_seconds=self.run_seconds)
        advance(rec, script, now)
        self._lifecycle_events(pod, rec, script)
        if rec.waiting_until is not None and rec.backoff_reported != rec.waiting_until:
            rec.backoff_reported = rec.waiting_until
            who = pod_description(meta["name"], meta["namespace"], meta.get("uid", ""))
            for c in pod["spec"].get("containers") or ():
                self._container_event(pod, c.get("name", ""), EVENT_TYPE_WARNING, "BackOff",
                                      f"Back-off restarting failed container "
                                      f"{c.get('name', '')} in pod {who}")
        if not await self._write_status(key, pod, rec, script, now):
            return None
        if rec.finished is not None:
            self._release(rec)  # the sandbox is gone; the status keeps the IP
            return None
        if rec.next_wake is not None:
            return Result(requeue_after=max(0.0, rec.next_wake - self.clock.now()))
        return None

    async def _write_status(self, key: str, pod: Mapping[str, Any], rec: PodRecord,
                            script: PodScript, now: float) -> bool:
        """PATCH the pod's status if it changed; False when the pod is gone."""
        meta = pod["metadata"]
        status, fingerprint, wake = build_pod_status(
            pod, rec, script, self._nodes[rec.node].host_ip, now)
        rec.next_wake = wake
        if rec.written is None and _status_fingerprint(pod) == fingerprint:
            rec.written = fingerprint  # after a restart: the server has it already
        if fingerprint == rec.written:
            return True
        try:
            out = await self._client.patch("pods", meta["name"], {"status": status},
                                           "merge", meta["namespace"], subresource="status")
        except Exception as exc:
            if is_not_found(exc):
                self._drop(key)
                return False
            # The retry must not take the unchanged cached pod for the echo of our
            # last write (next_wake already moved on): the transition would be lost.
            rec.written_rv = None
            raise
        self.status_writes += 1
        rec.written = fingerprint
        rec.written_rv = (out.get("metadata") or {}).get("resourceVersion")
        return True

    def _lifecycle_events(self, pod: Mapping[str, Any], rec: PodRecord,
                          script: PodScript) -> None:
        """The kubelet's events for what advance() did: liveness kills (Unhealthy,
        Killing), container starts (Pulling/Pulled, Created, Started), a failing
        readiness probe (Unhealthy)."""
        spec = pod.get("spec") or {}
        containers = spec.get("containers") or ()
        for _ in rec.liveness_kills:
            for c in containers:
                if c.get("livenessProbe"):
                    name = c.get("name", "")
                    msg = probe_failure_message(pod, c["livenessProbe"], rec.ip)
                    self._container_event(pod, name, EVENT_TYPE_WARNING, "Unhealthy",
                                          f"Liveness probe failed: {msg}")
                    self._container_event(pod, name, EVENT_TYPE_NORMAL, "Killing",
                                          f"Container {name} failed liveness probe, will be "
                                          f"restarted")
        rec.liveness_kills.clear()
        initializing = rec.init_until is not None and self.clock.now() < rec.init_until
        if (rec.finished is None and rec.waiting_until is None
                and rec.starts_reported != rec.restarts
                and not (initializing and rec.starts_reported == -2)):
            # -1: nothing reported; -2: the init containers' starts (while they run)
            todo = [(c, False) for c in containers]
            if initializing:
                todo = []
            if rec.starts_reported == -1:
                todo = [(c, True) for c in spec.get("initContainers") or ()] + todo
            rec.starts_reported = -2 if initializing else rec.restarts
            for c, init in todo:
                name, image = c.get("name", ""), c.get("image", "")
                if c.get("imagePullPolicy") == "Always":
                    self._container_event(pod, name, EVENT_TYPE_NORMAL, "Pulling",
                                          f'Pulling image "{image}"', init=init)
                    self._container_event(pod, name, EVENT_TYPE_NORMAL, "Pulled",
                                          f'Successfully pulled image "{image}" in 0s (0s '
                                          f'including waiting). Image size: 0 bytes.',
                                          init=init)
                else:
                    self._container_event(pod, name, EVENT_TYPE_NORMAL, "Pulled",
                                          f'Container image "{image}" already present on '
                                          f'machine', init=init)
                self._container_event(pod, name, EVENT_TYPE_NORMAL, "Created",
                                      f"Created container: {name}", init=init)
                self._container_event(pod, name, EVENT_TYPE_NORMAL, "Started",
                                      f"Started container {name}", init=init)
        if script.never_ready and not rec.readiness_reported and rec.finished is None:
            for c in containers:
                if c.get("readinessProbe") and readiness_fails(pod):
                    rec.readiness_reported = True
                    msg = probe_failure_message(pod, c["readinessProbe"], rec.ip)
                    self._container_event(pod, c.get("name", ""), EVENT_TYPE_WARNING,
                                          "Unhealthy", f"Readiness probe failed: {msg}")

    def _container_event(self, pod: Mapping[str, Any], container: str, type_: str,
                         reason: str, message: str, *, init: bool = False) -> None:
        """An event about one container (the pod with the container's fieldPath)."""
        recorder = self._node_recorders.get((pod.get("spec") or {}).get("nodeName", ""),
                                            self._recorder)
        if recorder is None:
            return
        meta = pod.get("metadata") or {}
        ref = {"kind": "Pod", "apiVersion": "v1", "name": meta.get("name"),
               "namespace": meta.get("namespace"), "uid": meta.get("uid"),
               "resourceVersion": meta.get("resourceVersion"),
               "fieldPath": f"spec.{'initContainers' if init else 'containers'}{{{container}}}"}
        recorder.event(ref, type_, reason, message)

    async def _terminate(self, key: str, pod: Mapping[str, Any], node: str,
                         rec: PodRecord | None) -> Result | None:
        """A pod with a deletionTimestamp: stop its containers (Killing), write the
        terminal status when they have stopped, then DELETE it with grace 0."""
        meta = pod["metadata"]
        status = pod.get("status") or {}
        phase = status.get("phase")
        now = self.clock.now()
        if rec is None and phase not in ("Succeeded", "Failed") and any(
                c.get("containerID") for c in status.get("containerStatuses") or ()):
            # running before a simulator restart: kill what the status says runs
            rec = self._records[key] = self._record_for(pod, node, now)
        if rec is not None and rec.deleted:
            return None  # finalizers hold it; nothing left for the kubelet to do
        if rec is not None and rec.finished is None:
            script = parse_script(pod, default_ready_after=self.ready_after,
                                  default_run_seconds=self.run_seconds)
            if rec.terminating_since is None:
                rec.terminating_since = now
                if rec.waiting_until is None:
                    spec = pod.get("spec") or {}
                    for c in spec.get("containers") or ():
                        self._container_event(pod, c.get("name", ""), EVENT_TYPE_NORMAL, "Killing",
                                              f"Stopping container {c.get('name', '')}")
                    for c in spec.get("initContainers") or ():
                        if c.get("restartPolicy") == "Always":
                            self._container_event(pod, c.get("name", ""), EVENT_TYPE_NORMAL, "Killing",
                                                  f"Stopping container {c.get('name', '')}",
                                                  init=True)
            if rec.waiting_until is not None:
                # in CrashLoopBackOff: nothing runs, the pod stops at once
                rec.finished = (script.exit_code, rec.terminating_since)
            else:
                plan = plan_stop(pod, rec.terminating_since, self.max_grace_period)
                if now < plan.at:
                    return Result(requeue_after=plan.at - now)
                rec.finished = (plan.exit_code, plan.at)
            if not await self._write_status(key, pod, rec, script, now):
                return None
            self._release(rec)
        if rec is None:
            self._volume_wait.pop(key, None)
            rec = self._records[key] = PodRecord(
                uid=meta.get("uid", ""), node=node, ip="", start_time=now, cycle_start=now,
                finished=(0, now), ids=self._ids)
        try:
            await self._client.delete("pods", meta["name"], meta["namespace"],
                                      grace_period_seconds=0,
                                      preconditions={"uid": meta.get("uid")})
            self.deletes += 1
        except Exception as exc:
            if not (is_not_found(exc) or is_conflict(exc)):
                raise  # retried (rate-limited): the pod must not stay Terminating
        rec.deleted = True  # only once the DELETE is through: finalizers may hold the pod
        return None

    async def _failing_pull(self, key: str, pod: Mapping[str, Any], node: str,
                            scripted: str) -> Result | None:
        """ErrImagePull at each attempt, ImagePullBackOff between them (image_pull.py)."""
        now = self.clock.now()
        st = self._pulls.get(key)
        if st is None:
            st = self._pulls[key] = _PullState(node=node, ip=self._ipam[node].allocate(),
                                               start=now)
        containers = (pod.get("spec") or {}).get("containers") or ()
        messages = {c.get("name", ""): pull_error_message(
            scripted, c.get("image", ""), normalize_image(c.get("image", "")))
            for c in containers}
        if now >= st.next_attempt:
            st.backoff.next(now, now)
            st.next_attempt = now + st.backoff.delay
            st.shown = "ErrImagePull"
            waiting = {n: {"reason": "ErrImagePull", "message": m} for n, m in messages.items()}
            for c in containers:
                name, image = c.get("name", ""), c.get("image", "")
                self._container_event(pod, name, EVENT_TYPE_NORMAL, "Pulling",
                                      f'Pulling image "{image}"')
                self._container_event(pod, name, EVENT_TYPE_WARNING, "Failed",
                                      f'Failed to pull image "{image}": {messages[name]}')
                self._container_event(pod, name, EVENT_TYPE_WARNING, "Failed",
                                      "Error: ErrImagePull")
            wake = min(st.next_attempt, now + 1.0)  # the next sync shows the back-off
        else:
            if st.shown == "ImagePullBackOff":
                return Result(requeue_after=st.next_attempt - now)
            st.shown = "ImagePullBackOff"
            waiting = {}
            for c in containers:
                name, image = c.get("name", ""), c.get("image", "")
                waiting[name] = {"reason": "ImagePullBackOff",
                                 "message": f'Back-off pulling image "{image}": ErrImagePull: '
                                            f'{messages[name]}'}
                self._container_event(pod, name, EVENT_TYPE_NORMAL, "BackOff",
                                      f'Back-off pulling image "{image}"')
                self._container_event(pod, name, EVENT_TYPE_WARNING, "Failed",
                                      "Error: ImagePullBackOff")
            wake = st.next_attempt
        meta = pod["metadata"]
        status = pull_failure_status(pod, self._nodes[node].host_ip, st.ip, now, st.start,
                                     waiting)
        try:
            await self._client.patch("pods", meta["name"], {"status": status}, "merge",
                                     meta["namespace"], subresource="status")
        except Exception as exc:
            if is_not_found(exc):
                self._drop_pull(key)
                return None
            raise
        self.status_writes += 1
        return Result(requeue_after=max(0.0, wake - self.clock.now()))

    async def _wait_for_volumes(self, key: str, pod: Mapping[str, Any],
                                node: str) -> Result | None:
        """None once every claim of the pod is Bound; else the ContainerCreating status
        is written (once) and the pod looked at again later."""
        ready, missing = volumes_ready(pod, self._claims)
        if ready:
            self._volume_wait.pop(key, None)
            return None
        meta = pod["metadata"]
        fingerprint = ("waiting", tuple(missing))
        if self._volume_wait.get(key) != fingerprint:
            now = self.clock.now()
            start = parse_time((pod.get("status") or {}).get("startTime")) or now
            status = waiting_status(pod, self._nodes[node].host_ip, now, start)
            try:
                await self._client.patch("pods", meta["name"], {"status": status}, "merge",
                                         meta["namespace"], subresource="status")
            except Exception as exc:
                if is_not_found(exc):
                    return None
                raise
            self.status_writes += 1
            self._volume_wait[key] = fingerprint
            recorder = self._node_recorders.get(node, self._recorder)
            if missing and recorder is not None:
                ns = meta["namespace"]
                names = ", ".join(missing)
                recorder.event(
                    pod, EVENT_TYPE_WARNING, "FailedMount",
                    f"Unable to attach or mount volumes: unmounted volumes=[{names}], "
                    f"unattached volumes=[], failed to process volumes=[{names}]: error "
                    f"processing PVC {ns}/{missing[0]}: failed to fetch PVC from API server: "
                    f'persistentvolumeclaims "{missing[0]}" not found')
        # claims coming and going wake the pod (their handler); look again now and then
        return Result(requeue_after=5.0)

    # -- running --------------------------------------------------------------------------

    async def run(self, workers: int = 32) -> None:
        """Wait for the pods cache, then sync pods until :meth:`shutdown` or cancellation."""
        await self.controller.run(workers)

    def shutdown(self) -> None:
        self.controller.shutdown()


def _status_fingerprint(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """The fingerprint :func:`build_pod_status` would give the pod's current status."""
    status = pod.get("status") or {}
    cs: Sequence[Mapping[str, Any]] = status.get("containerStatuses") or ()
    ready = {c.get("type"): c for c in status.get("conditions") or ()}.get("Ready") or {}
    return (status.get("phase"), bool(cs) and all(c.get("ready") for c in cs),
            ready.get("status"), max((int(c.get("restartCount") or 0) for c in cs), default=0),
            ready.get("message"), len(cs), len(status.get("initContainerStatuses") or ()),
            any(((c.get("state") or {}).get("waiting") or {}).get("reason")
                == "CrashLoopBackOff" for c in cs))


@dataclass(slots=True)
class _PullState:
    """A pod whose image pulls fail: its sandbox's IP and the image back-off."""

    node: str
    ip: str
    start: float
    backoff: CrashBackoff = field(default_factory=CrashBackoff)
    next_attempt: float = 0.0
    shown: str = ""


class _PodHandler:
    __slots__ = ("_k",)

    def __init__(self, k: Kubelet) -> None:
        self._k = k

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self._k.owns(obj):
            self._k.controller.enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if self._k.owns(new):
            self._k.controller.enqueue(new)

    def on_delete(self, obj: Any) -> None:
        o = _object_of(obj)
        if isinstance(o, Mapping) and self._k.owns(o):
            self._k.controller.enqueue(obj)
