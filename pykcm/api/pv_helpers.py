"""Which PersistentVolume a claim binds to (upstream ``persistentvolume/index.go`` and
``component-helpers/storage/volume``'s ``FindMatchingVolume``).

Pure functions over wire dicts, used by the binder's claim sync:

    claim, volumes ── find_matching_volume ──► the volume to bind, or None

A volume matches a claim when it is not being deleted, has the claim's
storage class ("" only matches "") and volume mode, offers every access mode
the claim asks for, matches the claim's selector and has at least the
requested capacity. A volume already pre-bound to this claim (claimRef of
its namespace/name, and uid when set) wins at once; a volume pre-bound to
another claim, or bound, is skipped. Of the rest the smallest sufficient one
is chosen (ties: the first by name, so the answer is deterministic).

Deviations: node affinity is not checked against a selected node (the
binder here does not do delayed binding of pre-provisioned local volumes);
a class with ``volumeBindingMode: WaitForFirstConsumer`` is handled by the
controller, which waits for ``volume.kubernetes.io/selected-node``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.api.quantity import parse_quantity

__all__ = ["BETA_STORAGE_CLASS_ANNOTATION", "access_modes_contain", "claim_class",
           "claim_request", "find_matching_volume", "is_volume_bound_to_claim", "volume_class"]

BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"

Obj = Mapping[str, Any]


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _annotations(obj: Obj) -> Mapping[str, Any]:
    return _m(_m(obj.get("metadata")).get("annotations"))


def claim_class(claim: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName."""
    beta = _annotations(claim).get(BETA_STORAGE_CLASS_ANNOTATION)
    if beta is not None:
        return str(beta)
    return str(_m(claim.get("spec")).get("storageClassName") or "")


def volume_class(volume: Obj) -> str:
    """GetPersistentVolumeClass: the beta annotation, else spec.storageClassName."""
    beta = _annotations(volume).get(BETA_STORAGE_CLASS_ANNOTATION)
    if beta is not None:
        return str(beta)
    return str(_m(volume.get("spec")).get("storageClassName") or "")


def claim_request(claim: Obj) -> Decimal:
    """resources.requests.storage of a claim (0 when missing or malformed)."""
    q = _m(_m(_m(claim.get("spec")).get("resources")).get("requests")).get("storage")
    return parse_quantity(q) or Decimal(0)


def _capacity(volume: Obj) -> Decimal:
    return parse_quantity(_m(_m(volume.get("spec")).get("capacity")).get("storage")) or Decimal(0)


def access_modes_contain(offered: Iterable[str], requested: Iterable[str]) -> bool:
    """Every requested access mode is offered (CheckAccessModes)."""
    have = set(offered)
    return all(m in have for m in requested)


def _mode(spec: Mapping[str, Any]) -> str:
    return str(spec.get("volumeMode") or "Filesystem")


def is_volume_bound_to_claim(volume: Obj, claim: Obj) -> bool:
    """The volume's claimRef names this claim (and its uid, when the ref has one)."""
    ref = _m(_m(volume.get("spec")).get("claimRef"))
    meta = _m(claim.get("metadata"))
    if not ref or ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get(
            "namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def _selector_matches(claim: Obj, volume: Obj) -> bool:
    sel = _m(claim.get("spec")).get("selector")
    if sel is None:
        return True
    try:
        compiled = selector_from_label_selector(_m(sel))
    except SelectorParseError:
        return False
    return bool(compiled.matches(_m(_m(volume.get("metadata")).get("labels"))))


def find_matching_volume(claim: Obj, volumes: Iterable[Obj]) -> Obj | None:
    """The volume the claim should bind to, or None (see the module docstring)."""
    cspec = _m(claim.get("spec"))
    requested = claim_request(claim)
    modes = [str(m) for m in cspec.get("accessModes") or []]
    cls = claim_class(claim)
    best: Obj | None = None
    best_key: tuple[Decimal, str] | None = None
    for volume in volumes:
        vmeta = _m(volume.get("metadata"))
        vspec = _m(volume.get("spec"))
        if vmeta.get("deletionTimestamp"):
            continue
        if _mode(vspec) != _mode(cspec):
            continue
        if is_volume_bound_to_claim(volume, claim):
            # pre-bound (by a user or a provisioner) to this very claim: it wins, if it fits
            if (_capacity(volume) >= requested and volume_class(volume) == cls
                    and access_modes_contain(vspec.get("accessModes") or [], modes)):
                return volume
            continue
        if vspec.get("claimRef"):
            continue  # bound or pre-bound to another claim
        if volume_class(volume) != cls:
            continue
        if not _selector_matches(claim, volume):
            continue
        if not access_modes_contain(vspec.get("accessModes") or [], modes):
            continue
        capacity = _capacity(volume)
        if capacity < requested:
            continue
        key = (capacity, str(vmeta.get("name") or ""))
        if best_key is None or key < best_key:
            best, best_key = volume, key
    return best
