"""``pykcm sim``: simulated nodes (scheduler and kubelets) against any API server.

    pykcm sim --kubeconfig PATH [--nodes N] [--node-prefix P] [--cpu Q] [--memory Q]
              [--max-pods N] [--ready-after S] [--run-seconds S] [--no-scheduler] ...

Registers the nodes, then binds and runs pods until SIGINT/SIGTERM (see
pykcm.sim). The Nodes are left registered on exit, as kubelets leave theirs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any

from pykcm.cli import arguments

NAME = "sim"


def _labels(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values or ():
        key, sep, value = v.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"--node-label wants KEY=VALUE, got {v!r}")
        out[key] = value
    return out


def add_parser(sub: Any) -> argparse.ArgumentParser:
    a: argparse.ArgumentParser = sub.add_parser(
        NAME, help="run simulated nodes: a scheduler and kubelets (kwok-like)",
        description="Register simulated Nodes and run a scheduler and their kubelets "
        "against an API server until SIGINT/SIGTERM: pods get bound, run, become "
        "ready and finish as on real nodes. Annotations script a pod: "
        "sim.pykcm.io/run-seconds, sim.pykcm.io/exit-code, "
        "sim.pykcm.io/ready-after-seconds, sim.pykcm.io/never-ready. "
        "sim.pykcm.io/heartbeat=stopped on a Node stops its heartbeat (Lease, status) and "
        "its kubelet until the annotation is removed.")
    a.add_argument("--kubeconfig", metavar="PATH",
                   help="kubeconfig of the API server (default: KUBECONFIG, ~/.kube/config)")
    a.add_argument("--context", metavar="NAME", help="kubeconfig context to use")
    a.add_argument("--nodes", type=arguments.count, default=3, metavar="N",
                   help="number of nodes (default 3)")
    a.add_argument("--node-prefix", default="pykcm-node", metavar="P",
                   help="node names are P-0 .. P-<N-1> (default pykcm-node)")
    a.add_argument("--cpu", default="32", metavar="Q", help="cpu per node (default 32)")
    a.add_argument("--memory", default="256Gi", metavar="Q",
                   help="memory per node (default 256Gi)")
    a.add_argument("--max-pods", type=arguments.positive, default=110, metavar="N",
                   help="pods per node (default 110)")
    a.add_argument("--node-label", action="append", metavar="KEY=VALUE",
                   help="an extra label on every node (repeatable)")
    a.add_argument("--ready-after", type=arguments.seconds, default=0.5, metavar="S",
                   help="seconds from running to ready (default 0.5)")
    a.add_argument("--run-seconds", type=arguments.seconds, default=3.0, metavar="S",
                   help="run time of restartPolicy Never/OnFailure pods (default 3)")
    a.add_argument("--max-grace-period", type=arguments.seconds, default=None, metavar="S",
                   help="kill deleted pods after at most S seconds, whatever their grace "
                        "period (default: their grace period, as a kubelet; the "
                        "sim.pykcm.io/termination-seconds annotation is not capped)")
    a.add_argument("--no-scheduler", action="store_true",
                   help="do not bind pods (another scheduler does)")
    a.add_argument("--scheduler-name", default="default-scheduler", metavar="NAME",
                   help="schedule pods with this spec.schedulerName (default default-scheduler)")
    a.add_argument("--no-events", action="store_true",
                   help="record no Scheduled / FailedScheduling events")
    a.add_argument("--qps", type=float, default=0.0, metavar="Q",
                   help="client-side request rate limit (default 0: unlimited)")
    a.add_argument("--burst", type=arguments.positive, default=100, metavar="N",
                   help="client-side burst (default 100)")
    arguments.add_seed(a)
    a.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return a


async def run(args: argparse.Namespace) -> int:
    from pykcm.client import Client, load_kube_config
    from pykcm.sim import NodeConfig, Simulator

    if args.nodes < 0:
        print("pykcm: error: --nodes must be >= 0", file=sys.stderr)
        return 2
    labels = _labels(args.node_label)
    config = load_kube_config(args.kubeconfig, args.context)
    config.qps = args.qps
    config.burst = args.burst
    node_config = NodeConfig(cpu=args.cpu, memory=args.memory, pods=args.max_pods,
                             labels=labels)
    async with Client(config) as client:
        sim = Simulator(client, nodes=args.nodes, node_prefix=args.node_prefix,
                        node_config=node_config, scheduler=not args.no_scheduler,
                        scheduler_name=args.scheduler_name, ready_after=args.ready_after,
                        run_seconds=args.run_seconds, record_events=not args.no_events,
                        max_grace_period=args.max_grace_period,
                        rng=arguments.random_source(args, "simulator"))
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await sim.start()
        print(f"pykcm sim: {args.nodes} nodes ({args.node_prefix}-0 ..) on {config.host}",
              flush=True)
        runner = asyncio.ensure_future(sim.run())
        waiter = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([runner, waiter], return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            await sim.stop()
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
        failed = sim.failed
        if failed is not None and not stop.is_set():
            print(f"pykcm: error: simulator stopped: {failed}", file=sys.stderr)
            return 1
    print("pykcm sim stopped", flush=True)
    return 0
