"""The horizontal pod autoscaler (kube-controller-manager's
``horizontal-pod-autoscaler-controller``, v1.36 ``pkg/controller/podautoscaler/horizontal.go``).

Role: every ``--horizontal-pod-autoscaler-sync-period`` (15 s) per HPA, read the target's
``/scale`` (any kind serving it, custom resources included), compute each metric's
proposal (replica_calculator.py over the pods the Scale's selector matches and the metrics
of metrics_client.py), take the largest, normalize it (normalization.py: stabilization,
rate limits, min/max), write the new count to ``/scale`` and the HPA's status.

Data flow: HPA informer events → the key, queued after the sync period (upstream's
FixedItemIntervalRateLimiter: a new HPA waits one period too); each sync queues the key
again after the period; the pod informer's cache gives the pods. Status writes are PUT
``/status`` when the status changed.

Conditions and events, as upstream: AbleToScale (SucceededGetScale, FailedGetScale,
SucceededRescale, FailedUpdateScale, ReadyForNewScale, ScaleUpStabilized,
ScaleDownStabilized), ScalingActive (ValidMetricFound, ScalingDisabled, InvalidSelector,
AmbiguousSelector, FailedGet<Type>Metric), ScalingLimited (DesiredWithinRange,
ScaleUpLimit, ScaleDownLimit, TooFewReplicas, TooManyReplicas); events SuccessfulRescale,
FailedRescale, FailedGetScale, FailedComputeMetricsReplicas, FailedGet<Type>Metric,
SelectorRequired, InvalidSelector, AmbiguousSelector, FailedUpdateStatus.

Deliberate deviations: the HPAScaleToZero and HPAConfigurableTolerance gates are off (as
in v1.36's defaults), so no ScaledToZero condition and no per-HPA tolerance; the
controller's Prometheus monitor metrics are not exported.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of, spec_of, status_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.labels import SelectorParseError, parse_label_selector, selector_from_label_selector
from pykcm.api.quantity import BINARY_SI, DECIMAL_SI, Quantity
from pykcm.api.timestamps import format_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.client import Client, NoResourceMatchError
from pykcm.client.errors import ApiError, is_conflict, is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.controller.event_recorder import EventRecorder
from pykcm.controllers.podautoscaler.metrics_client import MetricsClient, MetricsError
from pykcm.controllers.podautoscaler.normalization import Normalizer
from pykcm.controllers.podautoscaler.replica_calculator import (
    DEFAULT_TOLERANCE,
    ReplicaCalculationError,
    Tolerances,
    milli_value,
    per_pod_replicas,
    plain_metric_replicas,
    resource_replicas,
    usage_ratio_replicas,
)
from pykcm.informers.generic import GenericInformer

__all__ = ["HorizontalController"]

log = logging.getLogger("pykcm.controllers.podautoscaler")

Obj = dict[str, Any]
_FIELD_OF: Final = {"Object": "object", "Pods": "pods", "Resource": "resource",
                    "ContainerResource": "containerResource", "External": "external"}


class _MetricFailure(Exception):
    """One metric gave no proposal: the ScalingActive condition it implies."""

    def __init__(self, message: str, reason: str, condition_message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.condition_message = condition_message


class _SyncFailure(Exception):
    pass


def _milli_quantity(milli: int, fmt: str = DECIMAL_SI) -> str:
    """resource.NewMilliQuantity(v, fmt).String()."""
    from decimal import Decimal
    return str(Quantity(Decimal(milli) / 1000, fmt))


def _set_condition(status: Obj, ctype: str, cstatus: str, reason: str, message: str,
                   now: float) -> None:
    """setConditionInList: the transition time moves only when the status does."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    for c in conditions:
        if c.get("type") == ctype:
            break
    else:
        c = {"type": ctype}
        conditions.append(c)
    if c.get("status") != cstatus:
        c["lastTransitionTime"] = format_time(now)
    c["status"], c["reason"], c["message"] = cstatus, reason, message
    # Go's field order in HorizontalPodAutoscalerCondition
    ordered: Obj = {k: c[k] for k in ("type", "status", "lastTransitionTime", "reason", "message")
               if k in c}
    c.clear()
    c.update(ordered)


