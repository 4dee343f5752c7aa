"""The Recreate strategy (upstream deployment/recreate.go).

All old pods go before any new one starts: scale every old ReplicaSet to
zero, wait until none of their pods is left running (the pods informer, as
upstream's pod map; a pod deletion re-enqueues the Deployment once the last
one is gone), only then create the new ReplicaSet and scale it to
``replicas`` at once.

Data flow::

    old RSs ── scale to 0 ──► (wait: old_pods_running over the pod map)
                                   │ none left
    new RS ── create if missing, scale to replicas ──► progress.sync_rollout_status

The old ReplicaSets are scaled down in the order the Deployment's ReplicaSet
list has, as upstream, which does not sort them: there it is the informer
cache's map order (random in Go), so the order of the ScalingReplicaSet
events of several old ReplicaSets varies from run to run on a real cluster;
here it is the cache index's (the Deployment's own ReplicaSets, then
adopted orphans, each as they were cached).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

__all__ = [
    "old_pods_running",
    "rollout_recreate",
    "scale_down_old_replica_sets_for_recreate",
    "scale_up_new_replica_set_for_recreate",
]


async def rollout_recreate(dc: DeploymentController, d: dict[str, Any], rs_list: list[Obj],
                           pod_map: Mapping[str, list[Obj]]) -> None:
    """One Recreate step: old down; when their pods are gone, new up."""
    # No new ReplicaSet yet: creating it now would scale up before scaling down.
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    all_rss: Sequence[Obj | None] = [*old_rss, new_rs]
    active_old = util.filter_active_replica_sets(old_rss)

    if await scale_down_old_replica_sets_for_recreate(dc, active_old, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return

    if old_pods_running(new_rs, old_rss, pod_map):
        # Wait; the pod deletions bring us back.
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return

    if new_rs is None:
        new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
        all_rss = [*old_rss, new_rs]
    if new_rs is None:  # get_new_replica_set creates it or raises
        raise RuntimeError("no new ReplicaSet after creating it")

    await scale_up_new_replica_set_for_recreate(dc, new_rs, d)

    if util.deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(dc, old_rss, d)

    await sync_rollout_status(dc, all_rss, new_rs, d)


async def scale_down_old_replica_sets_for_recreate(dc: DeploymentController,
                                                   old_rss: list[Obj], d: Obj) -> bool:
    """Scale every old ReplicaSet to zero; whether any was scaled."""
    scaled = False
    for i, rs in enumerate(old_rss):
        if util.spec_replicas(rs) == 0:
            continue
        did, updated = await scale_replica_set_and_record_event(dc, rs, 0, d)
        if did:
            old_rss[i] = updated
            scaled = True
    return scaled


def old_pods_running(new_rs: Obj | None, old_rss: list[Obj],
                     pod_map: Mapping[str, list[Obj]]) -> bool:
    """Whether old pods still run, or an old ReplicaSet still reports some.

    Terminal pods (Succeeded, Failed) do not count; Unknown does (the node may
    merely be unreachable, and the pod still running there).
    """
    if util.get_actual_replica_count(old_rss) > 0:
        return True
    new_uid = (new_rs.get("metadata") or {}).get("uid") if new_rs is not None else None
    for rs_uid, pods in pod_map.items():
        if new_uid is not None and rs_uid == new_uid:
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                continue
            return True
    return False


async def scale_up_new_replica_set_for_recreate(dc: DeploymentController, new_rs: Obj,
                                                d: Obj) -> bool:
    """Scale the new ReplicaSet to ``replicas``; whether it was scaled."""
    scaled, _ = await scale_replica_set_and_record_event(dc, new_rs, util.spec_replicas(d), d)
    return scaled
