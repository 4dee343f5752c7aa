"""The DaemonSet and StatefulSet controllers' consistency store wiring (KEP-5647, on in
v1.36): their own writes (pods, claims, status) are recorded per owner, and a sync
waits until the caches have seen them. Without it the sync after a status write
computed the next status from the older cached object and its PUT failed with 409.

A fake client stands in for the API server; the caches' resourceVersions are plain
values the test advances."""

from __future__ import annotations

from typing import Any

import pytest

from pykcm.controller.consistency import ConsistencyError, ConsistencyStore
from pykcm.controllers.daemon.daemon_controller import DS_GROUP_RESOURCE, DaemonSetsController
from pykcm.controllers.statefulset.stateful_pod_control import StatefulPodControl
from pykcm.controllers.statefulset.stateful_set_control import DefaultStatefulSetControl
from pykcm.controllers.statefulset.stateful_set_utils import (
    SET_GROUP_RESOURCE,
    new_stateful_set_pod,
)


class FakeClient:
    """Answers writes with the object at the next resourceVersion; counts the calls."""

    def __init__(self) -> None:
        self.rv = 100
        self.calls: list[tuple[str, str]] = []

    def _written(self, verb: str, resource: Any, body: Any) -> dict[str, Any]:
        self.rv += 1
        self.calls.append((verb, str(resource)))
        out = dict(body)
        out["metadata"] = {**body.get("metadata", {}), "resourceVersion": str(self.rv)}
        return out

    async def create(self, resource: Any, body: Any, namespace: Any = None, **_: Any) -> Any:
        return self._written("create", resource, body)

    async def update(self, resource: Any, body: Any, namespace: Any = None, **_: Any) -> Any:
        return self._written("update", resource, body)

    async def update_status(self, resource: Any, body: Any, namespace: Any = None,
                            **_: Any) -> Any:
        return self._written("update_status", resource, body)


class Recorder:
    def event(self, *args: Any) -> None:
        pass


class Caches:
    def __init__(self) -> None:
        self.rv: dict[str, str] = {}

    def getter(self, resource: str) -> Any:
        return lambda: self.rv.get(resource, "1")


def owner(kind_spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 1,
                         "resourceVersion": "50"},
            "spec": kind_spec, "status": {}}


async def test_statefulset_pod_create_waits_for_the_pod_cache() -> None:
    caches, client = Caches(), FakeClient()
    store = ConsistencyStore({"pods": caches.getter("pods")})
    control = StatefulPodControl(client, None, None, Recorder(), store)  # type: ignore[arg-type]
    set_ = owner({"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                  "template": {"metadata": {"labels": {"a": "b"}}, "spec": {}}})
    pod = new_stateful_set_pod(set_, 0)
    store.ensure_ready("ns/web")
    await control.create_stateful_pod(set_, pod)
    with pytest.raises(ConsistencyError):
        store.ensure_ready("ns/web")
    caches.rv["pods"] = str(client.rv)
    store.ensure_ready("ns/web")


async def test_statefulset_status_write_waits_for_the_set_cache() -> None:
    caches, client = Caches(), FakeClient()
    store = ConsistencyStore({SET_GROUP_RESOURCE: caches.getter(SET_GROUP_RESOURCE)})
    control = DefaultStatefulSetControl(None, client, None, None,  # type: ignore[arg-type]
                                        consistency=store)
    set_ = owner({"replicas": 1})
    await control.update_stateful_set_status(set_, {"replicas": 1, "observedGeneration": 1})
    assert client.calls == [("update_status", "statefulsets")]
    with pytest.raises(ConsistencyError):
        store.ensure_ready("ns/web")
    caches.rv[SET_GROUP_RESOURCE] = str(client.rv)
    store.ensure_ready("ns/web")


async def test_daemonset_status_write_returns_the_written_object_or_none() -> None:
    client = FakeClient()
    ctl: Any = DaemonSetsController.__new__(DaemonSetsController)
    ctl.client = client
    counts = {"desiredNumberScheduled": 2, "currentNumberScheduled": 2}
    ds = owner({})
    written = await DaemonSetsController._store_status(ctl, ds, counts, True)
    assert written is not None
    assert written["metadata"]["resourceVersion"] == str(client.rv)
    assert written["status"]["observedGeneration"] == 1
    # The cached status already holds the counts: no request, nothing to wait for.
    again = await DaemonSetsController._store_status(ctl, written, counts, True)
    assert again is None
    assert client.calls == [("update_status", "daemonsets")]
    assert DS_GROUP_RESOURCE == "daemonsets.apps"
