"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBindings (kube-apiserver
``pkg/registry/admissionregistration/validatingadmissionpolicybinding``): stored, never
enforced.

- defaults: matchResources' matchPolicy Equivalent, empty selectors, rule scope ``*``;
- validation (messages and field paths as upstream's): the object metadata, policyName
  (required, a DNS subdomain), paramRef (name or selector, not both; name a path segment;
  parameterNotFoundAction Deny or Allow), matchResources, validationActions (Deny, Warn,
  Audit; no duplicates; not both Deny and Warn; at least one);
- generation 1 on create, moved when the spec changes; updates need a resourceVersion;
- warnings on create: the reserved ``.static.k8s.io`` suffix, and that nothing enforces it;
- printer: Name, PolicyName, ParamRef (``ns/name``, ``*/name``, the selector's Go
  ``String()`` or ``<unset>``), Age.

Deviations: the binding is never enforced; the authorization check of the referenced
policy's paramKind is not made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import Cause, validate_object_meta
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.admissionregistration import policy_fields as pf
from pykcm.apiserver.registry.admissionregistration.policy_strategy import AdmissionPolicyStrategy
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj

__all__ = ["BINDING_COLUMNS", "ValidatingAdmissionPolicyBindingStrategy", "binding_row"]


def _validate(obj: Obj) -> list[Cause]:
    spec = pr.as_dict(obj.get("spec"))
    return (validate_object_meta(obj.get("metadata"), namespaced=False)
            + pf.validate_policy_name(spec, "spec")
            + pf.validate_param_ref(spec.get("paramRef"), "spec.paramRef")
            + pf.validate_match_resources(spec.get("matchResources"), "spec.matchResources")
            + pf.validate_validation_actions(pr.as_list(spec.get("validationActions")),
                                             "spec.validationActions"))


BINDING_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("PolicyName", "string",
              "PolicyName indicates the policy definition which the policy binding binded to"),
    pr.column("ParamRef", "string",
              "ParamRef indicates the param resource which sets the configuration param"),
    pr.AGE_COLUMN,
)


def binding_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    """The row of either kind of policy binding."""
    spec = pr.as_dict(obj.get("spec"))
    return pr.Row([pr.object_name(obj), pr.as_str(spec.get("policyName")),
                   pf.param_ref_cell(spec), pr.age(obj, now)])


@register
class ValidatingAdmissionPolicyBindingStrategy(AdmissionPolicyStrategy):
    kind = "ValidatingAdmissionPolicyBinding"
    match_field = "matchResources"
    default_failure_policy = None
    printer = pr.Printer(BINDING_COLUMNS, binding_row)

    def validate_object(self, obj: Obj) -> list[Cause]:
        return _validate(obj)
