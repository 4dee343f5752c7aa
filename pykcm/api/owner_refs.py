"""Owner references and controller references (apimachinery ``metav1`` helpers).

An object's ``metadata.ownerReferences`` names the objects it depends on; at
most one of them has ``controller: true``, its *controller reference*: the
controller that manages it (a ReplicaSet for its pods, a Deployment for its
ReplicaSets). Controllers use these helpers to find the owner of an object
(``get_controller_of``), to build the reference they stamp on what they create
(``new_controller_ref``), and the garbage collector reads the rest.

Objects are the JSON wire form (dicts); nothing here mutates its argument.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "api_group",
    "generic_controller_of",
    "get_controller_of",
    "is_controlled_by",
    "new_controller_ref",
    "owner_references",
    "register_controller_of",
]


def api_group(api_version: str) -> str:
    """The group of an ``apiVersion`` ("" for core ``v1``, ``apps`` for ``apps/v1``)."""
    group, sep, _ = api_version.rpartition("/")
    return group if sep else ""


def owner_references(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The object's ownerReferences (an empty list when it has none)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    return list(refs) if refs else []


# Faster get_controller_of for a type of object (same answer, read without the Mapping
# protocol): registered by the module that defines the type (pykcm.cache's compact
# objects), so that this layer does not import it.
_CONTROLLER_OF_BY_TYPE: dict[type, Callable[[Any], Mapping[str, Any] | None]] = {}


def register_controller_of(t: type, controller_of: Callable[[Any], Mapping[str, Any] | None]
                           ) -> None:
    """Make ``get_controller_of`` answer ``controller_of(obj)`` for objects of type ``t``
    (which must give the same answer as the generic reading, only faster)."""
    _CONTROLLER_OF_BY_TYPE[t] = controller_of


def get_controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true``, or None (metav1.GetControllerOf)."""
    # Hot (every pod handler of every workload controller, claims and indexers call it
    # for every cached object): no list copy; compact cached objects take their own path.
    fast = _CONTROLLER_OF_BY_TYPE.get(type(obj))
    if fast is not None:
        return fast(obj)
    return generic_controller_of(obj)


def generic_controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """get_controller_of through the Mapping protocol alone (what a fast path falls back to)."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if meta else None
    if refs:
        ref: Mapping[str, Any]
        for ref in refs:
            if ref.get("controller"):
                return ref
    return None


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether ``obj``'s controller reference points at ``owner`` (same UID)."""
    ref = get_controller_of(obj)
    uid = (owner.get("metadata") or {}).get("uid")
    return ref is not None and uid is not None and ref.get("uid") == uid


def new_controller_ref(owner: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The controller reference to ``owner`` (metav1.NewControllerRef).

    ``blockOwnerDeletion`` is true, so foreground deletion of the owner waits
    for the dependent, as upstream sets it.
    """
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
