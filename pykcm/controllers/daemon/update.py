"""DaemonSet rolling updates and revision history.

kube-controller-manager v1.36 ``pkg/controller/daemon/update.go``.

Rolling update, without surge (``maxSurge`` 0)::

    per node (pods of the node: at most one old and one new, else skipped and
    counted unavailable; a node that should run a pod and has none counts
    unavailable too):
        new pod            unavailable new pods count against maxUnavailable
        old pod unavailable   deleted at once (it serves nothing)
        old pod available     a candidate: deleted while fewer than maxUnavailable
                              pods are unavailable
    → delete; the manage loop of the next sync creates the new pods

With surge (``maxSurge`` > 0), new pods are created next to old ones (up to
maxSurge at a time, at once where the old one is unavailable) and an old pod
is deleted when the new one of its node is available; on nodes that should
no longer run the pod the old pods go only while enough pods elsewhere are
available.

History: every template the DaemonSet has had is a ControllerRevision named
``<ds>-<hash>`` (``controller.ComputeHash`` of the template, with
``status.collisionCount``), labelled ``controller-revision-hash``, holding the
patch that restores the template (``kubectl rollout undo`` applies it) and a
revision number; the current template's revision gets the highest number;
duplicates of it are merged (pods relabelled, extra revisions deleted); old
revisions beyond ``revisionHistoryLimit`` that no live pod uses are deleted,
oldest first. A revision name taken by a different template bumps
``status.collisionCount`` (and the sync is retried).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pykcm.api.accessors import meta_of, name_of
from pykcm.api.deep_hash import compute_hash
from pykcm.api.labels import selector_from_label_selector
from pykcm.api.owner_refs import new_controller_ref
from pykcm.api.pod_util import is_pod_available
from pykcm.cache.keys import meta_namespace_key
from pykcm.client.errors import is_already_exists
from pykcm.controller.controller_ref_manager import recheck_deletion_timestamp
from pykcm.controller.history import (
    ControllerRevisionControllerRefManager,
    marshal_go_json,
    revision_data_bytes,
    template_patch,
)
from pykcm.controllers.daemon.util import (
    DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY,
    get_template_generation,
    is_pod_updated,
    surge_count,
    unavailable_count,
)

if TYPE_CHECKING:
    from pykcm.controllers.daemon.daemon_controller import DaemonSetsController

__all__ = [
    "cleanup_history",
    "construct_history",
    "find_updated_pods_on_node",
    "match",
    "rolling_update",
]

log = logging.getLogger("pykcm.controllers.daemon")

_DEFAULT_REVISION_HISTORY_LIMIT = 10


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


# -- rolling update -------------------------------------------------------------------------

_UNSET: Any = object()


def find_updated_pods_on_node(ds: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                              hash_: str, generation: int | None = _UNSET
                              ) -> tuple[Mapping[str, Any] | None,
                                         Mapping[str, Any] | None, bool]:
    """(new pod, old pod, ok) among the node's pods not being deleted; not ok when there
    are two of either (the manage loop prunes them first). ``generation``:
    get_template_generation(ds), when the caller has it already."""
    new_pod: Mapping[str, Any] | None = None
    old_pod: Mapping[str, Any] | None = None
    if generation is _UNSET:
        generation = get_template_generation(ds)
    for pod in pods:
        if meta_of(pod).get("deletionTimestamp"):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new_pod is not None:
                return None, None, False
            new_pod = pod
        else:
            if old_pod is not None:
                return None, None, False
            old_pod = pod
    return new_pod, old_pod, True


def updated_desired_node_counts(dsc: DaemonSetsController, ds: Mapping[str, Any],
                                nodes: Sequence[Mapping[str, Any]],
                                node_to_daemon_pods: dict[str, list[Mapping[str, Any]]]
                                ) -> tuple[int, int, int]:
    """(maxSurge, maxUnavailable, desired) as numbers of nodes; nodes that should run a
    pod and have none get an empty entry in ``node_to_daemon_pods``."""
    desired = 0
    placement = dsc.placement.for_daemon_set(ds)
    for node in nodes:
        want, _ = placement.should_run(node, ds)
        if not want:
            continue
        desired += 1
        node_to_daemon_pods.setdefault(name_of(node), [])
    try:
        max_unavailable = unavailable_count(ds, desired)
    except ValueError as exc:
        raise RuntimeError(f"couldn't get unavailable numbers: invalid value for "
                           f"MaxUnavailable: {exc}") from exc
    try:
        max_surge = surge_count(ds, desired)
    except ValueError as exc:
        raise RuntimeError(f"couldn't get unavailable numbers: invalid value for MaxSurge: "
                           f"{exc}") from exc
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        log.info("DaemonSet %s is not configured for surge or unavailability, defaulting to "
                 "accepting unavailability", meta_namespace_key(ds))
        max_unavailable = 1
    return max_surge, max_unavailable, desired


async def rolling_update(dsc: DaemonSetsController, ds: Mapping[str, Any],
                         nodes: Sequence[Mapping[str, Any]], hash_: str) -> None:
    """Replace old pods within maxUnavailable / maxSurge (upstream rollingUpdate)."""
    node_to_daemon_pods = await dsc.get_nodes_to_daemon_pods(ds, False)
    max_surge, max_unavailable, desired = updated_desired_node_counts(
        dsc, ds, nodes, node_to_daemon_pods)
    now = dsc.clock()
    min_ready = int(_spec(ds).get("minReadySeconds") or 0)
    # Upstream walks a Go map (random order); node name order here.
    per_node = sorted(node_to_daemon_pods.items())
    generation = get_template_generation(ds)

    if max_surge == 0:
        num_unavailable = 0
        allowed_replacements: list[str] = []
        candidates: list[str] = []
        for node_name, pods in per_node:
            new_pod, old_pod, ok = find_updated_pods_on_node(ds, pods, hash_, generation)
            if not ok:
                log.debug("DaemonSet %s has excess pods on node %s, skipping to allow the "
                          "core loop to process", meta_namespace_key(ds), node_name)
                num_unavailable += 1
                continue
            if (old_pod is None) == (new_pod is None):
                num_unavailable += 1
            elif new_pod is not None:
                if not is_pod_available(new_pod, min_ready, now):
                    num_unavailable += 1
            else:
                assert old_pod is not None
                if not is_pod_available(old_pod, min_ready, now):
                    allowed_replacements.append(name_of(old_pod))
                    num_unavailable += 1
                elif num_unavailable >= max_unavailable:
                    continue
                else:
                    candidates.append(name_of(old_pod))
        remaining = max(0, max_unavailable - num_unavailable)
        remaining = min(remaining, len(candidates))
        await dsc.sync_nodes(ds, allowed_replacements + candidates[:remaining], [], hash_)
        return

    old_pods_to_delete: list[str] = []
    should_not_run_pods_to_delete: list[str] = []
    candidate_new_nodes: list[str] = []
    allowed_new_nodes: list[str] = []
    num_surge = 0
    num_available = 0
    for node_name, pods in per_node:
        new_pod, old_pod, ok = find_updated_pods_on_node(ds, pods, hash_, generation)
        if not ok:
            num_surge += 1
            continue
        if old_pod is not None:
            if is_pod_available(old_pod, min_ready, now):
                num_available += 1
        elif new_pod is not None and is_pod_available(new_pod, min_ready, now):
            num_available += 1
        if old_pod is None:
            continue  # the manage loop handles this node
        if new_pod is None:
            node = dsc.node_indexer.get_by_key(node_name)
            if node is None:
                raise RuntimeError(f"couldn't get node for nodeName {node_name!r}: not found")
            should_run, _ = dsc.placement.should_run(node, ds)
            if not is_pod_available(old_pod, min_ready, now):
                if not should_run:
                    old_pods_to_delete.append(name_of(old_pod))
                    continue
                allowed_new_nodes.append(node_name)
            else:
                if not should_run:
                    should_not_run_pods_to_delete.append(name_of(old_pod))
                    continue
                if num_surge >= max_surge:
                    continue
                candidate_new_nodes.append(node_name)
        else:
            if not is_pod_available(new_pod, min_ready, now):
                num_surge += 1
                continue
            old_pods_to_delete.append(name_of(old_pod))
    remaining_surge = max_surge - num_surge
    deletable = num_available - desired
    if deletable > 0:
        deletable = min(deletable, len(should_not_run_pods_to_delete))
        ns = str(meta_of(ds).get("namespace") or "")
        for name in should_not_run_pods_to_delete[:deletable]:
            if dsc.pod_indexer.get_by_key(f"{ns}/{name}") is None:
                continue
            old_pods_to_delete.append(name)
    remaining_surge = min(max(remaining_surge, 0), len(candidate_new_nodes))
    await dsc.sync_nodes(ds, old_pods_to_delete,
                         allowed_new_nodes + candidate_new_nodes[:remaining_surge], hash_)


# -- history ----------------------------------------------------------------------------------

def match(ds: Mapping[str, Any], history: Mapping[str, Any]) -> bool:
    """Whether ``history`` records ``ds``'s current template (same patch bytes)."""
    return marshal_go_json(template_patch(ds)) == revision_data_bytes(history)


