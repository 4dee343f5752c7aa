"""A fault-injecting HTTP/1.1 proxy on loopback, for chaos and leader-election tests.

Role: it sits between clients (a controller manager, informers) and a plain-HTTP API
server (pykcm's embedded one with ``tls=False``), forwards every request and records
it (time, method, path, User-Agent, connection), and on demand breaks things the way
networks and overloaded servers do:

- :meth:`FaultProxy.drop_connections`: close every open connection now, watch streams
  included (a client sees a reset mid-response);
- ``error_rate`` / ``error_codes``: answer that share of requests itself, with a
  metav1.Status of 429 (``Retry-After: 1``) or a 5xx, and close the connection;
- ``stall_rate`` / ``stall_seconds``: hold that share of requests that long before
  forwarding them (a slow server; the client's timeouts and retries run);
- ``refuse``: close new connections at once (the server is down).

Data flow: client ──TCP──► proxy: requests are parsed one at a time (request line,
headers, a Content-Length or chunked body; HTTP/1.1 clients do not pipeline), each
either answered by the proxy or written to its upstream connection; the upstream's
bytes (responses, chunked watch streams) are copied back untouched by a second task.

It runs its own event loop in a thread (:meth:`start` / :meth:`stop`), so synchronous
tests and subprocesses can use it; settings may be changed from any thread. TLS is not
terminated: the API server behind it must speak plain HTTP.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Self

import orjson

__all__ = ["FaultProxy", "ProxiedRequest"]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_REASONS = {429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout"}
_STATUS_REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
                   504: "Timeout"}


@dataclass(frozen=True)
class ProxiedRequest:
    """One request seen by the proxy; ``injected`` is the code it answered itself (0 when
    forwarded)."""

    time: float
    connection: int
    method: str
    path: str
    user_agent: str
    injected: int = 0

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS


@dataclass
class _Stats:
    connections: int = 0
    dropped: int = 0
    injected: dict[int, int] = field(default_factory=dict)
    stalled: int = 0


class FaultProxy:
    """A proxy from ``127.0.0.1:<port>`` to ``upstream_host:upstream_port``."""

    def __init__(self, upstream_host: str, upstream_port: int, *, seed: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.requests: list[ProxiedRequest] = []
        self.stats = _Stats()
        self.error_rate = 0.0
        self.error_codes: tuple[int, ...] = (429, 500, 503)
        self.stall_rate = 0.0
        self.stall_seconds = 0.0
        self.refuse = False
        self.only_paths: tuple[str, ...] = ()
        """Faults apply only to paths starting with one of these (all when empty)."""
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._conns: set[asyncio.StreamWriter] = set()  # both ends of every connection
        self._clients: set[asyncio.StreamWriter] = set()  # the client ends
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._next_conn = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- control (any thread) -----------------------------------------------------------

    def start(self, timeout: float = 10.0) -> Self:
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise TimeoutError("the proxy did not start")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)

    def drop_connections(self) -> int:
        """Close every open connection (both directions); how many there were."""
        loop = self._loop
        if loop is None:
            return 0
        done = threading.Event()
        count = [0]

        def drop() -> None:
            count[0] = len(self._clients)
            for w in list(self._conns):
                w.transport.abort()
            self.stats.dropped += count[0]
            done.set()

        loop.call_soon_threadsafe(drop)
        done.wait(10)
        return count[0]

    def writes(self, since: float = 0.0) -> list[ProxiedRequest]:
        """The write requests forwarded at or after ``since`` (time.monotonic())."""
        with self._lock:
            return [r for r in self.requests if r.is_write and not r.injected
                    and r.time >= since]

    # -- the loop -----------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._server = loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0, limit=1 << 20))
        self.port = self._server.sockets[0].getsockname()[1]
        self._started.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for w in list(self._conns):
                w.transport.abort()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    def _faulty(self, path: str) -> bool:
        return not self.only_paths or path.startswith(self.only_paths)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._next_conn += 1
        conn_id = self._next_conn
        self.stats.connections += 1
        if self.refuse:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream, limit=1 << 20)
        except OSError:
            writer.transport.abort()
            return
        self._conns.update((writer, up_writer))
        self._clients.add(writer)
        pump = asyncio.create_task(self._pump(up_reader, writer))
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = await _read_body(reader, head)
                method, path, user_agent = _request_line(head)
                faulty = self._faulty(path)
                if faulty and self.stall_rate and self._random.random() < self.stall_rate:
                    self.stats.stalled += 1
                    await asyncio.sleep(self.stall_seconds)
                code = 0
                if faulty and self.error_rate and self._random.random() < self.error_rate:
                    code = self._random.choice(self.error_codes)
                with self._lock:
                    self.requests.append(ProxiedRequest(time.monotonic(), conn_id, method,
                                                        path, user_agent, code))
                if code:
                    self.stats.injected[code] = self.stats.injected.get(code, 0) + 1
                    writer.write(_status_response(code))
                    await writer.drain()
                    break
                up_writer.write(head + body)
                await up_writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
                OSError, ValueError):
            pass
        finally:
            pump.cancel()
            self._clients.discard(writer)
            for w in (writer, up_writer):
                self._conns.discard(w)
                w.transport.abort()

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while chunk := await src.read(1 << 16):
                dst.write(chunk)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dst.transport.abort()


def _request_line(head: bytes) -> tuple[str, str, str]:
    lines = head.decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    path = rest.rpartition(" ")[0] or rest
    ua = ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "user-agent":
            ua = value.strip()
    return method, path, ua


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> bytes:
    length = 0
    chunked = False
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if not chunked:
        return await reader.readexactly(length) if length else b""
    out = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        out += size_line
        size = int(size_line.split(b";")[0].strip(), 16)
        if size == 0:
            out += await reader.readuntil(b"\r\n")  # no trailers from our clients
            return bytes(out)
        out += await reader.readexactly(size + 2)


def _status_response(code: int) -> bytes:
    reason = _STATUS_REASONS.get(code, "InternalError")
    body = orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Failure", "message": f"injected by the fault proxy ({code})",
                         "reason": reason, "code": code})
    headers = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Error')}",
               "Content-Type: application/json", f"Content-Length: {len(body)}",
               "Connection: close"]
    if code == 429:
        headers.append("Retry-After: 1")
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body
