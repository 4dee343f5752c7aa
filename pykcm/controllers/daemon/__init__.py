"""The DaemonSet controller (kube-controller-manager's ``daemonset-controller``)."""

from pykcm.controllers.daemon.daemon_controller import (
    BURST_REPLICAS,
    CONCURRENT_DAEMONSET_SYNCS,
    CONTROLLER_NAME,
    DaemonSetsController,
    node_should_run_daemon_pod,
)

__all__ = [
    "BURST_REPLICAS",
    "CONCURRENT_DAEMONSET_SYNCS",
    "CONTROLLER_NAME",
    "DaemonSetsController",
    "node_should_run_daemon_pod",
]
