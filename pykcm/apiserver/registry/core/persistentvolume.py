"""core/v1 PersistentVolumes (pkg/registry/core/persistentvolume): the status is the
server's on create, and a phase change is stamped (status.lastPhaseTransitionTime).

Defaults, validation and printer are still volumes.py's (through the flat modules).
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver import volumes as _volumes
from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import now_rfc3339

Obj = dict[str, Any]


@register
class PersistentVolumeStrategy(FlatModulesStrategy):
    kind = "PersistentVolume"
    create_keeps_status = True  # replaced below

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # PrepareForCreate: the status is the server's (phase Pending by defaulting),
        # its first phase stamped
        obj["status"] = {}
        _volumes.prepare_pv_status(obj, None, now_rfc3339())

    def prepare_for_status_update(self, new: Obj, old: Obj) -> Obj:
        result = super().prepare_for_status_update(new, old)
        _volumes.prepare_pv_status(result, old, now_rfc3339())
        return result
