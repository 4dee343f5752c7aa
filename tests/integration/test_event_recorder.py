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
