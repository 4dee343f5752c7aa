"""Graceful termination of a simulated pod: when its containers stop, and how.

Role: kube-apiserver's graceful DELETE of a bound pod only sets
``deletionTimestamp`` and ``deletionGracePeriodSeconds``; the kubelet's pod
worker then kills the containers (SIGTERM, SIGKILL after the grace period),
writes the pod's final status with a terminal phase, and deletes the pod with
grace 0 and a UID precondition. This module plans the "kill" part for one
pod; :class:`pykcm.sim.kubelet.Kubelet` carries it out.

The plan, from when the kubelet first sees the pod terminating:

- the containers run on (and stay ready: Ready while terminating is what
  EndpointSlices' ``serving``/``terminating`` conditions report) until they stop;
- by default they ignore SIGTERM, like a shell or ``sleep`` as PID 1: they are
  killed when the grace period ends (the kubelet never waits less than 2 s,
  its minimumGracePeriodInSeconds), exit code 137, reason Error;
- ``sim.pykcm.io/termination-seconds: S`` (S shorter than the grace period):
  they exit by themselves S seconds after SIGTERM, with
  ``sim.pykcm.io/termination-exit-code`` (default 0, a clean shutdown);
- the phase then becomes terminal as the v1.36 kubelet sets it for a
  deleted pod, whatever the restartPolicy: Succeeded when every container
  exited 0, else Failed.

``max_grace_period`` (``pykcm sim/up --max-grace-period``) caps the grace
period of pods without the annotation: the test harnesses run with 0 so
their suites do not wait 30 s per deleted pod.

A later DELETE with a shorter grace period (``kubectl delete --grace-period``)
shortens the plan: it is computed anew from the pod's current
``deletionGracePeriodSeconds`` at each sync, counted from the same start.

Deliberate simplifications: all containers of a pod stop together (upstream
stops sidecars after the main containers), preStop hooks are not run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ANNOTATION_TERMINATION_EXIT_CODE", "ANNOTATION_TERMINATION_SECONDS",
           "KILLED_EXIT_CODE", "MINIMUM_GRACE_PERIOD", "StopPlan", "grace_period",
           "plan_stop"]

ANNOTATION_TERMINATION_SECONDS: Final = "sim.pykcm.io/termination-seconds"
ANNOTATION_TERMINATION_EXIT_CODE: Final = "sim.pykcm.io/termination-exit-code"
KILLED_EXIT_CODE: Final = 137
"""128 + SIGKILL, as containerd reports a killed container."""
MINIMUM_GRACE_PERIOD: Final = 2.0
"""The kubelet's minimumGracePeriodInSeconds when it kills a container."""
DEFAULT_GRACE_PERIOD: Final = 30


@dataclass(frozen=True, slots=True)
class StopPlan:
    """When a terminating pod's containers stop, and their exit code."""

    at: float
    exit_code: int


def grace_period(pod: Mapping[str, Any]) -> float:
    """The grace period the kubelet kills with: the DELETE's, else the pod's own."""
    meta = pod.get("metadata") or {}
    grace = meta.get("deletionGracePeriodSeconds")
    if grace is None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    if grace is None:
        grace = DEFAULT_GRACE_PERIOD
    try:
        return max(0.0, float(grace))
    except (TypeError, ValueError):
        return float(DEFAULT_GRACE_PERIOD)


def _seconds(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and f >= 0 else None


def plan_stop(pod: Mapping[str, Any], since: float,
              max_grace_period: float | None = None) -> StopPlan:
    """The stop of a pod the kubelet saw terminating at ``since``.

    ``max_grace_period`` (None: no cap) shortens the kill of pods without the
    annotation, a time compression for test suites (0: killed at once, as the
    simulator did before it simulated termination).
    """
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    own = _seconds(ann.get(ANNOTATION_TERMINATION_SECONDS))
    kill_after = max(grace_period(pod), MINIMUM_GRACE_PERIOD)
    if own is None and max_grace_period is not None:
        kill_after = min(kill_after, max(0.0, max_grace_period))
    if own is not None and own < kill_after:
        try:
            code = int(str(ann.get(ANNOTATION_TERMINATION_EXIT_CODE, "0")).strip())
        except ValueError:
            code = 0
        return StopPlan(since + own, code & 0xFF if code >= 0 else 1)
    return StopPlan(since + kill_after, KILLED_EXIT_CODE)
