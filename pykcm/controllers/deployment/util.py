"""deploymentutil: the pure logic of the Deployment controller (upstream ``deployment/util``).

Everything here computes on wire-form dicts (Deployments, ReplicaSets) and
never talks to the API server: revisions and the annotations a Deployment
stamps on its ReplicaSets, the rolling-update fenceposts (maxSurge rounded
up, maxUnavailable rounded down), which ReplicaSet is the new one, how many
replicas the new one may have, proportional scaling shares, status counts,
and the Progressing / Available conditions. The controller modules (sync,
rolling, recreate, rollback, progress) read the cache, call these, and write.

Data flow::

    cached Deployment + claimed ReplicaSets
        │ find_new_replica_set / find_old_replica_sets (template equal ignoring the hash)
        │ resolve_fenceposts → max_surge / max_unavailable
        │ new_rs_new_replicas, get_proportion, is_saturated, ...
        ▼
    numbers and annotations the controller writes back

Objects handed in may be cache objects: nothing here mutates its inputs
except the functions documented to set fields on a copy the caller owns
(``set_*``).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Final

import orjson

from pykcm.api import protobuf as pb
from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK
from pykcm.api.intstr import get_scaled_value_from_int_or_percent
from pykcm.api.labels import selector_from_label_selector
from pykcm.api.strconv import parse_int, parse_uint
from pykcm.api.timestamps import format_time, parse_time
from pykcm.cache.frozen_object import frozen_default

__all__ = [
    "ANNOTATIONS_TO_SKIP", "AVAILABLE", "DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY",
    "DEPRECATED_ROLLBACK_TO", "DESIRED_REPLICAS_ANNOTATION", "FAILED_RS_CREATE_REASON",
    "FOUND_NEW_RS_REASON", "LAST_APPLIED_CONFIG_ANNOTATION", "MAX_REPLICAS_ANNOTATION",
    "MINIMUM_REPLICAS_AVAILABLE", "MINIMUM_REPLICAS_UNAVAILABLE", "NEW_RS_AVAILABLE_REASON",
    "NEW_RS_REASON", "PAUSED_DEPLOY_REASON", "PROGRESSING", "RECREATE", "REPLICA_FAILURE",
    "REPLICA_SET_UPDATED_REASON", "RESUMED_DEPLOY_REASON", "REVISION_ANNOTATION",
    "REVISION_HISTORY_ANNOTATION", "ROLLBACK_DONE", "ROLLBACK_REVISION_NOT_FOUND",
    "ROLLBACK_TEMPLATE_UNCHANGED", "ROLLING_UPDATE", "TIMED_OUT_REASON",
    "deep_copy", "deployment_complete", "deployment_progressing", "deployment_timed_out",
    "equal_ignore_hash", "filter_active_replica_sets", "find_active_or_latest",
    "find_new_replica_set", "find_old_replica_sets", "get_actual_replica_count",
    "get_available_replica_count", "get_deployment_condition", "get_deployments_for_replica_set",
    "get_desired_replicas_annotation", "get_max_replicas_annotation", "get_proportion",
    "get_ready_replica_count", "get_replica_count", "get_replica_set_fraction",
    "get_terminating_replica_count", "has_progress_deadline", "has_revision_history_limit",
    "is_rolling_update", "is_saturated", "last_revision", "max_revision", "max_surge",
    "max_unavailable", "new_deployment_condition", "new_rs_new_replicas", "now_rfc3339",
    "remove_deployment_condition", "replica_set_to_deployment_condition",
    "replicas_annotations_need_update", "resolve_fenceposts", "revision",
    "set_deployment_annotations_to", "set_deployment_condition", "set_deployment_revision",
    "set_from_replica_set_template", "set_new_replica_set_annotations",
    "set_replicas_annotations", "sort_by_creation_timestamp", "sort_by_revision",
    "sort_by_size_newer", "sort_by_size_older", "spec_replicas",
]

log = logging.getLogger("pykcm.controllers.deployment")

Obj = Mapping[str, Any]

# -- names -------------------------------------------------------------------------------

DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: Final = "pod-template-hash"
REVISION_ANNOTATION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/max-replicas"
DEPRECATED_ROLLBACK_TO: Final = "deprecated.deployment.rollback.to"
LAST_APPLIED_CONFIG_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"

ANNOTATIONS_TO_SKIP: Final = frozenset({
    LAST_APPLIED_CONFIG_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, DEPRECATED_ROLLBACK_TO,
})
"""Deployment annotations never copied to (or back from) its ReplicaSets."""

ROLLING_UPDATE: Final = "RollingUpdate"
RECREATE: Final = "Recreate"

# Condition types.
AVAILABLE: Final = "Available"
PROGRESSING: Final = "Progressing"
REPLICA_FAILURE: Final = "ReplicaFailure"

# Condition and event reasons (upstream deploymentutil constants).
ROLLBACK_REVISION_NOT_FOUND: Final = "DeploymentRollbackRevisionNotFound"
ROLLBACK_TEMPLATE_UNCHANGED: Final = "DeploymentRollbackTemplateUnchanged"
ROLLBACK_DONE: Final = "DeploymentRollback"
REPLICA_SET_UPDATED_REASON: Final = "ReplicaSetUpdated"
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
NEW_RS_REASON: Final = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
PAUSED_DEPLOY_REASON: Final = "DeploymentPaused"
RESUMED_DEPLOY_REASON: Final = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE: Final = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE: Final = "MinimumReplicasUnavailable"

_MAX_INT32: Final = 2**31 - 1

# -- small accessors ---------------------------------------------------------------------


def deep_copy(obj: Obj) -> dict[str, Any]:
    """A private, mutable copy of a wire object (cache objects are shared and read-only)."""
    # A JSON round trip is several times faster than copy.deepcopy on these trees; a compact
    # cached object (FrozenObject) is written through its own hook.
    out: dict[str, Any] = orjson.loads(orjson.dumps(obj, default=frozen_default))
    return out


# The accessors test ``type(x) is dict`` first: isinstance against the Mapping ABC costs
# a __instancecheck__ call, and these run for every ReplicaSet of every sync.


def _spec(obj: Obj | None) -> Mapping[str, Any]:
    s = obj.get("spec") if obj is not None else None
    return s if type(s) is dict or isinstance(s, Mapping) else {}


def _status(obj: Obj | None) -> Mapping[str, Any]:
    s = obj.get("status") if obj is not None else None
    return s if type(s) is dict or isinstance(s, Mapping) else {}


def _int(v: Any, default: int = 0) -> int:
    return v if type(v) is int else default


def spec_replicas(obj: Obj | None) -> int:
    """``spec.replicas`` (1, the API default, when unset)."""
    return _int(_spec(obj).get("replicas"), 1)


def _annotations(obj: Obj | None) -> Mapping[str, str]:
    a = meta_of(obj or {}).get("annotations")
    return a if isinstance(a, Mapping) else {}


def now_rfc3339(now: float | None = None) -> str:
    """metav1.Now() as it serialises (second precision, UTC)."""
    return format_time(REAL_CLOCK.now() if now is None else now)


# -- sorting (upstream controller.ReplicaSetsBy*) ------------------------------------------


@functools.lru_cache(maxsize=8192)
def _created_at(timestamp: str | None) -> float:
    # Memoised: every sync sorts its ReplicaSets by creation time several times, and a
    # ReplicaSet's creationTimestamp never changes.
    return parse_time(timestamp) or 0.0


def _created_key(rs: Obj) -> tuple[float, str]:
    m = meta_of(rs)
    ts = m.get("creationTimestamp")
    return (_created_at(ts) if ts is None or type(ts) is str else parse_time(ts) or 0.0,
            str(m.get("name", "")))


def sort_by_creation_timestamp(rss: Iterable[Obj]) -> list[Obj]:
    """Oldest first; equal timestamps by name (ReplicaSetsByCreationTimestamp)."""
    return sorted(rss, key=_created_key)


def sort_by_size_older(rss: Iterable[Obj]) -> list[Obj]:
    """Largest first; equal sizes oldest first (ReplicaSetsBySizeOlder: scale-down order)."""
    return sorted(sort_by_creation_timestamp(rss), key=lambda r: -spec_replicas(r))


def sort_by_size_newer(rss: Iterable[Obj]) -> list[Obj]:
    """Largest first; equal sizes newest first (ReplicaSetsBySizeNewer: scale-up order)."""
    newest_first = list(reversed(sort_by_creation_timestamp(rss)))
    return sorted(newest_first, key=lambda r: -spec_replicas(r))


def _revision_or_none(rs: Obj) -> int | None:
    try:
        return revision(rs)
    except ValueError:
        return None


def sort_by_revision(rss: Iterable[Obj]) -> list[Obj]:
    """Lowest revision first (ReplicaSetsByRevision): a pair where either revision is
    unparsable, or both are equal, is ordered by creation instead, exactly as upstream's
    Less (so an unparsable one sits by its age, not first)."""
    items = [(_revision_or_none(rs), _created_key(rs), rs) for rs in rss]

    def cmp(a: tuple[int | None, tuple[float, str], Obj],
            b: tuple[int | None, tuple[float, str], Obj]) -> int:
        ra, rb = a[0], b[0]
        if ra is None or rb is None or ra == rb:
            return (a[1] > b[1]) - (a[1] < b[1])
        return (ra > rb) - (ra < rb)

    return [rs for _, _, rs in sorted(items, key=functools.cmp_to_key(cmp))]


def filter_active_replica_sets(rss: Iterable[Obj | None]) -> list[Obj]:
    """ReplicaSets with ``spec.replicas`` > 0 (controller.FilterActiveReplicaSets)."""
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


# -- revisions and annotations -------------------------------------------------------------


def revision(obj: Obj) -> int:
    """The revision annotation as an int (0 when absent); ValueError when unparsable by
    strconv.ParseInt (which refuses " 5", "1_0", or beyond int64)."""
    v = _annotations(obj).get(REVISION_ANNOTATION)
    if v is None:
        return 0
    return parse_int(v, 64)


def max_revision(rss: Iterable[Obj | None]) -> int:
    """The highest revision among ``rss`` (unparsable ones are skipped)."""
    best = 0
    for rs in rss:
        if rs is None:
            continue
        try:
            v = revision(rs)
        except ValueError:
            log.info("Couldn't parse revision for ReplicaSet %s", meta_of(rs).get("name"))
            continue
        best = max(best, v)
    return best


def last_revision(rss: Iterable[Obj | None]) -> int:
    """The second highest revision (the one before the current), 0 if none."""
    mx = sec = 0
    for rs in rss:
        if rs is None:
            continue
        try:
            v = revision(rs)
        except ValueError:
            continue
        if v >= mx:
            sec, mx = mx, v
        elif v > sec:
            sec = v
    return sec


def set_deployment_revision(d: dict[str, Any], rev: str) -> bool:
    """Set the Deployment's revision annotation (a copy the caller owns); whether it changed."""
    ann = d.setdefault("metadata", {}).setdefault("annotations", {})
    if ann.get(REVISION_ANNOTATION) != rev:
        ann[REVISION_ANNOTATION] = rev
        return True
    return False


