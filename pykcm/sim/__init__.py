"""pykcm.sim: simulated nodes for running without real kubelets (kwok-like).

    from pykcm.sim import Simulator

    async with Simulator(client, nodes=3) as sim:   # nodes registered, loops running
        ...                                          # pods get bound and run

Modules (data flow in each docstring): ``nodes`` (Node objects, registration,
Lease and status heartbeats), ``scheduler`` (binds Pending pods: filters,
scores, Unschedulable conditions), ``kubelet`` (pod lifecycle and status,
scripted by ``sim.pykcm.io/*`` annotations), ``resources`` (quantities and pod
requests), ``simulator`` (all of them started and stopped together). The
command is ``pykcm sim`` (pykcm.cli.sim).
"""

from pykcm.sim.kubelet import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_NEVER_READY,
    ANNOTATION_READY_AFTER,
    ANNOTATION_RUN_SECONDS,
    Kubelet,
    PodScript,
    build_pod_status,
    parse_script,
)
from pykcm.sim.nodes import (
    KUBELET_VERSION,
    NODE_LEASE_NAMESPACE,
    NodeConfig,
    NodeHeartbeats,
    build_lease,
    build_node,
)
from pykcm.sim.resources import pod_requests
from pykcm.sim.scheduler import DEFAULT_SCHEDULER_NAME, NodeInfo, Scheduler, fit_error_message
from pykcm.sim.simulator import Simulator

__all__ = [
    "ANNOTATION_EXIT_CODE",
    "ANNOTATION_NEVER_READY",
    "ANNOTATION_READY_AFTER",
    "ANNOTATION_RUN_SECONDS",
    "DEFAULT_SCHEDULER_NAME",
    "KUBELET_VERSION",
    "NODE_LEASE_NAMESPACE",
    "Kubelet",
    "NodeConfig",
    "NodeHeartbeats",
    "NodeInfo",
    "PodScript",
    "Scheduler",
    "Simulator",
    "build_lease",
    "build_node",
    "build_pod_status",
    "fit_error_message",
    "parse_script",
    "pod_requests",
]
