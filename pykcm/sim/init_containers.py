"""The initialization phase of a simulated pod: its init containers running.

Role: with ``sim.pykcm.io/init-seconds: S`` a pod with ordinary init
containers spends S seconds initializing before its containers start, as
the kubelet reports it: phase Pending, Initialized=False
(ContainersNotInitialized, ``containers with incomplete status: [...]``), the
first init container running and the others waiting (PodInitializing), the
containers waiting (PodInitializing); ``kubectl get pods`` shows
``Init:0/N``. Sidecars (restartPolicy Always) start with the first init
container and run on. After S seconds the init containers are terminated
(Completed, finishedAt the end of the phase) and the containers start
(:mod:`pykcm.sim.kubelet`).

Deviation: the init containers run as one (the first runs the whole phase,
the others wait for it), and they never fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from pykcm.api.pod_util import new_pod_condition
from pykcm.api.timestamps import format_time

__all__ = ["ANNOTATION_INIT_SECONDS", "init_phase_status"]

ANNOTATION_INIT_SECONDS: Final = "sim.pykcm.io/init-seconds"

ContainerIds = Callable[[str], str]


def init_phase_status(pod: Mapping[str, Any], host_ip: str, pod_ip: str, start: float,
                      now: float, container_id: ContainerIds,
                      image: Callable[[str], str], image_id: Callable[[str], str]
                      ) -> dict[str, Any]:
    """The Pending status while the init containers run (``container_id(name)``: the
    init container's ID; ``image``/``image_id``: as containerd reports them)."""
    spec = pod.get("spec") or {}
    old = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or ()}
    inits = list(spec.get("initContainers") or ())
    regular = [c for c in inits if c.get("restartPolicy") != "Always"]
    names = [c.get("name", "") for c in spec.get("containers") or ()]
    incomplete = [c.get("name", "") for c in regular]
    unready = f"containers with unready status: [{' '.join(names)}]"

    def cond(ctype: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
        return new_pod_condition(ctype, status, now, old.get(ctype), reason, message)

    conditions = [
        cond("PodReadyToStartContainers", "True"),
        cond("Initialized", "False", "ContainersNotInitialized",
             f"containers with incomplete status: [{' '.join(incomplete)}]"),
        cond("Ready", "False", "ContainersNotReady", unready),
        cond("ContainersReady", "False", "ContainersNotReady", unready),
        dict(old["PodScheduled"]) if "PodScheduled" in old else cond("PodScheduled", "True"),
    ]
    conditions += [dict(c) for t, c in old.items()
                   if t not in ("PodReadyToStartContainers", "Initialized", "Ready",
                                "ContainersReady", "PodScheduled")]
    started = format_time(start)
    first = regular[0].get("name") if regular else None
    init_statuses = []
    for c in inits:
        name, img = c.get("name", ""), c.get("image", "")
        running = name == first or c.get("restartPolicy") == "Always"
        status: dict[str, Any] = {
            "name": name, "image": image(img), "imageID": image_id(img) if running else "",
            "ready": False, "started": running, "restartCount": 0, "lastState": {},
            "state": {"running": {"startedAt": started}} if running
            else {"waiting": {"reason": "PodInitializing"}}}
        if running:
            status["containerID"] = container_id(name)
        init_statuses.append(status)
    statuses = [{"name": c.get("name", ""), "image": image(c.get("image", "")), "imageID": "",
                 "ready": False, "started": False, "restartCount": 0, "lastState": {},
                 "state": {"waiting": {"reason": "PodInitializing"}}}
                for c in spec.get("containers") or ()]
    return {"phase": "Pending", "conditions": conditions, "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
            "startTime": started, "initContainerStatuses": init_statuses,
            "containerStatuses": statuses}
