"""Benchmark of the informer machinery (pykcm.cache) against client-go and the Python peers.

    .venv/bin/python bench/informer.py [--quick] [--no-record] [--no-profile] [--no-kube]
                                       [--skip-live] [--live-pods N]

One run, the same data for every client: realistic pods of about 2.3 KB of
JSON (bench/_replay_server.py ``make_pod``: labels, annotations, an owner
reference, 2 containers, volumes, tolerations, a managedFields entry, a status
with conditions and containerStatuses), encoded once by a replay server that
runs in a SUBPROCESS (its CPU is on the other core) and answers LIST and WATCH
from those bytes as fast as the socket takes them. Every client runs in a
subprocess of its own (a fresh heap each time):

  1. initial sync of 10,000 and 50,000 pods: from starting the informer to
     has_synced (pykcm: ``SharedIndexInformer.has_synced()``; the official
     client: both handlers have the N adds, which its informer fires before
     it records the list's resourceVersion); 2 counting handlers registered;
  2. retained memory per cached pod: RSS after the sync and a gc.collect()
     minus RSS just before the start, divided by N; pykcm strips managedFields
     with ``set_transform`` (the official client has no transform); plus
     tracemalloc's count for pykcm (a separate 10,000-pod run);
  3. watch throughput: LIST 10,000 pods, then a replay of MODIFIED events
     cycling over them (new resourceVersions) to 2 counting handlers:
     events / (first event in a handler -> last event in both handlers); and
     end-to-end from a real ``pykcm apiserver`` subprocess while a writer
     merge-patches pods (bounded by the server's write rate);
  4. the same for the official ``kubernetes`` client's informer
     (``kubernetes.informer.SharedInformer``: a thread, models) and for kopf
     (``kopf.operator`` in-process, standalone, clusterwide, one async
     ``@kopf.on.event`` pods handler; events/s only);
  5. the floor: decoding the same bytes (fetched from the replay server) with
     orjson and msgspec and nothing else: watch lines/s, and the 50,000-pod
     list with default GC settings and with the GC disabled; plus memory per
     pod of candidate cached representations (tracemalloc).

  6. side by side, the two ways an application gets its informers from
     ``SharedInformerFactory``: its default path (dict trees, the factory's GC
     policy: raised thresholds from start(), gc.freeze() once synced) and the
     opt-in compact objects (``compact_objects=True``: read-only FrozenObjects
     decoded straight from the bytes, pykcm.cache.frozen_object), both with
     ``transform=strip_managed_fields``: sync of 10,000 and 50,000 pods, RSS
     and tracemalloc per pod, watch events/s.

  7. client-go v1.36.2 (the kube-v1.36 kit's ``informerbench``: a
     SharedInformerFactory pod informer with 2 counting handlers) on the same
     replay: JSON and protobuf Accept (the replay answers JSON whatever the
     Accept), LIST + WATCH (``KUBE_FEATURE_WatchListClient=false``) and
     watch-list (``=true``, the replay serving it): sync of 10,000 and 50,000
     pods, RSS per pod, watch events/s. Every pykcm figure of items 1-3 and 6
     stands next to client-go's (JSON, LIST + WATCH) with the ratio.
  8. the live API servers: the real kube-apiserver v1.36.2 + etcd (the kit)
     and ``pykcm apiserver`` (durable, TLS), each loaded with the same 10,000
     pods; every informer above (client-go's four, pykcm's plain and compact)
     syncs from each (the server's pod LIST/WATCH counts tell whether
     watch-list was used), then counts the events of 10,000 merge-patches by
     32 writers (end-to-end, bounded by the server's write rate).

Without the kit (``../shared/kube-v1.36`` or ``$PYKCM_KUBE_KIT``) items 7-8
are skipped, with one line saying so, except pykcm on its own server.

Then pykcm is profiled (py-spy, native frames, so that time in the cyclic GC
shows as ``gc_collect_main``) on the 50,000-pod sync and on the watch replay,
for the plain informer and for the compact objects.
Prints a Markdown section and appends it to bench/RESULTS.md (--no-record to
skip). --quick: small sizes, one repeat (smoke run). Medians of 3 where time
allows (a single run that is too slow is not repeated; the table says so).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import functools
import gc
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
from _common import (
    append_results,
    busy_cpu_seconds,
    cpu_model,
    log,
    machine_load,
    wait_idle,
)

RESULTS = os.path.join(HERE, "RESULTS.md")
sys.path.insert(0, HERE)

import _replay_server as replay

KIB = 1024.0

# The issue's targets for pykcm (judged in the tables' target columns).
TARGET = {"events": (">=", 40_000.0), "sync50k": ("<=", 1.8), "mem_kib": ("<=", 4.0)}
# The application-level GC setting of the "tuned GC" runs (gen0, gen1, gen2 thresholds).
GC_TUNED = (100_000, 50, 1000)
# SharedInformerFactory's default path, and the same with compact_objects=True.
MODES = ("factory", "compact")


# =========================================================================================
# Child side: each measurement runs in a fresh process (`--child JSON`).
# =========================================================================================


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class GCStats:
    """Time spent in the cyclic GC, per generation (gc.callbacks)."""

    def __init__(self) -> None:
        self.secs = 0.0
        self.count = [0, 0, 0]
        self.secs_gen = [0.0, 0.0, 0.0]
        self._t = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t = time.perf_counter()
        else:
            d = time.perf_counter() - self._t
            g = info["generation"]
            self.secs += d
            self.secs_gen[g] += d
            self.count[g] += 1

    def snap(self) -> tuple[float, list[int], list[float]]:
        return self.secs, list(self.count), list(self.secs_gen)

    @staticmethod
    def delta(a: tuple[float, list[int], list[float]], b: tuple[float, list[int], list[float]]
              ) -> dict[str, Any]:
        return {"gc_s": b[0] - a[0], "gc_n": [y - x for x, y in zip(a[1], b[1])],
                "gc_s_gen": [y - x for x, y in zip(a[2], b[2])]}


class Counting:
    """A pykcm event handler that counts (two of them are registered)."""

    def __init__(self) -> None:
        self.adds = 0
        self.updates = 0
        self.first_add = 0.0
        self.last_add = 0.0
        self.first_update = 0.0
        self.last_update = 0.0

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.adds += 1
        self.last_add = time.perf_counter()

    def on_update(self, old: Any, new: Any) -> None:
        n = self.updates = self.updates + 1
        t = time.perf_counter()
        if n == 1:
            self.first_update = t
        self.last_update = t

    def on_delete(self, obj: Any) -> None:
        pass


def strip_managed_fields(obj: Any) -> Any:
    """The usual informer transform (kube-controller-manager's, too)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if meta is not None:
        meta.pop("managedFields", None)
    return obj


async def _wait(cond: Any, timeout: float, step: float = 0.002) -> bool:
    deadline = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(step)
    return True


async def child_pykcm(p: dict[str, Any]) -> dict[str, Any]:
    """role pykcm-sync / pykcm-watch / pykcm-e2e."""
    from pykcm.cache import ListWatch, SharedIndexInformer
    from pykcm.client import Client, Config, load_kube_config

    role = p["role"]
    n = int(p.get("n", 0))
    events = int(p.get("events", 0))
    cfg = load_kube_config(p["kubeconfig"]) if p.get("kubeconfig") else Config(host=p["url"])
    client = Client(cfg)
    mode = p.get("mode", "informer")
    factory: Any = None
    if mode == "informer":
        inf = SharedIndexInformer(ListWatch(client, "pods", namespace=p.get("namespace")))
        if p.get("transform", True):
            inf.set_transform(strip_managed_fields)
    else:
        # "factory": SharedInformerFactory's defaults (its GC policy: raised thresholds
        # from start(), gc.freeze() once wait_for_cache_sync() sees the caches synced);
        # "compact": the same with compact_objects=True (FrozenObject, msgspec).
        from pykcm.informers import SharedInformerFactory
        from pykcm.informers import strip_managed_fields as pykcm_strip
        factory = SharedInformerFactory(
            client, namespace=p.get("namespace"), name="",
            transform=pykcm_strip if p.get("transform", True) else None,
            compact_objects=mode == "compact", tune_gc=p.get("tune_gc", True))
        inf = factory.core_v1.pods.informer
    h1, h2 = Counting(), Counting()
    inf.add_event_handler(h1)
    inf.add_event_handler(h2)
    gcs = GCStats()
    if p.get("gc_tuned"):
        gc.set_threshold(*GC_TUNED)
    if p.get("tracemalloc"):
        import tracemalloc
        tracemalloc.start()
    gc.collect()
    rss0 = rss()
    tm0 = 0
    if p.get("tracemalloc"):
        import tracemalloc
        tm0 = tracemalloc.get_traced_memory()[0]
    g0 = gcs.snap()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    if factory is not None:
        factory.start()
        task = None
    else:
        task = asyncio.get_running_loop().create_task(inf.run())
    out: dict[str, Any] = {"role": role, "n": n, "mode": mode}
    if not await _wait(inf.has_synced, p.get("timeout", 120)):
        raise RuntimeError(f"not synced after {p.get('timeout', 120)} s")
    t_sync = time.perf_counter()
    if p.get("gc_tuned"):
        gc.freeze()  # the synced cache: out of every later collection
    if factory is not None:
        await factory.wait_for_cache_sync()  # the factory's gc.freeze() (tune_gc)
    out["sync_s"] = t_sync - t0
    out["sync_cpu_s"] = time.process_time() - cpu0
    out.update(GCStats.delta(g0, gcs.snap()))
    await _wait(lambda: h1.adds >= n and h2.adds >= n, 60)
    out["handlers_synced_s"] = max(h1.last_add, h2.last_add) - t0
    out["adds"] = [h1.adds, h2.adds]
    out["cached"] = len(inf.get_store().list_keys())
    if role == "pykcm-e2e":
        print("SYNCED", flush=True)
    if role in ("pykcm-watch", "pykcm-e2e"):
        g1 = gcs.snap()
        cpu1 = time.process_time()
        ok = await _wait(lambda: h1.updates >= events and h2.updates >= events,
                         p.get("timeout", 120), 0.005)
        t_end = time.monotonic()
        first = min(h1.first_update, h2.first_update)
        last = max(h1.last_update, h2.last_update)
        out["updates"] = [h1.updates, h2.updates]
        out["complete"] = ok
        out["watch_s"] = last - first
        out["events_per_s"] = min(h1.updates, h2.updates) / (last - first) if last > first \
            else float("nan")
        out["watch_cpu_s"] = time.process_time() - cpu1
        out["watch_gc"] = GCStats.delta(g1, gcs.snap())
        # perf_counter and monotonic are the same clock on Linux; the e2e
        # writer compares it with its own.
        out["last_event_monotonic"] = t_end - (time.perf_counter() - last)
        out["first_event_monotonic"] = t_end - (time.perf_counter() - first)
    elif p.get("memory", True):  # (not in profiled runs: the collection would show)
        gc.collect()
        out["rss_before"] = rss0
        out["rss_after"] = rss()
        out["rss_per_pod"] = (out["rss_after"] - rss0) / n if n else float("nan")
        if p.get("tracemalloc"):
            import tracemalloc
            out["traced_per_pod"] = (tracemalloc.get_traced_memory()[0] - tm0) / n
    del task
    finish(out)
    return out


def child_official(p: dict[str, Any]) -> dict[str, Any]:
    """role official-sync / official-watch: kubernetes.informer.SharedInformer."""
    from kubernetes import client as kc
    from kubernetes.informer import SharedInformer

    role, n, events = p["role"], int(p["n"]), int(p.get("events", 0))
    conf = kc.Configuration()
    conf.host = p["url"]
    api = kc.CoreV1Api(kc.ApiClient(conf))
    inf = SharedInformer(api.list_pod_for_all_namespaces)  # type: ignore[no-untyped-call]
    st: dict[str, Any] = {"adds": [0, 0], "upd": [0, 0], "first_upd": 0.0, "last_upd": 0.0,
                          "last_add": 0.0}
    synced, watched = threading.Event(), threading.Event()

    def make(i: int) -> tuple[Any, Any]:
        def on_add(obj: Any) -> None:
            a = st["adds"]
            a[i] += 1
            if a[0] >= n and a[1] >= n:
                st["last_add"] = time.perf_counter()
                synced.set()

        def on_mod(obj: Any) -> None:
            u = st["upd"]
            u[i] += 1
            t = time.perf_counter()
            if not st["first_upd"]:
                st["first_upd"] = t
            st["last_upd"] = t
            if u[0] >= events and u[1] >= events:
                watched.set()
        return on_add, on_mod

    for i in (0, 1):
        a, m = make(i)
        inf.add_event_handler("ADDED", a)  # type: ignore[no-untyped-call]
        inf.add_event_handler("MODIFIED", m)  # type: ignore[no-untyped-call]
    gcs = GCStats()
    gc.collect()
    rss0 = rss()
    g0 = gcs.snap()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    inf.start()  # type: ignore[no-untyped-call]
    if not synced.wait(p.get("timeout", 120)):
        raise RuntimeError("not synced in time")
    out: dict[str, Any] = {"role": role, "n": n, "sync_s": st["last_add"] - t0,
                           "sync_cpu_s": time.process_time() - cpu0}
    out.update(GCStats.delta(g0, gcs.snap()))
    out["cached"] = len(inf.cache.list_keys())
    if role == "official-watch":
        g1 = gcs.snap()
        cpu1 = time.process_time()
        ok = watched.wait(p.get("timeout", 120))
        first, last = st["first_upd"], st["last_upd"]
        out["updates"] = list(st["upd"])
        out["complete"] = ok
        out["watch_s"] = last - first
        out["events_per_s"] = min(st["upd"]) / (last - first) if last > first else float("nan")
        out["watch_cpu_s"] = time.process_time() - cpu1
        out["watch_gc"] = GCStats.delta(g1, gcs.snap())
    else:
        gc.collect()
        out["rss_before"] = rss0
        out["rss_after"] = rss()
        out["rss_per_pod"] = (out["rss_after"] - rss0) / n
    return out


async def child_kopf(p: dict[str, Any]) -> dict[str, Any]:
    """role kopf-watch: kopf.operator in-process with one async pods event handler."""
    import logging

    import kopf

    logging.getLogger().setLevel(logging.WARNING)
    n, events, url = int(p["n"]), int(p["events"]), p["url"]
    registry = kopf.OperatorRegistry()
    st: dict[str, Any] = {"listed": 0, "mod": 0, "t_listed": 0.0, "first": 0.0, "last": 0.0}
    done = asyncio.Event()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=url, insecure=True)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.scanning.disabled = True
        settings.watching.server_timeout = 600

    @kopf.on.event("v1", "pods", registry=registry)
    async def on_event(event: Any, **_: Any) -> None:
        t = time.perf_counter()
        if event.get("type") == "MODIFIED":
            k = st["mod"] = st["mod"] + 1
            if k == 1:
                st["first"] = t
            st["last"] = t
            if k >= events:
                done.set()
        else:
            k = st["listed"] = st["listed"] + 1
            if k == n:
                st["t_listed"] = t

    stop = asyncio.Event()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    op = asyncio.get_running_loop().create_task(kopf.operator(
        registry=registry, standalone=True, clusterwide=True, stop_flag=stop))
    try:
        await asyncio.wait_for(done.wait(), p.get("timeout", 120))
        ok = True
    except TimeoutError:
        ok = False
    out: dict[str, Any] = {"role": "kopf-watch", "n": n, "listed": st["listed"],
           "list_handled_s": st["t_listed"] - t0 if st["t_listed"] else float("nan"),
           "updates": [st["mod"]], "complete": ok, "watch_s": st["last"] - st["first"],
           "events_per_s": st["mod"] / (st["last"] - st["first"])
           if st["last"] > st["first"] else float("nan"),
           "cpu_s": time.process_time() - cpu0}
    del op, stop
    finish(out)  # now: kopf's own shutdown is not part of the benchmark
    return out


