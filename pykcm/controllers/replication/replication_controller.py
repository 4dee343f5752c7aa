"""The ReplicationController controller: the ReplicaSet algorithm on ReplicationControllers.

kube-controller-manager v1.36 ``pkg/controller/replication``: "ReplicationManager is now
just a wrapper around ReplicaSetController", with a conversion layer treating a
ReplicationController as an older version of ReplicaSet. pykcm does the same with less
machinery: :class:`ReplicationManager` is pykcm's
:class:`~pykcm.controllers.replicaset.ReplicaSetController` with the managed kind,
resource and selector of a ReplicationController, so everything the ReplicaSet controller
does (expectations, slow start, adoption and release, pod ranking on scale-down, status
with the ReplicaFailure condition) a ReplicationController gets.

Differences from ReplicaSets, as upstream's:

- ``spec.selector`` is a map of labels (a ReplicaSet's ``matchLabels``);
- pods are owned through ``v1``/``ReplicationController`` references;
- the status has no ``terminatingReplicas`` (the field does not exist in core/v1);
- the queue is named ``replicationmanager`` and events come from
  ``replication-controller``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from pykcm.api.clock import Clock
from pykcm.api.labels import LabelSelector, selector_from_set
from pykcm.api.resources import ResourceInfo
from pykcm.client import Client, ResourceRef
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controller.pod_control import PodControl
from pykcm.controllers.replicaset import BURST_REPLICAS, ReplicaSetController
from pykcm.informers.generic import GenericInformer

__all__ = ["CONCURRENT_RC_SYNCS", "CONTROLLER_NAME", "REPLICATION_CONTROLLERS",
           "ReplicationManager"]

CONTROLLER_NAME: Final = "replicationmanager"
"""The queue's name (upstream's workqueue ``replicationmanager``)."""
CONCURRENT_RC_SYNCS: Final = 5

REPLICATION_CONTROLLERS: Final = ResourceInfo(
    group="", version="v1", kind="ReplicationController", plural="replicationcontrollers",
    singular="replicationcontroller", namespaced=True, short_names=("rc",),
    categories=("all",), subresources=("status", "scale"), track_generation=True,
    status_subresource=True)
"""core/v1 replicationcontrollers (not in the built-in registry: pykcm's embedded API server
does not serve it yet; the controller uses it against servers that do)."""


class ReplicationManager(ReplicaSetController):
    """Keeps ``spec.replicas`` pods running for every ReplicationController."""

    default_workers = CONCURRENT_RC_SYNCS
    controller_kind = "ReplicationController"
    controller_api_version = "v1"
    resource: ResourceRef = REPLICATION_CONTROLLERS
    # Upstream gives the ReplicationManager a no-op consistency store (its metrics and
    # resource types are not parameterized for it yet).
    stale_controller_consistency = False

    def __init__(self, *, pod_informer: GenericInformer, rc_informer: GenericInformer,
                 client: Client, recorder: EventRecorder, burst_replicas: int = BURST_REPLICAS,
                 pod_control: PodControl | None = None,
                 clock: Clock | Callable[[], float] | None = None) -> None:
        super().__init__(pod_informer=pod_informer, rs_informer=rc_informer, client=client,
                         recorder=recorder, burst_replicas=burst_replicas,
                         pod_control=pod_control, enable_status_terminating_replicas=False,
                         clock=clock, name=CONTROLLER_NAME)

    def selector_of(self, rs: Mapping[str, Any]) -> LabelSelector:
        """A ReplicationController's selector: a map of labels."""
        return selector_from_set((rs.get("spec") or {}).get("selector") or {})
