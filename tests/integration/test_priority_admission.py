"""scheduling.k8s.io/v1 PriorityClasses and the Priority admission plugin on both API servers:
a globalDefault class gives pods without a class its name, value and preemption policy; a
second globalDefault class is refused with upstream's 403; the system classes cannot be
deleted. (Kept out of the differential corpus, whose cases run in parallel: a global
default would change the pods of every other case meanwhile.)
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.conftest import Api

CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def _pod(api: Api, ns: str, name: str, **spec: Any) -> tuple[int, Any]:
    return api.post(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "nginx"}], **spec}})


def test_global_default_class_and_only_one(apiserver_api: Api) -> None:
    api = apiserver_api
    ns = api.ns()
    name = "default-" + uuid.uuid4().hex[:8]
    code, body = api.post(CLASSES, {"metadata": {"name": name}, "value": 7, "globalDefault": True,
                                    "preemptionPolicy": "Never"})
    assert code == 201, body
    try:
        # kube-apiserver's plugin sees the new class through its informer, a moment later
        deadline = time.monotonic() + 10
        for i in range(1000):
            code, pod = _pod(api, ns, f"p{i}")
            assert code == 201, pod
            if pod["spec"].get("priorityClassName") == name or time.monotonic() > deadline:
                break
        assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"],
                pod["spec"]["preemptionPolicy"]) == (name, 7, "Never")
        code, body = api.post(CLASSES, {"metadata": {"name": "second-" + name}, "value": 8,
                                        "globalDefault": True})
        assert code == 403, body
        assert body["message"] == (
            f'priorityclasses.scheduling.k8s.io "second-{name}" is forbidden: PriorityClass '
            f"{name} is already marked as default. Only one default can exist")
        # the default class itself may be updated
        code, body = api.patch(f"{CLASSES}/{name}", {"description": "the default"})
        assert code == 200, body
    finally:
        code, body = api.delete(f"{CLASSES}/{name}")
        assert code == 200, body


def test_system_classes_exist_and_stay(apiserver_api: Api) -> None:
    api = apiserver_api
    for name, value in (("system-node-critical", 2000001000),
                        ("system-cluster-critical", 2000000000)):
        code, body = api.get(f"{CLASSES}/{name}")
        assert code == 200, body
        assert (body["value"], body["preemptionPolicy"], body.get("globalDefault")) == (
            value, "PreemptLowerPriority", None)
        code, body = api.delete(f"{CLASSES}/{name}")
        assert code == 403, body
        assert body["message"] == (f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: '
                                   "this is a system priority class and cannot be deleted")
