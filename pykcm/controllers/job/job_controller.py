"""The Job controller: runs pods until a Job's completions succeed (upstream
``pkg/controller/job/job_controller.go``, v1.36 with its default feature gates).

Role
----
For every Job it creates pods from ``spec.template`` (at most
``parallelism`` at a time, until ``completions`` succeeded; one pod per index
for Indexed Jobs), replaces failed pods after an exponential backoff, counts
finished pods through the ``batch.kubernetes.io/job-tracking`` finalizer, and
finishes the Job: ``SuccessCriteriaMet`` then ``Complete``, or
``FailureTarget`` then ``Failed`` (reasons ``BackoffLimitExceeded``,
``DeadlineExceeded``, ``PodFailurePolicy``, ``MaxFailedIndexesExceeded``,
``FailedIndexes``) once no pod is left terminating.

Data flow
---------
::

    Job informer ── add / spec change ─────────► enqueue now
                 └─ status-only update ────────► enqueue after the batch period (1 s)
    Pod informer ── add/update/delete ─────────► expectations observed, owner Job
                                                  enqueued after the batch period
                                                  (pod events of one Job coalesce)
                 └─ orphan with the finalizer ─► orphan queue ─► finalizer removed
    queue "job" ─► sync_job(key):
        1. cached Job (copy); finished or managed by someone else → done
        2. claim pods (adopt / release, PodControllerRefManager + finalizer)
        3. count: active, ready, terminating, newly succeeded / failed pods
        4. decide a terminal condition (pod failure policy, backoff limit,
           deadline, failed indexes, success policy) → delete active pods
           otherwise manage_job: delete extra pods, or create missing ones in
           slow-start batches once the backoff allows (expectations first)
        5. track: UIDs of finished pods → status.uncountedTerminatedPods (PUT
           status) → finalizers removed (pod patches) → counters (PUT status)
           → Complete / Failed with events once nothing is left uncounted or
           terminating

Writes go through a :class:`~pykcm.controller.pod_control.PodControl`
(SuccessfulCreate / SuccessfulDelete events on the Job) and ``PUT
jobs/<name>/status``; events: ``Completed``, the failure reason,
``Suspended`` / ``Resumed``, ``TooManySucceededPods``.

Feature gates are those of v1.36, all on and locked: JobPodReplacementPolicy,
JobBackoffLimitPerIndex, JobSuccessPolicy, JobManagedBy (so terminal
conditions are always delayed and terminating pods always counted),
PodIndexLabel, MutableSchedulingDirectivesForSuspendedJobs (suspending a
Job clears ``status.startTime``). A Job whose finished status was written is
not synced again until the informer shows it finished
(``finished_job_expectations``). Status writes leave out the fields Go's
encoder omits when zero (``active``, ``succeeded``, ``failed``,
``completedIndexes``, ``conditions``). The consistency store (KEP-5647,
StaleControllerConsistencyJob, on in v1.36; :mod:`pykcm.controller.consistency`)
remembers the resourceVersions of the Job's status writes and of the pods it
created or patched, and a sync first waits (an error, retried by the rate
limiter) until the Job and pod caches have reached them. The Job metrics are
not exported.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pykcm.api.accessors import meta_of, uid_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.labels import (
    LabelSelector,
    SelectorParseError,
    parse_label_selector,
    selector_from_label_selector,
)
from pykcm.api.owner_refs import get_controller_of, new_controller_ref
from pykcm.api.pod_util import is_pod_ready, parse_time
from pykcm.api.timestamps import format_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import (
    deleted_object,
    deletion_handling_meta_namespace_key,
    split_meta_namespace_key,
)
from pykcm.client import Client
from pykcm.client.errors import ApiError, has_status_cause, is_not_found
from pykcm.controller.active_pods import (
    active_pods_sort_key,
    add_pod_controller_indexer,
    add_pod_orphan_labels_indexer,
    filter_active_pods,
    filter_pods_by_owner_and_selector,
    filter_terminating_pods,
)
from pykcm.controller.consistency import ConsistencyStore
from pykcm.controller.controller import Controller
from pykcm.controller.controller_ref_manager import (
    PodControllerRefManager,
    recheck_live_controller,
)
from pykcm.controller.event_recorder import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from pykcm.controller.expectations import ControllerExpectations
from pykcm.controller.owner_resolver import OwnerResolver
from pykcm.controller.pod_control import PodControl, RealPodControl
from pykcm.controller.slow_start import SLOW_START_INITIAL_BATCH_SIZE
from pykcm.controllers.job.backoff import (
    DEFAULT_JOB_POD_FAILURE_BACKOFF,
    MAX_JOB_POD_FAILURE_BACKOFF,
    BackoffRecord,
    BackoffStore,
)
from pykcm.controllers.job.indexed_job_utils import (
    UNKNOWN_COMPLETION_INDEX,
    OrderedIntervals,
    add_completion_index_annotation,
    add_completion_index_env_variables,
    add_completion_index_label,
    add_index_failure_count_annotation,
    append_duplicated_index_pods_for_removal,
    calculate_failed_indexes,
    calculate_succeeded_indexes,
    first_pending_indexes,
    get_pods_with_delayed_deletion_per_index,
    get_remaining_time_per_index,
    has_backoff_limit_per_index,
    is_indexed_job,
    pod_completion_index,
    pod_generate_name_with_index,
    sort_by_completion_index,
)
from pykcm.controllers.job.pod_failure_policy import match_pod_failure_policy
from pykcm.controllers.job.success_policy import (
    has_success_criteria_met_condition,
    is_success_criteria_met_condition,
    match_success_policy,
)
from pykcm.controllers.job.tracking_utils import (
    JOB_TRACKING_FINALIZER,
    UIDTrackingExpectations,
    UncountedTerminatedPods,
    clean_uncounted_pods_without_finalizers,
    has_job_tracking_finalizer,
    remove_tracking_finalizer_patch,
)
from pykcm.controllers.job.utils import (
    COMPLETE,
    FAILED,
    FAILURE_TARGET,
    SUCCESS_CRITERIA_MET,
    SUSPENDED,
    ensure_job_condition_status,
    find_condition_by_type,
    is_job_finished,
    is_pod_failed,
    job_suspended,
    managed_by_external_controller,
    new_condition,
    only_replace_failed_pods,
)
from pykcm.informers.generic import GenericInformer
from pykcm.workqueue import ItemExponentialFailureRateLimiter

__all__ = [
    "CONTROLLER_NAME",
    "DEFAULT_JOB_API_BACKOFF",
    "MAX_JOB_API_BACKOFF",
    "MAX_POD_CREATE_DELETE_PER_SYNC",
    "MAX_UNCOUNTED_PODS",
    "SYNC_JOB_BATCH_PERIOD",
    "JobController",
]

log = logging.getLogger("pykcm.controllers.job")

CONTROLLER_NAME: Final = "job"
JOB_API_VERSION: Final = "batch/v1"
JOB_KIND: Final = "Job"
#: The Jobs' group resource as the consistency store names it (GroupResource.String()).
JOB_GROUP_RESOURCE: Final = "jobs.batch"
ORPHAN_SELECTOR_KEY_PREFIX: Final = "selector:"
"""Orphan-queue keys ``selector:<namespace>/<label selector>`` stand for every pod of the
namespace matching the selector (a pod's key never contains a colon)."""

#: Delay that coalesces the syncs caused by pod events and status updates of one Job.
SYNC_JOB_BATCH_PERIOD: Final = 1.0
#: Retry backoff of a failing sync (DefaultJobApiBackOff, MaxJobApiBackOff).
DEFAULT_JOB_API_BACKOFF: Final = 1.0
MAX_JOB_API_BACKOFF: Final = 60.0
#: Cap on status.uncountedTerminatedPods (about 20 KB of UIDs) per sync.
MAX_UNCOUNTED_PODS: Final = 500
#: Cap on pods created or deleted by one sync.
MAX_POD_CREATE_DELETE_PER_SYNC: Final = 500

# Condition reasons (batch/v1 JobReason*).
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY: Final = "PodFailurePolicy"
REASON_MAX_FAILED_INDEXES_EXCEEDED: Final = "MaxFailedIndexesExceeded"
REASON_FAILED_INDEXES: Final = "FailedIndexes"
REASON_SUCCESS_POLICY: Final = "SuccessPolicy"
REASON_COMPLETIONS_REACHED: Final = "CompletionsReached"

_NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"

Pod = Mapping[str, Any]


def _has_status_cause(exc: BaseException, cause_type: str) -> bool:
    return has_status_cause(exc, cause_type)


def _job_key(job: Mapping[str, Any]) -> str:
    meta = meta_of(job)
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _int(value: Any, default: int = 0) -> int:
    return default if value is None else int(value)


@dataclass
class _SyncJobCtx:
    """What one sync of one Job computed (upstream syncJobCtx)."""

    job: dict[str, Any]
    pods: list[Pod]
    active_pods: list[Pod]
    ready: int
    terminating: int
    uncounted: UncountedTerminatedPods
    expected_rm_finalizers: set[str]
    finished_condition: dict[str, Any] | None = None
    succeeded: int = 0
    failed: int = 0
    prev_succeeded_indexes: OrderedIntervals = field(default_factory=OrderedIntervals)
    succeeded_indexes: OrderedIntervals = field(default_factory=OrderedIntervals)
    failed_indexes: OrderedIntervals | None = None
    new_backoff_record: BackoffRecord = field(default_factory=lambda: BackoffRecord(""))
    pods_with_delayed_deletion_per_index: dict[int, Pod] = field(default_factory=dict)


def count_ready_pods(pods: Iterable[Pod]) -> int:
    """How many pods are Ready."""
    return sum(1 for p in pods if is_pod_ready(p))


def past_backoff_limit_on_failure(job: Mapping[str, Any], pods: Iterable[Pod]) -> bool:
    """With restartPolicy OnFailure, whether container restarts reached backoffLimit.

    Restarts are summed over the running and pending pods (their containers
    restart in place instead of failing the pod).
    """
    spec = job.get("spec") or {}
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for p in pods:
        status = p.get("status") or {}
        if status.get("phase") in ("Running", "Pending"):
            for key in ("initContainerStatuses", "containerStatuses"):
                for cs in status.get(key) or ():
                    restarts += int(cs.get("restartCount") or 0)
    limit = _int(spec.get("backoffLimit"), 6)
    if limit == 0:
        return restarts > 0
    return restarts >= limit


def get_fail_job_message(job: Mapping[str, Any], pods: Iterable[Pod]) -> str | None:
    """The message of the first failed pod matching a FailJob rule, if any."""
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    if policy is None:
        return None
    for p in pods:
        if is_pod_failed(p, job):
            msg, _, _ = match_pod_failure_policy(policy, p)
            if msg is not None:
                return msg
    return None


def _new_failed_condition_for_failure_target(cond: Mapping[str, Any], now: float
                                             ) -> dict[str, Any]:
    return new_condition(FAILED, "True", str(cond.get("reason") or ""),
                         str(cond.get("message") or ""), now)


def _sort_active(pods: list[Pod]) -> list[Pod]:
    return sorted(pods, key=active_pods_sort_key)


def active_pods_for_removal(job: Mapping[str, Any], pods: Sequence[Pod],
                            rm_at_least: int) -> list[Pod]:
    """The active pods to delete (activePodsForRemoval).

    For Indexed Jobs first the pods with no index, an index out of range or a
    duplicated index; then, up to ``rm_at_least``, the pods in the earliest
    stage (unscheduled, pending, not ready...).
    """
    rm: list[Pod] = []
    left: list[Pod]
    if is_indexed_job(job):
        completions = _int((job.get("spec") or {}).get("completions"))
        rm, left = append_duplicated_index_pods_for_removal([], [], pods, completions,
                                                             _sort_active)
    else:
        left = list(pods)
    if len(rm) < rm_at_least:
        left = _sort_active(left)
        rm.extend(left[:rm_at_least - len(rm)])
    return rm


class JobController:
    """Keeps each Job's pods running until it completes or fails (upstream job Controller).

    Build it before the informer factory starts: handlers and the pod
    controller index are added to the informers here. ``pod_control``
    defaults to a :class:`~pykcm.controller.pod_control.RealPodControl`
    recording events with ``recorder``; ``clock`` (``now()`` in epoch
    seconds) stamps conditions and measures deadlines and backoffs.

    Test hooks: ``pod_failure_backoff`` / ``max_pod_failure_backoff``
    replace upstream's 10 s / 10 min pod-failure backoff, and
    ``sync_job_batch_period`` the 1 s batching of pod events, so a test can
    run a failing Job to its backoff limit in seconds.
    """

    def __init__(self, *, job_informer: GenericInformer, pod_informer: GenericInformer, client: Client,
                 recorder: EventRecorder, pod_control: PodControl | None = None,
                 clock: Clock | None = None,
                 sync_job_batch_period: float = SYNC_JOB_BATCH_PERIOD,
                 pod_failure_backoff: float = DEFAULT_JOB_POD_FAILURE_BACKOFF,
                 max_pod_failure_backoff: float = MAX_JOB_POD_FAILURE_BACKOFF) -> None:
        self.name = CONTROLLER_NAME
        self.client = client
        self.recorder = recorder
        self.consistency = ConsistencyStore({
            "pods": pod_informer.informer.last_store_sync_resource_version,
            JOB_GROUP_RESOURCE: job_informer.informer.last_store_sync_resource_version})
        self.pod_control: PodControl = (pod_control if pod_control is not None
                                        else RealPodControl(client, recorder, self._pod_written))
        self.clock: Clock = clock_of(clock)
        self.sync_job_batch_period = sync_job_batch_period
        self.pod_failure_backoff = pod_failure_backoff
        self.max_pod_failure_backoff = max_pod_failure_backoff
        self.expectations = ControllerExpectations(self.clock.monotonic)
        self.finalizer_expectations = UIDTrackingExpectations()
        self.backoff_store = BackoffStore()
        # UIDs of the Jobs whose finished status this controller wrote and whose update the
        # informer has not delivered yet (upstream's finishedJobExpectations): a sync in
        # between would read the unfinished Job from the cache and count its pods again.
        self.finished_job_expectations: set[str] = set()
        self.controller = Controller(
            CONTROLLER_NAME, self.sync_job,
            rate_limiter=ItemExponentialFailureRateLimiter(DEFAULT_JOB_API_BACKOFF,
                                                           MAX_JOB_API_BACKOFF),
            clock=self.clock)
        self.queue = self.controller.queue
        # Orphan pods that still carry the tracking finalizer: their own queue
        # and worker, as upstream, so they never wait behind Job syncs.
        self.orphan_controller = Controller(
            "job_orphan_pod", self.sync_orphan_pod,
            rate_limiter=ItemExponentialFailureRateLimiter(DEFAULT_JOB_API_BACKOFF,
                                                           MAX_JOB_API_BACKOFF),
            clock=self.clock)

        job_inf = job_informer.informer
        self.job_lister = job_informer.lister
        self.owners = OwnerResolver(JOB_KIND, job_informer)
        reg = job_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_job, update_func=self.update_job, delete_func=self.delete_job))
        self.controller.add_synced(reg.has_synced)
        self.orphan_controller.add_synced(reg.has_synced)

        pod_inf = pod_informer.informer
        add_pod_controller_indexer(pod_inf)
        add_pod_orphan_labels_indexer(pod_inf)
        self.pod_indexer = pod_inf.get_indexer()
        self.pod_lister = pod_informer.lister
        reg = pod_inf.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.add_pod, update_func=self.update_pod,
            delete_func=lambda obj: self.delete_pod(obj, True)))
        self.controller.add_synced(reg.has_synced)
        self.orphan_controller.add_synced(reg.has_synced)

    # -- the manager's RunnableController protocol -----------------------------------------

    async def run(self, workers: int) -> None:
        """Wait for the caches, then sync Jobs with ``workers`` workers (and one orphan-pod
        worker) until :meth:`shutdown`."""
        tasks = [asyncio.create_task(self.controller.run(workers), name="job-controller"),
                 asyncio.create_task(self.orphan_controller.run(1), name="job-orphan-pods")]
        try:
            await asyncio.gather(*tasks)
        finally:
            # One loop ending (shutdown, failure) ends the other.
            self.shutdown()
            for t in tasks:
                if not t.done():
                    t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def health_check(self) -> str | None:
        """None while healthy; why not otherwise."""
        return self.controller.health_check() or self.orphan_controller.health_check()

    def shutdown(self) -> None:
        """Stop taking keys; :meth:`run` returns once the workers are done."""
        self.controller.shutdown()
        self.orphan_controller.shutdown()

    # -- lookups -------------------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str,
                               ref: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The cached Job ``ref`` names, if it is a Job and its UID matches."""
        return self.owners.resolve(namespace, ref)

    def get_pod_jobs(self, pod: Pod) -> list[Mapping[str, Any]]:
        """The cached Jobs whose selector matches the pod's labels (GetPodJobs)."""
        out = self.owners.selecting(pod)
        if len(out) > 1:
            log.error("user error! more than one job is selecting pods with labels: %s",
                      meta_of(pod).get("labels"))
        return out

    # -- enqueueing ------------------------------------------------------------------------

    def enqueue_sync_job_immediately(self, obj: Any) -> None:
        """Sync now (Job creation, deletion, spec change)."""
        self._enqueue(obj, 0.0)

    def enqueue_sync_job_batched(self, obj: Any) -> None:
        """Sync after the batch period (pod events, status updates)."""
        self._enqueue(obj, self.sync_job_batch_period)

    def enqueue_sync_job_with_delay(self, obj: Any, delay: float) -> None:
        """Sync after ``delay``, not sooner than the batch period (pod-failure backoff)."""
        self._enqueue(obj, max(delay, self.sync_job_batch_period))

    def _enqueue(self, obj: Any, delay: float) -> None:
        key = deletion_handling_meta_namespace_key(obj)
        # The delaying queue keeps the earliest ready time per key: events
        # arriving during the batch period join the pending sync.
        self.queue.add_after(key, delay)

    def enqueue_orphan_pod(self, pod: Pod) -> None:
        """Queue an orphan pod for finalizer removal."""
        self.orphan_controller.enqueue(pod)

    # -- Job event handlers ----------------------------------------------------------------

    def add_job(self, job: Any) -> None:
        self.enqueue_sync_job_immediately(job)

    def update_job(self, old: Any, cur: Any) -> None:
        if is_job_finished(cur):
            # A finished Job is not synced again (upstream v1.36): its pods lose the
            # finalizer anyway, a backup for the removal the last sync should have done,
            # through the orphan queue, where repeated updates collapse into one scan.
            self.enqueue_label_selector(cur)
            return
        if meta_of(cur).get("generation") == meta_of(old).get("generation"):
            # Status-only changes (often caused by pod events) are batched.
            self.enqueue_sync_job_batched(cur)
        else:
            self.enqueue_sync_job_immediately(cur)
        status = cur.get("status") or {}
        start = parse_time(status.get("startTime"))
        if start is not None:
            cur_ads = (cur.get("spec") or {}).get("activeDeadlineSeconds")
            if cur_ads is None:
                return
            old_ads = (old.get("spec") or {}).get("activeDeadlineSeconds")
            if old_ads is None or old_ads != cur_ads:
                remaining = float(cur_ads) - (self.clock.now() - start)
                log.debug("job's ActiveDeadlineSeconds updated, will resync %s in %.1f s",
                          _job_key(cur), remaining)
                self.queue.add_after(_job_key(cur), remaining)

    def delete_job(self, obj: Any) -> None:
        self.enqueue_sync_job_immediately(obj)
        job = deleted_object(obj)
        if job is None:
            return
        self.consistency.clear(_job_key(job), uid_of(job))
        self.finished_job_expectations.discard(uid_of(job))
        self.enqueue_label_selector(job)

    def enqueue_label_selector(self, job: Mapping[str, Any]) -> None:
        """Queue, on the orphan queue, a scan of the pods of the Job's namespace that match
        its selector (upstream's OrphanPodKeyKindSelector): each one that still carries the
        finalizer and that no unfinished Job controls loses it."""
        try:
            sel = selector_from_label_selector((job.get("spec") or {}).get("selector"))
        except SelectorParseError as exc:
            log.error("job %s has invalid label selector: %s", _job_key(job), exc)
            return
        ns = str(meta_of(job).get("namespace") or "")
        self.orphan_controller.enqueue_key(f"{ORPHAN_SELECTOR_KEY_PREFIX}{ns}/{sel}")

    # -- Pod event handlers ----------------------------------------------------------------

    def add_pod(self, pod: Any) -> None:
        if meta_of(pod).get("deletionTimestamp"):
            # A pod already being deleted (seen after a restart) is no creation.
            self.delete_pod(pod, False)
            return
        ref = get_controller_of(pod)
        if ref is not None:
            job = self.resolve_controller_ref(str(meta_of(pod).get("namespace") or ""), ref)
            if job is None:
                return
            self.expectations.creation_observed(_job_key(job))
            self.enqueue_sync_job_batched(job)
            return
        # An orphan: release its finalizer, and let matching Jobs adopt it.
        if has_job_tracking_finalizer(pod):
            self.enqueue_orphan_pod(pod)
        for job in self.get_pod_jobs(pod):
            self.enqueue_sync_job_batched(job)

    def update_pod(self, old: Any, cur: Any) -> None:
        if meta_of(cur).get("resourceVersion") == meta_of(old).get("resourceVersion"):
            return  # a resync: nothing changed
        if meta_of(cur).get("deletionTimestamp"):
            # Graceful deletion starts: replace the pod now, not when it is gone.
            self.delete_pod(cur, False)
            return
        # Don't look at the old pod's finalizer: updates may collapse, and the
        # latest state is what counts.
        finalizer_removed = not has_job_tracking_finalizer(cur)
        update = self.owners.updated(old, cur)
        for job in (update.previous, update.current):
            if job is None:
                continue
            if finalizer_removed:
                self.finalizer_expectations.finalizer_removal_observed(_job_key(job), uid_of(cur))
            self.enqueue_sync_job_batched(job)
        if get_controller_of(cur) is not None:
            return
        # An orphan: release its finalizer, and let matching Jobs adopt it.
        if has_job_tracking_finalizer(cur):
            self.enqueue_orphan_pod(cur)
        for job in update.candidates:
            self.enqueue_sync_job_batched(job)

    def delete_pod(self, obj: Any, final: bool) -> None:
        """A pod was deleted (``final``) or started its graceful deletion."""
        pod = deleted_object(obj)
        if pod is None:
            return
        ref = get_controller_of(pod)
        has_finalizer = has_job_tracking_finalizer(pod)
        if ref is None:
            # The garbage collector may have removed the reference: clean up.
            if has_finalizer:
                self.enqueue_orphan_pod(pod)
            return
        job = self.resolve_controller_ref(str(meta_of(pod).get("namespace") or ""), ref)
        if job is None or is_job_finished(job):
            # syncJob will not remove this finalizer.
            if has_finalizer:
                self.enqueue_orphan_pod(pod)
            return
        key = _job_key(job)
        self.expectations.deletion_observed(key)
        # The final delete removes the finalizer with the pod; an update
        # setting the deletion timestamp only counts if it is already gone.
        if final or not has_finalizer:
            self.finalizer_expectations.finalizer_removal_observed(key, uid_of(pod))
        self.enqueue_sync_job_batched(job)

    # -- orphan pods -----------------------------------------------------------------------

    async def sync_orphan_pod(self, key: str) -> None:
        """Remove the tracking finalizer from a pod no unfinished Job owns (``ns/name``),
        or from each such pod matching a selector (a key of :meth:`enqueue_label_selector`)."""
        if key.startswith(ORPHAN_SELECTOR_KEY_PREFIX):
            await self._sync_orphan_pods_by_selector(key[len(ORPHAN_SELECTOR_KEY_PREFIX):])
            return
        ns, name = split_meta_namespace_key(key)
        try:
            pod: Pod = self.pod_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if is_not_found(exc):
                return
            raise
        await self._handle_single_orphan_pod(pod)

    async def _sync_orphan_pods_by_selector(self, ns_and_selector: str) -> None:
        ns, _, selector = ns_and_selector.partition("/")
        try:
            sel = parse_label_selector(selector)
        except SelectorParseError as exc:
            log.error("invalid label selector in orphan pod key %r: %s", ns_and_selector, exc)
            return
        matches = sel.matches
        for pod in self.pod_lister.by_namespace(ns).list():
            # The finalizer first: the cheap test that rules out nearly every pod
            if not has_job_tracking_finalizer(pod) or not matches(meta_of(pod).get("labels")):
                continue
            try:
                await self._handle_single_orphan_pod(pod)
            except ApiError as exc:
                # One pod's failure does not stop the others, nor requeue the scan
                # (upstream logs it the same way).
                log.error("syncing orphan pod %s/%s failed: %s", ns,
                          meta_of(pod).get("name"), exc)

    async def _handle_single_orphan_pod(self, pod: Pod) -> None:
        ns = str(meta_of(pod).get("namespace") or "")
        name = str(meta_of(pod).get("name") or "")
        ref = get_controller_of(pod)
        if ref is not None:
            if ref.get("kind") != JOB_KIND or ref.get("apiVersion") != JOB_API_VERSION:
                return  # owned by something else: not our finalizer to remove
            job = self.resolve_controller_ref(ns, ref)
            if job is not None:
                if managed_by_external_controller(job) is not None:
                    return
                if not is_job_finished(job):
                    return  # adopted meanwhile
        patch = remove_tracking_finalizer_patch(pod)
        if patch is not None:
            try:
                await self.pod_control.patch_pod(ns, name, patch)
            except ApiError as exc:
                if not is_not_found(exc):
                    raise

    # -- claiming pods ---------------------------------------------------------------------

    async def get_pods_for_job(self, job: Mapping[str, Any]) -> list[Pod]:
        """The pods this Job manages, after adopting and releasing (getPodsForJob).

        Adopted pods get the tracking finalizer in the same patch; the
        returned copies show it, so this sync counts them already.
        """
        selector: LabelSelector = selector_from_label_selector(
            (job.get("spec") or {}).get("selector"))
        # The Job's own pods and the namespace's orphans it selects: pods controlled by
        # anything else, and orphans it does not select, would be ignored by the claim.
        candidates = filter_pods_by_owner_and_selector(self.pod_indexer, job, JOB_KIND,
                                                       selector)
        uid = uid_of(job)
        cm = PodControllerRefManager(self.pod_control, job, selector, JOB_API_VERSION, JOB_KIND,
                                     recheck_live_controller(self.client, "jobs", job, JOB_KIND),
                                     finalizers=(JOB_TRACKING_FINALIZER,))
        pods = await cm.claim_pods(candidates)
        out: list[Pod] = []
        for p in pods:
            adopted = not any(r.get("uid") == uid for r in meta_of(p).get("ownerReferences") or ())
            if adopted and not has_job_tracking_finalizer(p):
                pmeta = dict(meta_of(p))
                pmeta["finalizers"] = [*(pmeta.get("finalizers") or ()), JOB_TRACKING_FINALIZER]
                p = {**p, "metadata": pmeta}
            out.append(p)
        return out

    # -- the sync --------------------------------------------------------------------------

    async def sync_job(self, key: str) -> None:
        """Sync the Job ``key`` once its expectations are met (syncJob). Raises to retry."""
        ns, name = split_meta_namespace_key(key)
        if not ns or not name:
            raise ValueError(f"invalid job key {key!r}: either namespace or name is missing")
        # Our own writes first reach the caches: acting on older ones would redo them.
        self.consistency.ensure_ready(key)
        try:
            shared: Mapping[str, Any] = self.job_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if is_not_found(exc):
                log.debug("Job has been deleted: %s", key)
                self.consistency.clear(key)
                self.expectations.delete_expectations(key)
                self.finalizer_expectations.delete_expectations(key)
                self.backoff_store.remove_backoff_record(key)
                return
            raise
        # Another controller (spec.managedBy) owns it; checked here too because a
        # key queued for one Job may meet its replacement.
        if managed_by_external_controller(shared) is not None:
            return
        # A deep copy: plain dicts to change, whatever the cache holds (dicts or
        # read-only compact objects).
        job: dict[str, Any] = dict(copy.deepcopy(shared))
        if is_job_finished(job):
            self.backoff_store.remove_backoff_record(key)
            self.consistency.clear(key, uid_of(job))
            self.finished_job_expectations.discard(uid_of(job))
            return
        if uid_of(job) in self.finished_job_expectations:
            log.debug("Skip syncing the job %s as its marked finished but the corresponding "
                      "update event is not yet received", key)
            return
        spec = job.setdefault("spec", {})
        mode = spec.get("completionMode")
        if mode is not None and mode not in ("NonIndexed", "Indexed"):
            self.recorder.event(job, EVENT_TYPE_WARNING, "UnknownCompletionMode",
                                "Skipped Job sync because completion mode is unknown")
            return
        status = job.setdefault("status", {})
        if status.get("uncountedTerminatedPods") is None:
            status["uncountedTerminatedPods"] = {}
        now = self.clock.now()

        # Expectations first: a pod created after this point is seen by a later sync.
        satisfied = self.expectations.satisfied_expectations(key)
        pods = await self.get_pods_for_job(job)
        active_pods = filter_active_pods(pods)
        ctx = _SyncJobCtx(
            job=job, pods=pods, active_pods=active_pods, ready=count_ready_pods(active_pods),
            terminating=len(filter_terminating_pods(pods)),
            uncounted=UncountedTerminatedPods(status["uncountedTerminatedPods"]),
            expected_rm_finalizers=self.finalizer_expectations.get_expected_uids(key))
        active = len(active_pods)
        new_succeeded, new_failed = self._get_new_finished_pods(ctx)
        ctx.succeeded = (_int(status.get("succeeded")) + len(new_succeeded)
                         + len(ctx.uncounted.succeeded))
        ctx.failed = (_int(status.get("failed")) + self._non_ignored_failed_pods_count(
            ctx, new_failed) + len(ctx.uncounted.failed))

        # First start; a Job created suspended starts when resumed.
        if status.get("startTime") is None and not job_suspended(job):
            status["startTime"] = format_time(now)

        ctx.new_backoff_record = self.backoff_store.new_backoff_record(key, new_succeeded,
                                                                      new_failed)
        manage_job_err: BaseException | None = None
        exceeds_backoff_limit = ctx.failed > _int(spec.get("backoffLimit"), 6)
        met = has_success_criteria_met_condition(job)
        ctx.finished_condition = dict(met) if met is not None else None

        # The pod failure policy is only evaluated before success criteria are met.
        if ctx.finished_condition is None:
            ft = find_condition_by_type(status.get("conditions"), FAILURE_TARGET)
            if ft is not None and ft.get("status") == "True":
                ctx.finished_condition = _new_failed_condition_for_failure_target(ft, now)
            else:
                msg = get_fail_job_message(job, pods)
                if msg is not None:
                    # The interim FailureTarget records the message before the
                    # finalizers (keeping the failed pods around) are removed.
                    ctx.finished_condition = new_condition(FAILURE_TARGET, "True",
                                                           REASON_POD_FAILURE_POLICY, msg, now)
        if ctx.finished_condition is None:
            ads = spec.get("activeDeadlineSeconds")
            if exceeds_backoff_limit or past_backoff_limit_on_failure(job, pods):
                ctx.finished_condition = self._new_failure_condition(
                    REASON_BACKOFF_LIMIT_EXCEEDED, "Job has reached the specified backoff limit",
                    now)
            elif self._past_active_deadline(job, now):
                ctx.finished_condition = self._new_failure_condition(
                    REASON_DEADLINE_EXCEEDED, "Job was active longer than specified deadline",
                    now)
            elif ads is not None and not job_suspended(job):
                start = parse_time(status.get("startTime")) or now
                sync_in = float(ads) - (now - start)
                log.debug("Job has activeDeadlineSeconds configuration; will sync %s again "
                          "in %.1f s", key, sync_in)
                self.queue.add_after(key, sync_in)

        if is_indexed_job(job):
            completions = _int(spec.get("completions"))
            ctx.prev_succeeded_indexes, ctx.succeeded_indexes = calculate_succeeded_indexes(
                job, pods)
            ctx.succeeded = ctx.succeeded_indexes.total()
            if has_backoff_limit_per_index(job):
                ctx.failed_indexes = calculate_failed_indexes(job, pods)
                if ctx.finished_condition is None:
                    max_failed = spec.get("maxFailedIndexes")
                    if max_failed is not None and ctx.failed_indexes.total() > int(max_failed):
                        ctx.finished_condition = self._new_failure_condition(
                            REASON_MAX_FAILED_INDEXES_EXCEEDED,
                            "Job has exceeded the specified maximal number of failed indexes",
                            now)
                    elif (ctx.failed_indexes.total() > 0 and ctx.failed_indexes.total()
                          + ctx.succeeded_indexes.total() >= completions):
                        ctx.finished_condition = self._new_failure_condition(
                            REASON_FAILED_INDEXES, "Job has failed indexes", now)
                ctx.pods_with_delayed_deletion_per_index = \
                    get_pods_with_delayed_deletion_per_index(
                        job, pods, ctx.active_pods, ctx.succeeded_indexes, ctx.failed_indexes,
                        ctx.expected_rm_finalizers)
            if ctx.finished_condition is None:
                msg, matched = match_success_policy(spec.get("successPolicy"), completions,
                                                    ctx.succeeded_indexes)
                if matched:
                    ctx.finished_condition = new_condition(
                        SUCCESS_CRITERIA_MET, "True", REASON_SUCCESS_POLICY, msg, now)

        suspend_cond_changed = False
        if ctx.finished_condition is not None:
            # Finishing: terminate what still runs.
            deleted_ready, deleted, err = await self._delete_active_pods(job, ctx.active_pods)
            if deleted != active or not satisfied:
                # Not finished yet: finalizers remain, or pods not in the cache yet.
                ctx.finished_condition = None
            active -= deleted
            ctx.terminating += deleted
            ctx.ready -= deleted_ready
            manage_job_err = err
        else:
            manage_job_called = False
            if satisfied and not meta_of(job).get("deletionTimestamp"):
                active, manage_job_err = await self.manage_job(job, ctx)
                manage_job_called = True
            completions_spec = spec.get("completions")
            if completions_spec is None:
                # Any success completes the Job once the rest have stopped.
                complete = ctx.succeeded > 0 and active == 0
            else:
                complete = ctx.succeeded >= int(completions_spec) and active == 0
            if complete:
                ctx.finished_condition = new_condition(
                    SUCCESS_CRITERIA_MET, "True", REASON_COMPLETIONS_REACHED,
                    "Reached expected number of succeeded pods", now)
            elif manage_job_called:
                # Conditions and events only from a sync that managed pods.
                conditions = status.setdefault("conditions", [])
                if job_suspended(job):
                    if ensure_job_condition_status(conditions, SUSPENDED, "True", "JobSuspended",
                                                   "Job suspended", now):
                        suspend_cond_changed = True
                        self.recorder.event(job, EVENT_TYPE_NORMAL, "Suspended", "Job suspended")
                        # MutableSchedulingDirectivesForSuspendedJobs (on in v1.36): a
                        # suspended Job has not started; resuming sets startTime again.
                        status.pop("startTime", None)
                elif ensure_job_condition_status(conditions, SUSPENDED, "False", "JobResumed",
                                                 "Job resumed", now):
                    suspend_cond_changed = True
                    self.recorder.event(job, EVENT_TYPE_NORMAL, "Resumed", "Job resumed")
                    # activeDeadlineSeconds counts continuous activity: restart it.
                    status["startTime"] = format_time(now)

        needs_status_update = (suspend_cond_changed
                               or active != _int(status.get("active"))
                               or status.get("ready") != ctx.ready
                               or status.get("terminating") != ctx.terminating)
        status["active"] = active
        status["ready"] = ctx.ready
        status["terminating"] = ctx.terminating
        try:
            await self.track_job_status_and_remove_finalizers(ctx, needs_status_update)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise RuntimeError(f"tracking status: {exc}") from exc
        if manage_job_err is not None:
            raise manage_job_err

    def _new_failure_condition(self, reason: str, message: str, now: float) -> dict[str, Any]:
        # Terminal conditions are delayed (JobManagedBy / JobPodReplacementPolicy
        # are GA): FailureTarget first, Failed once no pod is terminating.
        return new_condition(FAILURE_TARGET, "True", reason, message, now)

    def _past_active_deadline(self, job: Mapping[str, Any], now: float) -> bool:
        ads = (job.get("spec") or {}).get("activeDeadlineSeconds")
        start = parse_time((job.get("status") or {}).get("startTime"))
        if ads is None or start is None or job_suspended(job):
            return False
        return now - start >= float(ads)

    def _get_valid_pods_with_filter(self, ctx: _SyncJobCtx, uncounted: set[str],
                                    keep: Callable[[Pod], bool]) -> list[Pod]:
        """Tracked pods not yet counted (finalizer, not uncounted, not being removed) with,
        for Indexed Jobs, a valid index, that ``keep`` accepts."""
        out: list[Pod] = []
        indexed = is_indexed_job(ctx.job)
        completions = _int((ctx.job.get("spec") or {}).get("completions"))
        for p in ctx.pods:
            uid = uid_of(p)
            if (not has_job_tracking_finalizer(p) or uid in uncounted
                    or uid in ctx.expected_rm_finalizers):
                continue
            if indexed:
                ix = pod_completion_index(p)
                if ix == UNKNOWN_COMPLETION_INDEX or ix >= completions:
                    continue
            if keep(p):
                out.append(p)
        return out

    def _get_new_finished_pods(self, ctx: _SyncJobCtx) -> tuple[list[Pod], list[Pod]]:
        succeeded = self._get_valid_pods_with_filter(
            ctx, ctx.uncounted.succeeded,
            lambda p: (p.get("status") or {}).get("phase") == "Succeeded")
        failed = self._get_valid_pods_with_filter(ctx, ctx.uncounted.failed,
                                                  lambda p: is_pod_failed(p, ctx.job))
        return succeeded, failed

    @staticmethod
    def _non_ignored_failed_pods_count(ctx: _SyncJobCtx, failed_pods: Sequence[Pod]) -> int:
        policy = (ctx.job.get("spec") or {}).get("podFailurePolicy")
        if policy is None:
            return len(failed_pods)
        return sum(1 for p in failed_pods if match_pod_failure_policy(policy, p)[1])

    # -- deleting pods ---------------------------------------------------------------------

    async def _delete_active_pods(self, job: Mapping[str, Any], pods: Sequence[Pod]
                                  ) -> tuple[int, int, BaseException | None]:
        """Delete the pods, keeping their finalizers (counted later) (deleteActivePods).

        Returns (ready pods deleted, pods deleted, first error); a pod already
        gone counts as deleted.
        """
        ns = str(meta_of(job).get("namespace"))
        errors: list[BaseException] = []

        async def one(pod: Pod) -> tuple[bool, bool]:
            ok = True
            try:
                await self.pod_control.delete_pod(ns, str(meta_of(pod).get("name")), job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure: the pod stays, counted as not deleted
                if not is_not_found(exc):
                    ok = False
                    errors.append(exc)
                    log.error("deleting pod %s/%s: %s", ns, meta_of(pod).get("name"), exc)
            return ok, is_pod_ready(pod)

        results = await asyncio.gather(*(one(p) for p in pods))
        deleted = sum(1 for ok, _ in results if ok)
        deleted_ready = sum(1 for _, ready in results if ready)
        return deleted_ready, deleted, errors[0] if errors else None

    async def _delete_job_pods(self, job: Mapping[str, Any], key: str, pods: Sequence[Pod]
                               ) -> tuple[int, int, BaseException | None]:
        """Remove the finalizer, then delete each pod (deleteJobPods): these pods are not
        counted as failures. Returns (ready deleted, deleted, first error)."""
        ns = str(meta_of(job).get("namespace"))
        errors: list[BaseException] = []

        def fail_delete(pod: Pod, exc: BaseException) -> bool:
            # The informer will never show this deletion.
            self.expectations.deletion_observed(key)
            if is_not_found(exc):
                return True
            log.info("Failed to delete Pod %s/%s of job %s: %s", ns, meta_of(pod).get("name"),
                     key, exc)
            errors.append(exc)
            return False

        async def one(pod: Pod) -> tuple[bool, bool]:
            name = str(meta_of(pod).get("name"))
            patch = remove_tracking_finalizer_patch(pod)
            if patch is not None:
                try:
                    await self.pod_control.patch_pod(ns, name, patch)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any failure: the deletion is reported failed
                    wrapped = _wrap(exc, "removing completion finalizer")
                    return fail_delete(pod, wrapped), False
            ok = True
            try:
                await self.pod_control.delete_pod(ns, name, job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure: the deletion is reported failed
                ok = fail_delete(pod, exc)
            return ok, is_pod_ready(pod)

        results = await asyncio.gather(*(one(p) for p in pods))
        deleted = sum(1 for ok, _ in results if ok)
        deleted_ready = sum(1 for _, ready in results if ready)
        return deleted_ready, deleted, errors[0] if errors else None

    # -- managing pods ---------------------------------------------------------------------

    async def manage_job(self, job: dict[str, Any], ctx: _SyncJobCtx
                         ) -> tuple[int, BaseException | None]:
        """Create or delete pods towards the wanted number of active ones (manageJob).

        Returns the new active count and the first error. Respects the pod
        failure backoff: no pods are created before it has passed (the Job
        is requeued for then).
        """
        active = len(ctx.active_pods)
        spec = job.get("spec") or {}
        parallelism = _int(spec.get("parallelism"), 1)
        key = _job_key(job)
        now = self.clock.now()

        if job_suspended(job):
            log.debug("Deleting all active pods in suspended job %s (active %d)", key, active)
            to_delete = active_pods_for_removal(job, ctx.active_pods, active)
            self.expectations.expect_deletions(key, len(to_delete))
            removed_ready, removed, err = await self._delete_job_pods(job, key, to_delete)
            ctx.terminating += removed
            ctx.ready -= removed_ready
            return active - removed, err

        completions = spec.get("completions")
        if completions is None:
            # Without completions, once one pod succeeded the rest run to the end.
            want = active if ctx.succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - ctx.succeeded, parallelism))

        rm_at_least = max(0, active - want)
        to_delete = active_pods_for_removal(job, ctx.active_pods, rm_at_least)
        to_delete = to_delete[:MAX_POD_CREATE_DELETE_PER_SYNC]
        if to_delete:
            self.expectations.expect_deletions(key, len(to_delete))
            log.debug("Too many pods running for job %s: deleting %d, target %d", key,
                      len(to_delete), want)
            removed_ready, removed, err = await self._delete_job_pods(job, key, to_delete)
            ctx.terminating += removed
            ctx.ready -= removed_ready
            # Deletions and creations never happen in one sync; deletions first.
            return active - removed, err

        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        diff = want - terminating - active
        if diff <= 0:
            return active, None
        remaining = 0.0
        if not has_backoff_limit_per_index(job):
            remaining = ctx.new_backoff_record.get_remaining_time(
                now, self.pod_failure_backoff, self.max_pod_failure_backoff)
        if remaining > 0:
            self.enqueue_sync_job_with_delay(job, remaining)
            # Upstream reports 0 active while it waits out the backoff.
            return 0, None
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)

        indexes_to_add: list[int] = []
        if is_indexed_job(job):
            indexes_to_add = first_pending_indexes(
                job, ctx.active_pods, ctx.pods, ctx.succeeded_indexes, ctx.failed_indexes, diff,
                int(completions or 0))
            if has_backoff_limit_per_index(job):
                indexes_to_add, remaining = self._pod_creation_info_for_independent_indexes(
                    indexes_to_add, ctx.pods_with_delayed_deletion_per_index, now)
                if remaining > 0:
                    self.enqueue_sync_job_with_delay(job, remaining)
                    return 0, None
            diff = len(indexes_to_add)
            if diff == 0:
                return active, None

        self.expectations.expect_creations(key, diff)
        log.debug("Too few pods running for job %s: need %d, creating %d", key, want, diff)
        active += diff
        template: dict[str, Any] = copy.deepcopy(dict(spec.get("template") or {}))
        if is_indexed_job(job):
            add_completion_index_env_variables(template)
        tmeta = template.setdefault("metadata", {})
        finalizers = list(tmeta.get("finalizers") or ())
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        tmeta["finalizers"] = finalizers
        controller_ref = new_controller_ref(job, JOB_API_VERSION, JOB_KIND)
        ns = str(meta_of(job).get("namespace"))
        job_name = str(meta_of(job).get("name"))
        errors: list[BaseException] = []
        failed_creates = 0

        async def create(index: int) -> None:
            nonlocal failed_creates
            tmpl = template
            generate_name = ""
            if index != UNKNOWN_COMPLETION_INDEX:
                tmpl = copy.deepcopy(template)
                add_completion_index_annotation(tmpl, index)
                add_completion_index_label(tmpl, index)
                tmpl.setdefault("spec", {})["hostname"] = f"{job_name}-{index}"
                generate_name = pod_generate_name_with_index(job_name, index)
                if has_backoff_limit_per_index(job):
                    add_index_failure_count_annotation(
                        tmpl, job, ctx.pods_with_delayed_deletion_per_index.get(index))
            try:
                await self.pod_control.create_pods_with_generate_name(
                    ns, tmpl, job, controller_ref, generate_name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure: expectations lowered, error returned
                if _has_status_cause(exc, _NAMESPACE_TERMINATING_CAUSE):
                    # Every later create fails the same way: nothing to report.
                    return
                log.warning("Failed creation for job %s, decrementing expectations: %s",
                            key, exc)
                self.expectations.creation_observed(key)
                failed_creates += 1
                errors.append(exc)

        # Slow start: batches of 1, 2, 4... so a spec the API server rejects
        # costs one request, not hundreds (and one event).
        batch_size = min(diff, SLOW_START_INITIAL_BATCH_SIZE)
        while diff > 0:
            error_count = len(errors)
            batch = [indexes_to_add.pop(0) if indexes_to_add else UNKNOWN_COMPLETION_INDEX
                     for _ in range(batch_size)]
            await asyncio.gather(*(create(ix) for ix in batch))
            skipped = diff - batch_size
            if error_count < len(errors) and skipped > 0:
                log.info("Slow-start failure. Skipping creating %d pods of job %s, "
                         "decrementing expectations", skipped, key)
                active -= skipped
                for _ in range(skipped):
                    self.expectations.creation_observed(key)
                break
            diff -= batch_size
            batch_size = min(2 * batch_size, diff)
        active -= failed_creates
        return active, errors[0] if errors else None

    def _pod_creation_info_for_independent_indexes(
            self, indexes: Sequence[int], delayed: Mapping[int, Pod], now: float,
    ) -> tuple[list[int], float]:
        """The indexes whose backoff has passed, or, when none, the shortest wait."""
        now_indexes: list[int] = []
        min_remaining: float | None = None
        for ix in indexes:
            remaining = get_remaining_time_per_index(now, self.pod_failure_backoff,
                                                     self.max_pod_failure_backoff,
                                                     delayed.get(ix))
            if remaining == 0:
                now_indexes.append(ix)
            elif min_remaining is None or remaining < min_remaining:
                min_remaining = remaining
        if now_indexes:
            return now_indexes, 0.0
        return now_indexes, min_remaining or 0.0

    # -- tracking --------------------------------------------------------------------------

    async def track_job_status_and_remove_finalizers(self, ctx: _SyncJobCtx,
                                                     needs_flush: bool) -> None:
        """Count finished pods through the finalizer protocol; finish the Job if it is done.

        1. new finished pods go to status.uncountedTerminatedPods;
        2. their finalizers are removed;
        3. pods without finalizers move to the counters;
        4. the Complete / Failed condition is added when the counts allow.
        At most MAX_UNCOUNTED_PODS pods per sync (the Job is synced again).
        """
        job = ctx.job
        status = job.setdefault("status", {})
        spec = job.get("spec") or {}
        indexed = is_indexed_job(job)
        completions = _int(spec.get("completions"))
        policy = spec.get("podFailurePolicy")
        now = self.clock.now()
        pods_to_remove_finalizer: list[Pod] = []
        new_succeeded_indexes: list[int] = []
        if indexed:
            # Completed indexes are introduced in order.
            ctx.pods = sort_by_completion_index(ctx.pods)
        uids_with_finalizer = {uid_of(p) for p in ctx.pods if has_job_tracking_finalizer(p)
                               and uid_of(p) not in ctx.expected_rm_finalizers}
        if clean_uncounted_pods_without_finalizers(status, uids_with_finalizer):
            needs_flush = True
        uncounted_status = status["uncountedTerminatedPods"]
        reached_max_uncounted = False
        for pod in ctx.pods:
            uid = uid_of(pod)
            if not has_job_tracking_finalizer(pod) or uid in ctx.expected_rm_finalizers:
                continue  # counted by an earlier sync
            consider_failed = is_pod_failed(pod, job)
            if not self._can_remove_finalizer(ctx, pod, consider_failed):
                continue
            pods_to_remove_finalizer.append(pod)
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded" and uid not in ctx.uncounted.failed:
                if indexed:
                    # The index alone prevents counting a success twice.
                    ix = pod_completion_index(pod)
                    if (ix != UNKNOWN_COMPLETION_INDEX and ix < completions
                            and not ctx.prev_succeeded_indexes.has(ix)):
                        new_succeeded_indexes.append(ix)
                        needs_flush = True
                elif uid not in ctx.uncounted.succeeded:
                    needs_flush = True
                    uncounted_status.setdefault("succeeded", []).append(uid)
            elif consider_failed or (ctx.finished_condition is not None
                                     and not is_success_criteria_met_condition(
                                         ctx.finished_condition)):
                # A finishing (failed) Job counts every unfinished pod as failed.
                ix = pod_completion_index(pod)
                if uid not in ctx.uncounted.failed and (
                        not indexed or (ix != UNKNOWN_COMPLETION_INDEX and ix < completions)):
                    count_failed = True
                    if policy is not None:
                        _, count_failed, _ = match_pod_failure_policy(policy, pod)
                    if count_failed:
                        needs_flush = True
                        uncounted_status.setdefault("failed", []).append(uid)
            if (len(new_succeeded_indexes) + len(uncounted_status.get("succeeded") or ())
                    + len(uncounted_status.get("failed") or ()) >= MAX_UNCOUNTED_PODS):
                # Keep the UID lists small and let other Jobs sync; the status and
                # pod updates bring this Job back.
                reached_max_uncounted = True
                break
        if indexed:
            ctx.succeeded_indexes = ctx.succeeded_indexes.with_ordered_indexes(
                new_succeeded_indexes)
            completed = str(ctx.succeeded_indexes)
            if completed != (status.get("completedIndexes") or ""):
                needs_flush = True
            status["succeeded"] = ctx.succeeded_indexes.total()
            status["completedIndexes"] = completed
            failed_str = str(ctx.failed_indexes) if ctx.failed_indexes is not None else None
            if status.get("failedIndexes") != failed_str:
                if failed_str is None:
                    status.pop("failedIndexes", None)
                else:
                    status["failedIndexes"] = failed_str
                needs_flush = True
        finished = ctx.finished_condition
        if finished is not None and finished.get("type") == FAILURE_TARGET:
            # Record FailureTarget before the finalizers go; Failed comes after.
            status.setdefault("conditions", []).append(finished)
            needs_flush = True
            ctx.finished_condition = _new_failed_condition_for_failure_target(finished, now)
        if is_success_criteria_met_condition(ctx.finished_condition):
            finished = ctx.finished_condition
            assert finished is not None
            if has_success_criteria_met_condition(job) is None:
                status.setdefault("conditions", []).append(finished)
                needs_flush = True
            ctx.finished_condition = new_condition(COMPLETE, "True",
                                                   str(finished.get("reason") or ""),
                                                   str(finished.get("message") or ""), now)
        needs_flush = await self._flush_uncounted_and_remove_finalizers(
            ctx, pods_to_remove_finalizer, uids_with_finalizer, needs_flush)
        job_finished = not reached_max_uncounted and self._enact_job_finished(ctx, now)
        if job_finished:
            needs_flush = True
        if needs_flush:
            try:
                ctx.job = await self._update_job_status(ctx.job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise _wrap(exc, "removing uncounted pods from status") from exc
            if job_finished and ctx.finished_condition is not None:
                self._record_job_finished(ctx.job, ctx.finished_condition)
                self.finished_job_expectations.add(uid_of(ctx.job))

    def _can_remove_finalizer(self, ctx: _SyncJobCtx, pod: Pod, consider_failed: bool) -> bool:
        """Whether the pod's finalizer may go now (canRemoveFinalizer).

        Yes when the Job is being deleted or finishing, the pod succeeded, or
        it failed - unless, with backoffLimitPerIndex, it is the failed pod
        whose index still awaits its replacement.
        """
        if (meta_of(ctx.job).get("deletionTimestamp") or ctx.finished_condition is not None
                or (pod.get("status") or {}).get("phase") == "Succeeded"):
            return True
        if not consider_failed:
            return False
        if has_backoff_limit_per_index(ctx.job):
            ix = pod_completion_index(pod)
            if ix != UNKNOWN_COMPLETION_INDEX:
                p = ctx.pods_with_delayed_deletion_per_index.get(ix)
                if p is not None and uid_of(p) == uid_of(pod):
                    return False
        return True

    async def _flush_uncounted_and_remove_finalizers(
            self, ctx: _SyncJobCtx, pods_to_remove_finalizer: Sequence[Pod],
            uids_with_finalizer: set[str], needs_flush: bool) -> bool:
        """Write the uncounted UIDs (and interim conditions), remove the finalizers, count.

        Returns whether status changes remain to be written.
        """
        if needs_flush:
            try:
                ctx.job = await self._update_job_status(ctx.job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise _wrap(exc, "adding uncounted pods to status") from exc
            # The pods are in the status now: their failures count for the backoff.
            self.backoff_store.update_backoff_record(ctx.new_backoff_record)
            needs_flush = False
        rm_err: BaseException | None = None
        if pods_to_remove_finalizer:
            ok, rm_err = await self._remove_tracking_finalizer_from_pods(
                _job_key(ctx.job), pods_to_remove_finalizer)
            for removed, p in zip(ok, pods_to_remove_finalizer, strict=True):
                if removed:
                    uids_with_finalizer.discard(uid_of(p))
        if clean_uncounted_pods_without_finalizers(ctx.job.setdefault("status", {}),
                                                   uids_with_finalizer):
            needs_flush = True
        if rm_err is not None and needs_flush:
            # Save the partial progress before reporting the error.
            try:
                await self._update_job_status(ctx.job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise _wrap(exc, "removing uncounted pods from status") from exc
        if rm_err is not None:
            raise rm_err
        return needs_flush

    async def _remove_tracking_finalizer_from_pods(self, key: str, pods: Sequence[Pod]
                                                   ) -> tuple[list[bool], BaseException | None]:
        """Patch the finalizer away; per pod whether that worked (a pod gone counts)."""
        self.finalizer_expectations.expect_finalizers_removed(key, [uid_of(p) for p in pods])
        errors: list[BaseException] = []

        async def one(pod: Pod) -> bool:
            patch = remove_tracking_finalizer_patch(pod)
            if patch is None:
                return False
            try:
                await self.pod_control.patch_pod(str(meta_of(pod).get("namespace")),
                                                 str(meta_of(pod).get("name")), patch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure: reported after the other patches
                # No pod update will show the removal: stop expecting it.
                self.finalizer_expectations.finalizer_removal_observed(key, uid_of(pod))
                if not is_not_found(exc):
                    log.error("removing tracking finalizer: %s", exc)
                    errors.append(exc)
                    return False
            return True

        ok = list(await asyncio.gather(*(one(p) for p in pods)))
        return ok, errors[0] if errors else None

    def _enact_job_finished(self, ctx: _SyncJobCtx, now: float) -> bool:
        """Add the Complete / Failed condition if nothing is uncounted or terminating."""
        finished = ctx.finished_condition
        if finished is None:
            return False
        status = ctx.job.setdefault("status", {})
        uncounted = status.get("uncountedTerminatedPods") or {}
        count = len(uncounted.get("succeeded") or ()) + len(uncounted.get("failed") or ())
        if count > 0:
            log.debug("Delaying marking the Job %s as finished: %d uncounted pod(s)",
                      _job_key(ctx.job), count)
            return False
        if ctx.terminating > 0:
            log.debug("Delaying marking the Job %s as finished: %d terminating pod(s)",
                      _job_key(ctx.job), ctx.terminating)
            return False
        ensure_job_condition_status(status.setdefault("conditions", []), str(finished["type"]),
                                    str(finished["status"]), str(finished.get("reason") or ""),
                                    str(finished.get("message") or ""), now)
        if finished["type"] == COMPLETE:
            status["completionTime"] = finished["lastTransitionTime"]
        return True

    def _record_job_finished(self, job: Mapping[str, Any], cond: Mapping[str, Any]) -> None:
        if cond.get("type") == COMPLETE:
            completions = (job.get("spec") or {}).get("completions")
            succeeded = _int((job.get("status") or {}).get("succeeded"))
            if completions is not None and succeeded > int(completions):
                self.recorder.event(job, EVENT_TYPE_WARNING, "TooManySucceededPods",
                                    "Too many succeeded pods running after completion count "
                                    "reached")
            self.recorder.event(job, EVENT_TYPE_NORMAL, "Completed", "Job completed")
        else:
            self.recorder.event(job, EVENT_TYPE_WARNING, str(cond.get("reason") or ""),
                                str(cond.get("message") or ""))

    async def _update_job_status(self, job: Mapping[str, Any]) -> dict[str, Any]:
        meta = meta_of(job)
        body = {**job, "status": go_job_status(job.get("status") or {})}
        written = await self.client.update_status("jobs", body, str(meta.get("namespace")))
        self.consistency.wrote_at(_job_key(written), uid_of(written), JOB_GROUP_RESOURCE,
                                  str(meta_of(written).get("resourceVersion") or ""))
        return written

    def _pod_written(self, pod: Mapping[str, Any], ref: Mapping[str, Any] | None) -> None:
        """RealPodControl's on_write: the pod's resourceVersion, for its Job."""
        if ref is None:
            return
        meta = meta_of(pod)
        self.consistency.wrote_at(f"{meta.get('namespace')}/{ref.get('name')}",
                                  str(ref.get("uid") or ""), "pods",
                                  str(meta.get("resourceVersion") or ""))


#: JobStatus fields tagged omitempty whose zero value (0, "", an empty list) Go's encoder
#: leaves out; ready and terminating are pointers, written as 0.
_OMITTED_WHEN_ZERO: Final = ("active", "succeeded", "failed", "completedIndexes", "conditions")


def go_job_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as kube-controller-manager sends it: no zero counter, no empty
    completedIndexes or conditions, no unset time (the Go struct's omitempty fields)."""
    return {k: v for k, v in status.items()
            if v is not None and not (k in _OMITTED_WHEN_ZERO and not v)}


class _WrappedError(Exception):
    """An error with upstream's ``"<context>: <cause>"`` message; the cause is chained."""


def _wrap(exc: BaseException, context: str) -> BaseException:
    if is_not_found(exc):
        # Keep NotFound recognisable to callers that ignore it.
        return exc
    err = _WrappedError(f"{context}: {exc}")
    err.__cause__ = exc
    return err

