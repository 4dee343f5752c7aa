"""The disruption controller (kube-controller-manager's ``disruption-controller``).

kube-controller-manager v1.36 ``pkg/controller/disruption/disruption.go``.

Role: keeps every PodDisruptionBudget's status true, so the API server's
``pods/eviction`` subresource can decide from it alone whether a voluntary
disruption is allowed:

- ``expectedPods``: with an integer ``minAvailable``, the number of pods the
  selector matches; with a percentage ``minAvailable`` or any ``maxUnavailable``,
  the sum of the scales of the pods' controllers (Deployment, ReplicaSet not
  owned by a Deployment, StatefulSet, ReplicationController from the caches; any
  other controller through its ``/scale`` subresource). Pods without a controller
  are skipped there, with an ``UnmanagedPods`` warning;
- ``desiredHealthy``: ``minAvailable`` (a percentage of expectedPods, rounded up),
  or expectedPods − ``maxUnavailable`` (rounded up), at least 0;
- ``currentHealthy``: Ready pods not being deleted and not in ``disruptedPods``;
- ``disruptionsAllowed``: currentHealthy − desiredHealthy, 0 when negative or
  when no pod is expected;
- ``disruptedPods``: the evictions the API server approved and the controller
  has not yet seen as deletions; an entry older than 2 minutes (``DeletionTimeout``)
  is dropped with a ``NotDeleted`` warning on the pod, and the budget is synced
  again when the oldest entry expires;
- ``observedGeneration`` and the ``DisruptionAllowed`` condition
  (``SufficientPods`` / ``InsufficientPods``). A sync that fails writes the
  fail-safe status instead: ``disruptionsAllowed`` 0 and the condition False with
  reason ``SyncFailed`` and the error as message (a conflict is only retried).

Beside budgets, a pod whose ``DisruptionTarget`` condition is True for 2 minutes
without the pod being deleted (an eviction that never happened) gets the
condition reset to False (not those the kubelet set, nor terminal pods).

Events (source ``controllermanager``, as upstream's recorder): ``NoPods``,
``CalculateExpectedPodCountFailed``, ``UnmanagedPods`` on the budget;
``NotDeleted`` (upstream's message names the budget's namespace twice; kept) and
``MultiplePodDisruptionBudgets`` on the pod.

Data flow: pod and budget informer events → the budget's key (the first budget
matching a pod, as upstream's lister returns them) → ``sync`` reads the caches
and writes the status (PUT ``/status``, never retried in place: a failure goes
back to the rate limiter). A second loop takes pod keys for the stale-condition
cleanup. Deliberate deviation: upstream's recheck queue re-adds a budget through
the main queue's rate limiter; here the main queue's ``add_after`` does it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of, spec_of, status_of
from pykcm.api.clock import Clock, clock_of
from pykcm.api.conditions import set_status_condition
from pykcm.api.intstr import get_scaled_value_from_int_or_percent
from pykcm.api.labels import (
    SelectorParseError,
    go_label_selector_string,
    selector_from_label_selector,
)
from pykcm.api.owner_refs import get_controller_of
from pykcm.api.pod_util import (
    is_pod_ready,
    is_pod_terminal,
    pod_disruption_target_condition,
)
from pykcm.api.poddisruptionbudget import (
    DISRUPTION_ALLOWED_CONDITION,
    SYNC_FAILED_REASON,
    conditions_are_up_to_date,
    update_disruption_allowed_condition,
)
from pykcm.api.resources import ResourceInfo
from pykcm.api.timestamps import format_time, parse_time
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import deleted_object
from pykcm.client import Client, NoResourceMatchError
from pykcm.client.errors import ApiError, is_conflict, is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.event_recorder import EventRecorder
from pykcm.informers.generic import GenericInformer

__all__ = [
    "DELETION_TIMEOUT",
    "STALE_POD_DISRUPTION_TIMEOUT",
    "DisruptionController",
    "build_disrupted_pod_map",
    "count_healthy_pods",
    "desired_healthy",
    "disruptions_allowed",
    "go_label_selector_string",
]

log = logging.getLogger("pykcm.controllers.disruption")

DELETION_TIMEOUT: Final = 120.0
"""How long an approved eviction may wait for its pod's deletion (upstream DeletionTimeout)."""
STALE_POD_DISRUPTION_TIMEOUT: Final = 120.0
EVENT_SOURCE: Final = "controllermanager"
TERMINATION_BY_KUBELET: Final = "TerminationByKubelet"

