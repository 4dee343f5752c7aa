"""EventRecorder / EventBroadcaster / EventCorrelator against a fake client."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

import pytest

from pykcm.client import InternalError, NotFound
from pykcm.controller import EventBroadcaster, EventCorrelator


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail_creates = 0
        self.patch_not_found = False
        self.rv = 0

    async def create(self, resource: Any, body: Mapping[str, Any],
                     namespace: str | None = None) -> dict[str, Any]:
        if self.fail_creates:
            self.fail_creates -= 1
            raise InternalError({"code": 500, "reason": "InternalError", "message": "boom"})
        self.rv += 1
        self.calls.append(("create", resource, namespace, dict(body)))
        out = dict(body)
        out["metadata"] = {**body["metadata"], "resourceVersion": str(self.rv)}
        return out

    async def patch(self, resource: Any, name: str, body: Any, patch_type: Any = "merge",
                    namespace: str | None = None) -> dict[str, Any]:
        if self.patch_not_found:
            raise NotFound({"code": 404, "reason": "NotFound", "message": "gone"})
        self.rv += 1
        self.calls.append(("patch", resource, namespace, name, patch_type, body))
        return {"metadata": {"name": name, "namespace": namespace,
                             "resourceVersion": str(self.rv)}, **body}


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-0", "namespace": "ns1", "uid": "u-1", "resourceVersion": "7"}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-n"}}


async def _run(client: FakeClient, **kw: Any) -> EventBroadcaster:
    b = EventBroadcaster(client, **kw)
    b.start()
    return b


async def test_new_event_fields() -> None:
    c = FakeClient()
    b = await _run(c)
    before = time.time_ns()
    b.new_recorder("rs-controller", "host-a").event(POD, "Normal", "Created", "made it")
    await b.shutdown()
    [(op, res, ns, ev)] = c.calls
    assert (op, res, ns) == ("create", "events", "ns1")
    name = ev["metadata"]["name"]
    assert re.fullmatch(r"web-0\.[0-9a-f]{16}", name)
    assert int(name.split(".")[1], 16) >= before
    assert ev["metadata"]["namespace"] == "ns1"
    assert ev["involvedObject"] == {"kind": "Pod", "name": "web-0", "namespace": "ns1",
                                    "uid": "u-1", "apiVersion": "v1", "resourceVersion": "7"}
    assert ev["source"] == {"component": "rs-controller", "host": "host-a"}
    assert ev["reportingComponent"] == "rs-controller"
    assert ev["reportingInstance"] == "host-a"
    assert (ev["type"], ev["reason"], ev["message"], ev["count"]) == (
        "Normal", "Created", "made it", 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ev["firstTimestamp"])
    assert ev["lastTimestamp"] == ev["firstTimestamp"]


async def test_cluster_scoped_goes_to_default_and_eventf() -> None:
    c = FakeClient()
    b = await _run(c)
    b.new_recorder("nodelifecycle").eventf(NODE, "Warning", "NotReady", "node %s is %d%%",
                                           "n1", 50)
    await b.shutdown()
    [(_, _, ns, ev)] = c.calls
    assert ns == "default" and ev["metadata"]["namespace"] == "default"
    assert ev["message"] == "node n1 is 50%" and ev["type"] == "Warning"
    assert "namespace" not in ev["involvedObject"] and ev["source"] == {
        "component": "nodelifecycle"}


async def test_bad_type_dropped(caplog: pytest.LogCaptureFixture) -> None:
    c = FakeClient()
    b = await _run(c)
    with caplog.at_level(logging.ERROR):
        b.new_recorder("x").event(POD, "Fatal", "R", "m")
    await b.shutdown()
    assert c.calls == [] and "Unsupported event type" in caplog.text


async def test_repeat_is_patched() -> None:
    c = FakeClient()
    b = await _run(c)
    r = b.new_recorder("rs-controller")
    for _ in range(3):
        r.event(POD, "Normal", "Created", "same")
    r.event(POD, "Normal", "Created", "different")
    await b.shutdown()
    ops = [call[0] for call in c.calls]
    assert ops == ["create", "patch", "patch", "create"]
    first = c.calls[0][3]["metadata"]["name"]
    _, res, ns, name, ptype, body = c.calls[2]
    assert (res, ns, name, ptype) == ("events", "ns1", first, "strategic")
    assert body["count"] == 3 and body["message"] == "same" and "lastTimestamp" in body
    assert c.calls[3][3]["metadata"]["name"] != first


def test_event_logger_leaves_the_callers_event_alone() -> None:
    """observe() returns its own copy of the event's top level and metadata, which is all it
    changes on a repeat (name, resourceVersion, count, firstTimestamp)."""
    from pykcm.controller.event_recorder import EventLogger, _event_key

    logger = EventLogger()
    ev = {"metadata": {"name": "p.1", "namespace": "ns1"}, "reason": "Created",
          "involvedObject": {"kind": "Pod", "name": "p"}, "count": 1,
          "firstTimestamp": "t0", "lastTimestamp": "t0", "message": "m"}
    key = _event_key(ev)
    first, patch = logger.observe(ev, key)
    assert patch is None and first == ev and first is not ev
    logger.update_state(dict(first, metadata={"name": "p.1", "resourceVersion": "7"},
                             count=1))
    again = {**ev, "metadata": {"name": "p.2", "namespace": "ns1"}, "lastTimestamp": "t1"}
    second, patch = logger.observe(again, key)
    assert second["metadata"] == {"name": "p.1", "namespace": "ns1", "resourceVersion": "7"}
    assert second["count"] == 2 and patch == {"count": 2, "lastTimestamp": "t1",
                                              "message": "m"}
    assert again["metadata"] == {"name": "p.2", "namespace": "ns1"} and "count" in again
    assert again["count"] == 1 and second["involvedObject"] is again["involvedObject"]


async def test_patch_not_found_recreates() -> None:
    c = FakeClient()
    b = await _run(c)
    r = b.new_recorder("c")
    r.event(POD, "Normal", "R", "m")
    await asyncio.sleep(0.05)
    c.patch_not_found = True
    r.event(POD, "Normal", "R", "m")
    await b.shutdown()
    assert [call[0] for call in c.calls] == ["create", "create"]
    assert "resourceVersion" not in c.calls[1][3]["metadata"]


async def test_spam_filter_drops_beyond_burst() -> None:
    now = [1000.0]
    c = FakeClient()
    b = await _run(c, correlator=EventCorrelator(clock=lambda: now[0]))
    r = b.new_recorder("c")
    for i in range(30):  # distinct reasons: no aggregation, no dedup
        r.event(POD, "Normal", f"R{i}", "m")
    await b.shutdown()
    assert len(c.calls) == 25
    # another object has its own bucket; one token back after 5 minutes
    b = await _run(c, correlator=b.correlator)
    r = b.new_recorder("c")
    r.event(NODE, "Normal", "R", "m")
    r.event(POD, "Normal", "Rx", "m")
    await asyncio.sleep(0.05)
    now[0] += 300
    r.event(POD, "Normal", "Ry", "m")
    r.event(POD, "Normal", "Rz", "m")
    await b.shutdown()
    names = [call[3]["reason"] for call in c.calls[25:]]
    assert names == ["R", "Ry"]


async def test_spam_filter_has_a_bucket_per_event_type() -> None:
    """client-go's getSpamKey ends with the event type: a Warning still gets out after the
    object's 25 Normal events (the differential test job-event-spam-filter: the Job's
    BackoffLimitExceeded after 30 SuccessfulCreate)."""
    c = FakeClient()
    b = await _run(c, correlator=EventCorrelator(clock=lambda: 1000.0))
    r = b.new_recorder("c")
    for i in range(26):
        r.event(POD, "Normal", f"R{i}", "m")
    for i in range(26):
        r.event(POD, "Warning", f"W{i}", "m")
    await b.shutdown()
    reasons = [call[3]["reason"] for call in c.calls]
    assert reasons == [f"R{i}" for i in range(25)] + [f"W{i}" for i in range(25)]


async def test_aggregation_of_similar_events() -> None:
    c = FakeClient()
    b = await _run(c)
    r = b.new_recorder("c")
    for i in range(12):
        r.event(POD, "Warning", "FailedCreate", f"error {i}")
    await b.shutdown()
    ops = [call[0] for call in c.calls]
    assert ops == ["create"] * 10 + ["patch"] * 2  # 9 distinct, then one combined event
    assert c.calls[9][3]["message"] == "(combined from similar events): error 9"
    assert c.calls[11][3] == c.calls[9][3]["metadata"]["name"]
    assert c.calls[11][5]["count"] == 3
    assert c.calls[11][5]["message"] == "(combined from similar events): error 11"


async def test_event_never_blocks_and_failed_writes_retry() -> None:
    c = FakeClient()
    c.fail_creates = 2
    b = EventBroadcaster(c, retry_delay=0.01)
    r = b.new_recorder("c")
    t0 = time.perf_counter()
    assert r.event(POD, "Normal", "R", "m") is None  # type: ignore[func-returns-value]
    for i in range(1000):
        r.event(POD, "Normal", f"Q{i}", "m")  # queued before start: fine
    assert time.perf_counter() - t0 < 1.0
    b.start()
    await b.shutdown()
    assert c.calls[0][3]["reason"] == "R"  # written after two failures


async def test_retry_limit_drops_without_raising() -> None:
    c = FakeClient()
    c.fail_creates = 100
    b = await _run(c, max_tries=3, retry_delay=0.001)
    b.new_recorder("c").event(POD, "Normal", "R", "m")
    await b.shutdown()
    assert c.calls == [] and c.fail_creates == 97


async def test_non_retryable_api_error_not_retried() -> None:
    class Rejecting(FakeClient):
        async def create(self, resource: Any, body: Mapping[str, Any],
                         namespace: str | None = None) -> dict[str, Any]:
            self.rv += 1
            raise NotFound({"code": 404, "reason": "NotFound", "message": "no ns"})

    c = Rejecting()
    b = await _run(c, retry_delay=0.001)
    b.new_recorder("c").event(POD, "Normal", "R", "m")
    await b.shutdown()
    assert c.rv == 1


async def test_event_from_another_thread() -> None:
    c = FakeClient()
    b = await _run(c)
    r = b.new_recorder("c")
    await asyncio.to_thread(r.event, POD, "Normal", "Threaded", "m")
    await asyncio.sleep(0.05)
    await b.shutdown()
    assert [call[3]["reason"] for call in c.calls] == ["Threaded"]


async def test_after_shutdown_dropped() -> None:
    c = FakeClient()
    b = await _run(c)
    await b.shutdown()
    b.new_recorder("c").event(POD, "Normal", "R", "m")
    await asyncio.sleep(0.01)
    assert c.calls == []


async def test_backlog_beyond_upstreams_bound_is_dropped() -> None:
    """client-go's broadcaster holds 1000 Events for its sink behind the one being written
    (watch.Broadcaster, DropIfChannelFull): a controller recording faster than the API
    server takes its Events loses the excess instead of writing it long after."""

    class Gated(FakeClient):
        def __init__(self) -> None:
            super().__init__()
            self.gate = asyncio.Event()
            self.waiting = 0

        async def create(self, resource: Any, body: Mapping[str, Any],
                         namespace: str | None = None) -> dict[str, Any]:
            self.waiting += 1
            await self.gate.wait()
            return await super().create(resource, body, namespace)

    c = Gated()
    b = await _run(c)
    r = b.new_recorder("replicaset-controller")
    r.event(POD, "Normal", "First", "m")
    while not c.waiting:  # the writer holds it, blocked on the API server
        await asyncio.sleep(0)
    objs = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"p{i}", "namespace": "ns1", "uid": f"u{i}"}}
            for i in range(1200)]
    for obj in objs:  # one Event per object: neither aggregated nor spam-filtered
        r.event(obj, "Normal", "SuccessfulCreate", "m")
    assert b.dropped == 200
    c.gate.set()
    await b.shutdown()
    names = [call[3]["involvedObject"]["name"] for call in c.calls]
    assert names == ["web-0"] + [f"p{i}" for i in range(1000)]


async def test_unbounded_broadcaster_keeps_every_event() -> None:
    c = FakeClient()
    b = EventBroadcaster(c, max_queued=None)
    r = b.new_recorder("kubelet")
    for i in range(1500):
        r.event({**NODE, "metadata": {"name": f"n{i}", "uid": f"u{i}"}}, "Normal", "R", "m")
    b.start()
    await b.shutdown()
    assert b.dropped == 0 and len(c.calls) == 1500
