"""Benchmark of the work queue (pykcm.workqueue): the path every controller key takes.

    .venv/bin/python bench/workqueue.py [--quick] [--no-record] [--profile]

Measured, in one process, on uvloop (what ``pykcm`` runs on) and on the
default asyncio loop:

  1. add → get → done throughput: a producer adds N distinct keys in chunks
     of 1,000 (yielding to the loop between chunks, as informer handlers
     do), while 1 or 8 workers loop ``get`` → ``done`` (the reconcile is a
     no-op, so this is the queue's own cost); items/s = N / (first add →
     last done). For an unnamed queue (no metrics) and a named one (the
     Prometheus ``workqueue_*`` metrics every controller queue has).
  2. the rate-limited requeue cost: ``add_rate_limited(key)`` + ``forget(key)``
     per distinct key on a named RateLimitingQueue with the default
     controller rate limiter (the max of the 5 ms..1000 s exponential and
     the 10 qps / burst 100 bucket): µs per item; the items go into the
     delaying heap and are not waited for.

Medians of 3 runs (a fresh queue each). Peers: the Python peers installable
here have no work queue (kopf runs one asyncio task per object; the official
``kubernetes`` client has none), so only pykcm's figures are reported,
against the issue's target (>= 100,000 items/s with one worker).
``--profile`` prints a cProfile of the 1-worker named-queue run.
Prints a Markdown section and appends it to bench/RESULTS.md (--no-record to
skip). --quick: small sizes (smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime as _dt
import io
import os
import platform
import pstats
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
from _common import append_results, cpu_model, log

from pykcm.workqueue import (
    Queue,
    RateLimitingQueue,
    default_controller_rate_limiter,
)

TARGET_ONE_WORKER = 100_000
CHUNK = 1_000


def _loop_runner(kind: str) -> Callable[[Coroutine[Any, Any, float]], float]:
    if kind == "uvloop":
        import uvloop
        return uvloop.run
    return asyncio.run


async def _throughput(n: int, workers: int, named: bool, chunk: int = CHUNK) -> float:
    # A unique name per run: Prometheus children per name stay separate.
    q: Queue[str] = Queue(f"bench-{uuid.uuid4().hex[:8]}" if named else "")
    keys = [f"ns/obj-{i}" for i in range(n)]
    finished = 0
    all_done = asyncio.get_running_loop().create_future()

    async def worker() -> None:
        nonlocal finished
        get, done = q.get, q.done
        while True:
            key, shutdown = await get()
            if shutdown:
                return
            done(key)  # type: ignore[arg-type]
            finished += 1
            if finished == n and not all_done.done():
                all_done.set_result(None)

    async def producer() -> None:
        add = q.add
        for start in range(0, n, chunk):
            for k in keys[start:start + chunk]:
                add(k)
            await asyncio.sleep(0)

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    await asyncio.sleep(0)  # the workers are waiting in get()
    t0 = time.perf_counter()
    prod = asyncio.create_task(producer())
    await all_done
    elapsed = time.perf_counter() - t0
    await prod
    q.shut_down()
    await asyncio.gather(*tasks)
    return n / elapsed


async def _requeue_cost(n: int) -> float:
    q: RateLimitingQueue[str] = RateLimitingQueue(default_controller_rate_limiter(),
                                                  name=f"bench-rl-{uuid.uuid4().hex[:8]}")
    keys = [f"ns/obj-{i}" for i in range(n)]
    add_rl, forget = q.add_rate_limited, q.forget
    t0 = time.perf_counter()
    for k in keys:
        add_rl(k)
        forget(k)
    elapsed = time.perf_counter() - t0
    q.shut_down()
    return elapsed / n * 1e6


def _median(runs: list[float]) -> float:
    return statistics.median(runs)


def _profile(n: int, loop_kind: str) -> str:
    prof = cProfile.Profile()
    runner = _loop_runner(loop_kind)
    prof.enable()
    runner(_throughput(n, 1, True))
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    ap.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one run")
    args = ap.parse_args(argv)

    n = 20_000 if args.quick else 200_000
    n_rl = 10_000 if args.quick else 100_000
    repeats = 1 if args.quick else 3
    load = os.getloadavg()
    started = time.monotonic()
    rows: list[tuple[str, str, dict[str, list[float]]]] = []
    for loop_kind in ("uvloop", "asyncio"):
        runner = _loop_runner(loop_kind)
        for named in (False, True):
            runs: dict[str, list[float]] = {}
            for workers in (1, 8):
                runs[str(workers)] = [runner(_throughput(n, workers, named))
                                      for _ in range(repeats)]
                log(f"workqueue: {loop_kind} named={named} workers={workers}: "
                    + ", ".join(f"{r:,.0f}" for r in runs[str(workers)]) + " items/s")
            runs["trickle"] = [runner(_throughput(n // 4, 1, named, chunk=1))
                               for _ in range(repeats)]
            log(f"workqueue: {loop_kind} named={named} trickle, 1 worker: "
                + ", ".join(f"{r:,.0f}" for r in runs["trickle"]) + " items/s")
            runs["rl"] = [runner(_requeue_cost(n_rl)) for _ in range(repeats)] if named else []
            if named:
                log(f"workqueue: {loop_kind} add_rate_limited+forget: "
                    + ", ".join(f"{r:.2f}" for r in runs["rl"]) + " µs/item")
            rows.append((loop_kind, "named (metrics)" if named else "unnamed (no metrics)", runs))
    wall = time.monotonic() - started

    def fmt_rate(v: list[float]) -> str:
        return f"{_median(v):,.0f}/s"

    one_worker = _median(next(r for k, m, r in rows if k == "uvloop" and m.startswith("named"))["1"])
    verdict = "✅" if one_worker >= TARGET_ONE_WORKER else "❌"
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = (f"{platform.machine()}, nproc {len(os.sched_getaffinity(0))}, {cpu_model()}, "
               f"Python {platform.python_version()} ({platform.python_implementation()})")
    lines = [
        f"## Work queue — {now}",
        "",
        f"Machine: {machine}; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}.  ",
        (f"Run: `bench/workqueue.py{' --quick' if args.quick else ''}`, {wall:.0f} s wall. "
         f"add → get → done: {n:,} distinct keys added in chunks of {CHUNK:,} (the producer "
         "yields between chunks) while the workers loop get → done with a no-op reconcile; "
         "items/s = keys / (first add → last done). Trickle: one key per loop turn, so "
         "every get waits and is woken (the informer-handler pattern at low rates). "
         "Requeue: add_rate_limited + forget per "
         f"distinct key ({n_rl:,} keys) on a named RateLimitingQueue with "
         "default_controller_rate_limiter(). Medians of "
         f"{repeats}. No peer measured: the Python peers installable here (kopf, the official "
         "`kubernetes` client) have no work queue."),
        "",
        ("| loop | queue | 1 worker | 8 workers | trickle, 1 worker | add_rate_limited + forget "
        "| target |"),
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for loop_kind, mode, runs in rows:
        rl = f"{_median(runs['rl']):.2f} µs/item" if runs["rl"] else "—"
        target = (f"≥ {TARGET_ONE_WORKER:,}/s with 1 worker {verdict}"
                  if loop_kind == "uvloop" and mode.startswith("named") else "")
        lines.append(f"| {loop_kind} | {mode} | {fmt_rate(runs['1'])} | {fmt_rate(runs['8'])} "
                     f"| {fmt_rate(runs['trickle'])} | {rl} | {target} |")
    details = "; ".join(
        f"{k} {m} {w} worker(s): " + ", ".join(f"{v:,.0f}" for v in runs[w])
        for k, m, runs in rows for w in ("1", "8", "trickle"))
    lines += ["", f"Runs (items/s): {details}.", ""]
    section = "\n".join(lines)
    print(section)
    if args.profile:
        print(_profile(n, "uvloop"))
    if not args.no_record:
        append_results(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
