"""Chaos: the controller manager and its informers through a faulty network (issue 17).

One durable pykcm API server (plain HTTP, a data dir) behind a
:class:`~pykcm.testing.fault_proxy.FaultProxy`; the controller manager (deployment,
replicaset, job and garbage-collector controllers, in process) talks only through
the proxy; the simulated nodes talk to the server directly (they are the kubelets,
not under test). While a Deployment rolls out, a Job runs and a Deployment is
deleted (background), the proxy answers 429/500/503 storms, drops every connection
(watch streams included) again and again, stalls requests, and the API server is
restarted on its data dir mid-rollout.

Then the faults stop and the test checks convergence with no duplicate or lost
object: the rolled-out Deployment has exactly its replicas, all of the new
template, and one ReplicaSet per template; the Job is Complete with exactly its
completions; the deleted Deployment's ReplicaSets and pods are gone; and every
informer of the manager holds exactly what a fresh LIST returns (same keys, same
resourceVersions: 0 divergent objects). The counts are printed (run with -s).
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pykcm.apiserver.auth.kubeconfig import build_kubeconfig, write_kubeconfig
from pykcm.client import Client, load_kube_config
from pykcm.manager import ControllerManager, ControllerManagerOptions
from pykcm.sim import Simulator
from pykcm.testing.fault_proxy import FaultProxy
from pykcm.testing.server_thread import ServerThread

CONTROLLERS = ["deployment-controller", "replicaset-controller", "job-controller",
               "garbage-collector-controller"]
TOKEN = "chaos-" + uuid.uuid4().hex


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Cluster:
    """The server (restartable on its port and data dir), the proxy, the clients."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.port = _free_port()
        self.server = self._start()
        self.restarts = 0
        self.proxy = FaultProxy("127.0.0.1", self.port, seed=17).start()
        self.direct_kubeconfig = str(work / "direct.kubeconfig")
        self.proxied_kubeconfig = str(work / "proxied.kubeconfig")
        write_kubeconfig(self.direct_kubeconfig,
                         build_kubeconfig(f"http://127.0.0.1:{self.port}", TOKEN, None))
        write_kubeconfig(self.proxied_kubeconfig, build_kubeconfig(self.proxy.url, TOKEN, None))

    def _start(self) -> ServerThread:
        for _ in range(50):
            try:
                return ServerThread(data_dir=str(self.work / "data"), port=self.port,
                                    tls=False, admin_token=TOKEN).start()
            except OSError:  # the old socket may linger a moment
                time.sleep(0.1)
        raise AssertionError("the API server did not restart")

    def restart(self) -> None:
        self.server.stop()
        self.server = self._start()
        self.restarts += 1

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    c = await asyncio.to_thread(Cluster, tmp_path)
    try:
        yield c
    finally:
        await asyncio.to_thread(c.stop)


