"""The per-event fast paths of issue 19 give the answers of the generic readings.

Every pod event reaches about a dozen handlers; on compact cached objects
(pykcm.cache.frozen_object) several questions now take a shorter path: the
controller reference read from the struct's fields, facts of a pod's spec and
status kept with the object once computed (readiness, phase, node name, claims,
the quota's Terminating scope, a DisruptionTarget condition), the garbage
collector's ObjectMeta read from FrozenMeta, and handlers that return before reading
the pod when the namespace has no Service or budget. Property tests:
for random Kubernetes-shaped objects the fast answer is the generic one (the same
object, the same value, or the same exception).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykcm.api.owner_refs import generic_controller_of, get_controller_of
from pykcm.api.pod_util import (
    is_pod_ready,
    is_pod_terminal,
    pod_claim_names,
    pod_disruption_target_condition,
    pod_has_active_deadline,
    pod_node_name,
    pod_phase_and_ready,
)
from pykcm.api.quota.pods import is_terminating, quota_v1_pod
from pykcm.cache.frozen_object import FrozenMeta, FrozenObject, OwnerReference
from pykcm.controllers.disruption.disruption import _disruption_target
from pykcm.controllers.garbagecollector.graph_builder import ObjectMeta
from tests.unit.test_frozen_object import json_values, k8s_objects, object_meta

_settings = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow],
                     deadline=None)


def _outcome(f: Callable[[Any], Any], obj: Any) -> Any:
    """What ``f(obj)`` returns, or the type of what it raises."""
    try:
        return ("value", f(obj))
    except Exception as exc:  # noqa: BLE001 - compared, not hidden
        return ("raises", type(exc))


_conditions = st.lists(st.fixed_dictionaries(
    {"type": st.sampled_from(["Ready", "DisruptionTarget", "PodScheduled"])},
    optional={"status": st.sampled_from(["True", "False", "Unknown"]),
              "reason": st.sampled_from(["TerminationByKubelet", "EvictionByEvictionAPI"]),
              "lastTransitionTime": st.sampled_from(["2026-12-02T10:00:00Z", None])}),
    max_size=3)
_volumes = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["a", "b"])}, optional={
    "persistentVolumeClaim": st.fixed_dictionaries({}, optional={
        "claimName": st.sampled_from(["data", ""])}),
    "ephemeral": st.just({"volumeClaimTemplate": {}})}), max_size=3)


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    """Pods with the fields the fast paths read, or random values where they sit."""
    spec: dict[str, Any] = draw(st.fixed_dictionaries({}, optional={
        "nodeName": st.sampled_from(["n1", "", None]),
        "activeDeadlineSeconds": st.sampled_from([30, 0, -1, None, "x"]),
        "volumes": _volumes | st.lists(json_values, max_size=2),
        # fields the spec facts do not read (the compact path skips them undecoded)
        "containers": json_values, "restartPolicy": json_values}))
    status: dict[str, Any] = draw(st.fixed_dictionaries({}, optional={
        "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
        "conditions": _conditions}))
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": draw(object_meta)}
    pod["spec"] = draw(st.just(spec) | json_values)
    pod["status"] = draw(st.just(status) | json_values)
    return pod


_POD_QUESTIONS: list[Callable[[Any], Any]] = [
    is_pod_ready, is_pod_terminal, pod_claim_names, pod_node_name, is_terminating,
    lambda p: quota_v1_pod(p, now=0.0), _disruption_target, pod_phase_and_ready,
    pod_disruption_target_condition, pod_has_active_deadline,
]


@_settings
@given(pods(), st.permutations(range(len(_POD_QUESTIONS))))
def test_pod_facts_kept_by_compact_pods_answer_as_the_dict(pod: dict[str, Any],
                                                           order: list[int]) -> None:
    frozen = FrozenObject.from_dict(pod)
    for question in (_POD_QUESTIONS[i] for i in order):  # whichever computes the facts
        expected = _outcome(question, pod)
        assert _outcome(question, frozen) == expected  # computed and kept
        assert _outcome(question, frozen) == expected  # read back


@_settings
@given(k8s_objects())
def test_controller_of_a_compact_object_is_the_generic_one(obj: dict[str, Any]) -> None:
    frozen = FrozenObject.from_dict(obj)
    fast = _outcome(get_controller_of, frozen)
    generic = _outcome(generic_controller_of, frozen)
    if fast[0] == "value" and fast[1] is not None:
        assert fast[1] is generic[1]  # the very same reference
    assert fast == generic
    if type(frozen.get("metadata")) is FrozenMeta:  # the typed path: as the dict reads
        assert fast == _outcome(get_controller_of, obj)


@_settings
@given(k8s_objects())
def test_gc_object_meta_of_a_compact_object_is_the_dict_one(obj: dict[str, Any]) -> None:
    frozen = FrozenObject.from_dict(obj)
    assert _outcome(ObjectMeta.of, frozen) == _outcome(ObjectMeta.of, obj)


def test_compact_structs_are_mappings() -> None:
    obj = FrozenObject.from_dict({"metadata": {"name": "a", "ownerReferences": [
        {"kind": "Job", "name": "j", "uid": "u", "controller": True}]}})
    meta = obj["metadata"]
    assert type(meta) is FrozenMeta
    assert type(meta["ownerReferences"][0]) is OwnerReference
    for value in (obj, meta, meta["ownerReferences"][0]):
        assert isinstance(value, Mapping) and isinstance(value, Mapping)  # cached: again
