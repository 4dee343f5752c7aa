"""Admission plugin Priority over stored PriorityClasses (admission/priority.py), as
kube-apiserver v1.36's plugin/pkg/admission/priority admits pods and PriorityClasses."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.apiserver.admission.priority import admit_pod, validate_priority_class
from pykcm.apiserver.errors import StatusError
from pykcm.apiserver.registry.scheduling.priorityclass import system_priority_classes


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], **spec}}


def _class(name: str, value: int, *, default: bool = False,
           policy: str = "PreemptLowerPriority") -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value, "globalDefault": default,
            "preemptionPolicy": policy}


SYSTEM = system_priority_classes()


def test_no_class_and_no_default_gives_zero() -> None:
    pod = _pod()
    admit_pod(pod, None, lambda: SYSTEM, "p")
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (
        0, "PreemptLowerPriority")
    assert "priorityClassName" not in pod["spec"]


def test_named_class_gives_its_value_and_policy() -> None:
    classes = [*SYSTEM, _class("gold", 42, policy="Never")]
    pod = _pod(priorityClassName="gold")
    admit_pod(pod, None, lambda: classes, "p")
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (42, "Never")
    critical = _pod(priorityClassName="system-node-critical")
    admit_pod(critical, None, lambda: classes, "p")
    assert critical["spec"]["priority"] == 2000001000


def test_global_default_names_the_pod_and_the_lowest_default_wins() -> None:
    classes = [_class("high", 100, default=True), _class("low", 10, default=True)]
    pod = _pod()
    admit_pod(pod, None, lambda: classes, "p")
    assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"]) == ("low", 10)


def test_missing_class_and_contradictions_are_refused_with_upstreams_words() -> None:
    with pytest.raises(StatusError) as ei:
        admit_pod(_pod(priorityClassName="gold"), None, lambda: SYSTEM, "p")
    assert ei.value.code == 403
    assert ei.value.message == 'pods "p" is forbidden: no PriorityClass with name gold was found'
    with pytest.raises(StatusError) as ei:
        admit_pod(_pod(priority=7), None, lambda: SYSTEM, "p")
    assert ei.value.message == (
        'pods "p" is forbidden: the integer value of priority (7) must not be provided in pod '
        "spec; priority admission controller computed 0 from the given PriorityClass name")
    with pytest.raises(StatusError) as ei:
        admit_pod(_pod(preemptionPolicy="Never"), None, lambda: SYSTEM, "p")
    assert ei.value.message == (
        'pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be '
        "provided in pod spec; priority admission controller computed PreemptLowerPriority "
        "from the given PriorityClass name")


def test_update_keeps_the_stored_priority() -> None:
    old = _pod(priority=5, preemptionPolicy="Never")
    new = _pod()
    admit_pod(new, old, list, "p")
    assert (new["spec"]["priority"], new["spec"]["preemptionPolicy"]) == (5, "Never")


def test_only_one_global_default() -> None:
    classes = [_class("a", 1, default=True)]
    validate_priority_class(_class("b", 2), True, lambda: classes)  # not a default: fine
    validate_priority_class(_class("a", 1, default=True), False, lambda: classes)  # itself
    with pytest.raises(StatusError) as ei:
        validate_priority_class(_class("b", 2, default=True), True, lambda: classes)
    assert ei.value.code == 403
    assert ei.value.message == (
        'priorityclasses.scheduling.k8s.io "b" is forbidden: PriorityClass a is already marked '
        "as default. Only one default can exist")
