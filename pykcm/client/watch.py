"""Watch streams: chunked JSON lines in, `(event_type, object)` out.

The API server writes one JSON watch event per line. aiohttp's own line reader
stops at 128 KiB, and Kubernetes objects can be far larger, so the stream is
read with `iter_chunked` and split here: `LineSplitter` keeps a partial last
line until the chunk that completes it arrives, without any length limit and
without copying a long line once per chunk.

`WatchStream` is what `Client.watch()` returns: an async iterator of
`(type, object)` with type ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (the
object of an ERROR event is the `metav1.Status`, e.g. a 410 Expired: the caller
decides what to do). It opens the request on first use, and `close()` (or
leaving `async with`) closes the response. When the server ends the stream the
iteration ends; when the connection breaks it ends too (as client-go's
StreamWatcher does), with the exception kept in `.error`.

A `WatchStream` given a `batch_decoder` (the compact informer's
`CompactDecoder.events`) decodes a received chunk's complete lines in one call
(`next_batch`), straight from the chunk: only the line that straddles two
chunks is copied out; the others are never split into bytes objects of their
own. A block the batch decoder cannot decode is decoded again line by line, so
the events, and the ERROR event of a bad line, are the same either way.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, Self

import aiohttp
import orjson

__all__ = ["LineSplitter", "RawWatchStream", "WatchEvent", "WatchStream"]

WatchEvent = tuple[str, dict[str, Any]]
# What opening a watch gives: the body's chunks, and how to close the response.
StreamSource = tuple[AsyncIterator[bytes], Callable[[], None]]

CHUNK_SIZE = 65536


class LineSplitter:
    """Splits a byte stream into newline-terminated lines (empty lines dropped)."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines completed by `chunk`; its unterminated tail is kept for later."""
        if b"\n" not in chunk:
            if chunk:
                self._parts.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._parts:
            self._parts.append(lines[0])
            lines[0] = b"".join(self._parts)
            self._parts = []
        tail = lines.pop()
        if tail:
            self._parts.append(tail)
        if b"" in lines:
            lines = [ln for ln in lines if ln]
        return lines

    def feed_block(self, chunk: bytes) -> tuple[bytes | None, memoryview | None]:
        """``feed`` without splitting: (the line completed by the head of ``chunk``, if a
        partial line was pending; a view of the chunk's other complete lines, newlines
        included, if any). The unterminated tail is kept for later, as by ``feed``.
        """
        last = chunk.rfind(b"\n")
        if last < 0:
            if chunk:
                self._parts.append(chunk)
            return None, None
        first: bytes | None = None
        start = 0
        if self._parts:
            start = chunk.find(b"\n") + 1
            self._parts.append(chunk[:start - 1])
            first = b"".join(self._parts)
            self._parts = []
            if not first:
                first = None
        tail = chunk[last + 1:]
        if tail:
            self._parts.append(tail)
        return first, memoryview(chunk)[start:last + 1] if start <= last else None

    def flush(self) -> bytes | None:
        """The pending partial line at the end of the stream, if any."""
        if not self._parts:
            return None
        line = b"".join(self._parts)
        self._parts = []
        return line if line.strip() else None

    @property
    def pending(self) -> int:
        """Bytes held for the line not yet complete."""
        return sum(len(p) for p in self._parts)


def _decode_error(line: bytes, exc: Exception) -> WatchEvent:
    snippet = line[:200].decode("utf-8", "replace")
    return ("ERROR", {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "code": 500, "reason": "InternalError",
        "message": f"unable to decode an event from the watch stream: {exc} ({snippet!r})",
        "details": {"causes": [{"reason": "UnexpectedServerResponse", "message": snippet}]},
    })


