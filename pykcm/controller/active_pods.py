"""A controller's pods: finding them in the cache, filtering them, and choosing which to remove.

The pod helpers of kube-controller-manager's ``pkg/controller/controller_utils.go``
that the ReplicaSet and Job controllers share, and the ReplicaSet
controller's ``getPodsRankedByRelatedPodsOnSameNode``.

Data flow (a ReplicaSet sync; the Job controller uses the same pieces)::

    pod informer cache ── PodControllerIndex ("ns/Kind/name/uid", or "ns" for orphans)
        │ filter_pods_by_owner(indexer, owner, kind, include_orphans)
        │ (or filter_pods_by_owner_and_selector: the orphans its selector matches only)
        ▼
    the owner's pods + the namespace's orphans
        │ filter_active_pods            (not Succeeded/Failed, no deletionTimestamp)
        │ filter_terminating_pods       (deletionTimestamp, not terminal yet)
        ▼
    active pods ── too many? ──► get_pods_ranked_by_related_pods_on_same_node
                                   (rank = active pods of the family on the pod's node)
                                 ──► ActivePodsWithRanks.sort()  the first ones are deleted

Deletion order (``ActivePodsWithRanks.less``, upstream's, every default-on
feature gate applied: PodDeletionCost, LogarithmicScaleDown): a pod sorts
first, i.e. is deleted first, when it is

1. unassigned (no ``spec.nodeName``) and the other is assigned;
2. in an earlier phase: Pending < Unknown < Running;
3. not ready while the other is ready;
4. of lower ``controller.kubernetes.io/pod-deletion-cost``;
5. of higher rank (more pods of its family on its node);
6. ready more recently (both ready; times compared on a log2 scale of their
   age in nanoseconds, equal buckets broken by UID);
7. restarted more (the largest container restart count, then sidecars');
8. newer (creation time, on the same log2 scale, ties broken by UID).

Ties leave the order to the sort. :func:`active_pods_sort_key` is the
older ``ActivePods`` order (no ranks, no deletion cost, exact times) as a
plain sort key: what the Job controller sorts with.

Availability: :func:`find_min_next_pod_availability_check` tells a
controller with ``minReadySeconds`` when its next ready pod turns available,
so it can sync again then (nothing else in the cluster changes at that moment).

Pods are the JSON wire form (dicts) from the informer cache; nothing here
mutates them. Times are seconds since the epoch (floats); ``now=None`` is
Go's zero time (the log2 comparison is then not used).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from pykcm.api.accessors import labels_of
from pykcm.api.labels import LabelSelector
from pykcm.api.owner_refs import get_controller_of, is_controlled_by
from pykcm.api.pod_util import (
    get_pod_ready_condition,
    is_pod_active,
    is_pod_ready,
    is_pod_terminal,
    parse_time,
    pod_node_name,
    pod_phase_and_ready,
)
from pykcm.cache.shared_informer import SharedIndexInformer
from pykcm.cache.store import Indexer

__all__ = [
    "POD_CONTROLLER_INDEX",
    "POD_DELETION_COST_ANNOTATION",
    "POD_NODE_NAME_INDEX",
    "ActivePodsWithRanks",
    "active_pods_sort_key",
    "add_pod_controller_indexer",
    "add_pod_node_name_indexer",
    "add_pod_orphan_labels_indexer",
    "compare_max_container_restarts",
    "filter_active_pods",
    "filter_claimed_pods",
    "filter_pods_by_owner",
    "filter_pods_by_owner_and_selector",
    "filter_terminating_pods",
    "find_min_next_pod_availability_check",
    "get_deletion_cost_from_pod_annotations",
    "get_pods_ranked_by_related_pods_on_same_node",
    "is_pod_terminating",
    "logarithmic_rank_diff",
    "max_container_restarts",
    "next_pod_availability_check",
    "pod_controller_index_key",
    "pod_ready_time",
    "sort_pods_for_deletion",
    "split_active_and_terminating",
]

Pod = Mapping[str, Any]

POD_CONTROLLER_INDEX: Final = "podController"
"""Name of the pod index by controller (upstream controller.PodControllerIndex)."""

POD_ORPHAN_LABELS_INDEX: Final = "pykcm/orphanLabels"
"""Name of the index of orphan pods by namespace and labels (pykcm's; the owned pods are
not in it): :func:`filter_pods_by_owner_and_selector` matches a selector once per
distinct label set of a namespace's orphans, not once per orphan."""

