"""What the four admission policy kinds' strategies share (ValidatingAdmissionPolicy,
MutatingAdmissionPolicy and their bindings; upstream's
``pkg/registry/admissionregistration/*admissionpolicy*/strategy.go`` repeat it per kind).

Each kind names its field validation (``validate_object``) and, for the policies, the
default failurePolicy; the defaulting of the match resources, the metadata update
rules and the warnings (the ``.static.k8s.io`` name suffix; on create, that pykcm does
not evaluate the CEL) are the same for all four.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pykcm.api.validation import Cause, validate_object_meta_update
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.admissionregistration import policy_fields as pf
from pykcm.apiserver.registry.strategy import Obj, Strategy


def policy_printer(rules_field: str, title: str, description: str) -> pr.Printer:
    """A policy's columns: Name, the number of its rules (``validations`` or ``mutations``),
    ParamKind, Age."""
    columns = (
        pr.NAME_COLUMN,
        pr.column(title, "integer", description),
        pr.column("ParamKind", "string",
                  "ParamKind specifies the kind of resources used to parameterize this policy"),
        pr.AGE_COLUMN,
    )

    def row(obj: Mapping[str, Any], now: int) -> pr.Row:
        spec = pr.as_dict(obj.get("spec"))
        return pr.Row([pr.object_name(obj), len(pr.as_list(spec.get(rules_field))),
                       pf.param_kind_cell(spec), pr.age(obj, now)])

    return pr.Printer(columns, row)


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
