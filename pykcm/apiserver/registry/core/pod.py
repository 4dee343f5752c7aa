"""core/v1 Pods (pkg/registry/core/pod): defaults, validation, status/spec split, graceful
deletion and printer.

- Defaults: the pod spec's (``defaults.default_pod_spec``); on create the status is
  the server's (PrepareForCreate empties it) and defaulting sets phase Pending and
  the QoS class.
- Validation: the pod spec, the mirror-pod annotation, upstream's update rules
  (only images, activeDeadlineSeconds, added tolerations, removed scheduling gates
  and a gated pod's node selector may change) and the status rules of
  ``ValidatePodStatusUpdate``.
- /status writes keep the owner references (old kubelets corrupted them there).
- Graceful deletion: the pod's terminationGracePeriodSeconds (30), 0 for an
  unscheduled or finished pod.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    forbidden,
    go_string_map,
    inclusive_range_error,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_ip,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_spec, pod_qos_class
from pykcm.apiserver.registry.defaulting import child_dict, dicts_in, go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    as_int,
    as_list,
    as_map,
    as_str,
    semantic_equal,
)

Obj = Mapping[str, Any]
MAX_INT32: Final = 2**31 - 1

# --- defaults ---------------------------------------------------------------------------

def _default(obj: dict[str, Any], create: bool) -> None:
    spec = child_dict(obj, "spec")
    default_pod_spec(spec, is_pod=True)
    status = obj.get("status")
    if status.__class__ is dict:
        # PodCondition's times are metav1.Time: Go writes null when unset
        for cond in dicts_in(status.get("conditions")):
            cond.setdefault("lastProbeTime", None)
            cond.setdefault("lastTransitionTime", None)
    if create:
        status = child_dict(obj, "status")
        if not status.get("phase"):
            status["phase"] = "Pending"
        if not status.get("qosClass"):
            status["qosClass"] = pod_qos_class(spec)


# --- validation -------------------------------------------------------------------------

_MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"


_MIRROR_PATH: Final = f"metadata.annotations[{_MIRROR_POD_ANNOTATION}]"


def _mirror_pod_annotation(obj: Obj, spec: Mapping[str, Any]) -> list[Cause]:
    """ValidatePodSpecificAnnotations' mirror pod rule: a mirror pod names its node."""
    annotations = as_map(meta_of(obj).get("annotations"))
    if _MIRROR_POD_ANNOTATION in annotations and not spec.get("nodeName"):
        return [invalid(_MIRROR_PATH, as_str(annotations[_MIRROR_POD_ANNOTATION]),
                        "must set spec.nodeName if mirror pod annotation is set")]
    return []


