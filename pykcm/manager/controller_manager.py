"""The controller-manager process: build the enabled controllers, start the shared
informers, run the controllers, elect one active replica, serve health and metrics.

kube-controller-manager counterpart: ``Run``, ``CreateControllerContext``,
``StartControllers`` and ``leaderElectAndRun`` of cmd/kube-controller-manager/app.

Data flow::

    ControllerManager(options, registry).run()
      ├─ options.validate(registry); enabled = registry.resolve_enabled(--controllers)
      ├─ Config from --kubeconfig/--master (else in-cluster, else $KUBECONFIG)
      ├─ ManagerServer: /healthz (leaderElection + one check per controller), /metrics, /configz
      ├─ no --leader-elect: lead() directly
      └─ --leader-elect: Lease <ns>/<name>, identity "<hostname>_<uuid>"
            LeaderElector.run(on_started_leading=lead) ── lease lost ──► exit 1 ("leaderelection lost")

    lead()
      ├─ ControllerContext: ClientBuilder, SharedInformerFactory(client "shared-informers",
      │                     resync_period(), strip_managed_fields), options, stop
      ├─ for each enabled name, in registration order: init_func(ctx, name)
      │     → RunnableController (its informer handlers registered) or None (skipped);
      │       an init error ends the process (exit 1), as upstream
      ├─ factory.start(); ctx.informers_started.set()
      ├─ controller.run(workers) as one task each (workers from the descriptor's
      │     --concurrent-*-syncs option); a run() that raises or returns early marks
      │     the controller unhealthy in /healthz and is logged, never restarted
      └─ until stop: then shut down (below)

Shutdown. SIGTERM/SIGINT (:meth:`ControllerManager.request_stop`): every
controller's ``shutdown()`` (its queue stops taking work; workers finish
what they hold), wait up to --controller-shutdown-timeout for their
``run()`` to return, cancel what is left, stop the informers, deliver the
queued events, release the lease (so a standby takes over at once), exit 0.
A lost lease instead cancels the controllers at once (another replica may
already be leading) and exits 1. Before that, every controller client is
fenced: a write is refused (``WritesFenced``) unless this replica leads and
renewed its lease less than --leader-elect-renew-deadline ago, so a replica
that was paused (SIGSTOP, a frozen VM) writes nothing after it resumes
(upstream relies on the renewal loop alone, which may let it act for up to
the renew deadline).

Deviations from upstream: the lease is released on a clean shutdown
(upstream's kube-controller-manager leaves it to expire); controllers are
started without --controller-start-interval jitter; no cloud loops or
metadata informers.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.randomness import REAL_RANDOM, RandomSource
from pykcm.client import (
    Client,
    Config,
    ConfigError,
    default_user_agent,
    load_incluster_config,
    load_kube_config,
)
from pykcm.controller.event_recorder import EventBroadcaster
from pykcm.informers import SharedInformerFactory, strip_managed_fields
from pykcm.informers.metadata_factory import MetadataSharedInformerFactory
from pykcm.leaderelection import (
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionUnhealthy,
    LeaderElector,
    LeaseLock,
)
from pykcm.manager.context import USER_AGENT_COMPONENT, ClientBuilder, ControllerContext
from pykcm.manager.delegated_auth import DelegatedAuth
from pykcm.manager.options import ControllerManagerOptions
from pykcm.manager.registry import (
    ControllerDescriptor,
    ControllerRegistry,
    RunnableController,
    builtin_registry,
)
from pykcm.manager.serving import HealthCheck, HealthChecks, ManagerServer

__all__ = ["LEADER_ELECTION_HEALTHZ_TIMEOUT", "ControllerManager", "load_config"]

log = logging.getLogger("pykcm.manager")

LEADER_ELECTION_HEALTHZ_TIMEOUT = 20.0
"""kube-controller-manager's ``NewLeaderHealthzAdaptor(time.Second * 20)``."""

EVENT_COMPONENT = "kube-controller-manager"
"""The source component of the manager's own events (leader election), as upstream."""


def load_config(options: ControllerManagerOptions) -> Config:
    """The API server's Config as upstream's ``BuildConfigFromFlags(--master, --kubeconfig)``:
    the kubeconfig file when given, else in-cluster; pykcm also falls back to
    $KUBECONFIG / ~/.kube/config outside a cluster. ``--master`` overrides the host."""
    if options.kubeconfig:
        cfg = load_kube_config(options.kubeconfig)
    else:
        try:
            cfg = load_incluster_config()
        except ConfigError as in_cluster:
            try:
                cfg = load_kube_config()
            except ConfigError:
                raise ConfigError(f"{in_cluster}; and no kubeconfig: use --kubeconfig") \
                    from None
    if options.master:
        cfg = replace(cfg, host=options.master)
    return cfg


