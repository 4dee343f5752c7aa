"""Mutating admission: DefaultTolerationSeconds and Priority as kube-apiserver v1.36 applies them."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.api.resources import BUILTIN_RESOURCES
from pykcm.apiserver.admission.mutating import admit
from pykcm.apiserver.errors import StatusError

POD = next(r for r in BUILTIN_RESOURCES if r.kind == "Pod" and not r.group)
NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], **spec}}


def test_default_tolerations_and_priority_on_create() -> None:
    pod = _pod()
    admit(POD, pod, None)
    assert pod["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (
        0, "PreemptLowerPriority")


def test_tolerations_already_covered_are_not_added() -> None:
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 5}
    pod = _pod(tolerations=[own])
    admit(POD, pod, None)
    assert pod["spec"]["tolerations"] == [own, UNREACHABLE]
    everything = _pod(tolerations=[{"operator": "Exists"}])
    admit(POD, everything, None)
    assert everything["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_system_priority_classes_and_unknown_ones() -> None:
    pod = _pod(priorityClassName="system-node-critical")
    admit(POD, pod, None)
    assert pod["spec"]["priority"] == 2000001000
    with pytest.raises(StatusError) as ei:
        admit(POD, _pod(priorityClassName="gold"), None)
    assert ei.value.code == 403
    assert ei.value.message == 'pods "p" is forbidden: no PriorityClass with name gold was found'
    with pytest.raises(StatusError) as ei:
        admit(POD, _pod(priority=7), None)
    assert "must not be provided in pod spec" in ei.value.message


def test_update_keeps_the_stored_priority_and_subresources_are_left_alone() -> None:
    old = _pod(priority=0, preemptionPolicy="PreemptLowerPriority")
    new = _pod()
    admit(POD, new, old)
    assert new["spec"]["priority"] == 0
    status_write = _pod()
    admit(POD, status_write, old, "status")
    assert "tolerations" not in status_write["spec"]
