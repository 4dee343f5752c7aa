"""Admission plugin Priority (kube-apiserver ``plugin/pkg/admission/priority``) over the stored
scheduling.k8s.io/v1 PriorityClasses.

- pods, create: ``spec.priorityClassName`` names the class whose ``value`` becomes
  ``spec.priority`` and whose ``preemptionPolicy`` becomes ``spec.preemptionPolicy``; a
  pod without a class gets the global default class (its name too; the lowest value when
  several are marked) or, without one, priority 0 and ``PreemptLowerPriority``. A class
  that does not exist is refused: 403 ``no PriorityClass with name X was found``; a
  priority or preemption policy the pod gives that differs from the computed one is
  refused with upstream's messages;
- pods, update: a priority or preemption policy left out keeps the stored one;
- PriorityClasses, create and update (the plugin's validating half): a second
  ``globalDefault`` class is refused, 403 ``PriorityClass X is already marked as default.
  Only one default can exist``.

Subresource writes are not admitted, as upstream. Data flow: rest_storage calls
:func:`admit_pod` and :func:`validate_priority_class` with a :data:`ClassLookup` over its
committed PriorityClasses (the plugin's informer lister).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from pykcm.apiserver import errors

__all__ = ["ClassLookup", "admit_pod", "validate_priority_class"]

# The stored PriorityClasses (name -> object, as the plugin's lister lists them).
ClassLookup = Callable[[], Iterable[dict[str, Any]]]

DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS: Final = 0
PREEMPT_LOWER_PRIORITY: Final = "PreemptLowerPriority"


def _default_class(classes: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """getDefaultPriorityClass: the globalDefault class of the lowest value."""
    found: dict[str, Any] | None = None
    for pc in classes:
        if pc.get("globalDefault") is True and (
                found is None or int(found.get("value") or 0) > int(pc.get("value") or 0)):
            found = pc
    return found


def _class_name(pc: dict[str, Any]) -> str:
    return str((pc.get("metadata") or {}).get("name") or "")


def admit_pod(obj: dict[str, Any], old: dict[str, Any] | None, classes: ClassLookup,
              name: str) -> None:
    """Set (create) or keep (update) a pod's priority; raises the plugin's 403s. ``name`` is
    the name errors give (the requested name or generateName)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if old is not None:
        old_spec = old.get("spec") or {}
        for key in ("priority", "preemptionPolicy"):
            if spec.get(key) is None and old_spec.get(key) is not None:
                spec[key] = old_spec[key]
        return
    requested = spec.get("priorityClassName") or ""
    if requested:
        pc = next((c for c in classes() if _class_name(c) == requested), None)
        if pc is None:
            raise _forbidden(name, f"no PriorityClass with name {requested} was found")
        class_name, value, policy = requested, int(pc.get("value") or 0), pc.get("preemptionPolicy")
    else:
        pc = _default_class(classes())
        if pc is not None:
            class_name, value = _class_name(pc), int(pc.get("value") or 0)
            policy = pc.get("preemptionPolicy")
        else:
            class_name, value = "", DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS
            policy = PREEMPT_LOWER_PRIORITY
    if class_name:
        spec["priorityClassName"] = class_name
    given = spec.get("priority")
    if given is not None and given != value:
        raise _forbidden(name, f"the integer value of priority ({given}) must not be provided "
                               f"in pod spec; priority admission controller computed {value} "
                               "from the given PriorityClass name")
    spec["priority"] = value
    if policy is not None:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise _forbidden(name, f"the string value of PreemptionPolicy ({given_policy}) must "
                                   "not be provided in pod spec; priority admission controller "
                                   f"computed {policy} from the given PriorityClass name")
        spec["preemptionPolicy"] = policy


def validate_priority_class(obj: dict[str, Any], creating: bool, classes: ClassLookup) -> None:
    """Only one globalDefault class; raises the plugin's 403."""
    if obj.get("globalDefault") is not True:
        return
    current = _default_class(classes())
    if current is None:
        return
    name = _class_name(obj)
    if creating or _class_name(current) != name:
        raise errors.forbidden("priorityclasses", "scheduling.k8s.io", name,
                               f"PriorityClass {_class_name(current)} is already marked as "
                               "default. Only one default can exist")


def _forbidden(name: str, why: str) -> errors.StatusError:
    return errors.forbidden("pods", "", name, why)
