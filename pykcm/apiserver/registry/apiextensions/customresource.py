"""The strategy of custom resources (apiextensions-apiserver's pkg/registry/customresource):
one per served CRD version, from its structural schema.

- Defaults: pruning of unknown fields, then the schema's defaults.
- Validation: object metadata, then the schema.
- Generation: any change outside the metadata (and the status, when it is a
  subresource) is a new generation.
- A /status write keeps all of the stored metadata.

Not registered by kind: the generic store builds it for the resources the CRD
registry serves (``CustomResourceVersion``).
"""

from __future__ import annotations

from typing import Any

from pykcm.api.validation import Cause, validate_object_meta, validate_object_meta_update
from pykcm.apiserver.crd.custom_resources import CustomResourceVersion
from pykcm.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]


class CustomResourceStrategy(Strategy):
    status_keeps_all_metadata = True

    def __init__(self, crv: CustomResourceVersion) -> None:
        super().__init__(crv.info)
        self.crv = crv

    def default(self, obj: Obj, *, create: bool) -> None:
        self.crv.prune_and_default(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(obj.get("metadata"), namespaced=self.info.namespaced)
        return causes + self.crv.validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = validate_object_meta(new.get("metadata"), namespaced=self.info.namespaced)
        causes += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        return causes + self.crv.validate(new)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate_update(new, old)

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        skip = ("metadata", "status") if self.info.status_subresource else ("metadata",)
        return ({k: v for k, v in new.items() if k not in skip}
                != {k: v for k, v in old.items() if k not in skip})
