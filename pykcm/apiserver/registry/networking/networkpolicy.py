"""networking.k8s.io/v1 NetworkPolicies (kube-apiserver ``pkg/registry/networking/networkpolicy``):
defaults, validation, warnings, printer.

- defaults: a port's ``protocol`` ``TCP``; ``policyTypes`` ``[Ingress]`` (plus
  ``Egress`` when egress rules are given) when empty;
- create: generation 1, moved by spec changes;
- validation (upstream's messages and paths): the pod selector, per rule the ports
  (protocol TCP/UDP/SCTP, numeric port range with ``endPort``, named port) and peers
  (exactly one of the selectors or ``ipBlock``; ``ipBlock.cidr`` and ``except`` as legacy
  CIDRs, each ``except`` a strict subset), at most two ``policyTypes`` of Ingress/Egress;
  an update accepts the CIDRs and invalid selector label values the old object had;
- warnings: odd ipBlock CIDR forms (``GetWarningsForCIDR``) on create and update;
- printer: Name, Pod-Selector, Age.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    is_valid_port_name,
    is_valid_port_num,
    not_supported,
    required,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.defaulting import set_default
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.networking.ip_fields import (
    cidr_warnings,
    legacy_cidr_errors,
    parse_cidr_sloppy,
)
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Printer,
    Row,
    age,
    as_dict,
    as_list,
    as_str,
    column,
    format_label_selector,
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["NetworkPolicyStrategy"]

PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
POLICY_TYPES: Final = ("Ingress", "Egress")
# (direction, its peers' key)
_RULES: Final = (("ingress", "from"), ("egress", "to"))


def _validate_port(port: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errs.append(not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    value, end = port.get("port"), port.get("endPort")
    if value is None:
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end,
                                "may not be specified when `port` is not specified"))
    elif isinstance(value, int):
        errs += [invalid(f"{path}.port", value, m) for m in is_valid_port_num(value)]
        if end is not None:
            if end < value:
                errs.append(invalid(f"{path}.endPort", value,
                                    "must be greater than or equal to `port`"))
            errs += [invalid(f"{path}.endPort", end, m) for m in is_valid_port_num(end)]
    else:
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end,
                                "may not be specified when `port` is non-numeric"))
        errs += [invalid(f"{path}.port", value, m) for m in is_valid_port_name(as_str(value))]
    return errs


def _validate_ip_block(block: Mapping[str, Any], path: str,
                       old_cidrs: tuple[str, ...]) -> list[Cause]:
    cidr = as_str(block.get("cidr"))
    if not cidr:
        return [required(f"{path}.cidr")]
    errs = legacy_cidr_errors(f"{path}.cidr", cidr, old_cidrs)
    parsed = parse_cidr_sloppy(cidr)
    if parsed is None:
        return errs
    net = parsed[1]
    for i, except_cidr in enumerate(as_list(block.get("except"))):
        except_cidr = as_str(except_cidr)
        epath = f"{path}.except[{i}]"
        errs += legacy_cidr_errors(epath, except_cidr, old_cidrs)
        inner = parse_cidr_sloppy(except_cidr)
        if inner is None:
            continue
        inner_net = inner[1]
        contains = (inner_net.version == net.version
                    and inner_net.network_address in net)
        if not contains or net.prefixlen >= _prefix_in(net, inner_net):
            errs.append(invalid(epath, except_cidr, "must be a strict subset of `cidr`"))
    return errs


def _prefix_in(outer: Any, inner: Any) -> int:
    """The except mask's size as Go's IPMask.Size() counts it against the cidr's family."""
    if inner.version != outer.version:
        return 0 if isinstance(inner, ipaddress.IPv6Network) else inner.prefixlen
    return int(inner.prefixlen)