def _go_selector(sel: Any) -> str:
    """A *metav1.LabelSelector as %+v prints it (in metric names): only nil is common."""
    if not sel:
        return "nil"
    labels = sel.get("matchLabels") or {}
    inner = " ".join(f"{k}:{v}" for k, v in sorted(labels.items()))
    return f"&LabelSelector{{MatchLabels:map[string]string{{{inner}}},MatchExpressions:[]}}"


class HorizontalController(ControllerHost):
    name = "horizontal-pod-autoscaler-controller"
    default_workers = 5  # --concurrent-horizontal-pod-autoscaler-syncs

    def __init__(self, *, client: Client, hpa_informer: GenericInformer,
                 pod_informer: GenericInformer, recorder: EventRecorder,
                 sync_period: float = 15.0, downscale_stabilization: float = 300.0,
                 tolerance: float = DEFAULT_TOLERANCE, cpu_initialization_period: float = 300.0,
                 initial_readiness_delay: float = 30.0,
                 metrics: MetricsClient | None = None,
                 clock: Clock | Callable[[], float] | None = None) -> None:
        self.client = client
        self.recorder = recorder
        self.sync_period = sync_period
        self.tolerances = Tolerances(tolerance, tolerance)
        self.cpu_initialization_period = cpu_initialization_period
        self.initial_readiness_delay = initial_readiness_delay
        self.metrics = metrics or MetricsClient(client)
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.now
        self.normalizer = Normalizer(downscale_stabilization, self.clock)
        self.hpa_lister = hpa_informer.lister
        self.pod_lister = pod_informer.lister
        # HPA key → its target's pod selector (the last one seen), for AmbiguousSelector
        self.selectors: dict[str, Any] = {}
        self.controller = Controller("horizontalpodautoscaler", self.sync, clock=self._time)
        self.controller.watch(hpa_informer, ResourceEventHandlerFuncs(
            add_func=self._enqueue, update_func=lambda old, new: self._enqueue(new),
            delete_func=self._deleted), resync_period=sync_period)
        # The pod informer's own HasSynced, no handler (as upstream): a handler that does
        # nothing still costs a delivery at every event of every pod
        self.controller.add_synced(pod_informer.informer.has_synced)

    # -- queue -----------------------------------------------------------------------

    def _key(self, obj: Any) -> str:
        from pykcm.cache.keys import deletion_handling_meta_namespace_key
        return deletion_handling_meta_namespace_key(obj)

    def _enqueue(self, obj: Any) -> None:
        # upstream's FixedItemIntervalRateLimiter: every add waits one sync period
        key = self._key(obj)
        self.controller.queue.add_after(key, self.sync_period)
        self.selectors.setdefault(key, None)

    def _deleted(self, obj: Any) -> None:
        key = self._key(obj)
        self.controller.queue.forget(key)
        self.selectors.pop(key, None)

    async def sync(self, key: str) -> Result | None:
        ns, _, name = key.partition("/")
        try:
            hpa = self.hpa_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if is_not_found(exc):
                self.normalizer.forget(key)
                return None
            raise
        try:
            await self.reconcile(hpa, key)
        except _SyncFailure as exc:
            log.warning("%s", exc, extra={"controller": "horizontal-pod-autoscaler"})
        return Result(requeue_after=self.sync_period)

    # -- reconcile -------------------------------------------------------------------

    def _event(self, hpa: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.recorder.event(hpa, type_, reason, message)

    async def reconcile(self, shared: Mapping[str, Any], key: str) -> None:
        hpa: Obj = copy.deepcopy(dict(shared))
        original = copy.deepcopy(hpa.get("status") or {})
        status: Obj = hpa.setdefault("status", {})
        spec = spec_of(hpa)
        ns = str(meta_of(hpa).get("namespace") or "")
        ref = spec.get("scaleTargetRef") or {}
        kind, target = str(ref.get("kind") or ""), str(ref.get("name") or "")
        reference = f"{kind}/{ns}/{target}"
        now = self.clock()

        api_version = str(ref.get("apiVersion") or "")
        if api_version.count("/") > 1:
            err = f"unexpected GroupVersion string: {api_version}"
            await self._fail_get_scale(hpa, original, err)
            raise _SyncFailure(f"invalid API version in scale target reference: {err}")
        group = api_version.rpartition("/")[0]
        version = api_version.rpartition("/")[2]
        try:
            info = await self.client.resolve(
                f"{group}/{version}/{kind.lower()}" if group else f"{version}/{kind.lower()}")
            if info.kind != kind:
                raise NoResourceMatchError(kind)
        except NoResourceMatchError:
            err = f'no matches for kind "{kind}" in group "{group}"'
            await self._fail_get_scale(hpa, original, err)
            raise _SyncFailure(f"unable to determine resource for scale target reference: "
                               f"{err}") from None
        try:
            scale = await self.client.get_scale(info, target, ns)
        except ApiError as exc:
            err = str(getattr(exc, "message", "") or exc)
            await self._fail_get_scale(hpa, original, err)
            raise _SyncFailure(f"failed to query scale subresource for {reference}: "
                               f"{err}") from None
        _set_condition(status, "AbleToScale", "True", "SucceededGetScale",
                       "the HPA controller was able to get the target's current scale", now)
        current = int(spec_of(scale).get("replicas") or 0)
        self.normalizer.record_initial(key, current)

        min_spec = spec.get("minReplicas")
        min_replicas = int(min_spec) if min_spec is not None else 1
        max_replicas = int(spec.get("maxReplicas") or 0)
        desired, reason, rescale, compute = 0, "", True, True
        metric_statuses: list[Obj] = []
        if current == 0:
            compute, rescale = False, False
            _set_condition(status, "ScalingActive", "False", "ScalingDisabled",
                           "scaling is disabled since the replica count of the target is zero",
                           now)
            status["conditions"] = [c for c in status["conditions"]
                                    if c.get("type") != "ScaledToZero"]
        elif current > max_replicas:
            reason, desired, compute = ("Current number of replicas above Spec.MaxReplicas",
                                        max_replicas, False)
        elif current < min_replicas:
            reason, desired, compute = ("Current number of replicas below Spec.MinReplicas",
                                        min_replicas, False)
        if compute:
            proposal, metric_name, metric_statuses, error = await self._compute_for_metrics(
                hpa, scale, spec.get("metrics") or [], key)
            if proposal == -1:
                self._set_status(hpa, current, int(status.get("desiredReplicas") or 0),
                                 metric_statuses, False)
                await self._update_status_if_needed(original, hpa)
                self._event(hpa, "Warning", "FailedComputeMetricsReplicas", error)
                raise _SyncFailure("failed to compute desired number of replicas based on "
                                   f"listed metrics for {reference}: {error}")
            rescale_metric = ""
            if proposal > desired:
                desired, rescale_metric = proposal, metric_name
            if desired > current:
                reason = f"{rescale_metric} above target"
            if desired < current:
                reason = "All metrics below target"
            behavior = spec.get("behavior")
            if behavior is None:
                decision = self.normalizer.normalize(key, current, desired, min_replicas,
                                                     max_replicas)
            else:
                decision = self.normalizer.normalize_with_behaviors(
                    key, current, desired, min_replicas, max_replicas, behavior)
            _set_condition(status, "AbleToScale", "True", decision.able_reason,
                           decision.able_message, now)
            _set_condition(status, "ScalingLimited", "True" if decision.limited else "False",
                           decision.limited_reason, decision.limited_message, now)
            desired = decision.replicas
            rescale = desired != current
        if rescale:
            try:
                await self._rescale(info, target, ns, scale, desired)
            except ApiError as exc:
                err = str(getattr(exc, "message", "") or exc)
                self._event(hpa, "Warning", "FailedRescale",
                            f"New size: {desired}; reason: {reason}; error: {err}")
                _set_condition(status, "AbleToScale", "False", "FailedUpdateScale",
                               f"the HPA controller was unable to update the target scale: "
                               f"{err}", now)
                self._set_status(hpa, current, int(status.get("desiredReplicas") or 0),
                                 metric_statuses, False)
                await self._update_status_if_needed(original, hpa)
                raise _SyncFailure(f"failed to rescale {reference}: {err}") from None
            _set_condition(status, "AbleToScale", "True", "SucceededRescale",
                           f"the HPA controller was able to update the target scale to "
                           f"{desired}", now)
            self._event(hpa, "Normal", "SuccessfulRescale",
                        f"New size: {desired}; reason: {reason}")
            self.normalizer.store_scale_event(key, spec.get("behavior"), current, desired)
            status["conditions"] = [c for c in status["conditions"]
                                    if c.get("type") != "ScaledToZero"]
            log.info("Successfully rescaled %s from %d to %d: %s", reference, current,
                     desired, reason)
        else:
            desired = current
        self._set_status(hpa, current, desired, metric_statuses, rescale)
        await self._update_status_if_needed(original, hpa)

    async def _rescale(self, info: Any, name: str, ns: str, scale: Obj, desired: int) -> None:
        """PUT /scale, retried on conflicts with the latest Scale (retry.DefaultRetry)."""
        for attempt in range(5):
            body = copy.deepcopy(scale)
            body.setdefault("spec", {})["replicas"] = desired
            try:
                await self.client.update_scale(info, name, body, ns)
                return
            except ApiError as exc:
                if not is_conflict(exc) or attempt == 4:
                    raise
                try:
                    scale = await self.client.get_scale(info, name, ns)
                except ApiError:
                    pass

    async def _fail_get_scale(self, hpa: Obj, original: Mapping[str, Any], err: str) -> None:
        self._event(hpa, "Warning", "FailedGetScale", err)
        _set_condition(hpa["status"], "AbleToScale", "False", "FailedGetScale",
                       f"the HPA controller was unable to get the target's current scale: "
                       f"{err}", self.clock())
        await self._update_status_if_needed(original, hpa)

    def _set_status(self, hpa: Obj, current: int, desired: int, metric_statuses: list[Obj],
                    rescale: bool) -> None:
        old = hpa.get("status") or {}
        status: Obj = {}
        if rescale:
            status["lastScaleTime"] = format_time(self.clock())
        elif old.get("lastScaleTime") is not None:
            status["lastScaleTime"] = old["lastScaleTime"]
        if old.get("observedGeneration") is not None:
            status["observedGeneration"] = old["observedGeneration"]
        status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        status["currentMetrics"] = metric_statuses or None
        status["conditions"] = old.get("conditions") or []
        hpa["status"] = status

    async def _update_status_if_needed(self, original: Mapping[str, Any], hpa: Obj) -> None:
        if _normalized(original) == _normalized(hpa.get("status") or {}):
            return
        try:
            await self.client.update_status(
                "autoscaling/v2/horizontalpodautoscalers", hpa,
                str(meta_of(hpa).get("namespace") or ""))
        except ApiError as exc:
            err = str(getattr(exc, "message", "") or exc)
            self._event(hpa, "Warning", "FailedUpdateStatus", err)
            raise _SyncFailure(f"failed to update status for {meta_of(hpa).get('name')}: "
                               f"{err}") from None

    # -- metrics ---------------------------------------------------------------------

    def _pods(self, ns: str, selector: Any) -> list[Any]:
        return list(self.pod_lister.by_namespace(ns).list(selector))

    def _validate_selector(self, hpa: Obj, key: str, selector: str) -> Any:
        status = hpa["status"]
        now = self.clock()
        if not selector:
            self._event(hpa, "Warning", "SelectorRequired", "selector is required")
            _set_condition(status, "ScalingActive", "False", "InvalidSelector",
                           "the HPA target's scale is missing a selector", now)
            raise _MetricFailure("selector is required", "", "")
        try:
            parsed = parse_label_selector(selector)
        except SelectorParseError as exc:
            msg = ("couldn't convert selector into a corresponding internal selector object: "
                   f"{exc}")
            self._event(hpa, "Warning", "InvalidSelector", msg)
            _set_condition(status, "ScalingActive", "False", "InvalidSelector", msg, now)
            raise _MetricFailure(msg, "", "") from None
        self.selectors[key] = parsed
        ns = str(meta_of(hpa).get("namespace") or "")
        pods = self._pods(ns, parsed)
        controlling: set[str] = set()
        for pod in pods:
            labels = meta_of(pod).get("labels") or {}
            for other, sel in self.selectors.items():
                if sel is not None and other.partition("/")[0] == ns and sel.matches(labels):
                    controlling.add(other)
        if len(controlling) > 1:
            names = " ".join(sorted(controlling))
            msg = f"pods by selector {selector} are controlled by multiple HPAs: [{names}]"
            self._event(hpa, "Warning", "AmbiguousSelector", msg)
            _set_condition(status, "ScalingActive", "False", "AmbiguousSelector", msg, now)
            raise _MetricFailure(msg, "", "")
        return parsed

    async def _compute_for_metrics(self, hpa: Obj, scale: Mapping[str, Any],
                                   specs: Sequence[Mapping[str, Any]], key: str
                                   ) -> tuple[int, str, list[Obj], str]:
        """computeReplicasForMetrics: (replicas or -1, metric name, statuses, error)."""
        try:
            selector = self._validate_selector(hpa, key, str(
                status_of(scale).get("selector") or ""))
        except _MetricFailure as exc:
            return -1, "", [], str(exc)
        spec_replicas = int(spec_of(scale).get("replicas") or 0)
        status_replicas = int(status_of(scale).get("replicas") or 0)
        statuses: list[Obj] = [{"type": ""} for _ in specs]
        replicas, metric, invalid, first_error = 0, "", 0, ""
        first_failure: _MetricFailure | None = None
        for i, m in enumerate(specs):
            try:
                proposal, name, statuses[i] = await self._compute_for_metric(
                    hpa, m, spec_replicas, status_replicas, selector)
            except _MetricFailure as exc:
                if invalid == 0:
                    first_failure, first_error = exc, str(exc)
                invalid += 1
                continue
            if replicas == 0 or proposal > replicas:
                replicas, metric = proposal, name
        error = ""
        if first_error:
            error = (f"invalid metrics ({invalid} invalid out of {len(specs)}), first error "
                     f"is: {first_error}")
        now = self.clock()
        if invalid >= len(specs) or (invalid > 0 and replicas < spec_replicas):
            if first_failure is not None:
                _set_condition(hpa["status"], "ScalingActive", "False", first_failure.reason,
                               first_failure.condition_message, now)
            return -1, "", statuses, error
        _set_condition(hpa["status"], "ScalingActive", "True", "ValidMetricFound",
                       f"the HPA was able to successfully calculate a replica count from "
                       f"{metric}", now)
        return replicas, metric, statuses, error

    def _unable(self, hpa: Obj, reason: str, err: str, wrapped: str) -> _MetricFailure:
        """getUnableComputeReplicaCountCondition: the event now, the condition later."""
        self._event(hpa, "Warning", reason, err)
        return _MetricFailure(wrapped, reason,
                              f"the HPA was unable to compute the replica count: {err}")

    async def _compute_for_metric(self, hpa: Obj, m: Mapping[str, Any], spec_replicas: int,
                                  status_replicas: int, selector: Any
                                  ) -> tuple[int, str, Obj]:
        mtype = str(m.get("type") or "")
        ns = str(meta_of(hpa).get("namespace") or "")
        field = _FIELD_OF.get(mtype)
        if field is None or not isinstance(m.get(field), dict):
            err = f'unknown metric source type "{mtype}"'
            raise self._unable(hpa, "InvalidMetricSourceType", err, err)
        src: Mapping[str, Any] = m[field]
        target = src.get("target") or {}
        now = self.clock()
        if mtype in ("Resource", "ContainerResource"):
            resource = str(src.get("name") or "")
            container = str(src.get("container") or "") if mtype == "ContainerResource" else ""
            reason = ("FailedGetResourceMetric" if mtype == "Resource"
                      else "FailedGetContainerResourceMetric")
            outer = (f"failed to get {resource} resource metric value: " if mtype == "Resource"
                     else f"failed to get {container} container metric value: ")
            try:
                current, metric_status, name = await self._resource_metric(
                    spec_replicas, target, resource, ns, selector, container, mtype, now)
            except (MetricsError, ReplicaCalculationError) as exc:
                raise self._unable(hpa, reason, str(exc), outer + str(exc)) from None
            st: Obj = {"name": resource, "current": metric_status}
            if container:
                st = {"name": resource, "container": container, "current": metric_status}
            return current, name, {"type": mtype, field: st}
        mid = src.get("metric") or {}
        metric_name = str(mid.get("name") or "")
        try:
            metric_selector = selector_from_label_selector(mid.get("selector"))
        except SelectorParseError as exc:
            reason = "FailedGetObjectMetric" if mtype == "Object" else f"FailedGet{mtype}Metric"
            raise self._unable(hpa, reason, str(exc), f"failed to get {field} metric value: "
                                                      f"{exc}") from None
        msel = str(metric_selector) if mid.get("selector") else ""
        pods = self._pods(ns, selector)
        if mtype == "Pods":
            try:
                metrics = await self.metrics.raw_metric(metric_name, ns, str(selector), msel)
                replicas, usage = plain_metric_replicas(
                    spec_replicas, milli_value(target.get("averageValue") or "0"), "",
                    self.tolerances, pods, metrics,
                    cpu_initialization_period=self.cpu_initialization_period,
                    delay_of_initial_readiness_status=self.initial_readiness_delay, now=now)
            except (MetricsError, ReplicaCalculationError) as exc:
                err = f"unable to get metric {metric_name}: {exc}"
                raise self._unable(hpa, "FailedGetPodsMetric", err,
                                   f"failed to get pods metric value: {err}") from None
            return replicas, f"pods metric {metric_name}", {"type": "Pods", "pods": {
                "metric": dict(mid), "current": {"averageValue": _milli_quantity(usage)}}}
        if mtype == "Object":
            described = src.get("describedObject") or {}
            try:
                usage, _ = await self.metrics.object_metric(metric_name, ns, described, msel)
            except MetricsError as exc:
                err = (f"unable to get metric {metric_name}: {described.get('kind')} on "
                       f"{ns} {described.get('name')}/{exc}")
                # the per-pod (AverageValue) path wraps its error once more
                inner = (err if target.get("type") == "Value" and target.get("value") is not None
                         else f"failed to get {metric_name} object metric: {err}")
                raise self._unable(hpa, "FailedGetObjectMetric", err,
                                   f"failed to get object metric value: {inner}") from None
            st = {"describedObject": dict(described), "metric": dict(mid)}
            if target.get("type") == "Value" and target.get("value") is not None:
                ratio = usage / milli_value(target["value"])
                replicas = usage_ratio_replicas(spec_replicas, ratio, self.tolerances, pods)
                st["current"] = {"value": _milli_quantity(usage)}
                return (replicas, f"{described.get('kind')} metric {metric_name}",
                        {"type": "Object", "object": st})
            replicas, per_pod = per_pod_replicas(
                status_replicas, usage, milli_value(target.get("averageValue") or "1"),
                self.tolerances)
            st["current"] = {"averageValue": _milli_quantity(per_pod)}
            return (replicas, f"external metric {metric_name}({_go_selector(mid.get('selector'))})",
                    {"type": "Object", "object": st})
        # External
        try:
            values, _ = await self.metrics.external_metric(metric_name, ns, msel)
        except MetricsError as exc:
            err = f"unable to get external metric {ns}/{metric_name}/" \
                  f"{_go_selector(mid.get('selector'))}: {exc}"
            inner = (f"failed to get {metric_name} external metric: {err}"
                     if target.get("averageValue") is not None
                     else f"failed to get external metric {metric_name}: {err}")
            raise self._unable(hpa, "FailedGetExternalMetric", err,
                               f"failed to get {metric_name} external metric value: "
                               f"{inner}") from None
        usage = sum(values)
        name = f"external metric {metric_name}({_go_selector(mid.get('selector'))})"
        st = {"metric": dict(mid)}
        if target.get("averageValue") is not None:
            replicas, per_pod = per_pod_replicas(status_replicas, usage,
                                                 milli_value(target["averageValue"]),
                                                 self.tolerances)
            st["current"] = {"averageValue": _milli_quantity(per_pod)}
        else:
            ratio = usage / milli_value(target.get("value") or "1")
            replicas = usage_ratio_replicas(spec_replicas, ratio, self.tolerances, pods)
            st["current"] = {"value": _milli_quantity(usage)}
        return replicas, name, {"type": "External", "external": st}

    async def _resource_metric(self, current: int, target: Mapping[str, Any], resource: str,
                               ns: str, selector: Any, container: str, mtype: str, now: float
                               ) -> tuple[int, Obj, str]:
        fmt = BINARY_SI if resource == "memory" else DECIMAL_SI
        usage_kind = "usage" if target.get("averageValue") is not None else "utilization"
        try:
            metrics, _ = await self.metrics.resource_metric(resource, ns, str(selector),
                                                            container)
        except MetricsError as exc:
            raise ReplicaCalculationError(f"failed to get {resource} {usage_kind}: unable to "
                                          f"get metrics for resource {resource}: {exc}") from None
        pods = self._pods(ns, selector)
        opts = {"cpu_initialization_period": self.cpu_initialization_period,
                "delay_of_initial_readiness_status": self.initial_readiness_delay, "now": now}
        if target.get("averageValue") is not None:
            try:
                replicas, usage = plain_metric_replicas(
                    current, milli_value(target["averageValue"]), resource, self.tolerances,
                    pods, metrics, **opts)
            except ReplicaCalculationError as exc:
                raise ReplicaCalculationError(f"failed to get {resource} usage: {exc}") from None
            return (replicas, {"averageValue": _milli_quantity(usage, fmt)},
                    f"{resource} resource")
        utilization = target.get("averageUtilization")
        if utilization is None:
            raise ReplicaCalculationError(
                "invalid resource metric source: neither an average utilization target nor an "
                "average value (usage) target was set")
        try:
            replicas, percent, raw = resource_replicas(
                current, int(utilization), resource, self.tolerances, pods, metrics,
                container=container, **opts)
        except ReplicaCalculationError as exc:
            raise ReplicaCalculationError(f"failed to get {resource} utilization: {exc}") from None
        name = (f"{resource} container resource utilization (percentage of request)"
                if mtype == "ContainerResource"
                else f"{resource} resource utilization (percentage of request)")
        return (replicas, {"averageUtilization": percent,
                           "averageValue": _milli_quantity(raw, fmt)}, name)


def _normalized(status: Mapping[str, Any]) -> Any:
    """A status compared as apiequality.Semantic would (empty lists and nils alike)."""
    def norm(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: norm(x) for k, x in v.items() if x not in (None, [], {}, "")}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v
    return norm(status)
