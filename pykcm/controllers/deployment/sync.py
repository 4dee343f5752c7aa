"""Scaling, the new ReplicaSet, cleanup and status (upstream deployment/sync.go).

The steps every path of the sync shares:

- ``get_all_replica_sets_and_sync_revision``: split the claimed ReplicaSets
  into the new one (template equal to the Deployment's, hash ignored) and
  the old ones; bring the new one's annotations and revision (max old + 1)
  up to date, or create it (``<name>-<hash>``, with the hash label in its
  selector and template; a name taken by a foreign ReplicaSet bumps
  ``status.collisionCount`` and retries), and copy its revision to the
  Deployment.
- ``scale``: a replicas change in the middle of a rollout (or while paused)
  is spread over the active ReplicaSets in proportion to their sizes, the
  rounding leftover going to the largest (``util.get_proportion``).
- ``cleanup_deployment``: delete the oldest fully scaled-down ReplicaSets
  beyond ``revisionHistoryLimit``.
- ``calculate_status`` / ``sync_deployment_status``: counts summed over the
  ReplicaSets and the Available condition.

Data flow::

    claimed ReplicaSets ─► new / old split ─► create or annotate the new one
                                             │
              scale (proportional) ──► PUT replicasets (replicas + annotations)
                                             │           + ScalingReplicaSet event
                           calculate_status ─► PUT deployments/status
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.owner_refs import get_controller_of, new_controller_ref
from pykcm.client.errors import ApiError, has_status_cause, is_already_exists, is_not_found
from pykcm.controllers.deployment import util
from pykcm.controllers.deployment.hashing import compute_hash
from pykcm.controllers.deployment.util import Obj

if TYPE_CHECKING:
    from pykcm.controllers.deployment.deployment_controller import DeploymentController

__all__ = [
    "MAX_REV_HISTORY_LENGTH_IN_CHARS",
    "calculate_status",
    "check_paused_conditions",
    "cleanup_deployment",
    "generate_replica_set_name",
    "get_all_replica_sets_and_sync_revision",
    "get_new_replica_set",
    "is_scaling_event",
    "new_replica_set",
    "scale",
    "scale_replica_set",
    "scale_replica_set_and_record_event",
    "sync",
    "sync_deployment_status",
    "sync_status_only",
]

MAX_REV_HISTORY_LENGTH_IN_CHARS: Final = 2000
"""The revision-history annotation is cut to about this many characters (~100 revisions)."""


async def sync_status_only(dc: DeploymentController, d: dict[str, Any],
                           rs_list: list[Obj]) -> None:
    """Only update the status (a Deployment being deleted)."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    await sync_deployment_status(dc, [*old_rss, new_rs], new_rs, d)


async def sync(dc: DeploymentController, d: dict[str, Any], rs_list: list[Obj]) -> None:
    """Reconcile a scaling event or a paused Deployment: scale, no rollout."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    await scale(dc, d, new_rs, old_rss)
    # Clean up the history of a paused Deployment with no rollback in flight.
    from pykcm.controllers.deployment.rollback import get_rollback_to
    if (d.get("spec") or {}).get("paused") and get_rollback_to(d) is None:
        await cleanup_deployment(dc, old_rss, d)
    await sync_deployment_status(dc, [*old_rss, new_rs], new_rs, d)


async def check_paused_conditions(dc: DeploymentController, d: dict[str, Any]) -> None:
    """Set Progressing Unknown (DeploymentPaused / DeploymentResumed) when pausing or resuming.

    Without it a Deployment resumed after a pause longer than its deadline
    would be reported as timed out at once.
    """
    if not util.has_progress_deadline(d):
        return
    status = d.setdefault("status", {})
    cond = util.get_deployment_condition(status, util.PROGRESSING)
    if cond is not None and cond.get("reason") == util.TIMED_OUT_REASON:
        # A reported lack of progress is not overwritten with a paused condition.
        return
    paused_cond_exists = cond is not None and cond.get("reason") == util.PAUSED_DEPLOY_REASON
    paused = bool((d.get("spec") or {}).get("paused"))
    if paused and not paused_cond_exists:
        util.set_deployment_condition(status, util.new_deployment_condition(
            util.PROGRESSING, "Unknown", util.PAUSED_DEPLOY_REASON, "Deployment is paused",
            dc.clock.now()))
    elif not paused and paused_cond_exists:
        util.set_deployment_condition(status, util.new_deployment_condition(
            util.PROGRESSING, "Unknown", util.RESUMED_DEPLOY_REASON, "Deployment is resumed",
            dc.clock.now()))
    else:
        return
    await dc.write_deployment_status(d)


async def get_all_replica_sets_and_sync_revision(
        dc: DeploymentController, d: dict[str, Any], rs_list: list[Obj],
        create_if_not_existed: bool) -> tuple[Obj | None, list[Obj]]:
    """(new ReplicaSet or None, all old ReplicaSets), the new one's revision brought up to date."""
    _, all_old = util.find_old_replica_sets(d, rs_list)
    new_rs = await get_new_replica_set(dc, d, rs_list, all_old, create_if_not_existed)
    return new_rs, all_old


DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253


def generate_replica_set_name(deployment_name: str, pod_template_hash: str) -> str:
    """``<deployment>-<hash>``, the Deployment's name cut so that the whole fits a DNS
    subdomain (253 characters), as upstream's generateReplicaSetName."""
    keep = DNS1123_SUBDOMAIN_MAX_LENGTH - 1 - len(pod_template_hash)
    if len(deployment_name) > keep > 0:
        deployment_name = deployment_name[:keep]
    return f"{deployment_name}-{pod_template_hash}"


def new_replica_set(d: Obj, all_old: list[Obj], new_revision: str) -> dict[str, Any]:
    """The new ReplicaSet to create for ``d``: ``<name>-<hash>``, hash label added, sized.

    Pure: the caller creates it. Its replicas are what the strategy allows
    now (util.new_rs_new_replicas); its annotations are the Deployment's
    (minus the managed ones) plus revision and replicas annotations.
    """
    spec = d.get("spec") or {}
    template = util.deep_copy(spec.get("template") or {})
    collision_count = (d.get("status") or {}).get("collisionCount")
    pod_template_hash = compute_hash(template, collision_count)
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels[util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = pod_template_hash
    template.setdefault("metadata", {})["labels"] = labels
    selector = util.deep_copy(spec.get("selector") or {})
    match_labels = dict(selector.get("matchLabels") or {})
    match_labels[util.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = pod_template_hash
    selector["matchLabels"] = match_labels
    meta = d.get("metadata") or {}
    rs: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            # Deterministic, so a retried create after a lost response is idempotent.
            "name": generate_replica_set_name(str(meta.get("name") or ""), pod_template_hash),
            "namespace": meta.get("namespace"),
            "ownerReferences": [new_controller_ref(d, "apps/v1", "Deployment")],
            "labels": dict(labels),
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": int(spec.get("minReadySeconds") or 0),
            "selector": selector,
            "template": template,
        },
    }
    rs["spec"]["replicas"] = util.new_rs_new_replicas(d, [*all_old, rs], rs)
    util.set_new_replica_set_annotations(d, rs, new_revision, False,
                                         MAX_REV_HISTORY_LENGTH_IN_CHARS)
    return rs


