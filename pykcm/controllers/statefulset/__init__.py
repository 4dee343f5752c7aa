"""The StatefulSet controller (kube-controller-manager's ``statefulset-controller``)."""

from pykcm.controllers.statefulset.stateful_set import (
    CONCURRENT_STATEFUL_SET_SYNCS,
    CONTROLLER_NAME,
    StatefulSetController,
)
from pykcm.controllers.statefulset.stateful_set_utils import PERSISTENT_VOLUME_CLAIMS

__all__ = [
    "CONCURRENT_STATEFUL_SET_SYNCS",
    "CONTROLLER_NAME",
    "PERSISTENT_VOLUME_CLAIMS",
    "StatefulSetController",
]
