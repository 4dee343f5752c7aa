"""The RollingUpdate strategy (upstream deployment/rolling.go).

One step of a rolling update per sync: scale the new ReplicaSet up as far
as maxSurge allows; if nothing could be scaled up, scale old ReplicaSets
down as far as maxUnavailable allows (their unhealthy replicas first, which
costs no availability); once the rollout is complete, prune history. The
ReplicaSet controller then creates and deletes pods, their readiness
changes the ReplicaSets' status, and that enqueues the Deployment again.

Data flow::

    new RS ── reconcile_new_replica_set: up to replicas, within replicas + maxSurge total
       │ (nothing to add)
    old RSs ─ reconcile_old_replica_sets:
               max_scaled_down = all - minAvailable - new RS unavailable
               1. cleanup_unhealthy_replicas (spec - available of each, oldest first)
               2. scale_down_old_replica_sets_for_rolling_update (available - minAvailable)
       │
    progress.sync_rollout_status
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pykcm.controllers.deployment import util
from pykcm.controllers.deployment.progress import sync_rollout_status
from pykcm.controllers.deployment.sync import (
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set_and_record_event,
)
from pykcm.controllers.deployment.util import Obj

if TYPE_CHECKING:
    from pykcm.controllers.deployment.deployment_controller import DeploymentController

log = logging.getLogger("pykcm.controllers.deployment")

__all__ = [
    "cleanup_unhealthy_replicas",
    "old_replica_sets_scale_down_plan",
    "reconcile_new_replica_set",
    "reconcile_old_replica_sets",
    "rollout_rolling",
    "scale_down_old_replica_sets_for_rolling_update",
]


def _available(rs: Obj) -> int:
    return int((rs.get("status") or {}).get("availableReplicas") or 0)


async def rollout_rolling(dc: DeploymentController, d: dict[str, Any], rs_list: list[Obj]) -> None:
    """One rolling-update step: scale up the new ReplicaSet, else scale down old ones."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
    if new_rs is None:  # get_new_replica_set creates it or raises
        raise RuntimeError("no new ReplicaSet after creating it")
    all_rss: list[Obj] = [*old_rss, new_rs]

    if await reconcile_new_replica_set(dc, all_rss, new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return

    if await reconcile_old_replica_sets(dc, all_rss, util.filter_active_replica_sets(old_rss),
                                        new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return

    if util.deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(dc, old_rss, d)

    await sync_rollout_status(dc, all_rss, new_rs, d)


async def reconcile_new_replica_set(dc: DeploymentController, all_rss: list[Obj], new_rs: Obj,
                                    d: Obj) -> bool:
    """Scale the new ReplicaSet toward ``replicas`` within maxSurge; whether it was scaled."""
    replicas = util.spec_replicas(d)
    current = util.spec_replicas(new_rs)
    if current == replicas:
        return False
    if current > replicas:
        scaled, _ = await scale_replica_set_and_record_event(dc, new_rs, replicas, d)
        return scaled
    new_count = util.new_rs_new_replicas(d, all_rss, new_rs)
    scaled, _ = await scale_replica_set_and_record_event(dc, new_rs, new_count, d)
    return scaled


async def reconcile_old_replica_sets(dc: DeploymentController, all_rss: list[Obj],
                                     old_rss: list[Obj], new_rs: Obj, d: Obj) -> bool:
    """Scale old ReplicaSets down as far as maxUnavailable allows; whether any was.

    The bound counts the new ReplicaSet's unavailable pods as unavailable
    already, so old pods are not removed while new ones are not up: with
    replicas 10, maxUnavailable 2 (minAvailable 8), maxSurge 3 and the new
    ReplicaSet at 3 of which none is available, old ones (10) may lose
    13 - 8 - 3 = 2.
    """
    if util.get_replica_count(old_rss) == 0:
        return False  # nothing left to scale down
    all_pods = util.get_replica_count(all_rss)
    min_available = util.spec_replicas(d) - util.max_unavailable(d)
    new_rs_unavailable = util.spec_replicas(new_rs) - _available(new_rs)
    max_scaled_down = all_pods - min_available - new_rs_unavailable
    if max_scaled_down <= 0:
        return False
    # Unhealthy replicas first: they would otherwise block the rollout until
    # the deadline (kubernetes#16737), and removing them costs no availability.
    # As upstream, a failure of either step is no sync error (`return false, nil`): an old
    # ReplicaSet's status may still count pods its ReplicaSet controller has yet to delete
    # (status.availableReplicas > spec.replicas), and the rollout goes on to its status.
    try:
        old_rss, cleanup_count = await cleanup_unhealthy_replicas(dc, old_rss, d,
                                                                  max_scaled_down)
    except Exception as exc:  # noqa: BLE001 - upstream drops it too
        log.debug("cleaning up unhealthy replicas: %s", exc)
        return False
    try:
        scaled_down = await scale_down_old_replica_sets_for_rolling_update(
            dc, [*old_rss, new_rs], old_rss, d)
    except Exception as exc:  # noqa: BLE001 - upstream drops it too
        log.debug("scaling down old ReplicaSets: %s", exc)
        return False
    return cleanup_count + scaled_down > 0


async def cleanup_unhealthy_replicas(dc: DeploymentController, old_rss: list[Obj], d: Obj,
                                     max_cleanup_count: int) -> tuple[list[Obj], int]:
    """Scale old ReplicaSets down by their unavailable replicas, oldest first, at most ``max_cleanup_count``.

    The ReplicaSet controller deletes not-ready, unscheduled and pending pods
    first, so these scale-downs remove exactly the unhealthy ones.
    """
    out = util.sort_by_creation_timestamp(old_rss)
    total = 0
    for i, rs in enumerate(out):
        if total >= max_cleanup_count:
            break
        replicas = util.spec_replicas(rs)
        if replicas == 0 or replicas == _available(rs):
            continue  # nothing, or nothing unhealthy, to remove
        count = min(max_cleanup_count - total, replicas - _available(rs))
        new_count = replicas - count
        if new_count > replicas:
            raise ValueError(f"when cleaning up unhealthy replicas, got invalid request to "
                             f"scale down {(rs.get('metadata') or {}).get('name')} "
                             f"{replicas} -> {new_count}")
        _, updated = await scale_replica_set_and_record_event(dc, rs, new_count, d)
        total += count
        out[i] = updated
    return out, total


def old_replica_sets_scale_down_plan(all_rss: Sequence[Obj], old_rss: Sequence[Obj],
                                     d: Obj) -> list[tuple[Obj, int]]:
    """(old ReplicaSet, new size) pairs that keep at least minAvailable pods available.

    ``available - minAvailable`` replicas go, taken from the oldest
    ReplicaSets first.
    """
    min_available = util.spec_replicas(d) - util.max_unavailable(d)
    available = util.get_available_replica_count(all_rss)
    if available <= min_available:
        return []  # cannot scale down
    to_remove = available - min_available
    plan: list[tuple[Obj, int]] = []
    removed = 0
    for rs in util.sort_by_creation_timestamp(old_rss):
        if removed >= to_remove:
            break
        replicas = util.spec_replicas(rs)
        if replicas == 0:
            continue
        count = min(replicas, to_remove - removed)
        plan.append((rs, replicas - count))
        removed += count
    return plan


async def scale_down_old_replica_sets_for_rolling_update(
        dc: DeploymentController, all_rss: list[Obj], old_rss: list[Obj], d: Obj) -> int:
    """Scale old ReplicaSets down by what availability allows; how many replicas went."""
    total = 0
    for rs, new_count in old_replica_sets_scale_down_plan(all_rss, old_rss, d):
        before = util.spec_replicas(rs)
        await scale_replica_set_and_record_event(dc, rs, new_count, d)
        total += before - new_count
    return total
