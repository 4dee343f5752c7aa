"""networking.k8s.io/v1 Ingresses (kube-apiserver ``pkg/registry/networking/ingress`` and
``pkg/apis/networking/validation``): status/spec split, validation, warnings, printer.

- create: the status is dropped, generation 1; update: the status kept, the generation
  moves with the spec; a /status write keeps the spec;
- validation (upstream's messages and field paths): either ``defaultBackend`` or
  ``rules``; hosts (no IP, wildcard or DNS subdomain), paths by ``pathType`` (absolute,
  no ``//``, ``/./``, ``/../``, ``%2f``, no ``/..`` or ``/.`` ending), backends (service
  xor resource, service name as a DNS-1035 label, port name xor number), TLS hosts and
  secret names, ``ingressClassName``; on create the ``kubernetes.io/ingress.class``
  annotation must match ``ingressClassName``; updates keep accepting the invalid secret
  names and wildcard rules an old object already had; /status: load balancer IPs
  (legacy IP rules) and hostnames;
- warnings: the deprecated class annotation without ``ingressClassName`` (create only);
- printer: Name, Class, Hosts (3 at most, ``+ N more...``), Address, Ports, Age.

Service names are DNS-1123 labels (RelaxedServiceNameValidation, on in v1.36).

Deviation: /status writes get no warnings for odd IP forms (upstream's GetWarningsForIP
there).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    invalid,
    is_dns1123_subdomain,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns_label,
    name_is_dns_subdomain,
    name_is_path_segment,
    not_supported,
    regex_error,
    required,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.networking.ip_fields import (
    legacy_ip_errors,
    parse_ip_sloppy,
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
    object_name,
)
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["IngressStrategy", "is_wildcard_dns1123_subdomain"]

CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")
_INVALID_SEQUENCES: Final = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_SUFFIXES: Final = ("/..", "/.")

_WILDCARD_FMT: Final = r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD_RE: Final = re.compile(_WILDCARD_FMT)
_WILDCARD_MSG: Final = regex_error(
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character", _WILDCARD_FMT, "*.example.com")


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """IsWildcardDNS1123Subdomain."""
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _WILDCARD_RE.fullmatch(value):
        errs.append(_WILDCARD_MSG)
    return errs


def _host_errors(host: str, path: str) -> list[Cause]:
    check = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
    return [invalid(path, host, m) for m in check(host)]


def _secret_name_errors(name: str) -> list[str]:
    return name_is_dns_subdomain(name) if name else []


class _Opts:
    __slots__ = ("invalid_secret_name", "invalid_wildcard_rule")

    def __init__(self, old: Mapping[str, Any] | None = None) -> None:
        spec = as_dict(old.get("spec")) if old is not None else {}
        self.invalid_secret_name = any(
            _secret_name_errors(as_str(as_dict(t).get("secretName")))
            for t in as_list(spec.get("tls")))
        self.invalid_wildcard_rule = any(
            "*" in as_str(as_dict(r).get("host")) and _rule_value_errors(as_dict(r), "", _Opts())
            for r in as_list(spec.get("rules"))) if old is not None else False


def _backend_errors(backend: Mapping[str, Any], path: str, opts: _Opts) -> list[Cause]:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    errs: list[Cause] = []
    if resource is not None:
        ref = as_dict(resource)
        group = ref.get("apiGroup")
        if group is not None:
            errs += [invalid(f"{path}.resource.apiGroup", group, m)
                     for m in is_dns1123_subdomain(as_str(group))]
        for key in ("kind", "name"):
            value = as_str(ref.get(key))
            if not value:
                errs.append(required(f"{path}.resource.{key}"))
            else:
                errs += [invalid(f"{path}.resource.{key}", value, m)
                         for m in name_is_path_segment(value)]
        return errs
    if service is None:
        return [invalid(path, "", "resource or service backend is required")]
    svc = as_dict(service)
    name = as_str(svc.get("name"))
    if not name:
        errs.append(required(f"{path}.service.name"))
    else:
        # RelaxedServiceNameValidation (on in v1.36): a DNS-1123 label
        errs += [invalid(f"{path}.service.name", name, m) for m in name_is_dns_label(name)]
    port = as_dict(svc.get("port"))
    port_name = as_str(port.get("name"))
    number = port.get("number") or 0
    if port_name and number:
        errs.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += [invalid(f"{path}.service.port.name", port_name, m)
                 for m in is_valid_port_name(port_name)]
    elif number:
        errs += [invalid(f"{path}.service.port.number", number, m)
                 for m in is_valid_port_num(number)]
    else:
        errs.append(required(path, "port name or number is required"))
    return errs


def _http_path_errors(p: Mapping[str, Any], path: str, opts: _Opts) -> list[Cause]:
    path_type = p.get("pathType")
    if path_type is None:
        return [required(f"{path}.pathType", "pathType must be specified")]
    value = as_str(p.get("path"))
    errs: list[Cause] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
        if value:
            errs += [invalid(f"{path}.path", value, f"must not contain '{seq}'")
                     for seq in _INVALID_SEQUENCES if seq in value]
            errs += [invalid(f"{path}.path", value, f"cannot end with '{suffix}'")
                     for suffix in _INVALID_SUFFIXES if value.endswith(suffix)]
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        errs.append(not_supported(f"{path}.pathType", path_type, PATH_TYPES))
    return errs + _backend_errors(as_dict(p.get("backend")), f"{path}.backend", opts)


def _rule_value_errors(rule: Mapping[str, Any], path: str, opts: _Opts) -> list[Cause]:
    http = rule.get("http")
    if http is None:
        return []
    paths = as_list(as_dict(http).get("paths"))
    errs: list[Cause] = []
    if not paths:
        errs.append(required(f"{path}.http.paths"))
    for i, p in enumerate(paths):
        errs += _http_path_errors(as_dict(p), f"{path}.http.paths[{i}]", opts)
    return errs


def _validate_spec(spec: Mapping[str, Any], opts: _Opts) -> list[Cause]:
    errs: list[Cause] = []
    rules = as_list(spec.get("rules"))
    default_backend = spec.get("defaultBackend")
    if not rules and default_backend is None:
        errs.append(invalid("spec", rules if "rules" in spec else None,
                            "either `defaultBackend` or `rules` must be specified"))
    if default_backend is not None:
        errs += _backend_errors(as_dict(default_backend), "spec.defaultBackend", opts)
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        host = as_str(rule.get("host"))
        path = f"spec.rules[{i}]"
        if host:
            if parse_ip_sloppy(host) is not None:
                errs.append(invalid(f"{path}.host", host, "must be a DNS name, not an IP address"))
            errs += _host_errors(host, f"{path}.host")
        if "*" not in host or not opts.invalid_wildcard_rule:
            errs += _rule_value_errors(rule, path, opts)
    for t_index, tls in enumerate(as_list(spec.get("tls"))):
        tls = as_dict(tls)
        for i, host in enumerate(as_list(tls.get("hosts"))):
            errs += _host_errors(as_str(host), f"spec.tls[{t_index}].hosts[{i}]")
        if not opts.invalid_secret_name:
            secret = as_str(tls.get("secretName"))
            errs += [invalid(f"spec.tls[{t_index}].secretName", secret, m)
                     for m in _secret_name_errors(secret)]
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errs += [invalid("spec.ingressClassName", class_name, m)
                 for m in name_is_dns_subdomain(as_str(class_name))]
    return errs


def _validate_load_balancer(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    old_ips = tuple(as_str(as_dict(i).get("ip")) for i in as_list(old.get("ingress"))
                    if as_dict(i).get("ip"))
    errs: list[Cause] = []
    for i, entry in enumerate(as_list(new.get("ingress"))):
        entry = as_dict(entry)
        path = f"status.loadBalancer.ingress[{i}]"
        ip = as_str(entry.get("ip"))
        if ip:
            errs += legacy_ip_errors(f"{path}.ip", ip, old_ips)
        hostname = as_str(entry.get("hostname"))
        if hostname:
            errs += [invalid(f"{path}.hostname", hostname, m)
                     for m in is_dns1123_subdomain(hostname)]
            if parse_ip_sloppy(hostname) is not None:
                errs.append(invalid(f"{path}.hostname", hostname,
                                    "must be a DNS name, not an IP address"))
    return errs


# --- printer -------------------------------------------------------------------------

_LOAD_BALANCER_WIDTH: Final = 16


def _hosts(rules: list[Any]) -> str:
    """formatHosts: the first three hosts, then how many rules more."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        host = as_str(as_dict(rule).get("host"))
        if not more and host:
            hosts.append(host)
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if more else text


