"""EventRecorder against either API server: Events are created, then repeats
patch the count of the same Event. Each test works in a fresh namespace of its own."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator

import pytest

from pykcm.client import Client, load_kube_config
from pykcm.controller import EventBroadcaster
from tests.conftest import Backend, create_namespace


@pytest.fixture
async def client(apiserver: Backend) -> AsyncIterator[Client]:
    async with Client(load_kube_config(apiserver.kubeconfig_path)) as c:
        yield c


@pytest.fixture
async def ns(client: Client, apiserver: Backend) -> str:
    return await create_namespace(client, apiserver, "ev")


async def test_event_on_pod_then_repeat_increments_count(client: Client, ns: str) -> None:
    pod = await client.create("pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}, ns)
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    recorder = broadcaster.new_recorder("test-controller", "host-1")
    recorder.event(pod, "Warning", "FailedSync", "it broke")
    await broadcaster.shutdown()

    events = (await client.list("events", ns))["items"]
    assert len(events) == 1
    ev = events[0]
    assert re.fullmatch(r"web-0\.[0-9a-f]{16}", ev["metadata"]["name"])
    assert ev["metadata"]["namespace"] == ns
    io = ev["involvedObject"]
    assert (io["kind"], io["namespace"], io["name"], io["uid"], io["apiVersion"],
            io["resourceVersion"]) == ("Pod", ns, "web-0", pod["metadata"]["uid"], "v1",
                                       pod["metadata"]["resourceVersion"])
    assert ev["source"] == {"component": "test-controller", "host": "host-1"}
    assert ev["reportingComponent"] == "test-controller"
    assert ev["reportingInstance"] == "host-1"
    assert (ev["type"], ev["reason"], ev["message"], ev["count"]) == (
        "Warning", "FailedSync", "it broke", 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ev["firstTimestamp"])
    assert ev["lastTimestamp"] == ev["firstTimestamp"]

    broadcaster = EventBroadcaster(client, correlator=broadcaster.correlator)
    broadcaster.start()
    recorder = broadcaster.new_recorder("test-controller", "host-1")
    recorder.event(pod, "Warning", "FailedSync", "it broke")
    recorder.eventf(pod, "Warning", "FailedSync", "it %s", "broke")
    await broadcaster.shutdown()

    events = (await client.list("events", ns))["items"]
    assert len(events) == 1
    again = events[0]
    assert again["metadata"]["name"] == ev["metadata"]["name"]
    assert again["metadata"]["uid"] == ev["metadata"]["uid"]
    assert again["count"] == 3
    assert again["firstTimestamp"] == ev["firstTimestamp"]
    assert again["lastTimestamp"] >= ev["lastTimestamp"]


async def test_cluster_scoped_object_event_in_default(client: Client) -> None:
    name = "evn-" + uuid.uuid4().hex[:8]
    node = await client.create("nodes", {"apiVersion": "v1", "kind": "Node",
                                         "metadata": {"name": name}})
    try:
        broadcaster = EventBroadcaster(client)
        broadcaster.start()
        broadcaster.new_recorder("node-controller").event(node, "Normal", "Registered",
                                                           "hello")
        await broadcaster.shutdown()
        events = [e for e in (await client.list("events", "default"))["items"]
                  if e["involvedObject"]["name"] == name]
        assert len(events) == 1 and events[0]["involvedObject"]["kind"] == "Node"
        assert "namespace" not in events[0]["involvedObject"]
    finally:
        await client.delete("nodes", name)


async def test_backlog_beyond_a_thousand_events_is_dropped(client: Client, ns: str) -> None:
    """A controller recording Events faster than they are written keeps upstream's backlog
    (client-go's broadcaster: 1000 for the sink, DropIfChannelFull) and loses the rest, as
    kube-controller-manager does when a rollout of hundreds of Deployments outpaces its
    Event writes (issue 19's gc phase: pykcm's manager wrote that backlog in full, twice
    the real manager's Event POSTs after the work was done). Recorded in one loop turn, so
    the writer takes none before the last."""
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    recorder = broadcaster.new_recorder("replicaset-controller")
    for i in range(1100):  # one object each: no aggregation, no spam filter
        recorder.event({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"web-{i:04d}", "namespace": ns,
                                     "uid": str(uuid.uuid4())}},
                       "Normal", "SuccessfulCreate", f"Created pod: web-{i:04d}")
    assert broadcaster.dropped == 100
    await broadcaster.shutdown(timeout=120.0)
    names = sorted(e["involvedObject"]["name"]
                   for e in (await client.list("events", ns))["items"])
    assert names == [f"web-{i:04d}" for i in range(1000)]
