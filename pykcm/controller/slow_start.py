"""Slow-start batches: create many objects without flooding the API server on a bad spec.

A ReplicaSet asked for 500 pods whose spec the API server rejects would send
500 doomed requests and record 500 events. Upstream's slowStartBatch sends
them in batches of 1, 2, 4, 8, ... (doubling from ``initial_batch_size``),
the calls of one batch concurrently, and stops after the first batch in
which any call failed: one bad request costs one round trip, a healthy spec
ramps up to full concurrency in log2(n) rounds.

Data flow::

    count ──► batch 1 ──all ok──► batch 2 ──all ok──► batch 4 ... (capped at what remains)
                 │ any error             │ any error
                 ▼                       ▼
          (successes so far, first error)   -- the rest is skipped; the caller
                                               lowers its expectations by the skipped count
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

__all__ = ["SLOW_START_INITIAL_BATCH_SIZE", "slow_start_batch"]

SLOW_START_INITIAL_BATCH_SIZE = 1
"""The size of the first batch (upstream controller.SlowStartInitialBatchSize)."""


async def slow_start_batch(count: int, initial_batch_size: int,
                           fn: Callable[[], Awaitable[None]]) -> tuple[int, BaseException | None]:
    """Call ``fn`` ``count`` times in doubling batches; return (successes, first error or None).

    Every call of a batch runs to completion before the next batch starts
    (or before returning on an error), so the success count is exact. The
    "first" error is the first failed call of the failing batch in call
    order. Cancellation propagates; an ``Exception`` from ``fn`` is counted
    as a failure.
    """
    remaining = count
    successes = 0
    batch_size = min(remaining, initial_batch_size)
    while batch_size > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch_size)),
                                       return_exceptions=True)
        errors: list[BaseException] = []
        for r in results:
            if isinstance(r, BaseException):
                if not isinstance(r, Exception):
                    # CancelledError, KeyboardInterrupt, SystemExit: not a
                    # failed create, a reason to stop everything.
                    raise r
                errors.append(r)
        successes += batch_size - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= batch_size
        batch_size = min(2 * batch_size, remaining)
    return successes, None
