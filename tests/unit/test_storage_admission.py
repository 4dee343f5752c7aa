"""The API server's storage admission plugins (pykcm.apiserver.admission.storage)."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.api.resources import builtin_registry
from pykcm.apiserver.admission.storage import admit, default_class
from pykcm.apiserver.errors import StatusError

REG = builtin_registry()
PVC = REG.get("", "v1", "persistentvolumeclaims")
PV = REG.get("", "v1", "persistentvolumes")


def sc(name: str, created: str, default: str | None = "true",
       expansion: bool | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if default is not None:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": default}
    out: dict[str, Any] = {"metadata": meta, "provisioner": "p"}
    if expansion is not None:
        out["allowVolumeExpansion"] = expansion
    return out


def claim(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}


def run(obj: dict[str, Any], classes: list[dict[str, Any]], old: dict[str, Any] | None = None,
        info: Any = PVC) -> dict[str, Any]:
    by_name = {c["metadata"]["name"]: c for c in classes}
    admit(info, obj, old, by_name.get, lambda: classes)
    return obj


def test_the_newest_default_class_wins_ties_by_name() -> None:
    classes = [sc("old", "2026-01-01T00:00:00Z"), sc("b", "2026-02-01T00:00:00Z"),
               sc("a", "2026-02-01T00:00:00Z"), sc("plain", "2026-03-01T00:00:00Z", None),
               sc("off", "2026-03-01T00:00:00Z", "false")]
    chosen = default_class(classes)
    assert chosen is not None and chosen["metadata"]["name"] == "a"
    assert default_class([sc("plain", "2026-03-01T00:00:00Z", None)]) is None


def test_a_claim_without_class_gets_the_default_and_a_finalizer() -> None:
    classes = [sc("standard", "2026-01-01T00:00:00Z")]
    out = run(claim(), classes)
    assert out["spec"]["storageClassName"] == "standard"
    assert out["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    # an explicit "" (no class) and the beta annotation are left alone
    assert run(claim(storageClassName=""), classes)["spec"]["storageClassName"] == ""
    beta = claim()
    beta["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "x"}
    assert "storageClassName" not in run(beta, classes)["spec"]
    # no default class: nothing set
    assert "storageClassName" not in run(claim(), [])["spec"]


def test_a_volume_gets_its_finalizer_once() -> None:
    pv: dict[str, Any] = {"metadata": {"name": "v", "finalizers": ["kubernetes.io/pv-protection"]},
                          "spec": {}}
    assert run(pv, [], info=PV)["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]


def test_resize_needs_a_bound_claim_of_an_expandable_class() -> None:
    classes = [sc("grow", "2026-01-01T00:00:00Z", None, expansion=True),
               sc("fixed", "2026-01-01T00:00:00Z", None)]
    old = claim(storageClassName="grow")
    old["status"] = {"phase": "Bound"}
    bigger = claim(storageClassName="grow", resources={"requests": {"storage": "2Gi"}})
    run(bigger, classes, old)  # allowed
    old["spec"]["storageClassName"] = "fixed"
    with pytest.raises(StatusError) as e:
        run(claim(storageClassName="fixed", resources={"requests": {"storage": "2Gi"}}),
            classes, old)
    assert e.value.code == 403
    old["status"] = {"phase": "Pending"}
    with pytest.raises(StatusError):
        run(claim(storageClassName="grow", resources={"requests": {"storage": "2Gi"}}),
            classes, old)
    # the same size or smaller is not a resize
    run(claim(storageClassName="fixed"), classes, old)
