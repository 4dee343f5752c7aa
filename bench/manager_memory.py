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
controller pykcm has) and the control plane's PKI (root CA, service-account key, CSR
signer: so both run the token and CSR-signing controllers), leader election off: the real kube-controller-manager, then
pykcm's (``python -m pykcm controller-manager --compact-informer-objects=false``: dict
caches), the same with ``--compact-informer-objects`` (FrozenObject caches, the default
since issue 19), then, with ``--before-tree DIR``,
pykcm's from another source tree (e.g. ``git archive <commit> | tar -x -C DIR``: the
"before" figure). For each: RSS (VmRSS) sampled every second until it has settled (it
moved less than 2% over 10 s, after at least 15 s; at most 240 s), the settled and
peak RSS, the CPU seconds until then, and the seconds until settled (a stand-in for the
startup sync; the managers do not say when every informer synced); and the CPU seconds
and seconds until the manager is at rest (less than 0.3 CPU-s over 10 s): RSS settles
long before the work of the start is done when that work allocates nothing (pykcm's
ReplicaSet syncs matching every orphan pod went on for 50 s after it). ``--runs N``
repeats the manager runs on the same loaded server; the table shows medians.

The result table goes to stdout and, unless ``--no-record``, to bench/RESULTS.md.
Needs the kit (../shared/kube-v1.36 or $PYKCM_KUBE_KIT): the real manager is the
reference, without it nothing is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import ssl
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from _common import log, machine_load, print_and_record, proc_cpu, proc_rss_mib, run_async
from _kube import KubeServer, kit_or_reason
from _replay_server import make_pod

from pykcm.client import AlreadyExists, Client, load_kube_config
from pykcm.testing.upstream import KubeControllerManager, PykcmProcess, pykcm_controller_names

NS = "bench-memory"


def _pod(i: int, ns: str = NS) -> dict[str, Any]:
    pod = make_pod(i, server_fields=False)
    meta = pod["metadata"]
    meta.pop("ownerReferences", None)
    meta.pop("generateName", None)
    meta["namespace"] = ns
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


async def load(kubeconfig: str, pods: int, deployments: int, jobs: int, *,
               first_pod: int = 0, pod_ns: str = NS) -> float:
    """Create pods ``first_pod``..``pods - 1`` (in ``pod_ns``), the Deployments and the
    Jobs with 48 concurrent writers (the namespaces once); the seconds it took.
    bench/cost_curves.py grows the same server in steps this way."""
    start = time.monotonic()
    cfg = load_kube_config(kubeconfig)
    cfg.qps, cfg.burst = 5000.0, 5000
    async with Client(cfg) as c:
        for ns in dict.fromkeys((NS, pod_ns)):
            await ensure_namespace(c, ns)
        work: list[tuple[str, dict[str, Any]]] = (
            [("pods", _pod(i, pod_ns)) for i in range(first_pod, pods)]
            + [("deployments", _deployment(i)) for i in range(deployments)]
            + [("jobs", _job(i)) for i in range(jobs)])
        it = iter(work)

        async def writer() -> None:
            for resource, body in it:
                await c.create(resource, body, body["metadata"]["namespace"])

        await asyncio.gather(*(writer() for _ in range(48)))
    return time.monotonic() - start


async def ensure_namespace(c: Client, ns: str) -> None:
    """The namespace and its "default" ServiceAccount (kube-apiserver's ServiceAccount
    admission wants it before pods), whether or not they exist yet."""
    try:
        await c.create("namespaces", {"metadata": {"name": ns}})
    except AlreadyExists:
        pass
    for _ in range(100):
        try:
            await c.create("serviceaccounts", {"metadata": {"name": "default"}}, ns)
            break
        except AlreadyExists:
            break
        except Exception:  # noqa: BLE001 - not yet allowed (namespace initializing)
            await asyncio.sleep(0.1)


def settle(pid: int | None, exited: Any) -> dict[str, float]:
    """Sample RSS and CPU every second until RSS has settled and the CPU is at rest;
    settled/peak MiB, CPU-s and seconds until RSS settled, and until the CPU came to rest
    (``rest_cpu``, ``rest_seconds``: NaN when it did not within 300 s)."""
    start = time.monotonic()
    samples: list[float] = []
    cpus = [proc_cpu(pid)]
    peak = 0.0
    settled: dict[str, float] | None = None
    rest: tuple[float, float] | None = None
    while True:
        time.sleep(1.0)
        if exited() is not None:
            raise RuntimeError(f"the manager exited: {exited()}")
        rss = proc_rss_mib(pid)
        cpus.append(proc_cpu(pid))
        samples.append(rss)
        peak = max(peak, rss)
        elapsed = time.monotonic() - start
        if settled is None and elapsed >= 15 and len(samples) > 10:
            window = samples[-11:]
            if max(window) - min(window) <= 0.02 * max(window):
                settled = {"rss": rss, "cpu": cpus[-1], "seconds": elapsed}
        if rest is None and elapsed >= 15 and cpus[-1] - cpus[-11] < REST_CPU:
            # at rest since 10 s ago: the CPU and seconds until then
            rest = (cpus[-11], elapsed - 10)
        if settled is not None and rest is not None:
            break
        if elapsed >= 300:
            break
    if settled is None:
        settled = {"rss": samples[-1], "cpu": cpus[-1], "seconds": time.monotonic() - start}
    return {**settled, "peak": peak, "rest_cpu": rest[0] if rest else math.nan,
            "rest_seconds": rest[1] if rest else math.nan}


