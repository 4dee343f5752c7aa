"""The resourcequota-controller (kube-controller-manager ``pkg/controller/resourcequota``)."""

from pykcm.controllers.resourcequota.resource_quota_controller import ResourceQuotaController
from pykcm.controllers.resourcequota.resource_quota_monitor import QuotaMonitor

__all__ = ["QuotaMonitor", "ResourceQuotaController"]
