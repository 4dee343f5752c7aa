"""Micro-benchmark of the REST client's connections: bursts of concurrent requests over TLS.

    .venv/bin/python bench/client_connections.py [--requests 2000] [--concurrency 500]
                                                 [--runs 3] [--servers kube,pykcm]
                                                 [--transports ...] [--no-record]

Issue 19's Connections item. A controller manager's bursts (a ReplicaSet's
slow-start batches of up to 500 pod creations, a garbage collector's deletes)
send hundreds of requests at once. client-go multiplexes them as HTTP/2
streams over one connection per API server (kube-apiserver v1.36 allows 100
streams per connection by default: `--http2-max-streams-per-connection` 0
means 100 in apiserver/pkg/server/secure_serving.go; Go's HTTP/2 transport
dials a further connection past that). pykcm's client used one aiohttp
connection per concurrent request (an unbounded pool: a TLS handshake per
connection). This benchmark compares, in one run, against the real
kube-apiserver v1.36.2 (bench/_kube.py) and pykcm's own API server (HTTP/1.1
only), each over TLS:

  aiohttp unbounded     aiohttp, TCPConnector(limit=0): pykcm's client before
  aiohttp pool N        aiohttp, at most N connections per host, kept alive
  pykcm Client          pykcm.client.Client as it is now (rate limiter off)
  httpx HTTP/2          httpx with http2=True (needs the `h2` package; skipped
                        without it); against pykcm's server ALPN falls back to
                        HTTP/1.1 and httpx's own pool (100 connections)

Each run opens a fresh client and sends --requests requests in bursts of
--concurrency at once (gathered, the next burst when the last one is done),
alternating GET bursts (one ConfigMap) and POST bursts (new ConfigMaps), so a
client's first burst pays its handshakes and later ones show reuse. Per
transport (median of --runs): requests/s, the client's CPU seconds (this
process), the server's CPU seconds (kube-apiserver + etcd, or pykcm
apiserver), TLS handshakes (connections opened: every SSLContext.wrap_bio
call of this process, which asyncio, uvloop and anyio all make once per TLS
connection), and non-2xx answers (429s from the server's in-flight limits).
Prints a Markdown section and appends it to bench/RESULTS.md (--no-record
to skip).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import ssl
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from _common import append_results, cpu_model, log, machine_load, run_async
from _kube import KUBE_VERSION, KubeServer, kit_or_reason
from apiserver import ServerProc

from pykcm.client import ApiError, Client, load_kube_config

NS = "default"
JSON = "application/json"

# Every TLS connection this process opens calls SSLContext.wrap_bio once (asyncio's and
# uvloop's SSL protocols, anyio's TLS stream): counted here, whatever the client library.
_HANDSHAKES = [0]
_wrap_bio = ssl.SSLContext.wrap_bio


def _counting_wrap_bio(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> ssl.SSLObject:
    _HANDSHAKES[0] += 1
    return _wrap_bio(self, *args, **kwargs)


ssl.SSLContext.wrap_bio = _counting_wrap_bio  # type: ignore[method-assign]

Call = Callable[[str, str, bytes | None], Awaitable[int]]


class Server:
    def __init__(self, label: str, srv: ServerProc | KubeServer) -> None:
        self.label, self.srv = label, srv

    @property
    def url(self) -> str:
        return self.srv.url

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.srv.token}", "Accept": JSON}

    def ssl_context(self) -> ssl.SSLContext:
        """A context of its own for each client: httpx sets ALPN (h2) on the one it is given,
        which would make the next client's server speak HTTP/2 to aiohttp."""
        cfg = load_kube_config(self.srv.kubeconfig)
        assert cfg.is_tls, "the benchmark runs over TLS"
        return ssl.create_default_context(
            cafile=cfg.ca_file, cadata=cfg.ca_data.decode() if cfg.ca_data else None)


class AiohttpTransport:
    def __init__(self, server: Server, limit_per_host: int) -> None:
        # limit=0 with limit_per_host=0: no bound at all (pykcm's client before issue 19).
        conn = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=0,
                                    limit_per_host=limit_per_host)
        self.session = aiohttp.ClientSession(connector=conn, headers=server.headers)
        self.base = server.url

    async def call(self, method: str, path: str, body: bytes | None) -> int:
        hdrs = {"Content-Type": JSON} if body is not None else None
        async with self.session.request(method, self.base + path, data=body,
                                        headers=hdrs) as r:
            await r.read()
            return r.status

    async def close(self) -> None:
        await self.session.close()


class HttpxTransport:
    def __init__(self, server: Server) -> None:
        import httpx
        self.client = httpx.AsyncClient(http2=True, verify=server.ssl_context(),
                                        headers=server.headers, base_url=server.url,
                                        timeout=120.0)

    async def call(self, method: str, path: str, body: bytes | None) -> int:
        hdrs = {"Content-Type": JSON} if body is not None else None
        r = await self.client.request(method, path, content=body, headers=hdrs)
        return r.status_code

    async def close(self) -> None:
        await self.client.aclose()


class PykcmTransport:
    def __init__(self, server: Server) -> None:
        cfg = load_kube_config(server.srv.kubeconfig)
        self.client = Client(dataclasses.replace(cfg, qps=0.0, max_retries=0))

    async def call(self, method: str, path: str, body: bytes | None) -> int:
        try:
            await self.client.request(method, path, body=orjson.loads(body) if body else None)
        except ApiError as exc:  # counted as its code
            return exc.code
        return 200

    async def close(self) -> None:
        await self.client.close()


def _has_h2() -> bool:
    try:
        import h2  # noqa: F401
    except ImportError:
        return False
    return True