def delegated_auth(options: ControllerManagerOptions, config: Config) -> DelegatedAuth:
    """The TokenReview/SubjectAccessReview delegation of the HTTPS endpoints, with
    upstream's client settings (QPS 200, burst 400, 10 s timeout). A kubeconfig not given
    is the manager's own (upstream would look for the in-cluster config, and without one
    refuse every request but the always-allowed paths)."""
    o = options

    def client_for(flag: str, path: str, what: str) -> Client:
        if path:
            cfg = load_kube_config(path)
        else:
            log.warning("No %s provided: %s with the manager's own kubeconfig", flag, what)
            cfg = config
        return Client(replace(cfg, qps=200.0, burst=400, timeout=10.0,
                              user_agent=f"{cfg.user_agent or default_user_agent(USER_AGENT_COMPONENT)}/delegated-auth"))

    return DelegatedAuth(
        client_for("--authentication-kubeconfig", o.authentication_kubeconfig,
                   "tokenreviews.authentication.k8s.io are created"),
        client_for("--authorization-kubeconfig", o.authorization_kubeconfig,
                   "subjectaccessreviews.authorization.k8s.io are created"),
        always_allow_paths=o.authorization_always_allow_paths,
        token_cache_ttl=o.authentication_token_webhook_cache_ttl,
        allow_cache_ttl=o.authorization_webhook_cache_authorized_ttl,
        deny_cache_ttl=o.authorization_webhook_cache_unauthorized_ttl)


@dataclass
class _Running:
    """A built controller and its run task."""

    name: str
    controller: RunnableController
    workers: int
    task: asyncio.Task[None] | None = None
    failure: str | None = None


