"""The taint eviction controller (kube-controller-manager's ``taint-eviction-controller``)."""

from pykcm.controllers.tainteviction.taint_eviction import (
    TaintEvictionController,
    get_matching_tolerations,
    get_min_toleration_time,
)

__all__ = ["TaintEvictionController", "get_matching_tolerations", "get_min_toleration_time"]
