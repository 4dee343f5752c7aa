"""EndpointController.sync_service waits briefly for its own Endpoints write to reach the cache.

On fake informers and a recording client. After a PUT that moved the
resourceVersion, a sync that reads the replaced version waits up to
STALE_CACHE_WAIT: a cache that catches up gives a normal sync on the fresh
object (here: nothing to write), one that does not gives upstream's
"endpoints informer cache is out of date" error (retried by the queue).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any, cast

import pytest

from pykcm.controllers.endpoint.endpoints_controller import STALE_CACHE_WAIT, EndpointController
from tests.unit.fake_informer import FakeInformer


class Client:
    """PUT answers with the next resourceVersion."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    async def update(self, resource: str, body: Mapping[str, Any], namespace: str) -> Any:
        obj = copy.deepcopy(dict(body))
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        self.updates.append(obj)
        return obj


def pod(ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": "a", "namespace": "ns", "uid": "ua", "resourceVersion": "1",
                         "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [
                {"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


def setup() -> tuple[EndpointController, dict[str, FakeInformer], Client]:
    inf = {r: FakeInformer(r) for r in ("pods", "services", "endpoints")}
    client = Client()
    ctrl = EndpointController(client=cast(Any, client), pod_informer=cast(Any, inf["pods"]),
                              service_informer=cast(Any, inf["services"]),
                              endpoints_informer=cast(Any, inf["endpoints"]))
    inf["services"].indexer.add({"metadata": {"name": "web", "namespace": "ns",
                                              "resourceVersion": "1",
                                              "creationTimestamp": "2026-01-01T00:00:00Z"},
                                 "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.1",
                                          "ports": [{"name": "http", "port": 80,
                                                     "targetPort": "http",
                                                     "protocol": "TCP"}]}})
    inf["endpoints"].indexer.add({"metadata": {"name": "web", "namespace": "ns",
                                               "resourceVersion": "5"}})
    inf["pods"].indexer.add(pod(True))
    return ctrl, inf, client


async def _written_once() -> tuple[EndpointController, dict[str, FakeInformer], Client]:
    ctrl, inf, client = setup()
    await ctrl.sync_service("ns/web")  # PUT: resourceVersion 5 -> 6; the cache keeps 5
    assert [u["metadata"]["resourceVersion"] for u in client.updates] == ["6"]
    return ctrl, inf, client


async def test_a_cache_that_catches_up_in_time_syncs_on_the_fresh_object() -> None:
    ctrl, inf, client = await _written_once()

    async def deliver() -> None:
        await asyncio.sleep(STALE_CACHE_WAIT / 5)
        inf["endpoints"].indexer.update(client.updates[-1])

    task = asyncio.ensure_future(deliver())
    await ctrl.sync_service("ns/web")  # waits, then finds the cache equal: no write
    await task
    assert len(client.updates) == 1


async def test_a_cache_that_stays_behind_fails_as_upstream() -> None:
    ctrl, _, client = await _written_once()
    with pytest.raises(RuntimeError, match="endpoints informer cache is out of date, "
                       "resource version 5 already processed for endpoints ns/web"):
        await ctrl.sync_service("ns/web")
    assert len(client.updates) == 1
