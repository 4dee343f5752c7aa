"""core/v1 Namespaces (pkg/registry/core/namespace): the status/spec split and /finalize.

Defaults and validation are still the flat modules' (defaults.py, validation.py).
A namespace's status is the server's: phase Active on create, Terminating when
deleted (the generic store's delete); a write of the main resource keeps it, a
/status write changes only the status, /finalize only spec.finalizers.
"""

from __future__ import annotations

from typing import Any

from pykcm.apiserver.registry.legacy import FlatModulesStrategy
from pykcm.apiserver.registry.lookup import register

Obj = dict[str, Any]


@register
class NamespaceStrategy(FlatModulesStrategy):
    kind = "Namespace"
    create_keeps_status = True  # replaced below
    status_keeps_all_metadata = True

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}

    def carry_status(self, new: Obj, old: Obj) -> None:
        # the phase moves only through delete
        if "status" in old:
            new["status"] = old["status"]

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> Obj:
        if subresource != "finalize":
            return super().prepare_for_subresource_update(subresource, new, old)
        # namespaceFinalizeStrategy: spec.finalizers and the metadata come from the request
        # (system fields kept), the status stays
        result = dict(old)
        result["metadata"] = self.status_write_metadata(new, old["metadata"])
        spec = dict(old.get("spec") or {})
        spec["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
        if not spec["finalizers"]:
            spec.pop("finalizers")
        result["spec"] = spec
        return result
