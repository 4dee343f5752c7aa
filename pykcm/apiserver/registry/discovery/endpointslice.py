"""discovery.k8s.io/v1 EndpointSlices (pkg/registry/discovery/endpointslice): defaults,
validation, generation, dropped v1beta1 topology, warnings and printer.

- Defaults: endpoints and ports written (null when empty), port name "" and TCP,
  each endpoint's conditions.
- Validation: address types, addresses as upstream's strict IP parsing (legacy
  forms of unchanged endpoints still accepted on update), ports, hints.
- Generation: moves with any change outside the metadata, or of the labels.
- dropTopologyOnV1: a v1 write cannot set deprecatedTopology.
- Warnings: FQDN slices are deprecated; addresses in a non-standard form (of a
  slice the endpoint slice controllers do not manage) are warned about.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api import validation as _api_validation
from pykcm.api.validation import (
    Cause,
    duplicate,
    go_quote,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns_subdomain,
    not_supported,
    required,
    too_many,
    validate_labels,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.defaulting import GoOrder, dicts_in, go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import (
    as_list,
    as_map,
    as_str,
    immutable,
    semantic_equal,
    validate_meta,
)

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

_ENDPOINT_SLICE: Final = GoOrder("kind", "apiVersion", "metadata", "addressType", "endpoints",
                                  "ports")


_SLICE_ENDPOINT: Final = GoOrder("addresses", "conditions", "hostname", "targetRef",
                                  "deprecatedTopology", "nodeName", "zone", "hints")


_SLICE_PORT: Final = GoOrder("name", "protocol", "port", "appProtocol")


def _default_endpoint_slice(obj: Obj, create: bool) -> None:
    """discovery/v1 SetDefaults_EndpointPort; endpoints, ports (not omitempty, null when
    unset or empty: storage's protobuf keeps no empty list) and each endpoint's conditions
    (a struct) are always written."""
    for key in ("endpoints", "ports"):
        if not obj.get(key):
            obj[key] = None
    for port in dicts_in(obj.get("ports")):
        if port.get("name") is None:
            port["name"] = ""
        if port.get("protocol") is None:
            port["protocol"] = "TCP"
        _SLICE_PORT.apply(port)
    for ep in dicts_in(obj.get("endpoints")):
        if not isinstance(ep.get("conditions"), dict):
            ep["conditions"] = {}
        _SLICE_ENDPOINT.apply(ep)
    _ENDPOINT_SLICE.apply(obj)


# --- validation ------------------------------------------------------------------------

_ADDRESS_TYPES: Final = ("FQDN", "IPv4", "IPv6")


_MAX_SLICE_PORTS: Final = 20000


_MAX_SLICE_ENDPOINTS: Final = 1000


_MAX_ENDPOINT_ADDRESSES: Final = 100


_MAX_TOPOLOGY_LABELS: Final = 16


_MAX_HINTS: Final = 8


_IP_SLOPPY_ERR: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _go_parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netutils.ParseIPSloppy: IPv4 octets may have leading zeros; no zones, no spaces."""
    if not value or "%" in value or value != value.strip():
        return None
    if ":" not in value:
        parts = value.split(".")
        if len(parts) != 4 or not all(p.isascii() and p.isdigit() and len(p) <= 3
                                      for p in parts):
            return None
        nums = [int(p) for p in parts]
        return ipaddress.IPv4Address(".".join(map(str, nums))) if max(nums) < 256 else None
    try:
        return ipaddress.IPv6Address(value)
    except ValueError:
        return None


def _strict_ip_errors(value: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address
                      ) -> list[str]:
    """parseIP's strict checks of an address ParseIPSloppy took."""
    errs = []
    if isinstance(ip, ipaddress.IPv4Address):
        try:
            ipaddress.IPv4Address(value)
        except ValueError:
            errs.append("must not have leading 0s")
    elif ip.ipv4_mapped is not None:
        errs.append("must not be an IPv4-mapped IPv6 address")
    return errs


def _as_go_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address
              ) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """Go's net.IP methods look at the IPv4 address inside an IPv4-mapped one."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def ip_warnings(path: str, value: str) -> list[str]:
    """GetWarningsForIP: a valid address in a non-standard form (leading zeros, IPv4-mapped,
    non-canonical IPv6)."""
    parsed = _go_parse_ip(value)
    if parsed is None:
        return []
    go_form = str(_as_go_ip(parsed))
    if _strict_ip_errors(value, parsed):
        return [(f"{path}: non-standard IP address {go_quote(value)} is invalid: use "
                 f"{go_quote(go_form)}")]
    if isinstance(parsed, ipaddress.IPv6Address) and str(parsed) != value:
        return [(f"{path}: IPv6 address {go_quote(value)} should be in RFC 5952 canonical "
                 f"format ({go_quote(str(parsed))})")]
    return []


def _endpoint_ip_errors(value: str, path: str) -> list[Cause]:
    """ValidateEndpointIP: no unspecified, loopback or link-local address."""
    parsed = _go_parse_ip(value)
    if parsed is None:
        return [invalid(path, value, "must be a valid IP address")]
    ip = _as_go_ip(parsed)
    errs = []
    if ip.is_unspecified:
        errs.append(invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        errs.append(invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local and (isinstance(ip, ipaddress.IPv4Address) or ip.packed[0] == 0xfe):
        errs.append(invalid(path, value,
                            "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    packed = ip.packed
    if (isinstance(ip, ipaddress.IPv4Address) and packed[:3] == b"\xe0\x00\x00") or (
            isinstance(ip, ipaddress.IPv6Address) and packed[0] == 0xff
            and packed[1] & 0x0f == 0x02):
        errs.append(invalid(path, value, "may not be in the link-local multicast range "
                                         "(224.0.0.0/24, ff02::/10)"))
    return errs


def _slice_address_errors(address_type: str, value: str, apath: str, ipath: str
                          ) -> list[Cause]:
    if address_type == "FQDN":
        return _fqdn_errors(value, ipath)
    if address_type not in ("IPv4", "IPv6"):
        return []
    parsed = _go_parse_ip(value)
    if parsed is None:
        return [invalid(ipath, value, _IP_SLOPPY_ERR)]
    strict = _strict_ip_errors(value, parsed)
    if strict:
        return [invalid(ipath, value, m) for m in strict]
    errs = []
    if address_type == "IPv6" and str(parsed) != value:
        errs.append(invalid(ipath, value, f"must be in canonical form ({go_quote(str(parsed))})"))
        return errs
    family_v4 = isinstance(_as_go_ip(parsed), ipaddress.IPv4Address)
    if address_type == "IPv4" and not family_v4:
        errs.append(invalid(apath, value, "must be an IPv4 address"))
    if address_type == "IPv6" and family_v4:
        errs.append(invalid(apath, value, "must be an IPv6 address"))
    return errs + _endpoint_ip_errors(value, ipath)


def _fqdn_errors(name: str, path: str) -> list[Cause]:
    """IsFullyQualifiedDomainName."""
    if not name:
        return [required(path)]
    name = name.removesuffix(".")
    msgs = is_dns1123_subdomain(name)
    if msgs:
        return [invalid(path, name, ",".join(msgs))]
    labels = name.split(".")
    if len(labels) < 2:
        return [invalid(path, name, "should be a domain with at least two segments separated "
                                    "by dots")]
    for label in labels:
        msgs = is_dns1123_label(label)
        if msgs:
            return [invalid(path, label, ",".join(msgs))]
    return []


def _validate_slice_ports(ports: list[Any]) -> list[Cause]:
    if len(ports) > _MAX_SLICE_PORTS:
        return [too_many("ports", len(ports), _MAX_SLICE_PORTS)]
    errs: list[Cause] = []
    names: list[str] = []
    for i, port in enumerate(ports):
        port = as_map(port)
        path = f"ports[{i}]"
        name = as_str(port.get("name"))
        if name:
            errs.extend(invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
        if name in names:
            errs.append(duplicate(f"{path}.name", name))
        else:
            names.append(name)
        proto = port.get("protocol")
        if proto is None:
            errs.append(required(f"{path}.protocol"))
        elif proto not in podspec.PROTOCOLS:
            errs.append(not_supported(f"{path}.protocol", proto, podspec.PROTOCOLS))
        app = port.get("appProtocol")
        if app is not None:
            errs.extend(invalid(f"{path}.appProtocol", app, m)
                        for m in is_qualified_name(as_str(app)))
    return errs


def _validate_slice_endpoints(endpoints: list[Any], address_type: str) -> list[Cause]:
    if len(endpoints) > _MAX_SLICE_ENDPOINTS:
        return [too_many("endpoints", len(endpoints), _MAX_SLICE_ENDPOINTS)]
    errs: list[Cause] = []
    for i, ep in enumerate(endpoints):
        ep = as_map(ep)
        path = f"endpoints[{i}]"
        apath = f"{path}.addresses"
        addresses = as_list(ep.get("addresses"))
        if not addresses:
            errs.append(required(apath, "must contain at least 1 address"))
        elif len(addresses) > _MAX_ENDPOINT_ADDRESSES:
            errs.append(too_many(apath, len(addresses), _MAX_ENDPOINT_ADDRESSES))
        for j, addr in enumerate(addresses):
            errs.extend(_slice_address_errors(address_type, as_str(addr), apath,
                                              f"{apath}[{j}]"))
        node = ep.get("nodeName")
        if node is not None:
            errs.extend(invalid(f"{path}.nodeName", node, m)
                        for m in name_is_dns_subdomain(as_str(node)))
        topology = as_map(ep.get("deprecatedTopology"))
        tpath = f"{path}.deprecatedTopology"
        if len(topology) > _MAX_TOPOLOGY_LABELS:
            errs.append(too_many(tpath, len(topology), _MAX_TOPOLOGY_LABELS))
        errs.extend(validate_labels(topology, tpath))
        hostname = ep.get("hostname")
        if hostname is not None:
            errs.extend(invalid(f"{path}.hostname", hostname, m)
                        for m in is_dns1123_label(as_str(hostname)))
        hints = ep.get("hints")
        if isinstance(hints, Mapping):
            errs.extend(_validate_hints(hints, f"{path}.hints"))
    return errs


def _validate_hints(hints: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key, check in (("forZones", is_valid_label_value), ("forNodes", name_is_dns_subdomain)):
        items = as_list(hints.get(key))
        if len(items) > _MAX_HINTS:
            errs.append(too_many(f"{path}.{key}", len(items), _MAX_HINTS))
            return errs
        seen: list[str] = []
        for i, item in enumerate(items):
            name = as_str(as_map(item).get("name"))
            npath = f"{path}.{key}[{i}].name"
            if name in seen:
                errs.append(duplicate(npath, name))
            else:
                seen.append(name)
            errs.extend(invalid(npath, name, m) for m in check(name))
    return errs


def _slice_body(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    errs: list[Cause] = []
    address_type = obj.get("addressType")
    if not address_type:
        errs.append(required("addressType"))
    elif address_type not in _ADDRESS_TYPES:
        errs.append(not_supported("addressType", address_type, _ADDRESS_TYPES))
    errs.extend(_validate_slice_ports(as_list(obj.get("ports"))))
    endpoint_errs = _validate_slice_endpoints(as_list(obj.get("endpoints")), as_str(address_type))
    if endpoint_errs and old is not None and semantic_equal(old.get("endpoints"), obj.get("endpoints")):
        endpoint_errs = []  # unchanged endpoints an older version accepted stay valid
    return errs + endpoint_errs


def _create_endpoint_slice(obj: Mapping[str, Any]) -> list[Cause]:
    return validate_meta(obj, True) + _slice_body(obj, None)


def _update_endpoint_slice(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
            + _slice_body(new, old)
            + immutable(new.get("addressType"), old.get("addressType"), "addressType"))


# --- printer ---------------------------------------------------------------------------

_ENDPOINT_SLICE_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("AddressType", "string",
         "addressType specifies the type of address carried by this EndpointSlice. All "
         "addresses in this slice must be the same type. This field is immutable after "
         "creation. The following address types are currently supported: * IPv4: Represents "
         "an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully "
         "Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and "
         "kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics "
         "are defined for the \"FQDN\" type."),
    pr.column("Ports", "string",
         "ports specifies the list of network ports exposed by each endpoint in this slice. "
         "Each port must have a unique name. Each slice may include a maximum of 100 ports. "
         "Services always have at least 1 port, so EndpointSlices generated by the "
         "EndpointSlice controller will likewise always have at least 1 port. EndpointSlices "
         "used for other purposes may have an empty ports list."),
    pr.column("Endpoints", "string",
         "endpoints is a list of unique endpoints in this slice. Each slice may include a "
         "maximum of 1000 endpoints."),
    pr.AGE_COLUMN,
)


def _list_with_more(items: list[str], count: int, limit: int = 3) -> str:
    """listWithMoreString: the first three, "+ N more...", or <unset>."""
    text = ",".join(items[:limit])
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or "<unset>"


def _endpoint_slice_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    ports = []
    for p in pr.as_list(obj.get("ports")):
        p = pr.as_dict(p)
        num = p.get("port")
        ports.append(str(num) if isinstance(num, int) else
                     pr.as_str(p.get("name")) if p.get("name") is not None else "*")
    addresses = [pr.as_str(a) for e in pr.as_list(obj.get("endpoints")) for a in pr.as_list(pr.as_dict(e).get("addresses"))]
    return pr.Row([pr.object_name(obj), pr.as_str(obj.get("addressType")), _list_with_more(ports, len(ports)),
                 _list_with_more(addresses, len(addresses)), pr.age(obj, now)])


# --- the strategy ----------------------------------------------------------------------

_HOSTNAME_LABEL = "kubernetes.io/hostname"
_ENDPOINT_SLICE_CONTROLLERS = ("endpointslice-controller.k8s.io",
                               "endpointslicemirroring-controller.k8s.io")


def drop_topology_on_v1(new: Obj, old: Obj | None) -> None:
    """dropTopologyOnV1: discovery.k8s.io/v1 writes cannot set deprecatedTopology. A changed
    endpoint without nodeName keeps the node its old topology named (a partial update)."""
    endpoints = new.get("endpoints")
    if not isinstance(endpoints, list):
        return
    if old is not None and endpoints == old.get("endpoints"):
        return
    previous = {str(n) for e in (old or {}).get("endpoints") or [] if isinstance(e, dict)
                for n in [(e.get("deprecatedTopology") or {}).get(_HOSTNAME_LABEL)] if n}
    for ep in endpoints:
        if not isinstance(ep, dict):
            continue
        topology = ep.pop("deprecatedTopology", None)
        node = (topology or {}).get(_HOSTNAME_LABEL) if isinstance(topology, dict) else None
        if (ep.get("nodeName") is None and isinstance(node, str) and node in previous
                and not _api_validation.is_dns1123_subdomain(node)):
            ep["nodeName"] = node


def endpoint_slice_warnings(obj: Obj, create: bool) -> list[str]:
    """WarningsOnCreate/WarningsOnUpdate: FQDN slices are deprecated; addresses in a
    non-standard form (not from the endpoint slice controllers) are warned about."""
    out = []
    if create and obj.get("addressType") == "FQDN":
        out.append("spec.addressType: FQDN endpoints are deprecated")
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get("endpointslice.kubernetes.io/managed-by") in _ENDPOINT_SLICE_CONTROLLERS:
        return out
    for i, ep in enumerate(obj.get("endpoints") or []):
        for j, addr in enumerate((ep or {}).get("addresses") or []):
            out.extend(ip_warnings(f"endpoints[{i}].addresses[{j}]", str(addr)))
    return out


@register
class EndpointSliceStrategy(Strategy):
    group = "discovery.k8s.io"
    kind = "EndpointSlice"
    printer = pr.Printer(_ENDPOINT_SLICE_COLUMNS, _endpoint_slice_row)
    has_update_warnings = True

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_endpoint_slice(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_endpoint_slice(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_endpoint_slice(new, old)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        drop_topology_on_v1(obj, None)

    def generation_changed(self, new: Obj, old: Obj) -> bool:
        # everything but metadata, and the labels
        return (any(new.get(k) != old.get(k) for k in {*new, *old} - {"metadata"})
                or new["metadata"].get("labels") != old["metadata"].get("labels"))

    def finish_update(self, new: Obj, old: Obj) -> None:
        drop_topology_on_v1(new, old)  # after the generation, as upstream

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return endpoint_slice_warnings(obj, True)

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return endpoint_slice_warnings(new, False)
