"""core/v1 PersistentVolumeClaims (pkg/registry/core/persistentvolumeclaim): the status is
the server's on create (phase Pending by defaulting).

Defaults, validation and printer are still volumes.py's (through the flat modules).
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register


@register
class PersistentVolumeClaimStrategy(FlatModulesStrategy):
    kind = "PersistentVolumeClaim"
    create_keeps_status = True  # replaced below

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}