def _skip_copy_annotation(key: str) -> bool:
    return key in ANNOTATIONS_TO_SKIP


def _copy_deployment_annotations_to_replica_set(d: Obj, rs: dict[str, Any]) -> bool:
    rs_ann = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for k, v in _annotations(d).items():
        # Skip the annotations the controller manages itself and kubectl's
        # last-applied (large, and meaningless on a ReplicaSet); copy the rest.
        if _skip_copy_annotation(k) or rs_ann.get(k) == v:
            continue
        rs_ann[k] = v
        changed = True
    return changed


def set_new_replica_set_annotations(d: Obj, new_rs: dict[str, Any], new_revision: str,
                                    exists: bool, rev_history_limit_in_chars: int) -> bool:
    """Copy the Deployment's annotations to ``new_rs`` and bump its revision; whether changed.

    When an existing ReplicaSet gets a higher revision (a rollback to it),
    its previous revision is appended to ``revision-history`` (kept under
    ``rev_history_limit_in_chars`` by dropping the oldest). A ReplicaSet
    about to be created (``exists`` False) also gets the replicas annotations.
    """
    changed = _copy_deployment_annotations_to_replica_set(d, new_rs)
    ann = new_rs["metadata"]["annotations"]
    old_revision = ann.get(REVISION_ANNOTATION)
    had_revision = old_revision is not None
    try:
        old_int = int(old_revision) if old_revision else 0
    except ValueError:
        log.info("Updating replica set revision OldRevision not int %r", old_revision)
        return False
    try:
        new_int = int(new_revision)
    except ValueError:
        log.info("Updating replica set revision NewRevision not int %r", new_revision)
        return False
    if old_int < new_int:
        ann[REVISION_ANNOTATION] = new_revision
        changed = True
    # An existing revision replaced by a higher one means this ReplicaSet is
    # being rolled back to: keep the revisions it had for `rollout history`.
    if had_revision and old_int < new_int:
        history = ann.get(REVISION_HISTORY_ANNOTATION, "")
        old_revisions = history.split(",")
        if not old_revisions[0]:
            ann[REVISION_HISTORY_ANNOTATION] = old_revision
        else:
            total = len(history) + len(str(old_revision)) + 1
            start = 0
            while total > rev_history_limit_in_chars and start < len(old_revisions):
                total -= len(old_revisions[start]) + 1
                start += 1
            if total <= rev_history_limit_in_chars:
                ann[REVISION_HISTORY_ANNOTATION] = ",".join(
                    [*old_revisions[start:], str(old_revision)])
            else:
                log.info("Not appending revision due to revision history length limit "
                         "reached (%d)", rev_history_limit_in_chars)
    if not exists and set_replicas_annotations(new_rs, spec_replicas(d),
                                               spec_replicas(d) + max_surge(d)):
        changed = True
    return changed