def child_floor(p: dict[str, Any]) -> dict[str, Any]:
    """role floor: decode the replay server's own bytes with orjson / msgspec only."""
    import urllib.request

    import msgspec
    import orjson

    url, n_list, reps = p["url"], int(p["n"]), int(p.get("repeats", 3))
    out: dict[str, Any] = {"role": "floor"}
    t = time.perf_counter()
    with urllib.request.urlopen(f"{url}/api/v1/pods?resourceVersion=0") as r:
        body = r.read()
    out["list_fetch_s"] = time.perf_counter() - t
    out["list_bytes"] = len(body)
    t = time.perf_counter()
    with urllib.request.urlopen(f"{url}/api/v1/pods?watch=true&resourceVersion="
                                f"{replay.LIST_RV}") as r:
        stream = r.read()
    out["watch_fetch_s"] = time.perf_counter() - t
    lines = stream.split(b"\n")
    if not lines[-1]:
        lines.pop()
    del stream
    out["events"] = len(lines)
    out["event_bytes"] = sum(map(len, lines)) / len(lines)
    gc.collect()
    gc.freeze()  # what the lines and imports cost the GC is not the decoders'

    sample = lines[:50_000]  # enough for a stable rate; the run stays short

    def rate(fn: Any) -> float:
        runs = []
        for _ in range(reps):
            t = time.perf_counter()
            for line in sample:
                fn(line)
            runs.append(len(sample) / (time.perf_counter() - t))
        return statistics.median(runs)

    out["orjson_events_per_s"] = rate(orjson.loads)
    dec = msgspec.json.Decoder()
    out["msgspec_events_per_s"] = rate(dec.decode)

    # Typed metadata + raw spec/status (the "~4 KiB" design): decode rate and memory.
    # (defstruct: this module's postponed annotations would not resolve local classes)
    owner_ref = msgspec.defstruct("OwnerRef", [
        ("apiVersion", str, ""), ("kind", str, ""), ("name", str, ""), ("uid", str, ""),
        ("controller", bool | None, None), ("blockOwnerDeletion", bool | None, None)],
        gc=False, omit_defaults=True)
    meta = msgspec.defstruct("ObjectMeta", [
        ("name", str, ""), ("namespace", str, ""), ("uid", str, ""),
        ("resourceVersion", str, ""), ("generation", int, 0), ("generateName", str, ""),
        ("creationTimestamp", str | None, None), ("deletionTimestamp", str | None, None),
        ("labels", dict[str, str] | None, None), ("annotations", dict[str, str] | None, None),
        ("ownerReferences", list[owner_ref] | None, None),  # type: ignore[valid-type]
        ("finalizers", list[str] | None, None)], gc=False, omit_defaults=True)
    obj_t = msgspec.defstruct("Object", [
        ("metadata", meta), ("spec", msgspec.Raw, msgspec.Raw(b"")),
        ("status", msgspec.Raw, msgspec.Raw(b""))], gc=False)
    event_t = msgspec.defstruct("Event", [("type", str), ("object", obj_t)], gc=False)

    typed = msgspec.json.Decoder(event_t)
    out["msgspec_typed_meta_events_per_s"] = rate(typed.decode)

    def list_decode(fn: Any, disable: bool, reps: int = reps) -> float:
        runs = []
        for _ in range(reps):
            gc.collect()
            if disable:
                gc.disable()
            t = time.perf_counter()
            x = fn(body)
            d = time.perf_counter() - t
            gc.enable()
            del x
            runs.append(d)
        return statistics.median(runs)

    out["orjson_list_gc_s"] = list_decode(orjson.loads, False)
    out["orjson_list_nogc_s"] = list_decode(orjson.loads, True)
    out["msgspec_list_gc_s"] = list_decode(dec.decode, False, 1)  # ~ orjson's: once
    out["msgspec_list_nogc_s"] = list_decode(dec.decode, True, 1)
    out["n_list"] = n_list

    # Memory per pod of candidate cached representations (tracemalloc, 10,000 pods).
    import tracemalloc
    items = orjson.loads(body)["items"][:10_000]
    raws = [orjson.dumps(it) for it in items]
    del lines
    del items
    k = len(raws)
    mem: dict[str, float] = {}

    def measure(label: str, build: Any) -> None:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        held = build()
        gc.collect()
        mem[label] = (tracemalloc.get_traced_memory()[0] - base) / k
        tracemalloc.stop()
        del held

    measure("dict tree (orjson)", lambda: [orjson.loads(r) for r in raws])
    measure("dict tree, managedFields stripped",
            lambda: [strip_managed_fields(orjson.loads(r)) for r in raws])
    # Copies, so that what is held owns its bytes (bytes(b) would be b itself).
    measure("raw JSON bytes only", lambda: [bytes(memoryview(r)) for r in raws])
    item_dec = msgspec.json.Decoder(obj_t)
    measure("typed metadata (msgspec, gc=False) + raw spec/status",
            lambda: [item_dec.decode(bytes(memoryview(r))) for r in raws])
    out["mem_per_pod"] = mem
    out["pod_json_bytes"] = sum(map(len, raws)) / k
    return out


