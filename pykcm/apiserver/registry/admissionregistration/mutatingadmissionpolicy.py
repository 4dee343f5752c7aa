"""admissionregistration.k8s.io/v1 MutatingAdmissionPolicies (kube-apiserver
``pkg/registry/admissionregistration/mutatingadmissionpolicy``; v1 and served by default
in v1.36): stored, never evaluated.

- defaults: failurePolicy Fail; matchConstraints' matchPolicy Equivalent, empty selectors,
  rule scope ``*``;
- validation (messages and field paths as upstream's): the object metadata, failurePolicy,
  paramKind, matchConstraints (required, at least one resourceRule, only CREATE, UPDATE,
  CONNECT or ``*`` operations), matchConditions, variables, mutations (at least one;
  patchType ApplyConfiguration or JSONPatch with its own expression required and the other
  one absent), reinvocationPolicy (required: Never or IfNeeded; no default in v1);
- no status; generation 1 on create, moved when the spec changes; updates need a
  resourceVersion;
- warnings on create: the reserved ``.static.k8s.io`` suffix, and that nothing evaluates it;
- printer: Name, Mutations (their number), ParamKind, Age.

Deviations: the CEL expressions are neither compiled nor evaluated (no mutation happens).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    invalid,
    not_supported,
    required,
    validate_object_meta,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.admissionregistration import policy_fields as pf
from pykcm.apiserver.registry.admissionregistration.policy_strategy import (
    AdmissionPolicyStrategy,
    policy_printer,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj

__all__ = ["MutatingAdmissionPolicyStrategy"]

_PATCH_TYPES: Final = ("ApplyConfiguration", "JSONPatch")
_REINVOCATION: Final = ("IfNeeded", "Never")
# patchType -> (its field, the other one's)
_PATCH_FIELDS: Final = {"ApplyConfiguration": ("applyConfiguration", "jsonPatch"),
                        "JSONPatch": ("jsonPatch", "applyConfiguration")}


def _validate_mutation(m: Mapping[str, Any], path: str) -> list[Cause]:
    patch_type = m.get("patchType")
    if not patch_type:
        return [required(f"{path}.patchType")]
    if patch_type not in _PATCH_FIELDS:
        return [not_supported(f"{path}.patchType", patch_type, _PATCH_TYPES)]
    own, other = _PATCH_FIELDS[patch_type]
    errs: list[Cause] = []
    body = m.get(own)
    if not isinstance(body, Mapping):
        errs.append(required(f"{path}.{own}", f"must be specified when patchType is "
                                              f"{patch_type}"))
    elif not pr.as_str(body.get("expression")).strip():
        errs.append(required(f"{path}.{own}.expression"))
    if m.get(other) is not None:
        errs.append(invalid(f"{path}.{other}", f"{{{other}}}",
                            f"must not be specified when patchType is {patch_type}"))
    return errs


def _validate_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    errs = pf.validate_failure_policy(spec, path)
    if isinstance(spec.get("paramKind"), Mapping):
        errs += pf.validate_param_kind(spec["paramKind"], f"{path}.paramKind")
    mc = spec.get("matchConstraints")
    if not isinstance(mc, Mapping):
        errs.append(required(f"{path}.matchConstraints"))
    else:
        errs += pf.validate_match_resources(mc, f"{path}.matchConstraints")
        if not pr.as_list(mc.get("resourceRules")):
            errs.append(required(f"{path}.matchConstraints.resourceRules"))
        errs += pf.validate_mutating_operations(mc, f"{path}.matchConstraints")
    errs += pf.validate_match_conditions(pr.as_list(spec.get("matchConditions")),
                                         f"{path}.matchConditions")
    for i, v in enumerate(pr.as_list(spec.get("variables"))):
        errs += pf.validate_variable(pr.as_dict(v), f"{path}.variables[{i}]")
    mutations = pr.as_list(spec.get("mutations"))
    if not mutations:
        errs.append(required(f"{path}.mutations", "mutations must contain at least one item"))
    for i, m in enumerate(mutations):
        errs += _validate_mutation(pr.as_dict(m), f"{path}.mutations[{i}]")
    policy = spec.get("reinvocationPolicy")
    if not policy:
        errs.append(required(f"{path}.reinvocationPolicy"))
    elif policy not in _REINVOCATION:
        errs.append(not_supported(f"{path}.reinvocationPolicy", policy, _REINVOCATION))
    return errs


def _validate(obj: Obj) -> list[Cause]:
    return (validate_object_meta(obj.get("metadata"), namespaced=False)
            + _validate_spec(pr.as_dict(obj.get("spec")), "spec"))


@register
class MutatingAdmissionPolicyStrategy(AdmissionPolicyStrategy):
    kind = "MutatingAdmissionPolicy"
    printer = policy_printer(
        "mutations", "Mutations",
        "Mutation indicates the number of mutations rules defined in "
        "this configuration")

    def validate_object(self, obj: Obj) -> list[Cause]:
        return _validate(obj)
