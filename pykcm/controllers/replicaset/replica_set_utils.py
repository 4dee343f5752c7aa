"""ReplicaSet status: what a sync computes from the pods, and how it is written (upstream replica_set_utils.go).

Data flow (the end of every ``sync_replica_set``)::

    claimed active pods, terminating pods, the manage_replicas error
        │ calculate_status(rs, ...)     replicas, fullyLabeledReplicas, readyReplicas,
        │                               availableReplicas (ready >= minReadySeconds),
        │                               terminatingReplicas, the ReplicaFailure condition
        ▼
    new status ── update_replica_set_status(client, rs, status)
        │ unchanged and observedGeneration current → no write (the steady state)
        │ else PUT replicasets/<name>/status with observedGeneration = metadata.generation;
        ▼ on failure GET the live object once and PUT again (statusUpdateRetries = 1)
    the ReplicaSet as written (or the error, to retry through the rate limiter)

The ReplicaFailure condition (type ``ReplicaFailure``, status True) is set
when creating (reason ``FailedCreate``) or deleting (``FailedDelete``) pods
failed and no such condition is there yet; it is removed by the first sync
whose pod management succeeds. Its message is the error's text (a failed
delete reads ``unable to delete pods: <cause>``, RealPodControl's wrapping).

The body written leaves out what Go's encoder omits (go_replica_set_status):
zero ``fullyLabeledReplicas`` / ``readyReplicas`` / ``availableReplicas`` /
``observedGeneration`` and empty conditions; ``replicas`` and the pointer
``terminatingReplicas`` are sent as 0.

Objects are the JSON wire form; the cached ReplicaSet passed in is never
mutated (the status written is a new dict).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.pod_util import pod_phase_and_ready
from pykcm.api.timestamps import format_time, parse_time
from pykcm.client import Client, ResourceRef

__all__ = [
    "REPLICA_SET_REPLICA_FAILURE",
    "STATUS_UPDATE_RETRIES",
    "calculate_status",
    "filter_out_condition",
    "get_condition",
    "new_replica_set_condition",
    "remove_condition",
    "set_condition",
    "spec_replicas",
    "update_replica_set_status",
]

log = logging.getLogger("pykcm.controllers.replicaset")

REPLICA_SET_REPLICA_FAILURE: Final = "ReplicaFailure"
"""apps.ReplicaSetReplicaFailure: some pods could not be created or deleted."""

STATUS_UPDATE_RETRIES: Final = 1
"""How many times a failed status update is retried after a fresh GET (upstream statusUpdateRetries)."""

# The status counters compared to decide whether a write is needed; a
# missing one is 0, as Go's omitempty int32 fields.
_COUNTERS: Final = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def spec_replicas(rs: Mapping[str, Any]) -> int:
    """``spec.replicas`` (1 when unset, the API default)."""
    v = (rs.get("spec") or {}).get("replicas")
    return 1 if v is None else int(v)


def new_replica_set_condition(type_: str, status: str, reason: str, message: str,
                              now: float | None = None) -> dict[str, Any]:
    """A ReplicaSet condition whose lastTransitionTime is ``now`` (default: the current time)."""
    return {
        "type": type_,
        "status": status,
        "lastTransitionTime": format_time(REAL_CLOCK.now() if now is None else now),
        "reason": reason,
        "message": message,
    }


def get_condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_`` in a ReplicaSet status, or None."""
    for cond in status.get("conditions") or ():
        if cond.get("type") == type_:
            found: Mapping[str, Any] = cond
            return found
    return None


def filter_out_condition(conditions: Sequence[Mapping[str, Any]] | None,
                         type_: str) -> list[Mapping[str, Any]]:
    """The conditions other than ``type_``."""
    return [c for c in conditions or () if c.get("type") != type_]


def set_condition(status: dict[str, Any], condition: Mapping[str, Any]) -> None:
    """Add or replace ``condition`` in ``status``; a condition of the same status and reason is kept.

    Keeping it preserves its lastTransitionTime (and message), as upstream.
    """
    current = get_condition(status, condition["type"])
    if (current is not None and current.get("status") == condition.get("status")
            and current.get("reason") == condition.get("reason")):
        return
    status["conditions"] = [*filter_out_condition(status.get("conditions"), condition["type"]),
                            condition]


def remove_condition(status: dict[str, Any], type_: str) -> None:
    """Remove the condition of ``type_`` from ``status`` (no ``conditions`` key if none is left)."""
    remaining = filter_out_condition(status.get("conditions"), type_)
    if remaining:
        status["conditions"] = remaining
    else:
        status.pop("conditions", None)