POD_NODE_NAME_INDEX: Final = "spec.nodeName"
"""Name of the pod index by ``spec.nodeName`` (upstream controller.PodNodeNameKeyIndex;
unbound pods are not in it)."""

POD_DELETION_COST_ANNOTATION: Final = "controller.kubernetes.io/pod-deletion-cost"
"""The annotation that makes a pod cheaper (lower) or dearer to delete."""

# Phases ranked for deletion; a phase missing here (Succeeded, Failed, none)
# ranks as Pending, as Go's map lookup returns 0.
_POD_PHASE_TO_ORDINAL: Final[Mapping[str, int]] = {"Pending": 0, "Unknown": 1, "Running": 2}

_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1


# -- finding a controller's pods -----------------------------------------------------------

def pod_controller_index_key(namespace: str, owner_ref: Mapping[str, Any] | None) -> str:
    """The index value of pods controlled by ``owner_ref`` (``namespace`` alone: orphans)."""
    if owner_ref is None:
        return namespace
    return f"{namespace}/{owner_ref.get('kind', '')}/{owner_ref.get('name', '')}/" \
           f"{owner_ref.get('uid', '')}"


def _pod_controller_index_func(pod: Any) -> list[str]:
    meta = pod.get("metadata") or {}
    return [pod_controller_index_key(meta.get("namespace") or "", get_controller_of(pod))]


def add_pod_controller_indexer(target: SharedIndexInformer | Indexer) -> None:
    """Add :data:`POD_CONTROLLER_INDEX` to a pod informer (or Indexer) unless it has it.

    Idempotent, so every controller that needs the index may ask for it
    (upstream AddPodControllerIndexer). Call before the informer starts.
    """
    indexer = target.get_indexer() if isinstance(target, SharedIndexInformer) else target
    if POD_CONTROLLER_INDEX in indexer.get_indexers():
        return
    target.add_indexers({POD_CONTROLLER_INDEX: _pod_controller_index_func})


def _pod_orphan_labels_index_func(pod: Any) -> list[str]:
    if get_controller_of(pod) is not None:
        return []
    meta = pod.get("metadata") or {}
    labels = labels_of(pod) or {}
    # JSON of the sorted pairs: one value per distinct label set (no two sets alike)
    ns = meta.get("namespace") or ""
    return [f"{ns}\x00{orjson.dumps(sorted(labels.items())).decode()}"]


def add_pod_orphan_labels_indexer(target: SharedIndexInformer | Indexer) -> None:
    """Add :data:`POD_ORPHAN_LABELS_INDEX` to a pod informer (or Indexer) unless it has
    it (idempotent; before the informer starts)."""
    indexer = target.get_indexer() if isinstance(target, SharedIndexInformer) else target
    if POD_ORPHAN_LABELS_INDEX in indexer.get_indexers():
        return
    target.add_indexers({POD_ORPHAN_LABELS_INDEX: _pod_orphan_labels_index_func})


def _pod_node_name_index_func(pod: Any) -> list[str]:
    # pod_node_name: a compact cached pod keeps its node name once read (the index
    # asks at every event of every pod; the spec is decoded again at each read)
    node = pod_node_name(pod)
    return [node] if node else []


def add_pod_node_name_indexer(target: SharedIndexInformer | Indexer) -> None:
    """Add :data:`POD_NODE_NAME_INDEX` to a pod informer (or Indexer) unless it has it
    (upstream AddPodNodeNameIndexer)."""
    indexer = target.get_indexer() if isinstance(target, SharedIndexInformer) else target
    if POD_NODE_NAME_INDEX in indexer.get_indexers():
        return
    target.add_indexers({POD_NODE_NAME_INDEX: _pod_node_name_index_func})


