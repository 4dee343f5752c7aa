"""The node lifecycle controller's decisions, without I/O: node health, zone states, taints.

kube-controller-manager v1.36 ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``
(``tryUpdateNodeHealth``, ``ComputeZoneState``, ``doNoScheduleTaintingPass``'s
condition-to-taint map, ``GetZoneKey``).

Role: :func:`observe_node_health` is one node's step of the monitor pass. It
keeps, per node, when the controller last saw a sign of life (a new Ready
``lastHeartbeatTime`` or a newer Lease ``renewTime``: the *probe timestamp*,
taken from the controller's clock, never from the kubelet's) and, once
``now`` is past probe + grace period (``--node-monitor-grace-period``, or
``--node-startup-grace-period`` for a node that never posted Ready), turns
Ready, MemoryPressure, DiskPressure and PIDPressure to Unknown with upstream's
reasons and messages. The caller writes the status when Ready changed.

All times are seconds from the ``now`` given (the controller's clock), so tests
drive them with a fake clock.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pykcm.api.timestamps import format_time, parse_time

__all__ = [
    "NODE_CONDITION_TAINTS",
    "NOT_READY_TAINT",
    "STATE_FULL_DISRUPTION",
    "STATE_INITIAL",
    "STATE_NORMAL",
    "STATE_PARTIAL_DISRUPTION",
    "UNREACHABLE_TAINT",
    "UNSCHEDULABLE_TAINT",
    "HealthObservation",
    "NodeHealth",
    "compute_zone_state",
    "get_node_condition",
    "no_schedule_taints",
    "observe_node_health",
    "taint_exists",
    "zone_key",
]

NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"

NODE_CONDITION_TAINTS: Final[Mapping[str, Mapping[str, str]]] = {
    "Ready": {"False": NOT_READY_TAINT, "Unknown": UNREACHABLE_TAINT},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
"""Which condition status gets which NoSchedule taint (TaintNodesByCondition)."""
_CONDITION_TAINT_KEYS: Final = frozenset(k for m in NODE_CONDITION_TAINTS.values()
                                         for k in m.values())

STATE_INITIAL: Final = "Initial"
STATE_NORMAL: Final = "Normal"
STATE_FULL_DISRUPTION: Final = "FullDisruption"
STATE_PARTIAL_DISRUPTION: Final = "PartialDisruption"

# The conditions a silent kubelet loses (NetworkUnavailable is the network plugin's).
_UNKNOWN_ON_SILENCE: Final = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def get_node_condition(status: Mapping[str, Any] | None, ctype: str
                       ) -> Mapping[str, Any] | None:
    for c in (status or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == ctype:
            return c
    return None


def taint_exists(taints: Sequence[Mapping[str, Any]] | None, key: str, effect: str) -> bool:
    """upstream TaintExists: same key and effect (the value is not compared)."""
    return any(t.get("key") == key and t.get("effect") == effect for t in taints or ())


def zone_key(node: Mapping[str, Any]) -> str:
    """upstream GetZoneKey: ``region:\\x00:zone`` from the topology labels ("" if none)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region = (labels.get("topology.kubernetes.io/region")
              or labels.get("failure-domain.beta.kubernetes.io/region") or "")
    zone = (labels.get("topology.kubernetes.io/zone")
            or labels.get("failure-domain.beta.kubernetes.io/zone") or "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def compute_zone_state(ready_conditions: Sequence[Mapping[str, Any] | None],
                       unhealthy_zone_threshold: float) -> tuple[int, str]:
    """(not-ready nodes, state): FullDisruption when none is Ready, PartialDisruption
    when more than 2 and at least the threshold's fraction are not, else Normal."""
    ready = sum(1 for c in ready_conditions if c is not None and c.get("status") == "True")
    not_ready = len(ready_conditions) - ready
    if ready == 0 and not_ready > 0:
        return not_ready, STATE_FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_zone_threshold:
        return not_ready, STATE_PARTIAL_DISRUPTION
    return not_ready, STATE_NORMAL