def calculate_status(rs: Mapping[str, Any], active_pods: Sequence[Mapping[str, Any]],
                     terminating_pods: Sequence[Mapping[str, Any]] | None,
                     manage_replicas_err: BaseException | None, *,
                     enable_status_terminating_replicas: bool = True,
                     now: float | None = None) -> dict[str, Any]:
    """The status the ReplicaSet should have for these pods (upstream calculateStatus).

    ``active_pods`` are the claimed active pods; ``terminating_pods`` the
    claimed pods being deleted (counted as ``terminatingReplicas`` when the
    DeploymentReplicaSetTerminatingReplicas feature, on by default since
    v1.35, is enabled; the field is left out otherwise). ``now`` (epoch
    seconds) judges availability; ``observedGeneration`` is left as it was
    (:func:`update_replica_set_status` sets it).
    """
    old: Mapping[str, Any] = rs.get("status") or {}
    new: dict[str, Any] = dict(old)
    if old.get("conditions") is not None:
        new["conditions"] = list(old["conditions"])
    spec = rs.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    t = REAL_CLOCK.now() if now is None else now
    # The template's labels are a superset of the selector: a pod carrying
    # them all is "fully labeled" (upstream's Set(...).AsSelectorPreValidated():
    # equality on every key, tested here as a subset without building a selector).
    template_labels = list((((spec.get("template") or {}).get("metadata") or {})
                            .get("labels") or {}).items())
    fully_labeled = ready = available = 0
    # One pass, each pod's metadata and status read once (podutil.IsPodReady and
    # IsPodAvailable on the Ready condition found once): this loop runs over every
    # pod of the ReplicaSet at every sync.
    for pod in active_pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        for k, v in template_labels:
            if labels.get(k) != v:
                break
        else:
            fully_labeled += 1
        # (a compact cached pod keeps these once read: its status is raw JSON)
        _, ready_status, ready_since = pod_phase_and_ready(pod)
        if ready_status != "True":
            continue
        ready += 1
        if min_ready == 0:
            available += 1
        else:
            since = parse_time(ready_since)
            if since is not None and since + min_ready <= t:
                available += 1

    failure = get_condition(old, REPLICA_SET_REPLICA_FAILURE)
    if manage_replicas_err is not None and failure is None:
        diff = len(active_pods) - spec_replicas(rs)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        set_condition(new, new_replica_set_condition(REPLICA_SET_REPLICA_FAILURE, "True", reason,
                                                     str(manage_replicas_err), t))
    elif manage_replicas_err is None and failure is not None:
        remove_condition(new, REPLICA_SET_REPLICA_FAILURE)

    new["replicas"] = len(active_pods)
    if enable_status_terminating_replicas:
        new["terminatingReplicas"] = len(terminating_pods or ())
    else:
        new.pop("terminatingReplicas", None)
    new["fullyLabeledReplicas"] = fully_labeled
    new["readyReplicas"] = ready
    new["availableReplicas"] = available
    return new


#: ReplicaSetStatus (and ReplicationControllerStatus) fields tagged omitempty whose zero
#: value Go's encoder leaves out: replicas is always sent, terminatingReplicas (a pointer)
#: is sent as 0.
_OMITTED_WHEN_ZERO: Final = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas",
                             "observedGeneration", "conditions")


def go_replica_set_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as kube-controller-manager sends it: the omitempty fields' zero values
    (0, an empty list) left out, as the Go struct's encoding does."""
    return {k: v for k, v in status.items() if not (k in _OMITTED_WHEN_ZERO and not v)}


def _status_unchanged(rs: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    old: Mapping[str, Any] = rs.get("status") or {}
    if any(int(old.get(k) or 0) != int(new_status.get(k) or 0) for k in _COUNTERS):
        return False
    # terminatingReplicas is a pointer upstream: absent and 0 differ.
    if old.get("terminatingReplicas") != new_status.get("terminatingReplicas"):
        return False
    generation = int((rs.get("metadata") or {}).get("generation") or 0)
    if generation != int(old.get("observedGeneration") or 0):
        return False
    return list(old.get("conditions") or ()) == list(new_status.get("conditions") or ())


async def update_replica_set_status(client: Client, rs: Mapping[str, Any],
                                    new_status: Mapping[str, Any], *,
                                    resource: ResourceRef = "replicasets") -> Mapping[str, Any]:
    """Write ``new_status`` through the status subresource unless nothing changed.

    Returns the ReplicaSet as written (``rs`` itself when no write was
    needed). A failed PUT is retried once on the object freshly read from
    the API server (the cache may be behind: a Conflict); an error of that
    GET, or of the last PUT, is raised.
    """
    if _status_unchanged(rs, new_status):
        return rs
    meta = rs.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    status = dict(new_status)
    # The generation acted on, saved now: a retry must not claim a newer spec was seen.
    status["observedGeneration"] = int(meta.get("generation") or 0)
    current: Mapping[str, Any] = rs
    attempt = 0
    while True:
        if log.isEnabledFor(logging.DEBUG):
            old = current.get("status") or {}
            log.debug("Updating status for ReplicaSet %s/%s, replicas %s->%s (need %d), "
                      "fullyLabeledReplicas %s->%s, readyReplicas %s->%s, availableReplicas "
                      "%s->%s, terminatingReplicas %s->%s, sequence No: %s->%s",
                      namespace, name, old.get("replicas", 0), status["replicas"],
                      spec_replicas(current), old.get("fullyLabeledReplicas", 0),
                      status["fullyLabeledReplicas"], old.get("readyReplicas", 0),
                      status["readyReplicas"], old.get("availableReplicas", 0),
                      status["availableReplicas"], old.get("terminatingReplicas"),
                      status.get("terminatingReplicas"), old.get("observedGeneration", 0),
                      status["observedGeneration"])
        body = {**current, "status": go_replica_set_status(status)}
        try:
            return await client.update_status(resource, body, namespace)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure is retried once, then raised
            update_err: Exception = exc
        if attempt >= STATUS_UPDATE_RETRIES:
            raise update_err
        attempt += 1
        # If this GET fails the cached counts cannot be trusted either; its
        # error says more than the failed update.
        current = await client.get(resource, name, namespace)
