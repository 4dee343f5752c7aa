"""core/v1 Services (pkg/registry/core/service): defaults, validation, status rules, the
allocated addresses an update keeps, and printer.

- Defaults: ClusterIP, SessionAffinity None, ports' TCP and targetPort, the IP
  family fields (a headless or ExternalName service gets none).
- The cluster IP and node port allocation is the generic store's
  (service_allocator.py); an update that leaves the addresses out keeps them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    duplicate,
    forbidden,
    go_string_slice,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_ip,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns_label,
    not_supported,
    required,
    validate_labels,
    validate_object_meta_update,
)
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.core import podspec_validation as podspec
from pykcm.apiserver.registry.defaulting import (
    GoOrder,
    child_dict,
    dicts_in,
    go_order_object,
    set_default,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_int, as_list, as_map, as_str, validate_meta

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

_SERVICE_SPEC: Final = GoOrder(
    "ports", "selector", "clusterIP", "clusterIPs", "type", "externalIPs", "sessionAffinity",
    "loadBalancerIP", "loadBalancerSourceRanges", "externalName", "externalTrafficPolicy",
    "healthCheckNodePort", "publishNotReadyAddresses", "sessionAffinityConfig", "ipFamilies",
    "ipFamilyPolicy", "allocateLoadBalancerNodePorts", "loadBalancerClass",
    "internalTrafficPolicy", "trafficDistribution")


_SERVICE_PORT: Final = GoOrder("name", "protocol", "appProtocol", "port", "targetPort", "nodePort")


def _is_headless(spec: Mapping[str, Any]) -> bool:
    return spec.get("clusterIP") == "None"


def _default_service(obj: Obj, create: bool) -> None:
    spec = child_dict(obj, "spec")
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    svc_type = spec["type"]
    for port in dicts_in(spec.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        target = port.get("targetPort")
        if target is None or target == 0 or target == "":
            port["targetPort"] = port.get("port", 0)
        _SERVICE_PORT.apply(port)
    externally_accessible = svc_type in ("LoadBalancer", "NodePort") or (
        svc_type == "ClusterIP" and bool(spec.get("externalIPs")))
    if externally_accessible and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and svc_type in ("NodePort", "LoadBalancer",
                                                                   "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if svc_type == "LoadBalancer":
        set_default(spec, "allocateLoadBalancerNodePorts", True)
    if svc_type != "ExternalName":
        # The IP-family fields of a single-stack IPv4 cluster, as the service
        # REST storage fills them (the address itself is the allocator's).
        if spec.get("ipFamilyPolicy") is None:
            headless_selectorless = _is_headless(spec) and not spec.get("selector")
            spec["ipFamilyPolicy"] = "RequireDualStack" if headless_selectorless else "SingleStack"
        if not spec.get("ipFamilies"):
            # a headless Service without selector asks for both families; this cluster has
            # IPv4 only, but the field lists what was asked (as upstream's REST fills it)
            dual = spec.get("ipFamilyPolicy") == "RequireDualStack" and _is_headless(spec)
            spec["ipFamilies"] = ["IPv4", "IPv6"] if dual else ["IPv4"]
    _SERVICE_SPEC.apply(spec)
    status = child_dict(obj, "status")
    child_dict(status, "loadBalancer")


# --- validation ------------------------------------------------------------------------

def _validate_service(obj: Mapping[str, Any]) -> list[Cause]:
    # v1.36 (RelaxedServiceNameValidation): a Service name is an RFC 1123 label
    return validate_meta(obj, True, name_is_dns_label) + _service_body(obj)


def _service_body(obj: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    spec = as_map(obj.get("spec"))
    svc_type = as_str(spec.get("type"))
    ports = as_list(spec.get("ports"))
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and svc_type != "ExternalName":
        errs.append(required("spec.ports"))
    if svc_type == "ExternalName":
        if spec.get("clusterIPs"):
            errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            errs.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = as_str(spec.get("externalName")).removesuffix(".")
        if cname:
            errs.extend(invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname))
        else:
            errs.append(required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = as_map(port)
        ipath = f"spec.ports[{i}]"
        pname = as_str(port.get("name"))
        if len(ports) > 1 and not pname:
            errs.append(required(f"{ipath}.name"))
        elif pname:
            errs.extend(invalid(f"{ipath}.name", pname, m) for m in is_dns1123_label(pname))
            if pname in names:
                errs.append(duplicate(f"{ipath}.name", pname))
            else:
                names.add(pname)
        pnum = as_int(port.get("port")) or 0
        errs.extend(invalid(f"{ipath}.port", pnum, m) for m in is_valid_port_num(pnum))
        proto = as_str(port.get("protocol"))
        if not proto:
            errs.append(required(f"{ipath}.protocol"))
        elif proto not in podspec.PROTOCOLS:
            errs.append(not_supported(f"{ipath}.protocol", proto, podspec.PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            errs.extend(invalid(f"{ipath}.targetPort", target, m) for m in is_valid_port_name(target))
        elif isinstance(target, int) and not isinstance(target, bool):
            errs.extend(invalid(f"{ipath}.targetPort", target, m) for m in is_valid_port_num(target))
        app_protocol = port.get("appProtocol")
        if app_protocol is not None:
            errs.extend(invalid(f"{ipath}.appProtocol", as_str(app_protocol), m)
                        for m in is_qualified_name(as_str(app_protocol)))
    errs.extend(validate_labels(as_map(spec.get("selector")), "spec.selector"))
    affinity = as_str(spec.get("sessionAffinity"))
    if not affinity:
        errs.append(required("spec.sessionAffinity"))
    elif affinity not in ("ClientIP", "None"):
        errs.append(not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    if affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(forbidden("spec.sessionAffinityConfig",
                              "must not be set when session affinity is None"))
    cluster_ips = [as_str(x) for x in as_list(spec.get("clusterIPs"))] or (
        [as_str(spec["clusterIP"])] if spec.get("clusterIP") else [])
    for i, ip in enumerate(cluster_ips):
        if i == 0 and ip == "None":
            if len(cluster_ips) > 1:
                errs.append(invalid("spec.clusterIPs", go_string_slice(cluster_ips),
                                    "'None' must be the first and only value"))
            if svc_type in ("LoadBalancer", "NodePort"):
                errs.append(invalid("spec.clusterIPs[0]", ip,
                                    f"may not be set to 'None' for {svc_type} services"))
            continue
        errs.extend(invalid(f"spec.clusterIPs[{i}]", ip, m) for m in is_valid_ip(ip))
    if spec.get("clusterIP") and spec.get("clusterIPs") and (
            spec["clusterIP"] != as_list(spec["clusterIPs"])[0]):
        errs.append(invalid("spec.clusterIPs", go_string_slice([as_str(x) for x in cluster_ips]),
                            "first value must match `clusterIP`"))
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in ("SingleStack", "PreferDualStack", "RequireDualStack"):
        errs.append(not_supported("spec.ipFamilyPolicy", as_str(policy),
                                  ("SingleStack", "PreferDualStack", "RequireDualStack")))
    for i, fam in enumerate(as_list(spec.get("ipFamilies"))):
        if fam not in ("IPv4", "IPv6"):
            errs.append(not_supported(f"spec.ipFamilies[{i}]", as_str(fam), ("IPv4", "IPv6")))
    for i, ip in enumerate(as_list(spec.get("externalIPs"))):
        errs.extend(invalid(f"spec.externalIPs[{i}]", as_str(ip), m) for m in is_valid_ip(as_str(ip)))
    if not svc_type:
        errs.append(required("spec.type"))
    elif svc_type not in ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"):
        errs.append(not_supported("spec.type", svc_type,
                                  ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")))
    if svc_type == "ClusterIP":
        for i, port in enumerate(ports):
            if as_int(as_map(port).get("nodePort")):
                errs.append(forbidden(f"spec.ports[{i}].nodePort",
                                      "may not be used when `type` is 'ClusterIP'"))
    seen: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        port = as_map(port)
        key = (as_str(port.get("protocol")), as_int(port.get("port")) or 0)
        if key in seen:
            # the internal ServicePort the check builds, as JSON with Go's field names
            errs.append(duplicate(f"spec.ports[{i}]", GoValue(json.dumps(
                {"Name": "", "Protocol": key[0], "AppProtocol": None, "Port": key[1],
                 "TargetPort": 0, "NodePort": 0}, separators=(",", ":")))))
        seen.add(key)
    itp = spec.get("internalTrafficPolicy")
    if itp is not None and itp not in ("Cluster", "Local"):
        errs.append(not_supported("spec.internalTrafficPolicy", as_str(itp), ("Cluster", "Local")))
    etp = spec.get("externalTrafficPolicy")
    if etp and etp not in ("Cluster", "Local"):
        errs.append(not_supported("spec.externalTrafficPolicy", as_str(etp), ("Cluster", "Local")))
    elif etp and not (svc_type in ("NodePort", "LoadBalancer") or as_list(spec.get("externalIPs"))):
        errs.append(invalid("spec.externalTrafficPolicy", as_str(etp),
                            "may only be set for externally-accessible services"))
    return errs


def _service_cluster_ips(spec: Mapping[str, Any]) -> list[str]:
    ips = [as_str(x) for x in as_list(spec.get("clusterIPs"))]
    if not ips and spec.get("clusterIP"):
        ips = [as_str(spec["clusterIP"])]
    return ips


def _update_service(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    nspec, ospec = as_map(new.get("spec")), as_map(old.get("spec"))
    if nspec.get("type") != "ExternalName" and ospec.get("type") != "ExternalName":
        old_ips = _service_cluster_ips(ospec)
        new_ips = _service_cluster_ips(nspec)
        # An update that omits the allocated addresses keeps them (upstream's
        # strategy patches them back before validating).
        if not new_ips:
            new_ips = old_ips
        both_headless = ospec.get("clusterIP") == "None" and nspec.get("clusterIP") in (
            "None", None)
        if not both_headless:
            rendered = go_string_slice(new_ips)
            if len(old_ips) == len(new_ips):
                for i, ip in enumerate(old_ips):
                    if ip != new_ips[i]:
                        errs.append(invalid(f"spec.clusterIPs[{i}]", rendered,
                                            "may not change once set"))
            elif len(old_ips) > len(new_ips):
                if new_ips and new_ips[0] != old_ips[0]:
                    errs.append(invalid("spec.clusterIPs[0]", rendered, "may not change once set"))
                if len(new_ips) == 1 and nspec.get("ipFamilyPolicy") != "SingleStack":
                    errs.append(invalid("spec.clusterIPs[0]", rendered,
                                        "`ipFamilyPolicy` must be set to 'SingleStack' when "
                                        "releasing the secondary clusterIP"))
            elif old_ips and new_ips[0] != old_ips[0]:
                errs.append(invalid("spec.clusterIPs[0]", rendered, "may not change once set"))
    patched = dict(new)
    if not _service_cluster_ips(nspec) and _service_cluster_ips(ospec):
        pspec = dict(nspec)
        pspec["clusterIP"] = ospec.get("clusterIP")
        if ospec.get("clusterIPs") is not None:
            pspec["clusterIPs"] = ospec.get("clusterIPs")
        patched["spec"] = pspec
    errs.extend(_service_body(patched))
    return errs


def _status_service(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    ingress = as_list(as_map(as_map(new.get("status")).get("loadBalancer")).get("ingress"))
    if ingress and as_map(new.get("spec")).get("type") != "LoadBalancer":
        errs.append(forbidden("status.loadBalancer.ingress",
                              "may only be used when `spec.type` is 'LoadBalancer'"))
    for i, ing in enumerate(ingress):
        ip = as_str(as_map(ing).get("ip"))
        if ip:
            errs.extend(invalid(f"status.loadBalancer.ingress[{i}].ip", ip, m)
                        for m in is_valid_ip(ip))
    return errs


# --- printer ---------------------------------------------------------------------------

_SERVICE_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Type", "string",
         "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
         "ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a "
         "cluster-internal IP address for load-balancing to endpoints. Endpoints are "
         "determined by the selector or if that is not specified, by manual construction of "
         "an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual "
         "IP is allocated and the endpoints are published as a set of endpoints rather than a "
         "virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node "
         "which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on "
         "NodePort and creates an external load-balancer (if supported in the current cloud) "
         "which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this "
         "service to the specified externalName. Several other fields do not apply to "
         "ExternalName services. More info: https://kubernetes.io/docs/concepts/"
         "services-networking/service/#publishing-services-service-types"),
    pr.column("Cluster-IP", "string",
         "clusterIP is the IP address of the service and is usually assigned randomly. If an "
         "address is specified manually, is in-range (as per system configuration), and is not "
         "in use, it will be allocated to the service; otherwise creation of the service will "
         "fail. This field may not be changed through updates unless the type field is also "
         "being changed to ExternalName (which requires this field to be blank) or the type "
         "field is being changed from ExternalName (in which case this field may optionally be "
         "specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a "
         "valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual "
         "IP), which is useful when direct endpoint connections are preferred and proxying is "
         "not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this "
         "field is specified when creating a Service of type ExternalName, creation will fail. "
         "This field will be wiped when updating a Service to type ExternalName. More info: "
         "https://kubernetes.io/docs/concepts/services-networking/service/"
         "#virtual-ips-and-service-proxies"),
    pr.column("External-IP", "string",
         "externalIPs is a list of IP addresses for which nodes in the cluster will also "
         "accept traffic for this service.  These IPs are not managed by Kubernetes.  The user "
         "is responsible for ensuring that traffic arrives at a node with this IP.  A common "
         "example is external load-balancers that are not part of the Kubernetes system."),
    pr.column("Port(s)", "string",
         "The list of ports that are exposed by this service. More info: "
         "https://kubernetes.io/docs/concepts/services-networking/service/"
         "#virtual-ips-and-service-proxies"),
    pr.AGE_COLUMN,
    pr.column("Selector", "string",
         "Route service traffic to pods with label keys and values matching this selector. If "
         "empty or not present, the service is assumed to have an external process managing "
         "its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, "
         "NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: "
         "https://kubernetes.io/docs/concepts/services-networking/service/", priority=1),
)


def _load_balancer_status(status: Mapping[str, Any]) -> str:
    result: set[str] = set()
    for ing in pr.as_list(pr.as_dict(status.get("loadBalancer")).get("ingress")):
        ing = pr.as_dict(ing)
        if pr.as_str(ing.get("ip")):
            result.add(pr.as_str(ing.get("ip")))
        elif pr.as_str(ing.get("hostname")):
            result.add(pr.as_str(ing.get("hostname")))
    # the server prints wide: no clipping to 16 characters
    return ",".join(sorted(result))


def _service_external_ip(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    svc_type = spec.get("type")
    external_ips = [pr.as_str(ip) for ip in pr.as_list(spec.get("externalIPs"))]
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if svc_type == "LoadBalancer":
        lb_ips = _load_balancer_status(status)
        if external_ips:
            results = lb_ips.split(",") if lb_ips else []
            return ",".join(results + external_ips)
        return lb_ips or "<pending>"
    if svc_type == "ExternalName":
        return pr.as_str(spec.get("externalName"))
    return "<unknown>"


def _port_string(ports: Iterable[Any]) -> str:
    pieces = []
    for p in ports:
        p = pr.as_dict(p)
        port, protocol, node_port = pr.as_int(p.get("port")), pr.as_str(p.get("protocol")), pr.as_int(p.get("nodePort"))
        if node_port > 0:
            pieces.append(f"{port}:{node_port}/{protocol}")
        else:
            pieces.append(f"{port}/{protocol}")
    return ",".join(pieces)


def _service_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    cluster_ips = pr.as_list(spec.get("clusterIPs"))
    if not cluster_ips and pr.as_str(spec.get("clusterIP")):
        cluster_ips = [spec.get("clusterIP")]  # clusterIPs is set from clusterIP on write
    internal_ip = pr.as_str(cluster_ips[0]) if cluster_ips else "<none>"
    ports = _port_string(pr.as_list(spec.get("ports"))) or "<none>"
    return pr.Row([
        pr.object_name(obj), pr.as_str(spec.get("type")), internal_ip,
        _service_external_ip(spec, pr.as_dict(obj.get("status"))), ports, pr.age(obj, now),
        pr.format_labels(spec.get("selector")),
    ])


# --- the strategy ----------------------------------------------------------------------

def _keep_service_addresses(new: Obj, old: Obj) -> None:
    """An update that leaves out the allocated addresses keeps them (upstream patches them back)."""
    spec = new.get("spec")
    old_spec = old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    if (not spec.get("clusterIP") and not spec.get("clusterIPs") and old_spec.get("clusterIP")
            and spec.get("type", "ClusterIP") != "ExternalName"):
        spec["clusterIP"] = old_spec["clusterIP"]
        if old_spec.get("clusterIPs"):
            spec["clusterIPs"] = old_spec["clusterIPs"]
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                     for p in old_spec.get("ports") or [] if isinstance(p, dict)}
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and not p.get("nodePort"):
                np = old_ports.get((p.get("port"), p.get("protocol", "TCP")))
                if np:
                    p["nodePort"] = np


@register
class ServiceStrategy(Strategy):
    kind = "Service"
    printer = pr.Printer(_SERVICE_COLUMNS, _service_row)
    create_keeps_status = True

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_service(obj, create)
        go_order_object(obj)

    def prepare_kind_for_update(self, new: Obj, old: Obj) -> None:
        _keep_service_addresses(new, old)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _validate_service(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_service(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + _status_service(new, old)