def _validate_peer(peer: Mapping[str, Any], path: str, allow_invalid: bool,
                   old_cidrs: tuple[str, ...]) -> list[Cause]:
    errs: list[Cause] = []
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        sel = peer.get(key)
        if sel is not None:
            count += 1
            errs += validate_label_selector(as_dict(sel), f"{path}.{key}",
                                            allow_invalid_label_value=allow_invalid)
    block = peer.get("ipBlock")
    if block is not None:
        count += 1
        errs += _validate_ip_block(as_dict(block), f"{path}.ipBlock", old_cidrs)
    if count == 0:
        errs.append(required(path, "must specify a peer"))
    elif count > 1 and block is not None:
        errs.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _validate_spec(spec: Mapping[str, Any], allow_invalid: bool,
                   old_cidrs: tuple[str, ...] = ()) -> list[Cause]:
    errs = validate_label_selector(as_dict(spec.get("podSelector")), "spec.podSelector",
                                   allow_invalid_label_value=allow_invalid)
    for direction, peers_key in _RULES:
        for i, rule in enumerate(as_list(spec.get(direction))):
            rule = as_dict(rule)
            rpath = f"spec.{direction}[{i}]"
            for j, port in enumerate(as_list(rule.get("ports"))):
                errs += _validate_port(as_dict(port), f"{rpath}.ports[{j}]")
            for j, peer in enumerate(as_list(rule.get(peers_key))):
                errs += _validate_peer(as_dict(peer), f"{rpath}.{peers_key}[{j}]",
                                       allow_invalid, old_cidrs)
    types = as_list(spec.get("policyTypes"))
    if len(types) > len(POLICY_TYPES):
        errs.append(invalid("spec.policyTypes", types,
                            "may not specify more than two policyTypes"))
        return errs
    for i, ptype in enumerate(types):
        if ptype not in POLICY_TYPES:
            errs.append(not_supported(f"spec.policyTypes[{i}]", ptype, POLICY_TYPES))
    return errs


def _ip_blocks(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    out = []
    for direction, peers_key in _RULES:
        for i, rule in enumerate(as_list(spec.get(direction))):
            for j, peer in enumerate(as_list(as_dict(rule).get(peers_key))):
                block = as_dict(peer).get("ipBlock")
                if block is not None:
                    out.append((f"spec.{direction}[{i}].{peers_key}[{j}].ipBlock",
                                as_dict(block)))
    return out


def _warnings(obj: Obj) -> list[str]:
    out: list[str] = []
    for path, block in _ip_blocks(as_dict(obj.get("spec"))):
        out += cidr_warnings(f"{path}.cidr", as_str(block.get("cidr")))
        for k, except_cidr in enumerate(as_list(block.get("except"))):
            out += cidr_warnings(f"{path}.except[{k}]", as_str(except_cidr))
    return out


_COLUMNS: Final = (
    NAME_COLUMN,
    column("Pod-Selector", "string",
           "podSelector selects the pods to which this NetworkPolicy object applies. The array "
           "of rules is applied to any pods selected by this field. An empty selector matches "
           "all pods in the policy's namespace. Multiple network policies can select the same "
           "set of pods. In this case, the ingress rules for each are combined additively. "
           "This field is optional. If it is not specified, it defaults to an empty selector."),
    AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    return Row([object_name(obj),
                format_label_selector(as_dict(obj.get("spec")).get("podSelector") or {}),
                age(obj, now)])


@register
class NetworkPolicyStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "NetworkPolicy"
    printer = Printer(_COLUMNS, _row)
    has_update_warnings = True

    def default(self, obj: Obj, *, create: bool) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        for direction, _ in _RULES:
            for rule in as_list(spec.get(direction)):
                for port in as_list(as_dict(rule).get("ports")):
                    if isinstance(port, dict):
                        set_default(port, "protocol", "TCP")
        if not as_list(spec.get("policyTypes")):
            spec["policyTypes"] = ["Ingress", "Egress"] if as_list(spec.get("egress")) \
                else ["Ingress"]

    def validate_create(self, obj: Obj) -> list[Cause]:
        errs = validate_object_meta(obj.get("metadata"), namespaced=True)
        return errs + _validate_spec(as_dict(obj.get("spec")), False)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return _warnings(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        old_spec = as_dict(old.get("spec"))
        allow = bool(validate_label_selector(as_dict(old_spec.get("podSelector")), ""))
        old_cidrs: list[str] = []
        for _, block in _ip_blocks(old_spec):
            old_cidrs.append(as_str(block.get("cidr")))
            old_cidrs += [as_str(c) for c in as_list(block.get("except"))]
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        return errs + _validate_spec(as_dict(new.get("spec")), allow, tuple(old_cidrs))

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return _warnings(new)
