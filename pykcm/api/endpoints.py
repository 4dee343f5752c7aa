"""Endpoints and EndpointSlices: names, pod-to-endpoint rules, and the canonical subset layout.

kube-controller-manager counterparts: ``pkg/api/v1/endpoints`` (``RepackSubsets``,
``SortSubsets``), ``k8s.io/endpointslice`` (``FindPort``,
``ShouldPodBeInEndpoints``, ``ShouldSetHostname``, ``NewPortMapKey``), the
core/v1 and discovery/v1 label and annotation constants.

Role: the one home of what the Endpoints, EndpointSlice and mirroring
controllers share (and an API server serving EndpointSlices will need):
:data:`ENDPOINT_SLICES` (the discovery.k8s.io/v1 resource of the built-in registry),
the labels and annotations, IP parsing as Go's ``ParseIPSloppy`` and
``net.IP.String``, and the orderings upstream's output has.

Orderings. Upstream sorts subsets, and ports inside a subset or an
EndpointSlice, by the FNV-128a hash of a ``spew`` dump (``%#v``, methods
off) of the Go structs: an order users see in ``kubectl get -o yaml`` and
that the controllers compare against. :func:`spew_dump` writes that dump
for the few types involved (their Go field order and type names are tables
here; the printer is :mod:`pykcm.api.go_spew`, shared with the pod-template
hash), so pykcm's objects come out in the same order as kube-controller-manager's.

Data flow (Endpoints)::

    one EndpointSubset per (pod, port) ──repack_subsets──► addresses grouped by the set of
    ports they serve (ready / not ready, a not-ready one wins), deduplicated by IP+UID
    ──sort_subsets──► addresses by IP then UID, ports and subsets by Go hash
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.accessors import meta_of
from pykcm.api.go_spew import GoLayout
from pykcm.api.resources import BUILTIN_RESOURCES, ResourceInfo

__all__ = [
    "ENDPOINTS_LABEL_MANAGED_BY",
    "ENDPOINTS_LAST_CHANGE_TRIGGER_TIME",
    "ENDPOINTS_OVER_CAPACITY",
    "ENDPOINT_SLICES",
    "IS_HEADLESS_SERVICE",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "LABEL_SKIP_MIRROR",
    "LABEL_TOPOLOGY_ZONE",
    "LAST_APPLIED_CONFIG_ANNOTATION",
    "LEADER_ELECTION_RECORD_ANNOTATION",
    "PortNotFound",
    "find_port",
    "fnv128a",
    "go_less_hash_key",
    "is_service_ip_set",
    "parse_ip_sloppy",
    "pod_ips",
    "repack_subsets",
    "should_pod_be_in_endpoints",
    "should_set_hostname",
    "sort_slice_ports",
    "sort_subsets",
    "spew_dump",
]

ENDPOINT_SLICES: Final[ResourceInfo] = next(
    r for r in BUILTIN_RESOURCES if r.group == "discovery.k8s.io" and r.plural == "endpointslices")
"""discovery.k8s.io/v1 endpointslices (the built-in registry's entry)."""

ENDPOINTS_LAST_CHANGE_TRIGGER_TIME: Final = "endpoints.kubernetes.io/last-change-trigger-time"
ENDPOINTS_OVER_CAPACITY: Final = "endpoints.kubernetes.io/over-capacity"
ENDPOINTS_LABEL_MANAGED_BY: Final = "endpoints.kubernetes.io/managed-by"
IS_HEADLESS_SERVICE: Final = "service.kubernetes.io/headless"
LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"
LABEL_MANAGED_BY: Final = "endpointslice.kubernetes.io/managed-by"
LABEL_SKIP_MIRROR: Final = "endpointslice.kubernetes.io/skip-mirror"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
LAST_APPLIED_CONFIG_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
LEADER_ELECTION_RECORD_ANNOTATION: Final = "control-plane.alpha.kubernetes.io/leader"


# -- pods and services ----------------------------------------------------------------------


def is_service_ip_set(svc: Mapping[str, Any]) -> bool:
    """A ClusterIP is allocated (not headless, not empty)."""
    ip = (svc.get("spec") or {}).get("clusterIP") or ""
    return ip not in ("", "None")


def pod_ips(pod: Mapping[str, Any]) -> list[str]:
    """``status.podIPs[*].ip``."""
    return [str(p.get("ip") or "") for p in (pod.get("status") or {}).get("podIPs") or ()]


def should_pod_be_in_endpoints(pod: Mapping[str, Any], include_terminating: bool) -> bool:
    """Not terminal, has an IP, and (unless ``include_terminating``) not being deleted."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not meta_of(pod).get("deletionTimestamp")


def should_set_hostname(pod: Mapping[str, Any], svc: Mapping[str, Any]) -> bool:
    """The pod's hostname is published when its subdomain is the Service's name."""
    spec = pod.get("spec") or {}
    return bool(spec.get("hostname")) and spec.get("subdomain") == meta_of(svc).get("name") \
        and meta_of(svc).get("namespace") == meta_of(pod).get("namespace")


class PortNotFound(ValueError):
    """The pod has no container port for the Service port's targetPort."""


def find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int:
    """The pod's port for a Service port: a number as is; a name looked up in the
    containers' ports (then sidecars', restartable init containers) with the same protocol."""
    target = service_port.get("targetPort", service_port.get("port"))
    protocol = service_port.get("protocol") or "TCP"
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str):
        spec = pod.get("spec") or {}
        containers = [*(spec.get("containers") or ()),
                      *(c for c in spec.get("initContainers") or ()
                        if c.get("restartPolicy") == "Always")]
        for c in containers:
            for p in c.get("ports") or ():
                if p.get("name") == target and (p.get("protocol") or "TCP") == protocol:
                    return int(p["containerPort"])
    raise PortNotFound(f"no suitable port for manifest: {meta_of(pod).get('uid', '')}")


