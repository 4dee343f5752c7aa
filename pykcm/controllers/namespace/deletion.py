"""The namespaced resources deleter: empties a terminating namespace, then finalizes it.

kube-controller-manager pkg/controller/namespace/deletion
(namespaced_resources_deleter.go, status_condition_utils.go).

Data flow, for one namespace with a deletionTimestamp (``delete``)::

    GET the namespace ── gone, or not being deleted ──► done
        │ phase Terminating (status write, if the server did not set it)
        ▼
    discovery: every namespaced resource (preferred version) supporting delete,
        │      custom resources included
        ▼
    pods first (OrderedNamespaceDeletion); while pods remain, nothing else is deleted
        ▼
    per resource: DELETE the collection (propagationPolicy Background), or LIST and
        │         DELETE each item when deletecollection is not supported; LIST again:
        │         what remains, and the finalizers holding it
        ▼
    status.conditions: NamespaceDeletionDiscoveryFailure, ...GroupVersionParsingFailure,
        │              ...ContentFailure, NamespaceContentRemaining,
        │              NamespaceFinalizersRemaining (written when they change)
        ▼
    content remains ──► ResourcesRemainingError(estimate seconds): the controller
        │               requeues after estimate/2 + 1 s
        ▼ nothing remains
    PUT namespaces/<name>/finalize without the "kubernetes" token; the API server
    removes the namespace once spec.finalizers is empty

Estimates: a pod's terminationGracePeriodSeconds (while that much time has not
passed since the namespace's deletion), else 15 s for content held by
finalizers; content remaining without finalizers is an error ("unexpected
items still remain").

The conditions' reasons and messages are upstream's, word for word.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK
from pykcm.api.resources import ResourceInfo, preferred_resources
from pykcm.api.timestamps import format_time, parse_time
from pykcm.client import (
    Client,
    is_conflict,
    is_method_not_supported,
    is_not_found,
)

__all__ = [
    "CONDITION_TYPES",
    "FINALIZER_ESTIMATE_SECONDS",
    "AllGVRDeletionMetadata",
    "GVRDeletionMetadata",
    "NamespaceConditionUpdater",
    "NamespacedResourcesDeleter",
    "ResourcesRemainingError",
    "discover_namespaced_resources",
    "gvr_string",
    "update_conditions",
]

log = logging.getLogger("pykcm.controllers.namespace")

FINALIZER_ESTIMATE_SECONDS: Final = 15
"""The default wait for content held by finalizers (seconds)."""

NAMESPACE_DELETION_DISCOVERY_FAILURE: Final = "NamespaceDeletionDiscoveryFailure"
NAMESPACE_DELETION_GV_PARSING_FAILURE: Final = "NamespaceDeletionGroupVersionParsingFailure"
NAMESPACE_DELETION_CONTENT_FAILURE: Final = "NamespaceDeletionContentFailure"
NAMESPACE_CONTENT_REMAINING: Final = "NamespaceContentRemaining"
NAMESPACE_FINALIZERS_REMAINING: Final = "NamespaceFinalizersRemaining"

CONDITION_TYPES: Final = (
    NAMESPACE_DELETION_DISCOVERY_FAILURE,
    NAMESPACE_DELETION_GV_PARSING_FAILURE,
    NAMESPACE_DELETION_CONTENT_FAILURE,
    NAMESPACE_CONTENT_REMAINING,
    NAMESPACE_FINALIZERS_REMAINING,
)
"""The namespace conditions the deleter maintains, in the order it writes them."""

_OK_MESSAGES: Final = {
    NAMESPACE_DELETION_DISCOVERY_FAILURE: "All resources successfully discovered",
    NAMESPACE_DELETION_GV_PARSING_FAILURE: "All legacy kube types successfully parsed",
    NAMESPACE_DELETION_CONTENT_FAILURE:
        "All content successfully deleted, may be waiting on finalization",
    NAMESPACE_CONTENT_REMAINING: "All content successfully removed",
    NAMESPACE_FINALIZERS_REMAINING: "All content successfully removed",
}
_OK_REASONS: Final = {
    NAMESPACE_DELETION_DISCOVERY_FAILURE: "ResourcesDiscovered",
    NAMESPACE_DELETION_GV_PARSING_FAILURE: "ParsedGroupVersions",
    NAMESPACE_DELETION_CONTENT_FAILURE: "ContentDeleted",
    NAMESPACE_CONTENT_REMAINING: "ContentRemoved",
    NAMESPACE_FINALIZERS_REMAINING: "ContentRemoved",
}

Clock = Callable[[], float]


def gvr_string(info: ResourceInfo) -> str:
    """A GroupVersionResource as Go prints it: ``apps/v1, Resource=deployments``."""
    return f"{info.group}/{info.version}, Resource={info.plural}"


class ResourcesRemainingError(Exception):
    """Content is still being removed; try again in about ``estimate`` seconds."""

    def __init__(self, estimate: int) -> None:
        super().__init__(f"some content remains in the namespace, estimate {estimate} "
                         "seconds before it is removed")
        self.estimate = estimate


class AggregateError(Exception):
    """Several errors, reported together (apimachinery's utilerrors aggregate)."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors
        msgs = [str(e) for e in errors]
        super().__init__(msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]")


@dataclass(slots=True)
class GVRDeletionMetadata:
    """What deleting one resource's content left behind."""

    # How much longer to wait; 0 means no estimate, not "all gone".
    finalizer_estimate_seconds: int = 0
    num_remaining: int = 0
    finalizers_to_num_remaining: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class AllGVRDeletionMetadata:
    """What remains in the namespace, by resource and by finalizer."""

    gvr_to_num_remaining: dict[ResourceInfo, int] = field(default_factory=dict)
    finalizers_to_num_remaining: dict[str, int] = field(default_factory=dict)


def _condition(type_: str, status: str, reason: str, message: str, now: float
               ) -> dict[str, Any]:
    return {"type": type_, "status": status, "lastTransitionTime": format_time(now),
            "reason": reason, "message": message}


class NamespaceConditionUpdater:
    """Turns the deleter's errors and leftovers into the namespace's status conditions."""

    def __init__(self, clock: Clock = REAL_CLOCK.now) -> None:
        self._clock = clock
        self.new_conditions: list[dict[str, Any]] = []
        self.delete_content_errors: list[BaseException] = []

    def process_discover_resources_err(self, err: BaseException) -> None:
        self.new_conditions.append(_condition(
            NAMESPACE_DELETION_DISCOVERY_FAILURE, "True", "DiscoveryFailed", str(err),
            self._clock()))

    def process_group_version_err(self, err: BaseException) -> None:
        self.new_conditions.append(_condition(
            NAMESPACE_DELETION_GV_PARSING_FAILURE, "True", "GroupVersionParsingFailed",
            str(err), self._clock()))

    def process_delete_content_err(self, err: BaseException) -> None:
        self.delete_content_errors.append(err)

    def process_content_totals(self, totals: AllGVRDeletionMetadata) -> None:
        if totals.gvr_to_num_remaining:
            remaining = sorted(f"{info.plural}.{info.group} has {n} resource instances"
                               for info, n in totals.gvr_to_num_remaining.items() if n)
            self.new_conditions.append(_condition(
                NAMESPACE_CONTENT_REMAINING, "True", "SomeResourcesRemain",
                "Some resources are remaining: " + ", ".join(remaining), self._clock()))
        if totals.finalizers_to_num_remaining:
            by_finalizer = sorted(f"{f} in {n} resource instances"
                                  for f, n in totals.finalizers_to_num_remaining.items() if n)
            self.new_conditions.append(_condition(
                NAMESPACE_FINALIZERS_REMAINING, "True", "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: "
                + ", ".join(by_finalizer), self._clock()))

    def update(self, namespace: dict[str, Any]) -> bool:
        """Write the conditions into ``namespace["status"]``; whether anything changed."""
        if _get_condition(self.new_conditions, NAMESPACE_DELETION_CONTENT_FAILURE) is None \
                and self.delete_content_errors:
            msgs = sorted(str(e) for e in self.delete_content_errors)
            self.new_conditions.append(_condition(
                NAMESPACE_DELETION_CONTENT_FAILURE, "True", "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(msgs)} remaining: "
                + ", ".join(msgs), self._clock()))
        status = namespace.setdefault("status", {})
        return update_conditions(status, self.new_conditions, self._clock())


def _get_condition(conditions: Iterable[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    for c in conditions:
        if c.get("type") == type_:
            return c
    return None


def update_conditions(status: dict[str, Any], new_conditions: list[dict[str, Any]],
                      now: float) -> bool:
    """Set every maintained condition type: the new one, or its "ok" variant.

    lastTransitionTime moves only when a condition's status changes.
    """
    conditions: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
    changed = False
    for type_ in CONDITION_TYPES:
        new = _get_condition(new_conditions, type_) or _condition(
            type_, "False", _OK_REASONS[type_], _OK_MESSAGES[type_], now)
        old = _get_condition(conditions, type_)
        if old is None:
            conditions.append(dict(new))
            changed = True
        elif (old.get("status"), old.get("message"), old.get("reason")) != (
                new["status"], new["message"], new["reason"]):
            if old.get("status") != new["status"]:
                old["lastTransitionTime"] = format_time(now)
            old.update(type=type_, status=new["status"], reason=new["reason"],
                       message=new["message"])
            changed = True
    if changed:
        status["conditions"] = conditions
    return changed


async def discover_namespaced_resources(client: Client) -> list[ResourceInfo]:
    """Every namespaced resource at its group's preferred version (fresh discovery).

    ServerPreferredNamespacedResources: discovery lists each group's
    preferred version first; a resource only served at another version is
    kept at that version.
    """
    resources = await client.discovery.refresh()
    return [r for r in preferred_resources(resources) if r.namespaced]


_PODS: Final = ("", "pods")


class NamespacedResourcesDeleter:
    """Deletes all content of a terminating namespace, then removes its finalizer token.

    ``discover_resources`` returns the namespaced resources to empty
    (default: :func:`discover_namespaced_resources` on ``client``);
    ``ordered_deletion`` deletes pods before anything else, as upstream's
    OrderedNamespaceDeletion does by default.
    """

    def __init__(self, client: Client, *, finalizer_token: str = "kubernetes",
                 discover_resources: Callable[[], Awaitable[list[ResourceInfo]]] | None = None,
                 ordered_deletion: bool = True, clock: Clock = REAL_CLOCK.now) -> None:
        self.client = client
        self.finalizer_token = finalizer_token
        self._discover = (discover_resources if discover_resources is not None
                          else lambda: discover_namespaced_resources(client))
        self.ordered_deletion = ordered_deletion
        self._clock = clock
        # (operation, group, version, plural) the server does not support.
        self._not_supported: set[tuple[str, str, str, str]] = set()

    # -- the namespace ----------------------------------------------------------------

    async def delete(self, ns_name: str) -> None:
        """Empty and finalize ``ns_name`` if it is being deleted.

        Raises ResourcesRemainingError while content remains; other errors
        when a step failed. The caller retries until it returns.
        """
        try:
            namespace = await self.client.get("namespaces", ns_name)
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        if not meta_of(namespace).get("deletionTimestamp"):
            return
        log.debug("namespace controller - syncNamespace - namespace: %s, finalizerToken: %s",
                  ns_name, self.finalizer_token)
        try:
            namespace = await self._retry_on_conflict(namespace, self._update_namespace_status)
        except Exception as exc:
            if is_not_found(exc):
                return
            raise
        if not meta_of(namespace).get("deletionTimestamp"):
            return
        if not (namespace.get("spec") or {}).get("finalizers"):
            return  # finalized already: the API server removes it
        estimate = await self.delete_all_content(namespace)
        if estimate > 0:
            raise ResourcesRemainingError(estimate)
        try:
            await self._retry_on_conflict(namespace, self._finalize_namespace)
        except Exception as exc:
            # Two controllers sharing a token: the other finished first.
            if is_not_found(exc):
                return
            raise

    async def _retry_on_conflict(
            self, namespace: dict[str, Any],
            fn: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        latest = namespace
        while True:
            try:
                return await fn(latest)
            except Exception as exc:
                if not is_conflict(exc):
                    raise
            prev_uid = meta_of(latest).get("uid")
            latest = await self.client.get("namespaces", str(meta_of(latest).get("name")))
            if meta_of(latest).get("uid") != prev_uid:
                raise RuntimeError("namespace uid has changed across retries")

    async def _update_namespace_status(self, namespace: dict[str, Any]) -> dict[str, Any]:
        if not meta_of(namespace).get("deletionTimestamp") or \
                (namespace.get("status") or {}).get("phase") == "Terminating":
            return namespace
        new = dict(namespace)
        new["status"] = dict(namespace.get("status") or {}, phase="Terminating")
        return await self.client.update_status("namespaces", new)

    async def _finalize_namespace(self, namespace: dict[str, Any]) -> dict[str, Any]:
        finalizers = sorted({f for f in (namespace.get("spec") or {}).get("finalizers") or []
                             if f != self.finalizer_token})
        new = dict(namespace)
        new["spec"] = dict(namespace.get("spec") or {}, finalizers=finalizers)
        try:
            return await self.client.finalize_namespace(new)
        except Exception as exc:
            if is_not_found(exc):
                return namespace  # removed already: good
            raise

    # -- content ----------------------------------------------------------------------

    def _supported(self, op: str, info: ResourceInfo) -> bool:
        return (op, info.group, info.version, info.plural) not in self._not_supported

    def _note_verbs(self, resources: Iterable[ResourceInfo]) -> None:
        for r in resources:
            for op in ("list", "deletecollection"):
                if op not in r.verbs:
                    self._not_supported.add((op, r.group, r.version, r.plural))

    async def delete_collection(self, info: ResourceInfo, namespace: str) -> bool:
        """DELETE the whole collection; False if the resource does not support it."""
        if not self._supported("deletecollection", info):
            return False
        try:
            # Background, so no orphan finalizer gets in the way: the namespace
            # controller itself makes sure everything goes.
            await self.client.delete_collection(info, namespace,
                                                propagation_policy="Background")
        except Exception as exc:
            if is_method_not_supported(exc) or is_not_found(exc):
                return False
            raise
        return True

    async def list_collection(self, info: ResourceInfo, namespace: str
                              ) -> list[dict[str, Any]] | None:
        """The items of the resource in the namespace; None if it cannot be listed."""
        if not self._supported("list", info):
            return None
        try:
            lst = await self.client.list_all(info, namespace)
        except Exception as exc:
            if is_method_not_supported(exc) or is_not_found(exc):
                return None
            raise
        return list(lst.get("items") or [])

    async def delete_each_item(self, info: ResourceInfo, namespace: str) -> None:
        items = await self.list_collection(info, namespace)
        if items is None:
            return
        for item in items:
            try:
                await self.client.delete(info, str(meta_of(item).get("name")), namespace,
                                         propagation_policy="Background")
            except Exception as exc:
                if not (is_not_found(exc) or is_method_not_supported(exc)):
                    raise

    async def estimate_graceful_termination(self, info: ResourceInfo, namespace: str,
                                            deleted_at: float) -> int:
        estimate = 0
        if (info.group, info.plural) == _PODS:
            estimate = await self.estimate_graceful_termination_for_pods(namespace)
        # Past the estimate since the namespace's deletion: no more waiting for it.
        if self._clock() - deleted_at >= estimate:
            return 0
        return estimate

    async def estimate_graceful_termination_for_pods(self, namespace: str) -> int:
        pods = await self.client.list_all("pods", namespace)
        estimate = 0
        for pod in pods.get("items") or []:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            if grace is not None and int(grace) > estimate:
                estimate = int(grace)
        return estimate

    async def delete_all_content_for_resource(
            self, info: ResourceInfo, namespace: str, deleted_at: float
    ) -> tuple[GVRDeletionMetadata, BaseException | None]:
        """Delete one resource's content; (what remains, the error if any)."""
        try:
            estimate = await self.estimate_graceful_termination(info, namespace, deleted_at)
        except Exception as exc:  # noqa: BLE001 - reported in the conditions
            return GVRDeletionMetadata(), exc
        try:
            if not await self.delete_collection(info, namespace):
                await self.delete_each_item(info, namespace)
            items = await self.list_collection(info, namespace)
        except Exception as exc:  # noqa: BLE001 - reported in the conditions
            return GVRDeletionMetadata(finalizer_estimate_seconds=estimate), exc
        if items is None:
            return GVRDeletionMetadata(finalizer_estimate_seconds=estimate), None
        if not items:
            return GVRDeletionMetadata(), None
        by_finalizer: dict[str, int] = {}
        for item in items:
            for f in meta_of(item).get("finalizers") or []:
                by_finalizer[f] = by_finalizer.get(f, 0) + 1
        if estimate:
            return GVRDeletionMetadata(estimate, len(items), by_finalizer), None
        if by_finalizer:
            # Finalizers are normal: give their controllers the default time.
            return GVRDeletionMetadata(FINALIZER_ESTIMATE_SECONDS, len(items),
                                       by_finalizer), None
        return GVRDeletionMetadata(estimate, len(items)), RuntimeError(
            f"unexpected items still remain in namespace: {namespace} for gvr: "
            f"{gvr_string(info)}")

    async def delete_all_content(self, namespace: dict[str, Any]) -> int:
        """Delete everything in the namespace; the estimate (s) before it is all gone.

        Always writes the conditions when they changed; raises the errors
        (aggregated) after doing all it could.
        """
        ns_meta = meta_of(namespace)
        name = str(ns_meta.get("name"))
        deleted_at = parse_time(ns_meta.get("deletionTimestamp")) or self._clock()
        errors: list[BaseException] = []
        updater = NamespaceConditionUpdater(self._clock)
        estimate = 0
        log.debug("namespace controller - deleteAllContent - namespace: %s", name)
        resources: list[ResourceInfo] = []
        try:
            resources = await self._discover()
        except Exception as exc:  # noqa: BLE001 - partial content is still deleted
            errors.append(exc)
            updater.process_discover_resources_err(exc)
        self._note_verbs(resources)
        deletable = [r for r in resources if "delete" in r.verbs]
        totals = AllGVRDeletionMetadata()

        def account(info: ResourceInfo, md: GVRDeletionMetadata,
                    err: BaseException | None) -> None:
            nonlocal estimate
            if err is not None:
                errors.append(err)
                updater.process_delete_content_err(err)
            estimate = max(estimate, md.finalizer_estimate_seconds)
            if md.num_remaining > 0:
                totals.gvr_to_num_remaining[info] = md.num_remaining
                for f, n in md.finalizers_to_num_remaining.items():
                    if n:
                        totals.finalizers_to_num_remaining[f] = \
                            totals.finalizers_to_num_remaining.get(f, 0) + n

        if self.ordered_deletion:
            pods = next((r for r in deletable if (r.group, r.plural) == _PODS), None)
            if pods is not None:
                md, err = await self.delete_all_content_for_resource(pods, name, deleted_at)
                account(pods, md, err)
                if totals.gvr_to_num_remaining.get(pods, 0) > 0:
                    # Pods go first: their workloads may still need the other content.
                    log.debug("namespace controller - pods still remain in %s, delaying "
                              "deletion of other resources", name)
                    updater.process_content_totals(totals)
                    await self._write_conditions(namespace, updater)
                    if errors:
                        raise AggregateError(errors)
                    return estimate
                deletable = [r for r in deletable if r is not pods]
        for info in deletable:
            md, err = await self.delete_all_content_for_resource(info, name, deleted_at)
            account(info, md, err)
        updater.process_content_totals(totals)
        # Always written when changed: a condition that was failing must read "ok" again.
        await self._write_conditions(namespace, updater)
        if errors:
            raise AggregateError(errors)
        log.debug("namespace controller - deleteAllContent - namespace: %s, estimate: %d",
                  name, estimate)
        return estimate

    async def _write_conditions(self, namespace: dict[str, Any],
                                updater: NamespaceConditionUpdater) -> None:
        new = dict(namespace)
        new["status"] = dict(namespace.get("status") or {})
        if not updater.update(new):
            return
        try:
            updated = await self.client.update_status("namespaces", new)
        except Exception as exc:  # noqa: BLE001 - the next sync writes them again
            log.warning("couldn't update status condition for namespace %r: %s",
                        meta_of(namespace).get("name"), exc)
            return
        # Later writes (finalize) need the new resourceVersion.
        namespace.clear()
        namespace.update(updated)
