"""Informer metrics under Kubernetes' names, with no dependency.

client-go v1.36 publishes these (component-base registers them in every
Kubernetes binary, kube-controller-manager included), all ALPHA, labelled
``name, group, version, resource`` (the informer's name and its resource):

- ``informer_queued_items`` (gauge): items queued in the FIFO.
- ``informer_processing_latency_seconds`` (histogram): time taken to
  process what one ``pop`` handed out (``handle_deltas``: Indexer update and
  distribution to the listeners' buffers).
- ``informer_store_resource_version`` (gauge): the 15 least significant
  digits of the resource version of the store (of the last object written).
- ``informer_pending_notifications`` (gauge, plus a ``handler`` label):
  notifications waiting in one processorListener's buffer.

Data flow and cost: a SharedIndexInformer with a non-empty name reserves
its label set when it starts (:meth:`InformerMetrics.reserve`; an unnamed
informer, or a second one with the same name and resource, publishes
nothing, as in client-go) and releases it when it stops. The gauges are
*callback* gauges read at collection time (queue length, buffer length, the
last object's resourceVersion), so the event path pays nothing for them; the
histogram costs one ``bisect`` per pop.

The metrics live in plain objects (:class:`Gauge`, :class:`Histogram`) in
:data:`REGISTRY`, which renders the Prometheus text format itself
(:meth:`Registry.expose`). When ``prometheus_client`` is installed,
:func:`register_with_prometheus` bridges them into its registry instead.
"""

from __future__ import annotations

import bisect
import importlib
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

__all__ = [
    "INFORMER_LABELS",
    "INFORMER_PENDING_NOTIFICATIONS",
    "INFORMER_PROCESSING_LATENCY",
    "INFORMER_QUEUED_ITEMS",
    "INFORMER_STORE_RESOURCE_VERSION",
    "PROCESSING_LATENCY_BUCKETS",
    "REGISTRY",
    "Gauge",
    "GaugeChild",
    "Histogram",
    "HistogramChild",
    "InformerMetrics",
    "MetricFamily",
    "Registry",
    "register_with_prometheus",
    "resource_version_metric_value",
]

INFORMER_LABELS: Final = ("name", "group", "version", "resource")
PROCESSING_LATENCY_BUCKETS: Final = (
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)


class GaugeChild:
    """One labelled gauge value: set directly, or read from a function at collection."""

    __slots__ = ("_func", "_value")

    def __init__(self) -> None:
        self._value = 0.0
        self._func: Callable[[], float] | None = None

    def set(self, value: float) -> None:
        self._value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        self._value += amount

    def dec(self, amount: float = 1.0) -> None:
        self._value -= amount

    def set_function(self, func: Callable[[], float] | None) -> None:
        """Read the value from ``func()`` at collection time (``None`` to stop)."""
        self._func = func

    def get(self) -> float:
        func = self._func
        if func is not None:
            try:
                return float(func())
            except Exception:  # noqa: BLE001 - a metric read must never break a scrape
                return math.nan
        return self._value


