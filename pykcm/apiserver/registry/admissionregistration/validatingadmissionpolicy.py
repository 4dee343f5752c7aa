"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies (kube-apiserver
``pkg/registry/admissionregistration/validatingadmissionpolicy``): stored, never evaluated.

- defaults: failurePolicy Fail; matchConstraints' matchPolicy Equivalent, empty selectors,
  each rule's scope ``*`` (policy_fields.py);
- validation (messages and field paths as upstream's): the object metadata, failurePolicy,
  paramKind, matchConstraints (required, with at least one resourceRule; rules,
  operations, wildcards, resource names), matchConditions, variables, validations
  (expression required, message and messageExpression non-blank, message on one line,
  reason), auditAnnotations (keys, value expressions, at most 20, no duplicate key), at
  least one validation or audit annotation;
- status split: create stores an empty status (``{}``: a struct without omitempty), the
  main resource keeps the stored status, /status writes only the status (validated: each
  expression warning's warning and fieldRef required; conditions are metav1 Conditions)
  and keeps the metadata as ResetObjectMetaForStatus does;
- generation 1 on create, moved when the spec changes; updates need a resourceVersion;
- warnings on create: the reserved ``.static.k8s.io`` name suffix (as upstream) and
  pykcm's own: the policy is stored but never enforced;
- printer: Name, Validations (their number), ParamKind (``apiVersion/kind`` or
  ``<unset>``), Age.

Deviations: the CEL expressions are neither compiled (no compile errors in the 422) nor
evaluated (no admission control by policies, no type checking in the status); the
authorization of the paramKind is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    duplicate,
    invalid,
    is_qualified_name,
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

__all__ = ["ValidatingAdmissionPolicyStrategy", "validate_policy_status",
           "validate_validation"]

_REASONS: Final = ("Forbidden", "Invalid", "RequestEntityTooLarge")
_MAX_AUDIT_ANNOTATIONS: Final = 20
_MAX_VALUE_EXPRESSION: Final = 5 * 1024


def _has_newlines(s: str) -> bool:
    return "\n" in s or "\r" in s


def validate_validation(v: Mapping[str, Any], path: str) -> list[Cause]:
    """validateValidation without compiling the expressions."""
    errs: list[Cause] = []
    if not pr.as_str(v.get("expression")).strip():
        errs.append(required(f"{path}.expression", "expression is not specified"))
    mexpr = pr.as_str(v.get("messageExpression"))
    if mexpr and not mexpr.strip():
        errs.append(invalid(f"{path}.messageExpression", mexpr, "must be non-empty if "
                                                                "specified"))
    msg = pr.as_str(v.get("message"))
    if msg and not msg.strip():
        errs.append(invalid(f"{path}.message", msg, "must be non-empty if specified"))
    elif _has_newlines(msg.strip()):
        errs.append(invalid(f"{path}.message", msg, "must not contain line breaks"))
    reason = v.get("reason")
    if reason is not None and reason not in _REASONS:
        errs.append(not_supported(f"{path}.reason", reason, _REASONS))
    return errs


def _validate_audit_annotation(name: str, a: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    key = pr.as_str(a.get("key"))
    if name:
        errs += [invalid(f"{path}.key", f"{name}/{key}", m)
                 for m in is_qualified_name(f"{name}/{key}")]
    else:
        errs.append(invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
    value = pr.as_str(a.get("valueExpression")).strip()
    if not value:
        errs.append(required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(value.encode()) > _MAX_VALUE_EXPRESSION:
        errs.append(required(f"{path}.valueExpression",
                             f"must not exceed {_MAX_VALUE_EXPRESSION} bytes in length"))
    return errs


def _validate_spec(name: str, spec: Mapping[str, Any], path: str) -> list[Cause]:
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
    errs += pf.validate_match_conditions(pr.as_list(spec.get("matchConditions")),
                                         f"{path}.matchConditions")
    for i, v in enumerate(pr.as_list(spec.get("variables"))):
        errs += pf.validate_variable(pr.as_dict(v), f"{path}.variables[{i}]")
    validations = pr.as_list(spec.get("validations"))
    audits = pr.as_list(spec.get("auditAnnotations"))
    if not validations and not audits:
        why = "validations or auditAnnotations must contain at least one item"
        return [*errs, required(f"{path}.validations", why),
                required(f"{path}.auditAnnotations", why)]
    for i, v in enumerate(validations):
        errs += validate_validation(pr.as_dict(v), f"{path}.validations[{i}]")
    if len(audits) > _MAX_AUDIT_ANNOTATIONS:
        errs.append(invalid(f"{path}.auditAnnotations", audits,
                            f"must not have more than {_MAX_AUDIT_ANNOTATIONS} "
                            "auditAnnotations"))
    keys: set[str] = set()
    for i, a in enumerate(audits):
        a = pr.as_dict(a)
        errs += _validate_audit_annotation(name, a, f"{path}.auditAnnotations[{i}]")
        key = pr.as_str(a.get("key"))
        if key in keys:
            errs.append(duplicate(f"{path}.auditAnnotations[{i}].key", key))
        keys.add(key)
    return errs


def _validate(obj: Obj) -> list[Cause]:
    meta = pr.as_dict(obj.get("metadata"))
    return (validate_object_meta(meta, namespaced=False)
            + _validate_spec(pr.as_str(meta.get("name")), pr.as_dict(obj.get("spec")), "spec"))


def validate_policy_status(status: Mapping[str, Any]) -> list[Cause]:
    """validateValidatingAdmissionPolicyStatus: the type checking's expression warnings
    (the conditions are checked as metav1 Conditions by the decoder's types)."""
    errs: list[Cause] = []
    tc = status.get("typeChecking")
    for i, w in enumerate(pr.as_list(pr.as_dict(tc).get("expressionWarnings"))):
        w = pr.as_dict(w)
        p = f"status.typeChecking.expressionWarnings[{i}]"
        if not pr.as_str(w.get("warning")):
            errs.append(required(f"{p}.warning"))
        if not pr.as_str(w.get("fieldRef")).strip():
            errs.append(required(f"{p}.fieldRef"))
    return errs


@register
class ValidatingAdmissionPolicyStrategy(AdmissionPolicyStrategy):
    kind = "ValidatingAdmissionPolicy"
    printer = policy_printer(
        "validations", "Validations",
        "Validations indicates the number of validation rules defined"
        " in this configuration")
    # ResetObjectMetaForStatus
    status_keeps_metadata = ("labels", "annotations", "finalizers", "ownerReferences")

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}  # (a struct without omitempty)

    def validate_object(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return (super().validate_status_update(new, old)
                + validate_policy_status(pr.as_dict(new.get("status"))))
