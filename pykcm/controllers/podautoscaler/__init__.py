"""The horizontal-pod-autoscaler-controller (kube-controller-manager v1.36
``pkg/controller/podautoscaler``): ``horizontal.py`` the controller, ``replica_calculator.py``
a metric's proposal, ``normalization.py`` stabilization and rate limits,
``metrics_client.py`` the resource, custom and external metrics APIs."""

from pykcm.controllers.podautoscaler.horizontal import HorizontalController

__all__ = ["HorizontalController"]
