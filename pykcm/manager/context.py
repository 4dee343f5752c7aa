"""What a controller gets from the manager: clients, the shared informers, options.

kube-controller-manager counterpart: ``ControllerContext`` and
``CreateControllerContext`` (cmd/kube-controller-manager/app) and client-go's
``SimpleControllerClientBuilder`` (k8s.io/controller-manager/pkg/clientbuilder).

Role: an init function (``InitFunc``) receives one :class:`ControllerContext`
and builds its controller from it: informers from ``informer_factory`` (one
per resource for the whole process; the informers start only once every
controller is built, then ``informers_started`` is set), a client of its own
from ``client_builder.client(name)``, its settings from ``options``, an
event recorder from :meth:`ControllerContext.event_recorder`.

Data flow::

    ControllerManager ─► ClientBuilder(config, qps, burst)
                           client(name) ─► Client(config + user agent ".../<name>",
                                                 its own token bucket qps/burst)
                      ─► SharedInformerFactory(client("shared-informers"),
                                               resync_period(), strip_managed_fields)
                      ─► ControllerContext ─► init_func(ctx, name) × N
                      ─► factory.start(); informers_started.set()
                      ... at exit: close_event_broadcasters(), factory.shutdown(),
                                   client_builder.close()

With ``--use-service-account-credentials`` a controller's client is instead
the ServiceAccount ``kube-system/<name>`` (a TokenRequest token; see
:mod:`pykcm.manager.service_account_credentials`); ``root_client`` (the
shared informers, the service-account-token controller) keeps the manager's.

Each controller's client has its own rate limiter (``--kube-api-qps`` /
``--kube-api-burst``), as upstream gives each controller its own rest.Config,
so a busy controller cannot starve the others of API calls; its user agent
names it, so the API server's logs and metrics tell controllers apart. The
server's Warning headers are dropped (``no_warnings``), as kube-controller-manager
silences client-go's: it watches APIs generically, deprecated ones included (the
garbage collector's v1 Endpoints would otherwise log a deprecation warning per
request against a real v1.33+ server).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.randomness import REAL_RANDOM, RandomSource
from pykcm.api.serviceaccount import make_username
from pykcm.client import Client, Config, default_user_agent, no_warnings
from pykcm.controller.event_recorder import EventBroadcaster, EventRecorder
from pykcm.informers import SharedInformerFactory
from pykcm.informers.metadata_factory import MetadataSharedInformerFactory
from pykcm.informers.object_or_metadata import ObjectOrMetadataInformerFactory
from pykcm.manager.options import ControllerManagerOptions
from pykcm.manager.service_account_credentials import ServiceAccountTokenSource

__all__ = ["USER_AGENT_COMPONENT", "ClientBuilder", "ControllerContext"]

log = logging.getLogger("pykcm.manager")

USER_AGENT_COMPONENT = "controller-manager"
"""The component in the user agent: ``pykcm/<version> (<os>/<arch>) controller-manager/<name>``."""


SERVICE_ACCOUNT_NAMESPACE = "kube-system"
"""Where the controllers' ServiceAccounts live (``--use-service-account-credentials``)."""


