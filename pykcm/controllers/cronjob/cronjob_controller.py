"""The CronJob controller: creates Jobs on a cron schedule (upstream
``pkg/controller/cronjob/cronjob_controllerv2.go``).

Role
----
At each time of ``spec.schedule`` (in ``spec.timeZone``, else the local zone)
a CronJob gets one Job named ``<cronjob>-<scheduled time in minutes since the
epoch>``, unless it is suspended, the time is older than
``startingDeadlineSeconds``, or ``concurrencyPolicy: Forbid`` finds a Job
still running (``Replace`` deletes the running ones first). Finished Jobs
beyond ``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit`` are
deleted, oldest first. ``status.active`` references the running Jobs,
``lastScheduleTime`` the last scheduled time started, ``lastSuccessfulTime``
the last completion.

Data flow
---------
::

    CronJob informer ── add / delete ──────────────► enqueue now
                     └─ update: schedule changed ──► enqueue at the next schedule time
                                 other change ─────► enqueue now
    Job informer ── add / update / delete of a Job it controls ─► enqueue the CronJob
    queue "cronjob" ─► sync(key):
        1. the Jobs it controls (cache); a copy of the CronJob
        2. cleanup_finished_jobs: history limits (DELETE, background propagation)
        3. sync_cronjob: active list and lastSuccessfulTime from the Jobs;
           the due schedule time, if any → POST the Job (AlreadyExists: adopt
           into the active list if it is ours)
        4. PUT cronjobs/<name>/status once if anything changed
        5. requeue at the next schedule time (+100 ms)

Events (on the CronJob): SuccessfulCreate, SuccessfulDelete, SawCompletedJob,
MissingJob, UnexpectedJob, JobAlreadyActive, MissSchedule,
TooManyMissedTimes, UnparseableSchedule, InvalidSchedule, UnknownTimeZone,
UnsupportedSchedule, FailedCreate, FailedDelete, FailedGet.

Deliberate deviation: a sync first checks that the cache holds the CronJob
as this controller last wrote it (``_ensure_cache_fresh``: its
resourceVersion is not older than the one our last status write returned;
a stale cache is an error, retried through the rate limiter). Upstream's
CronJob controller has no such check (v1.36 adds one, KEP-5647's
ConsistencyStore, to the Job and ReplicaSet controllers only) because in Go
the informer usually applies our own write before the next sync of the key
starts; on one asyncio loop the next sync (say, the one a Job's deletion by
the history limit queued while the status write was in flight) runs first
and would see its Job gone from a stale ``status.active``: a MissingJob
event and a 409 that kube-controller-manager does not produce (the
differential test cronjob-starting-deadline shows both).

Time comes from an injectable :class:`pykcm.api.clock.Clock` (schedules read
its epoch seconds; the requeue at the next schedule time waits on the same
clock, so a test advancing a ``FakeClock`` gets the sync on time; a ``now()``-only
clock keeps real-time requeues, and such a test calls
:meth:`CronJobController.enqueue_key` after moving it).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.cron import CronParseError, load_location, local_zone, parse_standard
from pykcm.api.owner_refs import get_controller_of, is_controlled_by
from pykcm.api.pod_util import parse_time
from pykcm.api.timestamps import format_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown, split_meta_namespace_key
from pykcm.client import Client
from pykcm.client.errors import ApiError, has_status_cause, is_already_exists, is_not_found
from pykcm.controller.controller import Controller, ControllerHost, Result
from pykcm.controller.event_recorder import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from pykcm.controllers.cronjob.utils import (
    by_job_start_time,
    delete_from_active_list,
    format_schedule,
    get_job_from_template,
    get_job_name,
    in_active_list,
    in_active_list_by_name,
    next_schedule_time,
    next_schedule_time_duration,
)
from pykcm.controllers.job.utils import (
    COMPLETE,
    FAILED,
    finished_condition,
    is_job_finished,
    is_job_succeeded,
)
from pykcm.informers.generic import GenericInformer

__all__ = ["CONTROLLER_NAME", "CronJobController"]

log = logging.getLogger("pykcm.controllers.cronjob")

CONTROLLER_NAME: Final = "cronjob"
CRONJOB_KIND: Final = "CronJob"

_NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"


def _key(obj: Mapping[str, Any]) -> str:
    return f"{meta_of(obj).get('namespace')}/{meta_of(obj).get('name')}"


def _has_status_cause(exc: BaseException, cause_type: str) -> bool:
    return has_status_cause(exc, cause_type)


def _rfc1123z(t: datetime) -> str:
    """Go's time.RFC1123Z of a UTC time."""
    return t.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def _job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    """The ObjectReference to a Job that status.active holds."""
    meta = meta_of(job)
    ref = {"kind": "Job", "namespace": meta.get("namespace"), "name": meta.get("name"),
           "uid": meta.get("uid"), "apiVersion": "batch/v1",
           "resourceVersion": meta.get("resourceVersion")}
    return {k: v for k, v in ref.items() if v}


