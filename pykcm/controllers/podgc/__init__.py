"""The pod garbage collector (kube-controller-manager's ``pod-garbage-collector-controller``)."""

from pykcm.controllers.podgc.gc_controller import GC_CHECK_PERIOD, QUARANTINE_TIME, PodGCController

__all__ = ["GC_CHECK_PERIOD", "QUARANTINE_TIME", "PodGCController"]