def finish(out: dict[str, Any]) -> None:
    """Report and leave at once (no teardown of informers, threads or operators)."""
    print("RESULT " + json.dumps(out), flush=True)
    os._exit(0)


def child_main(spec: str) -> int:
    p = json.loads(spec)
    role = p["role"]
    try:
        if role.startswith("pykcm"):
            import uvloop
            out = uvloop.run(child_pykcm(p))
        elif role.startswith("official"):
            out = child_official(p)
        elif role.startswith("kopf"):
            import uvloop
            out = uvloop.run(child_kopf(p))
        elif role == "floor":
            out = child_floor(p)
        else:
            raise ValueError(role)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        print("RESULT " + json.dumps({"role": role, "error": f"{type(exc).__name__}: {exc}"}),
              flush=True)
        os._exit(1)
    print("RESULT " + json.dumps(out), flush=True)
    os._exit(0)  # no teardown: informer threads and tasks are still running


# =========================================================================================
# Parent side.
# =========================================================================================


class ReplayServer:
    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 - the server's stderr, kept

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "_replay_server.py")], cwd=REPO,
            stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if not line.startswith("port: "):
            self.err.seek(0)
            raise RuntimeError(f"replay server did not start: {self.err.read()[-2000:]!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def _call(self, method: str, path: str) -> Any:
        import urllib.request
        req = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def configure(self, **cfg: int) -> None:
        q = "&".join(f"{k}={v}" for k, v in cfg.items())
        self._call("POST", f"/_bench/config?{q}")

    def stats(self) -> dict[str, int]:
        return dict(self._call("GET", "/_bench/stats"))

    def cpu_seconds(self) -> float:
        return _proc_cpu(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _proc_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    """CPU seconds (user + system) of the children this process has waited for."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_child(spec: dict[str, Any], timeout: float = 240.0,
              pyspy: str | None = None) -> dict[str, Any]:
    """Run one measurement in a fresh process; its RESULT line as a dict (or an error)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
    if pyspy:
        spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or \
            shutil.which("py-spy")
        if spy:
            cmd = [spy, "record", "--native", "-r", "100", "-f", "raw", "-o", pyspy,
                   "--"] + cmd
    b0 = busy_cpu_seconds()
    c0 = children_cpu()
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, cwd=REPO, capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return {"role": spec["role"], "error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    for line in r.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("RESULT "):
            out: dict[str, Any] = json.loads(line[7:])
            out["wall_s"] = wall
            out["process_cpu_s"] = children_cpu() - c0
            out["machine_busy"] = (busy_cpu_seconds() - b0) / wall
            if "error" in out:
                out["stderr"] = r.stderr.decode("utf-8", "replace")[-1500:]
            return out
    return {"role": spec["role"], "error": f"exit {r.returncode}, no result",
            "stderr": r.stderr.decode("utf-8", "replace")[-1500:]}


def med(runs: list[dict[str, Any]], key: str) -> float:
    vals = [r[key] for r in runs if "error" not in r and isinstance(r.get(key), (int, float))
            and not math.isnan(r[key])]
    return statistics.median(vals) if vals else float("nan")


# -- client-go: the kit's informerbench ---------------------------------------------------

# (content type, WatchListClient) of the client-go runs; JSON with LIST + WATCH is the
# configuration every pykcm figure is compared with (pykcm's client speaks JSON).
CG_VARIANTS: tuple[tuple[str, bool], ...] = (
    ("json", False), ("protobuf", False), ("json", True), ("protobuf", True))
CG_MAIN = "clientgo-json-list"


def cg_key(ct: str, wl: bool) -> str:
    return f"clientgo-{ct}-{'wl' if wl else 'list'}"


def cg_title(ct: str, wl: bool) -> str:
    return (f"client-go {'JSON' if ct == 'json' else 'protobuf Accept'}, "
            f"{'watch-list' if wl else 'LIST + WATCH'}")


def write_replay_kubeconfig(url: str, path: str) -> None:
    """A kubeconfig for the replay server (plain HTTP, no credentials)."""
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: replay
  cluster:
    server: {url}
contexts:
- name: replay
  context:
    cluster: replay
    user: replay
current-context: replay
users:
- name: replay
  user: {{}}
""")


def informerbench_cmd(ib: str, kubeconfig: str, namespace: str, ct: str, expect: int,
                      ready: str, timeout: float) -> list[str]:
    return [ib, "-kubeconfig", kubeconfig, "-namespace", namespace, "-content-type", ct,
            "-expect-events", str(expect), "-ready-file", ready, "-timeout", f"{timeout:.0f}s"]


def informerbench_env(wl: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["KUBE_FEATURE_WatchListClient"] = "true" if wl else "false"
    return env


def parse_informerbench(stdout: str, ready_path: str, n: int, expect: int,
                        base_rss_kb: float | None) -> dict[str, Any]:
    """informerbench's JSON line in the keys the pykcm children use."""
    line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith("{")), "")
    if not line:
        return {"error": "no result line"}
    o = json.loads(line)
    out: dict[str, Any] = {
        "sync_s": o["sync_seconds"], "cached": o["synced_objects"],
        "adds": o["handler_initial_adds"], "watch_list_client": o["watch_list_client"],
        "content_type": o["content_type"], "max_rss_kb": o["max_rss_kb"]}
    if not o["synced"]:
        out["error"] = f"not synced ({o['synced_objects']} objects)"
        return out
    try:
        with open(ready_path) as f:
            ready = json.load(f)
        out["rss_at_sync_kb"] = ready["rss_kb"]
        if base_rss_kb is not None and n:
            out["rss_per_pod"] = (ready["rss_kb"] - base_rss_kb) * KIB / n
    except (OSError, ValueError, KeyError):
        pass
    if expect:
        window = o["events_seconds"] - o["first_event_seconds"]
        out["updates"] = o["handler_updates"]
        out["complete"] = not o["timed_out"]
        out["watch_s"] = window
        out["events_per_s"] = o["events"] / window if window > 0 else float("nan")
    return out


def run_informerbench(ib: str, kubeconfig: str, namespace: str, ct: str, wl: bool, n: int,
                      expect: int = 0, base_rss_kb: float | None = None,
                      timeout: float = 240.0) -> dict[str, Any]:
    """One informerbench process: sync (and `expect` watch events); its result."""
    tmp = tempfile.mkdtemp(prefix="pykcm-bench-ib-")
    ready = os.path.join(tmp, "ready.json")
    b0, c0 = busy_cpu_seconds(), children_cpu()
    t0 = time.perf_counter()
    try:
        r = subprocess.run(informerbench_cmd(ib, kubeconfig, namespace, ct, expect, ready,
                                             timeout), env=informerbench_env(wl),
                           capture_output=True, timeout=timeout + 30, check=False,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    out = parse_informerbench(r.stdout.decode("utf-8", "replace"), ready, n, expect,
                              base_rss_kb)
    shutil.rmtree(tmp, ignore_errors=True)
    out.update({"role": f"{cg_key(ct, wl)}", "n": n, "wall_s": wall,
                "process_cpu_s": children_cpu() - c0,
                "machine_busy": (busy_cpu_seconds() - b0) / wall})
    if r.returncode != 0 and "error" not in out:
        out["error"] = f"exit {r.returncode}"
    if "error" in out:
        out["stderr"] = r.stderr.decode("utf-8", "replace")[-1500:]
    return out


# -- the live API servers -----------------------------------------------------------------


class LiveServer:
    """kube-apiserver + etcd (the kit) or `pykcm apiserver` (durable, TLS), loaded with pods."""

    def __init__(self, kind: str, kit: Any) -> None:
        self.kind = kind
        self.srv: Any
        if kind == "kube":
            from _kube import KubeServer
            self.srv = KubeServer(kit, "informer-kube")
        else:
            from apiserver import ServerProc
            self.srv = ServerProc("informer-pykcm", durable=True, tls=True)
        self.kubeconfig = ""

    def start(self) -> None:
        self.srv.start()
        self.kubeconfig = self.srv.kubeconfig

    def cpu_seconds(self) -> float:
        return float(self.srv.cpu_seconds())

    def stop(self) -> None:
        self.srv.stop()


def live_pod(i: int) -> bytes:
    """The replay's pod i as a client creates it (bound to its node as in the replay)."""
    pod = replay.make_pod(i, server_fields=False)
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    pod["spec"]["nodeName"] = f"node-{i % 200:03d}"
    return json.dumps(pod).encode()


async def pod_requests(s: Any, base: str) -> Counter[str]:
    """The server's apiserver_request_total for pods, by verb (LIST, WATCH, ...)."""
    from prometheus_client.parser import text_string_to_metric_families
    out: Counter[str] = Counter()
    async with s.get(base + "/metrics") as r:
        text = await r.text()
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            if (smp.name == "apiserver_request_total" and smp.labels.get("resource") == "pods"
                    and not smp.labels.get("subresource")):
                out[smp.labels.get("verb", "?")] += int(smp.value)
    return out


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        self.sizes = (1_000, 5_000) if args.quick else (10_000, 50_000)
        self.watch_n = 1_000 if args.quick else 10_000
        self.events = {"pykcm": 20_000 if args.quick else 100_000,
                       "official": 5_000 if args.quick else 20_000,
                       "kopf": 2_000 if args.quick else 10_000}
        self.repeats = 1 if args.quick else 3
        self.live_n = args.live_pods or self.sizes[0]
        self.live_updates = args.live_updates or (1_000 if args.quick else 10_000)
        self.res: dict[str, Any] = {}
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.srv = ReplayServer()
        self.tmp = tempfile.mkdtemp(prefix="pykcm-bench-informer-")
        from _kube import kit_or_reason
        self.kit, self.kube_note = kit_or_reason(args.no_kube)
        self.ib: str | None = None
        if self.kit is not None:
            try:
                self.ib = self.kit.binary("informerbench")
            except RuntimeError as exc:  # KitError
                self.kit, self.kube_note = None, f"real Kubernetes components not run: {exc}"
        if self.kube_note:
            log(f"bench: {self.kube_note}")

    # -- helpers ----------------------------------------------------------------------

    def runs(self, label: str, spec: dict[str, Any] | Callable[[], dict[str, Any]], *,
             max_single: float = 1e9, repeats: int | None = None) -> list[dict[str, Any]]:
        """Up to `repeats` fresh-process runs; stop repeating if one run takes > max_single s.

        `spec`: a child's spec (run_child), or a function that runs one client
        (client-go's informerbench) and returns its result in the same keys."""
        out = []
        for i in range(repeats or self.repeats):
            r = spec() if callable(spec) else run_child(spec)
            out.append(r)
            if "error" in r:
                self.errors.append(f"{label}: {r['error']}")
                log(f"  {label} #{i + 1}: ERROR {r['error']}\n{r.get('stderr', '')}")
                break
            log(f"  {label} #{i + 1}: " + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in r.items() if k in (
                    "sync_s", "handlers_synced_s", "rss_per_pod", "traced_per_pod",
                    "events_per_s", "gc_s", "watch_s", "updates", "cached", "wall_s",
                    "machine_busy", "listed", "list_handled_s", "process_cpu_s",
                    "watch_list_client")))
            if r["wall_s"] > max_single and i + 1 < (repeats or self.repeats):
                self.notes.append(f"{label}: one run only ({r['wall_s']:.0f} s a run)")
                break
        return out

    # -- phases -----------------------------------------------------------------------

    def phase_floor(self) -> None:
        n = self.sizes[1]
        self.srv.configure(n=n, events=self.events["pykcm"], watch_pods=self.watch_n)
        log(f"floor: decode the replay's bytes ({n:,}-pod list, "
            f"{self.events['pykcm']:,} watch lines)")
        r = run_child({"role": "floor", "url": self.srv.url, "n": n,
                       "repeats": self.repeats}, timeout=300)
        if "error" in r:
            self.errors.append(f"floor: {r['error']}")
            log(f"  floor: ERROR {r['error']}\n{r.get('stderr', '')}")
        else:
            log("  floor: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else
                                        f"{k}={v}" for k, v in r.items()))
        self.res["floor"] = r

    def phase_sync(self, client: str) -> None:
        for n in self.sizes:
            self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
            spec: dict[str, Any] = {"role": f"{client}-sync", "url": self.srv.url, "n": n,
                                    "timeout": 200}
            log(f"{client}: initial sync of {n:,} pods")
            self.res[f"{client}-sync-{n}"] = self.runs(f"{client} sync {n}", spec,
                                                       max_single=15)

    def phase_pykcm_extra(self) -> None:
        n = self.sizes[0]
        self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
        log(f"pykcm: tracemalloc run ({n:,} pods); a run without the transform")
        self.res["pykcm-tracemalloc"] = self.runs(
            "pykcm tracemalloc", {"role": "pykcm-sync", "url": self.srv.url, "n": n,
                                  "tracemalloc": True}, repeats=1)
        self.res["pykcm-notransform"] = self.runs(
            "pykcm no transform", {"role": "pykcm-sync", "url": self.srv.url, "n": n,
                                   "transform": False}, repeats=1)
        self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n), watchlist=1)
        log(f"pykcm: sync of {n:,} pods by watch-list (replay server offers it)")
        self.res["pykcm-watchlist"] = self.runs(
            "pykcm watch-list", {"role": "pykcm-sync", "url": self.srv.url, "n": n},
            repeats=1)
        self.srv.configure(watchlist=0)
        # What an application can do without changing the library: GC thresholds
        # raised (and the cache frozen once synced). Shows what the GC costs.
        n = self.sizes[1]
        self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
        log(f"pykcm: sync of {n:,} pods and watch replay with app-tuned GC thresholds")
        self.res["pykcm-gctuned-sync"] = self.runs(
            "pykcm tuned-GC sync", {"role": "pykcm-sync", "url": self.srv.url, "n": n,
                                    "gc_tuned": True}, repeats=1)
        ev = self.events["pykcm"]
        self.srv.configure(n=self.watch_n, events=ev, watch_pods=self.watch_n)
        self.res["pykcm-gctuned-watch"] = self.runs(
            "pykcm tuned-GC watch", {"role": "pykcm-watch", "url": self.srv.url,
                                     "n": self.watch_n, "events": ev, "gc_tuned": True},
            repeats=1)

    def phase_modes(self) -> None:
        """The factory's default path and its opt-in compact objects, side by side."""
        for mode in MODES:
            for n in self.sizes:
                self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
                log(f"pykcm {mode}: initial sync of {n:,} pods")
                self.res[f"{mode}-sync-{n}"] = self.runs(
                    f"pykcm {mode} sync {n}", {"role": "pykcm-sync", "url": self.srv.url,
                                               "n": n, "mode": mode, "timeout": 200})
            n = self.sizes[0]
            self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
            self.res[f"{mode}-tracemalloc"] = self.runs(
                f"pykcm {mode} tracemalloc", {"role": "pykcm-sync", "url": self.srv.url,
                                              "n": n, "mode": mode, "tracemalloc": True},
                repeats=1)
            ev = self.events["pykcm"]
            self.srv.configure(n=self.watch_n, events=ev, watch_pods=self.watch_n)
            log(f"pykcm {mode}: watch replay of {ev:,} MODIFIED events over "
                f"{self.watch_n:,} pods")
            self.res[f"{mode}-watch"] = self.runs(
                f"pykcm {mode} watch", {"role": "pykcm-watch", "url": self.srv.url,
                                        "n": self.watch_n, "events": ev, "mode": mode,
                                        "timeout": 200})

    def phase_watch(self, client: str) -> None:
        ev = self.events[client]
        self.srv.configure(n=self.watch_n, events=ev, watch_pods=self.watch_n)
        log(f"{client}: watch replay of {ev:,} MODIFIED events over {self.watch_n:,} pods")
        spec = {"role": f"{client}-watch", "url": self.srv.url, "n": self.watch_n,
                "events": ev, "timeout": 200}
        self.res[f"{client}-watch"] = self.runs(f"{client} watch", spec,
                                                max_single=10 if client == "kopf" else 25)

    def phase_profile(self) -> None:
        tmp = tempfile.mkdtemp(prefix="pykcm-bench-informer-")
        prof: dict[str, Any] = {}
        n = self.sizes[1]
        self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
        log(f"profile: pykcm sync of {n:,} pods under py-spy --native")
        path = os.path.join(tmp, "sync.txt")
        r = run_child({"role": "pykcm-sync", "url": self.srv.url, "n": n, "memory": False},
                      pyspy=path)
        prof["sync"] = (r, summarize_pyspy(path))
        ev = self.events["pykcm"] // 2
        self.srv.configure(n=self.watch_n, events=ev, watch_pods=self.watch_n)
        log(f"profile: pykcm watch replay of {ev:,} events under py-spy --native")
        path = os.path.join(tmp, "watch.txt")
        r = run_child({"role": "pykcm-watch", "url": self.srv.url, "n": self.watch_n,
                       "events": ev}, pyspy=path)
        prof["watch"] = (r, summarize_pyspy(path))
        self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
        log(f"profile: pykcm compact objects, sync of {n:,} pods under py-spy --native")
        path = os.path.join(tmp, "compact-sync.txt")
        r = run_child({"role": "pykcm-sync", "url": self.srv.url, "n": n, "memory": False,
                       "mode": "compact"}, pyspy=path)
        prof["compact sync"] = (r, summarize_pyspy(path))
        ev = self.events["pykcm"]
        self.srv.configure(n=self.watch_n, events=ev, watch_pods=self.watch_n)
        log(f"profile: pykcm compact objects, watch replay of {ev:,} events under py-spy")
        path = os.path.join(tmp, "compact-watch.txt")
        r = run_child({"role": "pykcm-watch", "url": self.srv.url, "n": self.watch_n,
                       "events": ev, "mode": "compact"}, pyspy=path)
        prof["compact watch"] = (r, summarize_pyspy(path))
        self.res["profile"] = prof
        shutil.rmtree(tmp, ignore_errors=True)

    def phase_clientgo(self) -> None:
        """client-go's informerbench on the same replay: JSON and protobuf Accept, LIST or
        watch-list (the replay server serves watch-list for those runs, JSON always)."""
        if self.ib is None:
            return
        ib = self.ib
        kc = os.path.join(self.tmp, "replay-kubeconfig")
        write_replay_kubeconfig(self.srv.url, kc)
        self.srv.configure(n=1, events=0, watch_pods=1, watchlist=0)
        base = run_informerbench(ib, kc, replay.NS, "json", False, 1)
        self.res["clientgo-base"] = base
        base_kb = base.get("rss_at_sync_kb")
        log(f"client-go: RSS of a 1-pod sync {base_kb} KiB (the baseline of RSS per pod)")
        for ct, wl in CG_VARIANTS:
            key, title = cg_key(ct, wl), cg_title(ct, wl)
            self.srv.configure(watchlist=int(wl))
            st0 = self.srv.stats()
            for n in self.sizes:
                self.srv.configure(n=n, events=0, watch_pods=min(n, self.watch_n))
                log(f"{title}: initial sync of {n:,} pods")
                self.res[f"{key}-sync-{n}"] = self.runs(f"{title} sync {n}", functools.partial(
                    run_informerbench, ib, kc, replay.NS, ct, wl, n, base_rss_kb=base_kb))
            ev = self.events["pykcm"]
            self.srv.configure(n=self.watch_n, events=ev, watch_pods=self.watch_n)
            log(f"{title}: watch replay of {ev:,} MODIFIED events over {self.watch_n:,} pods")
            self.res[f"{key}-watch"] = self.runs(f"{title} watch", functools.partial(
                run_informerbench, ib, kc, replay.NS, ct, wl, self.watch_n, expect=ev))
            st1 = self.srv.stats()
            self.res[f"{key}-replay"] = {k: st1[k] - st0[k] for k in (
                "list", "watch_list", "watch_refused")}
        self.srv.configure(watchlist=0)

    def phase_live(self) -> None:
        """Every informer against the real kube-apiserver and `pykcm apiserver`, each
        loaded with the same pods: sync, and events/s while 32 writers merge-patch."""
        if self.args.skip_live:
            return
        import uvloop
        for kind in ("kube", "pykcm"):
            if kind == "kube" and self.kit is None:
                continue
            srv = LiveServer(kind, self.kit)
            try:
                srv.start()
                self.res[f"live-{kind}"] = uvloop.run(self.live(kind, srv))
            except Exception as exc:  # noqa: BLE001 - reported in the section
                self.errors.append(f"live {kind}: {type(exc).__name__}: {exc}")
                log(f"live {kind}: ERROR {exc!r}")
            finally:
                srv.stop()

    def live_clients(self) -> list[tuple[str, str, str, bool]]:
        """(key, title, content type or pykcm mode, watch-list) of the clients run live."""
        out = [(cg_key(ct, wl), cg_title(ct, wl), ct, wl) for ct, wl in CG_VARIANTS] \
            if self.ib else []
        return out + [("pykcm-informer", "pykcm `SharedIndexInformer`", "informer", False),
                      ("pykcm-compact", "pykcm compact objects", "compact", False)]

    async def live(self, kind: str, srv: LiveServer) -> dict[str, Any]:
        import aiohttp
        import orjson

        n, updates = self.live_n, self.live_updates
        s_ = srv.srv
        base, kubeconfig = s_.url, srv.kubeconfig
        path = f"/api/v1/namespaces/{replay.NS}/pods"
        out: dict[str, Any] = {"n": n, "updates": updates, "clients": {}}
        base_kb = (self.res.get("clientgo-base") or {}).get("rss_at_sync_kb")
        async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=32, ssl=s_.ssl or False),
                headers={"Authorization": f"Bearer {s_.token}", "Accept": "application/json",
                         "Accept-Encoding": "identity"},
                timeout=aiohttp.ClientTimeout(total=600)) as s:

            async def post(p: str, body: bytes, ok: tuple[int, ...] = (201, 409)) -> None:
                async with s.post(base + p, data=body,
                                  headers={"Content-Type": "application/json"}) as r:
                    data = await r.read()
                    if r.status not in ok:
                        raise RuntimeError(f"POST {p}: HTTP {r.status} {data[:300]!r}")

            await post("/api/v1/namespaces", orjson.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": replay.NS}}))
            # no token volume from kube-apiserver's admission: the same pods on both
            await post(f"/api/v1/namespaces/{replay.NS}/serviceaccounts", orjson.dumps(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"},
                 "automountServiceAccountToken": False}))
            bodies = [live_pod(i) for i in range(n)]
            log(f"live {kind}: loading {n:,} pods")
            t = time.perf_counter()
            await pool(n, lambda i: post(path, bodies[i], ok=(201,)))
            out["load_rate"] = n / (time.perf_counter() - t)
            name0 = orjson.loads(bodies[0])["metadata"]["name"]
            async with s.get(f"{base}{path}/{name0}") as r:
                raw = await r.read()
            mf = orjson.loads(raw)["metadata"].get("managedFields")
            out["stored_pod_bytes"] = len(raw)
            out["managed_fields_bytes"] = len(orjson.dumps(mf)) if mf else 0
            async with s.get(f"{base}{path}?limit=1", headers={
                    "Accept": "application/vnd.kubernetes.protobuf,application/json"}) as r:
                await r.read()
                out["protobuf_served"] = r.headers.get("Content-Type", "?")
            for gen, (key, title, mode, wl) in enumerate(self.live_clients(), 1):
                await asyncio.sleep(0.5)  # requests are counted when they end
                m0 = await pod_requests(s, base)
                if key.startswith("clientgo"):
                    ib = self.ib
                    assert ib is not None
                    fn: dict[str, Any] | Callable[[], dict[str, Any]] = functools.partial(
                        run_informerbench, ib, kubeconfig, replay.NS, mode, wl, n,
                        base_rss_kb=base_kb)
                else:
                    fn = {"role": "pykcm-sync", "kubeconfig": kubeconfig, "n": n,
                          "namespace": replay.NS, "mode": mode, "timeout": 200}
                log(f"live {kind}: {title}, initial sync of {n:,} pods")
                runs = self.runs(f"live {kind} {title} sync", fn)
                await asyncio.sleep(0.5)
                m1 = await pod_requests(s, base)
                # LISTs only: a watch is counted when the server notices its end, which
                # may be seconds after the client left.
                lists = (m1["LIST"] - m0.get("LIST", 0)) / max(1, len(runs))
                log(f"live {kind}: {title}, {updates:,} merge-patches by 32 writers")
                try:
                    e2e = await self.live_watch(s, base + path, srv, key, mode, wl, n,
                                                updates, gen, kubeconfig)
                except Exception as exc:  # noqa: BLE001 - reported in the section
                    e2e = {"error": f"{type(exc).__name__}: {exc}"}
                    self.errors.append(f"live {kind} {title} watch: {e2e['error']}")
                log(f"  live {kind} {title}: " + ", ".join(
                    f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in e2e.items() if k in ("events_per_s", "write_rate",
                                                     "updates", "error")))
                out["clients"][key] = {"title": title, "sync": runs, "lists": lists,
                                       "e2e": e2e}
        return out

    async def live_watch(self, s: Any, pods_url: str, srv: LiveServer, key: str, mode: str,
                         wl: bool, n: int, updates: int, gen: int, kubeconfig: str
                         ) -> dict[str, Any]:
        """One informer started and synced, then `updates` merge-patches by 32 writers; the
        events/s its second handler saw (first -> last event)."""
        import orjson

        tmp = tempfile.mkdtemp(prefix="pykcm-bench-live-")
        ready = os.path.join(tmp, "ready.json")
        child: asyncio.subprocess.Process | None = None
        fails: Counter[str] = Counter()
        try:
            if key.startswith("clientgo"):
                assert self.ib is not None
                child = await asyncio.create_subprocess_exec(
                    *informerbench_cmd(self.ib, kubeconfig, replay.NS, mode, updates, ready,
                                       300), env=informerbench_env(wl),
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                deadline = time.monotonic() + 120
                while not os.path.exists(ready):
                    if child.returncode is not None or time.monotonic() > deadline:
                        raise RuntimeError("informerbench did not sync")
                    await asyncio.sleep(0.01)
            else:
                spec = {"role": "pykcm-e2e", "kubeconfig": kubeconfig, "n": n,
                        "namespace": replay.NS, "events": updates, "timeout": 300,
                        "mode": mode}
                child = await asyncio.create_subprocess_exec(
                    sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec),
                    cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                assert child.stdout is not None
                first = await asyncio.wait_for(child.stdout.readline(), 120)
                if not first.startswith(b"SYNCED"):
                    raise RuntimeError(f"informer did not sync: {first[-300:]!r}")
            await asyncio.sleep(0.2)
            names = [f"web-7d9f8b6c5-{i:06d}" for i in range(n)]
            last_done = 0.0

            async def patch(i: int) -> None:
                nonlocal last_done
                body = orjson.dumps({"metadata": {"labels": {"rollout": f"g{gen}-{i}"}}})
                async with s.patch(f"{pods_url}/{names[i % n]}", data=body, headers={
                        "Content-Type": "application/merge-patch+json"}) as r:
                    await r.read()
                    if r.status != 200:
                        fails[f"patch {r.status}"] += 1
                last_done = time.monotonic()

            cpu0 = srv.cpu_seconds()
            w0 = time.monotonic()
            await pool(updates, patch)
            w_secs = last_done - w0
            srv_cpu = srv.cpu_seconds() - cpu0
            rest, err = await asyncio.wait_for(child.communicate(), 330)
            text = rest.decode("utf-8", "replace")
            if key.startswith("clientgo"):
                res = parse_informerbench(text, ready, n, updates, None)
            else:
                res = next((json.loads(ln[7:]) for ln in text.splitlines()
                            if ln.startswith("RESULT ")), {"error": "no result"})
            if "error" in res:
                raise RuntimeError(f"{res['error']}: {err.decode(errors='replace')[-800:]}")
            res.update({"write_rate": updates / w_secs, "server_cpu_share": srv_cpu / w_secs,
                        "fails": dict(fails)})
            return res
        finally:
            if child is not None and child.returncode is None:
                child.kill()
                await child.wait()
            shutil.rmtree(tmp, ignore_errors=True)

    def run(self) -> None:
        t0 = time.perf_counter()
        self.load_note = machine_load()
        self.srv.start()
        try:
            self.phase_floor()
            self.phase_sync("pykcm")
            self.phase_watch("pykcm")
            self.phase_pykcm_extra()
            self.phase_modes()
            self.phase_clientgo()
            self.phase_sync("official")
            self.phase_watch("official")
            self.phase_watch("kopf")
            self.res["replay_stats"] = self.srv.stats()
            self.res["replay_cpu_s"] = self.srv.cpu_seconds()
        finally:
            self.srv.stop()
        self.phase_live()
        if not self.args.no_profile:
            self.srv = ReplayServer()
            self.srv.start()
            try:
                self.phase_profile()
            finally:
                self.srv.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.wall = time.perf_counter() - t0


async def pool(n: int, fn: Callable[[int], Any], concurrency: int = 32) -> None:
    """fn(0..n-1) on `concurrency` workers."""
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            await fn(i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


# -- py-spy summary ---------------------------------------------------------------------


def summarize_pyspy(path: str) -> dict[str, Any]:
    """Shares of the samples of the measured process, imports left out (py-spy raw output).

    ``self``: each sample goes to the innermost Python function on its stack
    (native code such as orjson's decoder counts for the Python function that
    called it), or to "cyclic GC" when the GC is anywhere on the stack.
    ``incl``: the share of samples with the function anywhere on the stack.
    """
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    total = 0
    self_c: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for ln in lines:
        stack, _, cnt = ln.rpartition(" ")
        if not stack or not cnt.isdigit():
            continue
        frames = [_frame_name(fr) for fr in stack.split(";") if fr]
        if any(f.startswith("_find_and_load") for f in frames):
            continue  # imports, before the measurement starts
        c = int(cnt)
        total += c
        self_c[_self_bucket(frames)] += c
        for name in set(frames):
            if ".py)" in name:
                incl[name] += c
        if any(f == GC_FRAME for f in frames):
            incl["cyclic GC (gc_collect_main)"] += c
    if not total:
        return {}
    return {"samples": total,
            "self": [(k, v / total) for k, v in self_c.most_common(16)],
            "incl": {k: v / total for k, v in incl.items()}}


GC_FRAME = "gc_collect_main"
PROBE = "typed metadata (msgspec, gc=False) + raw spec/status"


def _frame_name(fr: str) -> str:
    # "func (path/file.py:12)" or "func (libpython3.11.so.1.0)" or "0x7f.. (orjson.so)"
    name, _, where = fr.strip().partition(" (")
    where = where.rstrip(")")
    if ".py:" in where:
        file = where.rsplit(":", 1)[0]
        parts = file.replace("\\", "/").split("/")
        short = "/".join(parts[-2:]) if len(parts) > 1 else parts[0]
        return f"{name} ({short})"
    return name


def _self_bucket(frames: list[str]) -> str:
    if GC_FRAME in frames:
        return "cyclic GC (gc_collect_main)"
    for f in reversed(frames):
        if ".py)" in f:
            return f
    return "(native, no Python frame)"


# -- report -----------------------------------------------------------------------------


def machine() -> str:
    cpu = cpu_model()
    return (f"{platform.machine()}, nproc {len(os.sched_getaffinity(0))}, {cpu}, "
            f"Python {platform.python_version()} ({platform.python_implementation()})")


def f_s(v: float) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:,.2f} s"


def f_rate(v: float) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:,.0f}/s"


