"""apps/v1 Deployments (pkg/registry/apps/deployment): defaults, validation, status/spec
split, generation and printer.

- Defaults: replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit 10,
  progressDeadlineSeconds 600, the pod template's defaults.
- Generation: moves with the spec and, as upstream's PrepareForUpdate does, with
  any change of the annotations (``kubectl rollout undo`` wrote one there).
- /status writes cannot change the labels (deploymentStatusStrategy).
"""

from __future__ import annotations

from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    forbidden,
    go_int_or_string,
    go_label_selector,
    go_quote,
    invalid,
    not_supported,
    required,
    validate_nonnegative,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.apps import workload_validation as wv
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_template
from pykcm.apiserver.registry.defaulting import (
    GoOrder,
    child_dict,
    default_rolling_strategy,
    go_order_object,
    set_default,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    CONTAINERS_DESCRIPTION,
    IMAGES_DESCRIPTION,
    NAME_COLUMN,
    READY_PODS_DESCRIPTION,
    Obj,
    Printer,
    Row,
    age,
    as_dict,
    as_int,
    column,
    layout_container_cells,
    object_name,
    selector_string,
)
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    as_int as _int,
)
from pykcm.apiserver.registry.validation import (
    as_map,
    as_str,
    int_or_percent_value,
    nonnegative_field,
    not_more_than_100_percent,
    validate_positive_int_or_percent,
)

# --- defaults -------------------------------------------------------------------------

_SPEC_ORDER: Final = GoOrder(
    "replicas", "selector", "template", "strategy", "minReadySeconds", "revisionHistoryLimit",
    "paused", "progressDeadlineSeconds")


def _default(obj: dict[str, Any]) -> None:
    spec = child_dict(obj, "spec")
    set_default(spec, "replicas", 1)
    default_rolling_strategy(child_dict(spec, "strategy"), "RollingUpdate",
                                 (("maxUnavailable", "25%"), ("maxSurge", "25%")))
    set_default(spec, "revisionHistoryLimit", 10)
    set_default(spec, "progressDeadlineSeconds", 600)
    default_pod_template(child_dict(spec, "template"))
    _SPEC_ORDER.apply(spec)
    child_dict(obj, "status")
    go_order_object(obj)


# --- validation -----------------------------------------------------------------------

