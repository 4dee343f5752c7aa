"""core/v1 Nodes (pkg/registry/core/node): a node's creator (its kubelet) reports its status.

Defaults, validation and printer are still the flat modules'.
"""

from __future__ import annotations

from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register


@register
class NodeStrategy(FlatModulesStrategy):
    kind = "Node"
    create_keeps_status = True