async def controlled_histories(dsc: DaemonSetsController, ds: Mapping[str, Any]
                               ) -> list[Mapping[str, Any]]:
    """The DaemonSet's ControllerRevisions after adopting and releasing (all of the
    namespace are looked at: a revision may no longer match but still be ours)."""
    selector = selector_from_label_selector(_spec(ds).get("selector"))
    meta = meta_of(ds)
    ns, name, uid = str(meta.get("namespace") or ""), name_of(ds), meta.get("uid")
    histories = dsc.history_lister.by_namespace(ns).list()

    async def fresh() -> Mapping[str, Any]:
        got = await dsc.client.get("daemonsets", name, ns)
        if meta_of(got).get("uid") != uid:
            raise RuntimeError(f"original DaemonSet {ns}/{name} is gone: got uid "
                               f"{meta_of(got).get('uid')}, wanted {uid}")
        return got

    manager = ControllerRevisionControllerRefManager(dsc.client, ds, selector, "apps/v1",
                                                     "DaemonSet",
                                                     recheck_deletion_timestamp(fresh))
    return await manager.claim_controller_revisions(histories)


async def construct_history(dsc: DaemonSetsController, ds: Mapping[str, Any]
                            ) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
    """(the current template's revision, the other revisions): labels missing hashes,
    creates the current revision or raises its number above the others."""
    ns = str(meta_of(ds).get("namespace") or "")
    want = marshal_go_json(template_patch(ds))
    current: list[Mapping[str, Any]] = []
    old: list[Mapping[str, Any]] = []
    for history in await controlled_histories(dsc, ds):
        labels = meta_of(history).get("labels") or {}
        if DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY not in labels:
            # The name, not a computed hash: no collision to worry about.
            to_update = dict(history)
            to_update["metadata"] = dict(meta_of(history))
            to_update["metadata"]["labels"] = {**labels,
                                               DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY: name_of(history)}
            history = await dsc.client.update("controllerrevisions", to_update, ns)
        if revision_data_bytes(history) == want:
            current.append(history)
        else:
            old.append(history)
    curr_revision = max((int(h.get("revision") or 0) for h in old), default=0) + 1
    if not current:
        cur = await snapshot(dsc, ds, curr_revision)
    else:
        cur = await dedup_cur_histories(dsc, ds, current)
        if int(cur.get("revision") or 0) < curr_revision:
            to_update = dict(cur)
            to_update["revision"] = curr_revision
            await dsc.client.update("controllerrevisions", to_update, ns)
    return cur, old