@functools.lru_cache(maxsize=65536)
def parse_ip_sloppy(text: str) -> tuple[str, bool] | None:
    """``(net.IP.String(), is IPv6)`` of Go's ``ParseIPSloppy``; None if it is no IP.

    Sloppy: IPv4 parts with leading zeros are decimal (``010.1.1.1`` is ``10.1.1.1``).
    An IPv4-mapped IPv6 address is IPv4, as Go holds it. Cached: pod IPs come back at
    every sync.
    """
    s = text.strip() if isinstance(text, str) else ""
    if not s:
        return None
    if ":" not in s:
        parts = s.split(".")
        if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts):
            return None
        nums = [int(p, 10) for p in parts]
        if any(n > 255 for n in nums):
            return None
        return ".".join(map(str, nums)), False
    try:
        ip6 = ipaddress.IPv6Address(s)
    except ValueError:
        return None
    if ip6.ipv4_mapped is not None:
        return str(ip6.ipv4_mapped), False
    return ip6.compressed, True


# -- Go's DeepHashObject --------------------------------------------------------------------

_FNV128_OFFSET: Final = 0x6C62272E07BB014262B821756295C58D
_FNV128_PRIME: Final = 0x0000000001000000000000000000013B
_MASK128: Final = (1 << 128) - 1


def fnv128a(data: bytes) -> bytes:
    """FNV-1a, 128 bits (Go's ``hash/fnv.New128a``), big-endian digest."""
    h = _FNV128_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV128_PRIME) & _MASK128
    return h.to_bytes(16, "big")


# Go struct layouts: (field name, JSON key, Go type) in declaration order. A Go type is
# "string"/"int32", a named scalar ("v1.Protocol", "types.UID"), "*T" for pointers, "[]T"
# for slices, or a struct name in _STRUCTS.
_STRUCTS: Final[dict[str, tuple[tuple[str, str | None, str], ...]]] = {
    "v1.EndpointSubset": (("Addresses", "addresses", "[]v1.EndpointAddress"),
                          ("NotReadyAddresses", "notReadyAddresses", "[]v1.EndpointAddress"),
                          ("Ports", "ports", "[]v1.EndpointPort")),
    "v1.EndpointAddress": (("IP", "ip", "string"), ("Hostname", "hostname", "string"),
                           ("NodeName", "nodeName", "*string"),
                           ("TargetRef", "targetRef", "*v1.ObjectReference")),
    "v1.EndpointPort": (("Name", "name", "string"), ("Port", "port", "int32"),
                        ("Protocol", "protocol", "v1.Protocol"),
                        ("AppProtocol", "appProtocol", "*string")),
    "v1.ObjectReference": (("Kind", "kind", "string"), ("Namespace", "namespace", "string"),
                           ("Name", "name", "string"), ("UID", "uid", "types.UID"),
                           ("APIVersion", "apiVersion", "string"),
                           ("ResourceVersion", "resourceVersion", "string"),
                           ("FieldPath", "fieldPath", "string")),
    # discovery/v1 (package v1 too)
    "discovery.EndpointPort": (("Name", "name", "*string"),
                               ("Protocol", "protocol", "*v1.Protocol"),
                               ("Port", "port", "*int32"),
                               ("AppProtocol", "appProtocol", "*string")),
}
# Values the endpoint controllers build: a missing list is nil, an empty one is not.
_LAYOUT: Final = GoLayout(_STRUCTS, named={"v1.Protocol": "string", "types.UID": "string"},
                          packages={"discovery": "v1"}, empty_is_nil=False)


