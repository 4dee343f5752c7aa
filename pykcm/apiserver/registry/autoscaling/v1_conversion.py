"""autoscaling/v1 ⇄ autoscaling/v2 HorizontalPodAutoscalers (kube-apiserver
``pkg/apis/autoscaling/v1/conversion.go``): the v1 view of the stored v2 objects.

Data flow: the handlers serve /apis/autoscaling/v1/.../horizontalpodautoscalers from the
v2 storage; a v1 body is turned into v2 with :func:`to_v2` before the v2 strategy defaults
and validates it, and every object on the way out (get, list items, watch lines) goes
through :func:`to_v1`. v1 has one metric field (``targetCPUUtilizationPercentage``); the
rest of a v2 object rides in annotations, as upstream does:

- ``autoscaling.alpha.kubernetes.io/metrics``: the metrics other than the CPU utilization
  one, in v1's MetricSpec shape (``targetAverageUtilization``, ``metricName``, ...);
- ``autoscaling.alpha.kubernetes.io/current-metrics``: every status metric, v1 shape;
- ``autoscaling.alpha.kubernetes.io/behavior``: the behavior, as Go marshals the internal
  struct (field names without json tags: ``ScaleUp``, ``StabilizationWindowSeconds``, ...);
- ``autoscaling.alpha.kubernetes.io/conditions``: the status conditions.

On the way in they are read back and dropped from the stored object. JSON in annotations is
written in Go's struct field order, compact, as ``json.Marshal`` writes it.
"""

from __future__ import annotations

import json
from typing import Any, Final

from pykcm.api.quantity import Quantity

__all__ = ["ANNOTATIONS", "to_v1", "to_v2"]

METRICS: Final = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS: Final = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS: Final = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR: Final = "autoscaling.alpha.kubernetes.io/behavior"
ANNOTATIONS: Final = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR,
                      "autoscaling.alpha.kubernetes.io/scale-down-tolerance",
                      "autoscaling.alpha.kubernetes.io/scale-up-tolerance")
_FIELD_OF: Final = {"Object": "object", "Pods": "pods", "Resource": "resource",
                    "ContainerResource": "containerResource", "External": "external"}


def _dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _compact(d: dict[str, Any], omitempty: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if not (k in omitempty and v in (None, "", {}, []))}


def _q(v: Any) -> Any:
    q = Quantity.parse(v)
    return str(q) if q is not None else v


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


# --- v2 → v1 --------------------------------------------------------------------

def _is_cpu_utilization(m: dict[str, Any]) -> bool:
    r = _d(m.get("resource"))
    return (m.get("type") == "Resource" and r.get("name") == "cpu"
            and _d(r.get("target")).get("averageUtilization") is not None)


def _spec_v1(m: dict[str, Any]) -> dict[str, Any]:
    """A v2 MetricSpec as v1's MetricSpec."""
    out: dict[str, Any] = {"type": m.get("type", "")}
    obj, pods, res = _d(m.get("object")), _d(m.get("pods")), _d(m.get("resource"))
    cres, ext = _d(m.get("containerResource")), _d(m.get("external"))
    if m.get("object") is not None:
        t, mid = _d(obj.get("target")), _d(obj.get("metric"))
        out["object"] = _compact({
            "target": obj.get("describedObject") or {"kind": "", "name": ""},
            "metricName": mid.get("name", ""), "targetValue": _q(t.get("value") or "0"),
            "selector": mid.get("selector"), "averageValue": t.get("averageValue")},
            ("selector", "averageValue"))
    if m.get("pods") is not None:
        t, mid = _d(pods.get("target")), _d(pods.get("metric"))
        out["pods"] = _compact({"metricName": mid.get("name", ""),
                                "targetAverageValue": _q(t.get("averageValue") or "0"),
                                "selector": mid.get("selector")}, ("selector",))
    if m.get("resource") is not None:
        t = _d(res.get("target"))
        out["resource"] = _compact({"name": res.get("name", ""),
                                    "targetAverageUtilization": t.get("averageUtilization"),
                                    "targetAverageValue": t.get("averageValue")},
                                   ("targetAverageUtilization", "targetAverageValue"))
    if m.get("containerResource") is not None:
        t = _d(cres.get("target"))
        out["containerResource"] = _compact({
            "name": cres.get("name", ""), "targetAverageUtilization": t.get("averageUtilization"),
            "targetAverageValue": t.get("averageValue"), "container": cres.get("container", "")},
            ("targetAverageUtilization", "targetAverageValue"))
    if m.get("external") is not None:
        t, mid = _d(ext.get("target")), _d(ext.get("metric"))
        out["external"] = _compact({"metricName": mid.get("name", ""),
                                    "metricSelector": mid.get("selector"),
                                    "targetValue": t.get("value"),
                                    "targetAverageValue": t.get("averageValue")},
                                   ("metricSelector", "targetValue", "targetAverageValue"))
    return out


