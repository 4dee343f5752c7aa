"""scheduling.k8s.io/v1 PriorityClasses (kube-apiserver ``pkg/registry/scheduling/priorityclass``,
``pkg/apis/scheduling``): defaults, validation, printer, the system classes.

- defaults: ``preemptionPolicy`` ``PreemptLowerPriority``;
- create: generation 1 (never moved after: the kind has no spec);
- validation: a name with the ``system-`` prefix must be one of the system classes with
  its value and globalDefault; other classes' value at most one billion;
  ``preemptionPolicy`` one of ``Never``/``PreemptLowerPriority``; on update ``value`` and
  ``preemptionPolicy`` are immutable;
- the system classes (:data:`SYSTEM_PRIORITY_CLASSES`) are created when the server starts
  (:func:`system_priority_classes`) and refused deletion with upstream's 403
  (:func:`system_class_delete_error`);
- printer: Name, Value, Global-Default, Age, PreemptionPolicy.

The Priority admission plugin that uses these classes (pods' priority, one global
default) is ``pykcm/apiserver/admission/priority.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    not_supported,
    validate_immutable,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.defaulting import set_default
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_int,
    as_str,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = [
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "PREEMPTION_POLICIES",
    "SYSTEM_PRIORITY_CLASSES",
    "PriorityClassStrategy",
    "system_class_delete_error",
    "system_priority_classes",
]

SYSTEM_PREFIX: Final = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
# (in the order upstream's "supported values" lists them)
PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
# name -> (value, description), in the order kube-apiserver creates them
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": (
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node."),
    "system-cluster-critical": (
        2_000_000_000,
        ("Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.")),
}


def system_priority_classes() -> list[Obj]:
    """The PriorityClasses kube-apiserver creates at start (its scheduling post-start hook)."""
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name}, "value": value, "description": description,
             "preemptionPolicy": "PreemptLowerPriority"}
            for name, (value, description) in SYSTEM_PRIORITY_CLASSES.items()]


def system_class_delete_error(name: str) -> str | None:
    """Why a DELETE of ``name`` is refused (403), None when it may go."""
    if name in SYSTEM_PRIORITY_CLASSES:
        return "this is a system priority class and cannot be deleted"
    return None


def _system_class_error(name: str, value: Any, global_default: bool) -> str | None:
    """IsKnownSystemPriorityClass's error."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def _validate(obj: Obj) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    name = object_name(obj)
    value = as_int(obj.get("value"))
    if name.startswith(SYSTEM_PREFIX):
        why = _system_class_error(name, value, obj.get("globalDefault") is True)
        if why is not None:
            errs.append(forbidden("metadata.name",
                                  f"priority class names with '{SYSTEM_PREFIX}' prefix are "
                                  f"reserved for system use only. error: {why}"))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(forbidden("value", "maximum allowed value of a user defined priority is "
                                       f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errs.append(not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return errs


_COLUMNS: Final = (
    NAME_COLUMN,
    column("Value", "integer",
           "value represents the integer value of this priority class. This is the actual "
           "priority that pods receive when they have the name of this class in their pod "
           "spec."),
    column("Global-Default", "boolean",
           "globalDefault specifies whether this PriorityClass should be considered as the "
           "default priority for pods that do not have any priority class. Only one "
           "PriorityClass can be marked as `globalDefault`. However, if more than one "
           "PriorityClasses exists with their `globalDefault` field set to true, the smallest "
           "value of such global default PriorityClasses will be used as the default "
           "priority."),
    AGE_COLUMN,
    column("PreemptionPolicy", "string",
           "preemptionPolicy is the Policy for preempting pods with lower priority. One of "
           "Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."),
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    # kube-apiserver prints with the wide option: the PreemptionPolicy cell is always there
    return Row([object_name(obj), as_int(obj.get("value")), obj.get("globalDefault") is True,
                age(obj, now), as_str(obj.get("preemptionPolicy"))])


@register
class PriorityClassStrategy(Strategy):
    group = "scheduling.k8s.io"
    kind = "PriorityClass"
    printer = Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        set_default(obj, "preemptionPolicy", "PreemptLowerPriority")

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        return False  # upstream's PrepareForUpdate leaves the generation alone

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        if new.get("value") != old.get("value"):
            errs.append(forbidden("value", "may not be changed in an update."))
        errs += validate_immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"),
                                   "preemptionPolicy")
        return errs
