"""What the four admission policy kinds' strategies share (ValidatingAdmissionPolicy,
MutatingAdmissionPolicy and their bindings; upstream's
``pkg/registry/admissionregistration/*admissionpolicy*/strategy.go`` repeat it per kind).

Each kind names its field validation (``validate_object``) and, for the policies, the
default failurePolicy; the defaulting of the match resources, the metadata update
rules and the warnings (the ``.static.k8s.io`` name suffix; on create, that pykcm does
not evaluate the CEL) are the same for all four.
"""

from __future__ import annotations

from typing import ClassVar

from pykcm.api.validation import Cause, validate_object_meta_update
from pykcm.apiserver.registry.admissionregistration import policy_fields as pf
from pykcm.apiserver.registry.strategy import Obj, Strategy


class AdmissionPolicyStrategy(Strategy):
    """Base of the four admission policy strategies (not registered itself)."""

    group = "admissionregistration.k8s.io"
    has_update_warnings = True
    match_field: ClassVar[str] = "matchConstraints"
    """Where the match resources are: ``matchConstraints`` (policies) or ``matchResources``
    (bindings)."""
    default_failure_policy: ClassVar[str | None] = "Fail"
    """The policies' failurePolicy default; None for the bindings, which have none."""

    def validate_object(self, obj: Obj) -> list[Cause]:
        """The kind's own validation of a whole object (metadata and spec)."""
        raise NotImplementedError

    def default(self, obj: Obj, *, create: bool) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            if self.default_failure_policy is not None:
                spec.setdefault("failurePolicy", self.default_failure_policy)
            pf.default_match_resources(spec.get(self.match_field))

    def validate_create(self, obj: Obj) -> list[Cause]:
        return self.validate_object(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate_object(new) + validate_object_meta_update(new.get("metadata"),
                                                                        old.get("metadata"))

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return [*pf.static_suffix_warnings(obj), pf.not_evaluated_warning(self.kind)]

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return pf.static_suffix_warnings(new)
