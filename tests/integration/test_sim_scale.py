"""Scale: 2,000 pods created in bulk all reach Running and Ready on 20 simulated nodes.

No timing assertion (the machine is shared); the time is printed (pytest -s).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from pykcm.client import Client, load_kube_config
from pykcm.sim import Simulator
from pykcm.testing.server_thread import ServerThread
from tests.conftest import ensure_default_service_account

PODS = 2_000
NODES = 20


async def test_2000_pods_all_run(pykcm_apiserver_factory: Callable[..., ServerThread]) -> None:
    st = pykcm_apiserver_factory()
    async with Client(load_kube_config(st.kubeconfig_path)) as client:
        await ensure_default_service_account(client, "default")  # no controller runs here
        sim = Simulator(client, nodes=NODES, node_prefix="scale", ready_after=0.5,
                        record_events=False, kubelet_workers=64)
        await sim.start()
        try:
            t0 = time.monotonic()
            sem = asyncio.Semaphore(64)

            async def create(i: int) -> None:
                async with sem:
                    await client.create("pods", {
                        "metadata": {"name": f"p{i:05d}", "labels": {"app": "scale"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}},
                        "default")

            await asyncio.gather(*(create(i) for i in range(PODS)))
            created = time.monotonic() - t0
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 600
            while True:
                items = (await client.list("pods", "default"))["items"]
                ready = [p for p in items if p["status"].get("phase") == "Running"
                         and any(c["type"] == "Ready" and c["status"] == "True"
                                 for c in p["status"].get("conditions", ()))]
                if len(ready) == PODS:
                    break
                assert loop.time() < deadline, f"{len(ready)}/{PODS} ready"
                await asyncio.sleep(0.5)
            total = time.monotonic() - t0
            print(f"\n{PODS} pods on {NODES} nodes: created in {created:.1f} s, "
                  f"all Running and Ready after {total:.1f} s")
            assert len({p["status"]["podIP"] for p in items}) == PODS
            per_node: dict[str, int] = {}
            for p in items:
                per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
            assert len(per_node) == NODES and max(per_node.values()) <= 110
            assert sim.scheduler is not None and sim.scheduler.bound == PODS
        finally:
            await sim.stop()
