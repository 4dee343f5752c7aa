"""autoscaling/v2 HorizontalPodAutoscalers (kube-apiserver ``pkg/registry/autoscaling/
horizontalpodautoscaler``, ``pkg/apis/autoscaling/v2/defaults.go`` and
``pkg/apis/autoscaling/validation``): defaults, the status/spec split, validation, printer.

Data flow: a create gets SetDefaults_HorizontalPodAutoscaler (``minReplicas`` 1, the 80%
CPU utilization metric when none is given, a behavior's unset rules filled from the
defaults: scale up 4 pods or 100% per 15 s, no window, Max; scale down 100% per 15 s, Max,
the window left unset so the controller's ``--horizontal-pod-autoscaler-downscale-
stabilization`` applies) and an empty status; writes of the main resource keep the
status, /status writes keep the spec (upstream's reset fields).

Deliberate deviations: only autoscaling/v2 is served (kube-apiserver also serves the v1
view, converting through ``autoscaling.alpha.kubernetes.io/*`` annotations); the
HPAScaleToZero gate is off as in v1.36, so ``minReplicas`` is at least 1.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.quantity import Quantity
from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    name_is_path_segment,
    not_supported,
    required,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_int,
    as_list,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["HorizontalPodAutoscalerStrategy", "default_hpa", "format_hpa_metrics"]

MAX_PERIOD_SECONDS: Final = 1800
MAX_STABILIZATION_WINDOW_SECONDS: Final = 3600
DEFAULT_CPU_UTILIZATION: Final = 80

_SCALE_UP_DEFAULT: Final = {
    "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                 {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN_DEFAULT: Final = {
    "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
_RULE_FIELDS: Final = ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance")
_SOURCE_FIELDS: Final = {"Object": "object", "Pods": "pods", "Resource": "resource",
                         "External": "external", "ContainerResource": "containerResource"}
_SOURCE_TYPES: Final = tuple(sorted(_SOURCE_FIELDS))
_SELECT_POLICIES: Final = ("Disabled", "Max", "Min")
_POLICY_TYPES: Final = ("Percent", "Pods")


def _rules(given: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """copyHPAScalingRules: the given rule's set fields over a copy of the defaults."""
    out = copy.deepcopy(dict(defaults))
    if isinstance(given, dict):
        out.update({k: given[k] for k in _RULE_FIELDS if given.get(k) is not None})
    return out


def default_hpa(obj: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler (autoscaling/v2)."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), _SCALE_UP_DEFAULT)
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), _SCALE_DOWN_DEFAULT)


# --- validation -----------------------------------------------------------------

def _parse_group_version(gv: str) -> tuple[str | None, str]:
    """schema.ParseGroupVersion: (group, error)."""
    if not gv or gv == "/":
        return "", ""
    parts = gv.split("/")
    if len(parts) == 1:
        return "", ""
    if len(parts) == 2:
        return parts[0], ""
    return None, f"unexpected GroupVersion string: {gv}"


def _cross_version_ref(ref: Mapping[str, Any], path: str, *, allow_empty_group: bool,
                       allow_invalid_api_version: bool = False) -> list[Cause]:
    errs: list[Cause] = []
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            errs.append(required(f"{path}.{key}"))
        else:
            errs += [invalid(f"{path}.{key}", value, m) for m in name_is_path_segment(value)]
    if not allow_invalid_api_version:
        api_version = str(ref.get("apiVersion") or "")
        group, err = _parse_group_version(api_version)
        if not err and group == "" and not allow_empty_group:
            err = "apiVersion must specify API group"
        if err:
            errs.append(invalid(f"{path}.apiVersion", api_version, err))
    return errs


def _quantity_sign(v: Any) -> int | None:
    q = Quantity.parse(v)
    return None if q is None else q.sign()


