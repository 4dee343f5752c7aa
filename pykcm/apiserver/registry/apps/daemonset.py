"""apps/v1 DaemonSets (pkg/registry/apps/daemonset): defaults, validation, template generation,
status rules and printer.

- Defaults: RollingUpdate with maxUnavailable 1 and maxSurge 0,
  revisionHistoryLimit 10, the pod template's, the status counters 0.
- spec.templateGeneration (the ``deprecated.daemonset.template.generation``
  annotation in apps/v1) is the server's: 1 on create, one more with every change
  of the pod template; it may not go down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.labels import SelectorParseError, selector_from_label_selector
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
    validate_label_selector,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.apps import workload_validation as wv
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_template
from pykcm.apiserver.registry.defaulting import (
    GoOrder,
    child_dict,
    default_rolling_strategy,
    go_order_object,
    set_default,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    as_int,
    as_map,
    as_str,
    go_labels,
    int_or_percent_value,
    nonnegative_field,
    not_more_than_100_percent,
    validate_meta,
    validate_positive_int_or_percent,
)

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

_DAEMONSET_SPEC: Final = GoOrder(
    "selector", "template", "updateStrategy", "minReadySeconds", "revisionHistoryLimit")


def _default_daemonset(obj: Obj, create: bool) -> None:
    spec = child_dict(obj, "spec")
    default_rolling_strategy(child_dict(spec, "updateStrategy"), "RollingUpdate",
                              (("maxUnavailable", 1), ("maxSurge", 0)))
    set_default(spec, "revisionHistoryLimit", 10)
    default_pod_template(child_dict(spec, "template"))
    _DAEMONSET_SPEC.apply(spec)
    status = child_dict(obj, "status")
    for k in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
              "numberReady"):
        status.setdefault(k, 0)


# --- validation ------------------------------------------------------------------------

def _validate_daemonset_spec(spec: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    sel = spec.get("selector")
    errs.extend(validate_label_selector(None if sel is None else as_map(sel), "spec.selector"))
    tmpl = as_map(spec.get("template"))
    try:
        compiled = selector_from_label_selector(None if sel is None else as_map(sel))
    except SelectorParseError:
        compiled = None
    if compiled is not None and not compiled.matches(as_map(as_map(tmpl.get("metadata")).get("labels"))):
        errs.append(invalid("spec.template.metadata.labels",
                            go_labels(as_map(tmpl.get("metadata")).get("labels")),
                            "`selector` does not match template `labels`"))
    if sel is not None and not as_map(sel).get("matchLabels") and not as_map(sel).get("matchExpressions"):
        errs.append(invalid("spec.selector", go_label_selector(as_map(sel)),
                            "empty selector is invalid for daemonset"))
    errs.extend(podspec.validate_pod_template_spec(tmpl, "spec.template"))
    tspec = as_map(tmpl.get("spec"))
    restart = as_str(tspec.get("restartPolicy"))
    if restart != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden("spec.template.spec.activeDeadlineSeconds",
                              "activeDeadlineSeconds in DaemonSet is not Supported"))
    errs.extend(nonnegative_field(spec, "minReadySeconds", "spec.minReadySeconds"))
    errs.extend(nonnegative_field(spec, "templateGeneration", "spec.templateGeneration"))
    strategy = as_map(spec.get("updateStrategy"))
    stype = as_str(strategy.get("type"))
    if stype == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if ru is None:
            errs.append(required("spec.updateStrategy.rollingUpdate"))
        else:
            ru = as_map(ru)
            rpath = "spec.updateStrategy.rollingUpdate"
            mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
            errs.extend(validate_positive_int_or_percent(mu, f"{rpath}.maxUnavailable"))
            errs.extend(validate_positive_int_or_percent(ms, f"{rpath}.maxSurge"))
            errs.extend(not_more_than_100_percent(mu, f"{rpath}.maxUnavailable"))
            errs.extend(not_more_than_100_percent(ms, f"{rpath}.maxSurge"))
            has_unavailable = int_or_percent_value(mu) != 0
            has_surge = int_or_percent_value(ms) != 0
            if has_unavailable and has_surge:
                errs.append(invalid(f"{rpath}.maxSurge", go_int_or_string(ms),
                                    "may not be set when maxUnavailable is non-zero"))
            elif not has_unavailable and not has_surge:
                errs.append(required(f"{rpath}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    elif stype != "OnDelete":
        ru_ptr = ("(*apps.RollingUpdateDaemonSet)(nil)" if strategy.get("rollingUpdate") is None
                  else "(*apps.RollingUpdateDaemonSet)(0xc000010000)")
        rendered = GoValue(
            f"apps.DaemonSetUpdateStrategy{{Type:{go_quote(stype)}, RollingUpdate:{ru_ptr}}}")
        errs.append(not_supported("spec.updateStrategy", rendered, ("RollingUpdate", "OnDelete")))
    errs.extend(nonnegative_field(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit"))
    return errs


def _create_daemonset(obj: Mapping[str, Any]) -> list[Cause]:
    return validate_meta(obj, True) + _validate_daemonset_spec(as_map(obj.get("spec")))


def _update_daemonset(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    nspec, ospec = as_map(new.get("spec")), as_map(old.get("spec"))
    ntg, otg = as_int(nspec.get("templateGeneration")) or 0, as_int(ospec.get("templateGeneration")) or 0
    if ntg < otg:
        errs.append(invalid("spec.templateGeneration", ntg, "must not be decremented"))
    errs.extend(_validate_daemonset_spec(nspec))
    errs.extend(wv.selector_immutable(new, old))
    return errs


def _status_daemonset(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    s, o = as_map(new.get("status")), as_map(old.get("status"))
    errs = wv.status_nonnegative(s, ("currentNumberScheduled", "numberMisscheduled",
                              "desiredNumberScheduled", "numberReady", "observedGeneration",
                              "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
                              "collisionCount"))
    errs.extend(wv.collision_not_decremented(s, o))
    return errs


# --- printer ---------------------------------------------------------------------------

_DAEMON_SET_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Desired", "integer",
         "The total number of nodes that should be running the daemon pod (including nodes "
         "correctly running the daemon pod). More info: "
         "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    pr.column("Current", "integer",
         "The number of nodes that are running at least 1 daemon pod and are supposed to run "
         "the daemon pod. More info: "
         "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    pr.column("Ready", "integer",
         "numberReady is the number of nodes that should be running the daemon pod and have "
         "one or more of the daemon pod running with a Ready Condition."),
    pr.column("Up-to-date", "integer",
         "The total number of nodes that are running updated daemon pod"),
    pr.column("Available", "integer",
         "The number of nodes that should be running the daemon pod and have one or more of "
         "the daemon pod running and available (ready for at least spec.minReadySeconds)"),
    pr.column("Node Selector", "string",
         "NodeSelector is a selector which must be true for the pod to fit on a node. Selector "
         "which must match a node's labels for the pod to be scheduled on that node. More "
         "info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
    pr.AGE_COLUMN,
    pr.column("Containers", "string", pr.CONTAINERS_DESCRIPTION, priority=1),
    pr.column("Images", "string", pr.IMAGES_DESCRIPTION, priority=1),
    pr.column("Selector", "string",
         "A label query over pods that are managed by the daemon set. Must match in order to "
         "be controlled. It must match the pod template's labels. More info: "
         + pr.LABEL_SELECTORS_URL, priority=1),
)


def _daemon_set_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    pod_spec = pr.pod_template_spec(obj)
    names, images = pr.layout_container_cells(pod_spec.get("containers"))
    return pr.Row([
        pr.object_name(obj), pr.as_int(status.get("desiredNumberScheduled")),
        pr.as_int(status.get("currentNumberScheduled")), pr.as_int(status.get("numberReady")),
        pr.as_int(status.get("updatedNumberScheduled")), pr.as_int(status.get("numberAvailable")),
        pr.format_labels(pod_spec.get("nodeSelector")), pr.age(obj, now),
        names, images, pr.format_label_selector(spec.get("selector")),
    ])


# --- the strategy ----------------------------------------------------------------------

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template_generation(meta: Obj) -> int:
    """A DaemonSet's templateGeneration, which apps/v1 carries in an annotation."""
    v = (meta.get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return int(v) if v is not None else 0
    except (TypeError, ValueError):
        return 0


def _set_template_generation(obj: Obj, value: int) -> None:
    meta = obj["metadata"]
    annotations = dict(meta.get("annotations") or {})
    annotations[TEMPLATE_GENERATION] = str(value)
    meta["annotations"] = annotations


def _internal_metadata(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """The metadata the table converter sees: the template-generation annotation is a spec
    field of the internal DaemonSet, so PartialObjectMetadata rows do not show it."""
    ann = meta.get("annotations")
    if isinstance(ann, Mapping) and TEMPLATE_GENERATION in ann:
        out = dict(meta)
        rest = {k: v for k, v in ann.items() if k != TEMPLATE_GENERATION}
        if rest:
            out["annotations"] = rest
        else:
            del out["annotations"]
        return out
    return meta


@register
class DaemonSetStrategy(Strategy):
    group = "apps"
    kind = "DaemonSet"
    printer = pr.Printer(_DAEMON_SET_COLUMNS, _daemon_set_row, _internal_metadata)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_daemonset(obj, create)
        go_order_object(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        _set_template_generation(obj, max(1, _template_generation(obj["metadata"])))

    def prepare_kind_for_update(self, new: Obj, old: Obj) -> None:
        tg = _template_generation(old["metadata"])
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            tg += 1
        _set_template_generation(new, tg)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_daemonset(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_daemonset(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + _status_daemonset(new, old)
