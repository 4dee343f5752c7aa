"""The TTL-after-finished controller (kube-controller-manager's ``pkg/controller/ttlafterfinished``):
deletes finished Jobs ``spec.ttlSecondsAfterFinished`` after they finished."""

from pykcm.controllers.ttlafterfinished.ttlafterfinished_controller import (
    TTLAfterFinishedController,
)

__all__ = ["TTLAfterFinishedController"]
