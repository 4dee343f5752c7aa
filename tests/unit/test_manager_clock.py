"""The controller manager's one clock reaches what its init functions build: the
controllers, their work queues and rate limiters, the event broadcasters and the
informers (nothing is started, nothing is contacted)."""

from __future__ import annotations

from typing import Any

from pykcm.api.clock import FakeClock
from pykcm.client import Client, Config
from pykcm.informers import SharedInformerFactory
from pykcm.manager.context import ClientBuilder, ControllerContext
from pykcm.manager.options import ControllerManagerOptions
from pykcm.manager.registry import builtin_registry

# Built-in controllers whose init functions need no API discovery.
NAMES = ["job-controller", "cronjob-controller", "ttl-after-finished-controller",
         "deployment-controller", "replicaset-controller", "daemonset-controller",
         "node-lifecycle-controller", "pod-garbage-collector-controller",
         "taint-eviction-controller", "namespace-controller"]


def _queues(ctl: Any) -> list[Any]:
    out = []
    for attr in vars(ctl).values():
        q = getattr(attr, "queue", None)
        if q is not None and hasattr(q, "waiting_len"):
            out.append(q)
    return out


async def test_init_functions_hand_the_context_clock_down() -> None:
    clock = FakeClock()
    config = Config(host="https://127.0.0.1:1", ca_data=b"CA", token="t")
    builder = ClientBuilder(config, qps=5, burst=10, clock=clock)
    factory = SharedInformerFactory(Client(config), clock=clock, tune_gc=False)
    ctx = ControllerContext(client_builder=builder, informer_factory=factory,
                            options=ControllerManagerOptions(), clock=clock)
    registry = builtin_registry()
    buckets_seen = 0
    try:
        for name in NAMES:
            ctl = await registry.get(name).init_func(ctx, name)
            assert ctl is not None, name
            queues = _queues(ctl)
            if name != "taint-eviction-controller":  # timers on the clock, no queue
                assert queues, name
            for q in queues:
                assert q._clock is clock, name
                limiter = q.rate_limiter
                buckets = [lim for lim in getattr(limiter, "limiters", [limiter])
                           if hasattr(lim, "bucket")]
                assert all(b.bucket._clock is clock for b in buckets), name
                buckets_seen += len(buckets)
        assert buckets_seen > 0  # the default controller rate limiter's token bucket
        assert ctx.event_broadcaster("job-controller").clock is clock
        for gi in factory.informers().values():
            assert gi.informer._time is clock
    finally:
        await ctx.close_event_broadcasters(timeout=1)
        await builder.close()
        await factory.client.close()
