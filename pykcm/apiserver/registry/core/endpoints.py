"""core/v1 Endpoints (pkg/registry/core/endpoint): defaults (ports' TCP), validation
(addresses, special IPs, ports) and printer.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    invalid,
    is_valid_ip,
    is_valid_port_num,
    not_supported,
    required,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.defaulting import dicts_in, go_order_object
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_int, as_list, as_map, as_str, validate_meta

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

def _default_endpoints(obj: Obj, create: bool) -> None:
    for subset in dicts_in(obj.get("subsets")):
        for port in dicts_in(subset.get("ports")):
            if not port.get("protocol"):
                port["protocol"] = "TCP"


# --- validation ------------------------------------------------------------------------

def _create_endpoints(obj: Mapping[str, Any]) -> list[Cause]:
    return validate_meta(obj, True) + _endpoints_body(obj)


def _endpoints_body(obj: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    for i, subset in enumerate(as_list(obj.get("subsets"))):
        subset = as_map(subset)
        spath = f"subsets[{i}]"
        if not as_list(subset.get("addresses")) and not as_list(subset.get("notReadyAddresses")):
            errs.append(required(spath, "must specify `addresses` or `notReadyAddresses`"))
        for field_name in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(as_list(subset.get(field_name))):
                ip = as_str(as_map(addr).get("ip"))
                ipath = f"{spath}.{field_name}[{j}].ip"
                errs.extend(invalid(ipath, ip, m) for m in is_valid_ip(ip))
                errs.extend(invalid(ipath, ip, m) for m in _special_ip(ip))
        for j, port in enumerate(as_list(subset.get("ports"))):
            port = as_map(port)
            ppath = f"{spath}.ports[{j}]"
            pnum = as_int(port.get("port")) or 0
            errs.extend(invalid(f"{ppath}.port", pnum, m) for m in is_valid_port_num(pnum))
            proto = as_str(port.get("protocol"))
            if not proto:
                errs.append(required(f"{ppath}.protocol"))
            elif proto not in podspec.PROTOCOLS:
                errs.append(not_supported(f"{ppath}.protocol", proto, podspec.PROTOCOLS))
    return errs


def _special_ip(ip: str) -> list[str]:
    """validateNonSpecialIP: endpoint addresses may not be special-purpose ones."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return ["must be a valid IP address"]
    if addr.is_unspecified:
        return ["may not be unspecified (0.0.0.0, ::)"]
    if addr.is_loopback:
        return ["may not be in the loopback range (127.0.0.0/8, ::1/128)"]
    if addr.is_link_local:
        return ["may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
    if addr in ipaddress.ip_network("224.0.0.0/24") or addr in ipaddress.ip_network("ff02::/16"):
        return ["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
    return []


def _update_endpoints(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
            + _endpoints_body(new))


# --- printer ---------------------------------------------------------------------------

_ENDPOINTS_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Endpoints", "string",
         "The set of all endpoints is the union of all subsets. Addresses are placed into "
         "subsets according to the IPs they share. A single address with multiple ports, some "
         "of which are ready and some of which are not (because they come from different "
         "containers) will result in the address being displayed in different subsets for the "
         "different ports. No address will appear in both Addresses and NotReadyAddresses in "
         "the same subset. Sets of addresses and ports that comprise a service."),
    pr.AGE_COLUMN,
)


def _format_endpoints(obj: Mapping[str, Any]) -> str:
    subsets = pr.as_list(obj.get("subsets"))
    if not subsets:
        return "<none>"
    items: list[str] = []
    limit = 3
    more = False
    count = 0
    for ss in subsets:
        ss = pr.as_dict(ss)
        addresses = [pr.as_str(pr.as_dict(a).get("ip")) for a in pr.as_list(ss.get("addresses"))]
        ports = pr.as_list(ss.get("ports"))
        if not ports:
            # headless services with no ports
            count += len(addresses)
            for ip in addresses:
                if len(items) == limit:
                    more = True
                    break
                items.append(ip)
            continue
        for port in ports:
            count += len(addresses)
            for ip in addresses:
                if len(items) == limit:
                    more = True
                    break
                items.append(pr.join_host_port(ip, pr.as_int(pr.as_dict(port).get("port"))))
    ret = ",".join(items)
    if more:
        return f"{ret} + {count - limit} more..."
    return ret


def _endpoints_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([pr.object_name(obj), _format_endpoints(obj), pr.age(obj, now)])


# --- the strategy ----------------------------------------------------------------------

@register
class EndpointsStrategy(Strategy):
    kind = "Endpoints"
    printer = pr.Printer(_ENDPOINTS_COLUMNS, _endpoints_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_endpoints(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_endpoints(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_endpoints(new, old)
