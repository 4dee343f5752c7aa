"""The TTL-after-finished controller: deletes finished Jobs once their TTL expires
(upstream ``pkg/controller/ttlafterfinished``).

Role
----
A Job with ``spec.ttlSecondsAfterFinished`` is deleted that many seconds
after it finished (the lastTransitionTime of its True ``Complete`` or
``Failed`` condition), together with its pods: the delete uses Foreground
propagation, so the garbage collector removes the pods before the Job goes.

Data flow
---------
::

    Job informer ── add / update of a finished Job with a TTL (not being deleted)
        ▼
    queue "ttl_jobs_to_delete" ─► process_job(key):
        cached Job: TTL left? ── yes ─► requeue after the time left
             │ expired
             ▼
        GET the live Job (the TTL or the Job may have changed): still expired?
             │ yes
             ▼
        DELETE jobs/<name>  propagationPolicy=Foreground, preconditions.uid

Time comes from an injectable :class:`pykcm.api.clock.Clock` (epoch seconds for
the TTL; the requeue at expiry waits on the same clock), so tests can expire a
TTL without waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.clock import Clock, clock_of
from pykcm.api.pod_util import parse_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import split_meta_namespace_key
from pykcm.client import Client
from pykcm.client.errors import ApiError, is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.controllers.job.utils import COMPLETE, FAILED, is_job_finished
from pykcm.informers.generic import GenericInformer

__all__ = [
    "CONTROLLER_NAME",
    "TTLAfterFinishedController",
    "job_finish_time",
    "needs_cleanup",
    "time_left",
]

log = logging.getLogger("pykcm.controllers.ttlafterfinished")

CONTROLLER_NAME: Final = "ttl-after-finished"


def needs_cleanup(job: Mapping[str, Any]) -> bool:
    """A finished Job with ``spec.ttlSecondsAfterFinished`` set."""
    return ((job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None
            and is_job_finished(job))


def job_finish_time(job: Mapping[str, Any]) -> float:
    """When the finished Job finished: its Complete/Failed condition's lastTransitionTime.

    Raises ValueError when the Job is not finished or the time is missing.
    """
    meta = job.get("metadata") or {}
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in (COMPLETE, FAILED) and c.get("status") == "True":
            t = parse_time(c.get("lastTransitionTime"))
            if t is None:
                raise ValueError(f"unable to find the time when the Job "
                                 f"{meta.get('namespace')}/{meta.get('name')} finished")
            return t
    raise ValueError(f"unable to find the status of the finished Job "
                     f"{meta.get('namespace')}/{meta.get('name')}")


def time_left(job: Mapping[str, Any], now: float) -> float:
    """Seconds until the Job's TTL expires (<= 0: expired). ValueError if it needs no cleanup."""
    meta = job.get("metadata") or {}
    if not needs_cleanup(job):
        raise ValueError(f"Job {meta.get('namespace')}/{meta.get('name')} should not be "
                         "cleaned up")
    finish = job_finish_time(job)
    if finish > now:
        log.warning("Found Job %s/%s finished in the future. This is likely due to time skew "
                    "in the cluster. Job cleanup will be deferred.", meta.get("namespace"),
                    meta.get("name"))
    expire = finish + float((job.get("spec") or {})["ttlSecondsAfterFinished"])
    return expire - now


class TTLAfterFinishedController(ControllerHost):
    """Deletes finished Jobs ``ttlSecondsAfterFinished`` after they finished.

    Build it before the informer factory starts (its handler is added to
    ``job_informer`` here). ``clock``: its time (schedules and TTLs
    read ``now()``, epoch seconds; requeues wait on it).
    """

    def __init__(self, *, job_informer: GenericInformer, client: Client,
                 clock: Clock | None = None) -> None:
        self.name = CONTROLLER_NAME
        self.client = client
        self.clock: Clock = clock_of(clock)
        self.controller = Controller("ttl_jobs_to_delete", self.process_job, clock=self.clock)
        self.queue = self.controller.queue
        self.job_lister = job_informer.lister
        reg = job_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self._on_job, update_func=lambda old, cur: self._on_job(cur)))
        self.controller.add_synced(reg.has_synced)

    def enqueue_key(self, key: str) -> None:
        """Check the Job ``namespace/name`` now (a test that moved its clock; a manual resync)."""
        self.queue.add(key)

    # -- handlers and sync -----------------------------------------------------------------

    def _on_job(self, job: Any) -> None:
        if not (job.get("metadata") or {}).get("deletionTimestamp") and needs_cleanup(job):
            self.controller.enqueue(job)

    def _process_ttl(self, job: Mapping[str, Any]) -> tuple[bool, float | None]:
        """``(expired, requeue_after)`` for ``job``: not expired yet → when to look again."""
        if (job.get("metadata") or {}).get("deletionTimestamp") or not needs_cleanup(job):
            return False, None
        left = time_left(job, self.clock.now())
        if left <= 0:
            return True, None
        return False, left

    async def process_job(self, key: str) -> Result | None:
        """Delete the Job ``key`` if its TTL has expired, else requeue it for when it will."""
        ns, name = split_meta_namespace_key(key)
        try:
            job: Mapping[str, Any] = self.job_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if is_not_found(exc):
                return None
            raise
        expired, requeue_after = self._process_ttl(job)
        if not expired:
            return Result(requeue_after=requeue_after) if requeue_after is not None else None
        # The cached TTL may be stale: check the live Job before deleting it. A
        # Job recreated under the same name is checked on its own merits.
        try:
            fresh = await self.client.get("jobs", name, ns)
        except ApiError as exc:
            if is_not_found(exc):
                return None
            raise
        expired, requeue_after = self._process_ttl(fresh)
        if not expired:
            return Result(requeue_after=requeue_after) if requeue_after is not None else None
        log.info("Cleaning up Job %s", key)
        try:
            await self.client.delete(
                "jobs", name, ns, propagation_policy="Foreground",
                preconditions={"uid": (fresh.get("metadata") or {}).get("uid")})
        except ApiError as exc:
            if is_not_found(exc):
                return None
            raise
        return None
