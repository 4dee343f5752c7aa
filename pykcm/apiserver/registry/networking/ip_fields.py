"""IP and CIDR fields of the networking.k8s.io kinds (apimachinery's
``util/validation/ip.go`` and k8s.io/utils' sloppy parsers, as kube-apiserver v1.36 runs
them with StrictIPCIDRValidation on).

Two families of checks, as upstream:

- *legacy* fields (NetworkPolicy ipBlock CIDRs, Ingress status IPs): parsed the old,
  sloppy way (IPv4 octets and prefix lengths with leading zeros, host bits, IPv4-mapped
  IPv6), then refused with the strict reason (``must not have leading 0s``, ...); a value
  the old object already had is accepted as it is; odd but valid forms only warn
  (``GetWarningsForCIDR``/``GetWarningsForIP``);
- *new* fields (ServiceCIDR cidrs, IPAddress names): the strict parse and, on top, the
  canonical form (``must be in canonical form ("10.0.0.0/8")``).

Pure functions over strings; error texts are upstream's.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from pykcm.api.validation import Cause, go_quote, invalid

__all__ = [
    "cidr_warnings",
    "ip_family",
    "ip_warnings",
    "is_valid_cidr",
    "is_valid_ip",
    "legacy_cidr_errors",
    "legacy_ip_errors",
    "parse_cidr_sloppy",
    "parse_ip_sloppy",
]

IPAddr = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network

_IP_ERR: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_CIDR_ERR: Final = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def parse_ip_sloppy(value: str) -> IPAddr | None:
    """netutils.ParseIPSloppy: IPv4 octets may carry leading zeros; no zones."""
    if not value or "%" in value or value != value.strip():
        return None
    if ":" not in value:
        parts = value.split(".")
        if len(parts) != 4 or not all(p.isascii() and p.isdigit() and 0 < len(p) for p in parts):
            return None
        nums = [int(p) for p in parts]
        return ipaddress.IPv4Address(".".join(map(str, nums))) if max(nums) < 256 else None
    try:
        return ipaddress.IPv6Address(value)
    except ValueError:
        return None


def _strict_ip_ok(value: str) -> bool:
    """netip.ParseAddr accepts it (no leading zeros)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _is_4in6(ip: IPAddr) -> bool:
    return isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None


