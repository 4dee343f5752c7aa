"""EndpointSliceController.sync_service waits briefly for its own slice writes to reach the cache.

On fake informers; the reconciler is replaced by a recorder. A cache that
catches up within STALE_CACHE_WAIT gives a normal sync on the fresh slices; one
that does not gives upstream's StaleInformerCache (the queue's 1 s backoff).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

import pytest

from pykcm.api.endpoints import LABEL_MANAGED_BY, LABEL_SERVICE_NAME
from pykcm.controllers.endpointslice.endpointslice_controller import (
    CONTROLLER_NAME,
    STALE_CACHE_WAIT,
    EndpointSliceController,
    StaleInformerCache,
)
from tests.unit.fake_informer import FakeInformer


def eslice(generation: int) -> dict[str, Any]:
    return {"metadata": {"name": "web-abc", "namespace": "ns", "uid": "u1",
                         "generation": generation,
                         "labels": {LABEL_SERVICE_NAME: "web",
                                    LABEL_MANAGED_BY: CONTROLLER_NAME}},
            "addressType": "IPv4", "endpoints": []}


def controller() -> tuple[EndpointSliceController, FakeInformer, list[list[Any]]]:
    inf = {r: FakeInformer(r) for r in ("pods", "services", "nodes", "endpointslices")}
    ctrl = EndpointSliceController(
        client=cast(Any, None), pod_informer=cast(Any, inf["pods"]),
        service_informer=cast(Any, inf["services"]), node_informer=cast(Any, inf["nodes"]),
        endpointslice_informer=cast(Any, inf["endpointslices"]))
    inf["services"].indexer.add({"metadata": {"name": "web", "namespace": "ns"},
                                 "spec": {"selector": {"app": "web"}}})
    seen: list[list[Any]] = []

    async def reconcile(svc: Mapping[str, Any], pods: list[Any], slices: list[Any],
                        trigger: Any) -> None:
        seen.append(slices)

    ctrl.reconciler.reconcile = reconcile  # type: ignore[method-assign, assignment]
    inf["endpointslices"].indexer.add(eslice(1))
    ctrl.tracker.update(eslice(2))  # we wrote generation 2; the cache still has 1
    return ctrl, inf["endpointslices"], seen


async def test_a_cache_that_catches_up_in_time_syncs_on_the_fresh_slices() -> None:
    ctrl, slices, seen = controller()

    async def deliver() -> None:
        await asyncio.sleep(STALE_CACHE_WAIT / 5)
        slices.indexer.update(eslice(2))

    task = asyncio.ensure_future(deliver())
    await ctrl.sync_service("ns/web")
    await task
    assert [[s["metadata"]["generation"] for s in ss] for ss in seen] == [[2]]


async def test_a_cache_that_stays_behind_fails_as_upstream() -> None:
    ctrl, _, seen = controller()
    with pytest.raises(StaleInformerCache):
        await ctrl.sync_service("ns/web")
    assert seen == []
