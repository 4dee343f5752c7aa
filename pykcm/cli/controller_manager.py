"""``pykcm controller-manager``: kube-controller-manager's process, in Python.

    pykcm controller-manager --kubeconfig FILE [--controllers=*,-foo] [--leader-elect=false]
                             [--bind-address 127.0.0.1 --secure-port 0 --port 10252] [-v 2]
                             [--ui [--ui-address 127.0.0.1] [--ui-port 10260]]

Flags and defaults are kube-controller-manager's (see pykcm.manager.options).
Logs go to stderr in klog's text format, one line per record, with the
record's structured fields as ``key="value"`` pairs (``controller``,
``key``, ...): ``I1129 11:34:14.123456   4242 controller.py:201] "Starting
controller" controller="replicaset-controller"``. ``-v`` 0-3 logs at info
level, 4 and more at debug level. SIGTERM/SIGINT shut down cleanly (exit
0); a lost leader lease exits 1; bad flags exit 2 and start-up errors 1,
with one line on stderr.

``--ui`` serves the live view (pykcm.manager.ui) on a loopback address, plain HTTP.

Testing hook: ``--extra-controllers MODULE:FUNCTION`` (hidden, repeatable)
imports MODULE and calls ``FUNCTION(registry)`` with the controller registry
before ``--controllers`` is resolved, so tests run their own controllers in
a real ``pykcm controller-manager`` process.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
import time
from typing import Any, NoReturn

from pykcm.cli import arguments

NAME = "controller-manager"

# Attributes every LogRecord has: anything else was passed in ``extra`` and is a field.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName"}
_LEVEL_LETTERS = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W",
                  logging.ERROR: "E", logging.CRITICAL: "F"}


class KlogFormatter(logging.Formatter):
    """klog's text header, the message, then the record's extra fields as key="value"."""

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        head = (f"{_LEVEL_LETTERS.get(record.levelno, 'I')}"
                f"{time.strftime('%m%d %H:%M:%S', t)}.{micros:06d} "
                f"{record.process:7d} {record.filename}:{record.lineno}]")
        msg = record.getMessage()
        fields = [f"{k}={_quote(v)}" for k, v in record.__dict__.items()
                  if k not in _STANDARD_ATTRS and not k.startswith("_")]
        line = f"{head} {_quote(msg)}" + ("" if not fields else " " + " ".join(fields))
        if record.exc_info:
            line += " err=" + _quote(self.formatException(record.exc_info))
        return line


def _quote(v: Any) -> str:
    s = str(v)
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def setup_logging(verbosity: int) -> None:
    """klog-like logs on stderr: info up to -v 3, debug from -v 4."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter())
    logging.basicConfig(level=logging.DEBUG if verbosity >= 4 else logging.INFO,
                        handlers=[handler], force=True)
    # aiohttp's access log would log every /healthz probe.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    from pykcm.manager.options import add_flags

    a: argparse.ArgumentParser = sub.add_parser(
        NAME, help="run the controller manager (kube-controller-manager's flags)",
        description="The Kubernetes controller manager: runs the enabled controllers "
        "against an API server, with leader election, until SIGINT/SIGTERM.")
    add_flags(a)
    ui = a.add_argument_group("live view (pykcm's own; not a kube-controller-manager flag)")
    ui.add_argument("--ui", action="store_true",
                    help="serve the live view of the control loop (informers, work queues, "
                    "reconciles, API requests, leader election, workloads) over plain HTTP")
    ui.add_argument("--ui-address", default="127.0.0.1", metavar="IP",
                    help="address of the live view (default 127.0.0.1: it has no "
                    "authentication, keep it on loopback)")
    ui.add_argument("--ui-port", type=int, default=10260, metavar="N",
                    help="port of the live view (default 10260; 0 picks a free one)")
    arguments.add_seed(a.add_argument_group("determinism (pykcm's own; not a "
                                            "kube-controller-manager flag)"))
    vt = a.add_argument_group("virtual time (pykcm's own; not a kube-controller-manager flag)")
    vt.add_argument("--virtual-time", action="store_true",
                    help="follow the virtual clock the API server hosts (its --virtual-time): "
                    "joined with --kubeconfig's credentials before anything starts")
    fmt = a.format_help

    def format_help() -> str:
        # The controller names cost importing every controller: only for --help.
        from pykcm.manager.registry import builtin_registry

        reg = builtin_registry()
        for act in a._actions:
            if act.dest == "controllers" and act.help:
                act.help = (act.help.replace("All controllers: (none)",
                                             "All controllers: " +
                                             (", ".join(reg.known_names()) or "(none)"))
                            .replace("Disabled-by-default controllers: (none)",
                                     "Disabled-by-default controllers: " +
                                     (", ".join(reg.disabled_by_default()) or "(none)")))
        return fmt()

    def error(message: str) -> NoReturn:
        # One line, as pflag's "Error: invalid argument ..." (no usage dump).
        print(f"pykcm {NAME}: error: {message}", file=sys.stderr)
        sys.exit(2)

    # Instance overrides (the parser class is the parent's); mypy forbids assigning methods.
    setattr(a, "format_help", format_help)  # noqa: B010
    setattr(a, "error", error)  # noqa: B010
    return a


def load_extra_controllers(specs: list[str], registry: Any) -> None:
    """Call each ``module:function`` of --extra-controllers with the registry."""
    for spec in specs:
        mod_name, sep, fn_name = spec.partition(":")
        if not sep or not mod_name or not fn_name:
            raise ValueError(f"--extra-controllers {spec!r}: expected MODULE:FUNCTION")
        fn = getattr(importlib.import_module(mod_name), fn_name)
        fn(registry)


async def run(args: argparse.Namespace) -> int:
    from pykcm.manager import ControllerManager, ControllerManagerOptions, builtin_registry

    options = ControllerManagerOptions.from_args(args)
    setup_logging(options.v)
    registry = builtin_registry()
    load_extra_controllers(options.extra_controllers, registry)
    follower = None
    if getattr(args, "virtual_time", False):
        from pykcm.client.clock_follower import follow_clock
        from pykcm.manager.controller_manager import load_config

        # before anything else: the manager's first time read is the cluster's
        follower = await follow_clock(load_config(options), name="controller-manager")
    manager = ControllerManager(options, registry, clock=follower,
                                rng=arguments.random_source(args, "kube-controller-manager"))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, manager.request_stop)
    watcher = None
    if follower is not None:
        clock = follower

        async def follow() -> None:
            # started (controllers running): shown in the clock's state
            await manager.leading.wait()
            clock.set_ready()
            await clock.lost.wait()
            print(f"pykcm {NAME}: error: lost the cluster's virtual clock", file=sys.stderr,
                  flush=True)
            manager.request_stop()

        watcher = asyncio.ensure_future(follow())
    ui = None
    if getattr(args, "ui", False):
        from pykcm.manager.ui import LiveView, UiServer

        view = LiveView(manager)
        manager.context_hooks.append(view.attach)
        ui = UiServer(view, address=args.ui_address, port=args.ui_port)
        await ui.start()
        print(f"pykcm {NAME}: live view on {ui.url}", file=sys.stderr, flush=True)
    code = 1
    try:
        code = await manager.run()
    finally:
        if ui is not None:
            await ui.stop()
        if watcher is not None:
            watcher.cancel()
        if follower is not None:
            lost = follower.lost.is_set()
            await follower.close()
            if lost and code == 0:
                code = 1
    if manager.fatal_error is not None:
        print(f"pykcm: error: {manager.fatal_error}", file=sys.stderr)
    return code