class ClientBuilder:
    """One :class:`~pykcm.client.Client` per name, each with its own user agent and
    token bucket (client-go ``SimpleControllerClientBuilder``; with
    ``use_service_account_credentials``, ``DynamicControllerClientBuilder`` for
    :meth:`client`).

    :meth:`new_client` builds an uncached one with its own request timeout
    (the leader-election client uses the renew deadline, as upstream).
    ``write_fence`` (set by leader election) is asked before every write of
    the cached (controllers') clients; the uncached ones are never fenced.
    """

    def __init__(self, config: Config, *, qps: float, burst: int,
                 use_service_account_credentials: bool = False,
                 clock: Clock | None = None) -> None:
        self._config = config
        self._clock = clock  # the token sources' (expiry against the server's timestamps)
        self._qps = qps
        self._burst = burst
        self._clients: dict[str, Client] = {}
        self._root_clients: dict[str, Client] = {}
        self.use_service_account_credentials = use_service_account_credentials
        self._token_sources: dict[str, ServiceAccountTokenSource] = {}
        self._core: Client | None = None
        self.write_fence: Callable[[], str | None] | None = None

    def user_agent(self, name: str) -> str:
        """``<base user agent>/<name>``, as client-go's ``rest.AddUserAgent``. The product
        token is ``kube-controller-manager``: the API server names the field manager of
        every write after it (managedFields), as it does kube-controller-manager's."""
        base = default_user_agent(USER_AGENT_COMPONENT).split("/", 1)[1]
        return f"kube-controller-manager/{base}/{name}"

    def root_config(self, name: str, *, timeout: float | None = None) -> Config:
        """A copy of the manager's Config for ``name`` (user agent, qps, burst)."""
        cfg = dataclasses.replace(self._config, qps=self._qps, burst=self._burst,
                                  user_agent=self.user_agent(name),
                                  warning_handler=no_warnings)
        if timeout is not None:
            cfg.timeout = timeout
        return cfg

    def config(self, name: str, *, timeout: float | None = None) -> Config:
        """The Config of controller client ``name``: :meth:`root_config`, or with service
        account credentials the manager's without its credentials, authenticating as
        ``kube-system/<name>``."""
        if not self.use_service_account_credentials:
            return self.root_config(name, timeout=timeout)
        source = self._token_sources.get(name)
        if source is None:
            source = self._token_sources[name] = ServiceAccountTokenSource(
                self._core_client(), SERVICE_ACCOUNT_NAMESPACE, name, clock=self._clock)
        cfg = dataclasses.replace(
            self._config, qps=self._qps, burst=self._burst,
            user_agent=self.user_agent(make_username(SERVICE_ACCOUNT_NAMESPACE, name)),
            warning_handler=no_warnings, token=None, token_file=None, username=None,
            password=None, client_cert_data=None, client_cert_file=None, client_key_data=None,
            client_key_file=None, exec_provider=None, impersonate_user=None,
            impersonate_uid=None, impersonate_groups=(), impersonate_extra={},
            token_source=source)
        if timeout is not None:
            cfg.timeout = timeout
        return cfg

    def _core_client(self) -> Client:
        """The manager's own client for provisioning accounts and requesting tokens."""
        if self._core is None or self._core.closed:
            self._core = Client(dataclasses.replace(
                self._config, qps=self._qps, burst=self._burst,
                user_agent=default_user_agent(USER_AGENT_COMPONENT), warning_handler=no_warnings),
                clock=self._client_clock)
        return self._core

    async def ensure_service_accounts(self) -> None:
        """Create the ServiceAccounts of the controller clients built so far (with service
        account credentials; else nothing)."""
        for source in list(self._token_sources.values()):
            await source.ensure_service_account()

    def client(self, name: str) -> Client:
        """The client of controller ``name``, created on first use and cached."""
        c = self._clients.get(name)
        if c is None or c.closed:
            c = self._clients[name] = Client(self.config(name), write_fence=self._fence,
                                             clock=self._client_clock)
        return c

    def root_client(self, name: str) -> Client:
        """A client of ``name`` with the manager's own credentials, whatever
        ``--use-service-account-credentials`` says (upstream's rootClientBuilder)."""
        if not self.use_service_account_credentials:
            return self.client(name)
        c = self._root_clients.get(name)
        if c is None or c.closed:
            c = self._root_clients[name] = Client(self.root_config(name),
                                                  write_fence=self._fence,
                                                  clock=self._client_clock)
        return c

    @property
    def _client_clock(self) -> Clock:
        """The clients' clock (token bucket, retry backoffs): the manager's."""
        return self._clock if self._clock is not None else REAL_CLOCK

    def _fence(self) -> str | None:
        return self.write_fence() if self.write_fence is not None else None

    def new_client(self, name: str, *, timeout: float | None = None) -> Client:
        """A client for ``name`` not cached (closed by the caller), with the manager's own
        credentials: leader election's."""
        return Client(self.root_config(name, timeout=timeout), clock=self._client_clock)

    @property
    def names(self) -> list[str]:
        return list(self._clients)

    async def close(self) -> None:
        """Close every cached client."""
        clients = [*self._clients.values(), *self._root_clients.values(),
                   *([self._core] if self._core is not None else [])]
        self._clients, self._root_clients, self._core = {}, {}, None
        for c in clients:
            try:
                await c.close()
            except Exception as exc:  # noqa: BLE001 - closing the others matters more
                log.warning("closing a client failed: %s", exc)