def _go_ip_string(ip: IPAddr) -> str:
    """net.IP.String(): an IPv4-mapped address prints as its IPv4 form."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def legacy_ip_errors(path: str, value: str, valid_old: tuple[str, ...] = ()) -> list[Cause]:
    """IsValidIPForLegacyField with strict validation."""
    if value in valid_old:
        return []
    ip = parse_ip_sloppy(value)
    if ip is None:
        return [invalid(path, value, _IP_ERR)]
    errs = []
    if not _strict_ip_ok(value):
        errs.append(invalid(path, value, "must not have leading 0s"))
    if _is_4in6(ip):
        errs.append(invalid(path, value, "must not be an IPv4-mapped IPv6 address"))
    return errs


def is_valid_ip(path: str, value: str) -> list[Cause]:
    """IsValidIP: strict, and in canonical form."""
    errs = legacy_ip_errors(path, value)
    if errs:
        return errs
    ip = parse_ip_sloppy(value)
    assert ip is not None
    if _go_ip_string(ip) != value:
        return [invalid(path, value, f"must be in canonical form ({go_quote(_go_ip_string(ip))})")]
    return []


def ip_warnings(path: str, value: str) -> list[str]:
    """GetWarningsForIP."""
    ip = parse_ip_sloppy(value)
    if ip is None:
        return []
    if not _strict_ip_ok(value) or _is_4in6(ip):
        return [(f"{path}: non-standard IP address {go_quote(value)} is invalid: use "
                f"{go_quote(_go_ip_string(ip))}")]
    if isinstance(ip, ipaddress.IPv6Address) and str(ip) != value:
        return [(f"{path}: IPv6 address {go_quote(value)} should be in RFC 5952 canonical "
                f"format ({go_quote(str(ip))})")]
    return []


def parse_cidr_sloppy(value: str) -> tuple[IPAddr, IPNet] | None:
    """netutils.ParseCIDRSloppy: the address (as written) and its network."""
    addr, sep, bits = value.partition("/")
    if not sep or not bits.isascii() or not bits.isdigit() or len(bits) > 3:
        return None
    ip = parse_ip_sloppy(addr)
    if ip is None:
        return None
    n = int(bits)
    if ":" not in addr and isinstance(ip, ipaddress.IPv4Address):
        if n > 32:
            return None
        return ip, ipaddress.IPv4Network((ip, n), strict=False)
    if n > 128:
        return None
    assert isinstance(ip, ipaddress.IPv6Address)
    return ip, ipaddress.IPv6Network((ip, n), strict=False)


def _go_net_string(net: IPNet) -> str:
    """net.IPNet.String(): an IPv4-mapped network with a v4-sized mask prints as IPv4."""
    if isinstance(net, ipaddress.IPv6Network) and net.network_address.ipv4_mapped is not None \
            and net.prefixlen >= 96:
        v4 = ipaddress.IPv4Network((net.network_address.ipv4_mapped, net.prefixlen - 96))
        return str(v4)
    return str(net)


def _strict_cidr_errors(path: str, value: str, ip: IPAddr, net: IPNet) -> list[Cause]:
    addr, _, bits = value.partition("/")
    if not _strict_ip_ok(addr) or (len(bits) > 1 and bits.startswith("0")):
        return [invalid(path, value, "must not have leading 0s in IP or prefix length")]
    if _is_4in6(ip):
        return [invalid(path, value, "must not have an IPv4-mapped IPv6 address")]
    if ip != net.network_address:
        return [invalid(path, value, "must not have bits set beyond the prefix length")]
    return []


def legacy_cidr_errors(path: str, value: str, valid_old: tuple[str, ...] = ()) -> list[Cause]:
    """IsValidCIDRForLegacyField with strict validation."""
    if value in valid_old:
        return []
    parsed = parse_cidr_sloppy(value)
    if parsed is None:
        return [invalid(path, value, _CIDR_ERR)]
    return _strict_cidr_errors(path, value, *parsed)


def is_valid_cidr(path: str, value: str) -> list[Cause]:
    """IsValidCIDR: strict, and in canonical form."""
    parsed = parse_cidr_sloppy(value)
    if parsed is None:
        return [invalid(path, value, _CIDR_ERR)]
    errs = _strict_cidr_errors(path, value, *parsed)
    if errs:
        return errs
    canonical = _go_net_string(parsed[1])
    if canonical != value:
        return [invalid(path, value, f"must be in canonical form ({go_quote(canonical)})")]
    return []


def cidr_warnings(path: str, value: str) -> list[str]:
    """GetWarningsForCIDR: host bits set, or a non-standard (leading zeros, IPv4-mapped) or
    non-canonical IPv6 form."""
    parsed = parse_cidr_sloppy(value)
    if parsed is None:
        return []
    ip, net = parsed
    out = []
    canonical = _go_net_string(net)
    if ip != net.network_address:
        bits = 32 if isinstance(net, ipaddress.IPv4Network) or _is_4in6(ip) else 128
        out.append(f"{path}: CIDR value {go_quote(value)} is ambiguous in this context (should "
                   f"be {go_quote(canonical)} or {go_quote(f'{_go_ip_string(ip)}/{bits}')}?)")
    addr, _, bits_text = value.partition("/")
    if not _strict_ip_ok(addr) or (len(bits_text) > 1 and bits_text.startswith("0")) \
            or _is_4in6(ip):
        out.append(f"{path}: non-standard CIDR value {go_quote(value)} is invalid: use "
                   f"{go_quote(canonical)}")
    if not out and isinstance(net, ipaddress.IPv6Network) and str(net) != value:
        out.append(f"{path}: IPv6 CIDR value {go_quote(value)} should be in RFC 5952 canonical "
                   f"format ({go_quote(str(net))})")
    return out


def ip_family(cidr: str) -> str:
    """netutils.IPFamilyOfCIDRString: "4", "6" or "" (unknown)."""
    parsed = parse_cidr_sloppy(cidr)
    if parsed is None:
        return ""
    return "4" if isinstance(parsed[1], ipaddress.IPv4Network) else "6"
