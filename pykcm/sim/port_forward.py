"""A simulated pod's ports, reached by port-forward: the kubelet's portforward.k8s.io.

Role: what the simulated kubelet does with a ``/portForward/{namespace}/{pod}``
connection. The client (kubectl, through the API server) opens, per local
connection, two SPDY streams sharing a ``requestID``: an ``error`` stream
then a ``data`` stream, both naming the pod's ``port``. The kubelet connects
the data stream to the port inside the pod; here a tiny server stands behind
the port instead of a process:

- ``http`` (the default): reads one HTTP request and answers
  ``200 OK`` with the pod's name as the body (``Connection: close``), as a
  hostname server would;
- ``echo``: sends back every byte until the client closes its side.

``sim.pykcm.io/port-forward`` picks the server (``http`` or ``echo``). A port
is open when a container declares it (``ports[].containerPort``) or the pod's
``sim.pykcm.io/open-ports`` lists it (comma-separated); any other port is
closed, and the error stream carries a refused connection, which kubectl shows
as ``an error occurred forwarding L -> R: ...``, as with a real kubelet (which
forwards to any port, declared or not).

Data flow::

    bytes in (websocket messages) ─► spdy.FrameReader ─► SYN_STREAM: reply, pair by
    requestID ─► data frames ─► the port's server ─► data frames (+FIN on data,
    then on error) ─► ``send``

Deliberate deviation: the refused connection's message is shorter than the
container runtime's (no network namespace path or sandbox id).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pykcm.sim import spdy

__all__ = ["MODE_ANNOTATION", "OPEN_PORTS_ANNOTATION", "PortForwardSession", "open_ports"]

MODE_ANNOTATION: Final = "sim.pykcm.io/port-forward"
OPEN_PORTS_ANNOTATION: Final = "sim.pykcm.io/open-ports"

Send = Callable[[bytes], Awaitable[None]]


def open_ports(pod: Mapping[str, Any]) -> set[int]:
    """The ports something listens on in the simulated pod."""
    spec = pod.get("spec") or {}
    ports: set[int] = set()
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            for p in c.get("ports") or ():
                if (p.get("protocol") or "TCP") == "TCP" and p.get("containerPort"):
                    ports.add(int(p["containerPort"]))
    listed = ((pod.get("metadata") or {}).get("annotations") or {}).get(
        OPEN_PORTS_ANNOTATION, "")
    for item in listed.split(","):
        if item.strip().isdigit():
            ports.add(int(item.strip()))
    return ports


@dataclass
class _Forward:
    """One forwarded connection: its two streams and what the client sent."""

    port: int
    error: int = 0
    data: int = 0
    received: bytearray = field(default_factory=bytearray)
    done: bool = False


class PortForwardSession:
    """One SPDY connection of port-forward requests to ``pod``; frames go out by ``send``."""

    def __init__(self, pod: Mapping[str, Any], send: Send) -> None:
        self._pod = pod
        self._send = send
        self._reader = spdy.FrameReader()
        self._codec = spdy.HeaderCodec()
        self._by_request: dict[str, _Forward] = {}
        self._by_stream: dict[int, _Forward] = {}
        self._ports = open_ports(pod)
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        self._mode = annotations.get(MODE_ANNOTATION, "http")
        self.closed = False

    async def feed(self, data: bytes) -> None:
        for frame in self._reader.feed(data):
            await self._frame(frame)

    async def _frame(self, frame: spdy.Frame) -> None:
        if frame.type == spdy.SYN_STREAM:
            await self._syn_stream(frame)
        elif frame.type == 0:
            fwd = self._by_stream.get(frame.stream_id)
            if fwd is not None and frame.stream_id == fwd.data and not fwd.done:
                await self._data(fwd, frame.payload, frame.fin)
        elif frame.type == spdy.PING:
            await self._send(spdy.ping(frame.payload))
        elif frame.type == spdy.RST_STREAM:
            fwd = self._by_stream.get(frame.stream_id)
            if fwd is not None:
                fwd.done = True
        elif frame.type == spdy.GOAWAY:
            self.closed = True
        # SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do without flow control

    async def _syn_stream(self, frame: spdy.Frame) -> None:
        headers = self._codec.decode(frame.payload[10:])
        sid = frame.stream_id
        await self._send(spdy.syn_reply(self._codec, sid, {}))
        kind = (headers.get("streamtype") or [""])[0]
        request = (headers.get("requestid") or [""])[0]
        try:
            port = int((headers.get("port") or [""])[0])
        except ValueError:
            port = 0
        fwd = self._by_request.setdefault(request, _Forward(port))
        self._by_stream[sid] = fwd
        if kind == "error":
            fwd.error = sid
        elif kind == "data":
            fwd.data = sid
        else:
            await self._send(spdy.rst_stream(sid, 1))  # PROTOCOL_ERROR
            return
        if fwd.error and fwd.data:
            await self._start(fwd)

    async def _start(self, fwd: _Forward) -> None:
        if not 0 < fwd.port < 65536:
            await self._fail(fwd, f"invalid port {fwd.port}")
        elif fwd.port not in self._ports:
            uid = (self._pod.get("metadata") or {}).get("uid", "")
            await self._fail(fwd, f"error forwarding port {fwd.port} to pod {uid}, uid : "
                                  f"failed to connect to localhost:{fwd.port} inside the pod: "
                                  f"dial tcp4 127.0.0.1:{fwd.port}: connect: connection refused")

    async def _fail(self, fwd: _Forward, message: str) -> None:
        fwd.done = True
        await self._send(spdy.data_frame(fwd.error, message.encode(), fin=True))
        await self._send(spdy.data_frame(fwd.data, b"", fin=True))

    async def _finish(self, fwd: _Forward, reply: bytes) -> None:
        fwd.done = True
        if reply:
            await self._send(spdy.data_frame(fwd.data, reply))
        await self._send(spdy.data_frame(fwd.data, b"", fin=True))
        # kubectl waits for the error stream's end after the data's
        await self._send(spdy.data_frame(fwd.error, b"", fin=True))

    async def _data(self, fwd: _Forward, payload: bytes, fin: bool) -> None:
        if self._mode == "echo":
            if payload:
                await self._send(spdy.data_frame(fwd.data, payload))
            if fin:
                await self._finish(fwd, b"")
            return
        fwd.received += payload
        if b"\r\n\r\n" in fwd.received or fin:
            await self._finish(fwd, self._http_reply(bytes(fwd.received)))

    def _http_reply(self, request: bytes) -> bytes:
        if not request.strip():
            return b""
        line = request.split(b"\r\n", 1)[0].split()
        if len(line) < 3 or not line[2].startswith(b"HTTP/"):
            return b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        body = ((self._pod.get("metadata") or {}).get("name", "") + "\n").encode()
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        return head + (b"" if line[0] == b"HEAD" else body)
