"""Mutating admission: the default kube-apiserver v1.36 plugins pykcm reproduces.

kube-apiserver runs its mutating admission plugins on a write after the body
is decoded and defaulted and before the object is validated; rest_storage
calls :func:`admit` at that point (create, update; not on subresources).

Reproduced, because clients see their effect on every pod:

- **DefaultTolerationSeconds** (pods, create and update): a pod that does not
  tolerate the ``node.kubernetes.io/not-ready`` / ``unreachable`` NoExecute
  taints gets a toleration of each for 300 s.
- **Priority** (pods): on create ``spec.priority`` and
  ``spec.preemptionPolicy`` come from the PriorityClass; without a class (no
  global default exists here) priority 0 and ``PreemptLowerPriority``. The
  two system classes always exist; scheduling.k8s.io is not served, so any
  other class name is refused as a missing one is. On update a priority left
  out keeps the stored one.

Deliberately not reproduced (see tests/differential/apiserver/allowlist.yaml):
ServiceAccount (it needs the namespace's ``default`` ServiceAccount, which no
controller creates on pykcm's server), TaintNodesByCondition (its not-ready
taint on new Nodes needs the node lifecycle controller to lift it, which
pykcm lacks: the simulated nodes would never take pods), LimitRanger,
ResourceQuota and PodSecurity (their objects are not served).
"""

from __future__ import annotations

from typing import Any, Final

from pykcm.api.resources import ResourceInfo
from pykcm.apiserver import errors

__all__ = ["admit"]

DEFAULT_TOLERATION_SECONDS: Final = 300
NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"

# scheduling.k8s.io's built-in PriorityClasses: name -> (value, preemptionPolicy)
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": (2000001000, "PreemptLowerPriority"),
    "system-cluster-critical": (2000000000, "PreemptLowerPriority"),
}


def admit(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
          subresource: str = "") -> None:
    """Run the mutating plugins on `obj` (old is None on create); raises StatusError."""
    if info.group or info.kind != "Pod" or subresource:
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    _default_toleration_seconds(spec)
    _priority(spec, obj, old)


def _default_toleration_seconds(spec: dict[str, Any]) -> None:
    tolerations = spec.get("tolerations")
    items = [t for t in tolerations if isinstance(t, dict)] if isinstance(tolerations, list) \
        else []
    not_ready = unreachable = False
    for t in items:
        key, effect = t.get("key") or "", t.get("effect") or ""
        if effect in ("NoExecute", ""):
            not_ready = not_ready or key in (NOT_READY, "")
            unreachable = unreachable or key in (UNREACHABLE, "")
    added = [{"key": k, "operator": "Exists", "effect": "NoExecute",
              "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for k, tolerated in ((NOT_READY, not_ready), (UNREACHABLE, unreachable))
             if not tolerated]
    if added:
        spec["tolerations"] = [*(tolerations if isinstance(tolerations, list) else []), *added]


def _priority(spec: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    if old is not None:
        old_spec = old.get("spec") or {}
        for k in ("priority", "preemptionPolicy"):
            if spec.get(k) is None and old_spec.get(k) is not None:
                spec[k] = old_spec[k]
        return
    class_name = spec.get("priorityClassName") or ""
    if class_name:
        if class_name not in SYSTEM_PRIORITY_CLASSES:
            raise _forbidden(obj, f"no PriorityClass with name {class_name} was found")
        value, policy = SYSTEM_PRIORITY_CLASSES[class_name]
    else:
        value, policy = 0, "PreemptLowerPriority"
    given = spec.get("priority")
    if given is not None and given != value:
        raise _forbidden(obj, f"the integer value of priority ({given}) must not be provided in "
                              "pod spec; priority admission controller computed "
                              f"{value} from the given PriorityClass name")
    spec["priority"] = value
    given_policy = spec.get("preemptionPolicy")
    if given_policy is not None and given_policy != policy:
        raise _forbidden(obj, f"the string value of PreemptionPolicy ({given_policy}) must not "
                              "be provided in pod spec; priority admission controller computed "
                              f"{policy} from the given PriorityClass name")
    spec["preemptionPolicy"] = policy


def _forbidden(obj: dict[str, Any], why: str) -> errors.StatusError:
    name = str((obj.get("metadata") or {}).get("name") or "")
    return errors.forbidden("pods", "", name, why)