def f_kib(v: float) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:,.1f} KiB"


def judge(key: str, v: float) -> str:
    op, lim = TARGET[key]
    if v is None or math.isnan(v):
        return "?"
    ok = v >= lim if op == ">=" else v <= lim
    return "✅" if ok else "❌"


def ratio(p: float, k: float, higher_better: bool) -> str:
    """pykcm ÷ client-go, and which is better."""
    if p is None or k is None or math.isnan(p) or math.isnan(k) or not k:
        return "—"
    r = p / k
    better = r >= 1 if higher_better else r <= 1
    return f"{r:.2f}× ({'pykcm better' if better else 'client-go better'})"


def report(b: Bench) -> str:
    r = b.res
    n1, n2 = b.sizes
    fl = r.get("floor", {})
    ok_fl = "error" not in fl

    def sync(client: str, n: int) -> float:
        return med(r.get(f"{client}-sync-{n}", []), "sync_s")

    def memk(client: str, n: int) -> float:
        return med(r.get(f"{client}-sync-{n}", []), "rss_per_pod") / KIB

    def ev(client: str) -> float:
        return med(r.get(f"{client}-watch", []), "events_per_s")

    p_s2, p_mem, p_ev = sync("pykcm", n2), memk("pykcm", n2), ev("pykcm")
    L: list[str] = []
    now = _dt.datetime.now(_dt.UTC)
    title = "Informer, side by side with client-go" + (
        " (quick smoke run, not comparable)" if b.quick else "")
    L.append(f"## {title} — {now:%Y-%m-%d %H:%M} UTC")
    L.append("")
    L.append(f"Machine: {machine()}; {b.load_note}.  ")
    pod_b = fl.get("pod_json_bytes", float("nan")) if ok_fl else float("nan")
    ev_b = fl.get("event_bytes", float("nan")) if ok_fl else float("nan")
    L.append(
        f"Run: `bench/informer.py {' '.join(sys.argv[1:])}`, {b.wall:.0f} s wall. "
        f"Pods of {pod_b:,.0f} B JSON as listed ({ev_b:,.0f} B a watch line), pre-encoded "
        "by a replay server in a subprocess (aiohttp, plain HTTP, 127.0.0.1; LIST rv=0 in one "
        "response as the watch cache does; watch-list refused with 422, so every client "
        "LISTs, except in the watch-list runs, where it is served). Every client in a fresh "
        f"process; medians of {b.repeats} where time allows "
        f"({'; '.join(b.notes) or 'all'}). Watch: LIST {b.watch_n:,} pods, then MODIFIED "
        f"events cycling over them ({b.events['pykcm']:,} for pykcm and client-go, "
        f"{b.events['official']:,} for the official client, {b.events['kopf']:,} for kopf), "
        "counted in 2 handlers (kopf: 1), first -> last event. pykcm: `SharedIndexInformer` "
        "+ `ListWatch` + `Client`, uvloop, a transform that strips managedFields; "
        "client-go v1.36.2: the kit's `informerbench` (a `SharedInformerFactory` pod "
        "informer, 2 counting handlers, HasSynced polled every 1 ms; no transform; Go uses "
        "both cores, a pykcm client one); official: `kubernetes.informer.SharedInformer` "
        f"(kubernetes {_version('kubernetes')}; no transform); kopf {_version('kopf')}: "
        "`kopf.operator` standalone, one async `@kopf.on.event` pods handler, uvloop. "
        "Memory per pod: pykcm and the official client, RSS after the sync and a "
        "gc.collect() minus RSS before the start; client-go, RSS when synced minus the RSS "
        "of a 1-pod sync (Go's GC not forced: GOGC=100 leaves room for garbage).")
    L.append("")
    if b.kube_note:
        L.append(f"⚠️ {b.kube_note}; the client-go columns are empty.")
        L.append("")
    L.extend(modes_table(b))
    L.extend(clientgo_table(b))
    L.append("Python peers on the same replay (pykcm: the plain `SharedIndexInformer`):")
    L.append("")
    L.append("| metric | pykcm | official client | kopf | orjson floor | msgspec floor | "
             "target |")
    L.append("|---|---|---|---|---|---|---|")
    L.append(f"| initial sync, {n1:,} pods | **{f_s(sync('pykcm', n1))}** | "
             f"{f_s(sync('official', n1))} | — | — | — | — |")
    L.append(f"| initial sync, {n2:,} pods | **{f_s(p_s2)}** {judge('sync50k', p_s2)} | "
             f"{f_s(sync('official', n2))} | — | "
             f"{f_s(fl.get('orjson_list_gc_s', float('nan')))} decode only | "
             f"{f_s(fl.get('msgspec_list_gc_s', float('nan')))} decode only | ≤ 1.80 s |")
    L.append(f"| same, decode with the GC disabled | — | — | — | "
             f"{f_s(fl.get('orjson_list_nogc_s', float('nan')))} | "
             f"{f_s(fl.get('msgspec_list_nogc_s', float('nan')))} | — |")
    mem_fl = fl.get("mem_per_pod", {}) if ok_fl else {}
    L.append(f"| retained memory per cached pod ({n2:,} pods, RSS) | **{f_kib(p_mem)}** "
             f"{judge('mem_kib', p_mem)} | {f_kib(memk('official', n2))} | — | — | — | "
             "≤ 4.0 KiB |")
    tm = med(r.get("pykcm-tracemalloc", []), "traced_per_pod") / KIB
    L.append(f"| same, tracemalloc ({n1:,} pods) | {f_kib(tm)} | — | — | "
             f"{f_kib(mem_fl.get('dict tree, managedFields stripped', float('nan')) / KIB)} "
             "(its dict tree) | "
             f"{f_kib(mem_fl.get(PROBE, float('nan')) / KIB)} (typed metadata + raw "
             "bytes, see below) | — |")
    L.append(f"| watch events/s to 2 handlers (replay) | **{f_rate(p_ev)}** "
             f"{judge('events', p_ev)} | {f_rate(ev('official'))} | {f_rate(ev('kopf'))} | "
             f"{f_rate(fl.get('orjson_events_per_s', float('nan')))} | "
             f"{f_rate(fl.get('msgspec_events_per_s', float('nan')))} | ≥ 40,000/s |")
    L.append("| probe: decode each event to typed metadata + raw spec/status (msgspec "
             "structs, gc=False) | — | — | — | — | "
             f"{f_rate(fl.get('msgspec_typed_meta_events_per_s', float('nan')))} | — |")
    gts = [x for x in r.get("pykcm-gctuned-sync", []) if "error" not in x]
    gtw = [x for x in r.get("pykcm-gctuned-watch", []) if "error" not in x]
    if gts or gtw:
        L.append(f"| pykcm, application-tuned GC (`gc.set_threshold{GC_TUNED}`, `gc.freeze()` "
                 f"once synced; 1 run) | sync {n2:,}: "
                 f"{f_s(gts[0]['sync_s']) if gts else 'n/a'}; watch: "
                 f"{f_rate(gtw[0]['events_per_s']) if gtw else 'n/a'} | — | — | — | — | — |")
    L.append("")
    L.append("Target column: the issue's targets; ✅/❌ judge pykcm. 1 KiB = 1,024 B.")
    L.append("")
    L.extend(live_table(b))
    # Details.
    d: list[str] = []
    for n in b.sizes:
        runs = [x for x in r.get(f"pykcm-sync-{n}", []) if "error" not in x]
        if runs:
            d.append(
                f"pykcm sync {n:,}: runs {seq(runs, 'sync_s', '{:.2f}')} s; "
                f"handlers got every add at {med(runs, 'handlers_synced_s'):.2f} s; CPU "
                f"{med(runs, 'sync_cpu_s'):.2f} s; cyclic GC {med(runs, 'gc_s'):.2f} s "
                f"({med(runs, 'gc_s') / med(runs, 'sync_s'):.0%} of the sync; collections by "
                f"generation {runs[0]['gc_n']}); RSS {runs[0]['rss_before'] / 2**20:.0f} → "
                f"{runs[0]['rss_after'] / 2**20:.0f} MiB")
        runs = [x for x in r.get(f"official-sync-{n}", []) if "error" not in x]
        if runs:
            d.append(
                f"official sync {n:,}: runs {seq(runs, 'sync_s', '{:.2f}')} s;"
                f" cyclic GC {med(runs, 'gc_s'):.2f} s "
                f"({med(runs, 'gc_s') / med(runs, 'sync_s'):.0%}); RSS "
                f"{runs[0]['rss_before'] / 2**20:.0f} → {runs[0]['rss_after'] / 2**20:.0f} MiB")
    for key, label in (("pykcm-watch", "pykcm"), ("official-watch", "official"),
                       ("kopf-watch", "kopf")):
        runs = [x for x in r.get(key, []) if "error" not in x]
        if runs:
            extra = ""
            if label != "kopf":
                g = [x["watch_gc"]["gc_s"] / x["watch_s"] for x in runs if x["watch_s"] > 0]
                extra = (f"; cyclic GC {statistics.median(g):.0%} of the window" if g else "")
                extra += f"; CPU {med(runs, 'watch_cpu_s'):.2f} s in the window"
            else:
                extra = (f"; its initial list of {b.watch_n:,} pods took "
                         f"{med(runs, 'list_handled_s'):.1f} s to reach the handler")
            d.append(f"{label} watch: runs "
                     f"{seq(runs, 'events_per_s', '{:,.0f}')} events/s; "
                     f"events counted {runs[0]['updates']}{extra}")
    tmr = [x for x in r.get("pykcm-tracemalloc", []) if "error" not in x]
    ntr = [x for x in r.get("pykcm-notransform", []) if "error" not in x]
    wlr = [x for x in r.get("pykcm-watchlist", []) if "error" not in x]
    if ntr:
        d.append(f"pykcm without the managedFields transform ({n1:,} pods): sync "
                 f"{ntr[0]['sync_s']:.2f} s, {ntr[0]['rss_per_pod'] / KIB:.1f} KiB RSS per pod")
    if tmr:
        d.append(f"pykcm under tracemalloc ({n1:,} pods): "
                 f"{tmr[0]['traced_per_pod'] / KIB:.1f} KiB traced per pod "
                 f"({tmr[0]['rss_per_pod'] / KIB:.1f} KiB RSS)")
    if wlr:
        d.append(f"pykcm sync of {n1:,} pods by watch-list (server offering it): "
                 f"{wlr[0]['sync_s']:.2f} s, cyclic GC {wlr[0]['gc_s']:.2f} s, "
                 f"{wlr[0]['rss_per_pod'] / KIB:.1f} KiB RSS per pod")
    if ok_fl and fl:
        d.append(f"floor: msgspec typed metadata + raw spec/status (gc=False structs): "
                 f"{fl['msgspec_typed_meta_events_per_s']:,.0f} events/s; transport alone "
                 f"(urllib read of the whole replay) {fl['events'] / fl['watch_fetch_s']:,.0f}"
                 " events/s")
        d.append("memory per pod by representation (tracemalloc, 10,000 pods): " + "; ".join(
            f"{k} {v / KIB:.2f} KiB" for k, v in fl.get("mem_per_pod", {}).items()))
    for ct, wl in CG_VARIANTS:
        key = cg_key(ct, wl)
        parts = []
        for what, field, fmt in ((f"sync-{n1}", "sync_s", "{:.2f}"),
                                 (f"sync-{n2}", "sync_s", "{:.2f}"),
                                 ("watch", "events_per_s", "{:,.0f}")):
            rs_ = [x for x in r.get(f"{key}-{what}", []) if "error" not in x]
            if rs_:
                parts.append(f"{what} {seq(rs_, field, fmt)} (CPU "
                             f"{seq(rs_, 'process_cpu_s', '{:.2f}')} s, peak RSS "
                             + ", ".join(f"{x['max_rss_kb'] / KIB:.0f}" for x in rs_) + " MiB)")
        rep = r.get(f"{key}-replay")
        if rep:
            parts.append(f"the replay server saw {rep['list']} LISTs, {rep['watch_list']} "
                         f"watch-lists served, {rep['watch_refused']} refused")
        if parts:
            d.append(f"{cg_title(ct, wl)}: " + "; ".join(parts))
    base = r.get("clientgo-base") or {}
    if base.get("rss_at_sync_kb"):
        d.append(f"client-go RSS of a 1-pod sync (the baseline of its RSS per pod) "
                 f"{base['rss_at_sync_kb'] / KIB:.0f} MiB")
    rs = r.get("replay_stats")
    if rs:
        d.append(f"replay server, whole run: {rs['list']} LISTs, {rs['watch_replay']} replays, "
                 f"{rs['watch_idle']} idle re-watches, {rs['watch_refused']} watch-lists refused "
                 f"(422), {rs['watch_list']} served, {rs['other']} 404s, "
                 f"{rs['bytes'] / 2**20:,.0f} MiB written, "
                 f"{r.get('replay_cpu_s', 0):.1f} s of its CPU")
    busy = [x.get("machine_busy", 0) for k, v in r.items() if isinstance(v, list) for x in v
            if isinstance(x, dict)]
    if busy:
        d.append(f"whole-machine CPU during client runs: median {statistics.median(busy):.2f} "
                 f"cores, max {max(busy):.2f} of {os.cpu_count()} (a pykcm client alone uses "
                 "1, client-go up to 2, plus the replay server)")
    L.append("Details: " + "; ".join(d) + ".")
    L.append("")
    shared = sorted({k for k, v in r.items() if isinstance(v, list) for x in v
                     if isinstance(x, dict) and x.get("wall_s")
                     and x.get("machine_busy", 0) - x.get("process_cpu_s", 0) / x["wall_s"]
                     > 0.5})
    if shared:
        L.append(f"⚠️ Processes other than the client used more than half a core during: "
                 f"{', '.join(shared)} (the replay server's share included; the machine may "
                 "have been shared); those figures may be lower than on an idle machine.")
        L.append("")
    prof: dict[str, Any] = r.get("profile") or {}
    if prof:
        for what, (pr, summ) in prof.items():
            if not summ:
                continue
            head = (f"{pr.get('sync_s', float('nan')):.2f} s sync" if "sync" in what else
                    f"{pr.get('events_per_s', float('nan')):,.0f} events/s")
            L.append(f"Profile, pykcm {what} (py-spy --native, {summ['samples']:,} samples, "
                     f"{head} under the profiler; share of samples, leaf frames, cyclic GC as "
                     "one bucket):")
            L.append("")
            L.append("| frame | share |")
            L.append("|---|---:|")
            for name, share in summ["self"][:12]:
                L.append(f"| `{name}` | {share:.1%} |")
            incl = summ["incl"]
            keys = [k for k in incl if any(s in k for s in (
                "handle_deltas", "_handle_events", "next_batch", "_decode (client/watch.py)",
                "replace (cache/delta_fifo.py)", "list (client/rest_client.py)", "pop (cache",
                "run (cache/processor.py)", "_read_lines", "strip_managed_fields",
                "_paged_list", "cyclic GC", "(cache/frozen_object.py)"))]
            if keys:
                L.append("")
                L.append("Inclusive: " + "; ".join(
                    f"`{k}` {incl[k]:.0%}" for k in sorted(keys, key=lambda k: -incl[k])) + ".")
            L.append("")
    if b.errors:
        L.append("Not measured / errors: " + "; ".join(b.errors) + ".")
        L.append("")
    return "\n".join(L)