def transports(names: list[str]) -> dict[str, Callable[[Server], Any]]:
    out: dict[str, Callable[[Server], Any]] = {}
    for name in names:
        if name == "unbounded":
            out["aiohttp unbounded (before)"] = lambda s: AiohttpTransport(s, 0)
        elif name.startswith("pool"):
            n = int(name[4:])
            out[f"aiohttp pool {n}"] = lambda s, n=n: AiohttpTransport(s, n)
        elif name == "pykcm":
            out["pykcm Client (now)"] = PykcmTransport
        elif name == "h2":
            if _has_h2():
                out["httpx HTTP/2"] = HttpxTransport
            else:
                log("bench: h2 is not installed: the httpx HTTP/2 row is skipped")
        else:
            raise SystemExit(f"unknown transport {name!r}")
    return out


def configmap(run: str, i: int) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": f"cc-{run}-{i}", "namespace": NS},
                         "data": {"k": "v" * 64}})


async def one_run(server: Server, make: Callable[[Server], Any], run: str, requests: int,
                  concurrency: int) -> dict[str, float]:
    t = make(server)
    h0, c0, s0 = _HANDSHAKES[0], time.process_time(), server.srv.cpu_seconds()
    w0 = time.monotonic()
    bad = 0
    errors: dict[str, int] = {}
    sent = 0
    burst = 0
    try:
        while sent < requests:
            n = min(concurrency, requests - sent)
            if burst % 2 == 0:
                calls = [t.call("GET", f"/api/v1/namespaces/{NS}/configmaps/cc-probe", None)
                         for _ in range(n)]
            else:
                calls = [t.call("POST", f"/api/v1/namespaces/{NS}/configmaps",
                                configmap(run, sent + i)) for i in range(n)]
            codes = await asyncio.gather(*calls, return_exceptions=True)
            for c in codes:
                if not isinstance(c, int) or not 200 <= c < 300:
                    bad += 1
                    errors[repr(c)[:120]] = errors.get(repr(c)[:120], 0) + 1
            sent += n
            burst += 1
    finally:
        wall = time.monotonic() - w0
        cpu = time.process_time() - c0
        await t.close()
    if errors:
        log(f"bench: {server.label}: non-2xx answers and errors: {errors}")
    return {"rps": requests / wall, "cpu": cpu, "server_cpu": server.srv.cpu_seconds() - s0,
            "handshakes": float(_HANDSHAKES[0] - h0), "bad": float(bad), "wall": wall}


async def prepare(server: Server) -> None:
    t = AiohttpTransport(server, 4)
    try:
        body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "cc-probe", "namespace": NS}})
        await t.call("POST", f"/api/v1/namespaces/{NS}/configmaps", body)
    finally:
        await t.close()


def med(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


async def main_async(args: argparse.Namespace) -> int:
    kit, kube_note = kit_or_reason()
    servers: list[Server] = []
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    makers = transports(args.transports.split(","))
    try:
        for name in args.servers.split(","):
            if name == "kube":
                if kit is None:
                    log(kube_note)
                    continue
                for attempt in range(3):  # a loaded machine can fail the kit's start
                    ks = KubeServer(kit, "conn")
                    try:
                        ks.start()
                        break
                    except RuntimeError as exc:
                        if attempt == 2:
                            raise
                        log(f"bench: kube-apiserver did not start ({str(exc)[:80]}); again")
                servers.append(Server(f"kube-apiserver {KUBE_VERSION}", ks))
            elif name == "pykcm":
                ps = ServerProc("conn", durable=True, tls=True)
                ps.start()
                servers.append(Server("pykcm apiserver", ps))
        for server in servers:
            await prepare(server)
        run_id = 0
        for r in range(args.runs):
            for server in servers:
                for label, make in makers.items():  # interleaved within each repetition
                    run_id += 1  # every run creates ConfigMaps of its own names
                    res = await one_run(server, make, str(run_id), args.requests,
                                        args.concurrency)
                    results.setdefault((server.label, label), []).append(res)
                    log(f"bench: {server.label} / {label} run {r + 1}: {res['rps']:.0f} req/s, "
                        f"{res['cpu']:.2f} CPU-s, {res['handshakes']:.0f} handshakes, "
                        f"{res['bad']:.0f} non-2xx")
    finally:
        for server in servers:
            server.srv.stop()
    lines = [
        (f"## Client connections: {args.requests} requests in bursts of {args.concurrency} "
         f"over TLS ({time.strftime('%Y-%m-%d')})"),
        "",
        f"bench/client_connections.py --requests {args.requests} --concurrency "
        f"{args.concurrency} --runs {args.runs}; {cpu_model()}, {os.cpu_count()} cores; "
        f"{args.load_note}. Median of {args.runs} runs; a fresh client per run; GET and POST "
        "bursts alternate." + (f" {kube_note}." if kube_note else ""),
        "",
        ("| server | transport | requests/s | client CPU-s | server CPU-s | TLS handshakes | "
         "non-2xx |"),
        "|---|---|---|---|---|---|---|",
    ]
    for (srv_label, label), rows in results.items():
        lines.append(f"| {srv_label} | {label} | {med(rows, 'rps'):.0f} | "
                     f"{med(rows, 'cpu'):.2f} | {med(rows, 'server_cpu'):.2f} | "
                     f"{med(rows, 'handshakes'):.0f} | {med(rows, 'bad'):.0f} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        append_results(text)
        log("bench: appended to bench/RESULTS.md")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=500)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--servers", default="kube,pykcm")
    p.add_argument("--transports", default="unbounded,pool25,pool100,pykcm,h2",
                   help="comma-separated: unbounded, poolN, pykcm, h2")
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args()
    args.load_note = machine_load()
    return run_async(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
