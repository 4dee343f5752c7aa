"""Controller-manager startup sync at a fixed size, many runs, one loaded server (issue 19).

    .venv/bin/python bench/startup_sync.py [--pods 50000] [--deployments 1000] [--jobs 200]
                                           [--runs 3] [--managers kube,compact,before]
                                           [--before DIR]
                                           [--hold FILE] [--no-record]

bench/cost_curves.py's layout and flags (its loader, namespaces, the same controllers,
--kube-api-qps/burst 100/200, the real manager's warm-up run first) but only the
"caches synced" figure: each manager is started, timed from its process start to its
last caches-synced log line (cost_curves.synced_after) and stopped; the managers
alternate within a run so both see the same load. ``--hold FILE`` loads the server,
writes the pykcm manager's command line (one argument per line) to FILE and waits
until FILE is removed, for profiling the manager by hand (py-spy) against the
same cluster. Medians (and per-run values) go to stdout and, unless ``--no-record``,
to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AbstractContextManager

from _common import log, machine_load, print_and_record, run_async
from _kube import KubeServer, kit_or_reason
from controllers import git_state, machine
from cost_curves import (
    BURST,
    POD_NS,
    QPS,
    proc_start_epoch,
    synced_after,
    wait_at_rest,
    wait_synced,
)
from manager_memory import Manager, kube_manager, load, pykcm_manager

from pykcm.testing.upstream import pykcm_controller_names

TITLES = {"kube": "real kube-controller-manager v1.36.2",
          "pykcm": "pykcm, --compact-informer-objects=false (dicts)",
          "compact": "pykcm, --compact-informer-objects (the default)",
          "before": "pykcm at --before's tree, --compact-informer-objects"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--deployments", type=int, default=1_000)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--managers", default="kube,compact")
    ap.add_argument("--hold", default="")
    ap.add_argument("--before", default="",
                    help="another pykcm tree (e.g. a `git archive` of an older commit), run "
                         "as manager 'before' (compact caches), for before/after in one run")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    keys = a.managers.split(",")
    kit, why = kit_or_reason()
    if kit is None:
        print(why)
        return 1
    header, tree, began = machine_load(), git_state(), time.monotonic()
    controllers = pykcm_controller_names()
    server = KubeServer(kit, "sync", fsync=False)
    server.start()
    work = tempfile.mkdtemp(prefix="pykcm-bench-sync-")
    log(f"pykcm's manager logs go to {work}")
    kc = server.kubeconfig
    res: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}

    def start(key: str, run: int) -> AbstractContextManager[Manager]:
        if key == "kube":
            return kube_manager(server, controllers, name=f"sync-kcm-{run}", qps=QPS,
                                burst=BURST)
        extra = ("--compact-informer-objects",) if key in ("compact", "before") else \
            ("--compact-informer-objects=false",)
        return pykcm_manager(server, work, controllers,
                             a.before if key == "before" else None, extra,
                             log_name=f"{key}-{run}.log", qps=QPS, burst=BURST)

    try:
        secs = run_async(load(kc, a.pods, a.deployments, a.jobs, pod_ns=POD_NS))
        log(f"loaded {a.pods} pods in {secs:.1f} s")
        with start("kube", -1):
            run_async(wait_at_rest(kc))
            time.sleep(3.0)
        log("warm-up done: every Deployment has its ReplicaSet")
        if a.hold:
            pki = server.cp.pki
            argv = ["controller-manager", "--kubeconfig", kc, "--controllers",
                    ",".join(controllers), "--leader-elect=false", "--bind-address",
                    "127.0.0.1", "--secure-port", "0", "--port", "0",
                    "--kube-api-qps", f"{QPS:g}", "--kube-api-burst", str(BURST),
                    f"--root-ca-file={pki / 'ca.crt'}",
                    f"--service-account-private-key-file={pki / 'sa.key'}",
                    f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                    f"--cluster-signing-key-file={pki / 'ca.key'}"]
            with open(a.hold + ".tmp", "w") as f:
                f.write("\n".join(argv) + "\n")
            os.rename(a.hold + ".tmp", a.hold)
            log(f"holding: pykcm's arguments in {a.hold}; remove it to stop")
            while os.path.exists(a.hold):
                time.sleep(1.0)
        loads = []
        for run in range(a.runs):
            loads.append(machine_load())
            for key in keys:
                with start(key, run) as m:
                    st = proc_start_epoch(m.pid)
                    wait_synced(m)
                    first, synced, _n = synced_after(m.log(), st)
                res[key].append((first, synced))
                log(f"run {run + 1}, {key}: synced {synced:.2f} s (first log line {first:.2f})")
    finally:
        server.stop()
    if not a.runs:
        return 0
    lines = [
        (f"## Controller-manager startup sync at {a.pods:,} pods "
         f"({time.strftime('%Y-%m-%d %H:%M %Z')}, bench/startup_sync.py)"),
        "",
        f"Machine: {machine()}; at the start: {header}; before each run: "
        + "; ".join(loads) + ".  ",
        (f"Run: `bench/startup_sync.py --pods {a.pods} --deployments {a.deployments} "
         f"--jobs {a.jobs} --runs {a.runs} --managers {a.managers}"
         f"{' --before ' + a.before if a.before else ''}`, "
         f"{time.monotonic() - began:.0f} s wall, tree {tree}. bench/cost_curves.py's "
         f"layout, controllers ({len(controllers)}) and --kube-api-qps/burst; the "
         f"managers alternate within each run. Caches synced: process start to the last "
         f"caches-synced log line (in brackets: to the first log line)."),
        "",
        "| manager | caches synced s, median (first log line) | per run | ÷ real |",
        "|---|---:|---|---:|",
    ]
    kmed = statistics.median(s for _f, s in res["kube"]) if "kube" in res else float("nan")
    for key in keys:
        med = statistics.median(s for _f, s in res[key])
        fmed = statistics.median(f for f, _s in res[key])
        lines.append(f"| {TITLES[key]} | {med:.2f} ({fmed:.2f}) | "
                     + ", ".join(f"{s:.2f}" for _f, s in res[key])
                     + f" | {med / kmed:.2f}x |")
    print_and_record(lines, record=not a.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
