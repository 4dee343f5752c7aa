"""PolicyRule and Subject validation and defaults shared by the four RBAC kinds.

kube-apiserver counterpart: ``pkg/apis/rbac/validation`` (ValidatePolicyRule,
ValidateRoleBindingSubject, the roleRef checks) and ``pkg/apis/rbac/v1/defaults.go``
(a User or Group subject's and a roleRef's apiGroup default to
rbac.authorization.k8s.io). Used by role.py, clusterrole.py, rolebinding.py and
clusterrolebinding.py of this package.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    invalid,
    name_is_dns_subdomain,
    name_is_path_segment,
    not_supported,
    required,
)
from pykcm.apiserver.registry.printers import as_dict, as_list

__all__ = ["RBAC_GROUP", "default_binding", "validate_binding", "validate_rules"]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"


def _strs(rule: Mapping[str, Any], key: str) -> list[Any]:
    v = rule.get(key)
    return v if isinstance(v, list) else []


def validate_rules(rules: Any, *, namespaced: bool) -> list[Cause]:
    """ValidatePolicyRule of every ``rules[i]``."""
    errs: list[Cause] = []
    for i, rule in enumerate(as_list(rules)):
        rule = as_dict(rule)
        p = f"rules[{i}]"
        if not _strs(rule, "verbs"):
            errs.append(required(f"{p}.verbs", "verbs must contain at least one value"))
        urls = _strs(rule, "nonResourceURLs")
        if urls:
            if namespaced:
                errs.append(invalid(f"{p}.nonResourceURLs", urls,
                                    "namespaced rules cannot apply to non-resource URLs"))
            if (_strs(rule, "apiGroups") or _strs(rule, "resources")
                    or _strs(rule, "resourceNames")):
                errs.append(invalid(f"{p}.nonResourceURLs", urls, "rules cannot apply to both "
                                    "regular resources and non-resource URLs"))
            continue
        if not _strs(rule, "apiGroups"):
            errs.append(required(f"{p}.apiGroups",
                                 "resource rules must supply at least one api group"))
        if not _strs(rule, "resources"):
            errs.append(required(f"{p}.resources",
                                 "resource rules must supply at least one resource"))
    return errs


def default_binding(obj: dict[str, Any]) -> None:
    """SetDefaults_RoleBinding/ClusterRoleBinding and SetDefaults_Subject."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = RBAC_GROUP
    for s in as_list(obj.get("subjects")):
        if isinstance(s, dict) and s.get("kind") in ("User", "Group") and not s.get("apiGroup"):
            s["apiGroup"] = RBAC_GROUP


def _validate_subject(s: Mapping[str, Any], namespaced: bool, p: str) -> list[Cause]:
    errs: list[Cause] = []
    name = str(s.get("name") or "")
    api_group = str(s.get("apiGroup") or "")
    if not name:
        errs.append(required(f"{p}.name"))
    kind = str(s.get("kind") or "")
    if kind == "ServiceAccount":
        if name:
            errs += [invalid(f"{p}.name", name, m) for m in name_is_dns_subdomain(name)]
        if api_group:
            errs.append(not_supported(f"{p}.apiGroup", api_group, ("",)))
        if not namespaced and not s.get("namespace"):
            errs.append(required(f"{p}.namespace"))
    elif kind in ("User", "Group"):
        if api_group != RBAC_GROUP:
            errs.append(not_supported(f"{p}.apiGroup", api_group, (RBAC_GROUP,)))
    else:
        errs.append(not_supported(f"{p}.kind", kind, ("ServiceAccount", "User", "Group")))
    return errs


def validate_binding(obj: Mapping[str, Any], *, namespaced: bool,
                     role_kinds: Sequence[str]) -> list[Cause]:
    """ValidateRoleBinding / ValidateClusterRoleBinding past the metadata."""
    errs: list[Cause] = []
    ref = as_dict(obj.get("roleRef"))
    api_group, kind = str(ref.get("apiGroup") or ""), str(ref.get("kind") or "")
    name = str(ref.get("name") or "")
    if api_group != RBAC_GROUP:
        errs.append(not_supported("roleRef.apiGroup", api_group, (RBAC_GROUP,)))
    if kind not in role_kinds:
        errs.append(not_supported("roleRef.kind", kind, role_kinds))
    if not name:
        errs.append(required("roleRef.name"))
    else:
        errs += [invalid("roleRef.name", name, m) for m in name_is_path_segment(name)]
    for i, s in enumerate(as_list(obj.get("subjects"))):
        errs += _validate_subject(as_dict(s), namespaced, f"subjects[{i}]")
    return errs


def role_ref_changed(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """The update rule: roleRef is immutable."""
    n, o = as_dict(new.get("roleRef")), as_dict(old.get("roleRef"))
    key = ("apiGroup", "kind", "name")
    if [n.get(k) or "" for k in key] == [o.get(k) or "" for k in key]:
        return []
    # json.Marshal of the internal struct (no json tags: Go's field names)
    shown = GoValue(json.dumps(dict(zip(("APIGroup", "Kind", "Name"),
                                        (str(n.get(k) or "") for k in key), strict=True)),
                               separators=(",", ":"), ensure_ascii=False))
    return [invalid("roleRef", shown, "cannot change roleRef")]
