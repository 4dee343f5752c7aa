"""The EndpointSlice controller (kube-controller-manager pkg/controller/endpointslice and
k8s.io/endpointslice).

Modules: ``endpointslice_controller`` (queues and sync), ``reconciler`` (a Service's pods →
its slices), ``util`` (what the Endpoints and mirroring controllers share: pod events →
Services, trigger times, the tracker of written slices, endpoint sets).
"""

from pykcm.controllers.endpointslice.endpointslice_controller import (
    CONTROLLER_NAME,
    EVENT_SOURCE,
    EndpointSliceController,
)
from pykcm.controllers.endpointslice.reconciler import Reconciler

__all__ = ["CONTROLLER_NAME", "EVENT_SOURCE", "EndpointSliceController", "Reconciler"]
