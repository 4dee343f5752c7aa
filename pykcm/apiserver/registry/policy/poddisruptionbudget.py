"""policy/v1 PodDisruptionBudgets (kube-apiserver ``pkg/registry/policy/poddisruptionbudget``
and ``pkg/apis/policy/validation``): create and update rules, validation, printer.

- create: the status is reset to the zero status (``currentHealthy``, ``desiredHealthy``,
  ``disruptionsAllowed``, ``expectedPods`` 0: the Go struct's non-omitempty fields, as
  kube-apiserver stores them), generation 1;
- update: the status is kept, the generation moves with the spec; a /status write keeps
  the spec;
- validation: any name that fits a URL path segment (the strategy validates no metadata;
  kube-apiserver's generic checks hold names only to that); ``minAvailable`` and ``maxUnavailable`` not both (the spec shown as the Go
  internal struct's JSON, as kube-apiserver's message does), each a non-negative int or a
  percentage of at most 100%, the selector, ``unhealthyPodEvictionPolicy`` one of
  ``AlwaysAllow``/``IfHealthyBudget``; an update accepts label values the old selector
  already had wrong (AllowInvalidLabelValueInSelector); /status writes: the conditions
  (metav1 ValidateConditions) and the four counts non-negative;
- printer: Name, Min Available, Max Unavailable (``N/A`` when unset), Allowed Disruptions,
  Age (``kubectl get pdb``).

No defaults (policy/v1 sets none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    duplicate,
    go_int_or_string,
    go_label_selector,
    invalid,
    name_is_path_segment,
    not_supported,
    regex_error,
    required,
    too_long,
    validate_label_selector,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_int,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy
from pykcm.apiserver.registry.validation import (
    not_more_than_100_percent,
    validate_positive_int_or_percent,
)

__all__ = ["PodDisruptionBudgetStrategy", "validate_conditions", "validate_pdb_spec"]

UNHEALTHY_POD_EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")
ZERO_STATUS: Final = {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0,
                      "expectedPods": 0}
_STATUS_COUNTS: Final = ("disruptionsAllowed", "currentHealthy", "desiredHealthy",
                         "expectedPods")


def _go_spec(spec: Mapping[str, Any]) -> GoValue:
    """The internal PodDisruptionBudgetSpec as field.Invalid prints it: json.Marshal of a
    struct without json tags (Go field names, declaration order; nil pointers null)."""
    def ios(v: Any) -> str:
        return "null" if v is None else str(go_int_or_string(v))
    sel = spec.get("selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    return GoValue(
        f'{{"MinAvailable":{ios(spec.get("minAvailable"))},'
        f'"Selector":{go_label_selector(sel if isinstance(sel, dict) else None)},'
        f'"MaxUnavailable":{ios(spec.get("maxUnavailable"))},'
        f'"UnhealthyPodEvictionPolicy":{json.dumps(policy, ensure_ascii=False)}}}')


def validate_pdb_spec(spec: Mapping[str, Any], *,
                      allow_invalid_label_value: bool = False) -> list[Cause]:
    """ValidatePodDisruptionBudgetSpec under ``spec``."""
    errs: list[Cause] = []
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errs.append(invalid("spec", _go_spec(spec),
                            "minAvailable and maxUnavailable cannot be both set"))
    for key, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            errs += validate_positive_int_or_percent(value, f"spec.{key}")
            errs += not_more_than_100_percent(value, f"spec.{key}")
    sel = spec.get("selector")
    errs += validate_label_selector(sel if isinstance(sel, dict) else None, "spec.selector",
                                    allow_invalid_label_value=allow_invalid_label_value)
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(not_supported("spec.unhealthyPodEvictionPolicy", policy,
                                  UNHEALTHY_POD_EVICTION_POLICIES))
    return errs


_REASON_FMT: Final = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_RE: Final = re.compile(f"^{_REASON_FMT}$")
_REASON_MSG: Final = regex_error(
    "a condition reason must start with alphabetic character, optionally followed by a string "
    "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
    _REASON_FMT, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")


def validate_conditions(conditions: Any, path: str) -> list[Cause]:
    """metav1 ValidateConditions of a ``[]metav1.Condition``."""
    from pykcm.api.validation import is_qualified_name

    errs: list[Cause] = []
    seen: set[str] = set()
    for i, c in enumerate(conditions if isinstance(conditions, list) else []):
        c = as_dict(c)
        p = f"{path}[{i}]"
        ctype = str(c.get("type") or "")
        if ctype in seen:
            errs.append(duplicate(f"{p}.type", ctype))
        seen.add(ctype)
        errs += [invalid(f"{p}.type", ctype, m) for m in is_qualified_name(ctype)]
        status = str(c.get("status") or "")
        if status not in ("False", "True", "Unknown"):
            errs.append(not_supported(f"{p}.status", status, ("False", "True", "Unknown")))
        if as_int(c.get("observedGeneration")) < 0:
            errs.append(invalid(f"{p}.observedGeneration", as_int(c.get("observedGeneration")),
                                "must be greater than or equal to zero"))
        if not c.get("lastTransitionTime"):
            errs.append(required(f"{p}.lastTransitionTime"))
        reason = str(c.get("reason") or "")
        if not reason:
            errs.append(required(f"{p}.reason"))
        else:
            if not _REASON_RE.match(reason):
                errs.append(invalid(f"{p}.reason", reason, _REASON_MSG))
            if len(reason) > 1024:
                errs.append(too_long(f"{p}.reason", 1024))
        if len(str(c.get("message") or "")) > 32 * 1024:
            errs.append(too_long(f"{p}.message", 32 * 1024))
    return errs


def _int_or_na(v: Any) -> str:
    return "N/A" if v is None else str(v)


_COLUMNS: Final = (
    NAME_COLUMN,
    column("Min Available", "string", "The minimum number of pods that must be available."),
    column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    column("Allowed Disruptions", "integer",
           "Calculated number of pods that may be disrupted at this time."),
    AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    spec = as_dict(obj.get("spec"))
    return Row([object_name(obj), _int_or_na(spec.get("minAvailable")),
                _int_or_na(spec.get("maxUnavailable")),
                as_int(as_dict(obj.get("status")).get("disruptionsAllowed")), age(obj, now)])


@register
class PodDisruptionBudgetStrategy(Strategy):
    group = "policy"
    kind = "PodDisruptionBudget"
    printer = Printer(_COLUMNS, _row)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = dict(ZERO_STATUS)

    def validate_create(self, obj: Obj) -> list[Cause]:
        # upstream's strategy validates the spec only; the generic BeforeCreate then checks
        # the metadata with names held only to path-segment rules (any other name is fine)
        # (a separate 422 after the spec's: BeforeCreate returns the first failing step)
        return validate_pdb_spec(as_dict(obj.get("spec"))) or validate_object_meta(
            obj.get("metadata"), namespaced=True, name_validator=name_is_path_segment)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        old_sel = as_dict(old.get("spec")).get("selector")
        allow = isinstance(old_sel, dict) and bool(validate_label_selector(old_sel, ""))
        return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
                + validate_pdb_spec(as_dict(new.get("spec")), allow_invalid_label_value=allow))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        status = as_dict(new.get("status"))
        errs = super().validate_status_update(new, old)
        errs += validate_conditions(status.get("conditions"), "status.conditions")
        for key in _STATUS_COUNTS:
            errs += validate_nonnegative(as_int(status.get(key)), f"status.{key}")
        return errs
