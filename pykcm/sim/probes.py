"""Scripted probe outcomes of a simulated pod: liveness kills, readiness failures.

Role: the kubelet's prober, reduced to what the pod's annotations script. A
probe only exists where the container spec declares it; the annotation then
says how it fares:

- ``sim.pykcm.io/liveness-fails-after-seconds: S`` (containers with a
  ``livenessProbe``): from S seconds after each start the probe fails; after
  ``failureThreshold`` consecutive failures (``periodSeconds`` apart, upstream
  defaults 3 and 10 s) the kubelet kills the container (exit code 137,
  reason Error) and restarts it under the pod's restartPolicy (with the
  CrashLoopBackOff of :mod:`pykcm.sim.crash_backoff`). Events: Warning
  ``Unhealthy`` ``Liveness probe failed: ...`` and Normal ``Killing``
  ``Container C failed liveness probe, will be restarted``.
- ``sim.pykcm.io/readiness-fails: "true"`` (containers with a
  ``readinessProbe``): the container never becomes ready (as
  ``sim.pykcm.io/never-ready``) and the kubelet reports a Warning
  ``Unhealthy`` ``Readiness probe failed: ...``.

The failure text is what the kubelet's probers print for the probe's kind
(``HTTP probe failed with statuscode: 500``, a refused TCP dial, an exec
probe's exit); ``sim.pykcm.io/probe-output`` replaces it.

Deviation: the probe's initialDelaySeconds is not waited for (the annotation's
S is the whole delay), and one Unhealthy event stands for the repeated ones
(the event correlator's aggregation would count them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["ANNOTATION_LIVENESS_FAILS_AFTER", "ANNOTATION_PROBE_OUTPUT",
           "ANNOTATION_READINESS_FAILS", "LIVENESS_KILL_EXIT_CODE", "liveness_kill_after",
           "probe_failure_message", "readiness_fails"]

ANNOTATION_LIVENESS_FAILS_AFTER: Final = "sim.pykcm.io/liveness-fails-after-seconds"
ANNOTATION_READINESS_FAILS: Final = "sim.pykcm.io/readiness-fails"
ANNOTATION_PROBE_OUTPUT: Final = "sim.pykcm.io/probe-output"
LIVENESS_KILL_EXIT_CODE: Final = 137


def _ann(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def _probed(pod: Mapping[str, Any], probe: str) -> list[Mapping[str, Any]]:
    return [c for c in (pod.get("spec") or {}).get("containers") or () if c.get(probe)]


def liveness_kill_after(pod: Mapping[str, Any]) -> float | None:
    """Seconds after a start at which a failing liveness probe kills the containers."""
    probed = _probed(pod, "livenessProbe")
    if not probed:
        return None
    try:
        fails = float(_ann(pod).get(ANNOTATION_LIVENESS_FAILS_AFTER, ""))
    except (TypeError, ValueError):
        return None
    if not math.isfinite(fails) or fails < 0:
        return None
    probe = probed[0]["livenessProbe"]
    threshold = int(probe.get("failureThreshold") or 3)
    period = float(probe.get("periodSeconds") or 10)
    return fails + max(0, threshold - 1) * period


def readiness_fails(pod: Mapping[str, Any]) -> bool:
    return bool(_probed(pod, "readinessProbe")) and str(
        _ann(pod).get(ANNOTATION_READINESS_FAILS, "")).strip().lower() in ("true", "1", "yes")


def probe_failure_message(pod: Mapping[str, Any], probe: Mapping[str, Any],
                          pod_ip: str) -> str:
    """What the kubelet's prober reports for a failing ``probe``."""
    own = _ann(pod).get(ANNOTATION_PROBE_OUTPUT)
    if own:
        return str(own)
    if probe.get("httpGet"):
        return "HTTP probe failed with statuscode: 500"
    if probe.get("tcpSocket"):
        port = (probe.get("tcpSocket") or {}).get("port", "")
        return f"dial tcp {pod_ip}:{port}: connect: connection refused"
    if probe.get("grpc"):
        return "timeout: failed to connect service within 1s"
    return "command terminated with non-zero exit code"
