"""Reconciler: a Service's pods → its EndpointSlices, with as few writes as possible.

kube-controller-manager v1.36 ``k8s.io/endpointslice`` (``reconciler.go``, ``utils.go``,
``trafficdist``).

Data flow of :meth:`Reconciler.reconcile`::

    existing slices (this controller's, not being deleted) by address type;
    types the Service no longer has ─► delete
    per address type (the Service's ipFamilies; else its ClusterIP's; else both):
      desired endpoints by port mapping (the pod's resolved ports, sorted as upstream):
        a pod with an IP of the type, not terminal (terminating included:
        conditions ready = publishNotReadyAddresses or (serving and not terminating)),
        zone from its Node, hostname when the Service is its subdomain
      per port mapping (reconcile_by_port_mapping):
        1. existing slices keep the endpoints still desired (replaced by the desired
           version); a slice left empty is deleted, a changed one updated, one whose
           labels no longer mirror the Service's is updated too
        2. what is left fills the slices being updated, fullest first, up to max
        3. then one unchanged slice that can take it all, else new slices
      port mappings no longer desired ─► delete their slices
      nothing left at all ─► one placeholder slice without ports or endpoints
      hints: trafficDistribution PreferClose / PreferSameZone (zone) or PreferSameNode
      (node and zone) on ready endpoints, else none
    finalize: a create reuses (updates) a slice about to be deleted; creates (not while
    the Service is being deleted), updates, deletes; the tracker records each write

New slices: ``generateName`` ``<service>-``, owned (controller) by the Service, labels
= the Service's (but the reserved ones) + ``kubernetes.io/service-name`` +
``endpointslice.kubernetes.io/managed-by`` (+ ``service.kubernetes.io/headless``),
the last-change-trigger-time annotation.

Deviation: topology-aware hints (the ``service.kubernetes.io/topology-mode: Auto``
annotation, upstream's TopologyCache allocating endpoints to zones by node CPU)
are not computed: such Services get no hints, as when upstream finds too
little node information.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.endpoints import (
    ENDPOINT_SLICES,
    ENDPOINTS_LAST_CHANGE_TRIGGER_TIME,
    IS_HEADLESS_SERVICE,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    LABEL_TOPOLOGY_ZONE,
    PortNotFound,
    find_port,
    is_service_ip_set,
    parse_ip_sloppy,
    should_pod_be_in_endpoints,
    should_set_hostname,
    sort_slice_ports,
)
from pykcm.api.pod_util import is_pod_ready
from pykcm.api.timestamps import format_rfc3339_nano
from pykcm.api.validation import name_is_dns_subdomain
from pykcm.cache.listers import GenericLister
from pykcm.client import Client
from pykcm.client.errors import ApiError, has_status_cause, is_not_found
from pykcm.controllers.endpointslice.util import (
    EndpointSet,
    EndpointSliceTracker,
    endpoints_equal_beyond_hash,
)

__all__ = [
    "ADDRESS_TYPE_IPV4",
    "ADDRESS_TYPE_IPV6",
    "Reconciler",
    "address_types_for_service",
    "endpoint_slice_prefix",
    "pod_to_endpoint",
    "port_map_key",
]

log = logging.getLogger("pykcm.controllers.endpointslice")

ADDRESS_TYPE_IPV4: Final = "IPv4"
ADDRESS_TYPE_IPV6: Final = "IPv6"
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"
TOPOLOGY_MODE_ANNOTATION: Final = "service.kubernetes.io/topology-mode"
DEPRECATED_TOPOLOGY_HINTS_ANNOTATION: Final = "service.kubernetes.io/topology-aware-hints"
CLOSE_TRAFFIC_DISTRIBUTIONS: Final = ("PreferClose", "PreferSameZone", "PreferSameNode")

PortKey = tuple[tuple[Any, ...], ...]


def port_map_key(ports: Sequence[Mapping[str, Any]] | None) -> PortKey:
    """Identifies a set of slice ports (upstream ``NewPortMapKey``, order-independent)."""
    return tuple(sorted(
        ((p.get("name"), p.get("protocol"), p.get("port"), p.get("appProtocol"))
         for p in ports or ()), key=repr))


def address_types_for_service(svc: Mapping[str, Any]) -> list[str]:
    """The address types of the Service's slices (upstream getAddressTypesForService)."""
    spec = svc.get("spec") or {}
    out = [t for fam, t in (("IPv4", ADDRESS_TYPE_IPV4), ("IPv6", ADDRESS_TYPE_IPV6))
           if fam in (spec.get("ipFamilies") or ())]
    if out:
        return out
    cluster_ip = spec.get("clusterIP") or ""
    if cluster_ip and cluster_ip != "None":
        return [ADDRESS_TYPE_IPV6 if ":" in cluster_ip else ADDRESS_TYPE_IPV4]
    return [ADDRESS_TYPE_IPV4, ADDRESS_TYPE_IPV6]