def filter_pods_by_owner(indexer: Indexer, owner: Mapping[str, Any], owner_kind: str,
                         include_orphaned_pods: bool) -> list[Any]:
    """The pods controlled by ``owner`` and, if asked, the orphans of its namespace.

    Reads :data:`POD_CONTROLLER_INDEX` (upstream FilterPodsByOwner): no scan
    of the namespace. Raises ValueError when the owner lacks a namespace,
    name or UID, or ``owner_kind`` is empty.
    """
    meta = owner.get("metadata") or {}
    ns, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
    if not ns:
        raise ValueError("no owner namespace provided")
    if not name:
        raise ValueError("no owner name provided")
    if not uid:
        raise ValueError("no owner uid provided")
    if not owner_kind:
        raise ValueError("no owner kind provided")
    keys = [pod_controller_index_key(ns, {"kind": owner_kind, "name": name, "uid": uid})]
    if include_orphaned_pods:
        keys.append(pod_controller_index_key(ns, None))
    result: list[Any] = []
    for key in keys:
        result.extend(indexer.by_index(POD_CONTROLLER_INDEX, key))
    return result


def filter_pods_by_owner_and_selector(indexer: Indexer, owner: Mapping[str, Any],
                                      owner_kind: str, selector: LabelSelector) -> list[Any]:
    """The pods controlled by ``owner`` and the orphans of its namespace that ``selector``
    matches: ``filter_pods_by_owner(indexer, owner, owner_kind, True)`` without the
    orphans a claim with ``selector`` ignores anyway (it adopts only the orphans it
    matches), for a sync that claims what this returns.

    Upstream's sync reads every orphan of its namespace (O(orphans x owners) at start
    when a namespace holds many of both). With :data:`POD_ORPHAN_LABELS_INDEX` on the
    indexer the selector is asked once per distinct label set of the namespace's orphans
    and only the matching ones are read; without it, once per distinct labels object
    (compact cached pods with the same labels share one dict), over every orphan. The
    orphans come in an order of the index (the namespace's orphans have no order
    upstream either: a cache's map).
    """
    out = filter_pods_by_owner(indexer, owner, owner_kind, False)
    ns = (owner.get("metadata") or {}).get("namespace")
    if POD_ORPHAN_LABELS_INDEX in indexer.get_indexers():
        # one match per label set of the namespace's orphans (group by group, each in
        # the index's order)
        prefix = f"{ns}\x00"
        for value in indexer.list_index_func_values(POD_ORPHAN_LABELS_INDEX):
            # the value holds the group's labels: only a matching group's pods are read
            if value.startswith(prefix) and selector.matches(
                    dict(orjson.loads(value[len(prefix):]))):
                out.extend(indexer.by_index(POD_ORPHAN_LABELS_INDEX, value))
        return out
    orphans = indexer.by_index(POD_CONTROLLER_INDEX, pod_controller_index_key(str(ns), None))
    if not orphans:
        return out
    matches = selector.matches
    # id(labels) -> (labels, matched): the labels object kept so its id is not reused
    seen: dict[int, tuple[Any, bool]] = {}
    for pod in orphans:
        labels = labels_of(pod)
        hit = seen.get(id(labels))
        if hit is None or hit[0] is not labels:
            hit = (labels, matches(labels))
            seen[id(labels)] = hit
        if hit[1]:
            out.append(pod)
    return out


# -- filtering ---------------------------------------------------------------------------

def is_pod_terminating(pod: Pod) -> bool:
    """Being deleted (deletionTimestamp) and not finished yet (upstream IsPodTerminating)."""
    return not is_pod_terminal(pod) and bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def filter_active_pods(pods: Iterable[Any]) -> list[Any]:
    """The pods that count as replicas: not terminal, not being deleted."""
    return [p for p in pods if is_pod_active(p)]