async def get_new_replica_set(dc: DeploymentController, d: dict[str, Any], rs_list: list[Obj],
                              old_rss: list[Obj], create_if_not_existed: bool) -> Obj | None:
    """The new ReplicaSet, annotations synced; created when missing and asked to.

    1. An existing one gets the Deployment's annotations, revision max(old)+1
       (the previous revision goes to revision-history on a rollback) and
       minReadySeconds; the Deployment takes its revision.
    2. A missing one is created; an AlreadyExists from a ReplicaSet that is
       not ours or has another template is a hash collision: collisionCount
       is bumped and the error raised, so the next sync hashes differently.
    """
    existing = util.find_new_replica_set(d, rs_list)
    new_revision = str(util.max_revision(old_rss) + 1)
    spec = d.get("spec") or {}
    status = d.setdefault("status", {})

    if existing is not None:
        rs_copy = util.deep_copy(existing)
        annotations_updated = util.set_new_replica_set_annotations(
            d, rs_copy, new_revision, True, MAX_REV_HISTORY_LENGTH_IN_CHARS)
        min_ready = int(spec.get("minReadySeconds") or 0)
        if annotations_updated or int(rs_copy["spec"].get("minReadySeconds") or 0) != min_ready:
            rs_copy["spec"]["minReadySeconds"] = min_ready
            return await dc.write_replica_set(rs_copy)

        # The revision in the ReplicaSet's annotation is the one to show.
        rev = (rs_copy["metadata"].get("annotations") or {}).get(util.REVISION_ANNOTATION, "")
        needs_update = util.set_deployment_revision(d, rev)
        # First progress estimate of a Deployment that had none: count from
        # the first time we saw its new ReplicaSet.
        if (util.has_progress_deadline(d)
                and util.get_deployment_condition(status, util.PROGRESSING) is None):
            util.set_deployment_condition(status, util.new_deployment_condition(
                util.PROGRESSING, "True", util.FOUND_NEW_RS_REASON,
                f'Found new replica set "{rs_copy["metadata"].get("name")}"', dc.clock.now()))
            needs_update = True
        if needs_update:
            await dc.write_deployment_status(d)
        return rs_copy

    if not create_if_not_existed:
        return None

    new_rs = new_replica_set(d, old_rss, new_revision)
    new_replicas = int(new_rs["spec"]["replicas"])
    ns = str(new_rs["metadata"]["namespace"])
    already_exists = False
    try:
        created: Obj = await dc.client.create("replicasets.apps", new_rs, ns)
    except ApiError as exc:
        if is_already_exists(exc):
            # A slow cache or a fast resync, or a hash collision.
            already_exists = True
            try:
                rs: Obj = dc.rs_lister.by_namespace(ns).get(new_rs["metadata"]["name"])
            except ApiError as get_exc:
                if is_not_found(get_exc):
                    # Not in the cache yet: the next sync sees it.
                    raise exc from None
                raise
            ref = get_controller_of(rs)
            if (ref is not None and ref.get("uid") == meta_of(d).get("uid")
                    and util.equal_ignore_hash(spec.get("template"),
                                               (rs.get("spec") or {}).get("template"))):
                created = rs
            else:
                # Someone else's ReplicaSet has our name: hash differently next time.
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                try:
                    await dc.write_deployment_status(d)
                except ApiError:
                    pass  # the requeue retries the whole thing
                raise
        elif has_status_cause(exc, "NamespaceTerminating"):
            raise
        else:
            msg = f'Failed to create new replica set "{new_rs["metadata"]["name"]}": {exc}'
            if util.has_progress_deadline(d):
                util.set_deployment_condition(status, util.new_deployment_condition(
                    util.PROGRESSING, "False", util.FAILED_RS_CREATE_REASON, msg,
                    dc.clock.now()))
                # The create error is the one to report; a failed status write is not.
                try:
                    await dc.write_deployment_status(d)
                except ApiError:
                    pass
            dc.event_recorder.event(d, "Warning", util.FAILED_RS_CREATE_REASON, msg)
            raise
    created_name = meta_of(created).get("name")
    if not already_exists and new_replicas > 0:
        dc.event_recorder.eventf(d, "Normal", "ScalingReplicaSet",
                                 "Scaled up replica set %s from 0 to %d", created_name,
                                 new_replicas)

    needs_update = util.set_deployment_revision(d, new_revision)
    if not already_exists and util.has_progress_deadline(d):
        util.set_deployment_condition(status, util.new_deployment_condition(
            util.PROGRESSING, "True", util.NEW_RS_REASON,
            f'Created new replica set "{created_name}"', dc.clock.now()))
        needs_update = True
    if needs_update:
        await dc.write_deployment_status(d)
    return created