def _validate_strategy(strategy: Any, path: str) -> list[Cause]:
    stype = as_str(strategy.get("type"))
    ru = strategy.get("rollingUpdate")
    if stype == "Recreate":
        if ru is not None:
            return [forbidden(f"{path}.rollingUpdate",
                              "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if stype == "RollingUpdate":
        if ru is None:
            return [required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
        ru = as_map(ru)
        rpath = f"{path}.rollingUpdate"
        mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
        errs = validate_positive_int_or_percent(mu, f"{rpath}.maxUnavailable")
        errs.extend(validate_positive_int_or_percent(ms, f"{rpath}.maxSurge"))
        if int_or_percent_value(mu) == 0 and int_or_percent_value(ms) == 0:
            errs.append(invalid(f"{rpath}.maxUnavailable", go_int_or_string(mu),
                                "may not be 0 when `maxSurge` is 0"))
        errs.extend(not_more_than_100_percent(mu, f"{rpath}.maxUnavailable"))
        return errs
    ru_ptr = ("(*apps.RollingUpdateDeployment)(nil)" if ru is None
              else "(*apps.RollingUpdateDeployment)(0xc000010000)")
    rendered = GoValue(f"apps.DeploymentStrategy{{Type:{go_quote(stype)}, RollingUpdate:{ru_ptr}}}")
    return [not_supported(path, rendered, ("Recreate", "RollingUpdate"))]


def _validate_spec(spec: Any) -> list[Cause]:
    errs = nonnegative_field(spec, "replicas", "spec.replicas")
    sel_errs, compiled = wv.selector_and_template(spec, "deployment", require=True)
    errs.extend(sel_errs)
    if compiled is None:
        errs.append(invalid("spec.selector", go_label_selector(as_map(spec.get("selector"))),
                            "invalid label selector"))
    else:
        errs.extend(wv.validate_template_for_replicaset(as_map(spec.get("template")), compiled,
                                                         "spec.template", "ReplicaSet"))
    errs.extend(_validate_strategy(as_map(spec.get("strategy")), "spec.strategy"))
    errs.extend(nonnegative_field(spec, "minReadySeconds", "spec.minReadySeconds"))
    errs.extend(nonnegative_field(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit"))
    pds = _int(spec.get("progressDeadlineSeconds"))
    if pds is not None:
        errs.extend(validate_nonnegative(pds, "spec.progressDeadlineSeconds"))
        if pds <= (_int(spec.get("minReadySeconds")) or 0):
            errs.append(invalid("spec.progressDeadlineSeconds", pds,
                                "must be greater than minReadySeconds"))
    return errs


def _validate_status(new: Obj, old: Obj) -> list[Cause]:
    s, o = as_map(new.get("status")), as_map(old.get("status"))
    errs = wv.status_nonnegative(s, ("observedGeneration", "replicas", "updatedReplicas",
                                 "readyReplicas", "availableReplicas", "unavailableReplicas",
                                 "collisionCount"))
    msg = "cannot be greater than status.replicas"
    errs.extend(wv.not_greater(s, "updatedReplicas", "replicas", msg))
    errs.extend(wv.not_greater(s, "readyReplicas", "replicas", msg))
    errs.extend(wv.not_greater(s, "availableReplicas", "replicas", msg))
    errs.extend(wv.not_greater(s, "availableReplicas", "readyReplicas",
                                "cannot be greater than readyReplicas"))
    errs.extend(wv.collision_not_decremented(s, o))
    return errs


# --- printer ----------------------------------------------------------------------------

_COLUMNS: Final = (
    NAME_COLUMN,
    column("Ready", "string", READY_PODS_DESCRIPTION),
    column("Up-to-date", "string",
           "Total number of non-terminating pods targeted by this deployment that have the "
           "desired template spec."),
    column("Available", "string",
           "Total number of available non-terminating pods (ready for at least "
           "minReadySeconds) targeted by this deployment."),
    AGE_COLUMN,
    column("Containers", "string", CONTAINERS_DESCRIPTION, priority=1),
    column("Images", "string", IMAGES_DESCRIPTION, priority=1),
    column("Selector", "string",
           "Label selector for pods. Existing ReplicaSets whose pods are selected by this will "
           "be the ones affected by this deployment. It must match the pod template's labels.",
           priority=1),
)


def _row(obj: Obj, now: int) -> Row:
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    try:
        selector = selector_string(spec.get("selector"))
    except ValueError:
        selector = "<invalid>"
    template_spec = as_dict(as_dict(spec.get("template")).get("spec"))
    names, images = layout_container_cells(template_spec.get("containers"))
    return Row([
        object_name(obj),
        f"{as_int(status.get('readyReplicas'))}/{as_int(spec.get('replicas'), 1)}",
        as_int(status.get("updatedReplicas")), as_int(status.get("availableReplicas")),
        age(obj, now), names, images, selector,
    ])


# --- the strategy -------------------------------------------------------------------------

@register
class DeploymentStrategy(Strategy):
    group = "apps"
    kind = "Deployment"
    printer = Printer(_COLUMNS, _row)
    status_keeps_metadata = ("labels",)

    def default(self, obj: dict[str, Any], *, create: bool) -> None:
        _default(obj)

    def generation_changed(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        return (new.get("spec") != old.get("spec")
                or new["metadata"].get("annotations") != old["metadata"].get("annotations"))

    def validate_create(self, obj: dict[str, Any]) -> list[Cause]:
        return super().validate_create(obj) + _validate_spec(as_map(obj.get("spec")))

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        errs.extend(_validate_spec(as_map(new.get("spec"))))
        errs.extend(wv.selector_immutable(new, old))
        return errs

    def validate_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        return super().validate_status_update(new, old) + _validate_status(new, old)
