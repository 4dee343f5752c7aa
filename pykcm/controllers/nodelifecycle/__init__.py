"""The node lifecycle controller (kube-controller-manager's ``node-lifecycle-controller``)."""

from pykcm.controllers.nodelifecycle.node_lifecycle_controller import (
    NODE_EVICTION_PERIOD,
    NodeLifecycleController,
)

__all__ = ["NODE_EVICTION_PERIOD", "NodeLifecycleController"]