PDB_API_VERSION: Final = "policy/v1"
PDB_KIND: Final = "PodDisruptionBudget"

Pod = Mapping[str, Any]



def _disruption_target(pod: Pod) -> tuple[Any, ...]:
    """``()`` unless the pod is not terminal and has a DisruptionTarget=True condition
    the kubelet did not set; then ``(its lastTransitionTime,)``. Read from the facts a
    compact cached pod keeps (pod_util): the controller asks at every event of every
    pod."""
    cond = pod_disruption_target_condition(pod)
    if (cond is None or cond[0] != "True" or cond[1] == TERMINATION_BY_KUBELET
            or is_pod_terminal(pod)):
        return ()
    return (cond[2],)


class SyncError(Exception):
    """A sync failure whose text becomes the SyncFailed condition's message."""


def _go_quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


# -- the status computation (pure) ------------------------------------------------------------

def desired_healthy(spec: Mapping[str, Any], expected_count: int) -> int:
    """desiredHealthy of a budget whose expected pod count is known.

    ``maxUnavailable`` (int or percent of expected, rounded up) wins over
    ``minAvailable``; a percentage ``minAvailable`` is rounded up too.
    """
    max_unavailable = spec.get("maxUnavailable")
    if max_unavailable is not None:
        mu = get_scaled_value_from_int_or_percent(max_unavailable, expected_count, True)
        return max(0, expected_count - mu)
    min_available = spec.get("minAvailable")
    if min_available is not None:
        return get_scaled_value_from_int_or_percent(min_available, expected_count, True)
    return 0


def needs_scale(spec: Mapping[str, Any]) -> bool:
    """Whether the expected count comes from the controllers' scale (not the pod count)."""
    return spec.get("maxUnavailable") is not None or isinstance(spec.get("minAvailable"), str)


def disruptions_allowed(current_healthy: int, desired: int, expected_count: int) -> int:
    allowed = current_healthy - desired
    return 0 if expected_count <= 0 or allowed <= 0 else allowed


def build_disrupted_pod_map(pods: Sequence[Pod], disrupted: Mapping[str, Any] | None,
                            now: float, timeout: float = DELETION_TIMEOUT
                            ) -> tuple[dict[str, str], float | None, list[Pod]]:
    """The disruptedPods entries to keep, when to look again, and the pods whose eviction
    timed out without a deletion (upstream buildDisruptedPodMap)."""
    kept: dict[str, str] = {}
    recheck: float | None = None
    expired: list[Pod] = []
    if not disrupted:
        return kept, recheck, expired
    for pod in pods:
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            continue
        name = str(meta.get("name") or "")
        stamp = disrupted.get(name)
        if stamp is None:
            continue
        since = parse_time(str(stamp)) or 0.0
        expected_deletion = since + timeout
        if expected_deletion < now:
            expired.append(pod)
        else:
            if recheck is None or expected_deletion < recheck:
                recheck = expected_deletion
            kept[name] = str(stamp)
    return kept, recheck, expired


def count_healthy_pods(pods: Sequence[Pod], disrupted: Mapping[str, str], now: float,
                       timeout: float = DELETION_TIMEOUT) -> int:
    """Ready pods that are neither being deleted nor about to be (upstream countHealthyPods)."""
    healthy = 0
    for pod in pods:
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            continue
        stamp = disrupted.get(str(meta.get("name") or ""))
        if stamp is not None and (parse_time(stamp) or 0.0) + timeout > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def _group_of(api_version: str) -> str:
    """The group of an apiVersion; SyncError for a malformed one (schema.ParseGroupVersion)."""
    if api_version.count("/") > 1:
        raise SyncError(f"unexpected GroupVersion string: {api_version}")
    return api_version.split("/")[0] if "/" in api_version else ""


def _version_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[-1] if api_version else ""