def filter_terminating_pods(pods: Iterable[Any]) -> list[Any]:
    """The pods being deleted that are still running (status.terminatingReplicas)."""
    return [p for p in pods if is_pod_terminating(p)]


def split_active_and_terminating(pods: Iterable[Any]) -> tuple[list[Any], list[Any]]:
    """(filter_active_pods(pods), filter_terminating_pods(pods)) in one pass, each pod's
    phase and deletionTimestamp read once (a sync partitions all its pods this way)."""
    active: list[Any] = []
    terminating: list[Any] = []
    for p in pods:
        if pod_phase_and_ready(p)[0] in ("Succeeded", "Failed"):
            continue
        if (p.get("metadata") or {}).get("deletionTimestamp"):
            terminating.append(p)
        else:
            active.append(p)
    return active, terminating


def filter_claimed_pods(owner: Mapping[str, Any], selector: LabelSelector,
                        pods: Iterable[Any]) -> list[Any]:
    """The pods controlled by ``owner`` whose labels ``selector`` matches (upstream FilterClaimedPods)."""
    return [p for p in pods if is_controlled_by(p, owner)
            and selector.matches((p.get("metadata") or {}).get("labels") or {})]


# -- ranking ------------------------------------------------------------------------------

def get_deletion_cost_from_pod_annotations(annotations: Mapping[str, str] | None) -> int:
    """The pod-deletion-cost annotation as an int32; 0 when absent or invalid.

    Upstream rejects a leading ``+`` and leading zeros ("008") as well as
    anything outside int32, and defaults to 0 on any error.
    """
    value = (annotations or {}).get(POD_DELETION_COST_ANNOTATION)
    if value is None:
        return 0
    if not value or not (value[0] == "-" or value == "0" or "1" <= value[0] <= "9"):
        return 0
    body = value[1:] if value[0] == "-" else value
    if not body or not body.isascii() or not body.isdigit():
        return 0
    cost = int(value)
    return cost if _INT32_MIN <= cost <= _INT32_MAX else 0


def pod_ready_time(pod: Pod) -> float | None:
    """When a ready pod's Ready condition turned True; None (zero time) otherwise."""
    if not is_pod_ready(pod):
        return None
    cond = get_pod_ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time(cond.get("lastTransitionTime"))


def _creation_time(pod: Pod) -> float | None:
    return parse_time((pod.get("metadata") or {}).get("creationTimestamp"))


def max_container_restarts(pod: Pod) -> tuple[int, int]:
    """(largest restart count of the regular containers, of the sidecar containers).

    Sidecars are the init containers with ``restartPolicy: Always``.
    """
    status = pod.get("status") or {}
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()),
                  default=0)
    names = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or ()
             if c.get("restartPolicy") == "Always"}
    sidecar = max((int(c.get("restartCount") or 0)
                   for c in status.get("initContainerStatuses") or () if c.get("name") in names),
                  default=0)
    return regular, sidecar


def compare_max_container_restarts(pi: Pod, pj: Pod) -> bool | None:
    """True if ``pi`` restarted more, False if ``pj`` did, None if equal (regular, then sidecars)."""
    ri, si = max_container_restarts(pi)
    rj, sj = max_container_restarts(pj)
    if ri != rj:
        return ri > rj
    if si != sj:
        return si > sj
    return None


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    # A zero (unknown) time counts as after any real one: such pods go first.
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def logarithmic_rank_diff(t1: float, t2: float, now: float) -> int:
    """floor(log2(age of t1)) - floor(log2(age of t2)), ages in nanoseconds (-1 if not positive).

    Pods whose ages fall in the same power-of-two bucket count as equally old,
    so a scale-down does not always pick the very newest pods of a spread.
    """
    d1 = round((now - t1) * 1e9)
    d2 = round((now - t2) * 1e9)
    r1 = int(math.log2(d1)) if d1 > 0 else -1
    r2 = int(math.log2(d2)) if d2 > 0 else -1
    return r1 - r2


