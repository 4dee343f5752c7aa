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
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from pykcm.client import Client, Config, default_user_agent, no_warnings
from pykcm.controller.event_recorder import EventBroadcaster, EventRecorder
from pykcm.informers import SharedInformerFactory
from pykcm.manager.options import ControllerManagerOptions

__all__ = ["USER_AGENT_COMPONENT", "ClientBuilder", "ControllerContext"]

log = logging.getLogger("pykcm.manager")

USER_AGENT_COMPONENT = "controller-manager"
"""The component in the user agent: ``pykcm/<version> (<os>/<arch>) controller-manager/<name>``."""


class ClientBuilder:
    """One :class:`~pykcm.client.Client` per name, each with its own user agent and
    token bucket (client-go ``SimpleControllerClientBuilder``).

    :meth:`new_client` builds an uncached one with its own request timeout
    (the leader-election client uses the renew deadline, as upstream).
    ``write_fence`` (set by leader election) is asked before every write of
    the cached (controllers') clients; the uncached ones are never fenced.
    """

    def __init__(self, config: Config, *, qps: float, burst: int) -> None:
        self._config = config
        self._qps = qps
        self._burst = burst
        self._clients: dict[str, Client] = {}
        self.write_fence: Callable[[], str | None] | None = None

    def user_agent(self, name: str) -> str:
        """``<base user agent>/<name>``, as client-go's ``rest.AddUserAgent``."""
        return f"{default_user_agent(USER_AGENT_COMPONENT)}/{name}"

    def config(self, name: str, *, timeout: float | None = None) -> Config:
        """A copy of the manager's Config for ``name`` (user agent, qps, burst)."""
        cfg = dataclasses.replace(self._config, qps=self._qps, burst=self._burst,
                                  user_agent=self.user_agent(name),
                                  warning_handler=no_warnings)
        if timeout is not None:
            cfg.timeout = timeout
        return cfg

    def client(self, name: str) -> Client:
        """The client of ``name``, created on first use and cached."""
        c = self._clients.get(name)
        if c is None or c.closed:
            c = self._clients[name] = Client(self.config(name), write_fence=self._fence)
        return c

    def _fence(self) -> str | None:
        return self.write_fence() if self.write_fence is not None else None

    def new_client(self, name: str, *, timeout: float | None = None) -> Client:
        """A client for ``name`` not cached (closed by the caller), e.g. leader election's."""
        return Client(self.config(name, timeout=timeout))

    @property
    def names(self) -> list[str]:
        return list(self._clients)

    async def close(self) -> None:
        """Close every cached client."""
        clients, self._clients = list(self._clients.values()), {}
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
    _broadcasters: dict[str, EventBroadcaster] = field(default_factory=dict, repr=False)

    def resync_period(self) -> float:
        """A resync period between --min-resync-period and twice it, drawn anew each call
        (upstream ``ResyncPeriod``: informers of different controllers do not relist
        in lock step)."""
        return self.options.min_resync_period * (1.0 + random.random())

    def event_broadcaster(self, name: str) -> EventBroadcaster:
        """A started EventBroadcaster writing with the client of ``name`` (one per name;
        the manager shuts them down, delivering what is queued, at exit)."""
        b = self._broadcasters.get(name)
        if b is None:
            b = self._broadcasters[name] = EventBroadcaster(self.client_builder.client(name))
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