@dataclass
class ControllerContext:
    """Everything an init function may use (upstream ``ControllerContext``).

    ``stop`` is set when the manager stops (SIGTERM, lost leadership);
    ``informers_started`` once every enabled controller has been built and
    the factory has started its informers.
    """

    client_builder: ClientBuilder
    informer_factory: SharedInformerFactory
    options: ControllerManagerOptions
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    informers_started: asyncio.Event = field(default_factory=asyncio.Event)
    clock: Clock = REAL_CLOCK
    """The manager's one clock: init functions hand it to their controller (queues,
    rate limiters, requeues, deadlines, schedules); recorders and informers get it here."""
    rng: RandomSource = REAL_RANDOM
    """The manager's one random source: init functions hand ``rng.stream(<controller>)``
    to their controller (jittered retries); recorders and resync periods draw from their
    own streams of it."""
    _broadcasters: dict[str, EventBroadcaster] = field(default_factory=dict, repr=False)
    metadata_informer_factory: MetadataSharedInformerFactory | None = None
    _object_or_metadata: ObjectOrMetadataInformerFactory | None = field(default=None,
                                                                        repr=False)

    def object_or_metadata_informers(self) -> ObjectOrMetadataInformerFactory:
        """The garbage collector's and quota monitors' informers (upstream
        ``ObjectOrMetadataInformerFactory``): ``informer_factory``'s informer of a resource
        when it has one, else a metadata-only one from ``metadata_informer_factory``
        (created here, on the factory's client, when the manager gave none)."""
        if self._object_or_metadata is None:
            if self.metadata_informer_factory is None:
                self.metadata_informer_factory = MetadataSharedInformerFactory(
                    self.informer_factory.client, self.informer_factory.default_resync,
                    clock=self.clock, rng=self.rng.stream("informers").stream("metadata"))
            self._object_or_metadata = ObjectOrMetadataInformerFactory(
                self.informer_factory, self.metadata_informer_factory)
        return self._object_or_metadata

    def resync_period(self) -> float:
        """A resync period between --min-resync-period and twice it, drawn anew each call
        (upstream ``ResyncPeriod``: informers of different controllers do not relist
        in lock step)."""
        return self.options.min_resync_period * (1.0 + self.rng.stream("resync").random())

    def event_broadcaster(self, name: str) -> EventBroadcaster:
        """A started EventBroadcaster writing with the client of ``name`` (one per name;
        the manager shuts them down, delivering what is queued, at exit)."""
        b = self._broadcasters.get(name)
        if b is None:
            b = self._broadcasters[name] = EventBroadcaster(
                self.client_builder.client(name), clock=self.clock,
                rng=self.rng.stream(f"events/{name}"))
            b.start()
        return b

    def event_recorder(self, name: str, component: str | None = None) -> EventRecorder:
        """A recorder on :meth:`event_broadcaster` (``name``), its source component
        ``component`` (default ``name``, as upstream's controllers use theirs)."""
        return self.event_broadcaster(name).new_recorder(component or name)

    async def close_event_broadcasters(self, timeout: float = 5.0) -> None:
        """Deliver what the broadcasters hold (within ``timeout`` each) and stop them."""
        broadcasters, self._broadcasters = list(self._broadcasters.values()), {}
        await asyncio.gather(*(b.shutdown(timeout) for b in broadcasters),
                             return_exceptions=True)
