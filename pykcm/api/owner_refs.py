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

from collections.abc import Mapping
from typing import Any

__all__ = [
    "api_group",
    "get_controller_of",
    "is_controlled_by",
    "new_controller_ref",
    "owner_references",
]


def api_group(api_version: str) -> str:
    """The group of an ``apiVersion`` ("" for core ``v1``, ``apps`` for ``apps/v1``)."""
    group, sep, _ = api_version.rpartition("/")
    return group if sep else ""


def owner_references(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The object's ownerReferences (an empty list when it has none)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    return list(refs) if refs else []


def get_controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true``, or None (metav1.GetControllerOf)."""
    # Hot (claims and indexers call it for every cached object): no list copy.
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
