"""Controller-manager cost curves: startup sync time, settled RSS and CPU per unit of
controller work as the cached pods grow (1k -> 10k -> 50k by default), pykcm's manager
beside the real kube-controller-manager v1.36.2 at every size (issue 19).

    .venv/bin/python bench/cost_curves.py [--pods 1000,10000,50000] [--deployments N]
                                          [--jobs N] [--work-deployments K] [--cycles C]
                                          [--runs N] [--no-record]

One real kube-apiserver + etcd (the kit, etcd without fsync) grows in steps: at each
size the pods missing to reach it are added (bench/manager_memory.py's loader: ~2 KB
pods with neither a node nor an owner, which no controller acts on) in a namespace of
their own, beside a fixed set of ``--deployments`` Deployments at 0 replicas and
``--jobs`` suspended Jobs in bench/manager_memory.py's namespace, and
``--work-deployments`` K Deployments at 0 replicas in a third namespace (the work
below). Deviation from bench/manager_memory.py, which puts pods, Deployments and Jobs
in one namespace: there, every orphan pod is matched against the selector of every
ReplicaSet and Job of its namespace when the manager starts (the ReplicaSet and Job
pod handlers look for a controller to adopt it; each Job sync lists its namespace's
pods), in both managers, as upstream: O(pods x sets) work that goes on long after
the caches synced (at 5,000 pods, 1,000 ReplicaSets and 200 Jobs, 17 CPU-s before
kube-controller-manager is at rest and 15 / 49 CPU-s for pykcm's dict / compact
caches, on a loaded machine) and would hide the cost of the cache itself. Before the first size the real manager runs
once, unmeasured, until every Deployment has its ReplicaSet and every Job its status:
each measured manager then starts on a cluster at rest, with nothing to write.

At each size each manager runs alone, in turn (the real kube-controller-manager, pykcm's
``python -m pykcm controller-manager --compact-informer-objects=false``, the same with
``--compact-informer-objects``, the default since issue 19),
with the same ``--controllers`` (every controller pykcm has), leader election off and
``--kube-api-qps/burst`` 100/200 for both (so the work below is not paced by the client
rate limiter). Measured for each:

- **caches synced**: seconds from the process's start (``/proc/PID/stat`` starttime)
  to the last of its log lines that say a controller's caches synced: client-go's
  ``"Caches are synced"`` (klog level 0, once per controller and informer set) and the
  garbage collector's "all resource monitors have synced" for the real manager;
  pykcm's ``"Caches are synced for <controller>"`` (pykcm.cache.synced, the same
  wording) and its garbage collector's line of the same meaning. Both include the
  process's own start (Go runtime / Python imports) and the initial LISTs;
- **settled RSS**: once the caches synced (every "Waiting for caches to sync" line has
  its "synced" line) and the manager is at rest (under 5% of a core for 3 s in a row:
  its first pass over every object done), VmRSS sampled every second until it moved
  less than 2% over 10 s (bench/manager_memory.py ``settle``); **KiB per pod** is the
  slope between two sizes, (RSS_b - RSS_a) / (pods_b - pods_a); **CPU-s to rest** is
  the process's CPU time from its start to the end of that window;
- **idle CPU**: the manager's CPU over 5 s at rest after settling (resyncs, timers,
  garbage collection);
- **work**: ``--cycles`` times, the K work Deployments are scaled 0 -> 1 (until each
  reports 1 replica at its generation) and 1 -> 0 (until each reports 0 and their
  namespace has no pod). Both managers do the same thing for it: K Deployment syncs
  scaling a ReplicaSet, K ReplicaSet syncs creating and then deleting one pod each,
  the status writes and events, and the handlers of every controller that watches
  pods, ReplicaSets or Deployments. The work's namespace is not the big one, so no
  controller lists the loaded pods for it: what grows with size is the cost of a big
  cache itself (informer stores and indexes, the garbage collector's graph, the
  Python heap's collections). Reported: the manager's CPU-ms per cycle of one
  Deployment (CPU-s of the phase / (K x cycles)), and the workqueue items processed
  in the phase (sum of ``workqueue_work_duration_seconds_count`` over every queue,
  from each manager's /metrics) with CPU-ms per item. The item counts differ by
  design (e.g. kube-controller-manager's taint-eviction controller queues every pod
  update, pykcm's filters them in the handler), so the per-cycle figure is the one
  to compare; per item is shown for the slope.

``--runs N`` repeats the three managers at each size; the tables show medians. The
result goes to stdout and, unless ``--no-record``, to bench/RESULTS.md. Needs the kit
(../shared/kube-v1.36 or $PYKCM_KUBE_KIT).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from _common import log, machine_load, print_and_record, proc_cpu, run_async
from _kube import KubeServer, kit_or_reason
from controllers import git_state, machine
from manager_memory import (
    Manager,
    _deployment,
    ensure_namespace,
    kube_manager,
    load,
    pykcm_manager,
    settle,
)

from pykcm.client import Client, load_kube_config
from pykcm.testing.upstream import pykcm_controller_names

WORK_NS = "bench-curves-work"
POD_NS = "bench-curves-pods"
QPS, BURST = 100.0, 200
MANAGERS = (("kube", "real kube-controller-manager v1.36.2"),
            ("pykcm", "pykcm, --compact-informer-objects=false (dicts)"),
            ("compact", "pykcm, --compact-informer-objects"))

# klog's header: level, MMDD, wall time (local, microseconds); the kit's kube binaries
# prefix "??? " (README of the kit).
_KLOG = re.compile(r"^(?:\?\?\? )?[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ")
_SYNCED = ("Caches are synced", "all resource monitors have synced")


def proc_start_epoch(pid: int | None) -> float:
    """When a process started, in seconds since the epoch (/proc starttime, ticks since
    boot, placed on the wall clock by /proc/uptime: /proc/stat's btime is rounded to
    whole seconds, which added up to a second to every manager's figures)."""
    with open(f"/proc/{pid}/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    now = time.time()
    return now - up + start_ticks / os.sysconf("SC_CLK_TCK")


def _klog_time(line: str, year: int) -> float | None:
    m = _KLOG.match(line)
    if m is None:
        return None
    mo, d, hh, mi, ss, us = (int(x) for x in m.groups())
    return time.mktime((year, mo, d, hh, mi, ss, 0, 0, -1)) + us / 1e6


def synced_after(log_text: str, start: float) -> tuple[float, float, int]:
    """Seconds from ``start`` to the process's first log line and to its last
    caches-synced line, and how many such lines there were."""
    year = time.localtime(start).tm_year
    first, last, count = float("nan"), float("nan"), 0
    for line in log_text.splitlines():
        t = _klog_time(line, year)
        if t is None:
            continue
        if math.isnan(first):  # the first klog line
            first = t - start
        if any(s in line for s in _SYNCED):
            last = t - start if count == 0 else max(last, t - start)
            count += 1
    return first, last, count


_ITEMS = re.compile(r"^workqueue_work_duration_seconds_count\{[^}]*\} (\S+)$", re.MULTILINE)


def items_processed(metrics: str) -> float:
    """Work items every workqueue of the manager has processed so far."""
    return sum(float(v) for v in _ITEMS.findall(metrics))


def _work_deployment(i: int) -> dict[str, Any]:
    d = _deployment(i)
    d["metadata"] = {"name": f"w{i:03d}", "namespace": WORK_NS}
    return d


def _client(kubeconfig: str) -> Client:
    cfg = load_kube_config(kubeconfig)
    cfg.qps, cfg.burst = 5000.0, 5000
    return Client(cfg)


async def create_work(kubeconfig: str, k: int) -> None:
    async with _client(kubeconfig) as c:
        await ensure_namespace(c, WORK_NS)
        await asyncio.gather(*(c.create("deployments", _work_deployment(i), WORK_NS)
                               for i in range(k)))


async def _until(what: str, cond: Callable[[], Any], timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not await cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


def _observed(d: dict[str, Any]) -> bool:
    return bool(d.get("status", {}).get("observedGeneration", 0)
                >= d["metadata"].get("generation", 1))


async def wait_at_rest(kubeconfig: str) -> None:
    """Every Deployment observed (its ReplicaSet made), every Job given a status."""
    async with _client(kubeconfig) as c:
        async def done() -> bool:
            deps = (await c.list("deployments"))["items"]
            jobs = (await c.list("jobs"))["items"]
            return (all(_observed(d) for d in deps)
                    and all(j.get("status", {}).get("conditions") for j in jobs))
        await _until("the warm-up", done)


async def scale_work(kubeconfig: str, k: int, replicas: int) -> None:
    """Scale the K work Deployments to ``replicas``; return once every one reports it
    at its new generation (and, at 0, their namespace has no pod left)."""
    async with _client(kubeconfig) as c:
        await asyncio.gather(*(c.patch("deployments", f"w{i:03d}",
                                       {"spec": {"replicas": replicas}}, "merge", WORK_NS)
                               for i in range(k)))

        async def done() -> bool:
            deps = (await c.list("deployments", WORK_NS))["items"]
            if not all(_observed(d) and d.get("status", {}).get("replicas", 0) == replicas
                       for d in deps):
                return False
            return replicas > 0 or not (await c.list("pods", WORK_NS))["items"]
        await _until(f"the work Deployments at {replicas}", done)


def wait_synced(m: Manager, timeout: float = 600.0) -> None:
    """Until every "Waiting for caches to sync" line of the log has its "Caches are synced"
    and the garbage collector's monitors synced (the counts steady for 2 s)."""
    deadline = time.monotonic() + timeout
    seen, steady = (-1, -1), 0
    while time.monotonic() < deadline:
        if m.exited() is not None:
            raise RuntimeError(f"the manager exited: {m.exited()}")
        text = m.log()
        counts = (text.count("Waiting for caches to sync"), text.count("Caches are synced"))
        done = counts[0] > 0 and counts[1] >= counts[0] and _SYNCED[1] in text
        steady = steady + 1 if done and counts == seen else 0
        if steady >= 4:
            return
        seen = counts
        time.sleep(0.5)
    raise RuntimeError("timed out waiting for the manager's caches to sync")


def wait_quiet(pid: int | None, timeout: float = 300.0) -> None:
    """Until the process used under 5% of a core in each of 3 seconds in a row (its
    first sync of every object done)."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline and quiet < 3:
        c0 = proc_cpu(pid)
        time.sleep(1.0)
        quiet = quiet + 1 if proc_cpu(pid) - c0 < 0.05 else 0
    if quiet < 3:
        log("bench: the manager is still busy; measuring anyway")


def measure(m: Manager, kubeconfig: str, k: int, cycles: int) -> dict[str, float]:
    """One started manager: sync time, then (once it is at rest) settled RSS, idle CPU,
    then the work."""
    start = proc_start_epoch(m.pid)
    wait_synced(m)
    first_log, synced, lines = synced_after(m.log(), start)
    wait_quiet(m.pid)
    r = settle(m.pid, m.exited)
    r["first_log"], r["synced"], r["synced_lines"] = first_log, synced, lines
    c0 = proc_cpu(m.pid)
    time.sleep(5.0)
    r["idle_pct"] = (proc_cpu(m.pid) - c0) / 5.0 * 100
    items0, c0, t0 = items_processed(m.metrics()), proc_cpu(m.pid), time.monotonic()
    for _ in range(cycles):
        run_async(scale_work(kubeconfig, k, 1))
        run_async(scale_work(kubeconfig, k, 0))
    r["work_s"] = time.monotonic() - t0
    r["work_cpu"] = proc_cpu(m.pid) - c0
    r["items"] = items_processed(m.metrics()) - items0
    if m.exited() is not None:
        raise RuntimeError(f"the manager exited: {m.exited()}")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--pods", default="1000,10000,50000",
                    help="comma-separated increasing pod counts")
    ap.add_argument("--deployments", type=int, default=1_000)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--work-deployments", type=int, default=50)
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    sizes = [int(x) for x in a.pods.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] < 0:
        ap.error("--pods must be increasing")
    kit, why = kit_or_reason()
    if kit is None:
        print(why)
        return 1
    header = machine_load()
    tree = git_state()
    began = time.monotonic()
    controllers = pykcm_controller_names()
    server = KubeServer(kit, "curves", fsync=False)
    server.start()
    work = tempfile.mkdtemp(prefix="pykcm-bench-curves-")
    log(f"pykcm's manager logs go to {work}")
    res: dict[tuple[int, str], list[dict[str, float]]] = {}
    loads: dict[int, str] = {}
    k, kc = a.work_deployments, server.kubeconfig

    def start(key: str, size: int, run: int) -> AbstractContextManager[Manager]:
        if key == "kube":
            return kube_manager(server, controllers, name=f"curves-kcm-{size}-{run}",
                                qps=QPS, burst=BURST)
        extra = ("--compact-informer-objects",) if key == "compact" else \
            ("--compact-informer-objects=false",)
        return pykcm_manager(server, work, controllers, None, extra,
                             log_name=f"{key}-{size}-{run}.log", qps=QPS, burst=BURST)

    try:
        have = 0
        for size in sizes:
            secs = run_async(load(kc, size, a.deployments if have == 0 else 0,
                                  a.jobs if have == 0 else 0, first_pod=have,
                                  pod_ns=POD_NS))
            log(f"loaded pods {have}..{size - 1} in {secs:.1f} s")
            if have == 0:
                run_async(create_work(kc, k))
                with start("kube", 0, 0):
                    run_async(wait_at_rest(kc))
                    time.sleep(3.0)
                log("warm-up done: every Deployment has its ReplicaSet")
            have = size
            loads[size] = machine_load()
            for run in range(a.runs):
                for key, _title in MANAGERS:
                    with start(key, size, run) as m:
                        r = measure(m, kc, k, a.cycles)
                    res.setdefault((size, key), []).append(r)
                    log(f"{size} pods, run {run + 1}, {key}: "
                        + ", ".join(f"{n}={v:.2f}" for n, v in r.items()))
    finally:
        server.stop()
    wall = time.monotonic() - began
    end_load = machine_load()

    def med(size: int, key: str, field: str) -> float:
        return statistics.median(x[field] for x in res[(size, key)])

    units = k * a.cycles
    lines = [
        (f"## Controller-manager cost curves, {sizes[0]:,} to {sizes[-1]:,} pods "
         f"({time.strftime('%Y-%m-%d %H:%M %Z')}, bench/cost_curves.py)"),
        "",
        (f"Machine: {machine()}; at the start: {header}; at the end: {end_load}.  "),
        (f"Run: `bench/cost_curves.py --pods {a.pods} --deployments {a.deployments} "
         f"--jobs {a.jobs} --work-deployments {k} --cycles {a.cycles} --runs {a.runs}`, "
         f"{wall:.0f} s wall, tree {tree}. One real kube-apiserver + etcd v1.36.2 grown in "
         f"steps (~2 KB unscheduled ownerless pods in a namespace of their own; "
         f"{a.deployments} Deployments at 0 replicas and {a.jobs} suspended Jobs in "
         f"another); at each size each manager alone with the same "
         f"{len(controllers)} controllers, --kube-api-qps/burst {QPS:g}/{BURST}. Caches "
         f"synced: process start to the last 'Caches are synced' / 'all resource monitors "
         f"have synced' log line (in brackets: to its first log line, the process's own "
         f"start: Go runtime, Python imports). Work: {k} Deployments in their own "
         f"namespace scaled "
         f"0->1->0 x {a.cycles} (CPU per Deployment cycle; items = workqueue items "
         f"processed, every queue). Medians of {a.runs} run(s). Load per size: "
         + "; ".join(f"{s:,} pods: {loads[s]}" for s in sizes) + "."),
        "",
        ("| pods | manager | caches synced s (first log line) | settled RSS MiB "
         "| KiB per pod (slope) "
         "| CPU-s to rest | idle CPU % | work CPU-ms per cycle | work items "
         "| CPU-ms per item |"),
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, title in MANAGERS:
        prev: int | None = None
        for size in sizes:
            rss = med(size, key, "rss")
            slope = ("" if prev is None else
                     f"{(rss - med(prev, key, 'rss')) * 1024 / (size - prev):.2f}")
            wcpu, items = med(size, key, "work_cpu"), med(size, key, "items")
            lines.append(
                f"| {size:,} | {title} | {med(size, key, 'synced'):.2f} "
                f"({med(size, key, 'first_log'):.2f}) | {rss:.0f} | {slope} "
                f"| {med(size, key, 'cpu'):.1f} | {med(size, key, 'idle_pct'):.1f} "
                f"| {wcpu * 1000 / units:.1f} | {items:.0f} "
                f"| {wcpu * 1000 / items if items else float('nan'):.2f} |")
            prev = size
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        lines += ["", f"From {lo:,} to {hi:,} pods: " + "; ".join(
            f"{title}: {(med(hi, key, 'rss') - med(lo, key, 'rss')) * 1024 / (hi - lo):.2f} "
            f"KiB per pod, caches synced {med(lo, key, 'synced'):.1f} -> "
            f"{med(hi, key, 'synced'):.1f} s, work CPU per cycle "
            f"{med(lo, key, 'work_cpu') * 1000 / units:.1f} -> "
            f"{med(hi, key, 'work_cpu') * 1000 / units:.1f} ms"
            for key, title in MANAGERS) + "."]
    lines += ["", "Ratios pykcm / real kube-controller-manager at each size:", "",
              ("| pods | manager | caches synced | settled RSS | KiB per pod (slope) "
               "| work CPU per cycle |"),
              "|---:|---|---:|---:|---:|---:|"]
    for key, title in MANAGERS[1:]:
        prev = None
        for size in sizes:
            def ratio(field: str, size: int = size, key: str = key) -> str:
                return f"{med(size, key, field) / med(size, 'kube', field):.2f}x"

            slope = ""
            if prev is not None:
                mine = med(size, key, "rss") - med(prev, key, "rss")
                real = med(size, "kube", "rss") - med(prev, "kube", "rss")
                slope = f"{mine / real:.2f}x" if real > 0 else "n/a"
            lines.append(f"| {size:,} | {title} | {ratio('synced')} | {ratio('rss')} "
                         f"| {slope} | {ratio('work_cpu')} |")
            prev = size
    print_and_record(lines, record=not a.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