def _uid(pod: Pod) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _less(pi: Pod, rank_i: int, pj: Pod, rank_j: int, now: float | None) -> bool:
    """Whether ``pi`` should be deleted before ``pj`` (upstream ActivePodsWithRanks.Less)."""
    node_i = (pi.get("spec") or {}).get("nodeName") or ""
    node_j = (pj.get("spec") or {}).get("nodeName") or ""
    # 1. Unassigned < assigned.
    if node_i != node_j and (not node_i or not node_j):
        return not node_i
    # 2. Pending < Unknown < Running.
    phase_i = _POD_PHASE_TO_ORDINAL.get((pi.get("status") or {}).get("phase") or "", 0)
    phase_j = _POD_PHASE_TO_ORDINAL.get((pj.get("status") or {}).get("phase") or "", 0)
    if phase_i != phase_j:
        return phase_i < phase_j
    # 3. Not ready < ready.
    ready_i, ready_j = is_pod_ready(pi), is_pod_ready(pj)
    if ready_i != ready_j:
        return not ready_i
    # 4. Lower pod-deletion-cost < higher.
    cost_i = get_deletion_cost_from_pod_annotations((pi.get("metadata") or {}).get("annotations"))
    cost_j = get_deletion_cost_from_pod_annotations((pj.get("metadata") or {}).get("annotations"))
    if cost_i != cost_j:
        return cost_i < cost_j
    # 5. Doubled up < not doubled up: more family pods on the node goes first.
    if rank_i != rank_j:
        return rank_i > rank_j
    # 6. Ready for less time < more time (both ready here, or both not).
    if ready_i and ready_j:
        t_i, t_j = pod_ready_time(pi), pod_ready_time(pj)
        if t_i != t_j:
            if now is None or t_i is None or t_j is None:
                return _after_or_zero(t_i, t_j)
            diff = logarithmic_rank_diff(t_i, t_j, now)
            if diff == 0:
                return _uid(pi) < _uid(pj)
            return diff < 0
    # 7. More restarts < fewer.
    restarts = compare_max_container_restarts(pi, pj)
    if restarts is not None:
        return restarts
    # 8. No creation time < newer < older.
    c_i, c_j = _creation_time(pi), _creation_time(pj)
    if c_i != c_j:
        if now is None or c_i is None or c_j is None:
            return _after_or_zero(c_i, c_j)
        diff = logarithmic_rank_diff(c_i, c_j, now)
        if diff == 0:
            return _uid(pi) < _uid(pj)
        return diff < 0
    return False


class ActivePodsWithRanks:
    """Pods with a rank each, sortable into deletion order (upstream ActivePodsWithRanks).

    ``pods`` and ``rank`` are parallel lists; :meth:`sort` reorders both in
    place. ``now`` (seconds since the epoch, None for Go's zero time) is
    the reference for the logarithmic age comparison.
    """

    __slots__ = ("now", "pods", "rank")

    def __init__(self, pods: list[Any], rank: list[int], now: float | None = None) -> None:
        if len(pods) != len(rank):
            raise ValueError(f"{len(pods)} pods but {len(rank)} ranks")
        self.pods = pods
        self.rank = rank
        self.now = now

    def __len__(self) -> int:
        return len(self.pods)

    def less(self, i: int, j: int) -> bool:
        """Whether pod ``i`` is to be deleted before pod ``j``."""
        return _less(self.pods[i], self.rank[i], self.pods[j], self.rank[j], self.now)

    def sort(self) -> None:
        """Sort pods (and their ranks) into deletion order, in place."""
        now = self.now

        def cmp(a: tuple[Any, int], b: tuple[Any, int]) -> int:
            if _less(a[0], a[1], b[0], b[1], now):
                return -1
            if _less(b[0], b[1], a[0], a[1], now):
                return 1
            return 0

        pairs = sorted(zip(self.pods, self.rank, strict=True), key=functools.cmp_to_key(cmp))
        self.pods[:] = [p for p, _ in pairs]
        self.rank[:] = [r for _, r in pairs]


