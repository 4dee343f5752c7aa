"""Which PersistentVolume a claim binds to (upstream ``persistentvolume/index.go`` and
``component-helpers/storage/volume``'s ``pv_helpers.go``: ``FindMatchingVolume``,
``CheckNodeAffinity``).

Pure functions over wire dicts, used by the binder's claim sync
(pykcm.controllers.persistentvolume) and by the simulated scheduler's volume
binding (pykcm.sim.volume_binding), which is why they live in the API layer:

    claim, volumes[, node] ── find_matching_volume ──► the volume to bind, or None

A volume matches a claim when it is not being deleted, has the claim's
storage class ("" only matches "") and volume mode, offers every access mode
the claim asks for, matches the claim's selector and has at least the
requested capacity. A volume already pre-bound to this claim (claimRef of
its namespace/name, and uid when set) wins at once; a volume pre-bound to
another claim, or bound, is skipped. Of the rest the smallest sufficient one
is chosen (ties: the first by name, so the answer is deterministic).

Delayed binding (the claim's class is ``WaitForFirstConsumer``): without a
node (the binder) only a volume pre-bound to the claim matches, the others
are left to the scheduler; with a node (the scheduler) a volume must also
allow that node by its ``spec.nodeAffinity`` (a pre-bound one that does not
gives no match at all).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.api.quantity import parse_quantity
from pykcm.api.scheduling import match_node_selector_terms

__all__ = ["ANN_BIND_COMPLETED", "ANN_BOUND_BY_CONTROLLER", "ANN_DYNAMICALLY_PROVISIONED",
           "ANN_SELECTED_NODE", "ANN_STORAGE_PROVISIONER", "ANN_STORAGE_PROVISIONER_BETA",
           "BETA_STORAGE_CLASS_ANNOTATION", "access_modes_contain", "check_node_affinity",
           "claim_class", "claim_request", "find_matching_volume", "is_volume_bound_to_claim",
           "volume_class"]

BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
# the annotations the binder, the scheduler and provisioners exchange (upstream pv_helpers)
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_DYNAMICALLY_PROVISIONED: Final = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_STORAGE_PROVISIONER_BETA: Final = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"

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


def check_node_affinity(volume: Obj, node: Obj) -> bool:
    """Whether the volume may be used on ``node``: its required node affinity (none: any
    node) matches the node's labels and name (upstream CheckNodeAffinity)."""
    required = _m(_m(_m(volume.get("spec")).get("nodeAffinity")).get("required"))
    if not required:
        return True
    return match_node_selector_terms(node, required)


def find_matching_volume(claim: Obj, volumes: Iterable[Obj], *, delay_binding: bool = False,
                         node: Obj | None = None) -> Obj | None:
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
        affinity_ok = node is None or check_node_affinity(volume, node)
        if is_volume_bound_to_claim(volume, claim):
            # pre-bound (by a user, a provisioner or the scheduler) to this very claim: it
            # wins, if it fits
            if not affinity_ok:
                return None
            if (_capacity(volume) >= requested and volume_class(volume) == cls
                    and access_modes_contain(vspec.get("accessModes") or [], modes)):
                return volume
            continue
        if node is None and delay_binding:
            continue  # the scheduler binds it, on the node it picks
        if vspec.get("claimRef"):
            continue  # bound or pre-bound to another claim
        if not affinity_ok:
            continue
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
