"""The namespace controller (kube-controller-manager pkg/controller/namespace).

Modules: ``namespace_controller`` (the queue of terminating namespaces and its
workers) and ``deletion`` (the namespaced resources deleter: discovery-driven
content deletion, status conditions, finalization).
"""

from pykcm.controllers.namespace.deletion import (
    NamespacedResourcesDeleter,
    ResourcesRemainingError,
)
from pykcm.controllers.namespace.namespace_controller import NamespaceController

__all__ = ["NamespaceController", "NamespacedResourcesDeleter", "ResourcesRemainingError"]