def no_schedule_taints(node: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                         list[dict[str, Any]]]:
    """(taints to add, taints to remove) so the node's NoSchedule condition taints match
    its conditions and ``spec.unschedulable`` (upstream doNoScheduleTaintingPass)."""
    want: list[dict[str, Any]] = []
    for c in (node.get("status") or {}).get("conditions") or ():
        key = NODE_CONDITION_TAINTS.get(str(c.get("type")), {}).get(str(c.get("status")))
        if key:
            want.append({"key": key, "effect": "NoSchedule"})
    if (node.get("spec") or {}).get("unschedulable"):
        want.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    have = [t for t in (node.get("spec") or {}).get("taints") or ()
            if t.get("effect") == "NoSchedule"
            and (t.get("key") == UNSCHEDULABLE_TAINT or t.get("key") in _CONDITION_TAINT_KEYS)]
    add = [t for t in want if not taint_exists(have, t["key"], t["effect"])]
    remove = [dict(t) for t in have if not taint_exists(want, t["key"], t["effect"])]
    return add, remove


@dataclass
class NodeHealth:
    """What the controller remembers of a node (upstream nodeHealthData)."""

    status: Mapping[str, Any]
    probe_timestamp: float
    ready_transition_timestamp: float
    lease_renew_time: float | None = None


@dataclass
class HealthObservation:
    """One node's step: what to remember, what Ready was and is, the status to write."""

    health: NodeHealth
    grace_period: float
    observed_ready: Mapping[str, Any]
    current_ready: Mapping[str, Any] | None
    new_status: dict[str, Any] | None
    """The status with Unknown conditions, when Ready changed and must be written."""


def observe_node_health(node: Mapping[str, Any], health: NodeHealth | None,
                        lease_renew_time: float | None, now: float, *,
                        monitor_grace_period: float,
                        startup_grace_period: float) -> HealthObservation:
    """upstream tryUpdateNodeHealth's decision (the write is the caller's)."""
    status: Mapping[str, Any] = node.get("status") or {}
    created_s = (node.get("metadata") or {}).get("creationTimestamp")
    created = parse_time(created_s) or now
    current_ready = get_node_condition(status, "Ready")
    if current_ready is None:
        # Never posted: measure from the node's creation with the startup grace period.
        observed_ready: Mapping[str, Any] = {
            "type": "Ready", "status": "Unknown",
            "lastHeartbeatTime": created_s, "lastTransitionTime": created_s}
        grace = startup_grace_period
        if health is not None:
            health.status = status
        else:
            health = NodeHealth(status, created, created)
    else:
        observed_ready = dict(current_ready)
        grace = monitor_grace_period

    saved = get_node_condition(health.status, "Ready") if health is not None else None
    saved_lease = health.lease_renew_time if health is not None else None
    if health is None or saved is None and current_ready is not None or saved is not None and current_ready is None:
        health = NodeHealth(status, now, now)
    elif (saved is not None and current_ready is not None
          and saved.get("lastHeartbeatTime") != current_ready.get("lastHeartbeatTime")):
        transition = (now if saved.get("lastTransitionTime")
                      != current_ready.get("lastTransitionTime")
                      else health.ready_transition_timestamp)
        health = NodeHealth(status, now, transition)
    # A renewed Lease is a sign of life even when the status is not written.
    if lease_renew_time is not None and (saved_lease is None or saved_lease < lease_renew_time):
        health.lease_renew_time = lease_renew_time
        health.probe_timestamp = now

    new_status: dict[str, Any] | None = None
    if now > health.probe_timestamp + grace:
        st = copy.deepcopy(dict(status))
        conds: list[dict[str, Any]] = list(st.get("conditions") or [])
        stamp = format_time(now)
        for ctype in _UNKNOWN_ON_SILENCE:
            c = next((c for c in conds if c.get("type") == ctype), None)
            if c is None:
                conds.append({"type": ctype, "status": "Unknown",
                              "lastHeartbeatTime": created_s, "lastTransitionTime": stamp,
                              "reason": "NodeStatusNeverUpdated",
                              "message": "Kubelet never posted node status."})
            elif c.get("status") != "Unknown":
                c.update(status="Unknown", reason="NodeStatusUnknown",
                         message="Kubelet stopped posting node status.",
                         lastTransitionTime=stamp)
        st["conditions"] = conds
        ready_now = get_node_condition(st, "Ready")
        if ready_now != observed_ready:
            new_status = st
            current_ready = ready_now
    return HealthObservation(health, grace, observed_ready, current_ready, new_status)