class ControllerManager:
    """The controller manager; ``await run()`` returns the process exit code.

    ``registry`` defaults to :func:`~pykcm.manager.registry.builtin_registry`;
    ``config`` (tests) bypasses --kubeconfig. Start-up errors (bad options, no
    configuration, a port taken, an init function failing) raise.
    """

    def __init__(self, options: ControllerManagerOptions,
                 registry: ControllerRegistry | None = None, *,
                 config: Config | None = None, clock: Clock | None = None,
                 rng: RandomSource | None = None) -> None:
        self.options = options
        self.clock: Clock = clock if clock is not None else REAL_CLOCK
        """The process's one clock: leader election, informers, event recorders and
        every controller (through ``ControllerContext.clock``) read time from it."""
        self.rng: RandomSource = rng if rng is not None else REAL_RANDOM
        """The process's one random source (``seeded(seed, "kube-controller-manager")``
        under ``--seed``): the same users, through ``ControllerContext.rng``, each on its
        own stream. Its leader-election identity's UUID comes from it too: replicas on
        one host need different seeds, or they would share one identity."""
        self.registry = registry if registry is not None else builtin_registry()
        self._config = config
        self.health = HealthChecks()
        self.server: ManagerServer | None = None
        self.identity = f"{socket.gethostname()}_{self.rng.stream('identity').uuid4()}"
        self.context: ControllerContext | None = None
        self.controllers: dict[str, _Running] = {}
        self._stop: asyncio.Event | None = None
        self._stopping = False
        self._fatal: BaseException | None = None
        self._fatal_event: asyncio.Event | None = None
        self.leading = asyncio.Event()
        """Set once this replica runs its controllers (at once without leader election)."""
        self.context_hooks: list[Callable[[ControllerContext], None]] = []
        """Called with each new ControllerContext before any controller is built (so before
        the informers start): the live view registers its informers and handlers here."""

    # -- control -----------------------------------------------------------------------

    def request_stop(self) -> None:
        """Stop gracefully (what SIGTERM does); ``run`` then returns 0."""
        self._stopping = True
        if self._stop is not None:
            self._stop.set()

    @property
    def urls(self) -> list[str]:
        """The serving URLs (``https://...``, ``http://...``) once started."""
        return list(self.server.urls) if self.server is not None else []

    # -- run ---------------------------------------------------------------------------

    async def run(self) -> int:
        """Run until stopped (0) or leadership is lost (1)."""
        o = self.options
        o.validate(self.registry)
        enabled = self.registry.resolve_enabled(o.controllers)
        for name in enabled:
            self._workers_of(self.registry.get(name))  # a bad concurrency name fails now
        config = self._config if self._config is not None else load_config(o)
        self._stop = asyncio.Event()
        self._fatal_event = asyncio.Event()
        if self._stopping:
            self._stop.set()
        log.info("Starting pykcm controller-manager", extra={"identity": self.identity})
        auth = delegated_auth(o, config) if o.secure_port else None
        self.server = ManagerServer(self.health, o.configz, bind_address=o.bind_address,
                                    secure_port=o.secure_port, port=o.port, auth=auth)
        try:
            await self.server.start()
        except BaseException:
            if auth is not None:
                await auth.close()
            raise
        builder = ClientBuilder(config, qps=o.kube_api_qps, burst=o.kube_api_burst,
                                use_service_account_credentials=o.use_service_account_credentials,
                                clock=self.clock)
        try:
            if not o.leader_elect:
                return await self._run_unelected(builder, enabled)
            return await self._run_elected(builder, enabled)
        finally:
            await builder.close()
            await self.server.stop()
            if auth is not None:
                await auth.close()

    async def _run_unelected(self, builder: ClientBuilder, enabled: list[str]) -> int:
        assert self._stop is not None and self._fatal_event is not None
        lead = asyncio.create_task(self._lead(builder, enabled), name="controller-manager")
        waiters = [asyncio.create_task(self._stop.wait()),
                   asyncio.create_task(self._fatal_event.wait())]
        try:
            await asyncio.wait([lead, *waiters], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
            lead.cancel()
            await asyncio.gather(lead, return_exceptions=True)
        return self._exit_code()

    async def _run_elected(self, builder: ClientBuilder, enabled: list[str]) -> int:
        assert self._stop is not None and self._fatal_event is not None
        o = self.options
        adaptor = HealthzAdaptor(LEADER_ELECTION_HEALTHZ_TIMEOUT)
        self.health.add(adaptor.name, _leader_check(adaptor))
        # Its own client, with requests bounded by the renew deadline (upstream's).
        le_client = builder.new_client("leader-election", timeout=o.leader_elect_renew_deadline)
        events = EventBroadcaster(le_client, clock=self.clock,
                                  rng=self.rng.stream("leader-election-events"))
        events.start()
        lock = LeaseLock(le_client, o.leader_elect_resource_namespace,
                         o.leader_elect_resource_name, self.identity,
                         event_recorder=events.new_recorder(EVENT_COMPONENT))
        lost = asyncio.Event()

        def stopped_leading() -> None:
            if not self._stopping and self._fatal is None:
                log.error("leaderelection lost")
            lost.set()

        cfg = LeaderElectionConfig(
            lock, LeaderCallbacks(on_started_leading=lambda: self._lead(builder, enabled),
                                  on_stopped_leading=stopped_leading,
                                  on_new_leader=self._on_new_leader),
            lease_duration=o.leader_elect_lease_duration,
            renew_deadline=o.leader_elect_renew_deadline,
            retry_period=o.leader_elect_retry_period, watch_dog=adaptor,
            release_on_cancel=True, name=o.leader_elect_resource_name)
        # A write fence on every controller client: a paused leader that resumes after
        # its renew deadline sends nothing, even before its renewal loop notices.
        candidate = LeaderElector(cfg, clock=self.clock, rng=self.rng.stream("leader-election"))
        adaptor.set_leader_election(candidate)
        builder.write_fence = candidate.write_fence
        elector = asyncio.create_task(candidate.run(), name="leader-election")
        waiters = [asyncio.create_task(self._stop.wait()),
                   asyncio.create_task(self._fatal_event.wait())]
        try:
            await asyncio.wait([elector, *waiters], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
            # Cancelling the elector cancels lead() (which shuts the controllers down)
            # and then releases the lease.
            elector.cancel()
            await asyncio.gather(elector, return_exceptions=True)
            await events.shutdown(timeout=2.0)
            await le_client.close()
        if self._stopping and self._fatal is None:
            return 0
        if self._fatal is None and lost.is_set():
            return 1  # upstream: klog.FlushAndExit(..., 1) in OnStoppedLeading
        return self._exit_code()

    def _exit_code(self) -> int:
        if self._fatal is not None:
            return 1
        return 0

    def _on_new_leader(self, identity: str) -> None:
        if identity == self.identity:
            return
        log.info("new leader elected", extra={"leader": identity})

    def _fail(self, exc: BaseException) -> None:
        self._fatal = exc
        if self._fatal_event is not None:
            self._fatal_event.set()

    @property
    def fatal_error(self) -> BaseException | None:
        """The error that ended the run (an init function's), if any."""
        return self._fatal

    # -- leading -------------------------------------------------------------------------

    def _workers_of(self, desc: ControllerDescriptor) -> int:
        c = desc.concurrency
        if c is None:
            return 1
        if isinstance(c, int):
            return c
        if not hasattr(self.options, c):
            raise ValueError(f"controller {desc.name!r}: unknown concurrency option {c!r}")
        value = getattr(self.options, c)
        if not isinstance(value, int):
            raise TypeError(f"controller {desc.name!r}: option {c!r} is not a number")
        return value

    async def _lead(self, builder: ClientBuilder, enabled: list[str]) -> None:
        """Build, start and keep the controllers running until cancelled or stopped."""
        assert self._stop is not None
        o = self.options
        resync = self.rng.stream("resync")
        informers = self.rng.stream("informers")
        ctx = ControllerContext(
            client_builder=builder,
            informer_factory=SharedInformerFactory(
                builder.root_client("shared-informers"), _resync(o, resync),
                transform=strip_managed_fields, compact_objects=o.compact_informer_objects,
                clock=self.clock, rng=informers),
            metadata_informer_factory=MetadataSharedInformerFactory(
                builder.root_client("shared-informers"), _resync(o, resync),
                compact_objects=o.compact_informer_objects, clock=self.clock,
                rng=informers.stream("metadata")),
            options=o, clock=self.clock, rng=self.rng)
        self.context = ctx
        try:
            try:
                for hook in self.context_hooks:
                    hook(ctx)
                await self._start_controllers(ctx, enabled)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("Error starting controllers: %s", exc, exc_info=exc)
                self._fail(exc)
                return
            self.leading.set()
            await self._stop.wait()
        finally:
            # A stop also cancels this task (through the elector): the clean-up runs as
            # its own task, waited for through any number of cancellations.
            cleanup = asyncio.create_task(self._stop_leading(ctx))
            cancelled = False
            while True:
                try:
                    await asyncio.shield(cleanup)
                    break
                except asyncio.CancelledError:
                    if cleanup.done():
                        break
                    cancelled = True
            if cancelled:
                raise asyncio.CancelledError

    async def _stop_leading(self, ctx: ControllerContext) -> None:
        self.leading.clear()
        ctx.stop.set()
        await self._shutdown_controllers(graceful=self._stopping)
        await ctx.informer_factory.shutdown()
        if ctx.metadata_informer_factory is not None:
            await ctx.metadata_informer_factory.shutdown()
        await ctx.close_event_broadcasters()

    async def _start_controllers(self, ctx: ControllerContext, enabled: list[str]) -> None:
        built: list[_Running] = []
        for name in enabled:
            desc = self.registry.get(name)
            log.debug("Starting controller", extra={"controller": name})
            try:
                ctl = await desc.init_func(ctx, name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise RuntimeError(f"error starting controller {name!r}: {exc}") from exc
            if ctl is None:
                log.info("Warning: skipping controller", extra={"controller": name})
                continue
            running = _Running(name, ctl, self._workers_of(desc))
            self.controllers[name] = running
            self.health.add(name, _controller_check(running))
            built.append(running)
        # upstream's builder creates each controller's ServiceAccount as it hands out
        # the client (--use-service-account-credentials)
        await ctx.client_builder.ensure_service_accounts()
        # Informers start once every controller has registered its handlers.
        ctx.informer_factory.start()
        ctx.informers_started.set()
        for r in built:
            r.task = asyncio.create_task(self._run_controller(r), name=f"controller[{r.name}]")
            log.info("Started controller", extra={"controller": r.name})
        log.info("Started %d controllers", len(built))

    async def _run_controller(self, r: _Running) -> None:
        try:
            await r.controller.run(r.workers)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            r.failure = f"controller run failed: {exc!r}"
            log.error("Controller failed", exc_info=exc, extra={"controller": r.name})
            return
        if not self._stopping and not (self.context and self.context.stop.is_set()):
            r.failure = "controller stopped running"
            log.error("Controller stopped running", extra={"controller": r.name})

    async def _shutdown_controllers(self, *, graceful: bool) -> None:
        running = list(self.controllers.values())
        for r in running:
            try:
                r.controller.shutdown()
            except Exception as exc:  # noqa: BLE001 - the others still get shut down
                log.error("Controller shutdown failed: %s", exc, extra={"controller": r.name})
        tasks = [r.task for r in running if r.task is not None and not r.task.done()]
        pending: set[asyncio.Task[None]] = set(tasks)
        if graceful and tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.options.controller_shutdown_timeout)
            if pending:
                log.warning("%d controllers did not stop within %ss; cancelling them",
                            len(pending), self.options.controller_shutdown_timeout)
        # Cancel until they end: a runtime may take a first cancellation as "finish
        # what you hold" (pykcm.controller.Controller does) and only a second one as
        # "stop now".
        while pending:
            for t in pending:
                t.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.1)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for r in running:
            self.health.remove(r.name)
        self.controllers.clear()


def _resync(o: ControllerManagerOptions, rng: RandomSource) -> float:
    """The shared informers' default resync period: one draw of upstream's ResyncPeriod."""
    return o.min_resync_period * (1.0 + rng.random())


def _leader_check(adaptor: HealthzAdaptor) -> HealthCheck:
    def check() -> str | None:
        try:
            adaptor.check()
        except LeaderElectionUnhealthy as exc:
            return str(exc)
        return None
    return check


def _controller_check(r: _Running) -> HealthCheck:
    def check() -> str | None:
        if r.failure is not None:
            return r.failure
        return r.controller.health_check()
    return check