REST_CPU = 0.3
"""At rest: less than this many CPU-s over 10 s (3% of a core: the pod GC's and the
resyncs' periodic passes stay under it)."""


@dataclass
class Manager:
    """A running controller manager: its pid, exit check, log, and /metrics text."""

    pid: int | None
    exited: Callable[[], str | None]
    log: Callable[[], str]
    metrics: Callable[[], str]


@contextlib.contextmanager
def kube_manager(server: KubeServer, controllers: list[str], *, name: str = "memory-kcm",
                 qps: float | None = None, burst: int | None = None) -> Iterator[Manager]:
    """The real kube-controller-manager with ``controllers``, leader election off; /metrics
    read over HTTPS with the kubeconfig's admin token (its delegated authorization)."""
    kcm = KubeControllerManager.for_control_plane(
        server.cp, controllers=",".join(controllers), name=name, kube_api_qps=qps,
        kube_api_burst=burst)
    kcm.start()
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE  # self-signed

    def metrics() -> str:
        req = urllib.request.Request(kcm.url + "/metrics",
                                     headers={"Authorization": f"Bearer {server.token}"})
        with urllib.request.urlopen(req, context=insecure, timeout=60) as r:
            return str(r.read().decode())

    try:
        yield Manager(kcm.pid, lambda: None if kcm.pid is not None else "stopped", kcm.log,
                      metrics)
    finally:
        kcm.stop()


_COMPILED: set[str] = set()


def compile_bytecode(tree: str | None) -> None:
    """Write the bytecode of ``tree``'s pykcm package (default: the one imported here) once per
    run, as installing a package does (pip compiles it): with PYTHONDONTWRITEBYTECODE
    set, as in the agents' shells, every manager start would otherwise compile the
    whole package from source again (0.3-0.4 CPU-s before its first request at 50,000
    pods, bench/RESULTS.md "startup sync"). The files go to the tree's ``__pycache__``
    directories (ignored by git)."""
    import compileall

    import pykcm  # the package the manager's process imports too (same PYTHONPATH)

    root = tree or os.path.dirname(os.path.dirname(os.path.abspath(pykcm.__file__)))
    if root in _COMPILED:
        return
    compileall.compile_dir(os.path.join(root, "pykcm"), quiet=1)
    _COMPILED.add(root)


@contextlib.contextmanager
def pykcm_manager(server: KubeServer, work: str, controllers: list[str], tree: str | None,
                  extra: tuple[str, ...] = (), *, log_name: str = "pykcm.log",
                  qps: float = 20.0, burst: int = 30) -> Iterator[Manager]:
    """pykcm's controller manager (from ``tree`` when given) with ``controllers``, and the
    control plane's PKI as kube_manager's (so the token and CSR-signing controllers run
    in both)."""
    compile_bytecode(tree)
    pki = server.cp.pki
    extra = (f"--root-ca-file={pki / 'ca.crt'}",
             f"--service-account-private-key-file={pki / 'sa.key'}",
             f"--cluster-signing-cert-file={pki / 'ca.crt'}",
             f"--cluster-signing-key-file={pki / 'ca.key'}", *extra)
    saved = os.environ.get("PYTHONPATH")
    cwd = os.getcwd()
    if tree:
        os.environ["PYTHONPATH"] = tree
        # ``python -m pykcm`` puts its working directory first on sys.path: started from a
        # checkout, it would import that checkout's pykcm, not the tree's
        os.chdir(tree)
    try:
        p = PykcmProcess.controller_manager(server.kubeconfig, os.path.join(work, log_name),
                                            controllers=",".join(controllers), extra=extra,
                                            kube_api_qps=qps, kube_api_burst=burst)
        p.start(timeout=120)
    finally:
        os.chdir(cwd)
        if tree:
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved

    def metrics() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{p.port}/metrics", timeout=60) as r:
            return str(r.read().decode())

    try:
        yield Manager(p.pid, p.exited, p.log, metrics)
    finally:
        p.stop()


def run_kube(kit: Any, server: KubeServer, work: str, controllers: list[str]) -> dict[str, float]:
    with kube_manager(server, controllers) as m:
        return settle(m.pid, m.exited)


def run_pykcm(server: KubeServer, work: str, controllers: list[str],
              tree: str | None, extra: tuple[str, ...] = ()) -> dict[str, float]:
    with pykcm_manager(server, work, controllers, tree, extra) as m:
        return settle(m.pid, m.exited)


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
            results["pykcm"].append(run_pykcm(server, work, controllers, None,
                                              ("--compact-informer-objects=false",)))
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
    kube_rest = med("kube", "rest_cpu")
    rows = [("real kube-controller-manager v1.36.2", "kube")]
    rows.append(("pykcm, --compact-informer-objects=false (dicts)", "pykcm"))
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
        "| s to settle | CPU-s to rest | s to rest | CPU to rest vs real |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for title, key in rows:
        rss = med(key, "rss")
        rest = med(key, "rest_cpu")
        lines.append(f"| {title} | {rss:.0f} | {med(key, 'peak'):.0f} | "
                     f"{rss / kube_rss:.2f}x | {med(key, 'cpu'):.1f} | "
                     f"{med(key, 'seconds'):.0f} | {rest:.1f} | "
                     f"{med(key, 'rest_seconds'):.0f} | {rest / kube_rest:.2f}x |")
    print_and_record(lines, record=not a.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