def set_deployment_annotations_to(d: dict[str, Any], rollback_to_rs: Obj) -> None:
    """Replace the Deployment's annotations with the ReplicaSet's (the managed ones kept)."""
    meta = d.setdefault("metadata", {})
    kept = {k: v for k, v in (meta.get("annotations") or {}).items() if _skip_copy_annotation(k)}
    for k, v in _annotations(rollback_to_rs).items():
        if not _skip_copy_annotation(k):
            kept[k] = v
    meta["annotations"] = kept


def _int_from_annotation(rs: Obj, key: str) -> tuple[int, bool]:
    """A non-negative int32 annotation (getNonNegativeInt32FromAnnotation: ParseUint,
    at most MaxInt32); (0, False) when absent or not one."""
    v = _annotations(rs).get(key)
    if v is None:
        return 0, False
    try:
        n = parse_uint(v, 32)
    except ValueError:
        n = -1
    if not 0 <= n <= _MAX_INT32:
        log.info("Cannot convert the value %r with annotation key %r for the replica set %r",
                 v, key, meta_of(rs).get("name"))
        return 0, False
    return n, True


def get_desired_replicas_annotation(rs: Obj) -> tuple[int, bool]:
    """The ``desired-replicas`` annotation and whether it is there and valid."""
    return _int_from_annotation(rs, DESIRED_REPLICAS_ANNOTATION)


