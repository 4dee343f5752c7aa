"""DaemonSet helpers: daemon tolerations, the pod template, surge/unavailable counts, node names.

kube-controller-manager v1.36 ``pkg/controller/daemon/util/daemonset_util.go``
and client-go's ``flowcontrol.Backoff`` (the failed-pods backoff).

- Every DaemonSet pod tolerates the taints node problems put on a node
  (not-ready and unreachable NoExecute, disk/memory/PID pressure and
  unschedulable NoSchedule; network-unavailable for host-network pods): a
  daemon keeps running where an ordinary pod would be evicted.
- A DaemonSet pod is created unscheduled with a required node affinity on
  ``metadata.name`` (matchFields), replacing any required node affinity of
  the template: kube-scheduler then binds it to that node.
- ``controller-revision-hash`` (and the deprecated ``pod-template-generation``
  when the DaemonSet has the annotation) tell updated pods from old ones.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK
from pykcm.api.intstr import get_scaled_value_from_int_or_percent
from pykcm.api.scheduling import (
    add_or_update_toleration,
    find_matching_untolerated_taint,
    required_node_affinity_matches,
)
from pykcm.api.timestamps import parse_time

__all__ = [
    "DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY",
    "DEPRECATED_TEMPLATE_GENERATION",
    "TEMPLATE_GENERATION_KEY",
    "Backoff",
    "DaemonPod",
    "add_or_update_daemon_pod_tolerations",
    "allows_surge",
    "create_pod_template",
    "daemon_pod",
    "get_target_node_name",
    "get_template_generation",
    "is_pod_updated",
    "node_should_run_daemon_pod",
    "pod_by_creation_timestamp_and_phase_key",
    "replace_daemon_set_pod_node_name_node_affinity",
    "surge_count",
    "unavailable_count",
]

DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY: Final = "controller-revision-hash"
"""The pod and ControllerRevision label holding the template hash (apps.DefaultDaemonSetUniqueLabelKey)."""

TEMPLATE_GENERATION_KEY: Final = "pod-template-generation"
"""extensions.DaemonSetTemplateGenerationKey: the template generation of a pod (legacy)."""

DEPRECATED_TEMPLATE_GENERATION: Final = "deprecated.daemonset.template.generation"
"""The DaemonSet annotation holding the legacy template generation."""

_DAEMON_TOLERATIONS: Final = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def get_template_generation(ds: Mapping[str, Any]) -> int | None:
    """The deprecated template generation annotation, or None (absent or not an integer:
    upstream treats a parse error as none)."""
    value = ((ds.get("metadata") or {}).get("annotations") or {}).get(
        DEPRECATED_TEMPLATE_GENERATION)
    if value is None:
        return None
    try:
        return int(str(value), 10)
    except ValueError:
        return None


def add_or_update_daemon_pod_tolerations(spec: dict[str, Any]) -> None:
    """Add the tolerations every daemon pod has (upstream AddOrUpdateDaemonPodTolerations)."""
    for key, effect in _DAEMON_TOLERATIONS:
        add_or_update_toleration(spec, {"key": key, "operator": "Exists", "effect": effect})
    if spec.get("hostNetwork"):
        add_or_update_toleration(spec, {"key": _NETWORK_UNAVAILABLE, "operator": "Exists",
                                        "effect": "NoSchedule"})


def create_pod_template(template: Mapping[str, Any], generation: int | None,
                        hash_: str) -> dict[str, Any]:
    """The template pods are created from: a copy with the daemon tolerations and the
    generation and hash labels (upstream CreatePodTemplate)."""
    t = copy.deepcopy(dict(template))
    spec = t.setdefault("spec", {})
    add_or_update_daemon_pod_tolerations(spec)
    meta = t.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    if generation is not None:
        labels[TEMPLATE_GENERATION_KEY] = str(generation)
    if hash_:
        labels[DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY] = hash_
    return t


def _rolling_update(ds: Mapping[str, Any]) -> Mapping[str, Any] | None:
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type") != "RollingUpdate":
        return None
    ru = strategy.get("rollingUpdate")
    return ru if isinstance(ru, Mapping) else None


def surge_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """maxSurge as a number of nodes (0 unless RollingUpdate with maxSurge); raises
    IntOrStringError for an invalid value."""
    ru = _rolling_update(ds)
    if ru is None or ru.get("maxSurge") is None:
        return 0
    return get_scaled_value_from_int_or_percent(ru.get("maxSurge"), number_to_schedule, True)


def unavailable_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """maxUnavailable as a number of nodes (0 unless RollingUpdate)."""
    ru = _rolling_update(ds)
    if ru is None:
        return 0
    return get_scaled_value_from_int_or_percent(ru.get("maxUnavailable"), number_to_schedule,
                                                True)


def allows_surge(ds: Mapping[str, Any]) -> bool:
    """Whether the DaemonSet may run two pods on a node during an update."""
    try:
        return surge_count(ds, 1) > 0
    except ValueError:
        return False


def is_pod_updated(pod: Mapping[str, Any], hash_: str, template_generation: int | None) -> bool:
    """Whether the pod carries the current hash (or the legacy template generation)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    template_matches = (template_generation is not None
                        and labels.get(TEMPLATE_GENERATION_KEY) == str(template_generation))
    hash_matches = bool(hash_) and labels.get(DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY) == hash_
    return hash_matches or template_matches


