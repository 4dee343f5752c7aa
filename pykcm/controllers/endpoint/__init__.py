"""The Endpoints controller (kube-controller-manager pkg/controller/endpoint)."""

from pykcm.controllers.endpoint.endpoints_controller import (
    CONTROLLER_NAME,
    MAX_CAPACITY,
    EndpointController,
    compute_subsets,
    truncate_endpoints,
)

__all__ = ["CONTROLLER_NAME", "MAX_CAPACITY", "EndpointController", "compute_subsets",
           "truncate_endpoints"]
