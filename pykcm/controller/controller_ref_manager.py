"""Controller-ref managers: claim the objects a controller's selector matches (upstream controller_ref_manager.go).

A controller (ReplicaSet, Deployment, Job, ...) lists the candidates in its
namespace from the cache and *claims* them: the objects it then manages are
exactly those that both carry its controller reference and match its
selector. Claiming reconciles the two:

=====================================  ======================================================
object                                 action
=====================================  ======================================================
controlled by another owner            ignored
controlled by us, matches              kept (even while we are being deleted: no write)
controlled by us, does not match       released (patch removes our ownerReference), unless
                                       we are being deleted
orphan, matches, we are alive,         adopted (patch adds our controller reference) once
it is alive, same namespace            ``can_adopt()`` has said yes
anything else                          ignored
=====================================  ======================================================

``can_adopt`` is the "uncached re-check of the owner": typically
:func:`recheck_deletion_timestamp` around a live GET (quorum read) of the
controller, so a controller that has just been deleted (but whose cached
copy does not show it yet) never adopts. It is called lazily, at most once
per manager, and only if an adoption is actually attempted; create a new
manager for every sync.

Data flow::

    cached candidates ──► claim_object(obj) per object ──► PodControl.patch_pod /
                                │                          RSControl.patch_replica_set
                                ▼                          (strategic merge patches,
                        claimed objects                     metadata.uid as precondition)

Errors are collected over all objects and raised together at the end as an
:class:`AggregateError` (upstream utilerrors.NewAggregate), so one failing
patch does not stop the others; NotFound on adopt or release (the object has
gone) and Invalid on release (the object was recreated under another UID, or
lost its references) are not errors, as upstream.

Both patches carry the dependent's ``metadata.uid``: the API server refuses
to change an object's UID, so a patch meant for an object that has been
deleted and recreated under the same name fails (422) instead of adopting or
releasing the wrong object.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pykcm.api.accessors import labels_of, meta_of
from pykcm.api.labels import LabelSelector
from pykcm.api.owner_refs import get_controller_of, new_controller_ref
from pykcm.client import Client, ResourceRef
from pykcm.client.errors import is_invalid, is_not_found
from pykcm.controller.pod_control import PodControl
from pykcm.controller.replica_set_control import RSControl

__all__ = [
    "AggregateError",
    "BaseControllerRefManager",
    "PodControllerRefManager",
    "ReplicaSetControllerRefManager",
    "delete_owner_ref_strategic_merge_patch",
    "owner_ref_controller_patch",
    "recheck_deletion_timestamp",
    "recheck_live_controller",
]

CanAdopt = Callable[[], Awaitable[None]]
"""Raises to refuse every adoption of one claim pass; returns None to allow them."""

SendPatch = Callable[[str, str, dict[str, Any]], Awaitable[None]]
"""Sends a strategic merge patch to the dependent ``(namespace, name, patch)``."""


class AggregateError(Exception):
    """Several errors from one claim pass (upstream utilerrors.Aggregate).

    ``str()`` is upstream's: the single message, or ``[a, b, ...]`` with
    duplicate messages listed once.
    """

    def __init__(self, errors: Sequence[BaseException]) -> None:
        self.errors: list[BaseException] = list(errors)
        super().__init__(_aggregate_message(self.errors))


def _aggregate_message(errors: Sequence[BaseException]) -> str:
    seen: list[str] = []
    for e in errors:
        msg = str(e)
        if msg not in seen:
            seen.append(msg)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def _go_time(ts: str) -> str:
    """An RFC 3339 timestamp as Go prints a time.Time (``2006-01-02 15:04:05 +0000 UTC``)."""
    try:
        t = _dt.datetime.fromisoformat(ts).astimezone(_dt.UTC)
    except ValueError:
        return ts
    return t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def recheck_deletion_timestamp(
        get_object: Callable[[], Awaitable[Mapping[str, Any]]]) -> CanAdopt:
    """A ``can_adopt`` that refuses if the live object (``await get_object()``) is being deleted.

    ``get_object`` should read the controller from the API server, not from
    the cache: the point is to see a deletion the cache has not shown yet.
    """
    async def can_adopt() -> None:
        try:
            obj = await get_object()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise RuntimeError(f"can't recheck DeletionTimestamp: {exc}") from exc
        meta = meta_of(obj)
        ts = meta.get("deletionTimestamp")
        if ts:
            raise RuntimeError(f"{meta.get('namespace', '')}/{meta.get('name', '')} "
                               f"has just been deleted at {_go_time(str(ts))}")
    return can_adopt


def recheck_live_controller(client: Client, resource: ResourceRef,
                            controller: Mapping[str, Any], kind: str) -> CanAdopt:
    """The usual ``can_adopt``: read ``controller`` (a ``kind`` served as ``resource``)
    from the API server, refuse if it is another object under the same name (a
    deleted and recreated controller) or if it is being deleted
    (:func:`recheck_deletion_timestamp`)."""
    meta = meta_of(controller)
    ns, name, uid = str(meta.get("namespace") or ""), str(meta.get("name")), meta.get("uid")

    async def get_fresh() -> Mapping[str, Any]:
        # An uncached read: the cache may not show a deletion yet.
        fresh: Mapping[str, Any] = await client.get(resource, name, ns)
        fresh_uid = meta_of(fresh).get("uid")
        if fresh_uid != uid:
            raise RuntimeError(f"original {kind} {ns}/{name} is gone: got uid {fresh_uid}, "
                               f"wanted {uid}")
        return fresh

    return recheck_deletion_timestamp(get_fresh)


def owner_ref_controller_patch(controller: Mapping[str, Any], api_version: str, kind: str,
                               uid: str, finalizers: Sequence[str] = ()) -> dict[str, Any]:
    """The strategic merge patch that makes ``controller`` the controller of the object ``uid``.

    ownerReferences merge on ``uid``, so other owners are kept; the API
    server rejects the patch if another reference already has
    ``controller: true``. ``finalizers`` (the Job controller's tracking
    finalizer) are added in the same write.
    """
    patch_meta: dict[str, Any] = {
        "ownerReferences": [new_controller_ref(controller, api_version, kind)],
        "uid": uid,
    }
    if finalizers:
        patch_meta["finalizers"] = list(finalizers)
    return {"metadata": patch_meta}


def delete_owner_ref_strategic_merge_patch(dependent_uid: str, owner_uids: Sequence[str],
                                           finalizers: Sequence[str] = ()) -> dict[str, Any]:
    """The strategic merge patch removing the references to ``owner_uids`` (and ``finalizers``).

    Upstream GenerateDeleteOwnerRefStrategicMergeBytes: one
    ``{"$patch": "delete", "uid": ...}`` per owner, and
    ``$deleteFromPrimitiveList/finalizers`` for the finalizers.
    """
    patch_meta: dict[str, Any] = {
        "uid": dependent_uid,
        "ownerReferences": [{"$patch": "delete", "uid": u} for u in owner_uids],
    }
    if finalizers:
        patch_meta["$deleteFromPrimitiveList/finalizers"] = list(finalizers)
    return {"metadata": patch_meta}


class BaseControllerRefManager:
    """The claim algorithm shared by every kind of dependent (upstream BaseControllerRefManager)."""

    controller_api_version: str
    controller_kind: str

    def __init__(self, controller: Mapping[str, Any], selector: LabelSelector,
                 can_adopt: CanAdopt | None) -> None:
        self.controller = controller
        self.selector = selector
        self._can_adopt_func = can_adopt
        self._can_adopt_done = False
        self._can_adopt_err: BaseException | None = None
        # Claims may run concurrently on one manager: the check still runs once.
        self._can_adopt_lock = asyncio.Lock()

    async def can_adopt(self) -> None:
        """Run ``can_adopt`` the first time only; raise its error on this and every later call."""
        if not self._can_adopt_done:
            async with self._can_adopt_lock:
                if not self._can_adopt_done:
                    if self._can_adopt_func is not None:
                        try:
                            await self._can_adopt_func()
                        except asyncio.CancelledError:
                            raise
                        except Exception as exc:  # noqa: BLE001 - kept, raised to every adopt
                            self._can_adopt_err = exc
                    self._can_adopt_done = True
        if self._can_adopt_err is not None:
            raise self._can_adopt_err

    async def claim_object(self, obj: Mapping[str, Any],
                           match: Callable[[Mapping[str, Any]], bool],
                           adopt: Callable[[Mapping[str, Any]], Awaitable[None]],
                           release: Callable[[Mapping[str, Any]], Awaitable[None]]) -> bool:
        """Whether we own ``obj`` after reconciling it (see the module table); raises on failure."""
        cmeta = meta_of(self.controller)
        ref = get_controller_of(obj)
        if ref is not None:
            if ref.get("uid") != cmeta.get("uid"):
                return False  # controlled by someone else
            if match(obj):
                # Already ours: claimed even while we are being deleted,
                # since keeping it takes no write.
                return True
            if cmeta.get("deletionTimestamp"):
                return False
            try:
                await release(obj)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if is_not_found(exc):
                    return False  # gone meanwhile
                raise
            return False
        # An orphan.
        if cmeta.get("deletionTimestamp") or not match(obj):
            return False
        ometa = meta_of(obj)
        if ometa.get("deletionTimestamp"):
            return False
        ns = cmeta.get("namespace")
        if ns and ns != ometa.get("namespace"):
            return False  # an owner can only own objects of its own namespace
        try:
            await adopt(obj)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_not_found(exc):
                return False
            raise
        return True

    def labels_match(self, obj: Mapping[str, Any]) -> bool:
        """Our selector matches ``obj``'s labels."""
        return self.selector.matches(labels_of(obj))

    async def adopt_object(self, what: str, obj: Mapping[str, Any], send: SendPatch,
                           finalizers: Sequence[str] = ()) -> None:
        """Once ``can_adopt`` has said yes, patch ``obj`` (a ``what``: "Pod" ...) with
        our controller reference (and ``finalizers``) through ``send``."""
        meta = meta_of(obj)
        try:
            await self.can_adopt()
        except Exception as exc:
            raise RuntimeError(f"can't adopt {what} {meta.get('namespace', '')}/"
                               f"{meta.get('name', '')} ({meta.get('uid', '')}): {exc}") from exc
        patch = owner_ref_controller_patch(self.controller, self.controller_api_version,
                                           self.controller_kind, str(meta.get("uid", "")),
                                           finalizers)
        await send(str(meta.get("namespace") or ""), str(meta.get("name")), patch)

    async def release_object(self, obj: Mapping[str, Any], send: SendPatch,
                             finalizers: Sequence[str] = ()) -> None:
        """Patch ``obj`` through ``send`` to remove our reference (and ``finalizers``).

        NotFound (gone) and Invalid (no owner references left, or recreated under
        another UID) are not errors: either way it is not ours any more."""
        meta = meta_of(obj)
        patch = delete_owner_ref_strategic_merge_patch(
            str(meta.get("uid", "")), [str(meta_of(self.controller).get("uid", ""))],
            finalizers)
        try:
            await send(str(meta.get("namespace") or ""), str(meta.get("name")), patch)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_not_found(exc) or is_invalid(exc):
                return
            raise

    async def _claim_all(self, objs: Sequence[Mapping[str, Any]],
                         match: Callable[[Mapping[str, Any]], bool],
                         adopt: Callable[[Mapping[str, Any]], Awaitable[None]],
                         release: Callable[[Mapping[str, Any]], Awaitable[None]],
                         ) -> list[Mapping[str, Any]]:
        claimed: list[Mapping[str, Any]] = []
        errors: list[BaseException] = []
        uid = meta_of(self.controller).get("uid")
        for obj in objs:
            # claim_object's first branch without its coroutine: an object already
            # controlled (ours and matching: claimed; someone else's: skipped) needs no
            # write, and that is nearly every object of nearly every claim.
            ref = get_controller_of(obj)
            if ref is not None:
                if ref.get("uid") != uid:
                    continue
                if match(obj):
                    claimed.append(obj)
                    continue
                obj_match = _no_match  # answered: ours, not matching (released below)
            elif not match(obj):
                # An orphan we do not match: claim_object would ignore it (no write). Most
                # orphans of a namespace match none of its owners, and every owner's sync
                # looks at all of them: no coroutine for those.
                continue
            else:
                obj_match = _match  # answered: an orphan we match (adopted below)
            try:
                if await self.claim_object(obj, obj_match, adopt, release):
                    claimed.append(obj)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - aggregated, raised after the rest
                errors.append(exc)
        if errors:
            raise AggregateError(errors)
        return claimed