async def cleanup_history(dsc: DaemonSetsController, ds: Mapping[str, Any],
                          old: Sequence[Mapping[str, Any]]) -> None:
    """Delete the oldest revisions beyond revisionHistoryLimit that no live pod uses."""
    limit = _spec(ds).get("revisionHistoryLimit")
    to_keep = _DEFAULT_REVISION_HISTORY_LIMIT if limit is None else int(limit)
    to_kill = len(old) - to_keep
    if to_kill <= 0:
        # Upstream reads the pods (claiming them) first; manage has just claimed them.
        return
    node_to_daemon_pods = await dsc.get_nodes_to_daemon_pods(ds, True)
    live_hashes = {h for pods in node_to_daemon_pods.values() for p in pods
                   if (h := (meta_of(p).get("labels") or {}).get(
                       DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY))}
    ns = str(meta_of(ds).get("namespace") or "")
    for history in sorted(old, key=lambda h: int(h.get("revision") or 0)):
        if to_kill <= 0:
            break
        if (meta_of(history).get("labels") or {}).get(DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY) \
                in live_hashes:
            continue
        await dsc.client.delete("controllerrevisions", name_of(history), ns)
        to_kill -= 1


async def dedup_cur_histories(dsc: DaemonSetsController, ds: Mapping[str, Any],
                              cur_histories: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """Keep the highest-numbered of several revisions of the current template: relabel
    the pods of the others, delete them."""
    if len(cur_histories) == 1:
        return cur_histories[0]
    keep = cur_histories[0]
    max_revision = -1
    for h in cur_histories:
        if int(h.get("revision") or 0) >= max_revision:
            keep, max_revision = h, int(h.get("revision") or 0)
    keep_hash = (meta_of(keep).get("labels") or {}).get(DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY)
    ns = str(meta_of(ds).get("namespace") or "")
    for pod in await dsc.get_daemon_pods(ds):
        if (meta_of(pod).get("labels") or {}).get(DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY) != keep_hash:
            await dsc.client.patch("pods", name_of(pod), {"metadata": {"labels": {
                DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY: keep_hash}}}, "merge", ns)
    for h in cur_histories:
        if name_of(h) == name_of(keep):
            continue
        await dsc.client.delete("controllerrevisions", name_of(h), ns)
    return keep


async def snapshot(dsc: DaemonSetsController, ds: Mapping[str, Any], revision: int
                   ) -> Mapping[str, Any]:
    """Create the revision of the current template; a name taken by another template
    bumps ``status.collisionCount`` and raises (the sync is retried)."""
    meta = meta_of(ds)
    ns, ds_name = str(meta.get("namespace") or ""), name_of(ds)
    collision_count = (ds.get("status") or {}).get("collisionCount")
    template = _spec(ds).get("template") or {}
    hash_ = compute_hash(template, collision_count)
    name = f"{ds_name}-{hash_}"
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels[DEFAULT_DAEMONSET_UNIQUE_LABEL_KEY] = hash_
    history_meta: dict[str, Any] = {
        "name": name, "namespace": ns, "labels": labels,
        "ownerReferences": [new_controller_ref(ds, "apps/v1", "DaemonSet")]}
    if meta.get("annotations"):
        history_meta["annotations"] = dict(meta["annotations"])
    history = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": history_meta,
               "data": template_patch(ds), "revision": revision}
    try:
        created: Mapping[str, Any] = await dsc.client.create("controllerrevisions", history, ns)
        return created
    except asyncio.CancelledError:
        raise
    except Exception as outer:
        if not is_already_exists(outer):
            raise
        existing = await dsc.client.get("controllerrevisions", name, ns)
        if match(ds, existing):
            return existing
        # Another template holds the name: make sure our collision count is not stale.
        curr = dict(await dsc.client.get("daemonsets", ds_name, ns))
        curr_count = (curr.get("status") or {}).get("collisionCount")
        if curr_count != collision_count:
            raise RuntimeError(f"found a stale collision count ({collision_count}, expected "
                               f"{curr_count}) of DaemonSet {ds_name!r} while processing; will "
                               f"retry until it is updated") from outer
        status = dict(curr.get("status") or {})
        status["collisionCount"] = int(curr_count or 0) + 1
        curr["status"] = status
        await dsc.client.update_status("daemonsets", curr, ns)
        log.info("Found a hash collision for DaemonSet %s - bumping collisionCount to %d to "
                 "resolve it", meta_namespace_key(ds), status["collisionCount"])
        raise
