"""The `pykcm` command: one module per subcommand in this package.

    pykcm up [--data-dir DIR] [--port N] [--nodes N]
    pykcm apiserver [--data-dir DIR] [--bind ADDR] [--port N] [--insecure-http]
    pykcm controller-manager --kubeconfig FILE [kube-controller-manager flags]
    pykcm sim --kubeconfig FILE [--nodes N]

Each subcommand module has ``NAME``, ``add_parser(subparsers)`` and an async
``run(args) -> exit code``. Errors end in one line on stderr and a non-zero
exit.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from pykcm import __version__

_COMMANDS = ("up", "apiserver", "controller_manager", "sim")
"""Subcommand modules of ``pykcm.cli``, in help order."""


def _modules() -> dict[str, ModuleType]:
    mods = (importlib.import_module(f"pykcm.cli.{m}") for m in _COMMANDS)
    return {m.NAME: m for m in mods}


def _parser(mods: dict[str, ModuleType]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pykcm", description="The Kubernetes controller manager, "
                                "in Python, with an embedded API server.")
    p.add_argument("--version", action="version", version=f"pykcm {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for m in mods.values():
        m.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    mods = _modules()
    args = _parser(mods).parse_args(argv)
    verbosity = getattr(args, "v", None)
    debug = getattr(args, "verbose", False) or (isinstance(verbosity, int) and verbosity >= 4)
    logging.basicConfig(level=logging.DEBUG if debug else
                        logging.INFO if isinstance(verbosity, int) and verbosity >= 2 else
                        logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop
    except ImportError:  # optional: plain asyncio works, only slower
        runner = asyncio.run
    else:
        runner = uvloop.run
    if getattr(args, "virtual_time", False):
        # virtual time's idle check reads asyncio's ready queue (uvloop hides its own)
        runner = asyncio.run
    try:
        code: int = runner(mods[args.command].run(args))
        return code
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        where = ""
        if exc.filename:
            where = f": {exc.filename}"
        elif exc.errno in (98, 13, 99) and hasattr(args, "port"):
            where = f" (address {getattr(args, 'bind', '127.0.0.1')}:{args.port})"
        print(f"pykcm: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - one clear line, never a traceback
        print(f"pykcm: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
