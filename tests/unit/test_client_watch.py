"""Watch streams: line splitting over arbitrary chunk boundaries, decoding, closing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pykcm.client.watch import LineSplitter, RawWatchStream, WatchStream


def event(i: int, pad: int = 0) -> dict[str, object]:
    return {"type": "ADDED" if i % 3 else "MODIFIED",
            "object": {"kind": "ConfigMap", "metadata": {"name": f"cm-{i}",
                                                         "resourceVersion": str(i)},
                       "data": {"k": "é\\n\"" + "x" * pad}}}


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, prev = [], 0
    for p in points + [len(data)]:
        out.append(data[prev:p])
        prev = p
    return out


async def agen(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for c in chunks:
        yield c


@settings(max_examples=300, deadline=None)
@given(pads=st.lists(st.integers(0, 300), min_size=0, max_size=20),
       cuts=st.lists(st.integers(0, 10**6), max_size=40),
       blank_lines=st.booleans(), final_newline=st.booleans())
def test_random_chunk_boundaries_give_the_same_lines(pads: list[int], cuts: list[int],
                                                     blank_lines: bool,
                                                     final_newline: bool) -> None:
    lines = [orjson.dumps(event(i, p)) for i, p in enumerate(pads)]
    sep = b"\n\n" if blank_lines else b"\n"
    data = sep.join(lines) + (b"\n" if final_newline and lines else b"")
    splitter = LineSplitter()
    got: list[bytes] = []
    for chunk in split_at(data, cuts):
        got.extend(splitter.feed(chunk))
    last = splitter.flush()
    if last is not None:
        got.append(last)
    assert got == lines


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 15), cuts=st.lists(st.integers(0, 10**6), max_size=30))
def test_watch_stream_decodes_the_same_events_whatever_the_chunking(
        n: int, cuts: list[int]) -> None:
    events = [event(i, i * 7) for i in range(n)]
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)

    async def run() -> list[tuple[str, dict[str, object]]]:
        return [ev async for ev in WatchStream.from_chunks(agen(split_at(data, cuts)))]

    got = asyncio.run(run())
    assert got == [(e["type"], e["object"]) for e in events]


async def test_a_300_kib_line_works() -> None:
    big = event(1, 300 * 1024)
    small = event(2)
    data = orjson.dumps(big) + b"\n" + orjson.dumps(small) + b"\n"
    assert len(data) > 300 * 1024
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)]
    splitter = LineSplitter()
    seen_pending = 0
    out: list[bytes] = []
    for c in chunks:
        out.extend(splitter.feed(c))
        seen_pending = max(seen_pending, splitter.pending)
    assert seen_pending > 200 * 1024  # held across chunks, not dropped
    got = [ev async for ev in WatchStream.from_chunks(agen(chunks))]
    assert got == [("ADDED", big["object"]), ("ADDED", small["object"])]


async def test_partial_last_line_is_kept_until_completed() -> None:
    s = LineSplitter()
    assert s.feed(b'{"a":') == []
    assert s.feed(b"1}") == []
    assert s.feed(b'\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert s.pending == 4
    assert s.flush() == b'{"c"'
    assert s.flush() is None


async def test_error_event_is_yielded_for_the_caller() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
              "reason": "Expired", "message": "too old resource version: 1 (5)"}
    data = orjson.dumps({"type": "ERROR", "object": status}) + b"\n"
    got = [ev async for ev in WatchStream.from_chunks(agen([data]))]
    assert got == [("ERROR", status)]


async def test_undecodable_line_gives_an_error_event_and_stops() -> None:
    data = orjson.dumps(event(1)) + b"\nnot json\n" + orjson.dumps(event(2)) + b"\n"
    got = [ev async for ev in WatchStream.from_chunks(agen([data]))]
    assert got[0][0] == "ADDED"
    assert got[1][0] == "ERROR" and got[1][1]["code"] == 500
    assert "unable to decode" in str(got[1][1]["message"])
    assert len(got) == 2


async def test_close_closes_the_response_and_ends_iteration() -> None:
    closed: list[bool] = []
    gate = asyncio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        yield orjson.dumps(event(1)) + b"\n"
        await gate.wait()
        raise ConnectionResetError("closed")  # what a closed response looks like

    stream = WatchStream.from_chunks(chunks(), close=lambda: closed.append(True))
    got = []

    async def consume() -> None:
        async for ev in stream:
            got.append(ev)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.01)
    stream.close()
    gate.set()
    await asyncio.wait_for(task, 1)
    assert len(got) == 1 and closed == [True]
    assert stream.error is None  # we closed it: not an error
    assert stream.closed


async def test_broken_connection_ends_the_stream_with_the_error_kept() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield orjson.dumps(event(1)) + b"\n" + b'{"type":"ADD'
        raise ConnectionResetError("reset by peer")

    stream = WatchStream.from_chunks(chunks())
    got = [ev async for ev in stream]
    assert len(got) == 1  # the partial line is not delivered
    assert isinstance(stream.error, ConnectionResetError)


async def test_batches_and_raw_lines() -> None:
    events = [event(i) for i in range(5)]
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    stream = WatchStream.from_chunks(agen([data[:50], data[50:]]))
    batches = []
    while batch := await stream.next_batch():
        batches.append(batch)
    assert [ev for b in batches for ev in b] == [(e["type"], e["object"]) for e in events]
    raw = RawWatchStream.from_chunks(agen([data]))
    async with raw:
        lines = [ln async for ln in raw]
    assert [orjson.loads(ln) for ln in lines] == events
