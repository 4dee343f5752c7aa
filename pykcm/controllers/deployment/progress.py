"""Rollout progress: the Progressing and ReplicaFailure conditions (upstream deployment/progress.go).

After each rollout step the status is recomputed and the Progressing
condition moves on:

====================================  ==============================================
what the new status shows             Progressing
====================================  ==============================================
rollout complete                      True, NewReplicaSetAvailable
progress since the last status        True, ReplicaSetUpdated (transition time kept)
no progress for progressDeadlineSecs  False, ProgressDeadlineExceeded
====================================  ==============================================

A Deployment with no deadline carries no Progressing condition. A
ReplicaFailure condition of the new ReplicaSet (or of any, when the new one
has none) is copied. Nothing re-enqueues a Deployment that makes no
progress, so when its status did not change it is re-enqueued for the
moment its deadline passes (``requeue_stuck_deployment``).

Data flow::

    ReplicaSets ─► sync.calculate_status ─► conditions above ─► PUT deployments/status
                                                  │ unchanged and not finished
                                                  ▼
                                 enqueue_after(lastUpdateTime + deadline - now + 1 s)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pykcm.api.clock import REAL_CLOCK
from pykcm.api.pod_util import parse_time
from pykcm.controllers.deployment import util
from pykcm.controllers.deployment.sync import calculate_status
from pykcm.controllers.deployment.util import Obj

if TYPE_CHECKING:
    from pykcm.controllers.deployment.deployment_controller import DeploymentController

__all__ = ["get_replica_failures", "requeue_stuck_deployment", "rollout_status",
           "sync_rollout_status"]


def rollout_status(all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj,
                   now: float | None = None, terminating_replicas: bool = True
                   ) -> dict[str, Any]:
    """The new status with Progressing and ReplicaFailure brought up to date (pure)."""
    new_status = calculate_status(all_rss, new_rs, d, terminating_replicas, now)
    if not util.has_progress_deadline(d):
        # No deadline, no progress to estimate.
        util.remove_deployment_condition(new_status, util.PROGRESSING)

    current = util.get_deployment_condition(d.get("status"), util.PROGRESSING)
    is_complete = (new_status.get("replicas", 0) == new_status.get("updatedReplicas", 0)
                   and current is not None
                   and current.get("reason") == util.NEW_RS_AVAILABLE_REASON)
    new_name = (new_rs.get("metadata") or {}).get("name") if new_rs is not None else None
    d_name = (d.get("metadata") or {}).get("name")
    # Once complete, a Deployment stays so until a new rollout starts.
    if util.has_progress_deadline(d) and not is_complete:
        if util.deployment_complete(d, new_status):
            msg = (f'ReplicaSet "{new_name}" has successfully progressed.' if new_rs is not None
                   else f'Deployment "{d_name}" has successfully progressed.')
            util.set_deployment_condition(new_status, util.new_deployment_condition(
                util.PROGRESSING, "True", util.NEW_RS_AVAILABLE_REASON, msg, now))
        elif util.deployment_progressing(d, new_status):
            msg = (f'ReplicaSet "{new_name}" is progressing.' if new_rs is not None
                   else f'Deployment "{d_name}" is progressing.')
            cond = util.new_deployment_condition(
                util.PROGRESSING, "True", util.REPLICA_SET_UPDATED_REASON, msg, now)
            # Progress refreshes lastUpdateTime (the deadline counts from it)
            # even with the same reason, so the condition is replaced, keeping
            # its transition time while it stays True.
            if current is not None:
                if current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                util.remove_deployment_condition(new_status, util.PROGRESSING)
            util.set_deployment_condition(new_status, cond)
        elif util.deployment_timed_out(d, new_status, now):
            msg = (f'ReplicaSet "{new_name}" has timed out progressing.' if new_rs is not None
                   else f'Deployment "{d_name}" has timed out progressing.')
            util.set_deployment_condition(new_status, util.new_deployment_condition(
                util.PROGRESSING, "False", util.TIMED_OUT_REASON, msg, now))

    failures = get_replica_failures(all_rss, new_rs)
    if failures:
        # Only the first failure is reported.
        util.set_deployment_condition(new_status, failures[0])
    else:
        util.remove_deployment_condition(new_status, util.REPLICA_FAILURE)
    return new_status


async def sync_rollout_status(dc: DeploymentController, all_rss: Sequence[Obj | None],
                              new_rs: Obj | None, d: dict[str, Any]) -> None:
    """Write the rollout status if it changed; otherwise schedule the deadline check."""
    new_status = rollout_status(all_rss, new_rs, d, dc.clock.now(),
                                terminating_replicas=dc.enable_status_terminating_replicas)
    if d.get("status") == new_status:
        requeue_stuck_deployment(dc, d, new_status)
        return
    d["status"] = new_status
    await dc.write_deployment_status(d)


def get_replica_failures(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> list[dict[str, Any]]:
    """ReplicaFailure conditions of the new ReplicaSet, else of all, as Deployment conditions."""
    out: list[dict[str, Any]] = []
    if new_rs is not None:
        out = [util.replica_set_to_deployment_condition(c)
               for c in (new_rs.get("status") or {}).get("conditions") or ()
               if c.get("type") == util.REPLICA_FAILURE]
    if out:
        return out
    for rs in all_rss:
        if rs is None:
            continue
        out.extend(util.replica_set_to_deployment_condition(c)
                   for c in (rs.get("status") or {}).get("conditions") or ()
                   if c.get("type") == util.REPLICA_FAILURE)
    return out


def stuck_deployment_delay(d: Obj, new_status: Obj, now: float | None = None) -> float | None:
    """Seconds until ``d``'s progress deadline passes; None when there is nothing to check.

    Nothing to check: no deadline, no Progressing condition, the rollout is
    complete or has already timed out.
    """
    current = util.get_deployment_condition(d.get("status"), util.PROGRESSING)
    if not util.has_progress_deadline(d) or current is None:
        return None
    if (util.deployment_complete(d, new_status)
            or current.get("reason") == util.TIMED_OUT_REASON):
        return None
    since = parse_time(current.get("lastUpdateTime"))
    if since is None:
        return None
    t = REAL_CLOCK.now() if now is None else now
    # lastUpdateTime + progressDeadlineSeconds - now: updated 3 minutes ago
    # with a 10 minute deadline → check again in 7 minutes.
    return since + int((d.get("spec") or {})["progressDeadlineSeconds"]) - t


def requeue_stuck_deployment(dc: DeploymentController, d: Obj, new_status: Obj) -> float | None:
    """Re-enqueue ``d`` for when its deadline passes (no event would); the delay, or None.

    Less than a second left: re-enqueue through the rate limiter now (the
    next sync sees it either complete or timed out). Otherwise one second
    past the deadline, so the check surely finds it passed.
    """
    after = stuck_deployment_delay(d, new_status, dc.clock.now())
    if after is None:
        return None
    if after < 1.0:
        dc.enqueue_rate_limited(d)
        return 0.0
    dc.enqueue_after(d, after + 1.0)
    return after
