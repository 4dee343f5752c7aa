"""apiextensions.k8s.io/v1 CustomResourceDefinitions (apiextensions-apiserver's
pkg/registry/customresourcedefinition): defaults and validation of crd_strategy.py.

The names-accepted/established status is the generic store's second write (the
apiextensions controllers' answer, crd_strategy.crd_status_on_accept); a /status
write changes only the status and is not validated.
"""

from __future__ import annotations

from typing import Any

from pykcm.api.validation import Cause
from pykcm.apiserver.crd import definitions as _crd
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]


@register
class CustomResourceDefinitionStrategy(Strategy):
    group = "apiextensions.k8s.io"
    kind = "CustomResourceDefinition"
    status_keeps_all_metadata = True

    def default(self, obj: Obj, *, create: bool) -> None:
        _crd.default_crd(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _crd.validate_crd_create(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _crd.validate_crd_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return []