def endpoint_slice_prefix(service_name: str) -> str:
    """``<name>-`` when that is a valid generateName prefix, else the name."""
    prefix = f"{service_name}-"
    return service_name if name_is_dns_subdomain(prefix, True) else prefix


def _endpoint_ports(svc: Mapping[str, Any], pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    spec = svc.get("spec") or {}
    ports = spec.get("ports") or []
    out: list[dict[str, Any]] = []
    if not ports and spec.get("clusterIP") == "None":
        return out
    for sp in ports:
        try:
            number = find_port(pod, sp)
        except PortNotFound as exc:
            log.debug("Failed to find port for service %s: %s", meta_of(svc).get("name"), exc)
            continue
        port: dict[str, Any] = {"name": sp.get("name") or "", "protocol": sp.get("protocol")
                                or "TCP", "port": number}
        if sp.get("appProtocol") is not None:
            port["appProtocol"] = sp["appProtocol"]
        out.append(port)
    return sort_slice_ports(out)


def pod_to_endpoint(pod: Mapping[str, Any], node: Mapping[str, Any] | None,
                    svc: Mapping[str, Any], address_type: str) -> dict[str, Any]:
    """The discovery/v1 Endpoint of a pod (upstream podToEndpoint)."""
    serving = is_pod_ready(pod)
    terminating = bool(meta_of(pod).get("deletionTimestamp"))
    ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses")) or (
        serving and not terminating)
    want_v6 = address_type == ADDRESS_TYPE_IPV6
    addresses = []
    for p in (pod.get("status") or {}).get("podIPs") or ():
        parsed = parse_ip_sloppy(str(p.get("ip") or ""))
        if parsed is not None and parsed[1] == want_v6:
            addresses.append(parsed[0])
    m = meta_of(pod)
    ep: dict[str, Any] = {
        "addresses": addresses,
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": m.get("namespace"), "name": m.get("name"),
                      "uid": m.get("uid")},
    }
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        ep["nodeName"] = node_name
    zone = ((meta_of(node).get("labels") or {}).get(LABEL_TOPOLOGY_ZONE) if node else None)
    if zone:
        ep["zone"] = zone
    if should_set_hostname(pod, svc):
        ep["hostname"] = (pod.get("spec") or {}).get("hostname")
    return ep


def _is_reserved_label(key: str) -> bool:
    return key in (LABEL_SERVICE_NAME, LABEL_MANAGED_BY, IS_HEADLESS_SERVICE)


def slice_labels(slice_: Mapping[str, Any], svc: Mapping[str, Any], controller_name: str
                 ) -> tuple[dict[str, str], bool]:
    """(the labels the slice should have, whether its non-reserved ones differ from the
    Service's): upstream setEndpointSliceLabels."""
    ep_labels = {k: v for k, v in (meta_of(slice_).get("labels") or {}).items()
                 if not _is_reserved_label(k)}
    svc_labels = {k: v for k, v in (meta_of(svc).get("labels") or {}).items()
                  if not _is_reserved_label(k)}
    updated = ep_labels != svc_labels
    if not is_service_ip_set(svc):
        svc_labels[IS_HEADLESS_SERVICE] = ""
    svc_labels[LABEL_SERVICE_NAME] = str(meta_of(svc).get("name"))
    svc_labels[LABEL_MANAGED_BY] = controller_name
    return svc_labels, updated


