"""The `pykcm` command.

    pykcm apiserver [--data-dir DIR] [--bind ADDR] [--port N] [--insecure-http]

Errors end in one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

from pykcm import __version__


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pykcm", description="The Kubernetes controller manager, "
                                "in Python, with an embedded API server.")
    p.add_argument("--version", action="version", version=f"pykcm {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    a = sub.add_parser("apiserver", help="run the embedded Kubernetes-compatible API server",
                       description="Serve the Kubernetes API until SIGINT/SIGTERM; writes "
                       "DIR/kubeconfig for kubectl and client libraries.")
    a.add_argument("--data-dir", metavar="DIR",
                   help="persist state in DIR (default: in memory, gone on exit; the "
                   "kubeconfig then goes to a temporary directory that is printed)")
    a.add_argument("--bind", default="127.0.0.1", metavar="ADDR",
                   help="address to listen on (default 127.0.0.1)")
    a.add_argument("--port", type=int, default=6443, metavar="N",
                   help="port to listen on (default 6443; 0 picks a free one)")
    a.add_argument("--insecure-http", action="store_true",
                   help="serve plain HTTP instead of HTTPS (tokens then travel in clear)")
    a.add_argument("--token-auth-file", metavar="FILE",
                   help="static tokens in kube-apiserver's CSV format: token,user,uid,\"groups\"")
    a.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return p


async def _run_apiserver(args: argparse.Namespace) -> int:
    from pykcm.apiserver.server import APIServer

    server = APIServer(args.data_dir, host=args.bind, port=args.port,
                       tls=not args.insecure_http, token_file=args.token_auth_file)
    await server.start()
    print(f"pykcm apiserver serving on {server.url}", flush=True)
    print(f"kubeconfig: {server.kubeconfig_path}", flush=True)
    print(f"  export KUBECONFIG={server.kubeconfig_path}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    assert server.fatal is not None
    fatal = server.fatal
    waiter: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    await asyncio.wait([waiter, fatal], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    await server.stop()
    if fatal.done():
        print(f"pykcm: error: storage failed: {fatal.result()}", file=sys.stderr)
        return 1
    print("pykcm apiserver stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if getattr(args, "verbose", False) else
                        logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop
    except ImportError:  # optional: plain asyncio works, only slower
        runner = asyncio.run
    else:
        runner = uvloop.run
    try:
        if args.command == "apiserver":
            return runner(_run_apiserver(args))
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        where = ""
        if exc.filename:
            where = f": {exc.filename}"
        elif exc.errno in (98, 13, 99):
            where = f" (address {args.bind}:{args.port})"
        print(f"pykcm: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - one clear line, never a traceback
        print(f"pykcm: error: {exc}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
