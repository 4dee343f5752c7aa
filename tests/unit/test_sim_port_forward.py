"""pykcm.sim.spdy and pykcm.sim.port_forward: SPDY/3.1 frames and the pod's tiny servers.

A client side is built from the same framing (a SYN_STREAM encoder written
here, as kubectl's spdystream sends them), so the session is driven frame by
frame without a network.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from typing import Any

from pykcm.sim import spdy
from pykcm.sim.port_forward import PortForwardSession, open_ports


def pod(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "web", "uid": "u-1", "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80},
                                                            {"containerPort": 53,
                                                             "protocol": "UDP"}]}]}}


class Client:
    """kubectl's half: SYN_STREAMs with compressed headers, data frames; reads replies."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
        self.codec = spdy.HeaderCodec()  # its inflate side reads the server's SYN_REPLYs
        self.out: list[bytes] = []
        self.reader = spdy.FrameReader()

    async def send(self, data: bytes) -> None:
        self.out.append(data)

    def syn_stream(self, sid: int, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for k, v in headers.items():
            raw += struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
        block = self.deflate.compress(raw) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        payload = struct.pack(">IIH", sid, 0, 0) + block
        return struct.pack(">HHB", 0x8003, spdy.SYN_STREAM, 0) + len(payload).to_bytes(
            3, "big") + payload

    def frames(self) -> list[spdy.Frame]:
        got = [f for chunk in self.out for f in self.reader.feed(chunk)]
        self.out.clear()
        return got


def open_pair(session: PortForwardSession, client: Client, port: int) -> None:
    for sid, kind in ((1, "error"), (3, "data")):
        headers = {"streamtype": kind, "port": str(port), "requestid": "0"}
        asyncio.run(session.feed(client.syn_stream(sid, headers)))


def data_of(frames: list[spdy.Frame], sid: int) -> tuple[bytes, bool]:
    mine = [f for f in frames if f.type == 0 and f.stream_id == sid]
    return b"".join(f.payload for f in mine), any(f.fin for f in mine)


def test_dictionary_is_spdy3s() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 3821447106  # the adler kubectl's zlib checks


def test_frames_split_across_chunks() -> None:
    frame = spdy.data_frame(5, b"hello", fin=True)
    reader = spdy.FrameReader()
    assert list(reader.feed(frame[:3])) == []
    [f] = list(reader.feed(frame[3:]))
    assert (f.type, f.stream_id, f.payload, f.fin) == (0, 5, b"hello", True)


def test_header_codec_round_trip_over_one_context() -> None:
    a, b = spdy.HeaderCodec(), spdy.HeaderCodec()
    for headers in ({"streamType": "data", "port": "80"}, {"x": "1\x002"}):
        got = b.decode(a.encode(headers))
        assert got == {k.lower(): v.split("\0") for k, v in headers.items()}


def test_open_ports_are_declared_tcp_ports_and_annotated_ones() -> None:
    assert open_ports(pod()) == {80}
    assert open_ports(pod({"sim.pykcm.io/open-ports": "9000, 9001"})) == {80, 9000, 9001}


def test_http_request_answered_with_the_pods_name() -> None:
    client = Client()
    session = PortForwardSession(pod(), client.send)
    open_pair(session, client, 80)
    frames = client.frames()
    assert [f.type for f in frames] == [spdy.SYN_REPLY, spdy.SYN_REPLY]
    asyncio.run(session.feed(spdy.data_frame(3, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")))
    frames = client.frames()
    body, fin = data_of(frames, 3)
    assert body.startswith(b"HTTP/1.1 200 OK\r\n") and body.endswith(b"\r\n\r\nweb\n")
    assert fin
    assert data_of(frames, 1) == (b"", True)  # the error stream ends empty, after the data


def test_echo_until_the_client_closes() -> None:
    client = Client()
    session = PortForwardSession(pod({"sim.pykcm.io/port-forward": "echo"}), client.send)
    open_pair(session, client, 80)
    client.frames()
    asyncio.run(session.feed(spdy.data_frame(3, b"abc")))
    assert data_of(client.frames(), 3) == (b"abc", False)
    asyncio.run(session.feed(spdy.data_frame(3, b"", fin=True)))
    assert data_of(client.frames(), 3) == (b"", True)


def test_closed_port_reports_a_refused_connection_on_the_error_stream() -> None:
    client = Client()
    session = PortForwardSession(pod(), client.send)
    open_pair(session, client, 8081)
    frames = client.frames()
    message, fin = data_of(frames, 1)
    assert fin and b"error forwarding port 8081 to pod u-1" in message
    assert b"connect: connection refused" in message
    assert data_of(frames, 3) == (b"", True)


def test_ping_is_answered() -> None:
    client = Client()
    session = PortForwardSession(pod(), client.send)
    asyncio.run(session.feed(spdy.ping(b"\x00\x00\x00\x07")))
    [f] = client.frames()
    assert (f.type, f.payload) == (spdy.PING, b"\x00\x00\x00\x07")
