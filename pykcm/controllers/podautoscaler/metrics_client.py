"""Where the HPA controller reads metrics from (kube-controller-manager v1.36
``pkg/controller/podautoscaler/metrics/client.go``): the resource metrics API
(metrics.k8s.io/v1beta1 PodMetrics, served by metrics-server, or by ``pykcm up``'s API
server from the simulated kubelets' usage), the custom metrics API
(custom.metrics.k8s.io/v1beta2) for Pods and Object metrics, and the external metrics API
(external.metrics.k8s.io/v1beta1).

Data flow: one LIST per sync and metric, over HTTP with the controller's client. A pod's
value is the sum of its containers' usage (a pod missing the resource in a container has
no value), or one container's for a ContainerResource metric; values are milli-units.
An API that is not served answers 404: the error becomes the HPA's ``FailedGet*Metric``
condition and event, as upstream's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykcm.api.go_duration import parse_go_duration_seconds
from pykcm.api.timestamps import parse_time
from pykcm.client import Client
from pykcm.client.errors import ApiError
from pykcm.controllers.podautoscaler.replica_calculator import PodMetric, milli_value

__all__ = ["MetricsClient", "MetricsError"]

_DEFAULT_WINDOW = 60.0  # metricServerDefaultMetricWindow


class MetricsError(Exception):
    """A metric could not be fetched; the message is upstream's."""


def _window(v: Any) -> float:
    """A Go duration string ("30s", "1m0s") in seconds."""
    if not isinstance(v, str) or not v:
        return _DEFAULT_WINDOW
    try:
        return parse_go_duration_seconds(v)
    except ValueError:
        return _DEFAULT_WINDOW


_GENERIC_NOT_FOUND = "the server could not find the requested resource"


def _api_error(exc: ApiError, resource: str = "") -> str:
    """The error's message; a 404 without a Status body (kube-apiserver's plain
    ``404 page not found`` for a group it does not serve) as client-go words it, naming the
    resource asked for."""
    message = str(getattr(exc, "message", "") or exc)
    if resource and exc.code == 404 and message == _GENERIC_NOT_FOUND:
        return f"{message} (get {resource})"
    return message


class MetricsClient:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def resource_metric(self, resource: str, namespace: str, selector: str,
                              container: str = "") -> tuple[dict[str, PodMetric], float]:
        """GetResourceMetric: every selected pod's usage of ``resource``, and the time of
        the first sample."""
        try:
            body = await self.client.request(
                "GET", f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods",
                params={"labelSelector": selector} if selector else None)
        except ApiError as exc:
            raise MetricsError("unable to fetch metrics from resource metrics API: "
                               f"{_api_error(exc, 'pods.metrics.k8s.io')}") from None
        items = body.get("items") if isinstance(body, Mapping) else None
        if not items:
            raise MetricsError("no metrics returned from resource metrics API")
        out: dict[str, PodMetric] = {}
        for m in items:
            meta = m.get("metadata") or {}
            ts = parse_time(m.get("timestamp")) or 0.0
            window = _window(m.get("window"))
            containers = m.get("containers") or []
            if container:
                for c in containers:
                    if c.get("name") == container:
                        usage = c.get("usage") or {}
                        if resource in usage:
                            out[meta.get("name", "")] = PodMetric(milli_value(usage[resource]),
                                                                  ts, window)
                        break
                continue
            total, missing = 0, not containers
            for c in containers:
                usage = c.get("usage") or {}
                if resource not in usage:
                    missing = True
                    break
                total += milli_value(usage[resource])
            if not missing:
                out[meta.get("name", "")] = PodMetric(total, ts, window)
        return out, parse_time(items[0].get("timestamp")) or 0.0

    async def _custom_api(self) -> None:
        """The custom metrics client finds its API version by discovery first (upstream's
        AvailableAPIsGetter): an API server without the group gives this error."""
        try:
            await self.client.request("GET", "/apis/custom.metrics.k8s.io")
        except ApiError as exc:
            if exc.code != 404:
                raise MetricsError("unable to fetch metrics from custom metrics API: "
                                   f"{_api_error(exc)}") from None
            raise MetricsError("unable to fetch metrics from custom metrics API: no custom "
                               "metrics API (custom.metrics.k8s.io) registered") from None

    async def raw_metric(self, name: str, namespace: str, selector: str,
                         metric_selector: str) -> dict[str, PodMetric]:
        """GetRawMetric: a Pods metric of every selected pod (custom metrics API)."""
        await self._custom_api()
        params = {"labelSelector": selector}
        if metric_selector:
            params["metricLabelSelector"] = metric_selector
        try:
            body = await self.client.request(
                "GET", f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/pods/*/"
                       f"{name}", params=params)
        except ApiError as exc:
            raise MetricsError("unable to fetch metrics from custom metrics API: "
                               f"{_api_error(exc)}") from None
        items = body.get("items") if isinstance(body, Mapping) else None
        if not items:
            raise MetricsError("no metrics returned from custom metrics API")
        out: dict[str, PodMetric] = {}
        for m in items:
            obj = m.get("describedObject") or {}
            window = m.get("windowSeconds")
            out[obj.get("name", "")] = PodMetric(
                milli_value(m.get("value") or "0"), parse_time(m.get("timestamp")) or 0.0,
                float(window) if window is not None else _DEFAULT_WINDOW)
        return out

    async def object_metric(self, name: str, namespace: str, ref: Mapping[str, Any],
                            metric_selector: str) -> tuple[int, float]:
        """GetObjectMetric: one object's metric (custom metrics API)."""
        kind = str(ref.get("kind") or "")
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        resource = kind.lower() + "s" + (f".{group}" if group else "")
        params = {"metricLabelSelector": metric_selector} if metric_selector else None
        await self._custom_api()
        try:
            body = await self.client.request(
                "GET", f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/{resource}/"
                       f"{ref.get('name')}/{name}", params=params)
        except ApiError as exc:
            raise MetricsError("unable to fetch metrics from custom metrics API: "
                               f"{_api_error(exc)}") from None
        items = body.get("items") if isinstance(body, Mapping) else None
        if not items:
            raise MetricsError("no metrics returned from custom metrics API")
        first = items[0]
        return milli_value(first.get("value") or "0"), parse_time(first.get("timestamp")) or 0.0

    async def external_metric(self, name: str, namespace: str, selector: str
                              ) -> tuple[list[int], float]:
        """GetExternalMetric: the values of an external metric."""
        params = {"labelSelector": selector} if selector else None
        try:
            body = await self.client.request(
                "GET", f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{name}",
                params=params)
        except ApiError as exc:
            raise MetricsError("unable to fetch metrics from external metrics API: "
                               f"{_api_error(exc, f'{name}.external.metrics.k8s.io')}") from None
        items = body.get("items") if isinstance(body, Mapping) else None
        if not items:
            raise MetricsError("no metrics returned from external metrics API")
        return ([milli_value(i.get("value") or "0") for i in items],
                parse_time(items[0].get("timestamp")) or 0.0)
