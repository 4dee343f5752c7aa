"""The binder's volume matching (pykcm.controllers.persistentvolume.index)."""

from __future__ import annotations

from typing import Any

from pykcm.api.pv_helpers import (
    claim_class,
    find_matching_volume,
    is_volume_bound_to_claim,
)


def pv(name: str, size: str, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "",
       **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", None)
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": {"capacity": {"storage": size},
                                       "accessModes": list(modes), "storageClassName": cls,
                                       **spec}}


def pvc(size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str | None = "",
        **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}},
                         **spec}
    if cls is not None:
        s["storageClassName"] = cls
    return {"metadata": {"name": "data", "namespace": "ns", "uid": "u1"}, "spec": s}


def names(v: dict[str, Any] | Any) -> str | None:
    return None if v is None else str(v["metadata"]["name"])


def test_the_smallest_sufficient_volume_wins() -> None:
    vols = [pv("big", "10Gi"), pv("small", "1Gi"), pv("tiny", "500Mi"), pv("mid", "2G")]
    assert names(find_matching_volume(pvc("1Gi"), vols)) == "small"
    assert names(find_matching_volume(pvc("1.5Gi"), vols)) == "mid"
    assert find_matching_volume(pvc("20Gi"), vols) is None


def test_equal_capacities_pick_the_first_name() -> None:
    assert names(find_matching_volume(pvc(), [pv("b", "1Gi"), pv("a", "1Gi")])) == "a"


def test_access_modes_must_all_be_offered() -> None:
    vols = [pv("rwo", "1Gi"), pv("both", "5Gi", ("ReadWriteOnce", "ReadOnlyMany"))]
    assert names(find_matching_volume(pvc(modes=("ReadOnlyMany",)), vols)) == "both"
    assert find_matching_volume(pvc(modes=("ReadWriteMany",)), vols) is None


def test_class_and_volume_mode_must_be_equal() -> None:
    vols = [pv("fast", "1Gi", cls="fast"), pv("none", "2Gi"),
            pv("block", "1Gi", volumeMode="Block")]
    assert names(find_matching_volume(pvc(cls="fast"), vols)) == "fast"
    assert names(find_matching_volume(pvc(cls=""), vols)) == "none"
    assert names(find_matching_volume(pvc(cls=None), vols)) == "none"
    assert names(find_matching_volume(pvc(volumeMode="Block"), vols)) == "block"
    assert find_matching_volume(pvc(cls="slow"), vols) is None


def test_the_beta_class_annotation_counts() -> None:
    claim = pvc(cls=None)
    claim["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "fast"}
    assert claim_class(claim) == "fast"
    assert names(find_matching_volume(claim, [pv("x", "1Gi"),
                                              pv("y", "1Gi", cls="fast")])) == "y"


def test_selector() -> None:
    vols = [pv("a", "1Gi", labels={"tier": "slow"}), pv("b", "5Gi", labels={"tier": "fast"})]
    claim = pvc(selector={"matchLabels": {"tier": "fast"}})
    assert names(find_matching_volume(claim, vols)) == "b"
    claim = pvc(selector={"matchExpressions": [{"key": "tier", "operator": "In",
                                                "values": ["gold"]}]})
    assert find_matching_volume(claim, vols) is None


def test_bound_and_deleted_volumes_are_skipped() -> None:
    other = {"kind": "PersistentVolumeClaim", "namespace": "ns", "name": "other", "uid": "u2"}
    deleting = pv("gone", "1Gi")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    vols = [pv("taken", "1Gi", claimRef=other), deleting, pv("free", "3Gi")]
    assert names(find_matching_volume(pvc(), vols)) == "free"


def test_a_volume_pre_bound_to_the_claim_wins_over_a_smaller_one() -> None:
    mine = {"namespace": "ns", "name": "data"}
    vols = [pv("small", "1Gi"), pv("mine", "8Gi", claimRef=mine)]
    assert names(find_matching_volume(pvc(), vols)) == "mine"
    # a ref with another uid is someone else's (the claim was made again)
    vols[1]["spec"]["claimRef"] = {**mine, "uid": "old"}
    assert names(find_matching_volume(pvc(), vols)) == "small"


def test_is_volume_bound_to_claim() -> None:
    claim = pvc()
    assert is_volume_bound_to_claim(pv("v", "1Gi", claimRef={"namespace": "ns", "name": "data"}),
                                    claim)
    assert is_volume_bound_to_claim(
        pv("v", "1Gi", claimRef={"namespace": "ns", "name": "data", "uid": "u1"}), claim)
    assert not is_volume_bound_to_claim(
        pv("v", "1Gi", claimRef={"namespace": "other", "name": "data"}), claim)
    assert not is_volume_bound_to_claim(pv("v", "1Gi"), claim)