def get_max_replicas_annotation(rs: Obj) -> tuple[int, bool]:
    """The ``max-replicas`` annotation and whether it is there and valid."""
    return _int_from_annotation(rs, MAX_REPLICAS_ANNOTATION)


def set_replicas_annotations(rs: dict[str, Any], desired: int, max_replicas: int) -> bool:
    """Set ``desired-replicas`` and ``max-replicas`` on a ReplicaSet copy; whether changed."""
    ann = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)),
                       (MAX_REPLICAS_ANNOTATION, str(max_replicas))):
        if ann.get(key) != value:
            ann[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, max_replicas: int) -> bool:
    """Whether the replicas annotations differ from ``desired`` / ``max_replicas``."""
    ann = _annotations(rs)
    return (ann.get(DESIRED_REPLICAS_ANNOTATION) != str(desired)
            or ann.get(MAX_REPLICAS_ANNOTATION) != str(max_replicas))


# -- strategy numbers -----------------------------------------------------------------------


def is_rolling_update(d: Obj) -> bool:
    """Whether the strategy is RollingUpdate (the default when unset)."""
    return ((_spec(d).get("strategy") or {}).get("type") or ROLLING_UPDATE) == ROLLING_UPDATE


def _rolling_params(d: Obj) -> Mapping[str, Any]:
    ru = (_spec(d).get("strategy") or {}).get("rollingUpdate")
    return ru if isinstance(ru, Mapping) else {}