def _pdb_ref(pdb: Mapping[str, Any]) -> dict[str, Any]:
    meta = meta_of(pdb)
    return {"apiVersion": PDB_API_VERSION, "kind": PDB_KIND, "metadata": {
        k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion")}}


def _pod_ref(pod: Pod) -> dict[str, Any]:
    meta = meta_of(pod)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion")}}


class DisruptionController(ControllerHost):
    """Writes PodDisruptionBudget statuses; resets stale DisruptionTarget pod conditions."""

    def __init__(self, *, client: Client, pod_informer: GenericInformer,
                 pdb_informer: GenericInformer, rc_informer: GenericInformer | None,
                 rs_informer: GenericInformer, deployment_informer: GenericInformer,
                 statefulset_informer: GenericInformer, recorder: EventRecorder | None,
                 clock: Clock | Callable[[], float] | None = None,
                 stale_pod_disruption_timeout: float = STALE_POD_DISRUPTION_TIMEOUT,
                 deletion_timeout: float = DELETION_TIMEOUT) -> None:
        self.name = "disruption"
        self.client = client
        self.recorder = recorder
        self._time = clock_of(clock)
        self.clock: Callable[[], float] = self._time.now
        self.stale_pod_disruption_timeout = stale_pod_disruption_timeout
        self.deletion_timeout = deletion_timeout
        self.pod_lister = pod_informer.lister
        self.pdb_lister = pdb_informer.lister
        self.rc_lister = rc_informer.lister if rc_informer is not None else None
        self.rs_lister = rs_informer.lister
        self.d_lister = deployment_informer.lister
        self.ss_lister = statefulset_informer.lister
        self.controller = Controller("disruption", self.sync, clock=self._time)
        self.stale_controller = Controller("stale_pod_disruption", self.sync_stale_pod_disruption,
                                           clock=self._time)
        self.controller.watch(pdb_informer, ResourceEventHandlerFuncs(
            add_func=self.controller.enqueue,
            update_func=lambda _old, new: self.controller.enqueue(new),
            delete_func=self.controller.enqueue))
        self.controller.watch(pod_informer, ResourceEventHandlerFuncs(
            add_func=self._pod_changed,
            update_func=lambda _old, new: self._pod_changed(new),
            delete_func=self._pod_deleted))
        for inf in (rc_informer, rs_informer, deployment_informer, statefulset_informer):
            if inf is not None:
                # Their listers only, no handler (as upstream: a handler that does
                # nothing still costs a delivery at every event)
                self.controller.add_synced(inf.informer.has_synced)

    # -- running -----------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Both loops (budgets, stale pod conditions), one worker each as upstream."""
        tasks = [asyncio.create_task(self.controller.run(1)),
                 asyncio.create_task(self.stale_controller.run(1))]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                if not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            self.shutdown()
            await asyncio.gather(*tasks, return_exceptions=True)

    def shutdown(self) -> None:
        self.controller.shutdown()
        self.stale_controller.shutdown()

    def health_check(self) -> str | None:
        return self.controller.health_check() or self.stale_controller.health_check()

    # -- handlers ----------------------------------------------------------------------------

    def _pod_changed(self, pod: Pod) -> None:
        pdb = self.get_pdb_for_pod(pod)
        if pdb is not None:
            self.controller.enqueue(pdb)
        stale, clean_after = self.has_stale_disruption_condition(pod)
        if stale:
            self.stale_controller.queue.add_after(self._key(pod), clean_after)

    def _pod_deleted(self, obj: Any) -> None:
        pod = deleted_object(obj)
        if pod is None:
            return
        pdb = self.get_pdb_for_pod(pod)
        if pdb is not None:
            self.controller.enqueue(pdb)

    @staticmethod
    def _key(obj: Mapping[str, Any]) -> str:
        meta = meta_of(obj)
        return f"{meta.get('namespace')}/{meta.get('name')}"

    def get_pdb_for_pod(self, pod: Pod) -> Mapping[str, Any] | None:
        """The first budget selecting ``pod`` (upstream: the lister's order, "arbitrarily");
        a ``MultiplePodDisruptionBudgets`` warning when there are more."""
        meta = meta_of(pod)
        # The namespace's budgets first: usually none, and then the pod's labels need
        # not be read (a handler of every pod event)
        pdbs = self.pdb_lister.by_namespace(str(meta.get("namespace") or "")).list()
        if not pdbs:
            return None
        labels = meta.get("labels") or {}
        if not labels:
            return None
        found: list[Mapping[str, Any]] = []
        for pdb in pdbs:
            try:
                sel = selector_from_label_selector(spec_of(pdb).get("selector"))
            except SelectorParseError:
                continue
            # A nil or empty selector matches nothing here (the lister's rule).
            if sel.empty or sel.is_nothing or not sel.matches(labels):
                continue
            found.append(pdb)
        if not found:
            return None
        if len(found) > 1:
            msg = (f"Pod {_go_quote(str(meta.get('namespace')))}/{_go_quote(str(meta.get('name')))}"
                   f" matches multiple PodDisruptionBudgets.  Chose "
                   f"{_go_quote(str(meta_of(found[0]).get('name')))} arbitrarily.")
            log.info(msg)
            if self.recorder is not None:
                self.recorder.event(_pod_ref(pod), "Warning", "MultiplePodDisruptionBudgets", msg)
        return found[0]

    # -- budget sync -------------------------------------------------------------------------

    def _event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(obj, type_, reason, message)

    async def sync(self, key: str) -> None:
        ns, _, name = key.rpartition("/")
        try:
            pdb = self.pdb_lister.by_namespace(ns).get(name)
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        try:
            await self.try_sync(pdb)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_conflict(exc):
                raise
            log.error("Failed to sync PDB %s: %s", key, exc)
            await self.fail_safe(pdb, exc)

    def get_pods_for_pdb(self, pdb: Mapping[str, Any]) -> list[Pod]:
        sel = selector_from_label_selector(spec_of(pdb).get("selector"))
        return list(self.pod_lister.by_namespace(str(meta_of(pdb).get("namespace"))).list(sel))

    async def try_sync(self, pdb: Mapping[str, Any]) -> None:
        ref = _pdb_ref(pdb)
        try:
            pods = self.get_pods_for_pdb(pdb)
        except SelectorParseError as exc:
            self._event(ref, "Warning", "NoPods", f"Failed to get pods: {exc}")
            raise SyncError(str(exc)) from None
        if not pods:
            self._event(ref, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await self.get_expected_pod_count(pdb, pods)
        except Exception as exc:
            self._event(ref, "Warning", "CalculateExpectedPodCountFailed",
                        f"Failed to calculate the number of expected pods: {exc}")
            raise
        if unmanaged:
            log.debug("Found unmanaged pods associated with PDB %s: %s", self._key(pdb), unmanaged)
            self._event(ref, "Warning", "UnmanagedPods",
                        "Pods selected by this PodDisruptionBudget (selector: "
                        f"{go_label_selector_string(spec_of(pdb).get('selector'))}) were found "
                        "to be unmanaged. As a result, the status of the PDB cannot be calculated "
                        "correctly, which may result in undefined behavior. To account for these "
                        "pods please set \".spec.minAvailable\" field of the PDB to an integer "
                        "value.")
        now = self.clock()
        disrupted, recheck, expired = build_disrupted_pod_map(
            pods, status_of(pdb).get("disruptedPods"), now, self.deletion_timeout)
        meta = meta_of(pdb)
        for pod in expired:
            log.info("pod %s was expected to be deleted but it wasn't, updating PDB %s",
                     self._key(pod), self._key(pdb))
            self._event(_pod_ref(pod), "Warning", "NotDeleted",
                        f"Pod was expected by PDB {meta.get('namespace')}/"
                        f"{meta.get('namespace')} to be deleted but it wasn't")
        current = count_healthy_pods(pods, disrupted, now, self.deletion_timeout)
        await self.update_pdb_status(pdb, current, desired, expected, disrupted)
        if recheck is not None:
            self.controller.queue.add_after(self._key(pdb), max(0.0, recheck - now))

    async def get_expected_pod_count(self, pdb: Mapping[str, Any], pods: Sequence[Pod]
                                     ) -> tuple[int, int, list[str]]:
        """(expectedPods, desiredHealthy, unmanaged pod names) (upstream getExpectedPodCount)."""
        spec = spec_of(pdb)
        unmanaged: list[str] = []
        if needs_scale(spec):
            expected, unmanaged = await self.get_expected_scale(pods)
        elif spec.get("minAvailable") is not None:
            expected = len(pods)
        else:
            return 0, 0, []
        return expected, desired_healthy(spec, expected), unmanaged

    async def get_expected_scale(self, pods: Sequence[Pod]) -> tuple[int, list[str]]:
        """The sum of the scales of the pods' controllers, and the pods without one."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = get_controller_of(pod)
            if ref is None:
                unmanaged.append(str(meta_of(pod).get("name")))
                continue
            if str(ref.get("uid")) in scales:
                continue
            ns = str(meta_of(pod).get("namespace"))
            for finder in (self._rc_scale, self._deployment_scale, self._rs_scale,
                           self._statefulset_scale, self._scale_subresource):
                found = await finder(ref, ns)
                if found is not None:
                    scales[found[0]] = found[1]
                    break
            else:
                raise SyncError(f"found no controllers for pod "
                                f"{_go_quote(str(meta_of(pod).get('name')))}")
        return sum(scales.values()), unmanaged

    @staticmethod
    def _is(ref: Mapping[str, Any], kind: str, groups: tuple[str, ...]) -> bool:
        group = _group_of(str(ref.get("apiVersion") or ""))
        return ref.get("kind") == kind and group in groups

    @staticmethod
    def _cached(lister: Any, ns: str, name: str) -> Mapping[str, Any] | None:
        try:
            obj: Mapping[str, Any] = lister.by_namespace(ns).get(name)
        except Exception as exc:
            if is_not_found(exc):
                return None
            raise
        return obj

    def _owned(self, lister: Any, ref: Mapping[str, Any], ns: str) -> Mapping[str, Any] | None:
        obj = self._cached(lister, ns, str(ref.get("name")))
        if obj is None or meta_of(obj).get("uid") != ref.get("uid"):
            return None
        return obj

    @staticmethod
    def _replicas(obj: Mapping[str, Any]) -> tuple[str, int]:
        replicas = spec_of(obj).get("replicas")
        return str(meta_of(obj).get("uid")), int(1 if replicas is None else replicas)

    async def _rc_scale(self, ref: Mapping[str, Any], ns: str) -> tuple[str, int] | None:
        if not self._is(ref, "ReplicationController", ("",)) or self.rc_lister is None:
            return None
        rc = self._owned(self.rc_lister, ref, ns)
        return None if rc is None else self._replicas(rc)

    async def _rs_scale(self, ref: Mapping[str, Any], ns: str) -> tuple[str, int] | None:
        if not self._is(ref, "ReplicaSet", ("apps", "extensions")):
            return None
        rs = self._owned(self.rs_lister, ref, ns)
        if rs is None:
            return None
        owner = get_controller_of(rs)
        if owner is not None and owner.get("kind") == "Deployment":
            return None  # the Deployment's scale counts (or none, if it is gone)
        return self._replicas(rs)

    async def _deployment_scale(self, ref: Mapping[str, Any], ns: str) -> tuple[str, int] | None:
        if not self._is(ref, "ReplicaSet", ("apps", "extensions")):
            return None
        rs = self._owned(self.rs_lister, ref, ns)
        if rs is None:
            return None
        owner = get_controller_of(rs)
        if owner is None or not self._is(owner, "Deployment", ("apps", "extensions")):
            return None
        d = self._owned(self.d_lister, owner, ns)
        return None if d is None else self._replicas(d)

    async def _statefulset_scale(self, ref: Mapping[str, Any], ns: str
                                 ) -> tuple[str, int] | None:
        if not self._is(ref, "StatefulSet", ("apps",)):
            return None
        ss = self._owned(self.ss_lister, ref, ns)
        return None if ss is None else self._replicas(ss)

    async def _scale_subresource(self, ref: Mapping[str, Any], ns: str
                                 ) -> tuple[str, int] | None:
        """Any other controller, through its ``/scale`` (upstream getScaleController)."""
        api_version = str(ref.get("apiVersion") or "")
        group, version = _group_of(api_version), _version_of(api_version)
        kind = str(ref.get("kind") or "")
        try:
            info = await self.client.resolve(f"{group}/{version}/{kind.lower()}" if group
                                             else f"{version}/{kind.lower()}")
        except NoResourceMatchError:
            raise SyncError(f"no matches for kind {_go_quote(kind)} in version "
                            f"{_go_quote(api_version)}") from None
        if info.kind != kind:
            raise SyncError(f"no matches for kind {_go_quote(kind)} in version "
                            f"{_go_quote(api_version)}")
        try:
            scale = await self.client.get_scale(info, str(ref.get("name")), ns)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            if not await self._implements_scale(info):
                raise SyncError(f"{info.group_resource} does not implement the scale "
                                "subresource") from None
            return None
        if meta_of(scale).get("uid") != ref.get("uid"):
            return None
        return str(meta_of(scale).get("uid")), int(spec_of(scale).get("replicas") or 0)

    async def _implements_scale(self, info: ResourceInfo) -> bool:
        if "scale" in info.subresources:
            return True
        # discovery may be stale (a CRD's scale added later): ask again once
        self.client.invalidate_discovery()
        try:
            fresh = await self.client.resolve(f"{info.group}/{info.version}/{info.plural}"
                                              if info.group else f"{info.version}/{info.plural}")
        except NoResourceMatchError:
            return False
        return "scale" in fresh.subresources

    async def update_pdb_status(self, pdb: Mapping[str, Any], current: int, desired: int,
                                expected: int, disrupted: dict[str, str]) -> None:
        allowed = disruptions_allowed(current, desired, expected)
        st = status_of(pdb)
        generation = int(meta_of(pdb).get("generation") or 0)
        if (int(st.get("currentHealthy") or 0) == current
                and int(st.get("desiredHealthy") or 0) == desired
                and int(st.get("expectedPods") or 0) == expected
                and int(st.get("disruptionsAllowed") or 0) == allowed
                and dict(st.get("disruptedPods") or {}) == disrupted
                and int(st.get("observedGeneration") or 0) == generation
                and conditions_are_up_to_date(pdb)):
            return
        new = copy.deepcopy(dict(pdb))
        status: dict[str, Any] = {"currentHealthy": current, "desiredHealthy": desired,
                                  "expectedPods": expected, "disruptionsAllowed": allowed}
        if disrupted:
            status["disruptedPods"] = disrupted
        if generation:
            status["observedGeneration"] = generation
        status["conditions"] = copy.deepcopy(list(st.get("conditions") or []))
        update_disruption_allowed_condition(status, self.clock())
        new["status"] = status
        await self.write_status(new)

    async def fail_safe(self, pdb: Mapping[str, Any], err: BaseException) -> None:
        """disruptionsAllowed 0 and DisruptionAllowed False (SyncFailed): the eviction
        handler then refuses, whatever the rest of the stale status says."""
        new = copy.deepcopy(dict(pdb))
        status = new.setdefault("status", {})
        status["disruptionsAllowed"] = 0
        conditions = status.get("conditions")
        if not isinstance(conditions, list):
            conditions = status["conditions"] = []
        set_status_condition(conditions, {
            "type": DISRUPTION_ALLOWED_CONDITION, "status": "False",
            "reason": SYNC_FAILED_REASON, "message": str(err),
            "observedGeneration": int(status.get("observedGeneration") or 0)}, self.clock())
        await self.write_status(new)

    async def write_status(self, pdb: Mapping[str, Any]) -> None:
        meta = meta_of(pdb)
        await self.client.update_status("policy/v1/poddisruptionbudgets", pdb,
                                        str(meta.get("namespace")))

    # -- stale DisruptionTarget conditions ---------------------------------------------------

    def has_stale_disruption_condition(self, pod: Pod) -> tuple[bool, float]:
        """(whether the pod has a DisruptionTarget=True no deletion followed, seconds left
        before it counts as stale) (upstream nonTerminatingPodHasStaleDisruptionCondition)."""
        if meta_of(pod).get("deletionTimestamp"):
            return False, 0.0
        target = _disruption_target(pod)
        if not target:
            return False, 0.0
        since = parse_time(target[0]) or 0.0
        return True, max(0.0, self.stale_pod_disruption_timeout - (self.clock() - since))

    async def sync_stale_pod_disruption(self, key: str) -> None:
        ns, _, name = key.rpartition("/")
        try:
            pod = self.pod_lister.by_namespace(ns).get(name)
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        stale, clean_after = self.has_stale_disruption_condition(pod)
        if not stale:
            return
        if clean_after > 0:
            self.stale_controller.queue.add_after(key, clean_after)
            return
        new = copy.deepcopy(dict(pod))
        status = new.setdefault("status", {})
        cond: dict[str, Any] = {"type": "DisruptionTarget", "status": "False",
                                "lastTransitionTime": format_time(self.clock())}
        generation = int(meta_of(pod).get("generation") or 0)
        if generation:
            # PodObservedGenerationTracking is on by default in v1.36
            cond["observedGeneration"] = generation
        status["conditions"] = [cond if c.get("type") == "DisruptionTarget" else c
                                for c in status.get("conditions") or []]
        await self.client.update_status("pods", new, ns)
        log.info("Reset stale DisruptionTarget condition to False for pod %s", key)
