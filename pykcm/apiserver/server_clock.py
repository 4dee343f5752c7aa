"""The clock of the API server serving the running task (issue 21).

Role. An :class:`~pykcm.apiserver.endpoints.server.APIServer` has one clock
(``APIServer(clock=)``, default ``REAL_CLOCK``), held by its ``Store`` and read
directly by everything that has the server's state at hand. Strategies and
field managers are shared by every server of the process (cached per kind), so
the few of their hooks that stamp a time (managedFields times, a
PersistentVolume's phase transition, a CSR's condition times) read it from
:data:`CLOCK` instead: ``RESTStorage.strategy()`` and ``RESTStorage``'s field
manager lookup set it to their server's clock in the task that is about to call
them (a context variable: concurrent requests of servers with different clocks
do not see each other's).

Deviation: kube-apiserver reads ``time.Now()`` (or a per-component
``clock.Clock``) at each such point; there is no process-wide virtual time
upstream.
"""

from __future__ import annotations

from contextvars import ContextVar

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.timestamps import format_time

__all__ = ["CLOCK", "now_rfc3339"]

#: The clock of the server whose REST storage runs in the current task.
CLOCK: ContextVar[Clock] = ContextVar("pykcm_apiserver_clock", default=REAL_CLOCK)


def now_rfc3339() -> str:
    """Now on the current server's clock, RFC 3339 to the second."""
    # clock.now() (time.time() by default), not C time() (time.gmtime() with no argument):
    # the coarse clock runs up to a tick behind, so stamps just after a second boundary
    # showed the last one.
    return format_time(CLOCK.get().now())
