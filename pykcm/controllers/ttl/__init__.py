"""The TTL controller (kube-controller-manager's ``ttl-controller``)."""

from pykcm.controllers.ttl.ttl_controller import (
    OBJECT_TTL_ANNOTATION,
    TTL_BOUNDARIES,
    TTLController,
)

__all__ = ["OBJECT_TTL_ANNOTATION", "TTL_BOUNDARIES", "TTLController"]
