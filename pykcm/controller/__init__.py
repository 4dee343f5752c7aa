"""Utilities shared by controllers (kube-controller-manager's pkg/controller)."""

from pykcm.controller.expectations import (
    EXPECTATIONS_TIMEOUT,
    ControlleeExpectations,
    ControllerExpectations,
    ControllerExpectationsInterface,
    UIDTrackingControllerExpectations,
)

__all__ = [
    "EXPECTATIONS_TIMEOUT",
    "ControlleeExpectations",
    "ControllerExpectations",
    "ControllerExpectationsInterface",
    "UIDTrackingControllerExpectations",
]
