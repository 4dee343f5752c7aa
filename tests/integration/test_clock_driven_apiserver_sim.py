"""The clock seam of the API server and of the simulator (issue 21, step 2): each runs on a
FakeClock handed to its constructor, and what it writes or waits on follows that clock,
not the wall clock.

- ``APIServer(clock=)``: creationTimestamp and managedFields times, a graceful deletion's
  deletionTimestamp (now + grace period: pykcm's server, as kube-apiserver, does not
  remove a pod itself; its kubelet does when the period ends), a TokenRequest's
  expiration, the table's Age column, and a watch's timeoutSeconds all read the fake
  clock; a watch of an hour ends as soon as the test advances the clock an hour.
- ``Simulator(clock=)``: a pod's startTime is the fake clock's, and the kubelet marks it
  Ready only once the test advances the clock by its ready-after-seconds (the kubelet's
  requeue is a timer of that clock: one second short of it, the pod stays unready).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest

from pykcm.api.clock import FakeClock
from pykcm.api.pod_util import get_pod_condition, is_pod_ready
from pykcm.api.timestamps import format_time
from pykcm.apiserver.endpoints.server import APIServer
from pykcm.client import Client, load_kube_config
from pykcm.sim import Simulator
from pykcm.testing.server_thread import ServerThread
from tests.conftest import ensure_default_service_account
from tests.polling import eventually

# The fake wall line starts on a whole second, so stamps (seconds) are exact.
WALL = 1_767_225_600.0  # 2026-01-01T00:00:00Z
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _pod(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}


@pytest.fixture
async def fake_server() -> AsyncIterator[tuple[APIServer, FakeClock, Client]]:
    """pykcm's API server in the test's own loop (the FakeClock fires its timers in the
    caller's thread), on a FakeClock."""
    clock = FakeClock(wall=WALL)
    server = APIServer(tls=False, clock=clock)
    await server.start()
    try:
        async with Client(load_kube_config(server.kubeconfig_path)) as client:
            await ensure_default_service_account(client, "default")
            yield server, clock, client
    finally:
        await server.stop()


async def test_the_api_server_stamps_and_deletes_on_its_clock(
        fake_server: tuple[APIServer, FakeClock, Client]) -> None:
    _, clock, client = fake_server
    clock.advance(100)
    created_at = clock.now()
    # bound to a node: a pod that never was is deleted at once, whatever its grace period
    pod = await client.create("pods", {**_pod("p"), "spec": {
        **_pod("p")["spec"], "nodeName": "n1"}}, "default")
    assert pod["metadata"]["creationTimestamp"] == format_time(created_at)
    assert [m["time"] for m in pod["metadata"]["managedFields"]] == [format_time(created_at)]

    # Age, as kubectl get shows it: from the clock, not the wall
    clock.advance(3600)
    table = orjson.loads(await client.list_raw("pods", "default", accept=TABLE))
    age = [c["name"] for c in table["columnDefinitions"]].index("Age")
    assert [r["cells"][age] for r in table["rows"]] == ["60m"]

    # A graceful deletion: marked with deadline now + 30 on the clock, still there
    deleted = await client.delete("pods", "p", "default", grace_period_seconds=30)
    assert deleted["metadata"]["deletionTimestamp"] == format_time(clock.now() + 30)
    assert deleted["metadata"]["deletionGracePeriodSeconds"] == 30
    clock.advance(30)
    still = await client.get("pods", "p", "default")
    assert still["metadata"]["deletionTimestamp"] == deleted["metadata"]["deletionTimestamp"]


async def test_a_token_request_expires_on_the_servers_clock(
        fake_server: tuple[APIServer, FakeClock, Client]) -> None:
    _, clock, client = fake_server
    clock.advance(7)
    answer = await client.create("serviceaccounts", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "metadata": {"name": "default"}, "spec": {"expirationSeconds": 3600}}, "default",
        subresource="token")
    assert answer["status"]["expirationTimestamp"] == format_time(clock.now() + 3600)


async def test_a_watch_ends_when_the_clock_reaches_its_timeout(
        fake_server: tuple[APIServer, FakeClock, Client]) -> None:
    _, clock, client = fake_server
    events: list[str] = []

    async def consume() -> None:
        async for ev_type, _obj in client.watch("configmaps", "default", timeout_seconds=3600):
            events.append(ev_type)

    task = asyncio.create_task(consume())
    await client.create("configmaps", {"metadata": {"name": "c1"}}, "default")
    await eventually(lambda: "ADDED" in events, what="the watch delivering ADDED")
    assert not task.done()  # an hour on the clock has not passed
    clock.advance(3600)
    await asyncio.wait_for(task, 30)  # bounds a hang only: the watch ended by itself
    assert events.count("ADDED") >= 1


async def test_a_simulated_kubelet_marks_a_pod_ready_after_advance(
        pykcm_apiserver_factory: Callable[..., ServerThread]) -> None:
    st = pykcm_apiserver_factory()
    clock = FakeClock(wall=WALL)
    async with Client(load_kube_config(st.kubeconfig_path)) as client:
        await ensure_default_service_account(client, "default")
        sim = Simulator(client, nodes=1, node_prefix="fake", max_grace_period=0, clock=clock)
        await sim.start()
        try:
            start = clock.now()
            await client.create("pods", _pod("late", {
                "sim.pykcm.io/ready-after-seconds": "30"}), "default")

            async def running() -> dict[str, Any] | None:
                p = await client.get("pods", "late", "default")
                return p if (p.get("status") or {}).get("phase") == "Running" else None

            pod = await eventually(running, what="the pod Running")
            assert pod["status"]["startTime"] == format_time(start)
            assert not is_pod_ready(pod)
            assert sim.kubelet is not None
            queue = sim.kubelet.controller.queue
            # the kubelet has parked the pod on the clock until its ready time
            await eventually(lambda: queue.waiting_len() == 1 and len(queue) == 0,
                             what="the pod parked on the clock")
            clock.advance(29)
            assert queue.waiting_len() == 1  # its timer is not due yet
            assert not is_pod_ready(await client.get("pods", "late", "default"))

            clock.advance(1)

            async def ready() -> dict[str, Any] | None:
                p = await client.get("pods", "late", "default")
                return p if is_pod_ready(p) else None

            pod = await eventually(ready, what="the pod Ready")
            cond = get_pod_condition(pod, "Ready")
            assert cond is not None and cond["lastTransitionTime"] == format_time(start + 30)
        finally:
            await sim.stop()
