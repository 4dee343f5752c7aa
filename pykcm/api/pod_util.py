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
from typing import Any, Final

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
    "pod_disruption_target_condition",
    "pod_has_active_deadline",
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


def _disruption_target_condition(pod: Mapping[str, Any]) -> tuple[Any, Any, Any] | None:
    cond = get_pod_condition(pod, "DisruptionTarget")
    if cond is None:
        return None
    return (_shared(cond.get("status")), _shared(cond.get("reason")),
            cond.get("lastTransitionTime"))


# --- facts kept with a compact cached pod ----------------------------------------------
#
# A compact cached pod (pykcm.cache.frozen_object) decodes its spec and status JSON again
# at each read, and about a dozen handlers read a few facts of both versions of the pod
# at every event. So the facts are computed together, from one decoding of the spec and
# one of the status, and kept with the object (``memo``): a tuple of a few shared words
# a pod. A fact whose reading raised (a malformed object) is kept as _FAILED, and its
# accessor reads the pod again the generic way, raising as it always did.

_FAILED: Any = object()


def _each(view: Mapping[str, Any], *readers: Any) -> tuple[Any, ...]:
    out = []
    for read in readers:
        try:
            out.append(read(view))
        except Exception:  # noqa: BLE001 - kept as _FAILED; the accessor raises it again
            out.append(_FAILED)
    return tuple(out)


def _status_facts(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    return _each({"status": pod.get("status")}, _phase_and_ready,
                 _disruption_target_condition)


def _spec_facts(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    spec: Any = _NO_SUBSET
    raw_part = getattr(pod, "raw_part", None)
    if raw_part is not None:
        raw = raw_part("spec")
        if raw is not None:
            spec = _spec_subset(raw)
    if spec is _NO_SUBSET:
        spec = pod.get("spec")
    return _each({"metadata": pod.get("metadata"), "spec": spec},
                 _node_name, _claim_names_tuple, _has_active_deadline)


# The spec fields the spec facts read. Decoding just these from a compact pod's raw spec
# (msgspec skips the containers and the rest without building them: 0.8 µs for the
# benchmark's pod, against 2 µs to decode the whole spec) matters when the node-name
# index computes the facts of every pod of a big initial list before the informer syncs.
_SPEC_FACT_FIELDS: Final = ("nodeName", "volumes", "activeDeadlineSeconds")
_NO_SUBSET: Any = object()
_spec_subset_decoder: Any = None


def _spec_subset(raw: bytes) -> Any:
    """The spec's fact fields as a dict (only those present), or _NO_SUBSET when the
    raw spec is not a JSON object (then the facts read the whole spec, as for a dict)."""
    global _spec_subset_decoder
    dec = _spec_subset_decoder
    if dec is None:
        # Only compact pods (which need msgspec) come here: the import is deferred.
        import msgspec

        class _SpecFactFields(msgspec.Struct, gc=False):
            nodeName: Any = msgspec.UNSET
            volumes: Any = msgspec.UNSET
            activeDeadlineSeconds: Any = msgspec.UNSET

        dec = _spec_subset_decoder = (msgspec.json.Decoder(_SpecFactFields), msgspec.UNSET)
    decoder, unset = dec
    try:
        fields = decoder.decode(raw)
    except Exception:  # noqa: BLE001 - not an object: the generic reading decides
        return _NO_SUBSET
    out = {}
    for name in _SPEC_FACT_FIELDS:
        v = getattr(fields, name)
        if v is not unset:
            out[name] = v
    return out


def _fact(pod: Mapping[str, Any], memo_name: str, facts: Any, i: int, read: Any) -> Any:
    if type(pod) is dict:
        return read(pod)
    memo = getattr(pod, "memo", None)
    if memo is None:
        return read(pod)
    v = memo(memo_name, facts)[i]
    return read(pod) if v is _FAILED else v


def pod_phase_and_ready(pod: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(``status.phase``, the Ready condition's ``status``, its ``lastTransitionTime``),
    None where absent: what a ReplicaSet sync reads of each of its pods.

    A compact cached pod keeps it once computed (with the other status facts, see
    above; about 190 bytes a pod beside its 2.8 KiB, the few phase and status words
    shared): a sync of a ReplicaSet of 2,000 pods decoded each pod's status twice.
    """
    facts: tuple[Any, Any, Any] = _fact(pod, "pod_status_facts", _status_facts, 0,
                                        _phase_and_ready)
    return facts


def pod_disruption_target_condition(pod: Mapping[str, Any]) -> tuple[Any, Any, Any] | None:
    """(``status``, ``reason``, ``lastTransitionTime``) of the pod's first
    ``DisruptionTarget`` condition, or None: what the disruption controller asks of every
    pod at every event (kept by a compact cached pod with its other status facts)."""
    found: tuple[Any, Any, Any] | None = _fact(pod, "pod_status_facts", _status_facts, 1,
                                               _disruption_target_condition)
    return found


def _node_name(pod: Mapping[str, Any]) -> str:
    return sys.intern(str((pod.get("spec") or {}).get("nodeName") or ""))


def pod_node_name(pod: Mapping[str, Any]) -> str:
    """``spec.nodeName`` ("" when unset): what the pod garbage collector reads of every
    cached pod at every pass, and the node lifecycle and taint eviction controllers and
    the node-name index at every event. A compact cached pod keeps it once read, with
    its other spec facts (node names are shared strings)."""
    name: str = _fact(pod, "pod_spec_facts", _spec_facts, 0, _node_name)
    return name


def _has_active_deadline(pod: Mapping[str, Any]) -> bool:
    ads = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return isinstance(ads, int) and ads >= 0


def pod_has_active_deadline(pod: Mapping[str, Any]) -> bool:
    """``spec.activeDeadlineSeconds`` set and >= 0: the quota's Terminating scope (kept
    by a compact cached pod with its other spec facts)."""
    answer: bool = _fact(pod, "pod_spec_facts", _spec_facts, 2, _has_active_deadline)
    return answer


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

    A compact cached pod keeps them once read, with its other spec facts (as a tuple:
    usually the empty one): the PVC protection controller asks at every event of every
    pod."""
    if type(pod) is dict:
        return _claim_names(pod)
    names: tuple[str, ...] = _fact(pod, "pod_spec_facts", _spec_facts, 1, _claim_names_tuple)
    return list(names)


def _claim_names_tuple(pod: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(_claim_names(pod))


def _claim_names(pod: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    name: str | None = None
    for v in (pod.get("spec") or {}).get("volumes") or []:
        # (type checks first: the Mapping ABC check costs more than the rest, per volume)
        if type(v) is not dict and not isinstance(v, Mapping):
            continue
        src = v.get("persistentVolumeClaim")
        if src is not None and (type(src) is dict or isinstance(src, Mapping)) \
                and src.get("claimName"):
            out.append(str(src["claimName"]))
        elif v.get("ephemeral") is not None:
            if name is None:
                name = str((pod.get("metadata") or {}).get("name") or "")
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
