"""The PersistentVolumeClaim protection controller (``persistentvolumeclaim-protection-controller``)."""

from pykcm.controllers.pvcprotection.pvc_protection_controller import (
    PVC_PROTECTION_FINALIZER,
    PVCProtectionController,
    pod_claim_names,
)

__all__ = ["PVC_PROTECTION_FINALIZER", "PVCProtectionController", "pod_claim_names"]
