"""Pod status helpers shared by controllers (upstream ``pkg/api/v1/pod`` podutil).

The ReplicaSet, Deployment and Job controllers, the simulator and the tests
all ask the same questions of a pod: is it ready, since when, has it been
ready for ``minReadySeconds`` (available), is it still active. One answer for
all of them lives here.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any

from pykcm.api.timestamps import format_time, parse_time

__all__ = [
    "get_pod_condition",
    "get_pod_ready_condition",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminal",
    "new_pod_condition",
    "parse_time",
    "pod_claim_names",
    "pod_node_name",
    "pod_phase_and_ready",
]


def get_pod_condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The pod's status condition of ``type_``, or None."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            found: Mapping[str, Any] = cond
            return found
    return None


def get_pod_ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's ``Ready`` condition, or None."""
    return get_pod_condition(pod, "Ready")


def _shared(v: Any) -> Any:
    # phases and condition statuses are a handful of words: one string object each
    # for every pod that keeps them (memo below), not one per pod
    return sys.intern(v) if type(v) is str else v


def _phase_and_ready(pod: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    status = pod.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            return (_shared(status.get("phase")), _shared(cond.get("status")),
                    cond.get("lastTransitionTime"))
    return _shared(status.get("phase")), None, None


def pod_phase_and_ready(pod: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(``status.phase``, the Ready condition's ``status``, its ``lastTransitionTime``),
    None where absent: what a ReplicaSet sync reads of each of its pods.

    A compact cached pod (pykcm.cache.frozen_object) keeps the tuple once computed
    (about 190 bytes a pod beside its 2.8 KiB, the few phase and status words shared):
    reading its status decodes the status JSON again each time, and a sync of a
    ReplicaSet of 2,000 pods did that twice per pod.
    """
    if type(pod) is dict:
        return _phase_and_ready(pod)
    memo = getattr(pod, "memo", None)
    if memo is None:
        return _phase_and_ready(pod)
    facts: tuple[Any, Any, Any] = memo("pod_phase_and_ready", _phase_and_ready)
    return facts


def _node_name(pod: Mapping[str, Any]) -> str:
    return sys.intern(str((pod.get("spec") or {}).get("nodeName") or ""))


def pod_node_name(pod: Mapping[str, Any]) -> str:
    """``spec.nodeName`` ("" when unset): what the pod garbage collector reads of every
    cached pod at every pass. A compact cached pod keeps it once read (the spec is its
    largest raw part, decoded again at each read; node names are shared strings)."""
    if type(pod) is dict:
        return _node_name(pod)
    memo = getattr(pod, "memo", None)
    if memo is None:
        return _node_name(pod)
    name: str = memo("pod_node_name", _node_name)
    return name


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's Ready condition is True (podutil.IsPodReady).

    Read from :func:`pod_phase_and_ready` (the first Ready condition's status, as
    ``get_pod_ready_condition`` finds it): a compact cached pod answers every handler of
    an event from one decoding of its status."""
    return bool(pod_phase_and_ready(pod)[1] == "True")


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int,
                     now: float | None = None) -> bool:
    """Ready for at least ``min_ready_seconds`` (podutil.IsPodAvailable).

    Readiness time is the Ready condition's lastTransitionTime; with
    ``min_ready_seconds`` 0 a ready pod is available at once.
    """
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    cond = get_pod_ready_condition(pod)
    since = parse_time(cond.get("lastTransitionTime") if cond else None)
    if since is None:
        return False
    return since + min_ready_seconds <= (time.time() if now is None else now)


def is_pod_terminal(pod: Mapping[str, Any]) -> bool:
    """Phase Succeeded or Failed."""
    return pod_phase_and_ready(pod)[0] in ("Succeeded", "Failed")


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """Not terminal and not being deleted (controller.IsPodActive)."""
    return (not is_pod_terminal(pod)
            and not (pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_claim_names(pod: Mapping[str, Any]) -> list[str]:
    """The PersistentVolumeClaims a pod's volumes use: ``persistentVolumeClaim`` sources
    and generic ephemeral volumes (claim ``<pod name>-<volume name>``).

    A compact cached pod keeps them once read (as a tuple: usually the empty one): the
    PVC protection controller asks at every event of every pod, and the spec is the
    pod's largest raw part."""
    if type(pod) is dict:
        return _claim_names(pod)
    memo = getattr(pod, "memo", None)
    if memo is None:
        return _claim_names(pod)
    names: tuple[str, ...] = memo("pod_claim_names", _claim_names_tuple)
    return list(names)


def _claim_names_tuple(pod: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(_claim_names(pod))


def _claim_names(pod: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    name = str((pod.get("metadata") or {}).get("name") or "")
    for v in (pod.get("spec") or {}).get("volumes") or []:
        if not isinstance(v, Mapping):
            continue
        src = v.get("persistentVolumeClaim")
        if isinstance(src, Mapping) and src.get("claimName"):
            out.append(str(src["claimName"]))
        elif v.get("ephemeral") is not None:
            out.append(f"{name}-{v.get('name')}")
    return out


def new_pod_condition(ctype: str, status: str, now: float,
                      existing: Mapping[str, Any] | None, reason: str = "",
                      message: str = "") -> dict[str, Any]:
    """A pod condition as the kubelet writes it: ``lastTransitionTime`` kept from
    ``existing`` while the status is unchanged, else ``now``; reason and message only
    when set (omitempty)."""
    since = existing.get("lastTransitionTime") if existing and \
        existing.get("status") == status else None
    c: dict[str, Any] = {"type": ctype, "status": status, "lastProbeTime": None,
                         "lastTransitionTime": since or format_time(now)}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c