def replace_daemon_set_pod_node_name_node_affinity(affinity: Mapping[str, Any] | None,
                                                   node_name: str) -> dict[str, Any]:
    """``affinity`` with its required node affinity replaced by ``metadata.name In
    [node_name]`` (the rest of it kept), as upstream ReplaceDaemonSetPodNodeNameNodeAffinity."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    out = dict(affinity or {})
    node_affinity = dict(out.get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    out["nodeAffinity"] = node_affinity
    return out


def get_target_node_name(pod: Mapping[str, Any]) -> str:
    """The node a daemon pod is for: ``spec.nodeName``, else the ``metadata.name``
    matchFields of its required node affinity; raises ValueError if there is none."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    meta = pod.get("metadata") or {}
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        raise ValueError("no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
                         f"Execution for pod {meta.get('namespace')}/{meta.get('name')}")
    terms = required.get("nodeSelectorTerms") or ()
    if not terms:
        raise ValueError("no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuring"
                         f"Execution of pod {meta.get('namespace')}/{meta.get('name')}")
    for term in terms:
        for exp in term.get("matchFields") or ():
            if exp.get("key") == "metadata.name" and exp.get("operator") == "In":
                values = list(exp.get("values") or ())
                if len(values) != 1:
                    raise ValueError(f"the matchFields value of 'metadata.name' is not unique "
                                     f"for pod {meta.get('namespace')}/{meta.get('name')}")
                return str(values[0])
    raise ValueError(f"no node name found for pod {meta.get('namespace')}/{meta.get('name')}")


# -- where a daemon pod should run -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DaemonPod:
    """What placement looks at of the pod a DaemonSet would create (upstream NewPod):
    the template's scheduling fields plus the daemon tolerations."""

    template_node_name: str
    pod: Mapping[str, Any]
    tolerations: Sequence[Mapping[str, Any]]


def daemon_pod(ds: Mapping[str, Any]) -> DaemonPod:
    tspec = _spec(_spec(ds).get("template") or {})
    spec: dict[str, Any] = {"tolerations": list(tspec.get("tolerations") or ()),
                            "hostNetwork": tspec.get("hostNetwork")}
    add_or_update_daemon_pod_tolerations(spec)
    pod = {"spec": {"nodeSelector": tspec.get("nodeSelector"), "affinity": tspec.get("affinity")}}
    return DaemonPod(str(tspec.get("nodeName") or ""), pod, spec["tolerations"])


def _no_schedule_or_execute(t: Mapping[str, Any]) -> bool:
    return t.get("effect") in ("NoExecute", "NoSchedule")


def _no_execute(t: Mapping[str, Any]) -> bool:
    return t.get("effect") == "NoExecute"


def node_should_run_daemon_pod(node: Mapping[str, Any], ds: Mapping[str, Any],
                               view: DaemonPod | None = None) -> tuple[bool, bool]:
    """(should run, should continue running) a daemon pod of ``ds`` on ``node``
    (upstream NodeShouldRunDaemonPod).

    Should run: the template's nodeName (if any) is the node, the nodeSelector and
    required node affinity match, and every NoSchedule/NoExecute taint is tolerated.
    A pod already there continues running unless a NoExecute taint is not tolerated.
    """
    v = view if view is not None else daemon_pod(ds)
    name = str(meta_of(node).get("name") or "")
    if v.template_node_name and v.template_node_name != name:
        return False, False
    if not required_node_affinity_matches(v.pod, node):
        return False, False
    taints = _spec(node).get("taints") or ()
    if find_matching_untolerated_taint(taints, v.tolerations, _no_schedule_or_execute) is None:
        return True, True
    untolerated_no_execute = find_matching_untolerated_taint(taints, v.tolerations,
                                                             _no_execute)
    return False, untolerated_no_execute is None


def pod_by_creation_timestamp_and_phase_key(pod: Mapping[str, Any]) -> tuple[int, float, str]:
    """Sort key: scheduled pods first, then the oldest, then by name
    (upstream podByCreationTimestampAndPhase)."""
    meta = meta_of(pod)
    ts = parse_time(meta.get("creationTimestamp")) or 0.0
    return (0 if _spec(pod).get("nodeName") else 1, ts, str(meta.get("name") or ""))


class Backoff:
    """client-go ``flowcontrol.Backoff`` without jitter: per-key exponential delays.

    ``next(key, now)`` starts a key at ``initial`` seconds (or after a quiet
    period of twice ``maximum``) and doubles it up to ``maximum``;
    ``is_in_back_off_since_update(key, now)`` says whether ``now`` is still
    within the delay since the last ``next``. Times are seconds of ``clock``.
    """

    def __init__(self, initial: float, maximum: float,
                 clock: Callable[[], float] = REAL_CLOCK.monotonic) -> None:
        self.initial = initial
        self.maximum = maximum
        self.clock = clock
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (backoff, last update)

    def _expired(self, now: float, last: float) -> bool:
        return now - last > 2 * self.maximum

    def next(self, key: str, now: float) -> None:
        entry = self._entries.get(key)
        if entry is None or self._expired(now, entry[1]):
            delay = self.initial
        else:
            delay = min(entry[0] * 2, self.maximum)
        self._entries[key] = (delay, self.clock())

    def get(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry[0] if entry is not None else 0.0

    def is_in_back_off_since_update(self, key: str, now: float) -> bool:
        entry = self._entries.get(key)
        if entry is None or self._expired(now, entry[1]):
            return False
        return now - entry[1] < entry[0]

    def gc(self) -> None:
        """Forget the keys quiet for longer than twice the maximum."""
        now = self.clock()
        for key in [k for k, (_, last) in self._entries.items() if self._expired(now, last)]:
            del self._entries[key]