class RawWatchStream:
    """A watch stream yielding each event's raw JSON line (bytes), undecoded."""

    def __init__(self, opener: Callable[[], Awaitable[StreamSource]]) -> None:
        self._opener = opener
        self._chunks: AsyncIterator[bytes] | None = None
        self._close_response: Callable[[], None] | None = None
        self._splitter = LineSplitter()
        self._pending: list[bytes] = []
        self._index = 0
        self._eof = False
        self._closed = False
        # The transport error that ended the stream, if it did not end cleanly.
        self.error: BaseException | None = None

    @classmethod
    def from_chunks(cls, chunks: AsyncIterable[bytes],
                    close: Callable[[], None] | None = None) -> Self:
        """A stream over any async iterable of byte chunks (tests, replays)."""
        async def opener() -> StreamSource:
            it = chunks.__aiter__()
            return it, (close or (lambda: None))
        return cls(opener)

    @property
    def started(self) -> bool:
        return self._chunks is not None

    @property
    def closed(self) -> bool:
        return self._closed

    async def start(self) -> None:
        """Send the watch request now (API errors such as 422 are raised here)."""
        if self._chunks is not None or self._closed:
            return
        chunks, close = await self._opener()
        if self._closed:  # closed while opening
            close()
            return
        self._chunks, self._close_response = chunks, close

    async def _next_chunk(self) -> bytes | None:
        """The next chunk of the body; None at its end (the response is then released,
        and ``error`` holds the transport error that ended it, if any)."""
        if self._chunks is None:
            await self.start()
        if not self._eof and not self._closed:
            assert self._chunks is not None
            try:
                return await self._chunks.__anext__()
            except StopAsyncIteration:
                self._eof = True
            except (TimeoutError, aiohttp.ClientError, ConnectionError) as exc:
                self._eof = True
                if not self._closed:
                    self.error = exc
        return None

    async def _read_lines(self) -> bool:
        """Fill _pending with the next lines; False at the end of the stream."""
        while True:
            chunk = await self._next_chunk()
            if chunk is None:
                if self._eof and not self._closed and self.error is None:
                    last = self._splitter.flush()
                    if last is not None:
                        self._pending, self._index = [last], 0
                        return True
                self._release()
                return False
            lines = self._splitter.feed(chunk)
            if lines:
                self._pending, self._index = lines, 0
                return True

    def _release(self) -> None:
        close, self._close_response = self._close_response, None
        if close is not None:
            close()

    async def next_line(self) -> bytes | None:
        """The next raw event line, or None at the end."""
        if self._index >= len(self._pending) and (
                self._eof or self._closed or not await self._read_lines()):
            return None
        line = self._pending[self._index]
        self._index += 1
        return line

    async def next_lines(self) -> list[bytes]:
        """All the lines available now (at least one), or [] at the end."""
        if self._index >= len(self._pending) and (
                self._eof or self._closed or not await self._read_lines()):
            return []
        lines = self._pending[self._index:] if self._index else self._pending
        self._pending, self._index = [], 0
        return lines

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        line = await self.next_line()
        if line is None:
            raise StopAsyncIteration
        return line

    def close(self) -> None:
        """Stop: close the response; an iteration in progress ends."""
        self._closed = True
        self._pending, self._index = [], 0
        self._release()

    def __del__(self) -> None:
        # An abandoned stream (a `break` out of `async for` without `async with`)
        # still gives its connection back.
        close = self.__dict__.get("_close_response")
        if close is not None:
            with contextlib.suppress(Exception):  # interpreter shutdown
                close()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class WatchStream(RawWatchStream):
    """A watch stream yielding `(event_type, object)`.

    `event_decoder` turns a line into `(type, object)` in place of
    `orjson.loads` (e.g. `pykcm.cache.frozen_object.CompactDecoder.event`);
    it raises ValueError (or KeyError, TypeError) on a line it cannot decode.
    `batch_decoder` (optional, with an `event_decoder`) turns a block of
    complete lines into their events at once (e.g. `CompactDecoder.events`);
    when it raises, the block is decoded again line by line with `event_decoder`.
    """

    def __init__(self, opener: Callable[[], Awaitable[StreamSource]], *,
                 event_decoder: Callable[[bytes], WatchEvent] | None = None,
                 batch_decoder: Callable[[memoryview], list[WatchEvent]] | None = None
                 ) -> None:
        super().__init__(opener)
        self._event_decoder = event_decoder
        self._batch_decoder = batch_decoder if event_decoder is not None else None

    @classmethod
    def decoding(cls, raw: RawWatchStream,
                 event_decoder: Callable[[bytes], WatchEvent] | None,
                 batch_decoder: Callable[[memoryview], list[WatchEvent]] | None = None
                 ) -> WatchStream:
        """A WatchStream for the request of `raw` (not started yet), decoding with
        `event_decoder` (and `batch_decoder`, see the class)."""
        if raw.started or raw.closed:
            raise ValueError("the raw watch stream is already started or closed")
        return cls(raw._opener, event_decoder=event_decoder, batch_decoder=batch_decoder)

    def _decode(self, line: bytes) -> WatchEvent | None:
        try:
            decode = self._event_decoder
            if decode is not None:
                return decode(line)
            ev = orjson.loads(line)
            return ev["type"], ev["object"]
        except (ValueError, KeyError, TypeError) as exc:  # orjson's JSONDecodeError too
            if not line.strip():
                return None
            # As client-go: report it as an ERROR event, then stop.
            self.close()
            return _decode_error(line, exc)

    async def __anext__(self) -> WatchEvent:  # type: ignore[override]
        while True:
            i = self._index
            if i < len(self._pending):  # the fast path: no await per event
                line = self._pending[i]
                self._index = i + 1
            else:
                next_line = await self.next_line()
                if next_line is None:
                    raise StopAsyncIteration
                line = next_line
            ev = self._decode(line)
            if ev is not None:
                return ev

    def _decode_lines(self, lines: list[bytes], out: list[WatchEvent]) -> bool:
        """Append the events of `lines` to `out`; False after an ERROR that closed the stream."""
        for line in lines:
            ev = self._decode(line)
            if ev is not None:
                out.append(ev)
                if ev[0] == "ERROR" and self._closed:
                    return False
        return True

    async def next_batch(self) -> list[WatchEvent]:
        """The events of the next chunk(s) read (at least one), or [] at the end."""
        if self._batch_decoder is not None:
            return await self._next_block()
        while True:
            lines = await self.next_lines()
            if not lines:
                return []
            out: list[WatchEvent] = []
            self._decode_lines(lines, out)
            if out:
                return out

    async def _next_block(self) -> list[WatchEvent]:
        """next_batch with the batch decoder: a chunk's complete lines decoded at once."""
        batch_decoder = self._batch_decoder
        assert batch_decoder is not None
        out: list[WatchEvent] = []
        if self._index < len(self._pending):  # lines read by next_line() before
            lines = self._pending[self._index:]
            self._pending, self._index = [], 0
            if not self._decode_lines(lines, out) or out:
                return out
        splitter = self._splitter
        while not self._eof and not self._closed:
            chunk = await self._next_chunk()
            if chunk is None:
                break
            first, block = splitter.feed_block(chunk)
            if first is not None and not self._decode_lines([first], out):
                return out
            if block is not None:
                try:
                    events = batch_decoder(block)
                except Exception:  # noqa: BLE001 - decoded again line by line
                    if not self._decode_lines(bytes(block).split(b"\n"), out):
                        return out
                else:
                    out.extend(events)
            if out:
                return out
        if self._eof and not self._closed and self.error is None:
            last = splitter.flush()
            if last is not None:
                self._decode_lines([last], out)
        if not out:
            self._release()
        return out