def spew_dump(go_type: str, value: Any) -> str:
    """``spew.Sprintf("%#v", value)`` for ``value`` (its JSON form) of Go type ``go_type``
    (``"v1.EndpointSubset"``, ``"v1.EndpointPort"``, ``"discovery.EndpointPort"``, ...).

    JSON has no nil/empty distinction for lists; pass None for a nil slice (the
    callers here build their values and know which is which)."""
    return _LAYOUT.dump(go_type, value)


def go_less_hash_key(go_type: str, value: Any) -> bytes:
    """The sort key of upstream's ``...ByHash`` orderings: fnv128a of the spew dump."""
    return fnv128a(spew_dump(go_type, value).encode())


# -- Endpoints subsets ------------------------------------------------------------------------

def _addr_key(addr: Mapping[str, Any]) -> tuple[bytes, bool, str]:
    """``LessEndpointAddress``: IP bytes, then no targetRef first, then targetRef UID."""
    ref = addr.get("targetRef")
    return (str(addr.get("ip") or "").encode(), ref is not None,
            str((ref or {}).get("uid") or ""))


def _port_key(port: Mapping[str, Any]) -> tuple[Any, ...]:
    return (port.get("name") or "", int(port.get("port") or 0), port.get("protocol") or "",
            port.get("appProtocol"))


def _port_value(key: tuple[Any, ...]) -> dict[str, Any]:
    name, number, protocol, app = key
    out: dict[str, Any] = {}
    if name:
        out["name"] = name
    out["port"] = number
    if protocol:
        out["protocol"] = protocol
    if app is not None:
        out["appProtocol"] = app
    return out


def repack_subsets(subsets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Upstream ``RepackSubsets``: the canonical layout of ``subsets`` (see the module doc).

    An address is identified by IP and targetRef UID; one listed both ready and
    not ready for a port is not ready; addresses with no ports keep a subset of
    their own without ports. Empty lists are left out (JSON's omitempty)."""
    addrs: dict[tuple[str, str], dict[str, Any]] = {}
    # port key (None: no port) → {address identity: ready}
    by_port: dict[tuple[Any, ...] | None, dict[tuple[str, str], bool]] = {}

    def note(addr: Mapping[str, Any], port: tuple[Any, ...] | None, ready: bool) -> None:
        ident = (str(addr.get("ip") or ""), str((addr.get("targetRef") or {}).get("uid") or ""))
        if ident not in addrs:
            addrs[ident] = dict(addr)
        seen = by_port.setdefault(port, {})
        if seen.get(ident, True):  # not ready always trumps ready
            seen[ident] = ready

    for subset in subsets:
        ports = subset.get("ports") or []
        keys: list[tuple[Any, ...] | None] = [_port_key(p) for p in ports] if ports else [None]
        for port in keys:
            for a in subset.get("addresses") or ():
                note(a, port, True)
            for a in subset.get("notReadyAddresses") or ():
                note(a, port, False)
    # group ports by the identical (address, ready) set they serve
    groups: dict[frozenset[tuple[tuple[str, str], bool]], list[tuple[Any, ...]]] = {}
    for port, members in by_port.items():
        g = groups.setdefault(frozenset(members.items()), [])
        if port is not None and port[1] > 0:
            g.append(port)
    final: list[dict[str, Any]] = []
    for members_set, ports in groups.items():
        ready = [addrs[i] for i, r in members_set if r]
        not_ready = [addrs[i] for i, r in members_set if not r]
        packed: dict[str, Any] = {}
        if ready:
            packed["addresses"] = ready
        if not_ready:
            packed["notReadyAddresses"] = not_ready
        if ports:
            packed["ports"] = [_port_value(p) for p in ports]
        final.append(packed)
    return sort_subsets(final)


def sort_subsets(subsets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Upstream ``SortSubsets``, in place: addresses by IP then UID, ports and subsets by
    Go hash (a missing list is Go's nil slice)."""
    for ss in subsets:
        for key in ("addresses", "notReadyAddresses"):
            if ss.get(key):
                ss[key].sort(key=_addr_key)
        if len(ss.get("ports") or ()) > 1:
            ss["ports"].sort(key=lambda p: go_less_hash_key("v1.EndpointPort", p))
    if len(subsets) > 1:  # (a hash of every address: not for nothing)
        subsets.sort(key=lambda s: go_less_hash_key("v1.EndpointSubset", s))
    return subsets


def sort_slice_ports(ports: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """discovery/v1 ports in upstream's order (``NewPortMapKey`` sorts them by the hex of
    their Go hash)."""
    out = [dict(p) for p in ports]
    if len(out) > 1:
        out.sort(key=lambda p: go_less_hash_key("discovery.EndpointPort", p).hex())
    return out
