"""Virtual time's start-up leak: how many virtual seconds pass while a process starts.

    .venv/bin/python bench/virtual_time_startup.py [--runs 10] [--after 1.0]

Issue 21. Each run starts a fresh ``Cluster(virtual_time=True)`` (2 nodes, the node
lifecycle controller) and records, from the API server's first moment (its watches
open before the followers join), the virtual seconds from the start to: the first
periodic Lease renewal of a node (the simulator's heartbeats start: 10 when nothing
leaked), the node lifecycle controller's first sight of the nodes (its RegisteredNode
event: at most its 5 s monitor period after the nodes' registration when nothing
leaked), and any Ready=Unknown (a node heartbeating on time must
never get one). A leak is time autojump moved while a process was starting but looked
idle: before pykcm.api.progress_poll, a cache-sync poll slept out on real time (the
simulator's let the node's Ready turn Unknown 55-65 virtual s after start in a loaded
CI run). Run it under load too (``python -c "while 1: pass"`` beside it): the leak
grows with how long a starting process waits on real time. Prints the machine load;
a loaded figure is not a quiet one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _common import machine_load

from pykcm.client import Client, load_kube_config
from pykcm.testing.cluster import Cluster
from tests.e2e.virtual_time_scenarios import Recorder, condition, ts

CONTROLLERS = "serviceaccount,nodelifecycle,taint-eviction-controller"
START = "2030-01-01T00:00:00Z"
START_EPOCH = 1893456000.0


async def one(after: float) -> dict[str, Any]:
    c = Cluster(nodes=2, controllers=CONTROLLERS, virtual_time=True, virtual_start=START)
    starting = asyncio.create_task(asyncio.to_thread(c.start))
    try:
        while not os.path.exists(c.kubeconfig_path):
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)  # the kubeconfig is written once the server listens
        async with Client(load_kube_config(c.kubeconfig_path)) as client, \
                Recorder(client, None, ("nodes",)) as nodes, \
                Recorder(client, "kube-node-lease", ("leases",)) as leases, \
                Recorder(client, "default", ("events",)) as events:
            await starting
            await asyncio.sleep(after)
    finally:
        await asyncio.gather(starting, return_exceptions=True)
        c.stop()
    renewals = sorted({ts(o["spec"]["renewTime"]) - START_EPOCH
                       for o in leases.objects("leases")})
    seen = [ts(e.get("firstTimestamp") or e.get("eventTime")) - START_EPOCH
            for e in events.events("RegisteredNode")]
    unknown = sorted({ts(cd["lastTransitionTime"]) - START_EPOCH
                      for o in nodes.objects("nodes")
                      if (cd := condition(o, "Ready")) and cd["status"] == "Unknown"})
    created = min((ts(o["metadata"]["creationTimestamp"]) - START_EPOCH
                   for o in nodes.objects("nodes")), default=None)
    return {"heartbeats": next((r for r in renewals if r > 0), None), "created": created,
            "seen": min(seen, default=None), "unknown": unknown}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--after", type=float, default=1.0,
                    help="wall seconds to keep each cluster after its start")
    args = ap.parse_args()
    print(f"# virtual time start-up leak, {args.runs} runs ({machine_load()})")
    print("| run | nodes registered (virtual s) | first periodic renewal (want 10 after) "
          "| node lifecycle's first sight (want 5 or less after) | Ready=Unknown |")
    print("|---|---|---|---|---|")
    leaks = unknowns = 0
    for i in range(args.runs):
        r = await one(args.after)
        base = r["created"] or 0.0
        leaked = (r["heartbeats"] or 0) - base > 10.5 or (r["seen"] or 0) - base > 5.5
        leaks += leaked
        unknowns += bool(r["unknown"])
        print(f"| {i} | {r['created']} | {r['heartbeats']} | {r['seen']} | "
              f"{r['unknown'] or '-'} |", flush=True)
    print(f"\n{leaks} of {args.runs} runs leaked virtual time at start-up, {unknowns} had a "
          f"Ready=Unknown (load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    asyncio.run(main())
