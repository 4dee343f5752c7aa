"""The garbage collector (kube-controller-manager pkg/controller/garbagecollector).

Modules: ``graph`` (nodes, owner/dependent links, virtual nodes, the absent
owner cache), ``graph_builder`` (monitors on every deletable resource, the
graphChanges queue, processGraphChanges), ``operations`` (REST mapping and the
API calls: get, delete with preconditions, patches, finalizer removal),
``garbage_collector`` (the attemptToDelete / attemptToOrphan workers and the
discovery resync).
"""

from pykcm.controllers.garbagecollector.garbage_collector import GarbageCollector
from pykcm.controllers.garbagecollector.graph_builder import DEFAULT_IGNORED_RESOURCES

__all__ = ["DEFAULT_IGNORED_RESOURCES", "GarbageCollector"]
