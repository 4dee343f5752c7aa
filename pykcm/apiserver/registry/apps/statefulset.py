"""apps/v1 StatefulSets (pkg/registry/apps/statefulset): defaults, validation, status rules and
printer.

- Defaults: OrderedReady, RollingUpdate with partition 0, Retain/Retain claim
  retention, one replica, revisionHistoryLimit 10, the volume claim templates'.
- Validation: names are DNS labels; only replicas, ordinals, template,
  updateStrategy, revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and
  minReadySeconds may change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    go_int_or_string,
    go_label_selector,
    invalid,
    name_is_dns_label,
    not_supported,
    required,
    validate_annotations,
    validate_labels,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.apps import workload_validation as wv
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_template
from pykcm.apiserver.registry.defaulting import (
    STRATEGY_ORDER,
    TOP_ORDER,
    GoOrder,
    child_dict,
    dicts_in,
    go_order_object,
    set_default,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    as_map,
    as_str,
    int_or_percent_value,
    nonnegative_field,
    not_more_than_100_percent,
    semantic_equal,
    validate_meta,
    validate_positive_int_or_percent,
)

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

_STATEFULSET_SPEC: Final = GoOrder(
    "replicas", "selector", "template", "volumeClaimTemplates", "serviceName",
    "podManagementPolicy", "updateStrategy", "revisionHistoryLimit", "minReadySeconds",
    "persistentVolumeClaimRetentionPolicy", "ordinals")


_RETENTION: Final = GoOrder("whenDeleted", "whenScaled")


def _default_pvc_template(pvc: Obj) -> None:
    set_default(pvc, "apiVersion", "v1")
    set_default(pvc, "kind", "PersistentVolumeClaim")
    child_dict(pvc, "metadata")
    spec = child_dict(pvc, "spec")
    set_default(spec, "volumeMode", "Filesystem")
    status = child_dict(pvc, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
    TOP_ORDER.apply(pvc)


def _default_statefulset(obj: Obj, create: bool) -> None:
    spec = child_dict(obj, "spec")
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = child_dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        child_dict(strategy, "rollingUpdate")
    # MaxUnavailableStatefulSet is off by default in v1.36, so no maxUnavailable.
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
        set_default(rolling, "partition", 0)
    STRATEGY_ORDER.apply(strategy)
    retention = child_dict(spec, "persistentVolumeClaimRetentionPolicy")
    if not retention.get("whenDeleted"):
        retention["whenDeleted"] = "Retain"
    if not retention.get("whenScaled"):
        retention["whenScaled"] = "Retain"
    _RETENTION.apply(retention)
    set_default(spec, "replicas", 1)
    set_default(spec, "revisionHistoryLimit", 10)
    if spec.get("serviceName") is None:
        spec["serviceName"] = ""  # not omitempty in apps/v1
    default_pod_template(child_dict(spec, "template"))
    for pvc in dicts_in(spec.get("volumeClaimTemplates")):
        _default_pvc_template(pvc)
    _STATEFULSET_SPEC.apply(spec)
    status = child_dict(obj, "status")
    status.setdefault("replicas", 0)
    status.setdefault("availableReplicas", 0)


# --- validation ------------------------------------------------------------------------

def _validate_statefulset_spec(spec: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    pmp = as_str(spec.get("podManagementPolicy"))
    if not pmp:
        errs.append(required("spec.podManagementPolicy"))
    elif pmp not in ("OrderedReady", "Parallel"):
        errs.append(invalid("spec.podManagementPolicy", pmp, "must be 'OrderedReady' or 'Parallel'"))
    strategy = as_map(spec.get("updateStrategy"))
    stype = as_str(strategy.get("type"))
    ru = strategy.get("rollingUpdate")
    if not stype:
        errs.append(required("spec.updateStrategy"))
    elif stype == "OnDelete":
        if ru is not None:
            errs.append(invalid("spec.updateStrategy.rollingUpdate", ru,
                                "only allowed for updateStrategy 'RollingUpdate'"))
    elif stype == "RollingUpdate":
        if ru is not None:
            ru = as_map(ru)
            errs.extend(nonnegative_field(ru, "partition", "spec.updateStrategy.rollingUpdate.partition"))
            mu = ru.get("maxUnavailable")
            if mu is not None:
                mpath = "spec.updateStrategy.rollingUpdate.maxUnavailable"
                errs.extend(validate_positive_int_or_percent(mu, mpath))
                if int_or_percent_value(mu) == 0:
                    errs.append(invalid(mpath, go_int_or_string(mu), "cannot be 0"))
                errs.extend(not_more_than_100_percent(mu, mpath))
    else:
        errs.append(invalid("spec.updateStrategy", strategy,
                            "must be 'RollingUpdate' or 'OnDelete'"))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        retention = as_map(retention)
        for key in ("whenDeleted", "whenScaled"):
            v = as_str(retention.get(key))
            if v not in ("Retain", "Delete"):
                errs.append(not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{key}", v,
                                          ("Retain", "Delete")))
    errs.extend(nonnegative_field(spec, "replicas", "spec.replicas"))
    errs.extend(nonnegative_field(spec, "minReadySeconds", "spec.minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, Mapping):
        errs.extend(nonnegative_field(ordinals, "start", "spec.ordinals.start"))
    sel_errs, compiled = wv.selector_and_template(spec, "statefulset", require=True)
    errs.extend(sel_errs)
    tmpl = as_map(spec.get("template"))
    if compiled is None:
        errs.append(invalid("spec.selector", go_label_selector(as_map(spec.get("selector"))), ""))
    else:
        # Upstream does not validate a StatefulSet's pod spec, only labels
        # and annotations of its template.
        errs.extend(wv.template_labels_match(compiled, tmpl, "spec.template"))
        tmeta = as_map(tmpl.get("metadata"))
        errs.extend(validate_labels(as_map(tmeta.get("labels")), "spec.template.labels"))
        errs.extend(validate_annotations(as_map(tmeta.get("annotations")), "spec.template.annotations"))
    tspec = as_map(tmpl.get("spec"))
    restart = as_str(tspec.get("restartPolicy"))
    if restart != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden("spec.template.spec.activeDeadlineSeconds",
                              "activeDeadlineSeconds in StatefulSet is not Supported"))
    return errs


def _create_statefulset(obj: Mapping[str, Any]) -> list[Cause]:
    return (validate_meta(obj, True, name_is_dns_label)
            + _validate_statefulset_spec(as_map(obj.get("spec"))))


_STS_MUTABLE: Final = ("replicas", "template", "updateStrategy", "minReadySeconds", "ordinals",
                       "persistentVolumeClaimRetentionPolicy", "revisionHistoryLimit")


def _update_statefulset(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    # The name is not re-validated: older servers accepted DNS subdomains.
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    nspec, ospec = as_map(new.get("spec")), as_map(old.get("spec"))
    errs.extend(_validate_statefulset_spec(nspec))
    clone_new = {k: v for k, v in nspec.items() if k not in _STS_MUTABLE}
    clone_old = {k: v for k, v in ospec.items() if k not in _STS_MUTABLE}
    if not semantic_equal(clone_new, clone_old):
        errs.append(forbidden("spec", "updates to statefulset spec for fields other than "
                                      "'replicas', 'ordinals', 'template', 'updateStrategy', "
                                      "'revisionHistoryLimit', "
                                      "'persistentVolumeClaimRetentionPolicy' and "
                                      "'minReadySeconds' are forbidden"))
    return errs


def _status_statefulset(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    s, o = as_map(new.get("status")), as_map(old.get("status"))
    errs = wv.status_nonnegative(s, ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
                              "availableReplicas", "observedGeneration", "collisionCount"))
    msg = "cannot be greater than status.replicas"
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        errs.extend(wv.not_greater(s, key, "replicas", msg))
    errs.extend(wv.not_greater(s, "availableReplicas", "readyReplicas",
                             "cannot be greater than status.readyReplicas"))
    errs.extend(wv.collision_not_decremented(s, o))
    return errs


# --- printer ---------------------------------------------------------------------------

_STATEFUL_SET_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Ready", "string", pr.READY_PODS_DESCRIPTION),
    pr.AGE_COLUMN,
    pr.column("Containers", "string", pr.CONTAINERS_DESCRIPTION, priority=1),
    pr.column("Images", "string", pr.IMAGES_DESCRIPTION, priority=1),
)


def _stateful_set_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    names, images = pr.layout_container_cells(pr.pod_template_spec(obj).get("containers"))
    ready = f"{pr.as_int(status.get('readyReplicas'))}/{pr.as_int(spec.get('replicas'), 1)}"
    return pr.Row([pr.object_name(obj), ready, pr.age(obj, now), names, images])


# --- the strategy ----------------------------------------------------------------------

@register
class StatefulSetStrategy(Strategy):
    group = "apps"
    kind = "StatefulSet"
    printer = pr.Printer(_STATEFUL_SET_COLUMNS, _stateful_set_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_statefulset(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_statefulset(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_statefulset(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + _status_statefulset(new, old)
