"""rbac.authorization.k8s.io/v1 RoleBinding: defaults, validation, escalation check,
printer.

kube-apiserver counterpart: ``pkg/registry/rbac/rolebinding`` (policybased storage:
``bind`` on the role, or every permission it grants held), ValidateRoleBinding (roleRef
a Role or ClusterRole of rbac.authorization.k8s.io, immutable; subjects), and the
Name/Role/Age/Users/Groups/ServiceAccounts printer (the last three wide).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    name_is_path_segment,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.rbac.escalation import check_binding
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_list,
    as_str,
    column,
    object_name,
)
from pykcm.apiserver.registry.rbac.policyrule import (
    RBAC_GROUP,
    default_binding,
    role_ref_changed,
    validate_binding,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["RoleBindingStrategy", "binding_columns", "binding_row"]


def binding_columns(what: str, role_doc: str) -> tuple[dict[str, Any], ...]:
    return (NAME_COLUMN, column("Role", "string", role_doc), AGE_COLUMN,
            column("Users", "string", f"Users in the {what}", priority=1),
            column("Groups", "string", f"Groups in the {what}", priority=1),
            column("ServiceAccounts", "string", f"ServiceAccounts in the {what}", priority=1))


def binding_row(obj: Mapping[str, Any], now: int) -> Row:
    """printRoleBinding: the role as Kind/name, subjects by kind (wide)."""
    ref = as_dict(obj.get("roleRef"))
    by_kind: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
    for s in as_list(obj.get("subjects")):
        s = as_dict(s)
        kind = as_str(s.get("kind"))
        if kind == "ServiceAccount":
            by_kind[kind].append(f"{as_str(s.get('namespace'))}/{as_str(s.get('name'))}")
        elif kind in by_kind:
            by_kind[kind].append(as_str(s.get("name")))
    return Row([object_name(obj), f"{as_str(ref.get('kind'))}/{as_str(ref.get('name'))}",
                age(obj, now), ", ".join(by_kind["User"]), ", ".join(by_kind["Group"]),
                ", ".join(by_kind["ServiceAccount"])])


_ROLE_DOC: Final = ("RoleRef can reference a Role in the current namespace or a ClusterRole in "
                    "the global namespace. If the RoleRef cannot be resolved, the Authorizer "
                    "must return an error.")


def _validate(obj: Obj) -> list[Cause]:
    return (validate_object_meta(obj.get("metadata"), namespaced=True,
                                 name_validator=name_is_path_segment)
            + validate_binding(obj, namespaced=True, role_kinds=("Role", "ClusterRole")))


def _where(obj: Obj) -> tuple[str, str]:
    meta = as_dict(obj.get("metadata"))
    return as_str(meta.get("namespace")), as_str(meta.get("name"))


@register
class RoleBindingStrategy(Strategy):
    group = RBAC_GROUP
    kind = "RoleBinding"
    printer = Printer(binding_columns("roleBinding", _ROLE_DOC), binding_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        super().default(obj, create=create)
        default_binding(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        check_binding("rolebindings", *_where(obj), obj)
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        check_binding("rolebindings", *_where(new), new, old)
        return (_validate(new)
                + validate_object_meta_update(new.get("metadata"), old.get("metadata"))
                + role_ref_changed(new, old))
