"""rbac.authorization.k8s.io/v1 ClusterRole: validation (rules, aggregationRule),
escalation check and printer.

kube-apiserver counterpart: ``pkg/registry/rbac/clusterrole`` and ValidateClusterRole
(an aggregationRule needs a selector; each selector a valid LabelSelector, invalid label
values still accepted on update when the old object had them). The rules of an
aggregated role are written by the clusterrole-aggregation-controller
(pykcm/controllers/clusterroleaggregation/). Printer: the default Name/Created At.
"""

from __future__ import annotations

from typing import Any

from pykcm.api.validation import (
    Cause,
    name_is_path_segment,
    required,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.rbac.escalation import check_role
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import as_dict, as_list, as_str
from pykcm.apiserver.registry.rbac.policyrule import RBAC_GROUP, validate_rules
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["ClusterRoleStrategy"]


def _selectors(obj: Obj) -> list[Any]:
    return as_list(as_dict(obj.get("aggregationRule")).get("clusterRoleSelectors"))


def _validate(obj: Obj, allow_invalid_label_value: bool) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False,
                                name_validator=name_is_path_segment)
    errs += validate_rules(obj.get("rules"), namespaced=False)
    if obj.get("aggregationRule") is not None:
        selectors = _selectors(obj)
        if not selectors:
            errs.append(required("aggregationRule.clusterRoleSelectors",
                                 "at least one clusterRoleSelector required if "
                                 "aggregationRule is non-nil"))
        for i, sel in enumerate(selectors):
            errs += validate_label_selector(
                as_dict(sel), f"aggregationRule.clusterRoleSelectors[{i}]",
                allow_invalid_label_value=allow_invalid_label_value)
    return errs


@register
class ClusterRoleStrategy(Strategy):
    group = RBAC_GROUP
    kind = "ClusterRole"

    def validate_create(self, obj: Obj) -> list[Cause]:
        check_role("clusterroles", "", as_str(as_dict(obj.get("metadata")).get("name")), obj)
        return _validate(obj, False)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        check_role("clusterroles", "", as_str(as_dict(new.get("metadata")).get("name")),
                   new, old)
        allow = any(validate_label_selector(as_dict(s), "") for s in _selectors(old))
        return (_validate(new, allow)
                + validate_object_meta_update(new.get("metadata"), old.get("metadata")))