def _metric_target(mt: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    mtype = str(mt.get("type") or "")
    if not mtype:
        errs.append(required(f"{path}.type", "must specify a metric target type"))
    if mtype not in ("Utilization", "Value", "AverageValue"):
        errs.append(invalid(f"{path}.type", mtype,
                            "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if mt.get(key) is not None and _quantity_sign(mt.get(key)) != 1:
            errs.append(invalid(f"{path}.{key}", mt.get(key), "must be positive"))
    util = mt.get("averageUtilization")
    if util is not None and as_int(util) < 1:
        errs.append(invalid(f"{path}.averageUtilization", util, "must be greater than 0"))
    return errs


def _metric_identifier(mid: Mapping[str, Any], path: str) -> list[Cause]:
    name = str(mid.get("name") or "")
    if not name:
        return [required(f"{path}.name", "must specify a metric name")]
    return [invalid(f"{path}.name", name, m) for m in name_is_path_segment(name)]


def _source(field: str, src: Mapping[str, Any], path: str) -> list[Cause]:
    target = as_dict(src.get("target"))
    tpath = f"{path}.target"
    errs: list[Cause] = []
    if field in ("resource", "containerResource"):
        if not src.get("name"):
            errs.append(required(f"{path}.name", "must specify a resource name"))
        if field == "containerResource" and not src.get("container"):
            errs.append(required(f"{path}.container", "must specify a container"))
        errs += _metric_target(target, tpath)
        if target.get("averageUtilization") is None and target.get("averageValue") is None:
            errs.append(required(f"{tpath}.averageUtilization",
                                 "must set either a target raw value or a target utilization"))
        if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
            errs.append(forbidden(f"{tpath}.averageValue",
                                  "may not set both a target raw value and a target utilization"))
        return errs
    if field == "object":
        errs += _cross_version_ref(as_dict(src.get("describedObject")),
                                   f"{path}.describedObject", allow_empty_group=True)
    errs += _metric_identifier(as_dict(src.get("metric")), f"{path}.metric")
    errs += _metric_target(target, tpath)
    value, average = target.get("value"), target.get("averageValue")
    if field == "pods":
        if average is None:
            errs.append(required(f"{tpath}.averageValue",
                                 "must specify a positive target averageValue"))
    elif field == "object":
        if value is None and average is None:
            errs.append(required(f"{tpath}.averageValue",
                                 "must set either a target value or averageValue"))
    else:
        if value is None and average is None:
            errs.append(required(f"{tpath}.averageValue",
                                 "must set either a target value for metric or a per-pod target"))
        if value is not None and average is not None:
            errs.append(forbidden(f"{tpath}.value",
                                  "may not set both a target value for metric and a per-pod "
                                  "target"))
    return errs


def _metric_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    mtype = str(spec.get("type") or "")
    if not mtype:
        errs.append(required(f"{path}.type", "must specify a metric source type"))
    if mtype not in _SOURCE_FIELDS:
        errs.append(not_supported(f"{path}.type", mtype, _SOURCE_TYPES))
    present: list[str] = []
    # upstream checks the sources in this order and validates only the first one present
    for field in ("object", "external", "pods", "resource", "containerResource"):
        if spec.get(field) is not None:
            present.append(field)
            if len(present) == 1:
                errs += _source(field, as_dict(spec.get(field)), f"{path}.{field}")
    expected = _SOURCE_FIELDS.get(mtype, "")
    if expected:
        if spec.get(expected) is None:
            errs.append(required(f"{path}.{expected}",
                                 "must populate information for the given metric source"))
    elif mtype:
        errs.append(not_supported(f"{path}.type", mtype, _SOURCE_TYPES))
    if len(present) != 1:
        errs += [forbidden(f"{path}.{f}", "must populate the given metric source only")
                 for f in sorted(set(present) - {expected})]
    return errs


def _scaling_rules(rules: Any, path: str) -> list[Cause]:
    if not isinstance(rules, dict):
        return []
    errs: list[Cause] = []
    window = rules.get("stabilizationWindowSeconds")
    if window is not None and as_int(window) < 0:
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window,
                            "must be greater than or equal to zero"))
    if window is not None and as_int(window) > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window,
                            f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        errs.append(not_supported(f"{path}.selectPolicy", select, _SELECT_POLICIES))
    policies = as_list(rules.get("policies"))
    if not policies:
        errs.append(required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        p, policy = f"{path}.policies[{i}]", as_dict(policy)
        ptype = str(policy.get("type") or "")
        if ptype not in _POLICY_TYPES:
            errs.append(not_supported(f"{p}.type", ptype, _POLICY_TYPES))
        value, period = as_int(policy.get("value")), as_int(policy.get("periodSeconds"))
        if value <= 0:
            errs.append(invalid(f"{p}.value", value, "must be greater than zero"))
        if period <= 0:
            errs.append(invalid(f"{p}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errs.append(invalid(f"{p}.periodSeconds", period,
                                f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    tolerance = rules.get("tolerance")
    if tolerance is not None and (_quantity_sign(tolerance) or 0) < 0:
        errs.append(invalid(f"{path}.tolerance", tolerance, "must be greater than or equal to 0"))
    return errs


def validate_hpa_spec(spec: Mapping[str, Any], *, old_spec: Mapping[str, Any] | None = None
                      ) -> list[Cause]:
    """validateHorizontalPodAutoscalerSpec with v1.36's options (no scale to zero)."""
    errs: list[Cause] = []
    min_replicas = spec.get("minReplicas")
    lower = 0 if old_spec is not None and old_spec.get("minReplicas") == 0 else 1
    if min_replicas is not None and as_int(min_replicas) < lower:
        errs.append(invalid("spec.minReplicas", min_replicas,
                            f"must be greater than or equal to {lower}"))
    max_replicas = as_int(spec.get("maxReplicas"))
    if max_replicas == 0:
        errs.append(required("spec.maxReplicas", "must be set and greater than 0"))
    elif max_replicas < 0:
        errs.append(invalid("spec.maxReplicas", max_replicas, "must be greater than or equal to 1"))
    if min_replicas is not None and max_replicas < as_int(min_replicas):
        errs.append(invalid("spec.maxReplicas", max_replicas,
                            "must be greater than or equal to `minReplicas`"))
    ref = as_dict(spec.get("scaleTargetRef"))
    old_ref = as_dict((old_spec or {}).get("scaleTargetRef"))
    same_kind = (old_spec is not None and old_ref.get("apiVersion") == ref.get("apiVersion")
                 and old_ref.get("kind") == ref.get("kind"))
    errs += _cross_version_ref(ref, "spec.scaleTargetRef",
                               allow_empty_group=ref.get("kind") == "ReplicationController",
                               allow_invalid_api_version=same_kind)
    metrics = as_list(spec.get("metrics"))
    for i, m in enumerate(metrics):
        errs += _metric_spec(as_dict(m), f"spec.metrics[{i}]")
    if min_replicas == 0 and not any(as_dict(m).get("type") in ("Object", "External")
                                     for m in metrics):
        errs.append(forbidden("spec.metrics", "must specify at least one Object or External "
                                              "metric to support scaling to zero replicas"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        errs += _scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp")
        errs += _scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return errs


# --- printer --------------------------------------------------------------------

def _current(statuses: list[Any], i: int, field: str, key: str) -> Any:
    if i < len(statuses):
        src = as_dict(statuses[i]).get(field)
        if isinstance(src, dict):
            return as_dict(src.get("current")).get(key)
    return None


def _q(v: Any) -> str:
    q = Quantity.parse(v)
    return str(q) if q is not None else str(v)


def _present(statuses: list[Any], i: int, field: str) -> bool:
    return i < len(statuses) and isinstance(as_dict(statuses[i]).get(field), dict)


def format_hpa_metrics(specs: list[Any], statuses: list[Any]) -> str:
    """formatHPAMetrics: the Targets cell (``cpu: 40%/50%``, at most two, ``+ N more...``)."""
    if not specs:
        return "<none>"
    out: list[str] = []
    for i, raw in enumerate(specs):
        spec = as_dict(raw)
        mtype = spec.get("type")
        field = _SOURCE_FIELDS.get(str(mtype), "")
        src = as_dict(spec.get(field)) if field else {}
        target = as_dict(src.get("target"))
        unknown = "<unknown>"
        if mtype in ("External", "Object"):
            if target.get("averageValue") is not None:
                cur = _current(statuses, i, field, "averageValue")
                shown = _q(cur) if cur is not None else unknown
                out.append(f"{shown}/{_q(target['averageValue'])} (avg)")
            else:
                shown = (_q(_current(statuses, i, field, "value"))
                         if _present(statuses, i, field) else unknown)
                out.append(f"{shown}/{_q(target.get('value'))}")
        elif mtype == "Pods":
            shown = (_q(_current(statuses, i, field, "averageValue"))
                     if _present(statuses, i, field) else unknown)
            out.append(f"{shown}/{_q(target.get('averageValue'))}")
        elif mtype in ("Resource", "ContainerResource"):
            name = str(src.get("name") or "")
            if target.get("averageValue") is not None:
                shown = (_q(_current(statuses, i, field, "averageValue"))
                         if _present(statuses, i, field) else unknown)
                out.append(f"{name}: {shown}/{_q(target['averageValue'])}")
            else:
                util = _current(statuses, i, field, "averageUtilization")
                shown = f"{util}%" if util is not None else unknown
                tgt = target.get("averageUtilization")
                out.append(f"{name}: {shown}/" + (f"{tgt}%" if tgt is not None else "<auto>"))
        else:
            out.append("<unknown type>")
    if len(out) > 2:
        return f"{', '.join(out[:2])} + {len(out) - 2} more..."
    return ", ".join(out)


_COLUMNS: Final = (
    NAME_COLUMN,
    column("Reference", "string",
           "scaleTargetRef points to the target resource to scale, and is used to the pods "
           "for which metrics should be collected, as well as to actually change the replica "
           "count."),
    column("Targets", "string",
           "metrics contains the specifications for which to use to calculate the desired "
           "replica count (the maximum replica count across all metrics will be used).  The "
           "desired replica count is calculated multiplying the ratio between the target value "
           "and the current value by the current number of pods.  Ergo, metrics used must "
           "decrease as the pod count is increased, and vice-versa.  See the individual metric "
           "source types for more information about how each type of metric must respond. If "
           "not set, the default metric will be set to 80% average CPU utilization."),
    column("MinPods", "string",
           "minReplicas is the lower limit for the number of replicas to which the autoscaler "
           "can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the "
           "alpha feature gate HPAScaleToZero is enabled and at least one Object or External "
           "metric is configured.  Scaling is active as long as at least one metric value is "
           "available."),
    column("MaxPods", "string",
           "maxReplicas is the upper limit for the number of replicas to which the autoscaler "
           "can scale up. It cannot be less that minReplicas."),
    column("Replicas", "string",
           "currentReplicas is current number of replicas of pods managed by this autoscaler, "
           "as last seen by the autoscaler."),
    AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    ref = as_dict(spec.get("scaleTargetRef"))
    min_pods = spec.get("minReplicas")
    return Row([object_name(obj), f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
                format_hpa_metrics(as_list(spec.get("metrics")),
                                   as_list(status.get("currentMetrics"))),
                "<unset>" if min_pods is None else str(min_pods),
                as_int(spec.get("maxReplicas")), as_int(status.get("currentReplicas")),
                age(obj, now)])


@register
class HorizontalPodAutoscalerStrategy(Strategy):
    group = "autoscaling"
    kind = "HorizontalPodAutoscaler"
    printer = Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        super().default(obj, create=create)
        default_hpa(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"currentMetrics": None, "desiredReplicas": 0}  # as Go encodes the zero status

    def validate_create(self, obj: Obj) -> list[Cause]:
        return (validate_object_meta(obj.get("metadata"), namespaced=True,
                                     name_validator=name_is_path_segment)
                + validate_hpa_spec(as_dict(obj.get("spec"))))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
                + validate_hpa_spec(as_dict(new.get("spec")),
                                    old_spec=as_dict(old.get("spec"))))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        status = as_dict(new.get("status"))
        errs = super().validate_status_update(new, old)
        for key in ("currentReplicas", "desiredReplicas"):
            errs += validate_nonnegative(as_int(status.get(key)), f"status.{key}")
        return errs
