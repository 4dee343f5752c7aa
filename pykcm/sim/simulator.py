"""Simulator: simulated nodes, a scheduler and their kubelets, as one object to start and stop.

Role: everything a cluster needs besides the API server and the controller
manager for pods to run: ``pykcm sim`` runs one, ``pykcm up`` and test
fixtures embed one. It is only a client of the API server (any API server:
pykcm's embedded one or a real kube-apiserver without kubelets).

Data flow::

    Simulator.start()
      0. the kubelets' HTTP server (logs, exec, attach; pykcm.sim.kubelet_server) on
         127.0.0.1, a free port: the Nodes publish it (daemonEndpoints, an InternalDNS
         address ``localhost``) for the API server to proxy to (``kubelet_server=False``:
         none, the Nodes say port 10250 as before)
      1. NodeHeartbeats.register_all(): the kube-node-lease namespace, the Nodes
         (created, or reused after a restart) and their Leases
      2. one SharedInformerFactory ("pykcm-sim"): pods (all namespaces) and nodes;
         Scheduler and Kubelet register their handlers on them, HeartbeatControl
         reads the nodes' ``sim.pykcm.io/heartbeat`` annotation (``stopped``: a
         dead kubelet, see :mod:`pykcm.sim.heartbeat_control`)
      3. factory.start(), wait for the caches
      4. tasks: scheduler workers, kubelet workers, node heartbeats, and where the
         server serves claims the provisioner of the default StorageClass
         (``storage_class``, "standard", created when missing; None: no class, the
         provisioner still serves other classes naming it) and the kubelets' wait for
         Bound claims (:mod:`pykcm.sim.volumes`)
    Simulator.stop()   cancel the tasks, stop the informers, flush events.
                       The Nodes stay (as when kubelets stop).

Time: one clock per simulator (``Simulator(clock=)``, default ``REAL_CLOCK``, the
process's time), handed to the heartbeats (periods, Lease renewTime, node
conditions), the informers, the event broadcaster, the kubelets (run and ready
delays, crash-loop backoff, probes, grace periods, every time written into pods),
the scheduler (retries, the volume binding timeout, condition times), the
provisioner's queue and the kubelet server (log line times). Polls for another
component's progress or a connection's state stay on real time.

Randomness: one source per simulator (``Simulator(rng=)``, default the unseeded
``REAL_RANDOM``; ``pykcm sim --seed``), a stream of it each for the scheduler's
tie-breaks, the kubelets' container IDs, the informers' and the event broadcaster's
jitter (:mod:`pykcm.api.randomness`).

Sizing: one pods informer holds every pod of the cluster (the scheduler needs
them all to account for node usage); pods are cached without managedFields.
Work is bounded by the number of workers (``scheduler_workers`` bindings and
``kubelet_workers`` status writes in flight).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Coroutine, Sequence
from typing import Any, Self

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.randomness import REAL_RANDOM, RandomSource
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client, NoResourceMatchError
from pykcm.controller.event_recorder import EventBroadcaster
from pykcm.informers import GenericInformer, SharedInformerFactory, strip_managed_fields
from pykcm.sim.heartbeat_control import HeartbeatControl
from pykcm.sim.kubelet import DEFAULT_READY_AFTER, DEFAULT_RUN_SECONDS, Kubelet, NodeNetwork
from pykcm.sim.kubelet_server import KubeletServer
from pykcm.sim.nodes import NodeConfig, NodeHeartbeats, node_internal_ip, node_names, pod_cidr
from pykcm.sim.scheduler import DEFAULT_SCHEDULER_NAME, Scheduler
from pykcm.sim.volumes import DEFAULT_STORAGE_CLASS, Provisioner

__all__ = ["Simulator"]

log = logging.getLogger("pykcm.sim")


class Simulator:
    """Simulated nodes with a scheduler and kubelets, driven through ``client``.

    ``nodes`` nodes named ``<node_prefix>-0`` .. ``-<nodes-1>``, each shaped
    by ``node_config`` (capacity, labels, taints). ``scheduler=False`` leaves
    binding to another scheduler (a real cluster's); the kubelets still run
    the pods bound to the simulated nodes. ``ready_after`` and
    ``run_seconds`` are the defaults of the pod annotations
    ``sim.pykcm.io/ready-after-seconds`` and ``sim.pykcm.io/run-seconds``
    (see :mod:`pykcm.sim.kubelet`). ``record_events`` makes the scheduler
    record Scheduled / FailedScheduling Events.

    ``client`` is not closed by the simulator.
    """

    def __init__(self, client: Client, *, nodes: int = 3, node_prefix: str = "pykcm-node",
                 node_config: NodeConfig | None = None, scheduler: bool = True,
                 scheduler_name: str = DEFAULT_SCHEDULER_NAME,
                 ready_after: float = DEFAULT_READY_AFTER,
                 run_seconds: float = DEFAULT_RUN_SECONDS,
                 scheduler_workers: int = 16, kubelet_workers: int = 32,
                 lease_renew_interval: float = 10.0,
                 status_report_interval: float = 300.0,
                 record_events: bool = True,
                 storage_class: str | None = DEFAULT_STORAGE_CLASS,
                 max_grace_period: float | None = None,
                 kubelet_server: bool = True,
                 clock: Clock = REAL_CLOCK, rng: RandomSource = REAL_RANDOM) -> None:
        if nodes < 0:
            raise ValueError(f"nodes must be >= 0, got {nodes}")
        self._client = client
        # The simulator's one clock, handed to each part (see the module doc, "Time").
        self.clock = clock
        # ... and its one random source (see the module doc, "Randomness").
        self.rng = rng
        self.node_config = node_config or NodeConfig()
        self.node_names: Sequence[str] = node_names(node_prefix, nodes)
        self.heartbeats = NodeHeartbeats(client, self.node_names, self.node_config,
                                         lease_renew_interval=lease_renew_interval,
                                         status_report_interval=status_report_interval,
                                         clock=clock)
        self._enable_scheduler = scheduler
        self._scheduler_name = scheduler_name
        self._ready_after = ready_after
        self._run_seconds = run_seconds
        self._scheduler_workers = scheduler_workers
        self._kubelet_workers = kubelet_workers
        self._record_events = record_events
        self._storage_class = storage_class
        self._max_grace_period = max_grace_period
        self.kubelet_server: KubeletServer | None = None
        if kubelet_server:
            self.kubelet_server = KubeletServer(
                lambda ns, name: self.kubelet.pod(ns, name) if self.kubelet is not None else None,
                clock=clock)
        self.provisioner: Provisioner | None = None
        self.factory: SharedInformerFactory | None = None
        self.scheduler: Scheduler | None = None
        self.kubelet: Kubelet | None = None
        self.heartbeat_control: HeartbeatControl | None = None
        self._broadcaster: EventBroadcaster | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = asyncio.Event()
        self._started = False
        self._failure: BaseException | None = None

    async def start(self) -> None:
        """Register the nodes, start informers, scheduler, kubelets and heartbeats.

        Returns once the caches have synced and the loops run. Raises (after
        cleaning up) if the API server cannot be reached or refuses.
        """
        if self._started:
            raise RuntimeError("the simulator is already started")
        self._started = True
        try:
            if self.kubelet_server is not None:
                port = await self.kubelet_server.start()
                self.node_config = dataclasses.replace(
                    self.node_config, kubelet_port=port, kubelet_host="localhost")
                self.heartbeats.config = self.node_config
            await self.heartbeats.register_all()
            factory = self.factory = SharedInformerFactory(
                self._client, transform=strip_managed_fields, name="pykcm-sim",
                clock=self.clock, rng=self.rng.stream("informers"))
            pods = factory.core_v1.pods
            networks = {name: NodeNetwork(node_internal_ip(i), pod_cidr(i, self.node_config))
                        for i, name in enumerate(self.node_names)}
            if self._record_events:
                # unbounded: one writer for every node's kubelet and the scheduler, each
                # of which upstream has a 1000-Event backlog of its own
                self._broadcaster = EventBroadcaster(self._client, clock=self.clock,
                                                     rng=self.rng.stream("events"),
                                                     max_queued=None)
                self._broadcaster.start()
            claims = await self._start_storage(factory)
            self.kubelet = Kubelet(
                self._client, pods, networks, ready_after=self._ready_after,
                run_seconds=self._run_seconds, claims=claims,
                recorder=self._broadcaster.new_recorder("kubelet")
                if self._broadcaster is not None else None,
                max_grace_period=self._max_grace_period,
                node_recorders={n: self._broadcaster.new_recorder("kubelet", n)
                                for n in self.node_names}
                if self._broadcaster is not None else None,
                clock=self.clock, rng=self.rng.stream("kubelet"))
            if self._enable_scheduler:
                recorder = None
                if self._broadcaster is not None:
                    recorder = self._broadcaster.new_recorder(self._scheduler_name)
                storage: dict[str, Any] = {}
                if claims is not None:  # VolumeBinding needs the storage caches
                    storage = {"claims": claims,
                               "volumes": factory.core_v1.persistentvolumes,
                               "classes": factory.storage_v1.storageclasses}
                self.scheduler = Scheduler(self._client, pods, factory.core_v1.nodes,
                                           scheduler_name=self._scheduler_name,
                                           recorder=recorder, clock=self.clock,
                                           rng=self.rng.stream("scheduler"), **storage)
            # sim.pykcm.io/heartbeat=stopped on a Node: its kubelet plays dead.
            control = self.heartbeat_control = HeartbeatControl(self.heartbeats, self.kubelet)
            for name in self.heartbeats.stopped:
                self.kubelet.stop_node(name)
            factory.core_v1.nodes.informer.add_event_handler(ResourceEventHandlerFuncs(
                add_func=control.observe, update_func=lambda _old, new: control.observe(new)))
            factory.start()
            synced = await factory.wait_for_cache_sync()
            if not all(synced.values()):
                raise RuntimeError("the simulator's caches did not sync")
            self._spawn(self.kubelet.run(self._kubelet_workers), "sim-kubelet")
            if self.scheduler is not None:
                self._spawn(self.scheduler.run(self._scheduler_workers), "sim-scheduler")
            self._spawn(self.heartbeats.run(), "sim-heartbeats")
            if self.provisioner is not None:
                self._spawn(self.provisioner.run(), "sim-provisioner")
        except BaseException:
            await self.stop()
            raise
        log.info("simulator started: %d nodes", len(self.node_names))

    async def _start_storage(self, factory: SharedInformerFactory) -> GenericInformer | None:
        """The provisioner and its default class, where the server serves claims (a
        server without them: pods start whatever their volumes)."""
        try:
            await self._client.resolve("persistentvolumeclaims")
            await self._client.resolve("storageclasses")
        except NoResourceMatchError:
            log.warning("the API server does not serve persistentvolumeclaims and "
                        "storageclasses: no simulated provisioner")
            return None
        claims = factory.core_v1.persistentvolumeclaims
        self.provisioner = Provisioner(self._client, claims, factory.core_v1.persistentvolumes,
                                       factory.storage_v1.storageclasses,
                                       storage_class=self._storage_class, clock=self.clock)
        await self.provisioner.ensure_storage_class()
        return claims

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        task.add_done_callback(self._on_task_done)
        self._tasks.append(task)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._failure = exc
            log.error("%s failed: %s", task.get_name(), exc, exc_info=exc)
        # Any loop ending on its own ends the simulator's run().
        self._stopped.set()

    async def run(self) -> None:
        """:meth:`start` (unless started), then run until :meth:`stop` or cancellation."""
        if not self._started:
            await self.start()
        try:
            await self._stopped.wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Stop every loop and informer (idempotent). The Nodes are left in place."""
        self._stopped.set()
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        if self.heartbeat_control is not None:
            self.heartbeat_control.close()
        if self.factory is not None:
            await self.factory.shutdown()
        if self._broadcaster is not None:
            await self._broadcaster.shutdown(timeout=2.0)
        if self.kubelet_server is not None:
            await self.kubelet_server.stop()

    @property
    def failed(self) -> BaseException | None:
        """The error a loop ended with, if one did."""
        return self._failure

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
