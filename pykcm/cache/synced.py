"""Waiting for informer caches to sync (client-go shared_informer.go ``WaitForCacheSync``).

Data flow: a controller registers its handlers, the factory starts the
informers, then the controller's ``run`` waits here until every informer's
``has_synced`` (or every registration's ``has_synced``, which also waits for
the initial list to reach its handler) is true before starting workers that
read listers.

Polls every 100 ms, checking immediately first, as client-go's
``PollImmediateUntil(syncedPollPeriod, ...)``. Cancelling the waiting task
cancels the wait (client-go's stop channel).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from pykcm.api.progress_poll import poll_until

__all__ = [
    "SYNCED_POLL_PERIOD",
    "InformerSynced",
    "wait_for_cache_sync",
    "wait_for_named_cache_sync",
]

log = logging.getLogger("pykcm.cache.synced")

SYNCED_POLL_PERIOD: Final = 0.1
"""Seconds between two checks (client-go ``syncedPollPeriod``)."""

InformerSynced = Callable[[], bool]
"""A ``has_synced`` function: an informer's, or a handler registration's."""


async def wait_for_cache_sync(*cache_syncs: InformerSynced, timeout: float | None = None) -> bool:
    """Wait until every ``cache_syncs()`` is true; False if ``timeout`` seconds pass first."""
    # Waiting for lists to arrive is I/O progress, not control-loop time: real time,
    # whatever clock the informers and controllers run on (upstream polls on it too); a
    # progress poll, so that on virtual time a sync already done is not slept out while
    # the cluster's clock runs on (pykcm.api.progress_poll).
    if await poll_until(lambda: all(synced() for synced in cache_syncs), SYNCED_POLL_PERIOD,
                        timeout=timeout):
        log.debug("caches populated")
        return True
    log.debug("stop requested")
    return False


async def wait_for_named_cache_sync(controller_name: str, *cache_syncs: InformerSynced,
                                    timeout: float | None = None) -> bool:
    """:func:`wait_for_cache_sync` that logs what it waits for (client-go's wording)."""
    log.info("Waiting for caches to sync for %s", controller_name)
    if not await wait_for_cache_sync(*cache_syncs, timeout=timeout):
        log.error("unable to sync caches for %s", controller_name)
        return False
    log.info("Caches are synced for %s", controller_name)
    return True