class HistogramChild:
    """One labelled histogram: cumulative buckets, sum and count."""

    __slots__ = ("_bounds", "_counts", "count", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        # One slot per bound plus +Inf; per-bucket (not cumulative) counts.
        self._counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self._counts[bisect.bisect_left(self._bounds, value)] += 1
        self.sum += value
        self.count += 1

    def buckets(self) -> list[tuple[float, int]]:
        """Cumulative ``(upper bound, count)`` pairs, ending with ``(inf, count)``."""
        out: list[tuple[float, int]] = []
        total = 0
        for bound, n in zip((*self._bounds, math.inf), self._counts, strict=True):
            total += n
            out.append((bound, total))
        return out


class MetricFamily:
    """A named metric with label names and one child per label-value tuple."""

    type: str = "untyped"

    def __init__(self, name: str, documentation: str, label_names: Sequence[str] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.label_names = tuple(label_names)
        self._children: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()

    def _new_child(self) -> Any:
        raise NotImplementedError

    def _child(self, values: Sequence[str]) -> Any:
        key = tuple(values)
        if len(key) != len(self.label_names):
            raise ValueError(f"{self.name}: expected labels {self.label_names}, got {key}")
        with self._lock:
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = self._new_child()
            return child

    def remove(self, *values: str) -> None:
        """Drop the child with these label values (absent ones are ignored)."""
        with self._lock:
            self._children.pop(tuple(values), None)

    def children(self) -> list[tuple[tuple[str, ...], Any]]:
        with self._lock:
            return list(self._children.items())

    def clear(self) -> None:
        with self._lock:
            self._children.clear()


class Gauge(MetricFamily):
    type = "gauge"

    def _new_child(self) -> GaugeChild:
        return GaugeChild()

    def labels(self, *values: str) -> GaugeChild:
        child: GaugeChild = self._child(values)
        return child


class Histogram(MetricFamily):
    type = "histogram"

    def __init__(self, name: str, documentation: str, label_names: Sequence[str] = (),
                 buckets: Sequence[float] = PROCESSING_LATENCY_BUCKETS) -> None:
        super().__init__(name, documentation, label_names)
        self.bounds = tuple(sorted(float(b) for b in buckets if b != math.inf))

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self.bounds)

    def labels(self, *values: str) -> HistogramChild:
        child: HistogramChild = self._child(values)
        return child


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt_labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _fmt_value(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


class Registry:
    """A set of metric families that renders the Prometheus text format (0.0.4)."""

    def __init__(self) -> None:
        self._families: dict[str, MetricFamily] = {}

    def register(self, family: MetricFamily) -> MetricFamily:
        if family.name in self._families:
            raise ValueError(f"metric {family.name!r} already registered")
        self._families[family.name] = family
        return family

    def families(self) -> list[MetricFamily]:
        return list(self._families.values())

    def get(self, name: str) -> MetricFamily | None:
        return self._families.get(name)

    def _lines(self) -> Iterator[str]:
        for fam in self._families.values():
            yield f"# HELP {fam.name} [ALPHA] {fam.documentation}"
            yield f"# TYPE {fam.name} {fam.type}"
            for values, child in fam.children():
                if isinstance(child, HistogramChild):
                    for bound, n in child.buckets():
                        le = 'le="' + _fmt_value(bound) + '"'
                        yield (f"{fam.name}_bucket{_fmt_labels(fam.label_names, values, le)} "
                               f"{n}")
                    lbl = _fmt_labels(fam.label_names, values)
                    yield f"{fam.name}_sum{lbl} {_fmt_value(child.sum)}"
                    yield f"{fam.name}_count{lbl} {child.count}"
                else:
                    yield (f"{fam.name}{_fmt_labels(fam.label_names, values)} "
                           f"{_fmt_value(child.get())}")

    def expose(self) -> str:
        """Every family in the Prometheus text exposition format."""
        return "".join(line + "\n" for line in self._lines())


REGISTRY: Final = Registry()
"""The process-wide registry the informers publish to."""

INFORMER_QUEUED_ITEMS: Final = Gauge(
    "informer_queued_items", "Number of items currently queued in the FIFO.", INFORMER_LABELS)
INFORMER_PROCESSING_LATENCY: Final = Histogram(
    "informer_processing_latency_seconds",
    "Time taken to process events after popping from the queue.", INFORMER_LABELS)
INFORMER_STORE_RESOURCE_VERSION: Final = Gauge(
    "informer_store_resource_version",
    "The 15 least significant digits of the resource version of the store.", INFORMER_LABELS)
INFORMER_PENDING_NOTIFICATIONS: Final = Gauge(
    "informer_pending_notifications",
    "Number of pending notifications in the processor listener ring buffer.",
    (*INFORMER_LABELS, "handler"))
for _family in (INFORMER_QUEUED_ITEMS, INFORMER_PROCESSING_LATENCY,
                INFORMER_STORE_RESOURCE_VERSION, INFORMER_PENDING_NOTIFICATIONS):
    REGISTRY.register(_family)


def resource_version_metric_value(resource_version: str | None) -> float:
    """The 15 least significant digits of a resourceVersion as a number (0 if not numeric)."""
    if not resource_version:
        return 0.0
    tail = resource_version[-15:]
    return float(int(tail)) if tail.isdigit() else 0.0


_reserved: set[tuple[str, str, str, str]] = set()
_reserved_lock = threading.Lock()


class InformerMetrics:
    """The metric children of one informer identity (name + group/version/resource).

    Obtain one with :meth:`reserve` when the informer starts; :meth:`release`
    it when the informer stops, which also drops its series.
    """

    __slots__ = ("_handlers", "labels", "processing_latency", "queued_items",
                 "store_resource_version")

    def __init__(self, labels: tuple[str, str, str, str]) -> None:
        self.labels = labels
        self.queued_items = INFORMER_QUEUED_ITEMS.labels(*labels)
        self.processing_latency = INFORMER_PROCESSING_LATENCY.labels(*labels)
        self.store_resource_version = INFORMER_STORE_RESOURCE_VERSION.labels(*labels)
        self._handlers: set[str] = set()

    @classmethod
    def reserve(cls, name: str, group: str, version: str, resource: str) -> InformerMetrics | None:
        """The metrics of this identity, or ``None`` if unnamed or already in use."""
        if not name:
            return None
        labels = (name, group, version, resource)
        with _reserved_lock:
            if labels in _reserved:
                return None
            _reserved.add(labels)
        return cls(labels)

    def pending_notifications(self, handler: str) -> GaugeChild:
        """The pending-notifications gauge of one handler of this informer."""
        self._handlers.add(handler)
        return INFORMER_PENDING_NOTIFICATIONS.labels(*self.labels, handler)

    def remove_handler(self, handler: str) -> None:
        self._handlers.discard(handler)
        INFORMER_PENDING_NOTIFICATIONS.remove(*self.labels, handler)

    def release(self) -> None:
        """Drop every series of this identity and free it for another informer."""
        for fam in (INFORMER_QUEUED_ITEMS, INFORMER_PROCESSING_LATENCY,
                    INFORMER_STORE_RESOURCE_VERSION):
            fam.remove(*self.labels)
        for handler in list(self._handlers):
            self.remove_handler(handler)
        with _reserved_lock:
            _reserved.discard(self.labels)


def register_with_prometheus(registry: Any = None) -> bool:
    """Expose :data:`REGISTRY` through ``prometheus_client`` (its default registry if None).

    Returns False, doing nothing, when ``prometheus_client`` is not installed.
    """
    try:
        # Imported by name: an optional dependency, untyped for mypy.
        prom: Any = importlib.import_module("prometheus_client")
        prom_core: Any = importlib.import_module("prometheus_client.core")
    except ImportError:
        return False
    GaugeMetricFamily = prom_core.GaugeMetricFamily
    HistogramMetricFamily = prom_core.HistogramMetricFamily

    class _Collector:
        def collect(self) -> Iterator[Any]:
            for fam in REGISTRY.families():
                if isinstance(fam, Histogram):
                    h = HistogramMetricFamily(fam.name, fam.documentation,
                                              labels=list(fam.label_names))
                    for values, child in fam.children():
                        h.add_metric(list(values),
                                     [(_fmt_value(b), n) for b, n in child.buckets()],
                                     child.sum)
                    yield h
                else:
                    g = GaugeMetricFamily(fam.name, fam.documentation,
                                          labels=list(fam.label_names))
                    for values, child in fam.children():
                        g.add_metric(list(values), child.get())
                    yield g

    (registry if registry is not None else prom.REGISTRY).register(_Collector())
    return True
