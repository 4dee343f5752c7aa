"""Polling for tests: wait until something the cluster does becomes true.

One helper for the integration and e2e tests that wait on controllers (they
used to carry a copy each). Nothing here asserts how long anything takes: the
timeout only bounds a wait that would otherwise hang.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any


async def eventually(cond: Callable[[], Any], timeout: float = 30.0,
                     what: str = "condition") -> Any:
    """Call ``cond`` (a plain or a coroutine function) until it returns something truthy,
    and return that; AssertionError with the last value after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = cond()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"{what or 'condition'} not met within {timeout} s "
                                 f"(last: {value!r})")
        await asyncio.sleep(0.05)
