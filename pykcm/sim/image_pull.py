"""Scripted image pull failures: ErrImagePull and ImagePullBackOff.

Role: ``sim.pykcm.io/image-pull-error`` on a pod makes every pull of its
containers' images fail, as the kubelet reports it: the pod stays Pending
(its sandbox up: PodReadyToStartContainers True, a pod IP), its containers
waiting with reason ``ErrImagePull`` (the runtime's error as message) right
after an attempt, then ``ImagePullBackOff`` (``Back-off pulling image "X":
ErrImagePull: ...``) until the next attempt, attempts spaced by the
kubelet's image back-off (10 s doubling to 5 min, the same
flowcontrol.Backoff as :mod:`pykcm.sim.crash_backoff`). Events per
attempt: Normal ``Pulling``, Warning ``Failed`` ``Failed to pull image "X":
...``, Warning ``Failed`` ``Error: ErrImagePull``; per wait: Normal
``BackOff`` ``Back-off pulling image "X"``, Warning ``Failed`` ``Error:
ImagePullBackOff``. Removing the annotation lets the next attempt succeed.

The annotation's value is the error message; ``not-found`` (or ``true``)
stands for containerd's answer for a missing image.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.pod_util import new_pod_condition
from pykcm.sim.volumes import waiting_status

__all__ = [
    "ANNOTATION_IMAGE_PULL_ERROR",
    "image_pull_error",
    "pull_error_message",
    "pull_failure_status",
]

ANNOTATION_IMAGE_PULL_ERROR: Final = "sim.pykcm.io/image-pull-error"


def image_pull_error(pod: Mapping[str, Any]) -> str | None:
    """The scripted pull error (the annotation's value), or None."""
    v = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_IMAGE_PULL_ERROR)
    return str(v) if v else None


def pull_error_message(scripted: str, image: str, normalized: str) -> str:
    """The runtime's error for a failed pull of ``image``."""
    del image
    if scripted.strip().lower() in ("true", "not-found"):
        return (f'rpc error: code = NotFound desc = failed to pull and unpack image '
                f'"{normalized}": failed to resolve reference "{normalized}": {normalized}: '
                f'not found')
    return scripted


def pull_failure_status(pod: Mapping[str, Any], host_ip: str, pod_ip: str, now: float,
                        start: float, waiting: Mapping[str, Mapping[str, str]]
                        ) -> dict[str, Any]:
    """The Pending status with each container's ``waiting`` state (by name)."""
    status = waiting_status(pod, host_ip, now, start)
    old = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or ()}
    status["conditions"] = [
        new_pod_condition("PodReadyToStartContainers", "True", now,
                          old.get("PodReadyToStartContainers"))
        if c.get("type") == "PodReadyToStartContainers" else c
        for c in status["conditions"]]
    status["podIP"] = pod_ip
    status["podIPs"] = [{"ip": pod_ip}]
    for cs in status["containerStatuses"]:
        w = waiting.get(cs["name"])
        if w is not None:
            cs["state"] = {"waiting": dict(w)}
    return status