def _mirror_pod_annotation_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidatePodSpecificAnnotationUpdates: the mirror pod annotation never changes."""
    new_ann, old_ann = as_map(meta_of(new).get("annotations")), as_map(meta_of(old).get("annotations"))
    key = _MIRROR_POD_ANNOTATION
    if key in old_ann and new_ann.get(key) != old_ann[key]:
        return [forbidden(_MIRROR_PATH, "may not remove or update mirror pod annotation")]
    if key in new_ann and key not in old_ann:
        return [forbidden(_MIRROR_PATH, "may not add mirror pod annotation")]
    return []


def _create_pod(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    spec = as_map(obj.get("spec"))
    errs.extend(_mirror_pod_annotation(obj, spec))
    errs.extend(podspec.validate_pod_spec(spec, "spec"))
    if spec.get("ephemeralContainers"):
        errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    return errs


_POD_UPDATABLE_FIELDS: Final = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


_POD_UPDATABLE: Final = ",".join(_POD_UPDATABLE_FIELDS)


def _spec_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """A short, cmp.Diff-like listing of the top-level fields that differ."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if semantic_equal(a, b):
            continue
        if a is not None:
            lines.append(f"- \t{key}: {_render_compact(a)},")
        if b is not None:
            lines.append(f"+ \t{key}: {_render_compact(b)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def _render_compact(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), sort_keys=True, default=str)


def _validate_only_added_tolerations(new: list[Any], old: list[Any], path: str) -> list[Cause]:
    for o in old:
        o = dict(as_map(o))
        found = False
        for n in new:
            n = as_map(n)
            # An unset tolerationSeconds is left out rather than set to None
            # (the same to semantic_equal), so that unchanged tolerations compare
            # equal without normalizing.
            seconds = n.get("tolerationSeconds")
            if seconds is None:
                o.pop("tolerationSeconds", None)
            else:
                o["tolerationSeconds"] = seconds
            if semantic_equal(o, n):
                found = True
                break
        if not found:
            return [forbidden(path, "existing toleration can not be modified except its "
                                    "tolerationSeconds")]
    return []


def _update_pod(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    nspec, ospec = as_map(new.get("spec")), as_map(old.get("spec"))
    errs.extend(_mirror_pod_annotation_update(new, old))
    errs.extend(_mirror_pod_annotation(new, nspec))
    errs.extend(podspec.validate_pod_spec(nspec, "spec"))
    for key in ("containers", "initContainers"):
        ncs, ocs = as_list(nspec.get(key)), as_list(ospec.get(key))
        if len(ncs) != len(ocs):
            errs.append(forbidden(f"spec.{key}", "pod updates may not add or remove containers"))
            return errs
        for i, c in enumerate(ncs):
            image = as_str(as_map(c).get("image"))
            if image and image.strip() != image:
                errs.append(invalid(f"spec.{key}[{i}].image", image,
                                    "must not have leading or trailing whitespace"))
    nads, oads = as_int(nspec.get("activeDeadlineSeconds")), as_int(ospec.get("activeDeadlineSeconds"))
    if nads is not None:
        if not 0 <= nads <= MAX_INT32:
            errs.append(invalid("spec.activeDeadlineSeconds", nads,
                                inclusive_range_error(0, MAX_INT32)))
            return errs
        if oads is not None and oads < nads:
            errs.append(invalid("spec.activeDeadlineSeconds", nads,
                                "must be less than or equal to previous value"))
            return errs
    elif oads is not None:
        errs.append(invalid("spec.activeDeadlineSeconds", None,
                            "must not update from a positive integer to nil value"))
    errs.extend(_validate_only_added_tolerations(as_list(nspec.get("tolerations")),
                                                 as_list(ospec.get("tolerations")), "spec.tolerations"))
    old_gates = {as_str(as_map(g).get("name")) for g in as_list(ospec.get("schedulingGates"))}
    for g in as_list(nspec.get("schedulingGates")):
        gname = as_str(as_map(g).get("name"))
        if gname not in old_gates:
            errs.append(forbidden("spec.schedulingGates",
                                  f"only deletion is allowed, but found new scheduling gate "
                                  f"'{gname}'"))
    # The new spec with the mutable fields set back to their old values must
    # equal the old spec. A field unset in the old spec is dropped rather
    # than set to None (the same to semantic_equal), so that the usual update, which
    # leaves the spec alone, compares equal without normalizing.
    munged = dict(nspec)

    def revert(key: str) -> None:
        if key in ospec:
            munged[key] = ospec[key]
        else:
            munged.pop(key, None)

    for key in ("containers", "initContainers"):
        reverted = [
            {**as_map(c), "image": as_map(oc).get("image")}
            for c, oc in zip(as_list(nspec.get(key)), as_list(ospec.get(key)), strict=True)
        ]
        if reverted:  # else munged keeps the new spec's value (or its absence)
            munged[key] = reverted
    revert("activeDeadlineSeconds")
    revert("tolerations")
    revert("schedulingGates")
    otgps, ntgps = as_int(ospec.get("terminationGracePeriodSeconds")), as_int(
        nspec.get("terminationGracePeriodSeconds"))
    if otgps is not None and otgps < 0 and ntgps == 1:
        munged["terminationGracePeriodSeconds"] = otgps
    if old_gates:
        # A gated pod may gain nodeSelector entries (not change or drop them).
        nsel, osel = as_map(nspec.get("nodeSelector")), as_map(ospec.get("nodeSelector"))
        if not semantic_equal(nsel, osel):
            for k, v in osel.items():
                if nsel.get(k) != v:
                    errs.append(invalid("spec.nodeSelector", go_string_map(nsel),
                                        "only additions to spec.nodeSelector are allowed (no "
                                        "mutations or deletions)"))
                    break
            munged["nodeSelector"] = ospec.get("nodeSelector")
    if not semantic_equal(munged, ospec):
        errs.append(forbidden("spec", "pod updates may not change fields other than "
                                      f"{_POD_UPDATABLE}\n{_spec_diff(ospec, munged)}"))
    return errs


def _status_pod(new: Obj, old: Obj) -> list[Cause]:
    errs: list[Cause] = []
    s, o = as_map(new.get("status")), as_map(old.get("status"))
    system_conditions = {"PodScheduled", "Ready", "Initialized"}
    for i, cond in enumerate(as_list(s.get("conditions"))):
        ctype = as_str(as_map(cond).get("type"))
        if ctype in system_conditions:
            continue
        errs.extend(invalid(f"status.conditions[{i}].Type", ctype, m)
                    for m in is_qualified_name(ctype))
    if as_map(new.get("spec")).get("nodeName") != as_map(old.get("spec")).get("nodeName"):
        errs.append(forbidden("status.nodeName", "may not be changed directly"))
    nnn = as_str(s.get("nominatedNodeName"))
    if nnn and nnn != o.get("nominatedNodeName"):
        errs.extend(invalid("status.nominatedNodeName", nnn, m)
                    for m in is_dns1123_subdomain(nnn))
    restart = as_str(as_map(old.get("spec")).get("restartPolicy"))
    if restart != "Always":
        new_statuses = {as_str(as_map(c).get("name")): as_map(c) for c in as_list(s.get("containerStatuses"))}
        for i, oc in enumerate(as_list(o.get("containerStatuses"))):
            oc = as_map(oc)
            term = as_map(oc.get("state")).get("terminated")
            if term is None:
                continue
            if (as_int(as_map(term).get("exitCode")) or 0) != 0 and restart == "OnFailure":
                continue
            nc = new_statuses.get(as_str(oc.get("name")))
            if nc is not None and as_map(nc.get("state")).get("terminated") is None:
                errs.append(forbidden(f"status.containerStatuses[{i}].state",
                                      "may not be transitioned to non-terminated state"))
    qos = s.get("qosClass")
    if qos and o.get("qosClass") and qos != o.get("qosClass"):
        errs.append(invalid("status.qosClass", as_str(qos), FIELD_IMMUTABLE_ERROR_MSG))
    for i, pip in enumerate(as_list(s.get("podIPs"))):
        ip = as_str(as_map(pip).get("ip"))
        errs.extend(invalid(f"status.podIPs[{i}]", ip, m) for m in is_valid_ip(ip))
    return errs


# --- printer ----------------------------------------------------------------------------

_POD_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    pr.column("Status", "string", "The aggregate status of the containers in this pod."),
    pr.column("Restarts", "string",
         "The number of times the containers in this pod have been restarted and when the "
         "last container in this pod has restarted."),
    pr.AGE_COLUMN,
    pr.column("IP", "string",
         "podIP address allocated to the pod. Routable at least within the cluster. Empty if "
         "not yet allocated.", priority=1),
    pr.column("Node", "string",
         "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
         "candidate for scheduling by the scheduler defined in schedulerName. Once this field "
         "is set, the kubelet for this node becomes responsible for the lifecycle of this pod. "
         "This field should not be used to express a desire for the pod to be scheduled on a "
         "specific node. "
         "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
         priority=1),
    pr.column("Nominated Node", "string",
         "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
         "cannot be scheduled right away as preemption victims receive their graceful "
         "termination periods. This field does not guarantee that the pod will be scheduled "
         "on this node. Scheduler may decide to place the pod elsewhere if other nodes become "
         "available sooner. Scheduler may also decide to give the resources on this node to a "
         "higher priority pod that is created after preemption. As a result, this field may "
         "be different than PodSpec.nodeName when the pod is scheduled.", priority=1),
    pr.column("Readiness Gates", "string",
         "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
         "when all its containers are ready AND all conditions specified in the readiness gates "
         "have status equal to \"True\" More info: "
         "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
         priority=1),
)


_POD_SUCCESS_CONDITIONS: Final = (
    {"type": "Completed", "status": "True", "reason": "Succeeded",
     "message": "The pod has completed successfully."},
)


_POD_FAILED_CONDITIONS: Final = (
    {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."},
)


def _is_restartable_init_container(container: Obj | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _term_finished_ns(cs: Obj) -> tuple[bool, int | None]:
    """(LastTerminationState.Terminated != nil, its FinishedAt or None for zero)."""
    term = pr.as_dict(cs.get("lastState")).get("terminated")
    if not isinstance(term, Mapping):
        return False, None
    return True, pr.parse_timestamp_ns(term.get("finishedAt"))


def _later(current: int | None, candidate: int | None) -> int | None:
    """lastRestartDate.Before(&terminatedDate) ? terminatedDate : lastRestartDate."""
    if candidate is None:
        return current
    if current is None or current < candidate:
        return candidate
    return current


def _pod_row(pod: Obj, now: int) -> pr.Row:
    meta = pr.as_dict(pod.get("metadata"))
    spec = pr.as_dict(pod.get("spec"))
    status = pr.as_dict(pod.get("status"))
    restarts = 0
    restartable_init_restarts = 0
    total_containers = len(pr.as_list(spec.get("containers")))
    ready_containers = 0
    last_restart: int | None = None
    last_restartable_init_restart: int | None = None

    phase = pr.as_str(status.get("phase"))
    reason = phase
    if pr.as_str(status.get("reason")):
        reason = pr.as_str(status.get("reason"))
    pod_conditions = [pr.as_dict(c) for c in pr.as_list(status.get("conditions"))]
    for cond in pod_conditions:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    row_conditions: list[dict[str, str]] | None = None
    if phase == "Succeeded":
        row_conditions = [dict(c) for c in _POD_SUCCESS_CONDITIONS]
    elif phase == "Failed":
        row_conditions = [dict(c) for c in _POD_FAILED_CONDITIONS]

    init_containers = pr.as_list(spec.get("initContainers"))
    init_by_name: dict[str, Obj] = {}
    for c in init_containers:
        c = pr.as_dict(c)
        init_by_name[pr.as_str(c.get("name"))] = c
        if _is_restartable_init_container(c):
            total_containers += 1

    initializing = False
    for i, cs in enumerate(pr.as_list(status.get("initContainerStatuses"))):
        cs = pr.as_dict(cs)
        rc = pr.as_int(cs.get("restartCount"))
        restarts += rc
        has_term, finished = _term_finished_ns(cs)
        if has_term:
            last_restart = _later(last_restart, finished)
        restartable = _is_restartable_init_container(init_by_name.get(pr.as_str(cs.get("name"))))
        if restartable:
            restartable_init_restarts += rc
            if has_term:
                last_restartable_init_restart = _later(last_restartable_init_restart, finished)
        state = pr.as_dict(cs.get("state"))
        term = state.get("terminated")
        waiting = state.get("waiting")
        if isinstance(term, Mapping) and pr.as_int(term.get("exitCode")) == 0:
            continue
        if restartable and cs.get("started") is True:
            if cs.get("ready") is True:
                ready_containers += 1
            continue
        if isinstance(term, Mapping):
            # initialization failed
            if not pr.as_str(term.get("reason")):
                if pr.as_int(term.get("signal")) != 0:
                    reason = f"Init:Signal:{pr.as_int(term.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{pr.as_int(term.get('exitCode'))}"
            else:
                reason = "Init:" + pr.as_str(term.get("reason"))
        elif isinstance(waiting, Mapping) and pr.as_str(waiting.get("reason")) and \
                waiting.get("reason") != "PodInitializing":
            reason = "Init:" + pr.as_str(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_containers)}"
        initializing = True
        break

    initialized = False
    for cond in pod_conditions:
        if cond.get("type") == "Initialized":
            initialized = cond.get("status") == "True"
            break

    if not initializing or initialized:
        restarts = restartable_init_restarts
        last_restart = last_restartable_init_restart
        has_running = False
        for cs in reversed(pr.as_list(status.get("containerStatuses"))):
            cs = pr.as_dict(cs)
            restarts += pr.as_int(cs.get("restartCount"))
            has_term, finished = _term_finished_ns(cs)
            if has_term:
                last_restart = _later(last_restart, finished)
            state = pr.as_dict(cs.get("state"))
            term = state.get("terminated")
            waiting = state.get("waiting")
            if isinstance(waiting, Mapping) and pr.as_str(waiting.get("reason")):
                reason = pr.as_str(waiting.get("reason"))
            elif isinstance(term, Mapping) and pr.as_str(term.get("reason")):
                reason = pr.as_str(term.get("reason"))
            elif isinstance(term, Mapping):
                if pr.as_int(term.get("signal")) != 0:
                    reason = f"Signal:{pr.as_int(term.get('signal'))}"
                else:
                    reason = f"ExitCode:{pr.as_int(term.get('exitCode'))}"
            elif cs.get("ready") is True and isinstance(state.get("running"), Mapping):
                has_running = True
                ready_containers += 1

        # back to "Running" while at least one container still reports running
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in pod_conditions)
            reason = "Running" if pod_ready else "NotReady"

    deleting = pr.has(meta, "deletionTimestamp")
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_str = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_str = f"{restarts} ({pr.human_duration_ns(now - last_restart)} ago)"

    node_name = pr.as_str(spec.get("nodeName")) or "<none>"
    nominated = pr.as_str(status.get("nominatedNodeName")) or "<none>"
    # v1 → internal conversion: a set podIP is authoritative over podIPs[0]
    pod_ip = pr.as_str(status.get("podIP"))
    if not pod_ip:
        pod_ips = pr.as_list(status.get("podIPs"))
        pod_ip = pr.as_str(pr.as_dict(pod_ips[0]).get("ip")) if pod_ips else ""
    pod_ip = pod_ip or "<none>"
    readiness_gates = "<none>"
    gates = pr.as_list(spec.get("readinessGates"))
    if gates:
        true_conditions = 0
        for gate in gates:
            ctype = pr.as_dict(gate).get("conditionType")
            for cond in pod_conditions:
                if cond.get("type") == ctype:
                    if cond.get("status") == "True":
                        true_conditions += 1
                    break
        readiness_gates = f"{true_conditions}/{len(gates)}"

    cells: pr.Cells = [
        pr.as_str(meta.get("name")), f"{ready_containers}/{total_containers}", reason, restarts_str,
        pr.age(pod, now), pod_ip, node_name, nominated, readiness_gates,
    ]
    return pr.Row(cells, row_conditions)


# --- the strategy -------------------------------------------------------------------------

@register
class PodStrategy(Strategy):
    kind = "Pod"
    printer = pr.Printer(_POD_COLUMNS, _pod_row)
    # the status is set below, not dropped: the creator's status is replaced
    create_keeps_status = True
    # Old kubelets corrupted owner references through pods/status.
    status_keeps_metadata = ("ownerReferences",)

    def default(self, obj: dict[str, Any], *, create: bool) -> None:
        _default(obj, create)
        go_order_object(obj)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        # PodStrategy.PrepareForCreate: a new pod's status is the server's
        # (defaulting then sets phase Pending and the QoS class).
        obj["status"] = {}

    def validate_create(self, obj: dict[str, Any]) -> list[Cause]:
        return super().validate_create(obj) + _create_pod(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        return _update_pod(new, old)

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        return super().validate_status_update(new, old) + _status_pod(new, old)

    def grace_period(self, obj: dict[str, Any], requested: int | None) -> int | None:
        """CheckGracefulDelete: the requested period, else the pod's own (30 by default);
        an unscheduled or finished pod has nothing to stop and goes at once."""
        spec = obj.get("spec") or {}
        grace = requested
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds")
            if grace is None:
                grace = 30
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            grace = 0
        return max(0, int(grace))
