"""core/v1 Nodes (pkg/registry/core/node): defaults, validation (taints, pod CIDRs, the
immutable fields), printer. A node's creator (its kubelet) reports its status.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    forbidden,
    invalid,
    is_qualified_name,
    is_valid_label_value,
    not_supported,
    required,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.defaulting import child_dict, go_order_object
from pykcm.apiserver.registry.defaults import NODE_INFO_FIELDS
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_list, as_map, as_str, validate_meta

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

def _default_node(obj: Obj, create: bool) -> None:
    child_dict(obj, "spec")  # a struct: always serialized
    status = child_dict(obj, "status")
    capacity = status.get("capacity")
    if status.get("allocatable") is None and isinstance(capacity, dict):
        status["allocatable"] = dict(capacity)
    # Go serializes the zero NodeDaemonEndpoints and NodeSystemInfo structs.
    endpoint = child_dict(child_dict(status, "daemonEndpoints"), "kubeletEndpoint")
    endpoint.setdefault("Port", 0)
    info = child_dict(status, "nodeInfo")
    for k in NODE_INFO_FIELDS:
        info.setdefault(k, "")


# --- validation ------------------------------------------------------------------------

def _create_node(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_meta(obj, False)
    spec = as_map(obj.get("spec"))
    for i, cidr in enumerate(as_list(spec.get("podCIDRs"))):
        try:
            ipaddress.ip_network(as_str(cidr), strict=False)
        except ValueError:
            errs.append(invalid(f"spec.podCIDRs[{i}]", as_str(cidr),
                                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
    # upstream names the path metadata.taints (validateNodeTaints' quirk)
    errs.extend(_validate_taints(as_list(spec.get("taints")), "metadata.taints"))
    return errs


def _validate_taints(taints: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(taints):
        t = as_map(t)
        ipath = f"{path}[{i}]"
        key = as_str(t.get("key"))
        if not key:
            errs.append(required(f"{ipath}.key"))
        else:
            errs.extend(invalid(f"{ipath}.key", key, m) for m in is_qualified_name(key))
        value = as_str(t.get("value"))
        errs.extend(invalid(f"{ipath}.value", value, m) for m in is_valid_label_value(value))
        effect = as_str(t.get("effect"))
        if not effect:
            errs.append(required(f"{ipath}.effect"))
        elif effect not in podspec.TAINT_EFFECTS:
            errs.append(not_supported(f"{ipath}.effect", effect, podspec.TAINT_EFFECTS))
        if (key, effect) in seen:
            # the internal Taint, as JSON with Go's field names
            errs.append(Cause("FieldValueDuplicate", ipath,
                              "taints must be unique by key and effect pair",
                              json.dumps({"Key": key, "Value": value, "Effect": effect,
                                          "TimeAdded": t.get("timeAdded")},
                                         separators=(",", ":"))))
        seen.add((key, effect))
    return errs


def _update_node(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    nspec, ospec = as_map(new.get("spec")), as_map(old.get("spec"))
    ocidrs, ncidrs = as_list(ospec.get("podCIDRs")), as_list(nspec.get("podCIDRs"))
    if (ocidrs and ocidrs != ncidrs) or (
            ospec.get("podCIDR") and ospec.get("podCIDR") != nspec.get("podCIDR")):
        errs.append(forbidden("spec.podCIDRs",
                              'node updates may not change podCIDR except from "" to valid'))
    if ospec.get("providerID") and ospec.get("providerID") != nspec.get("providerID"):
        errs.append(forbidden("spec.providerID",
                              'node updates may not change providerID except from "" to valid'))
    errs.extend(_validate_taints(as_list(nspec.get("taints")), "metadata.taints"))
    return errs


# --- printer ---------------------------------------------------------------------------

_D_NODE_ADDRESSES: Final = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More "
    "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field "
    "is declared as mergeable, but the merge key is not sufficiently unique, which can cause "
    "data corruption when it is merged. Callers should instead use a full-replacement patch. "
    "See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can "
    "change during the lifetime of a Node. However, there are some exceptions where this may "
    "not be possible, such as Pods that inherit a Node's address in its own status or "
    "consumers of the downward API (status.hostIP)."
)


_NODE_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Status", "string", "The status of the node"),
    pr.column("Roles", "string", "The roles of the node"),
    pr.AGE_COLUMN,
    pr.column("Version", "string", "Kubelet Version reported by the node."),
    pr.column("Internal-IP", "string", _D_NODE_ADDRESSES, priority=1),
    pr.column("External-IP", "string", _D_NODE_ADDRESSES, priority=1),
    pr.column("OS-Image", "string",
         "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
         "(wheezy)).", priority=1),
    pr.column("Kernel-Version", "string",
         "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
         priority=1),
    pr.column("Container-Runtime", "string",
         "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
         "containerd://1.4.2).", priority=1),
)


def _node_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    meta = pr.as_dict(obj.get("metadata"))
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    ready_status: str | None = None
    for cond in pr.as_list(status.get("conditions")):
        cond = pr.as_dict(cond)
        if cond.get("type") == "Ready":  # the last one wins, as in upstream's map
            ready_status = pr.as_str(cond.get("status"))
    states = []
    if ready_status is not None:
        states.append("Ready" if ready_status == "True" else "NotReady")
    else:
        states.append("Unknown")
    if spec.get("unschedulable") is True:
        states.append("SchedulingDisabled")

    roles: set[str] = set()
    for k, v in pr.as_dict(meta.get("labels")).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(pr.as_str(v))

    def address(kind: str) -> str:
        for a in pr.as_list(status.get("addresses")):
            a = pr.as_dict(a)
            if a.get("type") == kind:
                return pr.as_str(a.get("address"))
        return "<none>"

    info = pr.as_dict(status.get("nodeInfo"))
    return pr.Row([
        pr.as_str(meta.get("name")), ",".join(states), ",".join(sorted(roles)) or "<none>",
        pr.age(obj, now), pr.as_str(info.get("kubeletVersion")),
        address("InternalIP"), address("ExternalIP"),
        pr.as_str(info.get("osImage")) or "<unknown>",
        # the architecture goes after the kernel version (v1.36's printer)
        (pr.as_str(info.get("kernelVersion")) or "<unknown>")
        + (f" ({pr.as_str(info['architecture'])})" if info.get("architecture") else ""),
        pr.as_str(info.get("containerRuntimeVersion")) or "<unknown>",
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class NodeStrategy(Strategy):
    kind = "Node"
    printer = pr.Printer(_NODE_COLUMNS, _node_row)
    create_keeps_status = True

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_node(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_node(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_node(new, old)
