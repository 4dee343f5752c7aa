"""The controller runtime and utilities shared by controllers (kube-controller-manager's pkg/controller)."""

from pykcm.controller.controller import Controller, Reconciler, Result
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
    "Controller",
    "ControllerExpectations",
    "ControllerExpectationsInterface",
    "Reconciler",
    "Result",
    "UIDTrackingControllerExpectations",
]

from pykcm.controller.event_recorder import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    EventAggregator,
    EventBroadcaster,
    EventCorrelateResult,
    EventCorrelator,
    EventLogger,
    EventRecorder,
    EventSink,
    EventSourceObjectSpamFilter,
)

__all__ += [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "EventAggregator",
    "EventBroadcaster",
    "EventCorrelateResult",
    "EventCorrelator",
    "EventLogger",
    "EventRecorder",
    "EventSink",
    "EventSourceObjectSpamFilter",
]