def load_balancer_addresses(status: Mapping[str, Any], wide: bool = True) -> str:
    """ingressLoadBalancerStatusStringer: the sorted set of IPs, else hostnames."""
    found = set()
    for entry in as_list(as_dict(status.get("loadBalancer")).get("ingress")):
        entry = as_dict(entry)
        value = as_str(entry.get("ip")) or as_str(entry.get("hostname"))
        if value:
            found.add(value)
    text = ",".join(sorted(found))
    if not wide and len(text) > _LOAD_BALANCER_WIDTH:
        text = text[:_LOAD_BALANCER_WIDTH - 3] + "..."
    return text


_COLUMNS: Final = (
    NAME_COLUMN,
    column("Class", "string",
           "The name of the IngressClass resource that should be used for additional "
           "configuration"),
    column("Hosts", "string",
           "Hosts that incoming requests are matched against before the ingress rule"),
    column("Address", "string",
           "Address is a list containing ingress points for the load-balancer"),
    column("Ports", "string", "Ports of TLS configurations that open"),
    AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> Row:
    spec = as_dict(obj.get("spec"))
    class_name = spec.get("ingressClassName")
    # kube-apiserver prints its tables with the wide option: the address is never cut
    return Row([object_name(obj), "<none>" if class_name is None else as_str(class_name),
                _hosts(as_list(spec.get("rules"))),
                load_balancer_addresses(as_dict(obj.get("status"))),
                "80, 443" if as_list(spec.get("tls")) else "80", age(obj, now)])


@register
class IngressStrategy(Strategy):
    group = "networking.k8s.io"
    kind = "Ingress"
    printer = Printer(_COLUMNS, _row)
    # (read the old object on updates so that an update never gets the create warning)
    has_update_warnings = True

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"loadBalancer": {}}  # the zero IngressStatus, as Go encodes it

    def validate_create(self, obj: Obj) -> list[Cause]:
        meta = as_dict(obj.get("metadata"))
        errs = validate_object_meta(meta, namespaced=True)
        spec = as_dict(obj.get("spec"))
        errs += _validate_spec(spec, _Opts())
        annotation = as_dict(meta.get("annotations")).get(CLASS_ANNOTATION)
        class_name = spec.get("ingressClassName")
        if annotation is not None and class_name is not None and annotation != class_name:
            errs.append(invalid(f"annotations.{CLASS_ANNOTATION}", annotation,
                                "must match `ingressClassName` when both are specified"))
        return errs

    def warnings_on_create(self, obj: Obj) -> list[str]:
        meta = as_dict(obj.get("metadata"))
        if CLASS_ANNOTATION in as_dict(meta.get("annotations")) and \
                as_dict(obj.get("spec")).get("ingressClassName") is None:
            return [(f'annotation "{CLASS_ANNOTATION}" is deprecated, please use '
                    "'spec.ingressClassName' instead")]
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        errs += validate_object_meta(new.get("metadata"), namespaced=True)
        return errs + _validate_spec(as_dict(new.get("spec")), _Opts(old))

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        return errs + _validate_load_balancer(
            as_dict(as_dict(new.get("status")).get("loadBalancer")),
            as_dict(as_dict(old.get("status")).get("loadBalancer")))