def _no_match(obj: Mapping[str, Any]) -> bool:
    return False


def _match(obj: Mapping[str, Any]) -> bool:
    return True


class PodControllerRefManager(BaseControllerRefManager):
    """Claims pods for a controller (upstream PodControllerRefManager).

    ``finalizers``: added with the controller reference on adoption and
    removed with it on release (the Job controller's
    ``batch.kubernetes.io/job-tracking``).
    """

    def __init__(self, pod_control: PodControl, controller: Mapping[str, Any],
                 selector: LabelSelector, controller_api_version: str, controller_kind: str,
                 can_adopt: CanAdopt, finalizers: Sequence[str] = ()) -> None:
        super().__init__(controller, selector, can_adopt)
        self.pod_control = pod_control
        self.controller_api_version = controller_api_version
        self.controller_kind = controller_kind
        self.finalizers = tuple(finalizers)

    async def claim_pods(self, pods: Sequence[Mapping[str, Any]],
                         *filters: Callable[[Mapping[str, Any]], bool]
                         ) -> list[Mapping[str, Any]]:
        """The pods we own after adopting and releasing; raises AggregateError after trying all.

        A pod matches when the selector matches its labels and every filter
        returns True (the selector is checked first, so filters only see
        candidates).
        """
        def match(pod: Mapping[str, Any]) -> bool:
            return self.labels_match(pod) and all(f(pod) for f in filters)

        return await self._claim_all(pods, match if filters else self.labels_match,
                                     self.adopt_pod, self.release_pod)

    async def adopt_pod(self, pod: Mapping[str, Any]) -> None:
        """Patch the pod to add our controller reference (after ``can_adopt``)."""
        await self.adopt_object("Pod", pod, self.pod_control.patch_pod, self.finalizers)

    async def release_pod(self, pod: Mapping[str, Any]) -> None:
        """Patch the pod to remove our reference; NotFound and Invalid are not errors."""
        await self.release_object(pod, self.pod_control.patch_pod, self.finalizers)