def _status_v1(m: dict[str, Any]) -> dict[str, Any]:
    """A v2 MetricStatus as v1's MetricStatus."""
    out: dict[str, Any] = {"type": m.get("type", "")}
    src = _d(m.get(_FIELD_OF.get(str(m.get("type")), "")))
    cur, mid = _d(src.get("current")), _d(src.get("metric"))
    if m.get("type") == "Object" and m.get("object") is not None:
        out["object"] = _compact({"target": src.get("describedObject") or {"kind": "", "name": ""},
                                  "metricName": mid.get("name", ""),
                                  "currentValue": _q(cur.get("value") or "0"),
                                  "selector": mid.get("selector"),
                                  "averageValue": cur.get("averageValue")},
                                 ("selector", "averageValue"))
    elif m.get("type") == "Pods" and m.get("pods") is not None:
        out["pods"] = _compact({"metricName": mid.get("name", ""),
                                "currentAverageValue": _q(cur.get("averageValue") or "0"),
                                "selector": mid.get("selector")}, ("selector",))
    elif m.get("type") in ("Resource", "ContainerResource") and src:
        field = _FIELD_OF[str(m["type"])]
        d = _compact({"name": src.get("name", ""),
                      "currentAverageUtilization": cur.get("averageUtilization"),
                      "currentAverageValue": _q(cur.get("averageValue") or "0")},
                     ("currentAverageUtilization",))
        if field == "containerResource":
            d["container"] = src.get("container", "")
        out[field] = d
    elif m.get("type") == "External" and m.get("external") is not None:
        out["external"] = _compact({"metricName": mid.get("name", ""),
                                    "metricSelector": mid.get("selector"),
                                    "currentValue": _q(cur.get("value") or "0"),
                                    "currentAverageValue": cur.get("averageValue")},
                                   ("metricSelector", "currentAverageValue"))
    return out


def _rules_go(r: Any) -> Any:
    if not isinstance(r, dict):
        return None
    policies = r.get("policies")
    return {"StabilizationWindowSeconds": r.get("stabilizationWindowSeconds"),
            "SelectPolicy": r.get("selectPolicy"),
            "Policies": None if policies is None else [
                {"Type": p.get("type", ""), "Value": p.get("value", 0),
                 "PeriodSeconds": p.get("periodSeconds", 0)} for p in policies],
            "Tolerance": r.get("tolerance")}