def modes_table(b: Bench) -> list[str]:
    """pykcm's three informer configurations next to client-go (JSON), same replay, ratios."""
    r = b.res
    n1, n2 = b.sizes
    cols = [("informer", "pykcm `SharedIndexInformer` (dict trees, default GC)"),
            ("factory", "pykcm `SharedInformerFactory` default (dict trees, GC policy)"),
            ("compact", "pykcm `SharedInformerFactory(compact_objects=True)` (FrozenObject)")]
    have_cg = bool(r.get(f"{CG_MAIN}-watch") or r.get(f"{CG_MAIN}-sync-{n1}"))

    def runs(key: str) -> list[dict[str, Any]]:
        return [x for x in r.get(key, []) if "error" not in x]

    def key(mode: str, what: str) -> str:
        if mode == "clientgo":
            return f"{CG_MAIN}-{what}"
        return f"pykcm-{what}" if mode == "informer" else f"{mode}-{what}"

    def val(mode: str, what: str, field: str, scale: float = 1.0) -> float:
        rs = runs(key(mode, what))
        return med(rs, field) / scale if rs else float("nan")

    def row(title: str, what: str, field: str, fmt: Any, higher_better: bool,
            scale: float = 1.0, target: str | None = None, tcell: str = "—") -> str:
        cg = val("clientgo", what, field, scale)
        cells = [title, fmt(cg) if have_cg else "not run"]
        for m, _ in cols:
            v = val(m, what, field, scale)
            txt = f"**{fmt(v)}**" if m == "compact" else fmt(v)
            if target and not math.isnan(v):
                txt += " " + judge(target, v)
            n_runs = len(runs(key(m, what)))
            if n_runs and n_runs != b.repeats:
                txt += f" ({n_runs} run{'s' if n_runs > 1 else ''})"
            cells += [txt, ratio(v, cg, higher_better) if have_cg else "—"]
        return "| " + " | ".join(cells + [tcell]) + " |"

    def f_cpu(v: float) -> str:
        return "n/a" if math.isnan(v) else f"{v:.2f} s"

    L = [("Side by side on the same replay bytes: client-go (`informerbench`, JSON, LIST + "
          "WATCH) and pykcm's three informer configurations, managedFields stripped by "
          "pykcm's transform (client-go keeps them); ratio = pykcm ÷ client-go "
          f"(medians of {b.repeats}):"), ""]
    head = ["metric", "client-go v1.36.2 (JSON)"]
    for _, c in cols:
        head += [c, "÷ client-go"]
    head.append("target")
    L.append("| " + " | ".join(head) + " |")
    L.append("|---" * len(head) + "|")
    L.append(row(f"initial sync, {n1:,} pods", f"sync-{n1}", "sync_s", f_s, False))
    L.append(row(f"initial sync, {n2:,} pods", f"sync-{n2}", "sync_s", f_s, False,
                 target="sync50k", tcell="≤ 1.80 s"))
    L.append(cpu_row(b, n2, cols, have_cg))
    L.append(row(f"retained memory per cached pod ({n2:,} pods, RSS)", f"sync-{n2}",
                 "rss_per_pod", f_kib, False, KIB, target="mem_kib", tcell="≤ 4.0 KiB"))
    L.append(row("watch events/s to 2 handlers (replay)", "watch", "events_per_s", f_rate, True,
                 target="events", tcell="≥ 40,000/s"))
    gc_cells = [f"cyclic GC during the {n2:,}-pod sync", "— (Go's GC runs concurrently)"]
    for m, _ in cols:
        rs = runs(key(m, f"sync-{n2}"))
        gc_cells += ["n/a" if not rs else f"{med(rs, 'gc_s'):.2f} s", "—"]
    L.append("| " + " | ".join(gc_cells + ["—"]) + " |")
    tm_cells = [f"tracemalloc per pod ({n1:,} pods, 1 run)", "—"]
    for m, _ in cols:
        k = "pykcm-tracemalloc" if m == "informer" else f"{m}-tracemalloc"
        rs = runs(k)
        tm_cells += ["n/a" if not rs else f_kib(rs[0]["traced_per_pod"] / KIB), "—"]
    L.append("| " + " | ".join(tm_cells + ["—"]) + " |")
    wl = runs("pykcm-watchlist")
    cgwl_runs = runs(f"clientgo-json-wl-sync-{n1}")
    cgwl = med(cgwl_runs, "sync_s") if cgwl_runs else float("nan")
    if wl or not math.isnan(cgwl):
        v = wl[0]["sync_s"] if wl else float("nan")
        L.append(f"| initial sync, {n1:,} pods, by watch-list (client-go JSON watch-list; "
                 f"pykcm 1 run) | {f_s(cgwl) if have_cg else 'not run'} | {f_s(v)} | "
                 f"{ratio(v, cgwl, False) if have_cg else '—'} | — | — | — | — | — |")
    d: list[str] = []
    for m, _ in cols[1:]:
        for what, field, fmt in ((f"sync-{n1}", "sync_s", "{:.2f}"),
                                 (f"sync-{n2}", "sync_s", "{:.2f}"),
                                 ("watch", "events_per_s", "{:,.0f}")):
            rs = runs(key(m, what))
            if rs:
                busy = ", ".join(f"{x.get('machine_busy', 0):.2f}" for x in rs)
                d.append(f"{m} {what}: runs {seq(rs, field, fmt)} (machine busy {busy} cores)")
        rs = runs(key(m, f"sync-{n2}"))
        if rs:
            d.append(f"{m} sync {n2:,}: RSS {rs[0]['rss_before'] / 2**20:.0f} → "
                     f"{rs[0]['rss_after'] / 2**20:.0f} MiB, cyclic GC collections by "
                     f"generation {rs[0]['gc_n']}")
    L.extend(["", "Runs: " + "; ".join(d) + ".", ""])
    return L


