"""StatefulSet helpers: pod identity, storage, claim retention policy, revisions, status.

kube-controller-manager v1.36 ``pkg/controller/statefulset/stateful_set_utils.go``.

A StatefulSet pod is named ``<set>-<ordinal>`` and carries its identity:
``spec.hostname`` (its name) and ``spec.subdomain`` (the set's serviceName) set
once at creation, the labels ``statefulset.kubernetes.io/pod-name`` and
``apps.kubernetes.io/pod-index``, and ``controller-revision-hash`` (the name of
the ControllerRevision it was made from). Each volumeClaimTemplate gives the pod
a PersistentVolumeClaim ``<claim>-<set>-<ordinal>`` (template labels plus the
set's matchLabels) and a volume of that name referring to it.

The claims' owner references follow ``persistentVolumeClaimRetentionPolicy``:

=============  =============  ==========================================
whenScaled     whenDeleted    owners of a claim
=============  =============  ==========================================
Retain         Retain         none
Retain         Delete         the StatefulSet
Delete         Retain         the pod, once it is scaled down
Delete         Delete         the set while the pod is in range, else the pod
=============  =============  ==========================================

(the garbage collector then deletes claims with their owners).

Deviation: upstream builds the pod's claim volumes from a Go map, so with several
volumeClaimTemplates their order in a new pod is random; here it is the
templates' order.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from typing import Any, Final

from pykcm.api.accessors import meta_of, spec_of, status_of
from pykcm.api.intstr import get_scaled_value_from_int_or_percent
from pykcm.api.owner_refs import new_controller_ref
from pykcm.api.patch import apply_strategic_merge_patch, schema_ref_for
from pykcm.api.pod_util import is_pod_available, is_pod_ready
from pykcm.api.resources import ResourceInfo
from pykcm.controller.history import new_controller_revision, template_patch
from pykcm.controller.pod_control import get_pod_from_template

__all__ = [
    "CLAIMS_GROUP_RESOURCE",
    "PERSISTENT_VOLUME_CLAIMS",
    "POD_INDEX_LABEL",
    "SET_GROUP_RESOURCE",
    "STATEFUL_SET_POD_NAME_LABEL",
    "STATEFUL_SET_REVISION_LABEL",
    "allows_burst",
    "apply_revision",
    "complete_rolling_update",
    "get_end_ordinal",
    "get_max_unavailable",
    "get_ordinal",
    "get_parent_name_and_ordinal",
    "get_persistent_volume_claim_name",
    "get_persistent_volume_claims",
    "get_pod_name",
    "get_pod_revision",
    "get_start_ordinal",
    "identity_matches",
    "inconsistent_status",
    "is_claim_owner_up_to_date",
    "new_revision",
    "new_stateful_set_pod",
    "new_versioned_stateful_set_pod",
    "next_revision",
    "parse_pod_name",
    "pod_in_ordinal_range",
    "status_to_wire",
    "storage_matches",
    "update_claim_owner_refs",
    "update_identity",
    "update_storage",
    "warm_up",
]

PERSISTENT_VOLUME_CLAIMS: Final = ResourceInfo(
    group="", version="v1", kind="PersistentVolumeClaim", plural="persistentvolumeclaims",
    singular="persistentvolumeclaim", namespaced=True, short_names=("pvc",),
    subresources=("status",))
"""core/v1 persistentvolumeclaims (not in the built-in registry: pykcm's embedded API server
does not serve it yet; the controller uses it against servers that do)."""

STATEFUL_SET_POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
STATEFUL_SET_REVISION_LABEL: Final = "controller-revision-hash"
SET_API_VERSION: Final = "apps/v1"
SET_KIND: Final = "StatefulSet"
#: The group resources as the consistency store names them (GroupResource.String()).
SET_GROUP_RESOURCE: Final = "statefulsets.apps"
CLAIMS_GROUP_RESOURCE: Final = "persistentvolumeclaims"

_POD_NAME_RE: Final = re.compile(r"^(.*)-([0-9]+)$", re.DOTALL)
_POD_NAME_CACHE_SIZE: Final = 16384
"""Pod names whose parse is remembered (least recently used dropped)."""
_INT32_MAX: Final = (1 << 31) - 1
_RETAIN: Final = "Retain"
_DELETE: Final = "Delete"





# -- identity ---------------------------------------------------------------------------------

def get_parent_name_and_ordinal(pod: Mapping[str, Any]) -> tuple[str, int]:
    """(the set's name, the ordinal) a pod's name encodes; ("", -1) if none."""
    return parse_pod_name(str(meta_of(pod).get("name") or ""))


@lru_cache(maxsize=_POD_NAME_CACHE_SIZE)
def parse_pod_name(name: str) -> tuple[str, int]:
    """(the set's name, the ordinal) ``name`` encodes; ("", -1) if none.

    A pure function of the name, memoised: a sync reads the ordinal of each of the
    set's pods about six times (membership, range, sorting, identity, storage,
    status), and the regular expression was a fifth of a steady-state sync."""
    m = _POD_NAME_RE.match(name)
    if m is None:
        return "", -1
    digits = m.group(2)
    ordinal = int(digits) if len(digits) <= 10 and int(digits) <= _INT32_MAX else -1
    return m.group(1), ordinal


def get_ordinal(pod: Mapping[str, Any]) -> int:
    return get_parent_name_and_ordinal(pod)[1]


def get_start_ordinal(set_: Mapping[str, Any]) -> int:
    ordinals = spec_of(set_).get("ordinals")
    return int((ordinals or {}).get("start") or 0) if isinstance(ordinals, Mapping) else 0


def spec_replicas(set_: Mapping[str, Any]) -> int:
    r = spec_of(set_).get("replicas")
    return 1 if r is None else int(r)


def get_end_ordinal(set_: Mapping[str, Any]) -> int:
    return get_start_ordinal(set_) + spec_replicas(set_) - 1


def pod_in_ordinal_range(pod: Mapping[str, Any], set_: Mapping[str, Any]) -> bool:
    ordinal = get_ordinal(pod)
    return get_start_ordinal(set_) <= ordinal <= get_end_ordinal(set_)


def get_pod_name(set_: Mapping[str, Any], ordinal: int) -> str:
    return f"{meta_of(set_).get('name')}-{ordinal}"


def get_persistent_volume_claim_name(set_: Mapping[str, Any], claim: Mapping[str, Any],
                                     ordinal: int) -> str:
    return f"{meta_of(claim).get('name')}-{meta_of(set_).get('name')}-{ordinal}"


def is_member_of(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    return get_parent_name_and_ordinal(pod)[0] == meta_of(set_).get("name")


def identity_matches(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Name, namespace and pod-name label as the set gives them."""
    parent, ordinal = get_parent_name_and_ordinal(pod)
    pmeta = meta_of(pod)
    return (ordinal >= 0 and parent == meta_of(set_).get("name")
            and pmeta.get("name") == get_pod_name(set_, ordinal)
            and pmeta.get("namespace") == meta_of(set_).get("namespace")
            and (pmeta.get("labels") or {}).get(STATEFUL_SET_POD_NAME_LABEL) == pmeta.get("name"))


def storage_matches(set_: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Every claim template has its volume, referring to the pod's claim."""
    ordinal = get_ordinal(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in spec_of(pod).get("volumes") or ()}
    for claim in spec_of(set_).get("volumeClaimTemplates") or ():
        volume = volumes.get(meta_of(claim).get("name"))
        pvc = (volume or {}).get("persistentVolumeClaim")
        if not isinstance(pvc, Mapping) or pvc.get("claimName") != \
                get_persistent_volume_claim_name(set_, claim, ordinal):
            return False
    return True


def update_identity(set_: Mapping[str, Any], pod: dict[str, Any]) -> None:
    """Name, namespace, pod-name and pod-index labels from the set and the ordinal."""
    ordinal = get_ordinal(pod)
    meta = pod.setdefault("metadata", {})
    meta["name"] = get_pod_name(set_, ordinal)
    meta["namespace"] = meta_of(set_).get("namespace")
    labels = meta.setdefault("labels", {})
    labels[STATEFUL_SET_POD_NAME_LABEL] = meta["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)


def init_identity(set_: Mapping[str, Any], pod: dict[str, Any]) -> None:
    update_identity(set_, pod)
    spec = pod.setdefault("spec", {})
    spec["hostname"] = pod["metadata"]["name"]
    spec["subdomain"] = spec_of(set_).get("serviceName") or ""


def get_persistent_volume_claims(set_: Mapping[str, Any], pod: Mapping[str, Any]
                                 ) -> dict[str, dict[str, Any]]:
    """The pod's claims by template name, as the set's templates make them."""
    ordinal = get_ordinal(pod)
    match_labels = (spec_of(set_).get("selector") or {}).get("matchLabels") or {}
    out: dict[str, dict[str, Any]] = {}
    for template in spec_of(set_).get("volumeClaimTemplates") or ():
        claim = copy.deepcopy(dict(template))
        meta = dict(claim.get("metadata") or {})
        meta["name"] = get_persistent_volume_claim_name(set_, template, ordinal)
        meta["namespace"] = meta_of(set_).get("namespace")
        if meta.get("labels") is not None:
            meta["labels"] = {**meta["labels"], **match_labels}
        else:
            meta["labels"] = dict(match_labels)
        claim["metadata"] = meta
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        out[str(meta_of(template).get("name"))] = claim
    return out


def update_storage(set_: Mapping[str, Any], pod: dict[str, Any]) -> None:
    """Make the pod's volumes refer to its claims (other volumes of the same name replaced)."""
    spec = pod.setdefault("spec", {})
    claims = get_persistent_volume_claims(set_, pod)
    volumes: list[Any] = [{"name": name, "persistentVolumeClaim": {
        "claimName": claim["metadata"]["name"]}} for name, claim in claims.items()]
    volumes += [v for v in spec.get("volumes") or () if v.get("name") not in claims]
    spec["volumes"] = volumes


def set_pod_revision(pod: dict[str, Any], revision: str) -> None:
    pod.setdefault("metadata", {}).setdefault("labels", {})[STATEFUL_SET_REVISION_LABEL] = revision


def get_pod_revision(pod: Mapping[str, Any]) -> str:
    return str((meta_of(pod).get("labels") or {}).get(STATEFUL_SET_REVISION_LABEL, ""))


def new_stateful_set_pod(set_: Mapping[str, Any], ordinal: int) -> dict[str, Any]:
    """The pod of ``ordinal``: the template, the identity, the claim volumes."""
    pod = get_pod_from_template(spec_of(set_).get("template") or {}, set_,
                                new_controller_ref(set_, SET_API_VERSION, SET_KIND))
    pod["metadata"]["name"] = get_pod_name(set_, ordinal)
    init_identity(set_, pod)
    update_storage(set_, pod)
    return pod


def new_versioned_stateful_set_pod(current_set: Mapping[str, Any],
                                   update_set: Mapping[str, Any], current_revision: str,
                                   update_revision: str, ordinal: int) -> dict[str, Any]:
    """A new pod of ``ordinal``, from the current revision if the rolling update has not
    reached it (below the partition), else from the update revision."""
    strategy = spec_of(current_set).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate")
    start = get_start_ordinal(current_set)
    # Go's precedence: (type == RollingUpdate && rollingUpdate == nil && below current)
    # || (rollingUpdate != nil && below the partition)
    if ((strategy.get("type") == "RollingUpdate" and rolling is None
         and ordinal < start + int(status_of(current_set).get("currentReplicas") or 0))
            or (rolling is not None
                and ordinal < start + int(rolling.get("partition") or 0))):
        pod = new_stateful_set_pod(current_set, ordinal)
        set_pod_revision(pod, current_revision)
        return pod
    pod = new_stateful_set_pod(update_set, ordinal)
    set_pod_revision(pod, update_revision)
    return pod


# -- pod states ---------------------------------------------------------------------------------

def _phase(pod: Mapping[str, Any]) -> str:
    return str(status_of(pod).get("phase") or "")


def is_created(pod: Mapping[str, Any]) -> bool:
    """Created and maintained by the API server (it has a phase)."""
    return _phase(pod) != ""


def is_pending(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) == "Pending"


def is_failed(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) == "Failed"


def is_succeeded(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) == "Succeeded"


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(meta_of(pod).get("deletionTimestamp"))


def is_running_and_ready(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) == "Running" and is_pod_ready(pod)


def is_running_and_available(pod: Mapping[str, Any], min_ready_seconds: int,
                             now: float) -> bool:
    return is_pod_available(pod, min_ready_seconds, now)


def is_unavailable(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    return not is_pod_available(pod, min_ready_seconds, now) or is_terminating(pod)


def allows_burst(set_: Mapping[str, Any]) -> bool:
    """Parallel pod management: no ordering between pods."""
    return spec_of(set_).get("podManagementPolicy") == "Parallel"


def get_max_unavailable(max_unavailable: Any, replica_count: int) -> int:
    """maxUnavailable as a number of pods: default 1, percentages rounded down, at least 1."""
    n = get_scaled_value_from_int_or_percent(1 if max_unavailable is None else max_unavailable,
                                             replica_count, False)
    return max(n, 1)


# -- claim retention --------------------------------------------------------------------------

def retention_policy(set_: Mapping[str, Any]) -> tuple[str, str]:
    """(whenScaled, whenDeleted), Retain by default."""
    p = spec_of(set_).get("persistentVolumeClaimRetentionPolicy")
    if not isinstance(p, Mapping):
        return _RETAIN, _RETAIN
    return str(p.get("whenScaled") or _RETAIN), str(p.get("whenDeleted") or _RETAIN)


def _refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(meta_of(obj).get("ownerReferences") or ())


def _matches_ref(ref: Mapping[str, Any], obj: Mapping[str, Any], api_version: str,
                 kind: str) -> bool:
    return (ref.get("apiVersion") == api_version and ref.get("kind") == kind
            and ref.get("name") == meta_of(obj).get("name"))


def _is_set_ref(ref: Mapping[str, Any], set_: Mapping[str, Any]) -> bool:
    return _matches_ref(ref, set_, SET_API_VERSION, SET_KIND)


def _is_pod_ref(ref: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    return _matches_ref(ref, pod, "v1", "Pod")


def has_owner_ref(target: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = meta_of(owner).get("uid")
    return any(r.get("uid") == uid for r in _refs(target))


def has_stale_owner_ref(target: Mapping[str, Any], obj: Mapping[str, Any], api_version: str,
                        kind: str) -> bool:
    """A reference to ``obj`` by name and kind but with another UID (its previous life)."""
    for ref in _refs(target):
        if _matches_ref(ref, obj, api_version, kind):
            return bool(ref.get("uid") != meta_of(obj).get("uid"))
    return False


def has_unexpected_controller(claim: Mapping[str, Any], set_: Mapping[str, Any],
                              pod: Mapping[str, Any]) -> bool:
    """Another controller (or a stale reference of ours) manages the claim."""
    if retention_policy(set_) == (_RETAIN, _RETAIN):
        return False
    for ref in _refs(claim):
        if _is_set_ref(ref, set_):
            if ref.get("uid") != meta_of(set_).get("uid"):
                return True
            continue
        if _is_pod_ref(ref, pod):
            if ref.get("uid") != meta_of(pod).get("uid"):
                return True
            continue
        if ref.get("controller") is True:
            return True
    return False


def has_non_controller_owner(claim: Mapping[str, Any], set_: Mapping[str, Any],
                             pod: Mapping[str, Any]) -> bool:
    uids = (meta_of(set_).get("uid"), meta_of(pod).get("uid"))
    return any(r.get("uid") in uids and r.get("controller") is not True for r in _refs(claim))


def is_claim_owner_up_to_date(claim: Mapping[str, Any], set_: Mapping[str, Any],
                              pod: Mapping[str, Any]) -> bool:
    """Whether the claim's owners are those the retention policy asks for (stale or foreign
    controllers: leave it alone)."""
    if has_stale_owner_ref(claim, set_, SET_API_VERSION, SET_KIND) or \
            has_stale_owner_ref(claim, pod, "v1", "Pod"):
        return True
    if has_unexpected_controller(claim, set_, pod):
        return not (has_owner_ref(claim, set_) or has_owner_ref(claim, pod))
    if has_non_controller_owner(claim, set_, pod):
        return False
    when_scaled, when_deleted = retention_policy(set_)
    scaled_down = not pod_in_ordinal_range(pod, set_)
    set_ref, pod_ref = has_owner_ref(claim, set_), has_owner_ref(claim, pod)
    if when_scaled == _RETAIN and when_deleted == _DELETE:
        return set_ref and not pod_ref
    if when_scaled == _DELETE and when_deleted == _RETAIN:
        return not set_ref and scaled_down == pod_ref
    if when_scaled == _DELETE and when_deleted == _DELETE:
        return scaled_down != set_ref and scaled_down == pod_ref
    # Retain/Retain, or an unknown policy treated as it
    return not set_ref and not pod_ref


def update_claim_owner_refs(claim: dict[str, Any], set_: Mapping[str, Any],
                            pod: Mapping[str, Any]) -> None:
    """Set the claim's references to the set and the pod as the retention policy asks."""
    meta = claim.setdefault("metadata", {})
    unexpected = has_unexpected_controller(claim, set_, pod)
    refs: list[Any] = [r for r in _refs(claim)
                       if not (_is_set_ref(r, set_) or _is_pod_ref(r, pod))]
    if not unexpected:
        when_scaled, when_deleted = retention_policy(set_)
        scaled_down = not pod_in_ordinal_range(pod, set_)

        def add(owner: Mapping[str, Any], api_version: str, kind: str) -> None:
            if not any(r.get("uid") == meta_of(owner).get("uid") for r in refs):
                refs.append(new_controller_ref(owner, api_version, kind))

        if when_scaled == _RETAIN and when_deleted == _DELETE:
            add(set_, SET_API_VERSION, SET_KIND)
        elif when_scaled == _DELETE and when_deleted == _RETAIN:
            if scaled_down:
                add(pod, "v1", "Pod")
        elif when_scaled == _DELETE and when_deleted == _DELETE:
            if scaled_down:
                add(pod, "v1", "Pod")
            else:
                add(set_, SET_API_VERSION, SET_KIND)
    meta["ownerReferences"] = refs


# -- revisions ----------------------------------------------------------------------------------

def new_revision(set_: Mapping[str, Any], revision: int,
                 collision_count: int | None) -> dict[str, Any]:
    """The ControllerRevision recording the set's template: the set's annotations too."""
    labels = (meta_of(spec_of(set_).get("template") or {}).get("labels")) or {}
    cr = new_controller_revision(set_, SET_API_VERSION, SET_KIND, labels, template_patch(set_),
                                 revision, collision_count)
    annotations = dict(meta_of(set_).get("annotations") or {})
    if annotations:
        cr["metadata"]["annotations"] = annotations
    return cr


@cache
def _set_schema_ref() -> str:
    ref = schema_ref_for("apps", "v1", "StatefulSet")
    assert ref is not None
    return ref


def warm_up() -> None:
    """Load now what the first sync would load (the strategic merge patch schema, tens of
    ms): the controller calls it when built, before its first StatefulSet's pods."""
    _set_schema_ref()


def apply_revision(set_: Mapping[str, Any], revision: Mapping[str, Any]) -> dict[str, Any]:
    """The set with the state the revision recorded (its patch applied)."""
    data = revision.get("data")
    if not isinstance(data, Mapping):
        return copy.deepcopy(dict(set_))
    return apply_strategic_merge_patch(copy.deepcopy(dict(set_)), copy.deepcopy(dict(data)),
                                       _set_schema_ref())


def next_revision(revisions: Sequence[Mapping[str, Any]]) -> int:
    """One more than the last (sorted) revision's number; 1 for none."""
    if not revisions:
        return 1
    return int(revisions[-1].get("revision") or 0) + 1


_STATUS_FIELDS: Final = ("observedGeneration", "replicas", "readyReplicas", "currentReplicas",
                         "updatedReplicas", "currentRevision", "updateRevision",
                         "availableReplicas")


def inconsistent_status(set_: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Whether ``status`` differs from the set's (a newer generation, or any count or
    revision changed)."""
    cur = status_of(set_)
    if int(status.get("observedGeneration") or 0) > int(cur.get("observedGeneration") or 0):
        return True
    for k in ("replicas", "currentReplicas", "readyReplicas", "updatedReplicas",
              "availableReplicas"):
        if int(status.get(k) or 0) != int(cur.get(k) or 0):
            return True
    return any(str(status.get(k) or "") != str(cur.get(k) or "")
               for k in ("currentRevision", "updateRevision"))


def complete_rolling_update(set_: Mapping[str, Any], status: dict[str, Any]) -> None:
    """Once every replica is updated and ready, the update revision becomes the current one."""
    if ((spec_of(set_).get("updateStrategy") or {}).get("type") == "RollingUpdate"
            and status.get("updatedReplicas", 0) == spec_replicas(set_)
            and status.get("readyReplicas", 0) == spec_replicas(set_)
            and status.get("replicas", 0) == spec_replicas(set_)):
        status["currentReplicas"] = status.get("updatedReplicas", 0)
        status["currentRevision"] = status.get("updateRevision", "")


def status_to_wire(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as Go serializes apps/v1 StatefulSetStatus (zero omitempty fields left out)."""
    out: dict[str, Any] = {}
    for k in _STATUS_FIELDS:
        v = status.get(k)
        if k in ("replicas", "availableReplicas"):
            out[k] = int(v or 0)
        elif v:
            out[k] = v
    if status.get("collisionCount") is not None:
        out["collisionCount"] = status["collisionCount"]
    if status.get("conditions"):
        out["conditions"] = status["conditions"]
    return out
