"""The ClusterRole aggregation controller (kube-controller-manager's
``clusterrole-aggregation-controller``)."""

from pykcm.controllers.clusterroleaggregation.clusterroleaggregation_controller import (
    FIELD_MANAGER,
    ClusterRoleAggregationController,
    aggregated_rules,
)

__all__ = ["FIELD_MANAGER", "ClusterRoleAggregationController", "aggregated_rules"]
