"""rbac.authorization.k8s.io/v1 Role: its validation, escalation check and printer.

kube-apiserver counterpart: ``pkg/registry/rbac/role`` (strategy, policybased storage)
and ``pkg/apis/rbac/validation`` ValidateRole. Data flow: rest_storage calls the hooks;
the escalation check (rbac/escalation.py) runs first and answers 403, as upstream's
policy-based storage wraps the store before its validation. Printer: the default
Name/Created At, as upstream's.
"""

from __future__ import annotations

from pykcm.api.validation import (
    Cause,
    name_is_path_segment,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.rbac.escalation import check_role
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import as_dict, as_str
from pykcm.apiserver.registry.rbac.policyrule import RBAC_GROUP, validate_rules
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["RoleStrategy"]


def _meta(obj: Obj) -> tuple[str, str]:
    meta = as_dict(obj.get("metadata"))
    return as_str(meta.get("namespace")), as_str(meta.get("name"))


@register
class RoleStrategy(Strategy):
    group = RBAC_GROUP
    kind = "Role"

    def validate_create(self, obj: Obj) -> list[Cause]:
        check_role("roles", *_meta(obj), obj)
        return (validate_object_meta(obj.get("metadata"), namespaced=True,
                                     name_validator=name_is_path_segment)
                + validate_rules(obj.get("rules"), namespaced=True))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        check_role("roles", *_meta(new), new, old)
        return (validate_object_meta(new.get("metadata"), namespaced=True,
                                     name_validator=name_is_path_segment)
                + validate_rules(new.get("rules"), namespaced=True)
                + validate_object_meta_update(new.get("metadata"), old.get("metadata")))