async def scale(dc: DeploymentController, d: dict[str, Any], new_rs: Obj | None,
                old_rss: list[Obj]) -> None:
    """Scale proportionally: a resize spreads over the active ReplicaSets by their sizes.

    Scaling the new ReplicaSet alone up (or the old ones alone down) would
    hasten the rollout and raise the share of possibly-broken pods.
    """
    replicas = util.spec_replicas(d)
    active_or_latest = util.find_active_or_latest(new_rs, old_rss)
    if active_or_latest is not None:
        # One active ReplicaSet (or none: then the newest) takes the full count.
        if util.spec_replicas(active_or_latest) == replicas:
            return
        await scale_replica_set_and_record_event(dc, active_or_latest, replicas, d)
        return

    # A saturated new ReplicaSet (e.g. after adopting one): old ones go to zero.
    if util.is_saturated(d, new_rs):
        for old in util.filter_active_replica_sets(old_rss):
            await scale_replica_set_and_record_event(dc, old, 0, d)
        return

    # Several active ReplicaSets and an unsaturated new one: scale all of them
    # in proportion (rolling updates only; Recreate finishes its rollout first).
    if not util.is_rolling_update(d):
        return
    all_rss = util.filter_active_replica_sets([*old_rss, new_rs])
    all_replicas = util.get_replica_count(all_rss)
    allowed_size = replicas + util.max_surge(d) if replicas > 0 else 0
    # What to add (or remove, when negative) over all ReplicaSets.
    to_add = allowed_size - all_replicas
    # Largest first; among equals the newest first when adding, the oldest
    # first when removing.
    if to_add > 0:
        all_rss = util.sort_by_size_newer(all_rss)
    elif to_add < 0:
        all_rss = util.sort_by_size_older(all_rss)
    sizes = proportional_sizes(all_rss, d, to_add)
    for rs in all_rss:
        await scale_replica_set(dc, rs, sizes[str(meta_of(rs).get("name"))], d)


def proportional_sizes(all_rss: list[Obj], d: Obj, to_add: int) -> dict[str, int]:
    """The new size of each (sorted) active ReplicaSet when ``to_add`` replicas are spread.

    Each gets its proportion (never more than what is left); the rounding
    leftover goes to the first, the largest, never below zero.
    """
    added = 0
    sizes: dict[str, int] = {}
    for rs in all_rss:
        name = str(meta_of(rs).get("name"))
        if to_add != 0:
            proportion = util.get_proportion(rs, d, to_add, added)
            sizes[name] = util.spec_replicas(rs) + proportion
            added += proportion
        else:
            sizes[name] = util.spec_replicas(rs)
    if all_rss and to_add != 0:
        first = str(meta_of(all_rss[0]).get("name"))
        sizes[first] = max(0, sizes[first] + to_add - added)
    return sizes


async def scale_replica_set_and_record_event(dc: DeploymentController, rs: Obj, new_scale: int,
                                             d: Obj) -> tuple[bool, Obj]:
    """Scale ``rs`` to ``new_scale`` unless it is there already: (scaled, the ReplicaSet)."""
    if util.spec_replicas(rs) == new_scale:
        return False, rs
    return await scale_replica_set(dc, rs, new_scale, d)


async def scale_replica_set(dc: DeploymentController, rs: Obj, new_scale: int,
                            d: Obj) -> tuple[bool, Obj]:
    """PUT ``rs`` with ``new_scale`` replicas and the current replicas annotations.

    Writes when either changed; records ``Scaled up|down replica set X from A
    to B`` when the size did. Returns (scaled, the ReplicaSet as now).
    """
    old_scale = util.spec_replicas(rs)
    size_needs_update = old_scale != new_scale
    desired = util.spec_replicas(d)
    max_replicas = desired + util.max_surge(d)
    if not size_needs_update and not util.replicas_annotations_need_update(
            rs, desired, max_replicas):
        return False, rs
    rs_copy = util.deep_copy(rs)
    rs_copy.setdefault("spec", {})["replicas"] = new_scale
    util.set_replicas_annotations(rs_copy, desired, max_replicas)
    updated = await dc.write_replica_set(rs_copy)
    if size_needs_update:
        op = "up" if old_scale < new_scale else "down"
        dc.event_recorder.eventf(d, "Normal", "ScalingReplicaSet",
                                 "Scaled %s replica set %s from %d to %d", op,
                                 meta_of(updated).get("name"), old_scale, new_scale)
    return size_needs_update, updated


