"""EndpointSliceMirroringController: EndpointSlices mirroring custom Endpoints.

kube-controller-manager v1.36 ``pkg/controller/endpointslicemirroring`` (manager
name ``endpointslice-mirroring-controller``, client ``endpointslicemirroring-controller``,
label ``endpointslice.kubernetes.io/managed-by:
endpointslicemirroring-controller.k8s.io``, event source
``endpoint-slice-mirroring-controller``).

For a Service without a selector, users (or another controller) write its
Endpoints; this controller mirrors them into EndpointSlices, so consumers of
slices see them too.

Data flow::

    endpoints informer ── add / update / delete of mirrorable Endpoints (not labelled
                    endpointslice.kubernetes.io/skip-mirror=true, no leader-election
                    annotation) ─► enqueue ns/name
    service informer ── a selector-less Service added or deleted, or its selector
                    appearing/disappearing ─► enqueue ns/name
    endpointslice informer ── as the EndpointSlice controller, for this controller's
                    slices ─► enqueue after --mirroring-endpointslice-updates-batch-period
                                │
        Controller "endpoint_slice_mirroring" (1 s .. 100 s backoff, 10 qps / 100 burst,
                    15 retries, --mirroring-concurrent-service-endpoint-syncs)
                                ▼
    sync_endpoints(key)
        Endpoints gone, not mirrorable, Service gone or with a selector
            ─► delete the mirrored slices
        the cache misses our last writes ─► retry later
        repacked subsets ─► per (address type, ports): one slice of at most
        --mirroring-max-endpoints-per-subset addresses per subset (ready first),
        the Endpoints' labels and annotations (but the trigger time and
        last-applied ones), owned (controller) by the Endpoints
        an unchanged slice is left alone; a slice of a key no longer present is
        deleted (or reused for a new key of the same address type)

Events (Warning, on the Endpoints): InvalidIPAddress, TooManyAddressesToMirror.
Left out: upstream's ``endpoint_slice_mirroring_controller_*`` metrics.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.api.endpoints import (
    ENDPOINT_SLICES,
    ENDPOINTS_LAST_CHANGE_TRIGGER_TIME,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    LABEL_SKIP_MIRROR,
    LAST_APPLIED_CONFIG_ANNOTATION,
    LEADER_ELECTION_RECORD_ANNOTATION,
    parse_ip_sloppy,
    repack_subsets,
    sort_slice_ports,
)
from pykcm.api.labels import selector_from_set
from pykcm.cache.event_handlers import ResourceEventHandlerFuncs
from pykcm.cache.keys import DeletedFinalStateUnknown
from pykcm.client import Client
from pykcm.client.errors import ApiError, has_status_cause, is_not_found
from pykcm.controller.controller import Controller, ControllerHost
from pykcm.controller.event_recorder import EVENT_TYPE_WARNING, EventRecorder
from pykcm.controllers.endpointslice.reconciler import endpoint_slice_prefix, port_map_key
from pykcm.controllers.endpointslice.util import (
    EndpointSet,
    EndpointSliceTracker,
    endpoints_equal_beyond_hash,
)
from pykcm.informers.generic import GenericInformer
from pykcm.workqueue import BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter

__all__ = ["CONTROLLER_NAME", "EVENT_SOURCE", "EndpointSliceMirroringController",
           "address_to_endpoint"]

log = logging.getLogger("pykcm.controllers.endpointslicemirroring")

CONTROLLER_NAME: Final = "endpointslicemirroring-controller.k8s.io"
EVENT_SOURCE: Final = "endpoint-slice-mirroring-controller"
MAX_RETRIES: Final = 15
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"


def _unwrap(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


def _should_mirror(ep: Mapping[str, Any] | None) -> bool:
    if ep is None:
        return False
    m = meta_of(ep)
    if (m.get("labels") or {}).get(LABEL_SKIP_MIRROR) == "true":
        return False
    return LEADER_ELECTION_RECORD_ANNOTATION not in (m.get("annotations") or {})


def address_to_endpoint(address: Mapping[str, Any], ready: bool
                        ) -> tuple[dict[str, Any], str] | None:
    """(discovery Endpoint, address type) of an Endpoints address; None if no valid IP."""
    parsed = parse_ip_sloppy(str(address.get("ip") or ""))
    if parsed is None:
        return None
    ep: dict[str, Any] = {"addresses": [parsed[0]], "conditions": {"ready": ready}}
    if address.get("targetRef") is not None:
        ep["targetRef"] = copy.deepcopy(address["targetRef"])
    if address.get("nodeName") is not None:
        ep["nodeName"] = address["nodeName"]
    if address.get("hostname"):
        ep["hostname"] = address["hostname"]
    return ep, ("IPv6" if parsed[1] else "IPv4")


def _slice_ports(ports: list[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for p in ports or ():
        port: dict[str, Any] = {"name": p.get("name") or "", "port": p.get("port"),
                                "protocol": p.get("protocol") or ""}
        if p.get("appProtocol") is not None:
            port["appProtocol"] = p["appProtocol"]
        out.append(port)
    return sort_slice_ports(out)


MirrorKey = tuple[str, Any]


class EndpointSliceMirroringController(ControllerHost):
    """Mirrors the Endpoints of selector-less Services into EndpointSlices."""

    name = "endpoint_slice_mirroring"
    default_workers = 5

    def __init__(self, *, client: Client, endpoints_informer: GenericInformer,
                 endpointslice_informer: GenericInformer, service_informer: GenericInformer,
                 max_endpoints_per_subset: int = 1000, batch_period: float = 0.0,
                 recorder: EventRecorder | None = None, clock: Clock | None = None) -> None:
        self._time: Clock = clock if clock is not None else REAL_CLOCK
        self.client = client
        self.recorder = recorder
        self.max_per_subset = max_endpoints_per_subset
        self.batch_period = batch_period
        self.endpoints_lister = endpoints_informer.lister
        self.slice_lister = endpointslice_informer.lister
        self.service_lister = service_informer.lister
        self.tracker = EndpointSliceTracker()
        self.controller = Controller(
            "endpoint_slice_mirroring", self.sync_endpoints, max_retries=MAX_RETRIES,
            rate_limiter=MaxOfRateLimiter(ItemExponentialFailureRateLimiter(1.0, 100.0),
                                          BucketRateLimiter(10.0, 100, clock=self._time)),
            clock=self._time)
        c = self.controller

        def ep_add(ep: Any) -> None:
            if _should_mirror(ep):
                c.enqueue(ep)

        def ep_update(old: Any, new: Any) -> None:
            if _should_mirror(new) or _should_mirror(old):
                c.enqueue(new)

        def ep_delete(ep: Any) -> None:
            if _should_mirror(_unwrap(ep)):
                c.enqueue(ep)

        def svc_add(svc: Any) -> None:
            if not (svc.get("spec") or {}).get("selector"):
                c.enqueue(svc)

        def svc_update(old: Any, new: Any) -> None:
            if bool((old.get("spec") or {}).get("selector")) != bool(
                    (new.get("spec") or {}).get("selector")):
                c.enqueue(new)

        def svc_delete(svc: Any) -> None:
            if not (_unwrap(svc).get("spec") or {}).get("selector"):
                c.enqueue(svc)

        c.watch(endpoints_informer, ResourceEventHandlerFuncs(
            add_func=ep_add, update_func=ep_update, delete_func=ep_delete))
        c.watch(endpointslice_informer, ResourceEventHandlerFuncs(
            add_func=self._on_slice_add, update_func=self._on_slice_update,
            delete_func=self._on_slice_delete))
        c.watch(service_informer, ResourceEventHandlerFuncs(
            add_func=svc_add, update_func=svc_update, delete_func=svc_delete))

    # -- slice handlers ------------------------------------------------------------------

    @staticmethod
    def _managed(s: Mapping[str, Any]) -> bool:
        return bool((meta_of(s).get("labels") or {}).get(LABEL_MANAGED_BY) == CONTROLLER_NAME)

    def _queue_for(self, s: Mapping[str, Any]) -> None:
        m = meta_of(s)
        name = (m.get("labels") or {}).get(LABEL_SERVICE_NAME)
        if not name:
            log.warning("EndpointSlice %s/%s missing %s label", m.get("namespace"),
                        m.get("name"), LABEL_SERVICE_NAME)
            return
        self.controller.queue.add_after(f"{m.get('namespace')}/{name}", self.batch_period)

    def _on_slice_add(self, s: Any) -> None:
        if self._managed(s) and self.tracker.should_sync(s):
            self._queue_for(s)

    def _on_slice_update(self, old: Any, new: Any) -> None:
        if (meta_of(new).get("labels") or {}).get(LABEL_SERVICE_NAME) != \
                (meta_of(old).get("labels") or {}).get(LABEL_SERVICE_NAME):
            self._queue_for(new)
            self._queue_for(old)
            return
        if self._managed(old) != self._managed(new) or (
                self._managed(new) and self.tracker.should_sync(new)):
            self._queue_for(new)

    def _on_slice_delete(self, s: Any) -> None:
        s = _unwrap(s)
        if self._managed(s) and self.tracker.has(s) and not self.tracker.handle_deletion(s):
            self._queue_for(s)

    # -- sync ----------------------------------------------------------------------------

    def _mirrored(self, ns: str, name: str) -> list[Mapping[str, Any]]:
        return list(self.slice_lister.by_namespace(ns).list(selector_from_set(
            {LABEL_SERVICE_NAME: name, LABEL_MANAGED_BY: CONTROLLER_NAME})))

    async def _delete_mirrored(self, ns: str, name: str) -> None:
        self.tracker.delete_service(ns, name)
        slices = self._mirrored(ns, name)
        errors = []
        for s in slices:
            try:
                await self.client.delete(ENDPOINT_SLICES, str(meta_of(s).get("name")), ns)
            except ApiError as exc:
                errors.append(exc)
        if errors:
            raise RuntimeError(f"error(s) deleting {len(errors)}/{len(slices)} EndpointSlices "
                               f"for {ns}/{name} Endpoints, including: {errors[0]}")

    async def sync_endpoints(self, key: str) -> None:
        ns, _, name = key.rpartition("/")
        try:
            endpoints: Mapping[str, Any] = self.endpoints_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            await self._delete_mirrored(ns, name)
            return
        if not _should_mirror(endpoints):
            await self._delete_mirrored(ns, name)
            return
        try:
            svc: Mapping[str, Any] = self.service_lister.by_namespace(ns).get(name)
        except ApiError as exc:
            if not is_not_found(exc):
                raise
            await self._delete_mirrored(ns, name)
            return
        if (svc.get("spec") or {}).get("selector"):
            await self._delete_mirrored(ns, name)
            return
        slices = self._mirrored(ns, name)
        if self.tracker.stale_slices(ns, name, slices):
            raise RuntimeError("EndpointSlice informer cache is out of date")
        await self.reconcile(endpoints, slices)

    def _event(self, endpoints: Mapping[str, Any], reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event({**endpoints, "apiVersion": "v1", "kind": "Endpoints"},
                                EVENT_TYPE_WARNING, reason, message)

    async def reconcile(self, endpoints: Mapping[str, Any],
                        existing: list[Mapping[str, Any]]) -> None:
        """Upstream ``reconciler.reconcile``."""
        ports_by_key: dict[MirrorKey, list[dict[str, Any]]] = {}
        endpoints_by_key: dict[MirrorKey, EndpointSet] = {}
        invalid = skipped = 0
        for subset in repack_subsets(copy.deepcopy(list(endpoints.get("subsets") or ()))):
            ports = _slice_ports(subset.get("ports"))
            keys = {t: (t, port_map_key(ports)) for t in ("IPv4", "IPv6")}
            for k in keys.values():
                endpoints_by_key.setdefault(k, EndpointSet())
                ports_by_key[k] = ports
            total = len(subset.get("addresses") or ()) + len(subset.get("notReadyAddresses") or ())
            added = 0
            for field, ready in (("addresses", True), ("notReadyAddresses", False)):
                for address in subset.get(field) or ():
                    if added >= self.max_per_subset:
                        break
                    got = address_to_endpoint(address, ready)
                    if got is None:
                        invalid += 1
                        log.info("Address in Endpoints %s/%s is not a valid IP, it will not "
                                 "be mirrored to an EndpointSlice: %s",
                                 meta_of(endpoints).get("namespace"),
                                 meta_of(endpoints).get("name"), address.get("ip"))
                        continue
                    endpoints_by_key[keys[got[1]]].insert(got[0])
                    added += 1
            skipped += total - added
        if invalid:
            self._event(endpoints, "InvalidIPAddress",
                        f"Skipped {invalid} invalid IP addresses when mirroring to "
                        "EndpointSlices")
        if skipped > invalid:
            self._event(endpoints, "TooManyAddressesToMirror",
                        f"A max of {self.max_per_subset} addresses can be mirrored to "
                        f"EndpointSlices per Endpoints subset. {skipped} addresses were skipped")
        existing_by_key: dict[MirrorKey, list[Mapping[str, Any]]] = {}
        for s in existing:
            existing_by_key.setdefault((str(s.get("addressType")), port_map_key(s.get("ports"))),
                                       []).append(s)
        to_create: list[dict[str, Any]] = []
        to_update: list[dict[str, Any]] = []
        to_delete: list[Mapping[str, Any]] = []
        for key, desired in endpoints_by_key.items():
            c, u, d = self._reconcile_by_port_mapping(endpoints, existing_by_key.get(key, []),
                                                      desired, ports_by_key[key], key[0])
            to_create += c
            to_update += u
            to_delete += d
        for key, slices in existing_by_key.items():
            if key not in endpoints_by_key:
                to_delete += slices
        await self._finalize(endpoints, to_create, to_update, to_delete)

    def _reconcile_by_port_mapping(self, endpoints: Mapping[str, Any],
                                   existing: list[Mapping[str, Any]], desired: EndpointSet,
                                   ports: list[dict[str, Any]], address_type: str
                                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                              list[Mapping[str, Any]]]:
        if not len(desired):
            return [], [], list(existing)
        to_delete: list[Mapping[str, Any]] = []
        if existing:
            to_delete = list(existing[1:])
            first = existing[0]
            em = meta_of(endpoints)
            compare_annotations = {k: v for k, v in (em.get("annotations") or {}).items()
                                   if k not in (ENDPOINTS_LAST_CHANGE_TRIGGER_TIME,
                                                LAST_APPLIED_CONFIG_ANNOTATION)}
            compare_labels = {k: v for k, v in (meta_of(first).get("labels") or {}).items()
                              if k not in (LABEL_MANAGED_BY, LABEL_SERVICE_NAME)}
            if (not self._changes(first, desired)
                    and (em.get("labels") or {}) == compare_labels
                    and compare_annotations == (meta_of(first).get("annotations") or {})
                    and not self._needs_rebuild(endpoints, first)):
                if not self.tracker.has(first):
                    self.tracker.update(first)
                return [], [], to_delete
        name = str(meta_of(existing[0]).get("name")) if existing else ""
        new = self._new_slice(endpoints, copy.deepcopy(ports), address_type, name)
        while len(desired) and len(new["endpoints"]) < self.max_per_subset:
            new["endpoints"].append(desired.pop_any())
        if name:
            return [], [new], to_delete
        return [new], [], to_delete

    @staticmethod
    def _changes(existing: Mapping[str, Any], desired: EndpointSet) -> bool:
        """Any endpoint added, updated or removed (upstream totalChanges)."""
        matches = 0
        for ep in existing.get("endpoints") or ():
            got = desired.get(ep)
            if got is None:
                return True
            matches += 1
            if not endpoints_equal_beyond_hash(got, ep):
                return True
        return len(desired) - matches != 0

    @staticmethod
    def _needs_rebuild(endpoints: Mapping[str, Any], s: Mapping[str, Any]) -> bool:
        em = meta_of(endpoints)
        return any(o.get("kind") == "Endpoints" and o.get("name") == em.get("name")
                   and o.get("uid") != em.get("uid")
                   for o in meta_of(s).get("ownerReferences") or ())

    @staticmethod
    def _new_slice(endpoints: Mapping[str, Any], ports: list[dict[str, Any]],
                   address_type: str, name: str) -> dict[str, Any]:
        em = meta_of(endpoints)
        labels = dict(em.get("labels") or {})
        labels[LABEL_SERVICE_NAME] = str(em.get("name"))
        labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
        annotations = {k: v for k, v in (em.get("annotations") or {}).items()
                       if k not in (ENDPOINTS_LAST_CHANGE_TRIGGER_TIME,
                                    LAST_APPLIED_CONFIG_ANNOTATION)}
        meta: dict[str, Any] = {
            "namespace": em.get("namespace"), "labels": labels,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Endpoints", "name": em.get("name"),
                                 "uid": em.get("uid"), "controller": True,
                                 "blockOwnerDeletion": True}]}
        if annotations:
            meta["annotations"] = annotations
        if name:
            meta["name"] = name
        else:
            meta["generateName"] = endpoint_slice_prefix(str(em.get("name")))
        return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": meta,
                "addressType": address_type, "ports": ports, "endpoints": []}

    async def _finalize(self, endpoints: Mapping[str, Any], to_create: list[dict[str, Any]],
                        to_update: list[dict[str, Any]], to_delete: list[Mapping[str, Any]]
                        ) -> None:
        # recycle: a slice to create of an address type takes the name of one to delete
        for address_type in ("IPv4", "IPv6"):
            creates = [s for s in to_create if s["addressType"] == address_type]
            deletes = [s for s in to_delete if s.get("addressType") == address_type]
            for new, old in zip(creates, deletes, strict=False):
                to_create.remove(new)
                to_delete.remove(old)
                new["metadata"]["name"] = meta_of(old).get("name")  # generateName kept, as upstream
                to_update.append(new)
        em = meta_of(endpoints)
        ns = str(em.get("namespace"))
        what = f"Endpoints {ns}/{em.get('name')}"
        if not em.get("deletionTimestamp"):
            for s in to_create:
                try:
                    created = await self.client.create(ENDPOINT_SLICES, s, ns)
                except ApiError as exc:
                    if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                        return
                    raise RuntimeError(f"failed to create EndpointSlice for {what}: {exc}"
                                       ) from exc
                self.tracker.update(created)
        for s in to_update:
            try:
                updated = await self.client.update(ENDPOINT_SLICES, s, ns)
            except ApiError as exc:
                raise RuntimeError(f"failed to update {meta_of(s).get('name')} EndpointSlice for "
                                   f"{what}: {exc}") from exc
            self.tracker.update(updated)
        for old in to_delete:
            try:
                await self.client.delete(ENDPOINT_SLICES, str(meta_of(old).get("name")), ns)
            except ApiError as exc:
                raise RuntimeError(f"failed to delete {meta_of(old).get('name')} EndpointSlice "
                                   f"for {what}: {exc}") from exc
            self.tracker.expect_deletion(old)
