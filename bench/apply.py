"""Benchmark of server-side apply and of managedFields, pykcm's API server beside kube-apiserver.

    .venv/bin/python bench/apply.py [--quick] [--objects N] [--runs N] [--no-kube] [--no-record]

The servers, client (one aiohttp session, 32 connections, orjson bodies) and CPU accounting
are bench/apiserver.py's; each configuration gets a fresh server per run. Phases, each over
N Deployments of about 2 KB (3 containers with ports, env, resources):

  1. apply-create   32 clients apply N Deployments that do not exist yet (create on apply,
                    fieldManager=bench)
  2. apply-update   32 clients apply each again with replicas and an env value changed
                    (the same manager: no conflict, pruning and ownership recomputed)
  3. patch-tracked  32 clients merge-patch a label on the applied Deployments: an Update
                    whose managedFields are computed (the objects carry them)
  4. post-create    32 clients POST N more Deployments (no apply)
  5. patch-plain    32 clients merge-patch a label on those: an Update of an object that
                    carries its creator's Update entry (both servers track every write)

So 3 and 5 are the cost of an Update with managedFields (one Apply entry, resp. one
Update entry) and 4 the cost of a create's entry, on both servers. Prints a Markdown section and appends it
to bench/RESULTS.md (--no-record to skip).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import sys
import time
from typing import Any

import orjson

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import append_results, log, machine_load
from _kube import (
    KUBE_VERSION,
    KubeServer,
    kit_or_reason,
)
from apiserver import (
    FAIL,
    BenchError,
    Client,
    ServerProc,
    ensure_namespace,
    fmt,
    machine,
    measured,
    pool,
)

NS = "bench"
DEPLOY = f"/apis/apps/v1/namespaces/{NS}/deployments"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON = "application/json"


def deployment(name: str, gen: int) -> dict[str, Any]:
    cs = [{"name": f"c{i}", "image": f"registry.example.com/team/app-{i}:v1.{gen}",
           "ports": [{"containerPort": 8080 + i, "name": f"http{i}"}],
           "env": [{"name": f"SETTING_{j}", "value": f"value-{gen}-{j}"} for j in range(6)],
           "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                         "limits": {"cpu": "500m", "memory": "256Mi"}}} for i in range(3)]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name, "tier": "web"}},
            "spec": {"replicas": 1 + gen % 3, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, "tier": "web"}},
                                  "spec": {"containers": cs}}}}


async def phase(c: Client, name: str, n: int, method: str, path_of: Any, bodies: list[bytes],
                ctype: str, want: tuple[int, ...]) -> dict[str, Any]:
    async def one(i: int) -> bool:
        st, _ = await c.request(name, method, path_of(i), bodies[i], ctype)
        return st in want

    t0, res = await pool(n, one)
    return {"n": n, **res.stats(t0), "body_bytes": sum(map(len, bodies)) / max(1, n)}


async def run_config(n: int, label: str, kit: Any) -> dict[str, Any]:
    srv: ServerProc | KubeServer = (KubeServer(kit, label, fsync=True) if label == "kube"
                                    else ServerProc(label, durable=True, tls=True))
    FAIL.prefix = label
    out: dict[str, Any] = {}
    try:
        srv.start()
        c = Client(srv)
        try:
            await ensure_namespace(c)
            q = "?fieldManager=bench"
            applied = [orjson.dumps(deployment(f"a-{i:05d}", 0)) for i in range(n)]
            again = [orjson.dumps(deployment(f"a-{i:05d}", 1)) for i in range(n)]
            label_patch = [orjson.dumps({"metadata": {"labels": {"touched": str(i)}}})
                           for i in range(n)]
            plain = []
            for i in range(n):
                d = copy.deepcopy(deployment(f"p-{i:05d}", 0))
                plain.append(orjson.dumps(d))
            steps = [
                ("apply-create", "PATCH", lambda i: f"{DEPLOY}/a-{i:05d}{q}", applied, APPLY,
                 (201,)),
                ("apply-update", "PATCH", lambda i: f"{DEPLOY}/a-{i:05d}{q}", again, APPLY,
                 (200,)),
                ("patch-tracked", "PATCH", lambda i: f"{DEPLOY}/a-{i:05d}?fieldManager=edit",
                 label_patch, MERGE, (200,)),
                ("post-create", "POST", lambda i: DEPLOY, plain, JSON, (201,)),
                ("patch-plain", "PATCH", lambda i: f"{DEPLOY}/p-{i:05d}?fieldManager=edit",
                 label_patch, MERGE, (200,)),
            ]
            for name, method, path_of, bodies, ctype, want in steps:
                log(f"{label}: {name} x{n} ...")
                out[name] = await measured(srv, phase(c, name, n, method, path_of, bodies,
                                                      ctype, want))
                log(f"  {out[name]['rate']:,.0f}/s")
            st, raw = await c.request("get", "GET", f"{DEPLOY}/a-{0:05d}")
            if st == 200 and raw:
                obj = orjson.loads(raw)
                out["managed_fields_bytes"] = len(orjson.dumps(
                    obj["metadata"].get("managedFields") or []))
        finally:
            await c.close()
    except BenchError as exc:
        out["error"] = str(exc)
        log(f"{label}: ERROR {exc}")
    finally:
        srv.stop()
    return out


def report(n: int, runs: dict[str, list[dict[str, Any]]], load: str, wall: float) -> str:
    import statistics
    names = ["apply-create", "apply-update", "patch-tracked", "post-create", "patch-plain"]
    labels = list(runs)
    lines = [f"## Server-side apply and managedFields ({time.strftime('%Y-%m-%d %H:%M')} UTC)",
             "", (f"bench/apply.py: {n:,} Deployments (~2 KB) per phase, 32 clients, "
                  f"{len(next(iter(runs.values())))} run(s), medians; {machine()}; {load}; "
                  f"{wall:.0f} s."), "",
             "| phase | " + " | ".join(labels) + " | pykcm / kube |",
             "|---|" + "---|" * len(labels) + "---|"]
    for name in names:
        cells = []
        rates: dict[str, float] = {}
        for lab in labels:
            vals = [r[name]["rate"] for r in runs[lab] if name in r]
            cpu = [r[name]["server_cpu_s"] for r in runs[lab] if name in r]
            if vals:
                rates[lab] = statistics.median(vals)
                cells.append(f"{fmt(rates[lab], '/s')} (server CPU "
                             f"{statistics.median(cpu) * 1e3 / n:.2f} ms/req)")
            else:
                cells.append("n/a")
        ratio = (f"{rates['pykcm'] / rates['kube']:.2f}x" if "pykcm" in rates
                 and "kube" in rates else "")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    mf = {lab: [r.get("managed_fields_bytes") for r in rs] for lab, rs in runs.items()}
    lines += ["", "managedFields of an applied Deployment: " + ", ".join(
        f"{lab} {v[-1]} B" for lab, v in mf.items() if v and v[-1] is not None) + ".",
        (f"Both servers record managedFields on every write (pykcm as kube-apiserver "
         f"{KUBE_VERSION}).")]
    return "\n".join(lines) + "\n"


async def main_async(args: argparse.Namespace) -> int:
    n = args.objects or (300 if args.quick else 2000)
    load = machine_load()
    kit, note = kit_or_reason(args.no_kube)
    if note:
        log(f"bench: {note}")
    labels = ["pykcm"] + (["kube"] if kit is not None else [])
    runs: dict[str, list[dict[str, Any]]] = {lab: [] for lab in labels}
    t0 = time.perf_counter()
    for _ in range(args.runs):
        for lab in labels:
            runs[lab].append(await run_config(n, lab, kit))
    section = report(n, runs, load, time.perf_counter() - t0)
    print(section)
    for s in FAIL.samples:
        print(s)
    if not args.no_record:
        append_results(section)
    return 1 if FAIL.total() else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="300 objects, one run")
    p.add_argument("--objects", type=int, help="objects per phase (default 2,000)")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--no-kube", action="store_true")
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args()
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
