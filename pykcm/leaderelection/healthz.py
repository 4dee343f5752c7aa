"""The health check of leader election (client-go ``HealthzAdaptor``).

Role: a health endpoint (the manager's ``/healthz``) is set up before the
elector exists; the adaptor is created first, handed to the elector through
``LeaderElectionConfig.watch_dog``, and ``run_or_die`` ties the two together.

Data flow: ``check()`` → ``LeaderElector.check(timeout)``, which looks at
the local monotonic time at which the elector last observed (or wrote) the
lease record. A non-leader is always healthy; a leader is unhealthy once
that time is older than the lease duration plus ``timeout`` (default 20 s,
kube-controller-manager's): its renew loop should have given up long before,
so something (a deadlock, a blocked loop) keeps the process alive wrongly.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykcm.leaderelection.leader_election import LeaderElector

__all__ = ["DEFAULT_HEALTHZ_TIMEOUT", "HealthzAdaptor", "LeaderElectionUnhealthy"]

DEFAULT_HEALTHZ_TIMEOUT = 20.0


class LeaderElectionUnhealthy(Exception):
    """The leader has not renewed its lease for longer than tolerated."""


class HealthzAdaptor:
    """Adapts a :class:`LeaderElector` to a named health check."""

    def __init__(self, timeout: float = DEFAULT_HEALTHZ_TIMEOUT) -> None:
        self.timeout = timeout
        self._elector: LeaderElector | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The name of the check, as client-go's (``leaderElection``)."""
        return "leaderElection"

    def set_leader_election(self, elector: LeaderElector) -> None:
        with self._lock:
            self._elector = elector

    def check(self) -> None:
        """Raise :class:`LeaderElectionUnhealthy` when the leader's renewal has stalled."""
        with self._lock:
            elector = self._elector
        if elector is not None:
            elector.check(self.timeout)

    def healthy(self) -> bool:
        try:
            self.check()
        except LeaderElectionUnhealthy:
            return False
        return True
