"""pykcm.leaderelection: Lease-based leader election (client-go tools/leaderelection).

    from pykcm.leaderelection import (LeaderCallbacks, LeaderElectionConfig, LeaseLock,
                                      run_or_die)

    lock = LeaseLock(client, "kube-system", "kube-controller-manager", identity)
    await run_or_die(LeaderElectionConfig(
        lock, LeaderCallbacks(on_started_leading=run_controllers,
                              on_stopped_leading=lambda: sys.exit(1)),
        release_on_cancel=True, name="kube-controller-manager"))

Modules: `lease_lock` (the resource lock protocol, LeaderElectionRecord,
LeaseLock on coordination.k8s.io/v1), `leader_election` (config, the elector
and its run loop), `healthz` (the health check adaptor), `metrics`
(leader_election_master_status).
"""

from pykcm.leaderelection.healthz import (
    DEFAULT_HEALTHZ_TIMEOUT,
    HealthzAdaptor,
    LeaderElectionUnhealthy,
)
from pykcm.leaderelection.leader_election import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    Clock,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    RealClock,
    run_or_die,
)
from pykcm.leaderelection.lease_lock import (
    LeaderElectionRecord,
    LeaseLock,
    ResourceLock,
    format_micro_time,
    parse_micro_time,
)
from pykcm.leaderelection.metrics import LEADER_ELECTION_MASTER_STATUS, master_status

__all__ = [
    "DEFAULT_HEALTHZ_TIMEOUT",
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LEADER_ELECTION_MASTER_STATUS",
    "Clock",
    "HealthzAdaptor",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElectionUnhealthy",
    "LeaderElector",
    "LeaseLock",
    "RealClock",
    "ResourceLock",
    "format_micro_time",
    "master_status",
    "parse_micro_time",
    "run_or_die",
]
