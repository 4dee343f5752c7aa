"""Leader-election metrics under Kubernetes' names.

client-go counterpart: ``tools/leaderelection/metrics.go`` as registered by
component-base (``leader_election_master_status``, ALPHA).

- ``leader_election_master_status{name}`` (gauge): 1 while the elector named
  ``name`` (``LeaderElectionConfig.name``) holds the lease, 0 otherwise.

Data flow: the elector sets the gauge to 0 when it is built, to 1 when it
acquires the lease, and back to 0 when it stops renewing. The gauge lives in
pykcm's process-wide metric registry (:data:`pykcm.cache.metrics.REGISTRY`),
so it is rendered with every other pykcm metric by
``REGISTRY.expose()`` and, when ``prometheus_client`` is installed, bridged
into it by :func:`pykcm.cache.metrics.register_with_prometheus`; nothing here
depends on ``prometheus_client``.
"""

from __future__ import annotations

from typing import Final

from pykcm.cache.metrics import REGISTRY, Gauge

__all__ = ["LEADER_ELECTION_MASTER_STATUS", "leader_off", "leader_on", "master_status"]

LEADER_ELECTION_MASTER_STATUS: Final = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
    "1 indicates master. 'name' is the string used to identify the lease. Please make sure "
    "to group by name.",
    ("name",))
REGISTRY.register(LEADER_ELECTION_MASTER_STATUS)


def leader_on(name: str) -> None:
    LEADER_ELECTION_MASTER_STATUS.labels(name).set(1.0)


def leader_off(name: str) -> None:
    LEADER_ELECTION_MASTER_STATUS.labels(name).set(0.0)


def master_status(name: str) -> float:
    """The current value of ``leader_election_master_status{name}``."""
    return LEADER_ELECTION_MASTER_STATUS.labels(name).get()
