"""The controller runtime and utilities shared by controllers (kube-controller-manager's pkg/controller)."""

from pykcm.controller.controller import Controller, ControllerHost, Reconciler, Result
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
    "ControllerHost",
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

from pykcm.controller.controller_ref_manager import (
    AggregateError,
    BaseControllerRefManager,
    PodControllerRefManager,
    ReplicaSetControllerRefManager,
    delete_owner_ref_strategic_merge_patch,
    owner_ref_controller_patch,
    recheck_deletion_timestamp,
)
from pykcm.controller.pod_control import (
    FAILED_CREATE_POD_REASON,
    FAILED_DELETE_POD_REASON,
    SUCCESSFUL_CREATE_POD_REASON,
    SUCCESSFUL_DELETE_POD_REASON,
    DeletePodError,
    FakePodControl,
    PodControl,
    RealPodControl,
    get_pod_from_template,
    validate_controller_ref,
)
from pykcm.controller.replica_set_control import FakeRSControl, RealRSControl, RSControl
from pykcm.controller.slow_start import SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch

__all__ += [
    "FAILED_CREATE_POD_REASON",
    "FAILED_DELETE_POD_REASON",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "SUCCESSFUL_CREATE_POD_REASON",
    "SUCCESSFUL_DELETE_POD_REASON",
    "AggregateError",
    "BaseControllerRefManager",
    "DeletePodError",
    "FakePodControl",
    "FakeRSControl",
    "PodControl",
    "PodControllerRefManager",
    "RSControl",
    "RealPodControl",
    "RealRSControl",
    "ReplicaSetControllerRefManager",
    "delete_owner_ref_strategic_merge_patch",
    "get_pod_from_template",
    "owner_ref_controller_patch",
    "recheck_deletion_timestamp",
    "slow_start_batch",
    "validate_controller_ref",
]