class StaleCacheError(RuntimeError):
    """The cache has not yet seen this controller's last write of the CronJob."""

    def __init__(self, read_rv: str, wrote_rv: str) -> None:
        super().__init__(f"read version: {read_rv} is not as new as written version: "
                         f"{wrote_rv} for group resource cronjobs.batch")


def _rv_older(read: str, wrote: str) -> bool:
    """Whether resourceVersion ``read`` is older than ``wrote`` (decimal integers, as
    apimachinery's CompareResourceVersion; anything else: not comparable, not older)."""
    if not (read.isdigit() and wrote.isdigit()):
        return False
    return int(read) < int(wrote)


class CronJobController(ControllerHost):
    """Creates a CronJob's Jobs on schedule and keeps its history (upstream ControllerV2).

    Build it before the informer factory starts (handlers are added to both
    informers here). ``clock``: its time (schedules and TTLs
    read ``now()``, epoch seconds; requeues wait on it).
    """

    def __init__(self, *, cronjob_informer: GenericInformer, job_informer: GenericInformer, client: Client,
                 recorder: EventRecorder, clock: Clock | None = None) -> None:
        self.name = CONTROLLER_NAME
        self.client = client
        self.recorder = recorder
        self.clock: Clock = clock_of(clock)
        self.controller = Controller(CONTROLLER_NAME, self.sync, clock=self.clock)
        self.queue = self.controller.queue
        self.job_lister = job_informer.lister
        self.cronjob_lister = cronjob_informer.lister
        reg = job_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_job, update_func=self.update_job, delete_func=self.delete_job))
        self.controller.add_synced(reg.has_synced)
        # key -> (uid, resourceVersion) of our last status write (_ensure_cache_fresh)
        self._written: dict[str, tuple[str, str]] = {}
        reg = cronjob_informer.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.controller.enqueue, update_func=self.update_cronjob,
            delete_func=self.delete_cronjob))
        self.controller.add_synced(reg.has_synced)

    def enqueue_key(self, key: str) -> None:
        """Sync the CronJob ``namespace/name`` now (a test that moved its clock; a resync)."""
        self.queue.add(key)

    def now(self) -> datetime:
        """The clock's time in the local zone (schedules without a time zone use it)."""
        return datetime.fromtimestamp(self.clock.now(), tz=local_zone())

    # -- handlers --------------------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str,
                               ref: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The cached CronJob ``ref`` names, if it is one and its UID matches."""
        if ref.get("kind") != CRONJOB_KIND:
            return None
        try:
            cj: Mapping[str, Any] = self.cronjob_lister.by_namespace(namespace).get(
                str(ref.get("name")))
        except ApiError:
            return None
        if meta_of(cj).get("uid") != ref.get("uid"):
            return None
        return cj

    def _enqueue_owner(self, job: Mapping[str, Any], ref: Mapping[str, Any] | None) -> None:
        if ref is None:
            return
        cj = self.resolve_controller_ref(str(meta_of(job).get("namespace") or ""), ref)
        if cj is not None:
            self.controller.enqueue(cj)

    def add_job(self, job: Any) -> None:
        if meta_of(job).get("deletionTimestamp"):
            # Seen after a restart already being deleted: no creation.
            self.delete_job(job)
            return
        self._enqueue_owner(job, get_controller_of(job))

    def update_job(self, old: Any, cur: Any) -> None:
        if meta_of(cur).get("resourceVersion") == meta_of(old).get("resourceVersion"):
            return  # a resync
        cur_ref = get_controller_of(cur)
        old_ref = get_controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            self._enqueue_owner(old, old_ref)
        self._enqueue_owner(cur, cur_ref)

    def delete_job(self, obj: Any) -> None:
        job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(job, Mapping):
            log.error("tombstone contained object that is not a Job %r", obj)
            return
        self._enqueue_owner(job, get_controller_of(job))

    def delete_cronjob(self, obj: Any) -> None:
        cj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(cj, Mapping):
            self._written.pop(_key(cj), None)
        self.controller.enqueue(obj)

    def update_cronjob(self, old: Any, cur: Any) -> None:
        """A schedule change requeues at the new next time; any other change syncs now."""
        ospec, nspec = old.get("spec") or {}, cur.get("spec") or {}
        if (ospec.get("schedule") != nspec.get("schedule")
                or ospec.get("timeZone") != nspec.get("timeZone")):
            try:
                sched = parse_standard(format_schedule(cur, None))
            except CronParseError as exc:
                log.info("Unparseable schedule for cronjob %s: %s", _key(cur), exc)
                self.recorder.event(cur, EVENT_TYPE_WARNING, "UnParseableCronJobSchedule",
                                    f"unparseable schedule for cronjob: {nspec.get('schedule')}")
                return
            delay = next_schedule_time_duration(cur, self.now(), sched)
            if delay is not None:
                self.controller.enqueue_after(cur, delay)
            return
        self.controller.enqueue(cur)

    # -- sync ------------------------------------------------------------------------------

    def get_jobs_to_be_reconciled(self, cj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The cached Jobs whose controller reference names this CronJob.

        All Jobs of the namespace are looked at: labels may no longer match
        the template.
        """
        name = meta_of(cj).get("name")
        out: list[Mapping[str, Any]] = []
        for job in self.job_lister.by_namespace(str(meta_of(cj).get("namespace") or "")).list():
            ref = get_controller_of(job)
            if ref is not None and ref.get("name") == name:
                out.append(job)
        return out

    async def sync(self, key: str) -> Result | None:
        """Reconcile the CronJob ``key``; requeue at its next schedule time."""
        ns, name = split_meta_namespace_key(key)
        try:
            cj: Mapping[str, Any] = self.cronjob_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if is_not_found(exc):
                return None  # deleted
            raise
        self._ensure_cache_fresh(key, cj)
        jobs = self.get_jobs_to_be_reconciled(cj)
        # One copy collects every status change: at most one status write per sync.
        cj_copy: dict[str, Any] = dict(copy.deepcopy(cj))
        update_after_cleanup = await self.cleanup_finished_jobs(cj_copy, jobs)
        cj_copy, requeue_after, update_after_sync, sync_err = await self.sync_cronjob(
            cj_copy, jobs)
        if sync_err is not None:
            log.info("Error reconciling cronjob %s: %s", key, sync_err)
        if update_after_cleanup or update_after_sync:
            got = await self.client.update_status("cronjobs", cj_copy, ns)
            self._written[key] = (str(meta_of(got).get("uid") or ""),
                                  str(meta_of(got).get("resourceVersion") or ""))
        if requeue_after is not None:
            return Result(requeue_after=requeue_after)
        if sync_err is not None:
            raise sync_err
        # Suspended, or an invalid schedule: nothing until the CronJob changes.
        return None

    def _ensure_cache_fresh(self, key: str, cj: Mapping[str, Any]) -> None:
        """Raise StaleCacheError while the cached CronJob is older than our last write of it
        (module doc); forget the write once the cache has it, or the CronJob was replaced."""
        written = self._written.get(key)
        if written is None:
            return
        uid, wrote = written
        read = str(meta_of(cj).get("resourceVersion") or "")
        if uid == str(meta_of(cj).get("uid") or "") and _rv_older(read, wrote):
            raise StaleCacheError(read, wrote)
        del self._written[key]

    async def sync_cronjob(self, cj: dict[str, Any], jobs: Sequence[Mapping[str, Any]]
                           ) -> tuple[dict[str, Any], float | None, bool, BaseException | None]:
        """Reconcile the status with the Jobs, then start the due Job, if any (syncCronJob).

        Returns ``(cronjob, requeue_after, status_changed, error)``; the
        CronJob returned is the one whose status is to be written (a fresh
        copy from the API server when the cache was behind).
        """
        now = self.now()
        update_status = False
        ns = str(meta_of(cj).get("namespace") or "")
        children: set[str] = set()
        for j in jobs:
            uid = str(meta_of(j).get("uid") or "")
            children.add(uid)
            found = in_active_list(cj, uid)
            if not found and not is_job_finished(j):
                try:
                    fresh = await self.client.get("cronjobs", str(meta_of(cj).get("name")), ns)
                except ApiError as exc:
                    return cj, None, update_status, exc
                if in_active_list(fresh, uid):
                    cj = fresh
                    continue
                # Created but not recorded (a crash between the two writes, a
                # stale cache), or made by someone else.
                self.recorder.event(cj, EVENT_TYPE_WARNING, "UnexpectedJob",
                                    f"Saw a job that the controller did not create or forgot: "
                                    f"{meta_of(j).get('name')}")
            elif is_job_finished(j):
                if found:
                    delete_from_active_list(cj, uid)
                    self.recorder.event(cj, EVENT_TYPE_NORMAL, "SawCompletedJob",
                                        f"Saw completed job: {meta_of(j).get('name')}, "
                                        f"condition: {finished_condition(j)}")
                    update_status = True
                if is_job_succeeded(j):
                    # A Job need not be active to count: its completion time does.
                    status = cj.setdefault("status", {})
                    completion = (j.get("status") or {}).get("completionTime")
                    if status.get("lastSuccessfulTime") is None:
                        status["lastSuccessfulTime"] = completion
                        update_status = True
                    ct = parse_time(completion)
                    last = parse_time(status.get("lastSuccessfulTime"))
                    if ct is not None and last is not None and ct > last:
                        status["lastSuccessfulTime"] = completion
                        update_status = True

        # References to Jobs that no longer exist would keep the CronJob
        # "active" forever; the API server decides (the cache may lag).
        for ref in list((cj.get("status") or {}).get("active") or ()):
            if ref.get("uid") in children:
                continue
            try:
                await self.client.get("jobs", str(ref.get("name")),
                                      str(ref.get("namespace") or ns))
            except ApiError as exc:
                if not is_not_found(exc):
                    return cj, None, update_status, exc
                self.recorder.event(cj, EVENT_TYPE_NORMAL, "MissingJob",
                                    f"Active job went missing: {ref.get('name')}")
                delete_from_active_list(cj, str(ref.get("uid")))
                update_status = True

        if meta_of(cj).get("deletionTimestamp"):
            return cj, None, update_status, None  # being deleted: status only

        spec = cj.get("spec") or {}
        tz = spec.get("timeZone")
        if tz is not None:
            try:
                load_location(str(tz))
            except CronParseError as exc:
                self.recorder.event(cj, EVENT_TYPE_WARNING, "UnknownTimeZone",
                                    f'invalid timeZone: "{tz}": {exc}')
                return cj, None, update_status, None

        if spec.get("suspend") is True:
            log.debug("Not starting job because the cron is suspended: %s", _key(cj))
            return cj, None, update_status, None

        schedule_str = str(spec.get("schedule") or "")
        try:
            sched = parse_standard(format_schedule(cj, self.recorder))
        except CronParseError as exc:
            # A user error: nothing more until the spec changes.
            self.recorder.event(cj, EVENT_TYPE_WARNING, "UnparseableSchedule",
                                f'unparseable schedule: "{schedule_str}" : {exc}')
            return cj, None, update_status, None

        scheduled, err = next_schedule_time(cj, now, sched, self.recorder)
        if err is not None:
            self.recorder.event(cj, EVENT_TYPE_WARNING, "InvalidSchedule",
                                f"invalid schedule: {schedule_str} : {err}")
            return cj, None, update_status, None
        if scheduled is None:
            # Nothing due (e.g. the queue fired after a restart): wait for the next.
            return cj, next_schedule_time_duration(cj, now, sched), update_status, None

        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled.timestamp() + int(deadline) < now.timestamp():
            self.recorder.event(cj, EVENT_TYPE_WARNING, "MissSchedule",
                                f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}")
            return cj, next_schedule_time_duration(cj, now, sched), update_status, None

        last_schedule = parse_time((cj.get("status") or {}).get("lastScheduleTime"))
        if (in_active_list_by_name(cj, get_job_name(cj, scheduled), ns)
                or last_schedule == int(scheduled.timestamp())):
            # Already started for this time.
            return cj, next_schedule_time_duration(cj, now, sched), update_status, None

        active = (cj.get("status") or {}).get("active") or []
        policy = spec.get("concurrencyPolicy")
        if policy == "Forbid" and active:
            # The active list may lag behind a Job that just finished: a late
            # start is possible, a concurrent one only if schedules are close.
            self.recorder.event(cj, EVENT_TYPE_NORMAL, "JobAlreadyActive",
                                "Not starting job because prior execution is running and "
                                "concurrency policy is Forbid")
            return cj, next_schedule_time_duration(cj, now, sched), update_status, None
        if policy == "Replace":
            for ref in list(active):
                try:
                    job = await self.client.get("jobs", str(ref.get("name")),
                                                str(ref.get("namespace") or ns))
                except ApiError as exc:
                    self.recorder.event(cj, EVENT_TYPE_WARNING, "FailedGet", f"Get job: {exc}")
                    return cj, None, update_status, exc
                if not await self._delete_job(cj, job):
                    return cj, None, update_status, RuntimeError(
                        f"could not replace job {ns}/{meta_of(job).get('name')}")
                update_status = True

        try:
            job_req = get_job_from_template(cj, scheduled)
        except CronParseError as exc:
            log.error("Unable to make Job from template for %s: %s", _key(cj), exc)
            return cj, None, update_status, exc
        already_exists = False
        try:
            job_resp = await self.client.create("jobs", job_req, ns)
        except ApiError as exc:
            if _has_status_cause(exc, _NAMESPACE_TERMINATING_CAUSE):
                return cj, None, update_status, exc
            if not is_already_exists(exc):
                self.recorder.event(cj, EVENT_TYPE_WARNING, "FailedCreate",
                                    f"Error creating job: {exc}")
                return cj, None, update_status, exc
            # Created before (by us, status not written; or by someone else).
            already_exists = True
            try:
                job_resp = await self.client.get("jobs", job_req["metadata"]["name"], ns)
            except ApiError as get_exc:
                return cj, None, update_status, get_exc
            if not is_controlled_by(job_resp, cj):
                return cj, None, update_status, None
            if in_active_list(cj, str(meta_of(job_resp).get("uid"))):
                return cj, None, update_status, None
        if already_exists:
            log.info("Job already exists: %s/%s", ns, meta_of(job_resp).get("name"))
        else:
            self.recorder.event(cj, EVENT_TYPE_NORMAL, "SuccessfulCreate",
                                f"Created job {meta_of(job_resp).get('name')}")
        # The deterministic Job name is the lock that keeps a restart between
        # the create and this status update from starting the time twice.
        status = cj.setdefault("status", {})
        status["active"] = [*(status.get("active") or ()), _job_ref(job_resp)]
        status["lastScheduleTime"] = format_time(scheduled.timestamp())
        update_status = True
        return cj, next_schedule_time_duration(cj, now, sched), update_status, None

    async def _delete_job(self, cj: dict[str, Any], job: Mapping[str, Any]) -> bool:
        """Delete a Job (background propagation) and drop it from the active list."""
        name = str(meta_of(job).get("name"))
        try:
            await self.client.delete("jobs", name, str(meta_of(job).get("namespace")),
                                     propagation_policy="Background")
        except ApiError as exc:
            self.recorder.event(cj, EVENT_TYPE_WARNING, "FailedDelete", f"Deleted job: {exc}")
            log.error("Error deleting job %s from cronjob %s: %s", name, _key(cj), exc)
            return False
        delete_from_active_list(cj, str(meta_of(job).get("uid")))
        self.recorder.event(cj, EVENT_TYPE_NORMAL, "SuccessfulDelete", f"Deleted job {name}")
        return True

    async def cleanup_finished_jobs(self, cj: dict[str, Any],
                                    jobs: Sequence[Mapping[str, Any]]) -> bool:
        """Delete the oldest finished Jobs beyond the history limits; whether status changed."""
        spec = cj.get("spec") or {}
        ok_limit = spec.get("successfulJobsHistoryLimit")
        failed_limit = spec.get("failedJobsHistoryLimit")
        if ok_limit is None and failed_limit is None:
            return False
        succeeded = [j for j in jobs if finished_condition(j) == COMPLETE]
        failed = [j for j in jobs if finished_condition(j) == FAILED]
        update = False
        if ok_limit is not None and await self._remove_oldest_jobs(cj, succeeded, int(ok_limit)):
            update = True
        if failed_limit is not None and await self._remove_oldest_jobs(cj, failed,
                                                                       int(failed_limit)):
            update = True
        return update

    async def _remove_oldest_jobs(self, cj: dict[str, Any], jobs: Sequence[Mapping[str, Any]],
                                  max_jobs: int) -> bool:
        to_delete = len(jobs) - max_jobs
        if to_delete <= 0:
            return False
        log.debug("Cleaning up %d/%d jobs from %s", to_delete, len(jobs), _key(cj))
        update = False
        for job in sorted(jobs, key=by_job_start_time)[:to_delete]:
            if await self._delete_job(cj, job):
                update = True
        return update
