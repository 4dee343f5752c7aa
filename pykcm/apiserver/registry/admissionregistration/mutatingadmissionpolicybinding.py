"""admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBindings (kube-apiserver
``pkg/registry/admissionregistration/mutatingadmissionpolicybinding``): stored, never
enforced.

- defaults: matchResources' matchPolicy Equivalent, empty selectors, rule scope ``*``;
- validation (messages and field paths as upstream's): the object metadata, policyName,
  paramRef, matchResources (only CREATE, UPDATE, CONNECT or ``*`` operations); no
  validationActions (a mutating binding has none);
- generation 1 on create, moved when the spec changes; updates need a resourceVersion;
- warnings on create: the reserved ``.static.k8s.io`` suffix, and that nothing enforces it;
- printer: the validating bindings' (Name, PolicyName, ParamRef, Age).

Deviations: never enforced; the paramKind authorization check is not made.
"""

from __future__ import annotations

from pykcm.api.validation import Cause, validate_object_meta
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.admissionregistration import policy_fields as pf
from pykcm.apiserver.registry.admissionregistration.policy_strategy import AdmissionPolicyStrategy
from pykcm.apiserver.registry.admissionregistration.validatingadmissionpolicybinding import (
    BINDING_COLUMNS,
    binding_row,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj

__all__ = ["MutatingAdmissionPolicyBindingStrategy"]


def _validate(obj: Obj) -> list[Cause]:
    spec = pr.as_dict(obj.get("spec"))
    errs = (validate_object_meta(obj.get("metadata"), namespaced=False)
            + pf.validate_policy_name(spec, "spec")
            + pf.validate_param_ref(spec.get("paramRef"), "spec.paramRef")
            + pf.validate_match_resources(spec.get("matchResources"), "spec.matchResources"))
    if spec.get("matchResources") is not None:
        errs += pf.validate_mutating_operations(spec.get("matchResources"),
                                                "spec.matchResources")
    return errs


@register
class MutatingAdmissionPolicyBindingStrategy(AdmissionPolicyStrategy):
    kind = "MutatingAdmissionPolicyBinding"
    match_field = "matchResources"
    default_failure_policy = None
    printer = pr.Printer(BINDING_COLUMNS, binding_row)

    def validate_object(self, obj: Obj) -> list[Cause]:
        return _validate(obj)
