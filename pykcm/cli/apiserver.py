"""``pykcm apiserver``: the embedded Kubernetes-compatible API server, on its own.

Besides its own flags it takes kube-apiserver's for service-account tokens
(``--service-account-signing-key-file``, ``--service-account-key-file``,
``--service-account-issuer``, ``--api-audiences``,
``--service-account-max-token-expiration``,
``--service-account-extend-token-expiration``) and for its entry in the
cluster (``--advertise-address``, ``--endpoint-reconciler-type``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from pykcm.cli import arguments

if TYPE_CHECKING:
    from pykcm.api.clock import Clock

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
    a.add_argument("--advertise-address", default="", metavar="IP",
                   help="the address the kubernetes Service's endpoints name (default: the "
                   "bind address, or for a loopback one the default route's address, as "
                   "kube-apiserver picks it)")
    a.add_argument("--endpoint-reconciler-type", choices=("lease", "none"), default="lease",
                   help="keep the kubernetes Service's Endpoints and EndpointSlice (lease, "
                   "the default) or not (none)")
    a.add_argument("--service-account-signing-key-file", default="", metavar="FILE",
                   help="private key (PEM, RSA or ECDSA) signing service-account tokens "
                   "(default: DIR/pki/sa.key, made on first start)")
    a.add_argument("--service-account-key-file", action="append", default=[], metavar="FILE",
                   help="public keys (or private keys, certificates) verifying service-account "
                   "tokens; repeatable (default: the signing key's)")
    a.add_argument("--service-account-issuer", action="append", default=[], metavar="URL",
                   help="issuer of service-account tokens; repeatable, the first signs "
                   "(default https://kubernetes.default.svc.cluster.local)")
    a.add_argument("--api-audiences", default="", metavar="LIST",
                   help="comma-separated audiences of the API (default: the issuers)")
    a.add_argument("--service-account-max-token-expiration", default="0", metavar="DURATION",
                   help="longest TokenRequest expiration granted (Go duration, 0: no limit)")
    a.add_argument("--service-account-extend-token-expiration", default="true",
                   metavar="BOOL", help="extend projected-volume tokens to a year, warning "
                   "after their asked-for expiration (default true)")
    a.add_argument("--unsafe-no-fsync", action="store_true",
                   help="do not fsync each commit of the data dir (as etcd's flag: faster; an "
                   "acknowledged write then survives a crash of the process but not a power "
                   "loss). For throwaway servers")
    arguments.add_seed(a)
    vt = arguments.add_virtual_time(
        a, "virtual time (pykcm's own; issue 21)",
        "run the cluster on a virtual clock hosted here (/pykcm/v1/clock): "
        "time moves only when advanced (POST /pykcm/v1/clock/advance) or, with "
        "autojump, by itself to the next timer whenever the cluster is idle; "
        "start `pykcm sim` and `pykcm controller-manager` with --virtual-time too")
    vt.add_argument("--virtual-time-followers", type=arguments.count, default=0, metavar="N",
                    help="autojump waits until N followers have joined "
                    "(pykcm up passes its simulator and controller manager)")
    a.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return a


async def run(args: argparse.Namespace) -> int:
    from pykcm.api.clock import REAL_CLOCK
    from pykcm.api.timestamps import format_rfc3339_nano, parse_time
    from pykcm.api.virtual_clock import VirtualClock
    from pykcm.apiserver.endpoints.server import APIServer
    from pykcm.manager.options import parse_bool, parse_duration

    try:
        max_expiration = int(parse_duration(args.service_account_max_token_expiration))
        extend = parse_bool(args.service_account_extend_token_expiration)
    except ValueError as exc:
        print(f"pykcm: error: {exc}", file=sys.stderr)
        return 2
    clock: Clock = REAL_CLOCK
    if args.virtual_time:
        start = parse_time(args.virtual_start) if args.virtual_start else None
        if args.virtual_start and start is None:
            print(f"pykcm: error: --virtual-start {args.virtual_start!r} is not an RFC 3339 "
                  "time", file=sys.stderr)
            return 2
        saved = _saved_time(args.data_dir)
        if start is None and saved is not None:
            # a restart resumes the cluster's time: its objects were stamped with it
            start = max(saved, time.time())
        clock = VirtualClock(start)
    elif args.virtual_start or args.no_autojump:
        print("pykcm: error: --virtual-start and --no-autojump go with --virtual-time",
              file=sys.stderr)
        return 2
    server = APIServer(
        args.data_dir, host=args.bind, port=args.port, tls=not args.insecure_http,
        token_file=args.token_auth_file, fsync=not args.unsafe_no_fsync,
        advertise_address=args.advertise_address,
        endpoint_reconciler_type=args.endpoint_reconciler_type,
        service_account_signing_key_file=args.service_account_signing_key_file,
        service_account_key_files=args.service_account_key_file,
        service_account_issuers=args.service_account_issuer,
        api_audiences=[a for a in args.api_audiences.split(",") if a],
        service_account_max_token_expiration=max_expiration,
        service_account_extend_token_expiration=extend, clock=clock,
        rng=arguments.random_source(args, "kube-apiserver"),
        autojump=not args.no_autojump, clock_followers=args.virtual_time_followers)
    await server.start()
    print(f"pykcm apiserver serving on {server.url}", flush=True)
    if isinstance(clock, VirtualClock):
        print(f"virtual time from {format_rfc3339_nano(clock.utcnow())}, "
              f"{'autojump' if server.autojump else 'moved only by advance'} "
              f"({server.url}/pykcm/v1/clock)", flush=True)
    print(f"kubeconfig: {server.kubeconfig_path}", flush=True)
    print(f"  export KUBECONFIG={server.kubeconfig_path}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    assert server.fatal is not None
    fatal = server.fatal
    waiter: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    saver = asyncio.ensure_future(_save_time_every(args.data_dir, clock)) \
        if isinstance(clock, VirtualClock) and args.data_dir else None
    await asyncio.wait([waiter, fatal], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if saver is not None:
        saver.cancel()
    await server.stop()
    if saver is not None:
        _save_time(args.data_dir, clock.now())
    if fatal.done():
        print(f"pykcm: error: storage failed: {fatal.result()}", file=sys.stderr)
        return 1
    print("pykcm apiserver stopped", flush=True)
    return 0


# DIR/virtual-time: the virtual clock's last reading (epoch seconds), for a restart
_TIME_FILE = "virtual-time"


def _saved_time(data_dir: str | None) -> float | None:
    if not data_dir:
        return None
    try:
        with open(os.path.join(data_dir, _TIME_FILE)) as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return None


def _save_time(data_dir: str, epoch: float) -> None:
    path = os.path.join(data_dir, _TIME_FILE)
    with open(path + ".tmp", "w") as f:
        f.write(f"{epoch!r}\n")
    os.replace(path + ".tmp", path)


async def _save_time_every(data_dir: str, clock: Clock, period: float = 2.0) -> None:
    """Save the virtual time every ``period`` real seconds while it moves (a crash loses
    at most that much of it; a clean stop saves the last reading)."""
    last = None
    while True:
        now = clock.now()
        if now != last:
            with contextlib.suppress(OSError):
                _save_time(data_dir, now)
            last = now
        await asyncio.sleep(period)
