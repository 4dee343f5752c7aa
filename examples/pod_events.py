#!/usr/bin/env python3
"""Print pod events with a shared informer, then count pods per namespace with its lister.

    python examples/pod_events.py [--kubeconfig PATH] [--context NAME]
                                  [--namespace NS] [--duration SECONDS]

Data flow: a Client from the kubeconfig; a SharedInformerFactory (one
namespace or all, managedFields stripped); its pods informer lists and
watches pods and calls the handler below, which prints one line per event::

    ADD     default/web-0 Pending
    UPDATE  default/web-0 Pending -> Running
    DELETE  default/web-0 Running

Once the cache has synced and the initial list has reached the handler, the
lister (which reads the informer's cache, not the API server) gives the pod
count per namespace. Then events are printed until Ctrl-C (or SIGTERM), or
for ``--duration`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections import Counter
from typing import Any

from pykcm.cache import DeletedFinalStateUnknown, wait_for_cache_sync
from pykcm.client import Client, ConfigError, load_kube_config
from pykcm.informers import SharedInformerFactory, strip_managed_fields


def _key(pod: Any) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _phase(pod: Any) -> str:
    return str((pod.get("status") or {}).get("phase") or "-")


class PodPrinter:
    """A ResourceEventHandler printing one line per notification."""

    def on_add(self, pod: Any, is_in_initial_list: bool) -> None:
        print(f"ADD     {_key(pod)} {_phase(pod)}", flush=True)

    def on_update(self, old: Any, new: Any) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # a resync: nothing changed
        before, after = _phase(old), _phase(new)
        change = after if before == after else f"{before} -> {after}"
        print(f"UPDATE  {_key(new)} {change}", flush=True)

    def on_delete(self, pod: Any) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            # The deletion was noticed by a relist: the last state we knew.
            pod = pod.obj
        print(f"DELETE  {_key(pod)} {_phase(pod)}", flush=True)


async def run(args: argparse.Namespace) -> int:
    config = load_kube_config(args.kubeconfig, context=args.context)
    async with Client(config) as client:
        factory = SharedInformerFactory(client, namespace=args.namespace,
                                        transform=strip_managed_fields, name="pod-events")
        pods = factory.core_v1.pods
        registration = pods.informer.add_event_handler(PodPrinter())
        factory.start()
        try:
            synced = await factory.wait_for_cache_sync(timeout=args.sync_timeout)
            if not all(synced.values()) or not await wait_for_cache_sync(
                    registration.has_synced, timeout=args.sync_timeout):
                print(f"pod_events: error: the pod cache did not sync within "
                      f"{args.sync_timeout:g}s (is the API server at {config.host} up?)",
                      file=sys.stderr)
                return 1
            per_namespace = Counter(p["metadata"].get("namespace", "")
                                    for p in pods.lister.list())
            where = f"namespace {args.namespace}" if args.namespace else \
                f"{len(per_namespace)} namespaces"
            print(f"SYNCED  {sum(per_namespace.values())} pods in {where}", flush=True)
            for namespace, count in sorted(per_namespace.items()):
                print(f"  {namespace}: {count}", flush=True)
            await _until_stopped(args.duration)
        finally:
            await factory.shutdown()
    print("STOPPED", flush=True)
    return 0


async def _until_stopped(duration: float | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # not on Windows
            loop.add_signal_handler(sig, stop.set)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), duration)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Print pod events with a shared informer.")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, else "
                   "~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    p.add_argument("--namespace", "-n", help="watch one namespace (default: all)")
    p.add_argument("--duration", type=float, metavar="SECONDS",
                   help="stop after this many seconds (default: run until Ctrl-C)")
    p.add_argument("--sync-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up if the cache has not synced by then (default 60)")
    args = p.parse_args(argv)
    try:
        return asyncio.run(run(args))
    except ConfigError as exc:
        print(f"pod_events: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
