"""SPDY/3.1 framing, the server side's share: what kubectl's port-forward speaks.

Role: kubectl v1.36 forwards ports over SPDY/3.1 streams, either tunneled in
websocket binary messages (subprotocol ``SPDY/3.1+portforward.k8s.io``, its
default, PortForwardWebsockets) or after an HTTP upgrade; either way the bytes
are SPDY frames. This module turns a byte stream into frames
(:class:`FrameReader`, fed whatever chunks arrive) and builds the frames a
server sends (SYN_REPLY, data, RST_STREAM, PING, GOAWAY). Header blocks are
zlib-compressed with SPDY/3's dictionary, one compression context per
direction for the whole connection (:class:`HeaderCodec`).

Frame layout (SPDY/3 draft)::

    control: 1|version(15) type(16) flags(8) length(24) payload
    data:    0|stream-id(31)        flags(8) length(24) payload    (flag 1: FIN)

Deliberate deviations: no flow control (WINDOW_UPDATE frames are read and
ignored, as the Go spdystream package kubectl uses does), no server push, no
SETTINGS sent; only what a port-forward server needs.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

__all__ = ["DICTIONARY", "FIN", "GOAWAY", "HEADERS", "PING", "RST_STREAM", "SETTINGS",
           "SYN_REPLY", "SYN_STREAM", "WINDOW_UPDATE", "Frame", "FrameReader", "HeaderCodec",
           "data_frame", "goaway", "ping", "rst_stream", "syn_reply"]

VERSION: Final = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS = 1, 2, 3, 4
PING, GOAWAY, HEADERS, WINDOW_UPDATE = 6, 7, 8, 9
FIN: Final = 0x01
CANCEL: Final = 5  # RST_STREAM status

# the words, "|"-separated ("200 OK" holds a space)
_WORDS_TEXT: Final = (
    "options|head|post|put|delete|trace|accept|accept-charset|accept-encoding|"
    "accept-language|accept-ranges|age|allow|authorization|cache-control|connection|"
    "content-base|content-encoding|content-language|content-length|content-location|"
    "content-md5|content-range|content-type|date|etag|expect|expires|from|host|if-match|"
    "if-modified-since|if-none-match|if-range|if-unmodified-since|last-modified|location|"
    "max-forwards|pragma|proxy-authenticate|proxy-authorization|range|referer|retry-after|"
    "server|te|trailer|transfer-encoding|upgrade|user-agent|vary|via|warning|"
    "www-authenticate|method|get|status|200 OK|version|HTTP/1.1|url|public|set-cookie|"
    "keep-alive|origin")
_TAIL: Final = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502"
    "504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
    "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
    "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
    "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
    "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,"
    "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
# SPDY/3's header compression dictionary: length-prefixed words, then a tail
DICTIONARY: Final = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS_TEXT.split("|")
                             ) + _TAIL.encode()


@dataclass
class Frame:
    """A frame read: ``control`` type (0 for a data frame), flags, stream id, payload."""

    type: int
    flags: int
    stream_id: int
    payload: bytes

    @property
    def fin(self) -> bool:
        return bool(self.flags & FIN)


class FrameReader:
    """Frames out of a byte stream fed in arbitrary chunks."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> Iterator[Frame]:
        self._buf += data
        while len(self._buf) >= 8:
            length = int.from_bytes(self._buf[5:8], "big")
            if len(self._buf) < 8 + length:
                return
            head, payload = bytes(self._buf[:8]), bytes(self._buf[8:8 + length])
            del self._buf[:8 + length]
            flags = head[4]
            if head[0] & 0x80:
                ftype = int.from_bytes(head[2:4], "big")
                # the stream id leads the payload of every per-stream control frame
                sid = (int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                       if ftype in (SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE)
                       and len(payload) >= 4 else 0)
                yield Frame(ftype, flags, sid, payload)
            else:
                yield Frame(0, flags, int.from_bytes(head[:4], "big") & 0x7FFFFFFF, payload)


class HeaderCodec:
    """The connection's two zlib contexts (one per direction) and the block layout."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)

    def decode(self, block: bytes) -> dict[str, list[str]]:
        raw = self._inflate.decompress(block)
        headers: dict[str, list[str]] = {}
        (count,) = struct.unpack_from(">I", raw, 0)
        pos = 4
        for _ in range(count):
            (n,) = struct.unpack_from(">I", raw, pos)
            name = raw[pos + 4:pos + 4 + n].decode().lower()
            pos += 4 + n
            (n,) = struct.unpack_from(">I", raw, pos)
            # several values of one name are NUL-separated
            headers.setdefault(name, []).extend(raw[pos + 4:pos + 4 + n].decode().split("\0"))
            pos += 4 + n
        return headers

    def encode(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for name, value in headers.items():
            raw += struct.pack(">I", len(name)) + name.lower().encode()
            raw += struct.pack(">I", len(value.encode())) + value.encode()
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)


def _control(ftype: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHB", 0x8000 | VERSION, ftype, flags) + len(payload).to_bytes(
        3, "big") + payload


def syn_reply(codec: HeaderCodec, stream_id: int, headers: dict[str, str],
              fin: bool = False) -> bytes:
    return _control(SYN_REPLY, FIN if fin else 0,
                    struct.pack(">I", stream_id) + codec.encode(headers))


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    return struct.pack(">IB", stream_id & 0x7FFFFFFF, FIN if fin else 0) + len(
        data).to_bytes(3, "big") + data


def rst_stream(stream_id: int, status: int = CANCEL) -> bytes:
    return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))


def ping(payload: bytes) -> bytes:
    return _control(PING, 0, payload)


def goaway(last_stream_id: int) -> bytes:
    return _control(GOAWAY, 0, struct.pack(">II", last_stream_id, 0))
