"""Mutating admission: DefaultTolerationSeconds as kube-apiserver v1.36 applies it (Priority:
test_priority_admission.py)."""

from __future__ import annotations

from typing import Any

from pykcm.api.resources import BUILTIN_RESOURCES
from pykcm.apiserver.admission.mutating import admit

POD = next(r for r in BUILTIN_RESOURCES if r.kind == "Pod" and not r.group)
NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], **spec}}


def test_default_tolerations_on_create() -> None:
    pod = _pod()
    admit(POD, pod, None)
    assert pod["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]


def test_tolerations_already_covered_are_not_added() -> None:
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 5}
    pod = _pod(tolerations=[own])
    admit(POD, pod, None)
    assert pod["spec"]["tolerations"] == [own, UNREACHABLE]
    everything = _pod(tolerations=[{"operator": "Exists"}])
    admit(POD, everything, None)
    assert everything["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_updates_get_the_tolerations_and_subresources_are_left_alone() -> None:
    old = _pod()
    new = _pod()
    admit(POD, new, old)
    assert new["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]
    status_write = _pod()
    admit(POD, status_write, old, "status")
    assert "tolerations" not in status_write["spec"]
