"""The compact informer near the decode limit, beside client-go, in one short run.

    .venv/bin/python bench/informer_compact.py [--repeats 3] [--no-kube]

Issue 19's two targets for ``SharedInformerFactory(compact_objects=True)`` on
bench/informer.py's replay (the same replay server, child processes and
client-go ``informerbench``, only these rows): the initial sync of 50,000
pods (target <= 0.6 s) and the watch events/s to 2 handlers (10,000 pods,
100,000 MODIFIED events; target >= 100,000/s); beside them client-go's
figures from the same run, and the orjson / compact decode of the same watch
lines alone (one core, no transport; the compact decoder per line and, as the
informer's watch does it, a received 64 KiB chunk's lines at once), which bound
the informer. Every figure
is the median of ``--repeats`` fresh processes, with the client CPU seconds:
on a busy machine the CPU seconds are the steadier number. Prints a Markdown
table (nothing is appended to RESULTS.md: the full bench/informer.py does that).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _replay_server as replay
import informer as ib
from _common import log

SYNC_N = 50_000
WATCH_N = 10_000
EVENTS = 100_000


def decode_floor(repeats: int) -> dict[str, float]:
    """Events/s of orjson.loads and of the compact decoder alone on the replay's lines."""
    import gc

    import orjson

    sys.path.insert(0, os.path.dirname(HERE))
    from pykcm.cache.frozen_object import CompactDecoder

    parts = [replay.event_parts(it) for it in replay.encode_pods(WATCH_N)]
    lines = [h + b"%d" % (replay.LIST_RV + 1 + j) + t for j, (h, t) in enumerate(parts)]
    gc.collect()
    gc.freeze()
    out = {}
    dec = CompactDecoder(strip_managed_fields=True)
    for name, fn in (("orjson", orjson.loads), ("compact", dec.event)):
        rates = []
        for _ in range(max(repeats, 3)):
            c = time.process_time()
            for line in lines:
                fn(line)
            rates.append(len(lines) / (time.process_time() - c))
        out[name] = statistics.median(rates)
    # What the informer's watch does: 64 KiB chunks as received, each chunk's complete
    # lines decoded at once (CompactDecoder.events), the straddling line on its own.
    from pykcm.client.watch import LineSplitter
    stream = b"".join(lines)
    chunks = [stream[i:i + 65536] for i in range(0, len(stream), 65536)]
    rates = []
    for _ in range(max(repeats, 3)):
        splitter = LineSplitter()
        c = time.process_time()
        for chunk in chunks:
            first, block = splitter.feed_block(chunk)
            if first is not None:
                dec.event(first)
            if block is not None:
                dec.events(block)
        rates.append(len(lines) / (time.process_time() - c))
    out["compact-chunks"] = statistics.median(rates)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-kube", action="store_true", help="do not run client-go")
    args = p.parse_args()
    srv = ib.ReplayServer()
    srv.start()
    res: dict[str, list[dict[str, Any]]] = {}
    try:
        from _kube import kit_or_reason
        kit, note = kit_or_reason(args.no_kube)
        cg = kit.binary("informerbench") if kit is not None else None
        kc = os.path.join(tempfile.mkdtemp(prefix="pykcm-bench-compact-"), "kubeconfig")
        ib.write_replay_kubeconfig(srv.url, kc)
        for _ in range(args.repeats):  # interleaved, so that load drifts hit both alike
            srv.configure(n=SYNC_N, events=0, watch_pods=WATCH_N)
            res.setdefault("pykcm-sync", []).append(ib.run_child(
                {"role": "pykcm-sync", "url": srv.url, "n": SYNC_N, "mode": "compact",
                 "timeout": 200, "memory": False}))
            if cg is not None:
                res.setdefault("cg-sync", []).append(ib.run_informerbench(
                    cg, kc, replay.NS, "json", False, SYNC_N))
            srv.configure(n=WATCH_N, events=EVENTS, watch_pods=WATCH_N)
            res.setdefault("pykcm-watch", []).append(ib.run_child(
                {"role": "pykcm-watch", "url": srv.url, "n": WATCH_N, "events": EVENTS,
                 "mode": "compact", "timeout": 200}))
            if cg is not None:
                res.setdefault("cg-watch", []).append(functools.partial(
                    ib.run_informerbench, cg, kc, replay.NS, "json", False, WATCH_N,
                    expect=EVENTS)())
            log(f"bench: round done: {[(k, len(v)) for k, v in res.items()]}")
    finally:
        srv.stop()
    floor = decode_floor(args.repeats)

    def med(key: str, field: str) -> float:
        vals = [r[field] for r in res.get(key, []) if "error" not in r and field in r]
        return statistics.median(vals) if vals else float("nan")

    def runs(key: str, field: str, fmt: str) -> str:
        return ", ".join(fmt.format(r[field]) if field in r else "error"
                         for r in res.get(key, []))

    sync, cg_sync = med("pykcm-sync", "sync_s"), med("cg-sync", "sync_s")
    ev, cg_ev = med("pykcm-watch", "events_per_s"), med("cg-watch", "events_per_s")
    wcpu = med("pykcm-watch", "watch_cpu_s")
    print(f"\nCompact informer vs client-go v1.36.2 (JSON, LIST + WATCH), replay server, "
          f"medians of {args.repeats}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
          + (f"; {note}" if note else "") + "\n")
    print("| metric | pykcm compact | client-go | pykcm ÷ client-go | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| initial sync, {SYNC_N:,} pods | {sync:.2f} s (CPU {med('pykcm-sync', 'sync_cpu_s'):.2f} s) "
          f"| {cg_sync:.2f} s | {sync / cg_sync:.2f}x | <= 0.6 s |")
    print(f"| watch events/s to 2 handlers | {ev:,.0f}/s ({EVENTS / wcpu:,.0f} per CPU-s) "
          f"| {cg_ev:,.0f}/s | {ev / cg_ev:.2f}x | >= 100,000/s |")
    print(f"| decode alone (one core): orjson / compact decoder / compact, a chunk at "
          f"a time | — | — | — | {floor['orjson']:,.0f}/s / {floor['compact']:,.0f}/s / "
          f"{floor['compact-chunks']:,.0f}/s |")
    print(f"\nRuns: pykcm sync {runs('pykcm-sync', 'sync_s', '{:.2f}')}; client-go sync "
          f"{runs('cg-sync', 'sync_s', '{:.2f}')}; pykcm watch "
          f"{runs('pykcm-watch', 'events_per_s', '{:,.0f}')}; client-go watch "
          f"{runs('cg-watch', 'events_per_s', '{:,.0f}')}. The compact path spends "
          f"{EVENTS / floor['compact-chunks'] / wcpu:.0%} of its watch CPU in the decoder "
          f"(the chunk-wise decoder's CPU for the events / the watch window's CPU).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
