"""The client's connections to its API server: a bounded keep-alive pool, and watches apart.

client-go speaks HTTP/2 to kube-apiserver: every request of a process is a
stream on one TLS connection per API server (kube-apiserver v1.36 allows 100
streams per connection: `--http2-max-streams-per-connection` 0 means 100 in
apiserver/pkg/server/secure_serving.go; Go's HTTP/2 transport dials another
connection past that). Its HTTP/1.1 fallback (DISABLE_HTTP2, or a server
that does not offer h2) keeps at most 25 idle connections per host
(client-go transport's idleConnsPerHost) and closes them after 90 s idle
(IdleConnTimeout, the server's IdleTimeout too).

pykcm stays on HTTP/1.1 with aiohttp and bounds the pool instead, a
deliberate deviation measured by bench/client_connections.py (issue 19): in
Python the pure-Python HTTP/2 stack (httpx + h2) costs far more client CPU
per request than aiohttp's C parser, more than the handshakes it saves
(1,000 requests in bursts of 500 against kube-apiserver: 3.9 client CPU-s
over HTTP/2, 2.2 with the unbounded pool's 500 handshakes, 0.8 with this
pool's 25; bench/RESULTS.md 2026-12-02), while a bounded keep-alive pool pays
a handshake (2-3 ms of CPU) only for each of its first
`max_connections_per_host` connections. pykcm's
own API server (aiohttp) speaks only HTTP/1.1, so HTTP/2 would have been a
second path anyway. Data flow per `Client`:

    request ─► request session: at most `config.max_connections_per_host`
               (25) connections, kept alive 60 s idle (below the 90 s after
               which kube-apiserver, and 75 s after which aiohttp servers,
               close them: the client closes first, so a request is never sent
               on a connection the server is closing); a burst beyond the bound
               waits for a free connection instead of opening a new one, so it
               costs neither handshakes nor more of the API server's in-flight
               slots than the bound
    watch   ─► watch session: one connection per watch, unbounded (HTTP/1.1
               holds a connection for as long as the stream runs: counting
               watches in the bounded pool would let 25 informers starve every
               other request)

A request's timeout (`config.timeout`, a call's `timeout=`) includes its wait
for a free connection, as Go's http.Client.Timeout includes the wait for one.

Unlike client-go, where one transport (and so one connection) is shared by
every client of a process with the same TLS settings, each `Client` has its
own pool: a controller's burst queues behind its own connections only, as its
own token bucket already keeps it from starving the others.
"""

from __future__ import annotations

import ssl

import aiohttp

__all__ = ["KEEPALIVE_SECONDS", "Connections"]

# Idle connections are closed after this long: below kube-apiserver's 90 s IdleTimeout
# and aiohttp web's 75 s keepalive_timeout.
KEEPALIVE_SECONDS = 60.0


class Connections:
    """The two aiohttp sessions of a client: bounded requests, and watches."""

    def __init__(self, ssl_context: ssl.SSLContext | None, *, max_per_host: int,
                 timeout: aiohttp.ClientTimeout) -> None:
        if max_per_host < 1:
            raise ValueError("max_connections_per_host must be at least 1")
        self.max_per_host = max_per_host
        tls: ssl.SSLContext | bool = ssl_context if ssl_context is not None else False
        self.requests = self._session(aiohttp.TCPConnector(
            ssl=tls, limit=max_per_host, limit_per_host=max_per_host,
            keepalive_timeout=KEEPALIVE_SECONDS, enable_cleanup_closed=False), timeout)
        self.watches = self._session(aiohttp.TCPConnector(
            ssl=tls, limit=0, keepalive_timeout=KEEPALIVE_SECONDS,
            enable_cleanup_closed=False), timeout)

    @staticmethod
    def _session(connector: aiohttp.TCPConnector,
                 timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
        # No trace_configs: aiohttp's tracing costs a few coroutines per request.
        return aiohttp.ClientSession(
            connector=connector, timeout=timeout, trust_env=False, auto_decompress=True,
            cookie_jar=aiohttp.DummyCookieJar())

    async def close(self) -> None:
        """Close both sessions and their connections (open watches end)."""
        try:
            await self.requests.close()
        finally:
            await self.watches.close()