def cpu_row(b: Bench, n: int, cols: list[tuple[str, str]], have_cg: bool) -> str:
    """Client CPU seconds for the large sync: pykcm's in the sync window, client-go's whole
    process (it exits once synced)."""
    r = b.res

    def rs(k: str) -> list[dict[str, Any]]:
        return [x for x in r.get(k, []) if "error" not in x]

    cg = med(rs(f"{CG_MAIN}-sync-{n}"), "process_cpu_s") if have_cg else float("nan")
    title = f"client CPU seconds, {n:,}-pod sync (client-go: whole process, exits once synced)"
    cells = [title, f"{cg:.2f} s" if not math.isnan(cg) else "not run"]
    for m, _ in cols:
        k = f"pykcm-sync-{n}" if m == "informer" else f"{m}-sync-{n}"
        v = med(rs(k), "sync_cpu_s") if rs(k) else float("nan")
        cells += ["n/a" if math.isnan(v) else f"{v:.2f} s", ratio(v, cg, False)]
    return "| " + " | ".join(cells + ["—"]) + " |"


def clientgo_table(b: Bench) -> list[str]:
    """client-go's four configurations on the same replay."""
    r = b.res
    if not any(r.get(f"{cg_key(ct, wl)}-watch") for ct, wl in CG_VARIANTS):
        return []
    n1, n2 = b.sizes

    def v(key: str, what: str, field: str, scale: float = 1.0) -> float:
        rs = [x for x in r.get(f"{key}-{what}", []) if "error" not in x]
        return med(rs, field) / scale if rs else float("nan")

    L = [("client-go's configurations on the same replay (informerbench; the replay server "
          "answers JSON whatever the Accept, so the protobuf runs ask for protobuf and decode "
          "JSON; watch-list: `KUBE_FEATURE_WatchListClient=true` and the replay serving it, "
          "LIST + WATCH: `=false`):"), "",
         "| metric | " + " | ".join(cg_title(ct, wl) for ct, wl in CG_VARIANTS) + " |",
         "|---" * (len(CG_VARIANTS) + 1) + "|"]
    for title, what, field, fmt, scale in (
            (f"initial sync, {n1:,} pods", f"sync-{n1}", "sync_s", f_s, 1.0),
            (f"initial sync, {n2:,} pods", f"sync-{n2}", "sync_s", f_s, 1.0),
            (f"RSS per cached pod ({n2:,} pods)", f"sync-{n2}", "rss_per_pod", f_kib, KIB),
            ("watch events/s to 2 handlers", "watch", "events_per_s", f_rate, 1.0)):
        L.append(f"| {title} | " + " | ".join(
            fmt(v(cg_key(ct, wl), what, field, scale)) for ct, wl in CG_VARIANTS) + " |")
    L.append("")
    return L