async def eventually(fn: Callable[[], Awaitable[Any]], timeout: float, what: str,
                     describe: Callable[[], Awaitable[str]] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await fn()
        except Exception as exc:  # noqa: BLE001 - the server may be restarting
            last = exc
        if last is True or (last and not isinstance(last, Exception)):
            return last
        await asyncio.sleep(0.2)
    state = await describe() if describe is not None else ""
    raise AssertionError(f"timed out waiting for {what}: {last!r}\n{state}")


def deployment(name: str, replicas: int, image: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def job(name: str, completions: int, parallelism: int) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": 20,
                     "template": {"metadata": {"annotations": {"sim.pykcm.io/run-seconds": "1"}},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}


def _live(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in items if not i["metadata"].get("deletionTimestamp")]


async def test_controllers_and_informers_converge_through_faults(cluster: Cluster) -> None:
    ns = "chaos"
    async with Client(load_kube_config(cluster.direct_kubeconfig)) as api:
        await api.create("namespaces", {"metadata": {"name": ns}})
        await api.create("serviceaccounts", {"metadata": {"name": "default"}}, ns)
        sim = Simulator(api, nodes=3, node_prefix="chaos", record_events=False,
                        max_grace_period=0)
        await sim.start()
        sim_task = asyncio.create_task(sim.run())
        opts = ControllerManagerOptions(kubeconfig=cluster.proxied_kubeconfig,
                                        controllers=list(CONTROLLERS), leader_elect=False,
                                        bind_address="127.0.0.1", secure_port=0, port=0,
                                        kube_api_qps=200.0, kube_api_burst=400)
        manager = ControllerManager(opts)
        run = asyncio.create_task(manager.run())
        proxy = cluster.proxy
        try:
            await asyncio.wait_for(manager.leading.wait(), 60)
            await api.create("deployments", deployment("web", 4, "nginx:1.26"), ns)
            await api.create("deployments", deployment("doomed", 3, "nginx:1.26"), ns)
            await api.create("jobs", job("batch", 6, 3), ns)

            # 1. a storm of 429/500/503 answers
            proxy.error_rate = 0.3
            await asyncio.sleep(3)
            proxy.error_rate = 0.0
            # 2. every connection dropped, watches included, again and again
            for _ in range(4):
                await asyncio.sleep(0.7)
                proxy.drop_connections()
            # 3. a rollout starts; requests stall
            # (new pods Ready after 2 s: the rollout takes a few batches of that)
            await api.patch("deployments", "web", {"spec": {"template": {
                "metadata": {"annotations": {"sim.pykcm.io/ready-after-seconds": "2"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}},
                "strategic", ns)
            proxy.stall_rate, proxy.stall_seconds = 0.2, 1.0
            await asyncio.sleep(2)
            proxy.stall_rate = 0.0
            # 4. the API server restarts mid-rollout (the simulator's requests fail too):
            # once the new ReplicaSet exists, before its pods can all be Ready
            async def new_replica_set() -> dict[str, Any] | None:
                for r in (await api.list("replicasets", ns, label_selector="app=web"))["items"]:
                    if r["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27":
                        found: dict[str, Any] = r
                        return found
                return None
            new = await eventually(new_replica_set, 30, "the new ReplicaSet")
            before = new.get("status") or {}
            await asyncio.to_thread(cluster.restart)
            # 5. a garbage collection under errors and drops
            proxy.error_rate = 0.2
            await eventually(lambda: api.delete("deployments", "doomed", ns), 30,
                             "the doomed Deployment's delete")
            await asyncio.sleep(1)
            proxy.drop_connections()
            await asyncio.sleep(1)
            proxy.error_rate = 0.0

            # convergence
            async def web_rolled_out() -> bool:
                d = await api.get("deployments", "web", ns)
                st = d.get("status") or {}
                return (st.get("observedGeneration", 0) >= d["metadata"]["generation"]
                        and st.get("updatedReplicas") == 4 and st.get("replicas") == 4
                        and st.get("availableReplicas") == 4)
            async def web_state() -> str:
                """What the rollout's objects hold, for the failure message."""
                d = await api.get("deployments", "web", ns)
                lines = [f"deployment gen {d['metadata']['generation']} status {d.get('status')}"]
                for r in (await api.list("replicasets", ns, label_selector="app=web"))["items"]:
                    lines.append(f"rs {r['metadata']['name']} rv {r['metadata']['resourceVersion']}"
                                 f" spec {r['spec']['replicas']} status {r.get('status')}")
                for p in (await api.list("pods", ns, label_selector="app=web"))["items"]:
                    lines.append(f"pod {p['metadata']['name']} deleting "
                                 f"{bool(p['metadata'].get('deletionTimestamp'))} "
                                 f"phase {p['status'].get('phase')} conditions "
                                 f"{p['status'].get('conditions')}")
                ctx = manager.context
                if ctx is not None:
                    for gvr, gi in ctx.informer_factory.informers().items():
                        if gvr.resource in ("replicasets", "deployments", "pods"):
                            lines.append(f"informer {gvr.resource}: " + ", ".join(
                                f"{o['metadata']['name']}@{o['metadata']['resourceVersion']}"
                                for o in gi.informer.get_store().list()
                                if o["metadata"].get("namespace") == ns))
                return "\n".join(lines)
            await eventually(web_rolled_out, 60, "the rollout", web_state)

            async def job_complete() -> bool:
                j = await api.get("jobs", "batch", ns)
                return any(c["type"] == "Complete" and c["status"] == "True"
                           for c in (j.get("status") or {}).get("conditions") or [])
            await eventually(job_complete, 60, "the Job")

            async def doomed_collected() -> bool:
                rs = await api.list("replicasets", ns, label_selector="app=doomed")
                pods = await api.list("pods", ns, label_selector="app=doomed")
                return not rs["items"] and not pods["items"]
            await eventually(doomed_collected, 60, "the garbage collection")

            # no duplicate or lost objects
            async def web_pods_settled() -> list[dict[str, Any]] | None:
                pods = (await api.list("pods", ns, label_selector="app=web"))["items"]
                return pods if len(pods) == 4 and len(_live(pods)) == 4 else None
            web_pods = await eventually(web_pods_settled, 60, "4 web pods", web_state)
            web_rs = (await api.list("replicasets", ns, label_selector="app=web"))["items"]
            hashes = [r["metadata"]["labels"]["pod-template-hash"] for r in web_rs]
            assert len(hashes) == len(set(hashes)) == 2, hashes
            new_rs = [r for r in web_rs if r["spec"]["template"]["spec"]["containers"][0]
                      ["image"] == "nginx:1.27"]
            assert len(new_rs) == 1 and new_rs[0]["spec"]["replicas"] == 4
            assert {p["metadata"]["labels"]["pod-template-hash"] for p in web_pods} == \
                {new_rs[0]["metadata"]["labels"]["pod-template-hash"]}
            j = await api.get("jobs", "batch", ns)
            assert j["status"]["succeeded"] == 6 and not j["status"].get("active")
            job_pods = (await api.list("pods", ns, label_selector="job-name=batch"))["items"]
            succeeded_pods = [p for p in job_pods if p["status"].get("phase") == "Succeeded"]
            # A create whose answer the proxy dropped after forwarding it may be made again
            # (the Job controller cannot tell it reached the server; client-go's would do
            # the same), so a Job may run extra pods under faults, never fewer: the count in
            # its status stays exact.
            assert len(succeeded_pods) >= 6, [p["status"].get("phase") for p in job_pods]

            # every informer of the manager holds what a fresh LIST returns
            ctx = manager.context
            assert ctx is not None
            informers = ctx.informer_factory.informers()

            async def divergence() -> dict[str, int]:
                out: dict[str, int] = {}
                for gvr, gi in informers.items():
                    listed = await api.list_all(
                        gvr.resource if not gvr.group else f"{gvr.resource}.{gvr.group}")
                    want = {(i["metadata"].get("namespace", ""), i["metadata"]["name"]):
                            i["metadata"]["resourceVersion"] for i in listed["items"]}
                    have = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]):
                            o["metadata"]["resourceVersion"]
                            for o in gi.informer.get_store().list()}
                    out[gvr.resource] = len(set(want.items()) ^ set(have.items()))
                return out

            async def converged() -> dict[str, int] | None:
                d = await divergence()
                return d if not any(d.values()) else None
            final = await eventually(converged, 30, "informers to match a fresh LIST")
            objects = sum(len(gi.informer.get_store().list()) for gi in informers.values())

            writes = [r for r in proxy.requests if r.is_write and not r.injected]
            pod_creates = sum(1 for r in writes if r.method == "POST"
                              and r.path.endswith("/pods"))
            print(f"\nchaos: {len(proxy.requests)} requests through the proxy, "
                  f"{sum(proxy.stats.injected.values())} answered by it "
                  f"({dict(sorted(proxy.stats.injected.items()))}), "
                  f"{proxy.stats.dropped} connections dropped, {proxy.stats.stalled} stalled, "
                  f"{cluster.restarts} API server restart(s) (the new ReplicaSet then at "
                  f"{before.get('readyReplicas', 0)}/4 ready); "
                  f"{len(writes)} writes forwarded, "
                  f"{pod_creates} pod creates; final: web 4 pods / 2 ReplicaSets, "
                  f"job {len(succeeded_pods)} succeeded pods, doomed 0 left; {len(informers)} informers, "
                  f"{objects} cached objects, divergent {sum(final.values())}")
        finally:
            manager.request_stop()
            await asyncio.wait_for(run, 60)
            await sim.stop()
            sim_task.cancel()
            await asyncio.gather(sim_task, return_exceptions=True)
