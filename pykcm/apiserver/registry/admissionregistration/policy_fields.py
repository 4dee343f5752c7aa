"""The fields the CEL admission policies and their bindings share
(``pkg/apis/admissionregistration``: SetDefaults_MatchResources and SetDefaults_Rule, and the
validation of MatchResources, rules, ParamKind, ParamRef, match conditions, variables and
validation actions), used by the four strategies beside this module.

Deliberate deviation: no CEL. kube-apiserver compiles every expression (validations,
variables, match conditions, audit annotations, mutations, message expressions) and answers
a compile error as an Invalid cause; pykcm checks only that each is present and non-blank.
The expressions are stored and never evaluated (the strategies warn on create).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pykcm.api.labels import go_label_selector_string
from pykcm.api.validation import (
    Cause,
    duplicate,
    forbidden,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_qualified_name,
    name_is_dns_subdomain,
    name_is_path_segment,
    not_supported,
    required,
    too_many,
    validate_label_selector,
)
from pykcm.apiserver.registry import printers as pr

__all__ = ["FAILURE_POLICIES", "MUTATING_OPERATIONS", "STATIC_SUFFIX", "default_match_resources",
           "not_evaluated_warning", "param_kind_cell", "param_ref_cell", "static_suffix_warnings",
           "validate_failure_policy", "validate_match_conditions", "validate_match_resources",
           "validate_mutating_operations", "validate_param_kind", "validate_param_ref",
           "validate_policy_name", "validate_validation_actions", "validate_variable"]

FAILURE_POLICIES: Final = ("Fail", "Ignore")
_MATCH_POLICIES: Final = ("Equivalent", "Exact")
_OPERATIONS: Final = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
# a MutatingAdmissionPolicy cannot act on DELETE
MUTATING_OPERATIONS: Final = ("*", "CONNECT", "CREATE", "UPDATE")
_SCOPES: Final = ("*", "Cluster", "Namespaced")
_VALIDATION_ACTIONS: Final = ("Audit", "Deny", "Warn")
# names with this suffix are reserved for manifest-based configurations (a warning while
# the ManifestBasedAdmissionControlConfig gate is off, as in v1.36's defaults)
STATIC_SUFFIX: Final = ".static.k8s.io"
_MAX_MATCH_CONDITIONS: Final = 64

_CEL_IDENT: Final = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED: Final = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
    "void", "while"})

Obj = dict[str, Any]


# --- defaults ---------------------------------------------------------------------------

def default_match_resources(mr: Any) -> None:
    """SetDefaults_MatchResources and SetDefaults_Rule of its rules, in place."""
    if not isinstance(mr, dict):
        return
    mr.setdefault("matchPolicy", "Equivalent")
    if mr.get("namespaceSelector") is None:
        mr["namespaceSelector"] = {}
    if mr.get("objectSelector") is None:
        mr["objectSelector"] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in pr.as_list(mr.get(key)):
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


# --- validation -------------------------------------------------------------------------

def validate_failure_policy(spec: Mapping[str, Any], path: str) -> list[Cause]:
    fp = spec.get("failurePolicy")
    if fp is None:
        return [required(f"{path}.failurePolicy")]
    if fp not in FAILURE_POLICIES:
        return [not_supported(f"{path}.failurePolicy", fp, FAILURE_POLICIES)]
    return []


def _has_star(values: Sequence[Any]) -> bool:
    return "*" in values


def _validate_resources(resources: list[Any], path: str) -> list[Cause]:
    """validateResources (subresources allowed): the wildcard combinations upstream refuses."""
    errs: list[Cause] = []
    if not resources:
        errs.append(required(path))
    with_star_sub: set[str] = set()  # x/*
    star_with_sub: set[str] = set()  # */x
    double_star = single_star = plain = False
    for i, rs in enumerate(resources):
        rs = pr.as_str(rs)
        if rs == "":
            errs.append(required(f"{path}[{i}]"))
            continue
        double_star = double_star or rs == "*/*"
        single_star = single_star or rs == "*"
        if "/" not in rs:
            plain = rs != "*"
            continue
        res, sub = rs.split("/", 1)
        if res in with_star_sub:
            errs.append(invalid(f"{path}[{i}]", rs, f"if '{res}/*' is present, must not "
                                                    f"specify {rs}"))
        if sub in star_with_sub:
            errs.append(invalid(f"{path}[{i}]", rs, f"if '*/{sub}' is present, must not "
                                                    f"specify {rs}"))
        if sub == "*":
            with_star_sub.add(res)
        if res == "*":
            star_with_sub.add(sub)
    if len(resources) > 1 and double_star:
        errs.append(invalid(path, resources,
                            "if '*/*' is present, must not specify other resources"))
    if single_star and plain:
        errs.append(invalid(path, resources,
                            "if '*' is present, must not specify other resources without "
                            "subresources"))
    return errs


def _validate_rule_with_operations(rule: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    ops = pr.as_list(rule.get("operations"))
    if not ops:
        errs.append(required(f"{path}.operations"))
    if len(ops) > 1 and _has_star(ops):
        errs.append(invalid(f"{path}.operations", ops,
                            "if '*' is present, must not specify other operations"))
    for i, op in enumerate(ops):
        if op not in _OPERATIONS:
            errs.append(not_supported(f"{path}.operations[{i}]", op, _OPERATIONS))
    groups = pr.as_list(rule.get("apiGroups"))
    if not groups:
        errs.append(required(f"{path}.apiGroups"))
    if len(groups) > 1 and _has_star(groups):
        errs.append(invalid(f"{path}.apiGroups", groups,
                            "if '*' is present, must not specify other API groups"))
    versions = pr.as_list(rule.get("apiVersions"))
    if not versions:
        errs.append(required(f"{path}.apiVersions"))
    if len(versions) > 1 and _has_star(versions):
        errs.append(invalid(f"{path}.apiVersions", versions,
                            "if '*' is present, must not specify other API versions"))
    for i, v in enumerate(versions):
        if v == "":
            errs.append(required(f"{path}.apiVersions[{i}]"))
    errs += _validate_resources(pr.as_list(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _validate_named_rule(rule: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, name in enumerate(pr.as_list(rule.get("resourceNames"))):
        name = pr.as_str(name)
        errs += [invalid(f"{path}.resourceNames[{i}]", name, m)
                 for m in name_is_path_segment(name)]
        if name in seen:
            errs.append(duplicate(f"{path}.resourceNames[{i}]", name))
        seen.add(name)
    return errs + _validate_rule_with_operations(rule, path)


def validate_match_resources(mr: Any, path: str) -> list[Cause]:
    """validateMatchResources (nothing for an absent one)."""
    if not isinstance(mr, Mapping):
        return []
    errs: list[Cause] = []
    policy = mr.get("matchPolicy")
    if policy is None:
        errs.append(required(f"{path}.matchPolicy"))
    elif policy not in _MATCH_POLICIES:
        errs.append(not_supported(f"{path}.matchPolicy", policy, _MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        sel = mr.get(key)
        if sel is None:
            errs.append(required(f"{path}.{key}"))
        else:
            errs += validate_label_selector(pr.as_dict(sel), f"{path}.{key}")
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(pr.as_list(mr.get(key))):
            errs += _validate_named_rule(pr.as_dict(rule), f"{path}.{key}[{i}]")
    return errs


def validate_mutating_operations(mr: Any, path: str) -> list[Cause]:
    """A mutating policy's (or binding's) rules name only CREATE, UPDATE, CONNECT or *
    (the causes carry no index, as upstream's)."""
    errs: list[Cause] = []
    for rule in pr.as_list(pr.as_dict(mr).get("resourceRules")):
        for op in pr.as_list(pr.as_dict(rule).get("operations")):
            if op not in MUTATING_OPERATIONS:
                errs.append(not_supported(f"{path}.resourceRules.operations", op,
                                          MUTATING_OPERATIONS))
    return errs


def _split_group_version(gv: str) -> tuple[str, str] | None:
    """schema.ParseGroupVersion's split; None for more than one '/'."""
    if gv in ("", "/"):
        return "", ""
    if gv.count("/") > 1:
        return None
    group, _, version = gv.rpartition("/")
    return group, version


def validate_param_kind(pk: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    api_version = pr.as_str(pk.get("apiVersion"))
    if not api_version:
        errs.append(required(f"{path}.apiVersion"))
    else:
        gv = _split_group_version(api_version)
        if gv is None:
            errs.append(invalid(f"{path}.apiVersion", api_version,
                                f"unexpected GroupVersion string: {api_version}"))
        else:
            group, version = gv
            if group:
                msgs = is_dns1123_subdomain(group)
                if msgs:
                    errs.append(invalid(f"{path}.apiVersion", group, ",".join(msgs)))
            if not version:
                errs.append(invalid(f"{path}.apiVersion", api_version,
                                    "version must be specified"))
            else:
                msgs = is_dns1035_label(version)
                if msgs:
                    errs.append(invalid(f"{path}.apiVersion", version, ",".join(msgs)))
    kind = pr.as_str(pk.get("kind"))
    if not kind:
        errs.append(required(f"{path}.kind"))
    else:
        msgs = is_dns1035_label(kind.lower())
        if msgs:
            errs.append(invalid(f"{path}.kind", kind, "may have mixed case, but should "
                                                      "otherwise match: " + ",".join(msgs)))
    return errs


def validate_match_conditions(conds: list[Any], path: str) -> list[Cause]:
    """validateMatchConditions without compiling the expressions."""
    errs: list[Cause] = []
    if len(conds) > _MAX_MATCH_CONDITIONS:
        errs.append(too_many(path, len(conds), _MAX_MATCH_CONDITIONS))
    seen: set[str] = set()
    for i, c in enumerate(conds):
        c = pr.as_dict(c)
        p = f"{path}[{i}]"
        if not pr.as_str(c.get("expression")).strip():
            errs.append(required(f"{p}.expression"))
        name = pr.as_str(c.get("name"))
        if not name:
            errs.append(required(f"{p}.name"))
        else:
            errs += [invalid(f"{p}.name", name, m) for m in is_qualified_name(name)]
            if name in seen:
                errs.append(duplicate(f"{p}.name", name))
            seen.add(name)
    return errs


def validate_variable(v: Mapping[str, Any], path: str) -> list[Cause]:
    """validateVariable without compiling the expression."""
    errs: list[Cause] = []
    name = pr.as_str(v.get("name"))
    if not name.strip():
        errs.append(required(f"{path}.name", "name is not specified"))
    elif not (_CEL_IDENT.fullmatch(name) and name not in _CEL_RESERVED):
        errs.append(invalid(f"{path}.name", name, "must be a valid CEL identifier"))
    if not pr.as_str(v.get("expression")).strip():
        errs.append(required(f"{path}.expression", "expression is not specified"))
    return errs


def validate_policy_name(spec: Mapping[str, Any], path: str) -> list[Cause]:
    name = pr.as_str(spec.get("policyName"))
    if not name:
        return [required(f"{path}.policyName")]
    return [invalid(f"{path}.policyName", name, m) for m in name_is_dns_subdomain(name)]


def validate_param_ref(ref: Any, path: str) -> list[Cause]:
    """validateParamRef (nothing for an absent one)."""
    if not isinstance(ref, Mapping):
        return []
    errs: list[Cause] = []
    name = pr.as_str(ref.get("name"))
    selector = ref.get("selector")
    if name:
        errs += [invalid(f"{path}.name", name, m) for m in name_is_path_segment(name)]
        if selector is not None:
            errs.append(forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        errs += validate_label_selector(pr.as_dict(selector), f"{path}.selector")
        if name:
            errs.append(forbidden(f"{path}.selector",
                                  "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(required(f"{path}.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        errs.append(not_supported(f"{path}.parameterNotFoundAction", action,
                                  ("Deny", "Allow")))
    return errs


def validate_validation_actions(actions: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[Any] = set()
    for i, a in enumerate(actions):
        if a not in _VALIDATION_ACTIONS:
            errs.append(not_supported(f"{path}[{i}]", a, _VALIDATION_ACTIONS))
        if a in seen:
            errs.append(duplicate(f"{path}[{i}]", a))
        seen.add(a)
    if "Deny" in seen and "Warn" in seen:
        errs.append(invalid(path, actions,
                            "must not contain both Deny and Warn (repeating the same "
                            "validation failure information in the API response and "
                            "headers serves no purpose)"))
    if not seen:
        errs.append(required(path, "at least one validation action is required"))
    return errs


# --- warnings and printers --------------------------------------------------------------

def static_suffix_warnings(obj: Mapping[str, Any]) -> list[str]:
    """WarningsForStaticSuffix."""
    name = pr.as_str(pr.as_dict(obj.get("metadata")).get("name"))
    if name.endswith(STATIC_SUFFIX):
        return [(f'metadata.name: names ending with "{STATIC_SUFFIX}" are reserved for '
                 "static manifest-based configurations and cannot be managed via the API")]
    return []


def not_evaluated_warning(kind: str) -> str:
    """pykcm's own warning on create: the policy machinery is not implemented."""
    return (f"{kind} is stored but never enforced: pykcm's API server does not evaluate the "
            "CEL expressions of admission policies")


def param_kind_cell(spec: Mapping[str, Any]) -> str:
    pk = spec.get("paramKind")
    if not isinstance(pk, Mapping):
        return "<unset>"
    return f"{pr.as_str(pk.get('apiVersion'))}/{pr.as_str(pk.get('kind'))}"


def param_ref_cell(spec: Mapping[str, Any]) -> str:
    """The ParamRef column: ns/name, */name without a namespace, or the selector's Go
    ``String()``."""
    ref = spec.get("paramRef")
    if not isinstance(ref, Mapping):
        return "<unset>"
    name = pr.as_str(ref.get("name"))
    if name:
        ns = pr.as_str(ref.get("namespace"))
        return f"{ns}/{name}" if ns else f"*/{name}"
    if ref.get("selector") is not None:
        return go_label_selector_string(pr.as_dict(ref.get("selector")))
    return "<unset>"