def live_table(b: Bench) -> list[str]:
    """Every informer against the real kube-apiserver and pykcm's API server."""
    r = b.res
    servers = [(k, t) for k, t in (
        ("kube", "kube-apiserver v1.36.2 + etcd 3.6.13"),
        ("pykcm", "`pykcm apiserver` (durable, TLS)")) if r.get(f"live-{k}")]
    if not servers:
        if b.args.skip_live:
            return ["Live API servers: not run (--skip-live).", ""]
        return []
    lv = {k: r[f"live-{k}"] for k, _ in servers}
    n = next(iter(lv.values()))["n"]
    updates = next(iter(lv.values()))["updates"]
    L = [(f"Against the live API servers, each loaded with the same {n:,} pods (the "
          "replay's pods as a client creates them, bound to their nodes, no status); sync = "
          f"from the informer's start to synced (medians of {b.repeats}); end-to-end = "
          "events/s at the second handler (first -> last) while 32 writers merge-patch "
          f"{updates:,} times (1 run; bounded by the server's write rate, given beside it). "
          "Ratio = pykcm ÷ client-go JSON that synced the same way (LIST + WATCH, or "
          "watch-list) from the same server."), ""]
    head = ["client"]
    for _, t in servers:
        head += [f"{t}: sync", "÷ client-go JSON (same sync protocol)",
                 "LISTs per sync (0: watch-list)", "end-to-end events/s (server wrote)"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|---" * len(head) + "|")
    keys = list(dict.fromkeys(k for x in lv.values() for k in x["clients"]))
    for key in keys:
        title = next(x["clients"][key]["title"] for x in lv.values() if key in x["clients"])
        cells = [title]
        for k, _ in servers:
            c = lv[k]["clients"].get(key)
            if c is None:
                cells += ["—"] * 4
                continue
            runs = [x for x in c["sync"] if "error" not in x]
            s = med(runs, "sync_s") if runs else float("nan")
            lists = c.get("lists", float("nan"))
            # the client-go run that synced the same way: LIST + WATCH, or watch-list
            ref_key = cg_key("json", lists == 0)
            ref = lv[k]["clients"].get(ref_key)
            bs = med([x for x in ref["sync"] if "error" not in x], "sync_s") \
                if ref else float("nan")
            e = c["e2e"]
            ecell = ("error" if "error" in e else
                     f"{f_rate(e['events_per_s'])} ({f_rate(e['write_rate'])})")
            rcell = "—"
            if not key.startswith("clientgo") and ref is not None:
                rcell = (f"{ratio(s, bs, False)} vs "
                         f"{'watch-list' if lists == 0 else 'LIST + WATCH'}")
            cells += [f_s(s), rcell, f"{lists:g}", ecell]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    notes = []
    for k, t in servers:
        x = lv[k]
        notes.append(f"{t}: pods loaded at {x['load_rate']:,.0f}/s; a pod as stored "
                     f"{x['stored_pod_bytes']:,} B"
                     + (f" of which managedFields {x['managed_fields_bytes']:,} B"
                        if x['managed_fields_bytes'] else " (no managedFields)")
                     + f"; a protobuf Accept (`application/vnd.kubernetes.protobuf,"
                     f"application/json`) is answered with `{x['protobuf_served']}`")
    L.append("Live servers: " + "; ".join(notes) + ". informerbench's protobuf runs against a "
             "server that answers JSON decode JSON (client-go picks the decoder by the "
             "response's Content-Type), so on pykcm's server they measure JSON. LISTs per "
             "sync: from the server's apiserver_request_total; 0 means the informer synced by "
             "watch-list (pykcm's informer uses it when the server offers it, client-go when "
             "its WatchListClient gate is on, the default in v1.36).")
    L.append("")
    return L


def seq(runs: list[dict[str, Any]], key: str, fmt: str) -> str:
    return ", ".join(fmt.format(x[key]) for x in runs)


def _version(mod: str) -> str:
    try:
        from importlib.metadata import version
        return version(mod)
    except Exception:  # noqa: BLE001
        return "?"


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        return child_main(sys.argv[2])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one repeat (smoke run)")
    p.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    p.add_argument("--no-profile", action="store_true", help="skip the py-spy profiles")
    p.add_argument("--no-kube", action="store_true",
                   help="do not run client-go or the real kube-apiserver even if the kit is found")
    p.add_argument("--skip-live", action="store_true",
                   help="skip the live API servers (kube-apiserver and pykcm apiserver)")
    p.add_argument("--live-pods", type=int, default=0, metavar="N",
                   help="pods loaded into the live servers (default: the small sync size)")
    p.add_argument("--live-updates", type=int, default=0, metavar="N",
                   help="merge-patches of the live end-to-end watch (default 10,000; 1,000 "
                   "with --quick)")
    p.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                   help="first wait up to SECONDS for the machine to be idle (shared machines)")
    p.add_argument("--analysis", metavar="FILE",
                   help="Markdown text to append after the figures (the written analysis)")
    args = p.parse_args()
    if args.wait_idle > 0:
        wait_idle(args.wait_idle)
    b = Bench(args)
    b.run()
    section = report(b)
    if args.analysis:
        with open(args.analysis) as f:
            section = section.rstrip("\n") + "\n\n" + f.read().strip() + "\n"
    print(section)
    if not args.no_record:
        append_results(section)
        log(f"appended to {RESULTS}")
    return 1 if b.errors else 0


if __name__ == "__main__":
    sys.exit(main())
