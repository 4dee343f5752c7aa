"""The StatefulSet update loop: revisions, replicas in ordinal order, condemned pods, updates.

kube-controller-manager v1.36 ``pkg/controller/statefulset/stateful_set_control.go``.

Data flow of :meth:`DefaultStatefulSetControl.update_stateful_set`::

    revisions (the set's, sorted) ──► update revision: the current template's revision
        │   (an equal older one renumbered: a rollback; else created <set>-<hash>, the
        │   collision count bumped past names taken by other data);
        │   current revision: status.currentRevision's, else the update revision
        ▼
    pods split by ordinal: replicas [start, start+replicas) (missing ones made from the
        current revision below the partition, else the update revision), condemned
        (ordinals beyond, highest first)
        │
        │  OrderedReady ("monotonic"): one replica at a time, in ordinal order: delete a
        │  failed/succeeded one, create a missing one (claims first) and stop, stop at one
        │  that is terminating, not running and ready, or not available; fix identity and
        │  storage of the others. Parallel: every replica at once (slow-start batches;
        │  a replica with nothing to do, replica_settled, counts without a task).
        │  Then the condemned, highest ordinal first: delete, (OrderedReady) only when every
        │  other pod is healthy or it is the first unhealthy one.
        ▼
    RollingUpdate (not OnDelete): delete the highest-ordinal replica ≥ partition that is
        not at the update revision, one at a time, waiting for unavailable replicas
        (with the MaxUnavailableStatefulSet gate: up to maxUnavailable at once)
        ▼
    status (observedGeneration, replicas, ready, available, current, updated, revisions,
        collisionCount; a finished rolling update makes the update revision current)
        → PUT /status when it changed; then revisions beyond revisionHistoryLimit that
        neither the status nor a pod uses are deleted, oldest first

Deviation: with the StatefulSetSemanticRevisionComparison gate (on in v1.36) upstream
also reuses the latest revision when restoring it and defaulting the result gives the
current template; pykcm compares the recorded template with the current one without the
API defaulting (nulls aside), which covers revisions recorded by another manager for the
same template.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of, name_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.labels import selector_from_label_selector
from pykcm.api.randomness import RandomSource, random_of
from pykcm.client import Client
from pykcm.client.errors import is_conflict
from pykcm.controller.consistency import ConsistencyStoreLike, NoopConsistencyStore
from pykcm.controller.controller_ref_manager import AggregateError
from pykcm.controller.history import (
    History,
    equal_revision,
    find_equal_revisions,
    sort_controller_revisions,
)
from pykcm.controllers.statefulset.stateful_pod_control import StatefulPodControl
from pykcm.controllers.statefulset.stateful_set_utils import (
    SET_GROUP_RESOURCE,
    allows_burst,
    apply_revision,
    complete_rolling_update,
    get_end_ordinal,
    get_max_unavailable,
    get_ordinal,
    get_pod_revision,
    get_start_ordinal,
    identity_matches,
    inconsistent_status,
    is_created,
    is_failed,
    is_pending,
    is_running_and_available,
    is_running_and_ready,
    is_succeeded,
    is_terminating,
    is_unavailable,
    new_revision,
    new_versioned_stateful_set_pod,
    next_revision,
    pod_in_ordinal_range,
    spec_replicas,
    status_to_wire,
    storage_matches,
)

__all__ = ["MAX_BATCH_SIZE", "DefaultStatefulSetControl"]

log = logging.getLogger("pykcm.controllers.statefulset")

MAX_BATCH_SIZE: Final = 500
"""At most this many pod writes at once in Parallel mode."""
_DEFAULT_RETRY: Final = (0.01, 1.0, 5)  # client-go retry.DefaultRetry: 10ms, x1, 5 steps


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def _strip_nulls(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _strip_nulls(x) for k, x in v.items() if x is not None and k != "$patch"}
    if isinstance(v, list):
        return [_strip_nulls(x) for x in v]
    return v


def _raise_all(errors: Sequence[BaseException]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise AggregateError(errors)


async def slow_start_batch(initial_batch_size: int, remaining: int,
                           fn: Callable[[int], Awaitable[Any]],
                           settled: Callable[[int], bool] | None = None) -> int:
    """Call ``fn(0..remaining-1)`` in doubling batches (at most MAX_BATCH_SIZE); stop after
    a batch with errors and raise them (upstream's statefulset slowStartBatch).

    ``settled(i)``: True when ``fn(i)`` would do nothing and succeed; such calls are
    counted in their batch as successes without being made (no task each: a steady
    sync of a Parallel set of 100 spent a third of its time scheduling them)."""
    successes = 0
    j = 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        todo = [j + i for i in range(batch) if settled is None or not settled(j + i)]
        results: list[Any] = [None] * (batch - len(todo))
        if todo:
            results += await asyncio.gather(*(fn(i) for i in todo), return_exceptions=True)
        j += batch
        errs = [r for r in results if isinstance(r, BaseException)]
        for e in errs:
            if not isinstance(e, Exception):
                raise e
        successes += batch - len(errs)
        if errs:
            _raise_all(errs)
        remaining -= batch
        batch = min(2 * batch, remaining, MAX_BATCH_SIZE)
    return successes


class DefaultStatefulSetControl:
    """One StatefulSet's pods brought to its spec (upstream defaultStatefulSetControl)."""

    def __init__(self, pod_control: StatefulPodControl, client: Client, set_indexer: Any,
                 history: History, *, max_unavailable_stateful_set: bool = False,
                 consistency: ConsistencyStoreLike | None = None,
                 clock: Clock | None = None, rng: RandomSource | None = None) -> None:
        self._rng = random_of(rng)
        self.consistency: ConsistencyStoreLike = (consistency if consistency is not None
                                                  else NoopConsistencyStore())
        self.clock: Clock = clock if clock is not None else REAL_CLOCK
        self.pod_control = pod_control
        self.client = client
        self.set_indexer = set_indexer
        self.history = history
        self.max_unavailable_stateful_set = max_unavailable_stateful_set

    # -- revisions -------------------------------------------------------------------------------

    def list_revisions(self, set_: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        selector = selector_from_label_selector(_spec(set_).get("selector"))
        return self.history.list_controller_revisions(set_, "StatefulSet", selector)

    async def adopt_orphan_revisions(self, set_: Mapping[str, Any],
                                     revisions: Sequence[Mapping[str, Any]]) -> None:
        for r in revisions:
            await self.history.adopt_controller_revision(set_, "apps/v1", "StatefulSet", r)

    async def get_stateful_set_revisions(self, set_: Mapping[str, Any],
                                         revisions: list[Mapping[str, Any]]
                                         ) -> tuple[Mapping[str, Any], Mapping[str, Any], int]:
        """(current revision, update revision, collision count)."""
        revisions = sort_controller_revisions(revisions)
        count = len(revisions)
        collision_count = int((set_.get("status") or {}).get("collisionCount") or 0)
        update_revision: Mapping[str, Any] = new_revision(set_, next_revision(revisions),
                                                          collision_count)
        equal = find_equal_revisions(revisions, update_revision)
        if equal and equal_revision(revisions[-1], equal[-1]):
            # the template has not changed since the last revision
            update_revision = revisions[-1]
        elif equal:
            # back to an earlier template: that revision becomes the newest
            update_revision = await self.history.update_controller_revision(
                equal[-1], int(update_revision["revision"]))
        elif count > 0 and self._matches_latest(set_, revisions[-1]):
            update_revision = revisions[-1]
        else:
            update_revision, collision_count = await self.history.create_controller_revision(
                set_, update_revision, collision_count)
        current_name = (set_.get("status") or {}).get("currentRevision")
        current = next((r for r in revisions if name_of(r) == current_name), None)
        return (current if current is not None else update_revision), update_revision, \
            collision_count

    @staticmethod
    def _matches_latest(set_: Mapping[str, Any], latest: Mapping[str, Any]) -> bool:
        restored = apply_revision(set_, latest)
        return bool(_strip_nulls(_spec(restored).get("template")) ==
                    _strip_nulls(_spec(set_).get("template")))

    async def truncate_history(self, set_: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                               revisions: Sequence[Mapping[str, Any]],
                               current: Mapping[str, Any] | None,
                               update: Mapping[str, Any] | None) -> None:
        """Delete the oldest revisions nothing uses beyond revisionHistoryLimit."""
        live = {name_of(current or {}), name_of(update or {})} | {get_pod_revision(p)
                                                                 for p in pods}
        history = [r for r in revisions if name_of(r) not in live]
        limit = _spec(set_).get("revisionHistoryLimit")
        history_limit = 10 if limit is None else int(limit)
        if history_limit < 0 or len(history) <= history_limit:
            return
        for r in history[:len(history) - history_limit]:
            await self.history.delete_controller_revision(r)

    # -- the loop --------------------------------------------------------------------------------

    async def update_stateful_set(self, set_: Mapping[str, Any],
                                  pods: Sequence[Mapping[str, Any]], now: float
                                  ) -> dict[str, Any] | None:
        """Reconcile; the status written (None if the update failed before computing it)."""
        revisions = sort_controller_revisions(self.list_revisions(set_))
        current: Mapping[str, Any] | None = None
        update: Mapping[str, Any] | None = None
        errs: list[BaseException] = []
        status: dict[str, Any] | None = None
        try:
            current, update, status = await self.perform_update(set_, pods, revisions, now)
        except asyncio.CancelledError:
            raise
        except AggregateError as exc:
            errs.extend(exc.errors)
        except Exception as exc:  # noqa: BLE001 - raised with the history error
            errs.append(exc)
        try:
            await self.truncate_history(set_, pods, revisions, current, update)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            errs.append(exc)
        _raise_all(errs)
        return status

    async def perform_update(self, set_: Mapping[str, Any], pods: Sequence[Mapping[str, Any]],
                             revisions: list[Mapping[str, Any]], now: float
                             ) -> tuple[Mapping[str, Any], Mapping[str, Any], dict[str, Any]]:
        current, update, collision_count = await self.get_stateful_set_revisions(set_, revisions)
        status, err = await self.update_replicas(set_, current, update, collision_count, pods,
                                                 now)
        status_err: BaseException | None = None
        try:
            await self.update_stateful_set_status(set_, status)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            status_err = exc
        if err is not None:
            if status_err is not None:
                log.error("Could not update status of StatefulSet %s/%s: %s",
                          meta_of(set_).get("namespace"), name_of(set_), status_err)
            raise err
        if status_err is not None:
            raise status_err
        return current, update, status

    async def process_replica(self, set_: Mapping[str, Any], update_set: Mapping[str, Any],
                              monotonic: bool, replicas: list[dict[str, Any]], i: int,
                              now: float) -> bool:
        """Bring replica ``i`` to life or in line; True when the loop must stop here."""
        pod = replicas[i]
        pc = self.pod_control
        if is_failed(pod) or is_succeeded(pod):
            # A finished pod is replaced: once it is gone, the next sync creates it again.
            if not is_terminating(pod):
                await pc.delete_stateful_pod(set_, pod)
            return True
        if not is_created(pod):
            if pc.pod_claim_is_stale(set_, pod):
                return True
            await pc.create_stateful_pod(set_, pod)
            if monotonic:
                return True
        if is_pending(pod):
            await pc.create_missing_persistent_volume_claims(set_, pod)
        if is_terminating(pod) and monotonic:
            log.debug("StatefulSet %s is waiting for Pod %s to Terminate", name_of(set_),
                      name_of(pod))
            return True
        min_ready = int(_spec(set_).get("minReadySeconds") or 0)
        if not is_running_and_ready(pod) and monotonic:
            log.debug("StatefulSet %s is waiting for Pod %s to be Running and Ready",
                      name_of(set_), name_of(pod))
            return True
        if not is_running_and_available(pod, min_ready, now) and monotonic:
            log.debug("StatefulSet %s is waiting for Pod %s to be Available", name_of(set_),
                      name_of(pod))
            return True
        try:
            retention_match = await pc.claims_match_retention_policy(update_set, pod)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - expected while the pod is being updated
            retention_match = True
        if identity_matches(set_, pod) and storage_matches(set_, pod) and retention_match:
            return False
        await pc.update_stateful_pod(update_set, _copy(pod))
        return False

    async def process_condemned(self, set_: Mapping[str, Any],
                                first_unhealthy: Mapping[str, Any] | None, monotonic: bool,
                                condemned: list[dict[str, Any]], i: int, now: float) -> bool:
        pod = condemned[i]
        if is_terminating(pod):
            return monotonic
        min_ready = int(_spec(set_).get("minReadySeconds") or 0)
        if not is_running_and_ready(pod) and monotonic and pod is not first_unhealthy:
            return True
        if not is_running_and_available(pod, min_ready, now) and monotonic and \
                pod is not first_unhealthy:
            return True
        log.info("Pod %s of StatefulSet %s is terminating for scale down", name_of(pod),
                 name_of(set_))
        await self.pod_control.delete_stateful_pod(set_, pod)
        return True

    @staticmethod
    async def run_for_all(pods: list[dict[str, Any]],
                          fn: Callable[[int], Awaitable[bool]], monotonic: bool,
                          settled: Callable[[int], bool] | None = None) -> bool:
        """Monotonic: in order, stopping at the first that asks to; else all at once
        (``settled``: see slow_start_batch)."""
        if monotonic:
            for i in range(len(pods)):
                if await fn(i):
                    return True
            return False
        await slow_start_batch(1, len(pods), fn, settled)
        return False

    @staticmethod
    def replica_settled(set_: Mapping[str, Any], update_set: Mapping[str, Any],
                        pod: Mapping[str, Any]) -> bool:
        """Whether process_replica (not monotonic) would neither write nor stop for
        ``pod``: created, running or pending no more, not finished, identity and storage
        as the set gives them, and no claim templates (whose retention it would check)."""
        return (is_created(pod) and not is_pending(pod) and not is_failed(pod)
                and not is_succeeded(pod)
                and not _spec(set_).get("volumeClaimTemplates")
                and not _spec(update_set).get("volumeClaimTemplates")
                and identity_matches(set_, pod) and storage_matches(set_, pod))

    async def update_replicas(self, set_: Mapping[str, Any], current_revision: Mapping[str, Any],
                              update_revision: Mapping[str, Any], collision_count: int,
                              pods: Sequence[Mapping[str, Any]], now: float
                              ) -> tuple[dict[str, Any], BaseException | None]:
        """(the status, the error that stopped the loop or None) (upstream updateStatefulSet)."""
        current_set = apply_revision(set_, current_revision)
        update_set = apply_revision(set_, update_revision)
        min_ready = int(_spec(set_).get("minReadySeconds") or 0)
        status: dict[str, Any] = {
            "observedGeneration": int(meta_of(set_).get("generation") or 0),
            "currentRevision": name_of(current_revision), "updateRevision": name_of(update_revision),
            "collisionCount": collision_count}
        cur_name, upd_name = name_of(current_revision), name_of(update_revision)

        def update_status(*lists: Sequence[Mapping[str, Any]]) -> None:
            counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0,
                      "currentReplicas": 0, "updatedReplicas": 0}
            for pods_ in lists:
                for p in pods_:
                    if is_created(p):
                        counts["replicas"] += 1
                    if is_running_and_ready(p):
                        counts["readyReplicas"] += 1
                        if is_running_and_available(p, min_ready, now):
                            counts["availableReplicas"] += 1
                    if is_created(p) and not is_terminating(p):
                        rev = get_pod_revision(p)
                        if rev == cur_name:
                            counts["currentReplicas"] += 1
                        if rev == upd_name:
                            counts["updatedReplicas"] += 1
            status.update(counts)

        update_status(pods)
        start, end = get_start_ordinal(set_), get_end_ordinal(set_)
        replica_count = spec_replicas(set_)
        replicas: list[Any] = [None] * replica_count
        condemned: list[Any] = []
        for pod in pods:
            if pod_in_ordinal_range(pod, set_):
                replicas[get_ordinal(pod) - start] = pod
            elif get_ordinal(pod) >= 0:
                condemned.append(pod)
        for ordinal in range(start, end + 1):
            if replicas[ordinal - start] is None:
                replicas[ordinal - start] = new_versioned_stateful_set_pod(
                    current_set, update_set, cur_name, upd_name, ordinal)
        condemned.sort(key=get_ordinal, reverse=True)

        first_unavailable: Mapping[str, Any] | None = None
        for p in replicas:
            if is_unavailable(p, min_ready, now) and first_unavailable is None:
                first_unavailable = p
        for p in reversed(condemned):
            if is_unavailable(p, min_ready, now) and first_unavailable is None:
                first_unavailable = p

        if meta_of(set_).get("deletionTimestamp"):
            return status, None
        monotonic = not allows_burst(set_)

        async def stop(err: BaseException | None = None
                       ) -> tuple[dict[str, Any], BaseException | None]:
            update_status(replicas, condemned)
            return status, err

        try:
            async def replica_fn(i: int) -> bool:
                return await self.process_replica(set_, update_set, monotonic, replicas, i, now)

            def replica_settled(i: int) -> bool:
                return self.replica_settled(set_, update_set, replicas[i])
            if await self.run_for_all(replicas, replica_fn, monotonic, replica_settled):
                return await stop()

            async def fix_claim(i: int) -> bool:
                if not await self.pod_control.claims_match_retention_policy(update_set,
                                                                            condemned[i]):
                    await self.pod_control.update_pod_claim_for_retention_policy(
                        update_set, condemned[i])
                return False
            if await self.run_for_all(condemned, fix_claim, monotonic):
                return await stop()

            async def condemned_fn(i: int) -> bool:
                return await self.process_condemned(set_, first_unavailable, monotonic,
                                                    condemned, i, now)
            if await self.run_for_all(condemned, condemned_fn, monotonic):
                return await stop()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the status is still written
            return await stop(exc)

        update_status(replicas, condemned)
        strategy = _spec(set_).get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return status, None
        rolling = strategy.get("rollingUpdate") or {}
        update_min = int(rolling.get("partition") or 0)
        try:
            if self.max_unavailable_stateful_set:
                await self._update_within_max_unavailable(set_, replicas, upd_name, status,
                                                          rolling, update_min, now)
                return status, None
            for target in range(len(replicas) - 1, update_min - 1, -1):
                pod = replicas[target]
                if get_pod_revision(pod) != upd_name and not is_terminating(pod):
                    log.info("Pod %s of StatefulSet %s is terminating for update", name_of(pod),
                             name_of(set_))
                    await self.pod_control.delete_stateful_pod(set_, pod)
                    status["currentReplicas"] -= 1
                    return status, None
                if is_unavailable(pod, min_ready, now):
                    return status, None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            return status, exc
        return status, None

    async def _update_within_max_unavailable(self, set_: Mapping[str, Any],
                                             replicas: list[dict[str, Any]], upd_name: str,
                                             status: dict[str, Any], rolling: Mapping[str, Any],
                                             update_min: int, now: float) -> None:
        """MaxUnavailableStatefulSet: delete up to maxUnavailable - unavailable old pods,
        highest ordinal first."""
        min_ready = int(_spec(set_).get("minReadySeconds") or 0)
        max_unavailable = 1
        if rolling:
            max_unavailable = get_max_unavailable(rolling.get("maxUnavailable"),
                                                  spec_replicas(set_))
        unavailable = sum(1 for p in replicas if is_unavailable(p, min_ready, now))
        if unavailable >= max_unavailable:
            return
        to_delete = max_unavailable - unavailable
        deleted = 0
        for target in range(len(replicas) - 1, update_min - 1, -1):
            if deleted >= to_delete:
                break
            pod = replicas[target]
            if get_pod_revision(pod) != upd_name and not is_terminating(pod):
                await self.pod_control.delete_stateful_pod(set_, pod)
                deleted += 1
                status["currentReplicas"] -= 1

    # -- status ----------------------------------------------------------------------------------

    async def update_stateful_set_status(self, set_: Mapping[str, Any],
                                         status: dict[str, Any]) -> None:
        complete_rolling_update(set_, status)
        if not inconsistent_status(set_, status):
            return
        to_update: dict[str, Any] = dict(set_)
        meta = meta_of(set_)
        ns, name = str(meta.get("namespace") or ""), name_of(set_)
        delay, factor, steps = _DEFAULT_RETRY
        for step in range(steps):
            to_update["status"] = status_to_wire(status)
            try:
                written = await self.client.update_status("statefulsets", to_update, ns)
                # The next sync waits until the set's cache holds this status: one
                # computed from the older set would be refused with 409 Conflict.
                self.consistency.wrote_at(f"{ns}/{name}",
                                          str(meta_of(written).get("uid") or ""),
                                          SET_GROUP_RESOURCE,
                                          str(meta_of(written).get("resourceVersion") or ""))
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not is_conflict(exc) or step == steps - 1:
                    raise
            cached = self.set_indexer.get_by_key(f"{ns}/{name}")
            if cached is not None:
                to_update = dict(cached)
            await self.clock.sleep(delay * (1 + 0.1 * self._rng.random()))
            delay *= factor


def _copy(pod: Mapping[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(dict(pod))
