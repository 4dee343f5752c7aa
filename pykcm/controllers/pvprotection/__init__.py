"""The PersistentVolume protection controller (``persistentvolume-protection-controller``)."""

from pykcm.controllers.pvprotection.pv_protection_controller import (
    PV_PROTECTION_FINALIZER,
    PVProtectionController,
)

__all__ = ["PV_PROTECTION_FINALIZER", "PVProtectionController"]