class ReplicaSetControllerRefManager(BaseControllerRefManager):
    """Claims ReplicaSets for a Deployment (upstream ReplicaSetControllerRefManager)."""

    def __init__(self, rs_control: RSControl, controller: Mapping[str, Any],
                 selector: LabelSelector, controller_api_version: str, controller_kind: str,
                 can_adopt: CanAdopt) -> None:
        super().__init__(controller, selector, can_adopt)
        self.rs_control = rs_control
        self.controller_api_version = controller_api_version
        self.controller_kind = controller_kind

    async def claim_replica_sets(self, sets: Sequence[Mapping[str, Any]]
                                 ) -> list[Mapping[str, Any]]:
        """The ReplicaSets we own after adopting and releasing; raises AggregateError after trying all."""
        return await self._claim_all(sets, self.labels_match, self.adopt_replica_set,
                                     self.release_replica_set)

    async def adopt_replica_set(self, rs: Mapping[str, Any]) -> None:
        """Patch the ReplicaSet to add our controller reference (after ``can_adopt``)."""
        await self.adopt_object("ReplicaSet", rs, self.rs_control.patch_replica_set)

    async def release_replica_set(self, rs: Mapping[str, Any]) -> None:
        """Patch the ReplicaSet to remove our reference; NotFound and Invalid are not errors."""
        await self.release_object(rs, self.rs_control.patch_replica_set)