def resolve_fenceposts(max_surge_v: int | str | None, max_unavailable_v: int | str | None,
                       desired: int) -> tuple[int, int]:
    """(surge, unavailable) as counts: surge rounded up, unavailable down; both 0 → unavailable 1.

    Validation forbids both being zero, but rounding maxUnavailable down can
    still make it zero; then a rollout could never progress, so one pod may
    be unavailable (surge might not work, e.g. under a quota).
    """
    surge = get_scaled_value_from_int_or_percent(max_surge_v or 0, desired, True)
    unavailable = get_scaled_value_from_int_or_percent(max_unavailable_v or 0, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Obj) -> int:
    """How many pods above ``replicas`` a rolling update may run (0 for Recreate)."""
    if not is_rolling_update(d):
        return 0
    ru = _rolling_params(d)
    surge, _ = resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), spec_replicas(d))
    return surge


def max_unavailable(d: Obj) -> int:
    """How many of ``replicas`` may be unavailable during a rolling update (0 for Recreate)."""
    replicas = spec_replicas(d)
    if not is_rolling_update(d) or replicas == 0:
        return 0
    ru = _rolling_params(d)
    _, unavailable = resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), replicas)
    return min(unavailable, replicas)


def has_progress_deadline(d: Obj) -> bool:
    """Whether ``progressDeadlineSeconds`` is set (and not MaxInt32, which means none)."""
    v = _spec(d).get("progressDeadlineSeconds")
    return isinstance(v, int) and v != _MAX_INT32


def has_revision_history_limit(d: Obj) -> bool:
    """Whether ``revisionHistoryLimit`` is set (and not MaxInt32, which means keep all)."""
    v = _spec(d).get("revisionHistoryLimit")
    return isinstance(v, int) and v != _MAX_INT32


# -- templates ------------------------------------------------------------------------------


_POD_TEMPLATE_SPEC: Final = "core/v1.PodTemplateSpec"
_ZERO: Final[dict[int, Any]] = {pb.K_STR: "", pb.K_BOOL: False, pb.K_I32: 0, pb.K_I64: 0,
                                pb.K_U32: 0, pb.K_U64: 0, pb.K_F64: 0, pb.K_BYTES: ""}

# JSON name -> (kind, sub message, flags), inline structs' fields at their parent's level
_Fields = dict[str, tuple[int, "pb.Message | None", int]]
_fields_cache: dict[str, _Fields] = {}


def _json_fields(msg: pb.Message) -> _Fields:
    got = _fields_cache.get(msg.name)
    if got is None:
        got = {}
        for json_name, kind, sub, flags in msg.fields.values():
            if flags & pb.F_INLINE and sub is not None:
                got.update(_json_fields(sub))
            else:
                got[json_name] = (kind, sub, flags)
        _fields_cache[msg.name] = got
    return got


def _semantic(v: Any, msg: pb.Message | None = None) -> Any:
    """Normalise a wire value for apimachinery's Semantic.DeepEqual of the Go structs.

    Go compares decoded structs: an absent value field and its zero value
    (``false``, ``0``, ``""``, an empty struct) are the same thing, and the
    forked DeepEqual treats nil and empty slices and maps as equal; a
    pointer field is another matter (nil is not ``&false``, nor ``&{}``).
    ``msg`` (the Go type, from the protobuf schema table) says which is
    which; fields it does not know, and values without a type, lose only
    nulls and empty collections.
    """
    if isinstance(v, Mapping):
        fields = _json_fields(msg) if msg is not None else {}
        out = {}
        for k, x in v.items():
            kind, sub, flags = fields.get(k, (-1, None, 0))
            if flags & (pb.F_REPEATED | pb.F_MAP):
                n = ([_semantic(e, sub) for e in x] if isinstance(x, list)
                     else {mk: _semantic(e, sub) for mk, e in x.items()}
                     if isinstance(x, Mapping) else x)
            else:
                n = _semantic(x, sub)
            if n is None or n == [] or (n == {} and not (kind == pb.K_MSG
                                                         and flags & pb.F_POINTER)):
                continue
            if (kind in _ZERO and not flags & pb.F_POINTER and type(n) is type(_ZERO[kind])
                    and n == _ZERO[kind]):
                continue
            out[k] = n
        return out
    if isinstance(v, list):
        return [_semantic(x, msg) for x in v]
    return v


