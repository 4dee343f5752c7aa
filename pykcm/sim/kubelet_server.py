"""The simulated kubelets' HTTP endpoint: container logs, exec, attach, port-forward.

Role: what a kubelet's server (port 10250) answers the API server when it
proxies ``pods/log``, ``pods/exec``, ``pods/attach`` and ``pods/portforward``. One small aiohttp
server per simulator process serves every simulated node (the kubelet API
paths name the pod, so the node is not needed); it listens on 127.0.0.1 on a
free port, and each Node publishes it as a real kubelet does: the port in
``status.daemonEndpoints.kubeletEndpoint.Port``, the host as an
``InternalDNS`` address ``localhost`` (pykcm.sim.nodes).

Routes (the kubelet's)::

    GET /containerLogs/{namespace}/{pod}/{container}?follow&previous&timestamps
        &tailLines&sinceSeconds&sinceTime&limitBytes      text/plain, streamed with follow
    GET /exec/{namespace}/{pod}/{container}?command=..&stdin&stdout&stderr&tty
    GET /attach/{namespace}/{pod}/{container}?stdin&stdout&stderr&tty
        websocket upgrade, subprotocol v5.channel.k8s.io or v4.channel.k8s.io:
        binary messages whose first byte is the channel (0 stdin, 1 stdout,
        2 stderr, 3 error: the final metav1.Status, 4 resize; v5: 255 closes
        the channel named by the second byte)
    GET /portForward/{namespace}/{pod}
        websocket upgrade, subprotocol SPDY/3.1+portforward.k8s.io: SPDY/3.1
        frames in binary messages (pykcm.sim.port_forward answers them)
    GET /healthz

Data flow: the pod comes from the kubelet's pods informer, the container's
runs from the pod's status (``state``, ``lastState``), the log lines from
:mod:`pykcm.sim.container_logs`, exec results from
:mod:`pykcm.sim.container_exec`.

Deliberate deviations: plain HTTP without authentication (a real kubelet
serves HTTPS and authorizes the API server's client certificate), so a real
kube-apiserver cannot use it as is (it speaks HTTPS to kubelets); no SPDY
(the API server upgrades to websockets, which kubectl v1.36 uses first; for
port-forward the API server passes kubectl's websocket tunnel of SPDY frames
through, where kube-apiserver would speak SPDY to the kubelet).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from aiohttp import WSMsgType, web

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.pod_util import parse_time
from pykcm.sim.container_exec import run_command
from pykcm.sim.container_logs import LogLine, format_line, next_line_at, run_lines
from pykcm.sim.port_forward import PortForwardSession

__all__ = ["CHANNEL_PROTOCOLS", "PORT_FORWARD_PROTOCOLS", "KubeletServer"]

log = logging.getLogger("pykcm.sim.kubelet_server")

CHANNEL_PROTOCOLS: Final = ("v5.channel.k8s.io", "v4.channel.k8s.io")
# SPDY/3.1 frames in binary messages, as kubectl tunnels them (PortForwardWebsockets)
PORT_FORWARD_PROTOCOLS: Final = ("SPDY/3.1+portforward.k8s.io",)
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
_FOLLOW_POLL: Final = 0.5

PodLookup = Callable[[str, str], Mapping[str, Any] | None]


class _Error(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _container(pod: Mapping[str, Any], name: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(spec, status) of the pod's container ``name``."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    for specs, statuses in (("containers", "containerStatuses"),
                            ("initContainers", "initContainerStatuses")):
        for c in spec.get(specs) or ():
            if c.get("name") == name:
                st: Mapping[str, Any] = next(
                    (s for s in status.get(statuses) or () if s.get("name") == name), {})
                return c, st
    raise _Error(400, f'container {name} is not valid for pod '
                      f'{(pod.get("metadata") or {}).get("name", "")}')


def _run(state: Mapping[str, Any]) -> tuple[float, float | None] | None:
    """(started, finished or None while running) of a container state."""
    running = state.get("running")
    if running:
        started = parse_time(running.get("startedAt"))
        return (started, None) if started is not None else None
    term = state.get("terminated")
    if term:
        started, finished = parse_time(term.get("startedAt")), parse_time(term.get("finishedAt"))
        if started is not None:
            return started, finished if finished is not None else started
    return None


def _bool(v: str | None) -> bool:
    return (v or "").lower() in ("1", "true", "yes")


class KubeletServer:
    """The endpoint; ``pod(namespace, name)`` looks a pod up (the kubelet's cache)."""

    def __init__(self, pod: PodLookup, host: str = "127.0.0.1", port: int = 0, *,
                 clock: Clock = REAL_CLOCK) -> None:
        # the simulator's clock: a run's log lines are stamped on it; the follow and
        # attach polls of the pod and the connection are real time (I/O)
        self.clock = clock
        self._pod = pod
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> int:
        """Listen; returns the port."""
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._logs)
        app.router.add_get("/exec/{namespace}/{pod}/{container}", self._exec)
        app.router.add_post("/exec/{namespace}/{pod}/{container}", self._exec)
        app.router.add_get("/attach/{namespace}/{pod}/{container}", self._attach)
        app.router.add_post("/attach/{namespace}/{pod}/{container}", self._attach)
        app.router.add_get("/portForward/{namespace}/{pod}", self._port_forward)
        app.router.add_post("/portForward/{namespace}/{pod}", self._port_forward)
        app.router.add_get("/healthz", self._healthz)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self.port

    async def stop(self) -> None:
        # taken before the await: a second stop() (the simulator's SIGTERM path and its
        # context exit both stop it) must not clean up a runner half cleaned up already
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    @staticmethod
    async def _healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _lookup(self, request: web.Request) -> tuple[Mapping[str, Any], str]:
        ns, name = request.match_info["namespace"], request.match_info["pod"]
        pod = self._pod(ns, name)
        if pod is None:
            raise _Error(404, f'pod "{name}" not found')
        return pod, request.match_info["container"]

    # -- logs ---------------------------------------------------------------------

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        try:
            pod, name = self._lookup(request)
            spec, st = _container(pod, name)
            del spec
            q = request.query
            previous = _bool(q.get("previous"))
            run = self._log_run(pod, name, st, previous)
        except _Error as e:
            return web.Response(status=e.code, text=e.message)
        started, finished = run
        timestamps = _bool(q.get("timestamps"))
        now = self.clock.now()
        lines = run_lines(pod, started, finished if finished is not None else now)
        since = self._since(q, now)
        if since is not None:
            lines = [ln for ln in lines if ln.at >= since]
        tail = q.get("tailLines")
        if tail is not None:
            try:
                n = int(tail)
            except ValueError:
                n = -1
            if n >= 0:
                lines = lines[len(lines) - n:] if n else []
        limit = None
        if q.get("limitBytes"):
            with contextlib.suppress(ValueError):
                limit = max(0, int(q["limitBytes"]))
        resp = web.StreamResponse(status=200)
        resp.content_type = "text/plain"
        await resp.prepare(request)
        sent = await self._write_lines(resp, lines, timestamps, limit, 0)
        if _bool(q.get("follow")) and finished is None and not previous and (
                limit is None or sent < limit):
            await self._follow(resp, request, pod, name, started, now, timestamps, limit, sent)
        await resp.write_eof()
        return resp

    @staticmethod
    def _since(q: Mapping[str, str], now: float) -> float | None:
        if q.get("sinceSeconds"):
            with contextlib.suppress(ValueError):
                return now - int(q["sinceSeconds"])
        if q.get("sinceTime"):
            return parse_time(q["sinceTime"])
        return None

    def _log_run(self, pod: Mapping[str, Any], name: str, st: Mapping[str, Any],
                 previous: bool) -> tuple[float, float | None]:
        pod_name = (pod.get("metadata") or {}).get("name", "")
        if previous:
            run = _run({"terminated": (st.get("lastState") or {}).get("terminated")})
            if run is None:
                raise _Error(400, f'previous terminated container "{name}" in pod '
                                  f'"{pod_name}" not found')
            return run
        state = st.get("state") or {}
        run = _run(state)
        if run is None:
            # waiting: the last run's log, if there was one (a CrashLoopBackOff)
            run = _run({"terminated": (st.get("lastState") or {}).get("terminated")})
        if run is None:
            reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
            raise _Error(400, f'container "{name}" in pod "{pod_name}" is waiting to start: '
                              f'{reason}')
        return run

    @staticmethod
    async def _write_lines(resp: web.StreamResponse, lines: list[LogLine], timestamps: bool,
                           limit: int | None, sent: int) -> int:
        for ln in lines:
            data = format_line(ln, timestamps)
            if limit is not None:
                if sent >= limit:
                    break
                data = data[:limit - sent]
            await resp.write(data)
            sent += len(data)
        return sent

    async def _follow(self, resp: web.StreamResponse, request: web.Request,
                      pod: Mapping[str, Any], name: str, started: float, shown_until: float,
                      timestamps: bool, limit: int | None, sent: int) -> None:
        """Stream the run's later lines until it ends, the pod goes or the client leaves."""
        meta = pod.get("metadata") or {}
        ns, pod_name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid")
        while not (request.transport is None or request.transport.is_closing()):
            due = next_line_at(pod, started, shown_until)
            wait = _FOLLOW_POLL if due is None else min(_FOLLOW_POLL,
                                                        max(0.0, due - self.clock.now()))
            await REAL_CLOCK.sleep(wait)
            cur = self._pod(ns, pod_name)
            if cur is None or (cur.get("metadata") or {}).get("uid") != uid:
                return
            try:
                _, st = _container(cur, name)
            except _Error:
                return
            run = _run(st.get("state") or {})
            now = self.clock.now()
            end = now if run is None or run[1] is None else run[1]
            new = [ln for ln in run_lines(cur, started, end) if shown_until < ln.at <= end]
            shown_until = max(shown_until, min(end, now))
            sent = await self._write_lines(resp, new, timestamps, limit, sent)
            if (run is None or run[0] != started or run[1] is not None
                    or (limit is not None and sent >= limit)):
                return  # the run ended (stopped, restarted)

    # -- exec and attach -----------------------------------------------------------

    async def _upgrade(self, request: web.Request) -> web.WebSocketResponse | web.Response:
        ws = web.WebSocketResponse(protocols=CHANNEL_PROTOCOLS, autoping=True)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text="websocket upgrade required "
                                "(v5.channel.k8s.io or v4.channel.k8s.io); SPDY is not served")
        await ws.prepare(request)
        return ws

    @staticmethod
    async def _status(ws: web.WebSocketResponse, exit_code: int | None, error: str | None,
                      command: list[str]) -> None:
        if error is not None:
            status: dict[str, Any] = {"metadata": {}, "status": "Failure", "message": error}
        elif exit_code:
            status = {"metadata": {}, "status": "Failure",
                      "message": f"command terminated with non-zero exit code: error executing "
                                 f"command [{' '.join(command)}], exit code {exit_code}",
                      "reason": "NonZeroExitCode",
                      "details": {"causes": [{"reason": "ExitCode",
                                              "message": str(exit_code)}]}}
        else:
            status = {"metadata": {}, "status": "Success"}
        await ws.send_bytes(bytes([ERROR]) + json.dumps(status).encode())

    @staticmethod
    async def _read_stdin(ws: web.WebSocketResponse, echo: bool) -> bytes:
        """The client's stdin until it closes it (v5) or the connection; echoed to stdout."""
        data = b""
        async for msg in ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                if msg.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                    break
                continue
            chan, payload = msg.data[0], msg.data[1:]
            if chan == CLOSE and payload[:1] == bytes([STDIN]):
                break
            if chan == STDIN:
                data += payload
                if echo and payload:
                    await ws.send_bytes(bytes([STDOUT]) + payload)
        return data

    def _running(self, request: web.Request) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        pod, name = self._lookup(request)
        spec, st = _container(pod, name)
        if not (st.get("state") or {}).get("running"):
            raise _Error(404, f'container not found ("{name}")')
        return pod, spec

    async def _exec(self, request: web.Request) -> web.StreamResponse:
        try:
            pod, spec = self._running(request)
        except _Error as e:
            return web.Response(status=e.code, text=e.message)
        q = request.query
        command = q.getall("command", [])
        want_stdin = _bool(q.get("stdin"))
        tty = _bool(q.get("tty"))
        ws = await self._upgrade(request)
        if not isinstance(ws, web.WebSocketResponse):
            return ws
        try:
            probe = run_command(command, pod, spec)
            stdin = b""
            if probe.reads_stdin and want_stdin:
                stdin = await self._read_stdin(ws, echo=True)
                result = probe  # cat: its output was the echo
                result.stdout = b""
            else:
                result = run_command(command, pod, spec, stdin)
            if result.error is None:
                if result.stdout:
                    await ws.send_bytes(bytes([STDOUT]) + result.stdout)
                if result.stderr:
                    await ws.send_bytes(bytes([STDOUT if tty else STDERR]) + result.stderr)
            await self._status(ws, result.exit_code, result.error, command)
        except (ConnectionError, RuntimeError) as e:
            log.debug("exec stream ended: %s", e)
        finally:
            await ws.close()
        return ws

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        """The main process's output from now on (its log lines), stdin echoed if open,
        until the run ends or the client leaves."""
        try:
            pod, _spec = self._running(request)
            name = request.match_info["container"]
            _, st = _container(pod, name)
            run = _run(st.get("state") or {})
            assert run is not None
        except _Error as e:
            return web.Response(status=e.code, text=e.message)
        want_stdin = _bool(request.query.get("stdin"))
        ws = await self._upgrade(request)
        if not isinstance(ws, web.WebSocketResponse):
            return ws
        meta = pod.get("metadata") or {}
        ns, pod_name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid")
        started, shown = run[0], self.clock.now()
        reader = asyncio.ensure_future(self._read_stdin(ws, echo=True)) if want_stdin else None
        try:
            while not ws.closed and (reader is None or not reader.done()):
                await REAL_CLOCK.sleep(_FOLLOW_POLL)
                cur = self._pod(ns, pod_name)
                if cur is None or (cur.get("metadata") or {}).get("uid") != uid:
                    break
                _, st = _container(cur, name)
                now_run = _run(st.get("state") or {})
                now = self.clock.now()
                end = now if now_run is None or now_run[1] is None else now_run[1]
                for ln in run_lines(cur, started, end):
                    if shown < ln.at <= end:
                        await ws.send_bytes(bytes([STDOUT]) + format_line(ln, False))
                shown = max(shown, end)
                if now_run is None or now_run[0] != started or now_run[1] is not None:
                    break
            if not ws.closed:
                await self._status(ws, 0, None, [])
        except (ConnectionError, RuntimeError, _Error) as e:
            log.debug("attach stream ended: %s", e)
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(BaseException):
                    await reader
            await ws.close()
        return ws

    # -- port-forward ----------------------------------------------------------------

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        ns, name = request.match_info["namespace"], request.match_info["pod"]
        pod = self._pod(ns, name)
        if pod is None:
            return web.Response(status=404, text=f'pod "{name}" not found')
        ws = web.WebSocketResponse(protocols=PORT_FORWARD_PROTOCOLS, autoping=True,
                                   max_msg_size=0)
        if not ws.can_prepare(request).ok:
            return web.Response(status=400, text="websocket upgrade required "
                                "(SPDY/3.1+portforward.k8s.io); SPDY is not served")
        await ws.prepare(request)
        session = PortForwardSession(pod, ws.send_bytes)
        try:
            async for msg in ws:
                if msg.type != WSMsgType.BINARY:
                    if msg.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                        break
                    continue
                await session.feed(msg.data)
                if session.closed:
                    break
        except (ConnectionError, RuntimeError) as e:
            log.debug("port-forward stream ended: %s", e)
        finally:
            await ws.close()
        return ws
