"""Controller-manager memory at scale: RSS with 50,000 pods, 1,000 Deployments and 200
Jobs cached, pykcm's manager beside the real kube-controller-manager v1.36.2.

    .venv/bin/python bench/manager_memory.py [--pods N] [--deployments N] [--jobs N]
                                             [--runs N] [--before-tree DIR] [--no-record]

One run: the real kube-apiserver + etcd (the kit, etcd without fsync) is loaded once
with the objects, through the API:

- N pods of about 2 KB (bench/_replay_server.py ``make_pod``, as a client creates them)
  with neither a node nor an owner, so that no controller acts on them (pod GC keeps
  unscheduled pods, the garbage collector has no owner to check);
- Deployments with 0 replicas (each manager keeps their one ReplicaSet at 0);
- suspended Jobs (no pods).

Then each manager runs alone, in turn, with the same ``--controllers`` (every
controller pykcm has), leader election off: the real kube-controller-manager, then
pykcm's (``python -m pykcm controller-manager``), the same with
``--compact-informer-objects`` (FrozenObject caches), then, with ``--before-tree DIR``,
pykcm's from another source tree (e.g. ``git archive <commit> | tar -x -C DIR``: the
"before" figure). For each: RSS (VmRSS) sampled every second until it has settled (it
moved less than 2% over 10 s, after at least 15 s; at most 240 s), the settled and
peak RSS, the CPU seconds until then, and the seconds until settled (a stand-in for the
startup sync; the managers do not say when every informer synced). ``--runs N``
repeats the manager runs on the same loaded server; the table shows medians.

The result table goes to stdout and, unless ``--no-record``, to bench/RESULTS.md.
Needs the kit (../shared/kube-v1.36 or $PYKCM_KUBE_KIT): the real manager is the
reference, without it nothing is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from _common import append_results, log, machine_load, proc_cpu, proc_rss_mib, run_async
from _kube import KubeServer, kit_or_reason
from _replay_server import make_pod

from pykcm.client import Client, load_kube_config
from pykcm.testing.upstream import KubeControllerManager, PykcmProcess, pykcm_controller_names

NS = "bench-memory"


def _pod(i: int) -> dict[str, Any]:
    pod = make_pod(i, server_fields=False)
    meta = pod["metadata"]
    meta.pop("ownerReferences", None)
    meta.pop("generateName", None)
    meta["namespace"] = NS
    pod["spec"].pop("nodeName", None)
    return pod


def _deployment(i: int) -> dict[str, Any]:
    labels = {"app": f"d{i}"}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"d{i:04d}", "namespace": NS},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c",
                                                           "image": "nginx:1.27"}]}}}}


def _job(i: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"j{i:04d}", "namespace": NS},
            "spec": {"suspend": True, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}


async def load(kubeconfig: str, pods: int, deployments: int, jobs: int) -> float:
    """Create the objects with 48 concurrent writers; the seconds it took."""
    start = time.monotonic()
    cfg = load_kube_config(kubeconfig)
    cfg.qps, cfg.burst = 5000.0, 5000
    async with Client(cfg) as c:
        await c.create("namespaces", {"metadata": {"name": NS}})
        for _ in range(100):  # kube-apiserver's ServiceAccount admission wants "default"
            try:
                await c.create("serviceaccounts", {"metadata": {"name": "default"}}, NS)
                break
            except Exception as exc:  # noqa: BLE001 - already there, or not yet allowed
                if "already exists" in str(exc):
                    break
                await asyncio.sleep(0.1)
        work: list[tuple[str, dict[str, Any]]] = (
            [("pods", _pod(i)) for i in range(pods)]
            + [("deployments", _deployment(i)) for i in range(deployments)]
            + [("jobs", _job(i)) for i in range(jobs)])
        it = iter(work)

        async def writer() -> None:
            for resource, body in it:
                await c.create(resource, body, NS)

        await asyncio.gather(*(writer() for _ in range(48)))
    return time.monotonic() - start


def settle(pid: int | None, exited: Any) -> dict[str, float]:
    """Sample RSS every second until it settles; settled/peak MiB, CPU-s and seconds."""
    start = time.monotonic()
    samples: list[float] = []
    peak = 0.0
    while True:
        time.sleep(1.0)
        if exited() is not None:
            raise RuntimeError(f"the manager exited: {exited()}")
        rss = proc_rss_mib(pid)
        samples.append(rss)
        peak = max(peak, rss)
        elapsed = time.monotonic() - start
        if elapsed >= 15 and len(samples) > 10:
            window = samples[-11:]
            if max(window) - min(window) <= 0.02 * max(window):
                break
        if elapsed >= 240:
            break
    return {"rss": samples[-1], "peak": peak, "cpu": proc_cpu(pid),
            "seconds": time.monotonic() - start}


def run_kube(kit: Any, server: KubeServer, work: str, controllers: list[str]) -> dict[str, float]:
    kcm = KubeControllerManager.for_control_plane(
        server.cp, controllers=",".join(controllers), name="memory-kcm")
    kcm.start()
    try:
        return settle(kcm.pid, lambda: None if kcm.pid is not None else "stopped")
    finally:
        kcm.stop()


def run_pykcm(server: KubeServer, work: str, controllers: list[str],
              tree: str | None, extra: tuple[str, ...] = ()) -> dict[str, float]:
    saved = os.environ.get("PYTHONPATH")
    if tree:
        os.environ["PYTHONPATH"] = tree
    try:
        p = PykcmProcess.controller_manager(server.kubeconfig, os.path.join(work, "pykcm.log"),
                                            controllers=",".join(controllers), extra=extra)
        p.start(timeout=120)
    finally:
        if tree:
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved
    try:
        return settle(p.pid, p.exited)
    finally:
        p.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--deployments", type=int, default=1_000)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--before-tree", default=None,
                    help="another pykcm source tree, measured too (the 'before' figure)")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    kit, why = kit_or_reason()
    if kit is None:
        print(why)
        return 1
    header = machine_load()
    controllers = pykcm_controller_names()
    server = KubeServer(kit, "memory", fsync=False)
    server.start()
    work = tempfile.mkdtemp(prefix="pykcm-bench-memory-")
    results: dict[str, list[dict[str, float]]] = {"kube": [], "pykcm": [], "compact": [],
                                                  "before": []}
    try:
        secs = run_async(load(server.kubeconfig, a.pods, a.deployments, a.jobs))
        log(f"loaded {a.pods} pods, {a.deployments} Deployments, {a.jobs} Jobs in {secs:.1f} s")
        for r in range(a.runs):
            results["kube"].append(run_kube(kit, server, work, controllers))
            log(f"run {r + 1}: kube-controller-manager {results['kube'][-1]}")
            results["pykcm"].append(run_pykcm(server, work, controllers, None))
            log(f"run {r + 1}: pykcm {results['pykcm'][-1]}")
            results["compact"].append(run_pykcm(server, work, controllers, None,
                                                ("--compact-informer-objects",)))
            log(f"run {r + 1}: pykcm compact {results['compact'][-1]}")
            if a.before_tree:
                results["before"].append(run_pykcm(server, work, controllers, a.before_tree))
                log(f"run {r + 1}: pykcm (before) {results['before'][-1]}")
    finally:
        server.stop()

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in results[name])

    kube_rss = med("kube", "rss")
    rows = [("real kube-controller-manager v1.36.2", "kube")]
    rows.append(("pykcm controller manager", "pykcm"))
    rows.append(("pykcm, --compact-informer-objects", "compact"))
    if a.before_tree:
        rows.append((f"pykcm, before ({a.before_tree})", "before"))
    lines = [
        (f"## Controller-manager memory at scale ({time.strftime('%Y-%m-%d %H:%M')}, "
        f"bench/manager_memory.py)"),
        "",
        (f"{a.pods} pods (~2 KB, unscheduled, no owner), {a.deployments} Deployments "
        f"(0 replicas), {a.jobs} suspended Jobs on the real kube-apiserver; each manager "
        f"alone with the same {len(controllers)} controllers; median of {a.runs} run(s); "
        f"{header}."),
        "",
        ("| manager | settled RSS MiB | peak RSS MiB | RSS vs real | CPU-s to settle "
        "| s to settle |"),
        "|---|---|---|---|---|---|",
    ]
    for title, key in rows:
        rss = med(key, "rss")
        lines.append(f"| {title} | {rss:.0f} | {med(key, 'peak'):.0f} | "
                     f"{rss / kube_rss:.2f}x | {med(key, 'cpu'):.1f} | "
                     f"{med(key, 'seconds'):.0f} |")
    table = "\n".join(lines)
    print(table)
    if not a.no_record:
        append_results(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