def _without_hash(template: Obj | None) -> Any:
    t = _semantic(template or {}, pb.load_schema().messages[_POD_TEMPLATE_SPEC])
    labels = (t.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
        if not labels:
            t["metadata"].pop("labels")
            if not t["metadata"]:
                t.pop("metadata")
    return t


_NORMALISED_MAX: Final = 4096
_normalised: dict[bytes, Any] = {}


def _without_hash_cached(template: Obj | None) -> Any:
    """:func:`_without_hash`, memoised by the template's JSON.

    Every sync compares the Deployment's template with each of its
    ReplicaSets' (several times: the scaling check, the old/new split, the
    new one's annotations), and the normalisation walks the whole tree
    against the Go schema: the CPU of a sync was mostly that. The key is the
    template's own bytes, so a changed template is a new key and nothing
    needs invalidating; the result is shared and only ever compared. The
    table is emptied when full (a few thousand templates: one or two per
    ReplicaSet alive).
    """
    try:
        key = orjson.dumps(template)
    except TypeError:  # not JSON (a caller's own Mapping type): no memo
        return _without_hash(template)
    got = _normalised.get(key)
    if got is None:
        got = _without_hash(template)
        if len(_normalised) >= _NORMALISED_MAX:
            _normalised.clear()
        _normalised[key] = got
    return got


def equal_ignore_hash(template1: Obj | None, template2: Obj | None) -> bool:
    """Whether two pod templates are semantically equal once the pod-template-hash label is ignored."""
    return bool(_without_hash_cached(template1) == _without_hash_cached(template2))


def set_from_replica_set_template(d: dict[str, Any], template: Obj) -> None:
    """Make the Deployment's template the ReplicaSet's, without the hash label (a rollback)."""
    t = deep_copy(template)
    labels = (t.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
    d.setdefault("spec", {})["template"] = t


def find_new_replica_set(d: Obj, rs_list: Sequence[Obj]) -> Obj | None:
    """The oldest ReplicaSet whose template equals the Deployment's (ignoring the hash), or None.

    Oldest first: if the cache ever holds two equal ones (a collision-count
    bump after a slow cache), the older one is the one with the pods.
    """
    # The Deployment's side is normalised once, not once per ReplicaSet.
    wanted = _without_hash_cached(_spec(d).get("template"))
    for rs in sort_by_creation_timestamp(rs_list):
        if _without_hash_cached(_spec(rs).get("template")) == wanted:
            return rs
    return None


def find_old_replica_sets(d: Obj, rs_list: Sequence[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(old ReplicaSets with pods, all old ReplicaSets): every one but the new one."""
    new_rs = find_new_replica_set(d, rs_list)
    new_uid = meta_of(new_rs).get("uid") if new_rs is not None else None
    required: list[Obj] = []
    all_old: list[Obj] = []
    for rs in rs_list:
        if new_rs is not None and meta_of(rs).get("uid") == new_uid:
            continue
        all_old.append(rs)
        if spec_replicas(rs) != 0:
            required.append(rs)
    return required, all_old


def find_active_or_latest(new_rs: Obj | None, old_rss: Sequence[Obj]) -> Obj | None:
    """The only active ReplicaSet, or the newest when none is active; None when several are."""
    if new_rs is None and not old_rss:
        return None
    newest_first = list(reversed(sort_by_creation_timestamp(old_rss)))
    active = filter_active_replica_sets([*newest_first, new_rs])
    if len(active) == 0:
        if new_rs is not None:
            return new_rs
        return newest_first[0]
    if len(active) == 1:
        return active[0]
    return None


def get_deployments_for_replica_set(deployments: Iterable[Obj], rs: Obj) -> list[Obj]:
    """The Deployments (of the ReplicaSet's namespace) whose selector matches its labels."""
    labels = meta_of(rs).get("labels")
    if not labels:
        return []
    out = []
    ns = meta_of(rs).get("namespace")
    for d in deployments:
        if meta_of(d).get("namespace") != ns:
            continue
        try:
            sel = selector_from_label_selector(_spec(d).get("selector"))
        except ValueError:
            continue
        # A deployment with a nil or empty selector matches nothing, not everything.
        if sel.empty or not sel.matches(labels):
            continue
        out.append(d)
    return out


# -- replica counts -------------------------------------------------------------------------


def get_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of ``spec.replicas``."""
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def get_actual_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of ``status.replicas``."""
    return sum(_int(_status(rs).get("replicas")) for rs in rss if rs is not None)


def get_ready_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of ``status.readyReplicas``."""
    return sum(_int(_status(rs).get("readyReplicas")) for rs in rss if rs is not None)


def get_available_replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of ``status.availableReplicas``."""
    return sum(_int(_status(rs).get("availableReplicas")) for rs in rss if rs is not None)


def get_terminating_replica_count(rss: Iterable[Obj | None]) -> int | None:
    """Sum of ``status.terminatingReplicas``; None if a synced ReplicaSet does not report it.

    A ReplicaSet its controller never synced (observedGeneration 0) does not
    count; one that was synced but carries no figure makes the sum unknown.
    """
    total = 0
    for rs in rss:
        if rs is None:
            continue
        st = _status(rs)
        term = st.get("terminatingReplicas")
        if _int(st.get("observedGeneration")) == 0 and term is None:
            continue
        if term is None:
            return None
        total += _int(term)
    return total


def is_saturated(d: Obj, rs: Obj | None) -> bool:
    """Whether ``rs`` has all the Deployment's replicas, desired and available."""
    if rs is None:
        return False
    try:
        desired = int(_annotations(rs).get(DESIRED_REPLICAS_ANNOTATION, ""))
    except ValueError:
        return False
    replicas = spec_replicas(d)
    return (spec_replicas(rs) == replicas and desired == replicas
            and _int(_status(rs).get("availableReplicas")) == replicas)


def new_rs_new_replicas(d: Obj, all_rss: Sequence[Obj | None], new_rs: Obj) -> int:
    """How many replicas the new ReplicaSet should have now (NewRSNewReplicas).

    RollingUpdate: scale up by what maxSurge leaves room for over all
    ReplicaSets, never past ``replicas``. Recreate: ``replicas``.
    """
    replicas = spec_replicas(d)
    if is_rolling_update(d):
        surge = get_scaled_value_from_int_or_percent(
            _rolling_params(d).get("maxSurge") or 0, replicas, True)
        current = get_replica_count(all_rss)
        max_total = replicas + surge
        if current >= max_total:
            # Cannot scale up.
            return spec_replicas(new_rs)
        scale_up = min(max_total - current, replicas - spec_replicas(new_rs))
        return spec_replicas(new_rs) + scale_up
    strategy = (_spec(d).get("strategy") or {}).get("type")
    if strategy == RECREATE:
        return replicas
    raise ValueError(f"deployment type {strategy} isn't supported")


# -- proportional scaling -------------------------------------------------------------------


def _round_half_away(x: float) -> int:
    # integer.RoundToInt32 is math.Round: halves away from zero (Python's round is to even).
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def get_replica_set_fraction(rs: Obj, d: Obj) -> int:
    """The change of ``rs``'s size that keeps its share of the Deployment after a resize."""
    replicas = spec_replicas(d)
    if replicas == 0:
        # Scaling down to zero: the whole ReplicaSet goes.
        return -spec_replicas(rs)
    deployment_replicas = replicas + max_surge(d)
    annotated, ok = get_max_replicas_annotation(rs)
    if not ok or annotated == 0:
        # Without a usable annotation (removed, invalid, or "0") fall back to the current
        # size; the min/max in get_proportion keeps the result within bounds anyway.
        annotated = _int(_status(d).get("replicas"))
    if annotated == 0:
        # Nothing to scale from (the pods are failing to be created, say).
        return 0
    new_size = spec_replicas(rs) * deployment_replicas / annotated
    return _round_half_away(new_size) - spec_replicas(rs)


def get_proportion(rs: Obj | None, d: Obj, deployment_replicas_to_add: int,
                   deployment_replicas_added: int) -> int:
    """How many replicas to add to (or remove from, negative) ``rs`` in a proportional scale.

    Never more than what is left to distribute: min(fraction, left) when
    scaling up, max(fraction, left) when scaling down.
    """
    if (rs is None or spec_replicas(rs) == 0 or deployment_replicas_to_add == 0
            or deployment_replicas_to_add == deployment_replicas_added):
        return 0
    fraction = get_replica_set_fraction(rs, d)
    allowed = deployment_replicas_to_add - deployment_replicas_added
    if deployment_replicas_to_add > 0:
        return min(fraction, allowed)
    return max(fraction, allowed)


# -- conditions -----------------------------------------------------------------------------


def new_deployment_condition(type_: str, status: str, reason: str, message: str,
                             now: float | None = None) -> dict[str, Any]:
    """A DeploymentCondition with lastUpdateTime and lastTransitionTime now."""
    ts = now_rfc3339(now)
    return {"type": type_, "status": status, "lastUpdateTime": ts,
            "lastTransitionTime": ts, "reason": reason, "message": message}


def get_deployment_condition(status: Obj | None, type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_`` in a DeploymentStatus, or None."""
    for c in (status or {}).get("conditions") or ():
        if c.get("type") == type_:
            found: Mapping[str, Any] = c
            return found
    return None


def set_deployment_condition(status: MutableMapping[str, Any], condition: dict[str, Any]) -> None:
    """Put ``condition`` into ``status`` (a copy the caller owns).

    The same status and reason as the current one: nothing changes (not even
    lastUpdateTime). The same status, another reason: lastTransitionTime is
    kept from the current one.
    """
    current = get_deployment_condition(status, condition["type"])
    if (current is not None and current.get("status") == condition["status"]
            and current.get("reason") == condition["reason"]):
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    conds = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
    conds.append(condition)
    status["conditions"] = conds


def remove_deployment_condition(status: MutableMapping[str, Any], type_: str) -> None:
    """Drop the condition of ``type_`` from ``status``."""
    conds = [c for c in status.get("conditions") or () if c.get("type") != type_]
    if conds:
        status["conditions"] = conds
    else:
        status.pop("conditions", None)


def replica_set_to_deployment_condition(cond: Obj) -> dict[str, Any]:
    """A ReplicaSet condition as a Deployment condition (both times from its transition)."""
    return {"type": cond.get("type"), "status": cond.get("status"),
            "lastUpdateTime": cond.get("lastTransitionTime"),
            "lastTransitionTime": cond.get("lastTransitionTime"),
            "reason": cond.get("reason"), "message": cond.get("message")}


def deployment_complete(d: Obj, new_status: Obj) -> bool:
    """All replicas updated and available, none old, and the latest generation observed."""
    replicas = spec_replicas(d)
    return (_int(new_status.get("updatedReplicas")) == replicas
            and _int(new_status.get("replicas")) == replicas
            and _int(new_status.get("availableReplicas")) == replicas
            and _int(new_status.get("observedGeneration"))
            >= _int(meta_of(d).get("generation")))


def deployment_progressing(d: Obj, new_status: Obj) -> bool:
    """Whether ``new_status`` shows progress over the Deployment's current status.

    Progress: more updated, fewer old, more ready or more available replicas.
    """
    old = _status(d)
    old_old = _int(old.get("replicas")) - _int(old.get("updatedReplicas"))
    new_old = _int(new_status.get("replicas")) - _int(new_status.get("updatedReplicas"))
    return (_int(new_status.get("updatedReplicas")) > _int(old.get("updatedReplicas"))
            or new_old < old_old
            or _int(new_status.get("readyReplicas")) > _int(old.get("readyReplicas"))
            or _int(new_status.get("availableReplicas")) > _int(old.get("availableReplicas")))


def deployment_timed_out(d: Obj, new_status: Obj, now: float | None = None) -> bool:
    """Whether the Progressing condition was last updated more than the deadline ago."""
    if not has_progress_deadline(d):
        return False
    cond = get_deployment_condition(new_status, PROGRESSING)
    if cond is None:
        return False
    # A complete rollout never times out; a timed-out one stays so.
    if cond.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if cond.get("reason") == TIMED_OUT_REASON:
        return True
    since = parse_time(cond.get("lastUpdateTime"))
    if since is None:
        return False
    t = REAL_CLOCK.now() if now is None else now
    return since + int(_spec(d)["progressDeadlineSeconds"]) < t
