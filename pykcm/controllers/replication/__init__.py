"""The ReplicationController controller (kube-controller-manager's
``replicationcontroller-controller``)."""

from pykcm.controllers.replication.replication_controller import (
    CONCURRENT_RC_SYNCS,
    CONTROLLER_NAME,
    REPLICATION_CONTROLLERS,
    ReplicationManager,
)

__all__ = ["CONCURRENT_RC_SYNCS", "CONTROLLER_NAME", "REPLICATION_CONTROLLERS",
           "ReplicationManager"]
