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
from typing import TYPE_CHECKING, Any

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.cli import arguments

if TYPE_CHECKING:
    from pykcm.client import Config
    from pykcm.client.clock_follower import FollowerClock
    from pykcm.sim import NodeConfig

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
    a.add_argument("--virtual-time", action="store_true",
                   help="follow the virtual clock the API server hosts (its --virtual-time)")
    a.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return a


async def run(args: argparse.Namespace) -> int:
    from pykcm.client import load_kube_config
    from pykcm.client.clock_follower import follow_clock
    from pykcm.sim import NodeConfig

    if args.nodes < 0:
        print("pykcm: error: --nodes must be >= 0", file=sys.stderr)
        return 2
    labels = _labels(args.node_label)
    config = load_kube_config(args.kubeconfig, args.context)
    config.qps = args.qps
    config.burst = args.burst
    node_config = NodeConfig(cpu=args.cpu, memory=args.memory, pods=args.max_pods,
                             labels=labels)
    clock: Clock = REAL_CLOCK
    follower: FollowerClock | None = None
    if args.virtual_time:
        # before anything else: the first time read is the cluster's
        clock = follower = await follow_clock(config, name="sim")
    try:
        return await _run(args, config, node_config, clock, follower)
    finally:
        if follower is not None:
            await follower.close()


async def _run(args: argparse.Namespace, config: Config, node_config: NodeConfig, clock: Clock,
               follower: FollowerClock | None) -> int:
    from pykcm.client import Client
    from pykcm.sim import Simulator

    async with Client(config, clock=clock) as client:
        sim = Simulator(client, nodes=args.nodes, node_prefix=args.node_prefix,
                        node_config=node_config, scheduler=not args.no_scheduler,
                        scheduler_name=args.scheduler_name, ready_after=args.ready_after,
                        run_seconds=args.run_seconds, record_events=not args.no_events,
                        max_grace_period=args.max_grace_period, clock=clock,
                        rng=arguments.random_source(args, "simulator"))
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await sim.start()
        lost: asyncio.Future[Any] = asyncio.ensure_future(
            follower.lost.wait() if follower is not None else asyncio.Event().wait())
        if follower is not None:
            follower.set_ready()
        print(f"pykcm sim: {args.nodes} nodes ({args.node_prefix}-0 ..) on {config.host}",
              flush=True)
        runner = asyncio.ensure_future(sim.run())
        waiter = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([runner, waiter, lost], return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            lost.cancel()
            await sim.stop()
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
        if follower is not None and follower.lost.is_set() and not stop.is_set():
            print("pykcm: error: lost the cluster's virtual clock", file=sys.stderr)
            return 1
        failed = sim.failed
        if failed is not None and not stop.is_set():
            print(f"pykcm: error: simulator stopped: {failed}", file=sys.stderr)
            return 1
    print("pykcm sim stopped", flush=True)
    return 0