def get_pods_ranked_by_related_pods_on_same_node(pods_to_rank: list[Any],
                                                 related_pods: Iterable[Any],
                                                 now: float | None) -> ActivePodsWithRanks:
    """Rank each pod by the number of active ``related_pods`` on its node.

    ``related_pods`` are the pods of every ReplicaSet of the same owner (a
    Deployment's old and new ReplicaSets): deleting from crowded nodes first
    keeps the family spread. It should include ``pods_to_rank``.
    """
    on_node: dict[str, int] = {}
    for pod in related_pods:
        if is_pod_active(pod):
            node = (pod.get("spec") or {}).get("nodeName") or ""
            on_node[node] = on_node.get(node, 0) + 1
    ranks = [on_node.get((p.get("spec") or {}).get("nodeName") or "", 0) for p in pods_to_rank]
    return ActivePodsWithRanks(pods_to_rank, ranks, now)


def active_pods_sort_key(pod: Pod) -> tuple[Any, ...]:
    """Sort key of upstream's ActivePods order: ascending sorts the pods to remove first.

    Unassigned < assigned; Pending < Unknown < Running; not ready < ready;
    ready more recently (an unknown ready time first); more restarts (then
    sidecar restarts); newer (no creation time first). Unlike
    :class:`ActivePodsWithRanks` there is no rank, no deletion cost and
    no logarithmic bucketing, so the order is a plain key.
    """
    node = (pod.get("spec") or {}).get("nodeName") or ""
    phase = _POD_PHASE_TO_ORDINAL.get((pod.get("status") or {}).get("phase") or "", 0)
    ready = is_pod_ready(pod)
    ready_key: tuple[int, float] = (0, 0.0)
    if ready:
        t = pod_ready_time(pod)
        ready_key = (0, 0.0) if t is None else (1, -t)
    regular, sidecar = max_container_restarts(pod)
    created = _creation_time(pod)
    created_key: tuple[int, float] = (0, 0.0) if created is None else (1, -created)
    return (bool(node), phase, ready, ready_key, -regular, -sidecar, created_key)


def sort_pods_for_deletion(pods: Sequence[Any], related_pods: Iterable[Any],
                           now: float | None) -> list[Any]:
    """A new list of ``pods`` in deletion order, ranked by ``related_pods`` on the same node."""
    ranked = get_pods_ranked_by_related_pods_on_same_node(list(pods), related_pods, now)
    ranked.sort()
    return ranked.pods



# -- availability checks ----------------------------------------------------------------

def next_pod_availability_check(pod: Pod, min_ready_seconds: int, now: float) -> float | None:
    """Seconds until a ready pod becomes available, None if it is not ready or already is.

    Upstream nextPodAvailabilityCheck: a pod without a Ready transition time,
    or ``min_ready_seconds <= 0``, has no check to plan.
    """
    if min_ready_seconds <= 0 or not is_pod_ready(pod):
        return None
    cond = get_pod_ready_condition(pod)
    since = parse_time(cond.get("lastTransitionTime") if cond else None)
    if since is None:
        return None
    left = since + min_ready_seconds - now
    return left if left > 0 else None


def find_min_next_pod_availability_check(pods: Iterable[Any], min_ready_seconds: int,
                                         last_owner_status_evaluation: float,
                                         clock: Callable[[], float]) -> float | None:
    """When to look again so the soonest-to-be-available pod gets counted (seconds, or None).

    The pod is chosen against ``last_owner_status_evaluation`` (the time the
    status was computed with, so the pods counted unavailable there are the
    ones considered); the delay is then measured from ``clock()``, and is 0
    if that moment has already passed (upstream FindMinNextPodAvailabilityCheck).
    """
    best: float | None = None
    best_pod: Pod | None = None
    for pod in pods:
        nxt = next_pod_availability_check(pod, min_ready_seconds, last_owner_status_evaluation)
        if nxt is not None and (best is None or nxt < best):
            best, best_pod = nxt, pod
    if best_pod is None:
        return None
    updated = next_pod_availability_check(best_pod, min_ready_seconds, clock())
    return updated if updated is not None else 0.0
