"""The PersistentVolume binder (kube-controller-manager's ``persistentvolume-binder-controller``)."""

from pykcm.controllers.persistentvolume.pv_controller import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    ANN_STORAGE_PROVISIONER_BETA,
    PersistentVolumeController,
)

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DYNAMICALLY_PROVISIONED",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "ANN_STORAGE_PROVISIONER_BETA",
    "PersistentVolumeController",
]