def to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored autoscaling/v2 HorizontalPodAutoscaler as autoscaling/v1 shows it."""
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    meta = dict(_d(obj.get("metadata")))
    annotations = {k: v for k, v in _d(meta.get("annotations")).items() if k not in ANNOTATIONS}
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    v1spec: dict[str, Any] = {"scaleTargetRef": spec.get("scaleTargetRef") or {}}
    if spec.get("minReplicas") is not None:
        v1spec["minReplicas"] = spec["minReplicas"]
    v1spec["maxReplicas"] = spec.get("maxReplicas", 0)
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        v1spec["targetCPUUtilizationPercentage"] = (
            cpu["resource"]["target"]["averageUtilization"])
    others = [_spec_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS] = _dumps(others)
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    if current:
        annotations[CURRENT_METRICS] = _dumps([_status_v1(m) for m in current])
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        annotations[BEHAVIOR] = _dumps({"ScaleUp": _rules_go(behavior.get("scaleUp")),
                                        "ScaleDown": _rules_go(behavior.get("scaleDown"))})
    conditions = status.get("conditions") or []
    if conditions:
        annotations[CONDITIONS] = _dumps([_compact(
            {"type": c.get("type", ""), "status": c.get("status", ""),
             "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason"),
             "message": c.get("message")}, ("lastTransitionTime", "reason", "message"))
            for c in conditions if isinstance(c, dict)])
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    v1status: dict[str, Any] = {}
    for key in ("observedGeneration", "lastScaleTime"):
        if status.get(key) is not None:
            v1status[key] = status[key]
    v1status["currentReplicas"] = status.get("currentReplicas", 0)
    v1status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for m in current:
        r = _d(m.get("resource"))
        if m.get("type") == "Resource" and r.get("name") == "cpu":
            util = _d(r.get("current")).get("averageUtilization")
            if util is not None:
                v1status["currentCPUUtilizationPercentage"] = util
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
            "metadata": meta, "spec": v1spec, "status": v1status}


# --- v1 → v2 --------------------------------------------------------------------

def _target(kind: str, value: Any = None, average: Any = None, util: Any = None
            ) -> dict[str, Any]:
    return _compact({"type": kind, "value": value, "averageValue": average,
                     "averageUtilization": util}, ("value", "averageValue", "averageUtilization"))


def _spec_v2(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": m.get("type", "")}
    if isinstance(m.get("object"), dict):
        o = m["object"]
        avg = o.get("averageValue")
        out["object"] = {"describedObject": o.get("target") or {},
                         "metric": _compact({"name": o.get("metricName", ""),
                                             "selector": o.get("selector")}, ("selector",)),
                         "target": (_target("AverageValue", average=avg) if avg is not None
                                    else _target("Value", value=o.get("targetValue")))}
    if isinstance(m.get("pods"), dict):
        p = m["pods"]
        out["pods"] = {"metric": _compact({"name": p.get("metricName", ""),
                                           "selector": p.get("selector")}, ("selector",)),
                       "target": _target("AverageValue", average=p.get("targetAverageValue"))}
    for field in ("resource", "containerResource"):
        if isinstance(m.get(field), dict):
            r = m[field]
            avg = r.get("targetAverageValue")
            target = (_target("AverageValue", average=avg) if avg is not None
                      else _target("Utilization", util=r.get("targetAverageUtilization")))
            d: dict[str, Any] = {"name": r.get("name", ""), "target": target}
            if field == "containerResource":
                d["container"] = r.get("container", "")
            out[field] = d
    if isinstance(m.get("external"), dict):
        e = m["external"]
        avg = e.get("targetAverageValue")
        out["external"] = {"metric": _compact({"name": e.get("metricName", ""),
                                               "selector": e.get("metricSelector")},
                                              ("selector",)),
                           "target": (_target("AverageValue", average=avg) if avg is not None
                                      else _target("Value", value=e.get("targetValue")))}
    return out


def _status_v2(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": m.get("type", "")}
    if isinstance(m.get("object"), dict):
        o = m["object"]
        out["object"] = {"describedObject": o.get("target") or {},
                         "metric": _compact({"name": o.get("metricName", ""),
                                             "selector": o.get("selector")}, ("selector",)),
                         "current": _compact({"value": o.get("currentValue"),
                                              "averageValue": o.get("averageValue")},
                                             ("value", "averageValue"))}
    if isinstance(m.get("pods"), dict):
        p = m["pods"]
        out["pods"] = {"metric": _compact({"name": p.get("metricName", ""),
                                           "selector": p.get("selector")}, ("selector",)),
                       "current": {"averageValue": p.get("currentAverageValue")}}
    for field in ("resource", "containerResource"):
        if isinstance(m.get(field), dict):
            r = m[field]
            d: dict[str, Any] = {"name": r.get("name", ""), "current": _compact(
                {"averageValue": r.get("currentAverageValue"),
                 "averageUtilization": r.get("currentAverageUtilization")},
                ("averageValue", "averageUtilization"))}
            if field == "containerResource":
                d["container"] = r.get("container", "")
            out[field] = d
    if isinstance(m.get("external"), dict):
        e = m["external"]
        out["external"] = {"metric": _compact({"name": e.get("metricName", ""),
                                               "selector": e.get("metricSelector")},
                                              ("selector",)),
                           "current": _compact({"value": e.get("currentValue"),
                                                "averageValue": e.get("currentAverageValue")},
                                               ("value", "averageValue"))}
    return out


def _go_field(d: dict[str, Any], name: str) -> Any:
    """encoding/json's case-insensitive field match."""
    for k, v in d.items():
        if k.lower() == name.lower():
            return v
    return None


