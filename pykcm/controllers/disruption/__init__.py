"""The disruption controller (kube-controller-manager's ``disruption-controller``)."""

from pykcm.controllers.disruption.disruption import (
    DELETION_TIMEOUT,
    STALE_POD_DISRUPTION_TIMEOUT,
    DisruptionController,
)

__all__ = ["DELETION_TIMEOUT", "STALE_POD_DISRUPTION_TIMEOUT", "DisruptionController"]
