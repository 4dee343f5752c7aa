"""From a metric proposal to the replica count the HPA sets (kube-controller-manager v1.36
``horizontal.go``: stabilizeRecommendation, normalizeDesiredReplicas(WithBehaviors),
convertDesiredReplicasWith(Rules|BehaviorRate), storeScaleEvent).

Role: the memory of one HPA controller, per HPA key: the recent recommendations (for the
stabilization windows) and the recent scale events (for the rate policies), and the
decisions made from them. Each decision also says which AbleToScale and ScalingLimited
condition it implies (reason, message), for the controller to set.

- without ``spec.behavior``: the highest recommendation within
  ``--horizontal-pod-autoscaler-downscale-stabilization`` (5 min) wins; scale up is
  limited to max(2 × current, 4) (``ScaleUpLimit``), then ``minReplicas``/``maxReplicas``
  (``TooFewReplicas``/``TooManyReplicas``);
- with a behavior: the scale-up window takes the lowest and the scale-down window the
  highest recommendation in it (a scale-down window left unset is the flag's); the rate
  is the policies' limit over their period from the events in it (``selectPolicy`` Max,
  Min or Disabled), then the min/max replicas.

The clock is injected (``now``) so tests need not wait out the windows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["Decision", "Normalizer"]

SCALE_UP_LIMIT_FACTOR: Final = 2.0
SCALE_UP_LIMIT_MINIMUM: Final = 4.0
MIN_INT32: Final = -(2**31)
MAX_INT32: Final = 2**31 - 1


@dataclass(slots=True)
class _Recommendation:
    replicas: int
    timestamp: float


@dataclass(slots=True)
class _ScaleEvent:
    change: int
    timestamp: float
    outdated: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """The normalized replica count and the conditions it implies."""

    replicas: int
    able_reason: str
    able_message: str
    limited: bool
    limited_reason: str
    limited_message: str


@dataclass(slots=True)
class Normalizer:
    downscale_stabilization: float = 300.0
    now: Callable[[], float] = field(default=lambda: 0.0)
    recommendations: dict[str, list[_Recommendation]] = field(default_factory=dict)
    scale_up_events: dict[str, list[_ScaleEvent]] = field(default_factory=dict)
    scale_down_events: dict[str, list[_ScaleEvent]] = field(default_factory=dict)

    def forget(self, key: str) -> None:
        self.recommendations.pop(key, None)
        self.scale_up_events.pop(key, None)
        self.scale_down_events.pop(key, None)

    def record_initial(self, key: str, current: int) -> None:
        """recordInitialRecommendation: the first sync remembers the current count."""
        if not self.recommendations.get(key):
            self.recommendations[key] = [_Recommendation(current, self.now())]

    def _store(self, key: str, replicas: int, replace: int | None) -> None:
        rec = _Recommendation(replicas, self.now())
        if replace is not None:
            self.recommendations[key][replace] = rec
        else:
            self.recommendations.setdefault(key, []).append(rec)

    # -- without behavior ------------------------------------------------------------

    def normalize(self, key: str, current: int, desired: int, min_replicas: int,
                  max_replicas: int) -> Decision:
        now = self.now()
        cutoff = now - self.downscale_stabilization
        stabilized, old = desired, None
        for i, rec in enumerate(self.recommendations.get(key, [])):
            if rec.timestamp < cutoff:
                old = i
            elif rec.replicas > stabilized:
                stabilized = rec.replicas
        self._store(key, desired, old)
        if stabilized != desired:
            able = ("ScaleDownStabilized", ("recent recommendations were higher than current "
                    "one, applying the highest recent recommendation"))
        else:
            able = ("ReadyForNewScale", "recommended size matches current size")
        scale_up_limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
        if max_replicas > scale_up_limit:
            maximum, reason = scale_up_limit, (
                "ScaleUpLimit", ("the desired replica count is increasing faster than the "
                "maximum scale rate"))
        else:
            maximum, reason = max_replicas, (
                "TooManyReplicas", ("the desired replica count is more than the maximum "
                "replica count"))
        if stabilized < min_replicas:
            out, reason = min_replicas, (
                "TooFewReplicas", ("the desired replica count is less than the minimum "
                "replica count"))
        elif stabilized > maximum:
            out = maximum
        else:
            out, reason = stabilized, ("DesiredWithinRange",
                                       "the desired count is within the acceptable range")
        return Decision(out, *able, out != stabilized, *reason)

    # -- with behavior ---------------------------------------------------------------

    def normalize_with_behaviors(self, key: str, current: int, desired: int,
                                 min_replicas: int, max_replicas: int,
                                 behavior: Mapping[str, Any]) -> Decision:
        up = behavior.get("scaleUp") or {}
        down = dict(behavior.get("scaleDown") or {})
        if down.get("stabilizationWindowSeconds") is None:
            down["stabilizationWindowSeconds"] = int(self.downscale_stabilization)
        now = self.now()
        up_cutoff = now - int(up.get("stabilizationWindowSeconds") or 0)
        down_cutoff = now - int(down.get("stabilizationWindowSeconds") or 0)
        up_rec = down_rec = desired
        old = None
        for i, rec in enumerate(self.recommendations.get(key, [])):
            if rec.timestamp > up_cutoff:
                up_rec = min(rec.replicas, up_rec)
            if rec.timestamp > down_cutoff:
                down_rec = max(rec.replicas, down_rec)
            if rec.timestamp < up_cutoff and rec.timestamp < down_cutoff:
                old = i
        stabilized = max(current, up_rec)
        stabilized = min(stabilized, down_rec)
        self._store(key, desired, old)
        if stabilized != desired:
            if desired >= current:
                able = ("ScaleUpStabilized", ("recent recommendations were lower than current "
                        "one, applying the lowest recent recommendation"))
            else:
                able = ("ScaleDownStabilized", ("recent recommendations were higher than "
                        "current one, applying the highest recent recommendation"))
        else:
            able = ("ReadyForNewScale", "recommended size matches current size")
        out, reason = self._rate(key, current, stabilized, min_replicas, max_replicas, up, down)
        return Decision(out, *able, out != stabilized, *reason)

    def _changes(self, events: list[_ScaleEvent], period: int) -> int:
        cutoff = self.now() - period
        return sum(e.change for e in events if e.timestamp > cutoff)

    def _limit(self, key: str, current: int, rules: Mapping[str, Any], up: bool) -> int:
        select = rules.get("selectPolicy") or "Max"
        if select == "Disabled":
            return current
        # Max picks the largest change: the highest count up, the lowest count down
        pick_high = (select != "Min") == up
        result = MIN_INT32 if pick_high else MAX_INT32
        ups = self.scale_up_events.get(key, [])
        downs = self.scale_down_events.get(key, [])
        for p in rules.get("policies") or []:
            period = int(p.get("periodSeconds") or 0)
            start = current - self._changes(ups, period) + self._changes(downs, period)
            value = int(p.get("value") or 0)
            if p.get("type") == "Pods":
                proposed = start + value if up else start - value
            elif up:
                proposed = math.ceil(start * (1 + value / 100))
            else:
                proposed = int(start * (1 - value / 100))
            result = max(result, proposed) if pick_high else min(result, proposed)
        return result

    def _rate(self, key: str, current: int, desired: int, min_replicas: int,
              max_replicas: int, up: Mapping[str, Any], down: Mapping[str, Any]
              ) -> tuple[int, tuple[str, str]]:
        if desired > current:
            limit = max(self._limit(key, current, up, True), current)
            if max_replicas > limit:
                maximum, reason = limit, ("ScaleUpLimit", ("the desired replica count is "
                                          "increasing faster than the maximum scale rate"))
            else:
                maximum, reason = max_replicas, ("TooManyReplicas", ("the desired replica count "
                                                 "is more than the maximum replica count"))
            if desired > maximum:
                return maximum, reason
        elif desired < current:
            limit = min(self._limit(key, current, down, False), current)
            if min_replicas < limit:
                minimum, reason = limit, ("ScaleDownLimit", ("the desired replica count is "
                                          "decreasing faster than the maximum scale rate"))
            else:
                minimum, reason = min_replicas, ("TooFewReplicas", ("the desired replica count "
                                                 "is less than the minimum replica count"))
            if desired < minimum:
                return minimum, reason
        return desired, ("DesiredWithinRange", "the desired count is within the acceptable range")

    def store_scale_event(self, key: str, behavior: Mapping[str, Any] | None, previous: int,
                          new: int) -> None:
        """storeScaleEvent: remember a rescale for the rate policies (behavior only)."""
        if behavior is None:
            return
        up = new > previous
        rules = behavior.get("scaleUp" if up else "scaleDown") or {}
        longest = max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or []),
                      default=0)
        events = (self.scale_up_events if up else self.scale_down_events).setdefault(key, [])
        cutoff = self.now() - longest
        old = None
        for i, e in enumerate(events):
            if e.timestamp < cutoff:
                e.outdated = True
            if e.outdated:
                old = i
        event = _ScaleEvent(abs(new - previous), self.now())
        if old is not None:
            events[old] = event
        else:
            events.append(event)
