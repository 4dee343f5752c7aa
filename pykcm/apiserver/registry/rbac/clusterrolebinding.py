"""rbac.authorization.k8s.io/v1 ClusterRoleBinding: defaults, validation, escalation
check, printer.

kube-apiserver counterpart: ``pkg/registry/rbac/clusterrolebinding`` and
ValidateClusterRoleBinding (roleRef a ClusterRole only; a ServiceAccount subject needs a
namespace); the printer is rolebinding.py's with the cluster binding's descriptions.
"""

from __future__ import annotations

from typing import Final

from pykcm.api.validation import (
    Cause,
    name_is_path_segment,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.rbac.escalation import check_binding
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import Printer, as_dict, as_str
from pykcm.apiserver.registry.rbac.policyrule import (
    RBAC_GROUP,
    default_binding,
    role_ref_changed,
    validate_binding,
)
from pykcm.apiserver.registry.rbac.rolebinding import binding_columns, binding_row
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["ClusterRoleBindingStrategy"]

_ROLE_DOC: Final = ("RoleRef can only reference a ClusterRole in the global namespace. If the "
                    "RoleRef cannot be resolved, the Authorizer must return an error.")


def _validate(obj: Obj) -> list[Cause]:
    return (validate_object_meta(obj.get("metadata"), namespaced=False,
                                 name_validator=name_is_path_segment)
            + validate_binding(obj, namespaced=False, role_kinds=("ClusterRole",)))


@register
class ClusterRoleBindingStrategy(Strategy):
    group = RBAC_GROUP
    kind = "ClusterRoleBinding"
    printer = Printer(binding_columns("clusterRoleBinding", _ROLE_DOC), binding_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        super().default(obj, create=create)
        default_binding(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        check_binding("clusterrolebindings", "",
                      as_str(as_dict(obj.get("metadata")).get("name")), obj)
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        check_binding("clusterrolebindings", "",
                      as_str(as_dict(new.get("metadata")).get("name")), new, old)
        return (_validate(new)
                + validate_object_meta_update(new.get("metadata"), old.get("metadata"))
                + role_ref_changed(new, old))