def _owned_by(slice_: Mapping[str, Any], svc: Mapping[str, Any]) -> bool:
    uid = meta_of(svc).get("uid")
    return any(o.get("uid") == uid and o.get("kind") == "Service" and o.get("apiVersion") == "v1"
               for o in meta_of(slice_).get("ownerReferences") or ())


def _hints_enabled(annotations: Mapping[str, str]) -> bool:
    val = annotations.get(DEPRECATED_TOPOLOGY_HINTS_ANNOTATION)
    if val is None:
        val = annotations.get(TOPOLOGY_MODE_ANNOTATION)
        if val is None:
            return False
    return val in ("Auto", "auto")


class Reconciler:
    """Writes a Service's EndpointSlices (upstream ``endpointslice.Reconciler``)."""

    def __init__(self, *, client: Client, node_lister: GenericLister, max_endpoints_per_slice: int,
                 tracker: EndpointSliceTracker, controller_name: str,
                 prefer_same_traffic_distribution: bool = True) -> None:
        self.client = client
        self.node_lister = node_lister
        self.max_endpoints = max_endpoints_per_slice
        self.tracker = tracker
        self.controller_name = controller_name
        self.prefer_same = prefer_same_traffic_distribution

    def managed_by_controller(self, slice_: Mapping[str, Any]) -> bool:
        return bool((meta_of(slice_).get("labels") or {}).get(LABEL_MANAGED_BY)
                    == self.controller_name)

    def _valid_traffic_distribution(self, value: Any) -> bool:
        if value == "PreferClose":
            return True
        return self.prefer_same and value in ("PreferSameZone", "PreferSameNode")

    def new_endpoint_slice(self, svc: Mapping[str, Any], ports: list[dict[str, Any]],
                           address_type: str) -> dict[str, Any]:
        m = meta_of(svc)
        slice_: dict[str, Any] = {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": endpoint_slice_prefix(str(m.get("name"))),
                         "namespace": m.get("namespace"), "labels": {},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                              "name": m.get("name"), "uid": m.get("uid"),
                                              "controller": True,
                                              "blockOwnerDeletion": True}]},
            "addressType": address_type, "ports": ports, "endpoints": []}
        slice_["metadata"]["labels"], _ = slice_labels(slice_, svc, self.controller_name)
        return slice_

    async def reconcile(self, svc: Mapping[str, Any], pods: list[Mapping[str, Any]],
                        existing: list[Mapping[str, Any]], trigger_time: datetime | None
                        ) -> None:
        """Make the Service's slices match ``pods``; raises on the first failed write
        (after trying every address type)."""
        supported = address_types_for_service(svc)
        to_delete: list[Mapping[str, Any]] = []
        by_type: dict[str, list[Mapping[str, Any]]] = {}
        for s in existing:
            if s.get("addressType") not in supported:
                to_delete.append(s)
                continue
            by_type.setdefault(str(s.get("addressType")), []).append(s)
        errors: list[str] = []
        for address_type in supported:
            try:
                await self._reconcile_by_address_type(svc, pods, by_type.get(address_type, []),
                                                      trigger_time, address_type)
            except (ApiError, RuntimeError) as exc:
                errors.append(str(exc))
        ns = str(meta_of(svc).get("namespace"))
        for s in to_delete:
            name = str(meta_of(s).get("name"))
            try:
                await self.client.delete(ENDPOINT_SLICES, name, ns)
            except ApiError as exc:
                errors.append(f"error deleting {name} EndpointSlice for Service "
                              f"{ns}/{meta_of(svc).get('name')}: {exc}")
            else:
                self.tracker.expect_deletion(s)
        if errors:
            raise RuntimeError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")

    async def _reconcile_by_address_type(self, svc: Mapping[str, Any],
                                         pods: list[Mapping[str, Any]],
                                         existing: list[Mapping[str, Any]],
                                         trigger_time: datetime | None,
                                         address_type: str) -> None:
        errors: list[str] = []
        to_create: list[dict[str, Any]] = []
        to_update: list[dict[str, Any]] = []
        to_delete: list[Mapping[str, Any]] = []
        existing_by_ports: dict[PortKey, list[Mapping[str, Any]]] = {}
        for s in existing:
            if _owned_by(s, svc):
                existing_by_ports.setdefault(port_map_key(s.get("ports")), []).append(s)
            else:
                to_delete.append(s)
        desired_ports: dict[PortKey, list[dict[str, Any]]] = {}
        desired: dict[PortKey, EndpointSet] = {}
        publish_not_ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        for pod in pods:
            if not should_pod_be_in_endpoints(pod, True):
                continue
            ports = _endpoint_ports(svc, pod)
            key = port_map_key(ports)
            desired.setdefault(key, EndpointSet())
            desired_ports.setdefault(key, ports)
            node_name = str((pod.get("spec") or {}).get("nodeName") or "")
            try:
                node: Mapping[str, Any] | None = self.node_lister.get(node_name) \
                    if node_name else None
            except ApiError as exc:
                if not is_not_found(exc):
                    raise
                node = None
            if node is None and not publish_not_ready:
                log.info("skipping Pod %s for Service %s/%s, Node %s not found",
                         meta_of(pod).get("name"), meta_of(svc).get("namespace"),
                         meta_of(svc).get("name"), node_name)
                errors.append(f"skipping Pod {meta_of(pod).get('name')} for Service "
                              f"{meta_of(svc).get('namespace')}/{meta_of(svc).get('name')}: "
                              f"Node {node_name} Not Found")
                continue
            ep = pod_to_endpoint(pod, node, svc, address_type)
            if ep["addresses"]:
                desired[key].insert(ep)
        for key, eps in desired.items():
            c, u, d = self._reconcile_by_port_mapping(svc, existing_by_ports.get(key, []), eps,
                                                      desired_ports[key], address_type)
            to_create += c
            to_update += u
            to_delete += d
        for key, slices in existing_by_ports.items():
            if key not in desired:
                to_delete += slices
        if len(existing) == len(to_delete) and not to_create:
            placeholder = self.new_endpoint_slice(svc, [], address_type)
            if len(to_delete) == 1 and self._is_placeholder_like(to_delete[0], placeholder):
                to_delete = []  # keep the placeholder we have
            else:
                to_create.append(placeholder)
        unchanged = self._unchanged(existing, to_update, to_delete)
        td = (svc.get("spec") or {}).get("trafficDistribution")
        annotations = meta_of(svc).get("annotations") or {}
        use_td = self._valid_traffic_distribution(td) and not _hints_enabled(annotations)
        if not use_td:
            # no hints (neither topology-aware ones, see the module doc, nor trafficDistribution)
            for s in [*to_create, *to_update]:
                for ep in s.get("endpoints") or ():
                    ep.pop("hints", None)
            kept = []
            for s in unchanged:
                if any("hints" in ep for ep in s.get("endpoints") or ()):
                    fresh = _copy_slice(s)
                    for ep in fresh.get("endpoints") or ():
                        ep.pop("hints", None)
                    to_update.append(fresh)
                else:
                    kept.append(s)
            unchanged = kept
        else:
            node_hints = td == "PreferSameNode"
            for s in unchanged:
                if _hints_need_update(s, node_hints):
                    to_update.append(_copy_slice(s))
            for s in [*to_create, *to_update]:
                _set_close_hints(s, node_hints)
        await self._finalize(svc, to_create, to_update, to_delete, trigger_time)
        if errors:
            raise RuntimeError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")

    @staticmethod
    def _is_placeholder_like(s: Mapping[str, Any], placeholder: Mapping[str, Any]) -> bool:
        """upstream placeholderSliceCompare: namespace, labels, address type, no ports and
        no endpoints."""
        return (meta_of(s).get("namespace") == meta_of(placeholder).get("namespace")
                and (meta_of(s).get("labels") or {}) == (meta_of(placeholder).get("labels") or {})
                and s.get("addressType") == placeholder.get("addressType")
                and not s.get("ports") and not s.get("endpoints"))

    @staticmethod
    def _unchanged(existing: list[Mapping[str, Any]], to_update: list[dict[str, Any]],
                   to_delete: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        changed = {meta_of(s).get("name") for s in [*to_update, *to_delete]}
        return [s for s in existing if meta_of(s).get("name") not in changed]

    def _reconcile_by_port_mapping(self, svc: Mapping[str, Any],
                                   existing: list[Mapping[str, Any]], desired: EndpointSet,
                                   ports: list[dict[str, Any]], address_type: str
                                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                              list[Mapping[str, Any]]]:
        by_name: dict[str, Mapping[str, Any]] = {}
        unchanged: list[str] = []
        to_update: list[str] = []
        to_delete: list[str] = []
        # 1. keep what is still desired; note slices to update or delete
        for s in existing:
            name = str(meta_of(s).get("name"))
            by_name[name] = s
            kept: list[dict[str, Any]] = []
            changed = False
            for ep in s.get("endpoints") or ():
                got = desired.get(ep)
                if got is not None:
                    kept.append(got)
                    if not endpoints_equal_beyond_hash(got, ep):
                        changed = True
                    desired.delete(ep)
            labels, labels_changed = slice_labels(s, svc, self.controller_name)
            if changed or len(s.get("endpoints") or ()) != len(kept):
                if not kept:
                    to_delete.append(name)
                else:
                    fresh = _copy_slice(s)
                    fresh["endpoints"] = kept
                    fresh["metadata"]["labels"] = labels
                    by_name[name] = fresh
                    to_update.append(name)
            elif labels_changed:
                fresh = _copy_slice(s)
                fresh["metadata"]["labels"] = labels
                by_name[name] = fresh
                to_update.append(name)
            else:
                unchanged.append(name)
        # 2. fill the slices being updated, fullest first
        if len(desired) and to_update:
            for name in sorted(to_update, key=lambda n: -len(by_name[n].get("endpoints") or ())):
                s = by_name[name]
                eps = s["endpoints"]
                while len(desired) and len(eps) < self.max_endpoints:
                    eps.append(desired.pop_any())
        # 3. one unchanged slice that takes the rest, else new slices
        to_create: list[dict[str, Any]] = []
        while len(desired):
            fill: dict[str, Any] | None = None
            if len(desired) < self.max_endpoints and unchanged:
                best = self._slice_to_fill([by_name[n] for n in unchanged], len(desired))
                if best is not None:
                    fill = _copy_slice(best)
                    by_name[str(meta_of(fill).get("name"))] = fill
            if fill is None:
                fill = self.new_endpoint_slice(svc, copy.deepcopy(ports), address_type)
            eps = list(fill.get("endpoints") or [])
            fill["endpoints"] = eps
            while len(desired) and len(eps) < self.max_endpoints:
                eps.append(desired.pop_any())
            fill_name = meta_of(fill).get("name")
            if fill_name:
                to_update.append(str(fill_name))
                unchanged.remove(str(fill_name))
            else:
                to_create.append(fill)
        return (to_create, [dict(by_name[n]) for n in to_update],
                [by_name[n] for n in to_delete])

    def _slice_to_fill(self, slices: list[Mapping[str, Any]], n: int) -> Mapping[str, Any] | None:
        closest, best = self.max_endpoints, None
        for s in slices:
            diff = self.max_endpoints - (n + len(s.get("endpoints") or ()))
            if 0 <= diff < closest:
                closest, best = diff, s
                if diff == 0:
                    break
        return best

    async def _finalize(self, svc: Mapping[str, Any], to_create: list[dict[str, Any]],
                        to_update: list[dict[str, Any]], to_delete: list[Mapping[str, Any]],
                        trigger_time: datetime | None) -> None:
        # a create becomes the update of a slice about to be deleted
        i = 0
        while i < len(to_delete) and to_create:
            old, new = to_delete[i], to_create[-1]
            if old.get("addressType") == new.get("addressType") and _owned_by(old, svc):
                new["metadata"]["name"] = meta_of(old).get("name")  # an unconditional update
                to_create.pop()
                to_update.append(new)
                del to_delete[i]
            else:
                i += 1
        ns = str(meta_of(svc).get("namespace"))
        svc_name = meta_of(svc).get("name")
        if not meta_of(svc).get("deletionTimestamp"):
            for s in to_create:
                _set_trigger_time(s, trigger_time)
                try:
                    created = await self.client.create(ENDPOINT_SLICES, s, ns)
                except ApiError as exc:
                    if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                        return
                    raise RuntimeError(f"failed to create EndpointSlice for Service "
                                       f"{ns}/{svc_name}: {exc}") from exc
                self.tracker.update(created)
        for s in to_update:
            _set_trigger_time(s, trigger_time)
            try:
                updated = await self.client.update(ENDPOINT_SLICES, s, ns)
            except ApiError as exc:
                raise RuntimeError(f"failed to update {meta_of(s).get('name')} EndpointSlice for "
                                   f"Service {ns}/{svc_name}: {exc}") from exc
            self.tracker.update(updated)
        for old in to_delete:
            name = meta_of(old).get("name")
            try:
                await self.client.delete(ENDPOINT_SLICES, str(name), ns)
            except ApiError as exc:
                raise RuntimeError(f"failed to delete {name} EndpointSlice for Service "
                                   f"{ns}/{svc_name}: {exc}") from exc
            self.tracker.expect_deletion(old)


def _copy_slice(s: Mapping[str, Any]) -> dict[str, Any]:
    """A cached slice made safe to edit as this module does: its metadata dict, its
    endpoints list and each endpoint's top level (hints) are new; the rest is shared
    with the cache. A deep copy of 100 endpoints cost more than the rest of a sync."""
    out = {**s, "metadata": dict(meta_of(s))}
    if isinstance(s.get("endpoints"), list):
        out["endpoints"] = [dict(ep) for ep in s["endpoints"]]
    return out


def _set_trigger_time(slice_: dict[str, Any], t: datetime | None) -> None:
    meta = slice_.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    if t is not None:
        annotations[ENDPOINTS_LAST_CHANGE_TRIGGER_TIME] = format_rfc3339_nano(t)
    else:
        annotations.pop(ENDPOINTS_LAST_CHANGE_TRIGGER_TIME, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)


def _ready(ep: Mapping[str, Any]) -> bool:
    return bool((ep.get("conditions") or {}).get("ready"))


def _close_hints(ep: Mapping[str, Any], node_hints: bool) -> dict[str, Any] | None:
    hints: dict[str, Any] = {}
    if ep.get("zone"):
        hints["forZones"] = [{"name": ep["zone"]}]
    if ep.get("nodeName") and node_hints:
        hints["forNodes"] = [{"name": ep["nodeName"]}]
    return hints or None


def _hints_need_update(s: Mapping[str, Any], node_hints: bool) -> bool:
    """upstream preferCloseHeuristic.needsUpdate."""
    for ep in s.get("endpoints") or ():
        if not _ready(ep):
            continue
        hints = ep.get("hints") or {}
        zones, nodes = hints.get("forZones") or [], hints.get("forNodes") or []
        if ep.get("zone"):
            if not ep.get("hints") or len(zones) != 1 or zones[0].get("name") != ep["zone"]:
                return True
        elif zones:
            return True
        if ep.get("nodeName") and node_hints:
            if not ep.get("hints") or len(nodes) != 1 or nodes[0].get("name") != ep["nodeName"]:
                return True
        elif nodes:
            return True
    return False


def _set_close_hints(s: Mapping[str, Any], node_hints: bool) -> None:
    """upstream preferCloseHeuristic.update: ready endpoints get their zone (and node)."""
    for ep in s.get("endpoints") or ():
        if not _ready(ep):
            continue
        hints = _close_hints(ep, node_hints)
        if hints is None:
            ep.pop("hints", None)
        else:
            ep["hints"] = hints
