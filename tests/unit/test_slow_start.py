"""slow_start_batch: batch sizes 1, 2, 4, ..., concurrency within a batch, stop after a failing batch."""

from __future__ import annotations

import asyncio

import pytest

from pykcm.controller import SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch


class Recorder:
    """fn for slow_start_batch: records which batch each call ran in; fails on chosen calls."""

    def __init__(self, fail_calls: set[int] | None = None) -> None:
        self.calls = 0
        self.fail_calls = fail_calls or set()
        self.batches: list[int] = []
        self._in_flight = 0
        self.max_in_flight = 0

    async def __call__(self) -> None:
        n = self.calls
        self.calls += 1
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            # Yield so that every call of the batch is in flight at once.
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        finally:
            self._in_flight -= 1
        if n in self.fail_calls:
            raise RuntimeError(f"call {n} failed")


async def batch_sizes(count: int, initial: int) -> list[int]:
    sizes: list[int] = []
    in_batch = 0

    async def fn() -> None:
        nonlocal in_batch
        in_batch += 1
        await asyncio.sleep(0)
        if in_batch:
            sizes.append(in_batch)
            in_batch = 0

    n, err = await slow_start_batch(count, initial, fn)
    assert (n, err) == (count, None)
    return sizes


@pytest.mark.parametrize(("count", "initial", "sizes"), [
    (0, 1, []),
    (1, 1, [1]),
    (10, 1, [1, 2, 4, 3]),
    (15, 1, [1, 2, 4, 8]),
    (16, 1, [1, 2, 4, 8, 1]),
    (10, 3, [3, 6, 1]),
    (2, 5, [2]),
])
async def test_batch_sizes_double(count: int, initial: int, sizes: list[int]) -> None:
    assert await batch_sizes(count, initial) == sizes


async def test_initial_batch_size_constant() -> None:
    assert SLOW_START_INITIAL_BATCH_SIZE == 1


async def test_calls_of_a_batch_run_concurrently() -> None:
    rec = Recorder()
    assert await slow_start_batch(7, 1, rec) == (7, None)
    assert rec.calls == 7
    assert rec.max_in_flight == 4


async def test_stops_after_first_failing_batch() -> None:
    # Batches: [0], [1, 2], [3, 4, 5, 6], [7 ... 9]. Call 4 fails: batch 3 completes, then stop.
    rec = Recorder(fail_calls={4, 5})
    n, err = await slow_start_batch(10, 1, rec)
    assert rec.calls == 7
    assert n == 5
    assert isinstance(err, RuntimeError) and str(err) == "call 4 failed"


async def test_first_call_failing_skips_everything_else() -> None:
    rec = Recorder(fail_calls={0})
    n, err = await slow_start_batch(100, 1, rec)
    assert (n, rec.calls) == (0, 1)
    assert err is not None


async def test_cancellation_propagates() -> None:
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(slow_start_batch(3, 1, hang))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
