"""GC policy for processes that hold large informer caches.

Python's cyclic garbage collector rescans every tracked container object in
its full collections; an informer cache of 50,000 pods is millions of dicts and
lists, so with the default thresholds the collector takes 60-75% of the time
of the initial list and of the watch afterwards (bench/RESULTS.md, informer
section). Cached Kubernetes objects form no reference cycles and are freed by
reference counting, so the collector has nothing to find in them.

Two levers, both process-wide, so the owner of the process decides (the
SharedInformerFactory applies them unless told not to):

    tune_thresholds()  raise the collection thresholds (never lowers them)
    freeze()           move everything alive now to the permanent generation,
                       so later collections skip it (call once caches synced)

Objects frozen are still freed by reference counting when the cache drops
them; only a reference cycle that was alive at freeze time and dies later is
not collected, a bounded one-time cost.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

CACHE_THRESHOLDS = (100_000, 50, 1_000)


def tune_thresholds(thresholds: tuple[int, int, int] = CACHE_THRESHOLDS) -> tuple[int, int, int]:
    """Raise gc thresholds to at least `thresholds`; returns the previous ones."""
    before: tuple[int, int, int] = gc.get_threshold()
    wanted = tuple(max(a, b) for a, b in zip(before, thresholds))
    if wanted != before:
        gc.set_threshold(*wanted)
        log.debug("gc thresholds %s -> %s", before, wanted)
    return before


def freeze() -> int:
    """Freeze what is alive now (the synced caches); returns the frozen object count."""
    gc.freeze()
    return gc.get_freeze_count()