async def cleanup_deployment(dc: DeploymentController, old_rss: list[Obj], d: Obj) -> None:
    """Delete the oldest old ReplicaSets beyond ``revisionHistoryLimit`` (empty, settled ones only)."""
    if not util.has_revision_history_limit(d):
        return
    # Not those already being deleted.
    cleanable = [rs for rs in old_rss if not meta_of(rs).get("deletionTimestamp")]
    limit = int((d.get("spec") or {})["revisionHistoryLimit"])
    diff = len(cleanable) - limit
    if diff <= 0:
        return
    for rs in util.sort_by_revision(cleanable)[:diff]:
        meta = meta_of(rs)
        st = rs.get("status") or {}
        # Never delete one that still has (or is about to have) pods, or whose
        # latest spec its controller has not seen yet.
        if (int(st.get("replicas") or 0) != 0 or util.spec_replicas(rs) != 0
                or int(meta.get("generation") or 0) > int(st.get("observedGeneration") or 0)
                or meta.get("deletionTimestamp")):
            continue
        try:
            await dc.client.delete("replicasets.apps", str(meta.get("name")),
                                   str(meta.get("namespace", "")))
        except ApiError as exc:
            # Stop at the first error rather than pile more on an overloaded server.
            if not is_not_found(exc):
                raise


async def sync_deployment_status(dc: DeploymentController, all_rss: Sequence[Obj | None],
                                 new_rs: Obj | None, d: dict[str, Any]) -> None:
    """Write the status computed from the ReplicaSets if it differs from the current one."""
    new_status = calculate_status(all_rss, new_rs, d, dc.enable_status_terminating_replicas,
                                  dc.clock.now())
    if d.get("status") == new_status:
        return
    d["status"] = new_status
    await dc.write_deployment_status(d)


def calculate_status(all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj,
                     terminating_replicas: bool = True, now: float | None = None
                     ) -> dict[str, Any]:
    """The DeploymentStatus the ReplicaSets add up to (conditions: Available updated, rest kept).

    ``terminating_replicas``: the DeploymentReplicaSetTerminatingReplicas
    feature gate (beta, on by default in v1.36): report terminatingReplicas.
    """
    rss = [rs for rs in all_rss if rs is not None]
    available = util.get_available_replica_count(rss)
    total = util.get_replica_count(rss)
    # More available than desired (scaling down) is not negative unavailability.
    unavailable = max(0, total - available)
    old_status = d.get("status") or {}
    counts = {
        "observedGeneration": int(meta_of(d).get("generation") or 0),
        "replicas": util.get_actual_replica_count(rss),
        "updatedReplicas": util.get_actual_replica_count([new_rs]),
        "readyReplicas": util.get_ready_replica_count(rss),
        "availableReplicas": available,
        "unavailableReplicas": unavailable,
    }
    # The wire form of DeploymentStatus omits zero counts (omitempty), so a
    # status read back compares equal to the one computed.
    status: dict[str, Any] = {k: v for k, v in counts.items() if v}
    terminating = util.get_terminating_replica_count(rss) if terminating_replicas else None
    if terminating is not None:
        status["terminatingReplicas"] = terminating
    if old_status.get("collisionCount") is not None:
        status["collisionCount"] = old_status["collisionCount"]
    conditions = [dict(c) for c in old_status.get("conditions") or ()]
    if conditions:
        status["conditions"] = conditions
    if available >= util.spec_replicas(d) - util.max_unavailable(d):
        util.set_deployment_condition(status, util.new_deployment_condition(
            util.AVAILABLE, "True", util.MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.", now))
    else:
        util.set_deployment_condition(status, util.new_deployment_condition(
            util.AVAILABLE, "False", util.MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.", now))
    return status


async def is_scaling_event(dc: DeploymentController, d: dict[str, Any],
                           rs_list: list[Obj]) -> bool:
    """Whether ``spec.replicas`` changed: an active ReplicaSet's desired-replicas differs."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    for rs in util.filter_active_replica_sets([*old_rss, new_rs]):
        desired, ok = util.get_desired_replicas_annotation(rs)
        if ok and desired != util.spec_replicas(d):
            return True
    return False
