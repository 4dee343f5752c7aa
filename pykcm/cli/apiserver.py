"""``pykcm apiserver``: the embedded Kubernetes-compatible API server, on its own."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from pykcm.cli import arguments

NAME = "apiserver"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    a: argparse.ArgumentParser = sub.add_parser(
        NAME, help="run the embedded Kubernetes-compatible API server",
        description="Serve the Kubernetes API until SIGINT/SIGTERM; writes "
        "DIR/kubeconfig for kubectl and client libraries.")
    a.add_argument("--data-dir", metavar="DIR",
                   help="persist state in DIR (default: in memory, gone on exit; the "
                   "kubeconfig then goes to a temporary directory that is printed)")
    a.add_argument("--bind", default="127.0.0.1", metavar="ADDR",
                   help="address to listen on (default 127.0.0.1)")
    a.add_argument("--port", type=arguments.port, default=6443, metavar="N",
                   help="port to listen on (default 6443; 0 picks a free one)")
    a.add_argument("--insecure-http", action="store_true",
                   help="serve plain HTTP instead of HTTPS (tokens then travel in clear)")
    a.add_argument("--token-auth-file", metavar="FILE",
                   help="static tokens in kube-apiserver's CSV format: token,user,uid,\"groups\"")
    a.add_argument("--unsafe-no-fsync", action="store_true",
                   help="do not fsync each commit of the data dir (as etcd's flag: faster; an "
                   "acknowledged write then survives a crash of the process but not a power "
                   "loss). For throwaway servers")
    a.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return a


async def run(args: argparse.Namespace) -> int:
    from pykcm.apiserver.server import APIServer

    server = APIServer(args.data_dir, host=args.bind, port=args.port,
                       tls=not args.insecure_http, token_file=args.token_auth_file,
                       fsync=not args.unsafe_no_fsync)
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
