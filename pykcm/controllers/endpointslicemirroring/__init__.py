"""The EndpointSlice mirroring controller (kube-controller-manager
pkg/controller/endpointslicemirroring): custom Endpoints mirrored into EndpointSlices."""

from pykcm.controllers.endpointslicemirroring.endpointslicemirroring_controller import (
    CONTROLLER_NAME,
    EVENT_SOURCE,
    EndpointSliceMirroringController,
)

__all__ = ["CONTROLLER_NAME", "EVENT_SOURCE", "EndpointSliceMirroringController"]
