"""The process's own metrics, read in-process, and rates and percentiles over a window.

Role: the live view's numbers come from the same series the controller manager serves on
``/metrics`` (prometheus_client's default registry: ``workqueue_*``, ``rest_client_*``,
``leader_election_*``; pykcm's informer registry: ``informer_*``), read directly from the
registries, never over HTTP and never from the API server.

Data flow::

    read_samples() ── every tick ──► Window.push(t, samples)   (last ``span`` seconds kept)
                                        │
          rate(key) = Δvalue / Δt between the oldest kept reading and the newest
          histogram_delta(name, labels) = bucket counts observed within the window
          quantile(q, buckets)          = Prometheus' histogram_quantile (linear in a bucket)
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Final

from prometheus_client import REGISTRY as PROMETHEUS_REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from pykcm.cache.metrics import REGISTRY as PYKCM_REGISTRY

__all__ = ["Key", "Samples", "Window", "labels_of", "quantile", "read_samples"]

Key = tuple[str, tuple[tuple[str, str], ...]]
"""A sample: its name and its labels, sorted."""
Samples = dict[Key, float]

DEFAULT_SPAN: Final = 10.0


def _key(name: str, labels: Mapping[str, str]) -> Key:
    return (name, tuple(sorted(labels.items())))


def labels_of(key: Key) -> dict[str, str]:
    return dict(key[1])


def read_samples() -> Samples:
    """Every sample of the process's two metric registries, as the /metrics endpoint has
    them (counters as ``*_total``, histograms as ``*_bucket``/``*_count``/``*_sum``)."""
    out: Samples = {}
    for family in PROMETHEUS_REGISTRY.collect():
        for s in family.samples:
            out[_key(s.name, s.labels)] = float(s.value)
    for family in text_string_to_metric_families(PYKCM_REGISTRY.expose()):
        for s in family.samples:
            out[_key(s.name, s.labels)] = float(s.value)
    return out


class Window:
    """The readings of the last ``span`` seconds."""

    def __init__(self, span: float = DEFAULT_SPAN) -> None:
        self._span = span
        self._readings: deque[tuple[float, Samples]] = deque()

    def push(self, t: float, samples: Samples) -> None:
        self._readings.append((t, samples))
        while len(self._readings) > 2 and t - self._readings[1][0] >= self._span:
            self._readings.popleft()

    @property
    def latest(self) -> Samples:
        return self._readings[-1][1] if self._readings else {}

    def _ends(self) -> tuple[float, Samples, float, Samples] | None:
        if len(self._readings) < 2:
            return None
        (t0, s0), (t1, s1) = self._readings[0], self._readings[-1]
        return (t0, s0, t1, s1) if t1 > t0 else None

    def rate(self, key: Key) -> float:
        """Per second over the window; a counter reset (a new series) counts from 0."""
        ends = self._ends()
        if ends is None:
            return 0.0
        t0, s0, t1, s1 = ends
        now = s1.get(key, 0.0)
        before = s0.get(key, 0.0)
        return max(0.0, (now - before if now >= before else now) / (t1 - t0))

    def rate_sum(self, keys: Iterable[Key]) -> float:
        return sum(self.rate(k) for k in keys)

    def histogram_delta(self, name: str, labels: Mapping[str, str]) -> list[tuple[float, float]]:
        """``(le, cumulative count)`` of the observations within the window (all of them
        while there is a single reading)."""
        want = dict(labels)
        first = self._readings[0][1] if len(self._readings) > 1 else {}
        out: list[tuple[float, float]] = []
        for key, value in self.latest.items():
            if key[0] != name + "_bucket":
                continue
            lab = dict(key[1])
            le = lab.pop("le", None)
            if le is None or lab != want:
                continue
            out.append((float(le), value - first.get(key, 0.0)))
        out.sort()
        return out


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' ``histogram_quantile``: None with no observation; the upper bound of
    the highest finite bucket when the rank falls in ``+Inf``."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return prev_le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return prev_le