def _rules_v2(r: Any) -> dict[str, Any] | None:
    if not isinstance(r, dict):
        return None
    policies = _go_field(r, "Policies")
    out = _compact({
        "stabilizationWindowSeconds": _go_field(r, "StabilizationWindowSeconds"),
        "selectPolicy": _go_field(r, "SelectPolicy"),
        "policies": None if not isinstance(policies, list) else [
            {"type": _go_field(p, "Type") or "", "value": _go_field(p, "Value") or 0,
             "periodSeconds": _go_field(p, "PeriodSeconds") or 0}
            for p in policies if isinstance(p, dict)],
        "tolerance": _go_field(r, "Tolerance")},
        ("stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance"))
    return out


def _loads(s: Any) -> Any:
    try:
        return json.loads(s) if isinstance(s, str) else None
    except ValueError:
        return None  # upstream ignores an annotation it cannot decode


def to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HorizontalPodAutoscaler body as the v2 object it is stored as."""
    out: dict[str, Any] = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"], out["kind"] = "autoscaling/v2", "HorizontalPodAutoscaler"
    meta = dict(_d(obj.get("metadata")))
    annotations = _d(meta.get("annotations"))
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    v2spec: dict[str, Any] = {"scaleTargetRef": spec.get("scaleTargetRef") or {}}
    if spec.get("minReplicas") is not None:
        v2spec["minReplicas"] = spec["minReplicas"]
    v2spec["maxReplicas"] = spec.get("maxReplicas", 0)
    metrics: list[dict[str, Any]] = []
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": _target(
            "Utilization", util=cpu)}}]
    others = _loads(annotations.get(METRICS))
    if isinstance(others, list):
        metrics = [_spec_v2(m) for m in others if isinstance(m, dict)] + metrics[:1]
    behavior = _loads(annotations.get(BEHAVIOR))
    if isinstance(behavior, dict):
        up, down = _go_field(behavior, "ScaleUp"), _go_field(behavior, "ScaleDown")
        if up is not None or down is not None:
            v2spec["behavior"] = _compact({"scaleUp": _rules_v2(up),
                                           "scaleDown": _rules_v2(down)},
                                          ("scaleUp", "scaleDown"))
    if not metrics:
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": _target(
            "Utilization", util=80)}}]
    v2spec["metrics"] = metrics
    v2status: dict[str, Any] = {}
    for key in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"):
        if status.get(key) is not None:
            v2status[key] = status[key]
    if status.get("currentCPUUtilizationPercentage") is not None:
        v2status["currentMetrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "current": {
                "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    current = _loads(annotations.get(CURRENT_METRICS))
    if isinstance(current, list):
        v2status["currentMetrics"] = [_status_v2(m) for m in current if isinstance(m, dict)]
    conditions = _loads(annotations.get(CONDITIONS))
    if isinstance(conditions, list):
        v2status["conditions"] = [c for c in conditions if isinstance(c, dict)]
    rest = {k: v for k, v in annotations.items() if k not in ANNOTATIONS}
    if rest:
        meta["annotations"] = rest
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    out["spec"] = v2spec
    out["status"] = v2status
    return out
