"""The ReplicaSet controller (kube-controller-manager's pkg/controller/replicaset).

:class:`ReplicaSetController` keeps ``spec.replicas`` pods for each
ReplicaSet; :mod:`.replica_set_utils` computes and writes its status.
"""

from pykcm.controllers.replicaset.replica_set import (
    BURST_REPLICAS,
    CONCURRENT_RS_SYNCS,
    CONTROLLER_NAME,
    CONTROLLER_UID_INDEX,
    ReplicaSetController,
    get_pod_keys,
    get_pods_to_delete,
)
from pykcm.controllers.replicaset.replica_set_utils import (
    REPLICA_SET_REPLICA_FAILURE,
    calculate_status,
    update_replica_set_status,
)

__all__ = [
    "BURST_REPLICAS",
    "CONCURRENT_RS_SYNCS",
    "CONTROLLER_NAME",
    "CONTROLLER_UID_INDEX",
    "REPLICA_SET_REPLICA_FAILURE",
    "ReplicaSetController",
    "calculate_status",
    "get_pod_keys",
    "get_pods_to_delete",
    "update_replica_set_status",
]
