"""Per-kind validation of built-in objects, as kube-apiserver v1.36 does it.

The server calls, after defaulting (``pykcm.apiserver.defaults``):

* :func:`validate_create` on create,
* :func:`validate_update` on an update of the main resource,
* :func:`validate_status_update` on an update through ``/status``.

Each returns a list of :class:`~pykcm.api.validation.Cause`; an empty list
means valid, a non-empty one becomes a 422 (see
``pykcm.api.validation.invalid_status``). The checks follow upstream's
``pkg/apis/<group>/validation`` and the registry strategies' ``Validate`` /
``ValidateUpdate``, keeping their field paths, order and messages, and cover
what controllers and clients rely on: names, metadata, selectors matching
templates, pod specs, strategies, immutable fields. Metadata identity on
update (name, namespace, uid, creationTimestamp, resourceVersion) is the
server's and is not checked here.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.labels import SelectorParseError, selector_from_label_selector
from pykcm.api.resources import BUILTIN_RESOURCES
from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    GoValue,
    NameValidator,
    duplicate,
    forbidden,
    go_label_selector,
    go_string_slice,
    inclusive_range_error,
    invalid,
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_ip,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns_label,
    name_is_dns_subdomain,
    not_found,
    not_supported,
    required,
    too_long,
    validate_annotations,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.defaults import parse_quantity
from pykcm.apiserver.registry.validation import (
    as_int,
    as_list,
    as_map,
    as_str,
    go_labels,
    immutable,
    meta_of,
    nonnegative_field,
    semantic_equal,
)

__all__ = ["validate_create", "validate_status_update", "validate_update"]

Obj = Mapping[str, Any]
MAX_INT32: Final = 2**31 - 1
MAX_SECRET_SIZE: Final = 1 * 1024 * 1024

_NAMESPACED: Final = {r.kind: r.namespaced for r in BUILTIN_RESOURCES}


def _validate_meta(kind: str, obj: Obj, name_fn: NameValidator = name_is_dns_subdomain,
                   ) -> list[Cause]:
    return validate_object_meta(obj.get("metadata"), namespaced=_NAMESPACED.get(kind, True),
                                name_validator=name_fn)


# --- pod specs -------------------------------------------------------------------

_VOLUME_SOURCES: Final = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs",
    "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte",
    "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos",
    "csi", "ephemeral", "image")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
_TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_HANDLER_TYPES: Final = ("exec", "httpGet", "tcpSocket", "grpc")
_VOLUME_SOURCE_RANK: Final = {k: i for i, k in enumerate(_VOLUME_SOURCES)}
_PROBE_KINDS: Final = (("livenessProbe", True), ("readinessProbe", False), ("startupProbe", True))


def _validate_volumes(volumes: list[Any], path: str) -> tuple[list[Cause], set[str]]:
    errs: list[Cause] = []
    names: set[str] = set()
    for i, vol in enumerate(volumes):
        vol = as_map(vol)
        # Look the volume's few keys up among the sources (rather than probing
        # for each of the 30 sources), then put them in upstream's order.
        sources = [k for k in vol if k in _VOLUME_SOURCE_RANK and vol[k] is not None]
        if len(sources) > 1:
            sources.sort(key=_VOLUME_SOURCE_RANK.__getitem__)
        if not sources:
            errs.append(required(f"{path}[{i}]", "must specify a volume type"))
        for extra in sources[1:]:
            errs.append(forbidden(f"{path}[{i}].{extra}",
                                  "may not specify more than 1 volume type"))
        name = as_str(vol.get("name"))
        if not name:
            errs.append(required(f"{path}[{i}].name"))
        else:
            msgs = is_dns1123_label(name)
            if msgs:
                errs.extend(invalid(f"{path}[{i}].name", name, m) for m in msgs)
        if name in names:
            errs.append(duplicate(f"{path}[{i}].name", name))
        elif name:
            names.add(name)
    return errs, names


def _validate_ports(ports: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = as_map(port)
        name = as_str(port.get("name"))
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs.extend(invalid(f"{path}[{i}].name", name, m) for m in msgs)
            elif name in names:
                errs.append(duplicate(f"{path}[{i}].name", name))
            else:
                names.add(name)
        cport = as_int(port.get("containerPort")) or 0
        if cport == 0:
            errs.append(required(f"{path}[{i}].containerPort"))
        elif not 1 <= cport <= 65535:
            errs.extend(invalid(f"{path}[{i}].containerPort", cport, m)
                        for m in is_valid_port_num(cport))
        hport = as_int(port.get("hostPort")) or 0
        if hport and not 1 <= hport <= 65535:
            errs.extend(invalid(f"{path}[{i}].hostPort", hport, m) for m in is_valid_port_num(hport))
        proto = as_str(port.get("protocol"))
        if not proto:
            errs.append(required(f"{path}[{i}].protocol"))
        elif proto not in _PROTOCOLS:
            errs.append(not_supported(f"{path}[{i}].protocol", proto, _PROTOCOLS))
    return errs


def _validate_env(env: list[Any], path: str) -> list[Cause]:
    # The hottest loop (every env var of every container written): the exact
    # types are tested inline, before paying for a as_map/as_str call.
    errs: list[Cause] = []
    for i, ev in enumerate(env):
        if ev.__class__ is not dict:
            ev = as_map(ev)
        name = ev.get("name")
        if name.__class__ is not str:
            name = as_str(name)
        if not name:
            errs.append(required(f"{path}[{i}].name"))
        # Printable ASCII other than '=' (upstream's regex), with str methods:
        # several times faster than the regex for these short names.
        elif not (name.isascii() and name.isprintable()) or "=" in name:
            errs.append(invalid(f"{path}[{i}].name", name, "a valid environment variable name "
                                "must consist only of printable ASCII characters other than '='"))
        vf = ev.get("valueFrom")
        if vf is not None and ev.get("value"):
            errs.append(invalid(f"{path}[{i}].valueFrom", "",
                                "may not be specified when `value` is not empty"))
        if vf.__class__ is dict and vf.get("fieldRef").__class__ is dict:
            fp = as_str(vf["fieldRef"].get("fieldPath"))
            if fp and not _env_field_path_ok(fp):
                errs.append(invalid(f"{path}[{i}].valueFrom.fieldRef.fieldPath", fp,
                                    f"error converting fieldPath: field label not supported: {fp}"))
    return errs


# The pod fields an env var may take its value from (the v1 Pod field label conversion).
_ENV_FIELD_PATHS: Final = frozenset({
    "metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels",
    "metadata.annotations", "spec.nodeName", "spec.serviceAccountName", "status.hostIP",
    "status.hostIPs", "status.podIP", "status.podIPs"})


def _env_field_path_ok(fp: str) -> bool:
    if fp in _ENV_FIELD_PATHS:
        return True
    # metadata.labels['key'] / metadata.annotations['key']
    return re.fullmatch(r"metadata\.(labels|annotations)\['[^']*'\]", fp) is not None


def _validate_volume_mounts(mounts: list[Any], volumes: set[str], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen_paths: set[str] = set()
    for i, mnt in enumerate(mounts):
        mnt = as_map(mnt)
        name = as_str(mnt.get("name"))
        if not name:
            errs.append(required(f"{path}[{i}].name"))
        if name not in volumes:
            errs.append(not_found(f"{path}[{i}].name", name))
        mount_path = as_str(mnt.get("mountPath"))
        if not mount_path:
            errs.append(required(f"{path}[{i}].mountPath"))
        if mount_path in seen_paths:
            errs.append(invalid(f"{path}[{i}].mountPath", mount_path, "must be unique"))
        seen_paths.add(mount_path)
    return errs


def _validate_resources(resources: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    limits = as_map(resources.get("limits"))
    if not limits:
        return errs
    requests = as_map(resources.get("requests"))
    for name, q in requests.items():
        lim = limits.get(name)
        if lim is None:
            continue
        rq, lq = parse_quantity(q), parse_quantity(lim)
        if rq is not None and lq is not None and rq > lq:
            errs.append(invalid(f"{path}.requests", as_str(q),
                                f"must be less than or equal to {name} limit of {as_str(lim)}"))
    return errs


def _validate_probes(c: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key, liveness_like in _PROBE_KINDS:
        probe = c.get(key)
        if probe is not None:
            errs.extend(_validate_probe(probe, f"{path}.{key}", liveness_like=liveness_like))
    return errs


def _validate_probe(probe: Any, path: str, *, liveness_like: bool) -> list[Cause]:
    if not isinstance(probe, Mapping):
        return []
    errs: list[Cause] = []
    handlers = [h for h in _HANDLER_TYPES if probe.get(h) is not None]
    if not handlers:
        errs.append(required(path, "must specify a handler type"))
    for h in handlers[1:]:
        errs.append(forbidden(f"{path}.{h}", "may not specify more than 1 handler type"))
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                "failureThreshold"):
        errs.extend(nonnegative_field(probe, key, f"{path}.{key}"))
    success = as_int(probe.get("successThreshold"))
    if liveness_like and success is not None and success != 1:
        errs.append(invalid(f"{path}.successThreshold", success, "must be 1"))
    return errs


def _validate_container_common(c: Mapping[str, Any], path: str, volumes: set[str]) -> list[Cause]:
    # Sub-checks run only when there is something to check, and field paths
    # are built only for errors: this runs for every container written.
    errs: list[Cause] = []
    name = as_str(c.get("name"))
    if not name:
        errs.append(required(f"{path}.name"))
    else:
        msgs = is_dns1123_label(name)
        if msgs:
            errs.extend(invalid(f"{path}.name", name, m) for m in msgs)
    if not as_str(c.get("image")):
        errs.append(required(f"{path}.image"))
    tmp = as_str(c.get("terminationMessagePolicy"))
    if not tmp:
        errs.append(required(f"{path}.terminationMessagePolicy"))
    elif tmp not in _TERMINATION_MESSAGE_POLICIES:
        errs.append(not_supported(f"{path}.terminationMessagePolicy", tmp,
                                  _TERMINATION_MESSAGE_POLICIES))
    ports = as_list(c.get("ports"))
    if ports:
        errs.extend(_validate_ports(ports, f"{path}.ports"))
    env = as_list(c.get("env"))
    if env:
        errs.extend(_validate_env(env, f"{path}.env"))
    mounts = as_list(c.get("volumeMounts"))
    if mounts:
        errs.extend(_validate_volume_mounts(mounts, volumes, f"{path}.volumeMounts"))
    policy = as_str(c.get("imagePullPolicy"))
    if not policy:
        errs.append(required(f"{path}.imagePullPolicy"))
    elif policy not in _PULL_POLICIES:
        errs.append(not_supported(f"{path}.imagePullPolicy", policy, _PULL_POLICIES))
    resources = c.get("resources")
    if resources:
        errs.extend(_validate_resources(as_map(resources), f"{path}.resources"))
    sc = c.get("securityContext")
    if sc.__class__ is dict:
        errs.extend(_validate_security_context_ids(sc, f"{path}.securityContext"))
    return errs


def _validate_security_context_ids(sc: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key in ("runAsUser", "runAsGroup"):
        v = sc.get(key)
        if isinstance(v, int) and not 0 <= v <= MAX_INT32:
            errs.append(invalid(f"{path}.{key}", v,
                                f"must be between 0 and {MAX_INT32}, inclusive"))
    return errs


def _validate_host_ports(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """AccumulateUniqueHostPorts: a host port (protocol, IP, port) is used once per pod."""
    errs: list[Cause] = []
    seen: set[str] = set()
    for field_name in ("containers", "initContainers"):
        for ci, c in enumerate(as_list(spec.get(field_name))):
            for pi, port in enumerate(as_list(as_map(c).get("ports"))):
                port = as_map(port)
                hport = as_int(port.get("hostPort")) or 0
                if not hport:
                    continue
                key = f"{as_str(port.get('protocol'))}/{as_str(port.get('hostIP'))}/{hport}"
                if key in seen:
                    errs.append(duplicate(f"{path}.{field_name}[{ci}].ports[{pi}].hostPort", key))
                seen.add(key)
    return errs


def _validate_containers(spec: Mapping[str, Any], path: str, volumes: set[str]) -> list[Cause]:
    errs: list[Cause] = []
    containers = as_list(spec.get("containers"))
    if not containers:
        errs.append(required(f"{path}.containers"))
    names: set[str] = set()
    for i, c in enumerate(containers):
        c = as_map(c)
        ipath = f"{path}.containers[{i}]"
        errs.extend(_validate_container_common(c, ipath, volumes))
        name = as_str(c.get("name"))
        if name in names:
            errs.append(duplicate(f"{ipath}.name", name))
        else:
            names.add(name)
        errs.extend(_validate_probes(c, ipath))
    # Init containers share the name space with regular containers.
    for i, c in enumerate(as_list(spec.get("initContainers"))):
        c = as_map(c)
        ipath = f"{path}.initContainers[{i}]"
        errs.extend(_validate_container_common(c, ipath, volumes))
        name = as_str(c.get("name"))
        if name in names:
            errs.append(duplicate(f"{ipath}.name", name))
        else:
            names.add(name)
        restart = c.get("restartPolicy")
        if restart is not None and restart != "Always":
            errs.append(not_supported(f"{ipath}.restartPolicy", as_str(restart), ("Always",)))
        if restart == "Always":
            errs.extend(_validate_probes(c, ipath))
        else:
            for probe in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if c.get(probe) is not None:
                    errs.append(forbidden(f"{ipath}.{probe}", "may not be set for init containers "
                                                              "without restartPolicy=Always"))
    errs.extend(_validate_host_ports(spec, path))
    return errs


def _validate_tolerations(tolerations: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, t in enumerate(tolerations):
        t = as_map(t)
        key = as_str(t.get("key"))
        op = as_str(t.get("operator"))
        effect = as_str(t.get("effect"))
        value = as_str(t.get("value"))
        if key:
            msgs = is_qualified_name(key)
            if msgs:
                errs.extend(invalid(f"{path}[{i}].key", key, m) for m in msgs)
        if not key and op != "Exists":
            errs.append(invalid(f"{path}[{i}].operator", op, "operator must be Exists when `key` "
                                "is empty, which means \"match all values and all keys\""))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid(f"{path}[{i}].effect", effect,
                                "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(invalid(f"{path}[{i}].operator", value, ";".join(msgs)))
        elif op == "Exists":
            if value:
                errs.append(invalid(f"{path}[{i}].operator", GoValue(str(dict(t))),
                                    "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(f"{path}[{i}].operator", op, ("Equal", "Exists")))
        if effect and effect not in _TAINT_EFFECTS:
            errs.append(not_supported(f"{path}[{i}].effect", effect, _TAINT_EFFECTS))
    return errs


def _validate_pod_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """ValidatePodSpec (the checks this server supports)."""
    errs, volumes = _validate_volumes(as_list(spec.get("volumes")), f"{path}.volumes")
    errs.extend(_validate_containers(spec, path, volumes))
    restart = as_str(spec.get("restartPolicy"))
    if not restart:
        errs.append(required(f"{path}.restartPolicy"))
    elif restart not in _RESTART_POLICIES:
        errs.append(not_supported(f"{path}.restartPolicy", restart, _RESTART_POLICIES))
    dns = as_str(spec.get("dnsPolicy"))
    if not dns:
        errs.append(required(f"{path}.dnsPolicy"))
    elif dns not in _DNS_POLICIES:
        errs.append(not_supported(f"{path}.dnsPolicy", dns, _DNS_POLICIES))
    if dns == "None" and spec.get("dnsConfig") is None:
        errs.append(required(f"{path}.dnsConfig",
                             "must provide `dnsConfig` when `dnsPolicy` is None"))
    node_selector = spec.get("nodeSelector")
    if node_selector:
        errs.extend(validate_labels(as_map(node_selector), f"{path}.nodeSelector"))
    for key in ("serviceAccountName", "nodeName"):
        v = as_str(spec.get(key))
        if v:
            msgs = name_is_dns_subdomain(v, False)
            if msgs:
                errs.extend(invalid(f"{path}.{key}", v, m) for m in msgs)
    ads = as_int(spec.get("activeDeadlineSeconds"))
    if ads is not None and not (1 <= ads <= MAX_INT32):
        errs.append(invalid(f"{path}.activeDeadlineSeconds", ads,
                            inclusive_range_error(1, MAX_INT32)))
    for key in ("hostname", "subdomain"):
        v = as_str(spec.get(key))
        if v:
            msgs = is_dns1123_label(v)
            if msgs:
                errs.extend(invalid(f"{path}.{key}", v, m) for m in msgs)
    tolerations = as_list(spec.get("tolerations"))
    if tolerations:
        errs.extend(_validate_tolerations(tolerations, f"{path}.tolerations"))
    for key in ("priorityClassName", "schedulerName"):
        v = as_str(spec.get(key))
        if v:
            msgs = is_dns1123_subdomain(v)
            if msgs:
                errs.extend(invalid(f"{path}.{key}", v, m) for m in msgs)
    for i, gate in enumerate(as_list(spec.get("schedulingGates"))):
        gname = as_str(as_map(gate).get("name"))
        errs.extend(invalid(f"{path}.schedulingGates[{i}].name", gname, m)
                    for m in is_qualified_name(gname))
    return errs


def _validate_pod_template_spec(tmpl: Mapping[str, Any], path: str) -> list[Cause]:
    """ValidatePodTemplateSpec. Labels are reported at "<path>.labels", as upstream."""
    meta = as_map(tmpl.get("metadata"))
    errs = validate_labels(as_map(meta.get("labels")), f"{path}.labels")
    errs.extend(validate_annotations(as_map(meta.get("annotations")), f"{path}.annotations"))
    spec = as_map(tmpl.get("spec"))
    errs.extend(_validate_pod_spec(spec, f"{path}.spec"))
    if spec.get("ephemeralContainers"):
        errs.append(forbidden(f"{path}.spec.ephemeralContainers",
                              "ephemeral containers not allowed in pod template"))
    return errs


# --- selectors of workloads ------------------------------------------------------

def _selector_and_template(
    spec: Mapping[str, Any], kind_word: str, *, require: bool, allow_invalid_value: bool = False,
) -> tuple[list[Cause], Any]:
    """Common selector checks; returns (errors, compiled selector or None on error)."""
    errs: list[Cause] = []
    sel = spec.get("selector")
    if sel is None:
        if require:
            errs.append(required("spec.selector"))
    else:
        sel = as_map(sel)
        errs.extend(validate_label_selector(sel, "spec.selector",
                                            allow_invalid_label_value=allow_invalid_value))
        if not sel.get("matchLabels") and not sel.get("matchExpressions"):
            errs.append(invalid("spec.selector", go_label_selector(sel),
                                f"empty selector is invalid for {kind_word}"))
    try:
        compiled = selector_from_label_selector(None if sel is None else as_map(sel))
    except SelectorParseError:
        return errs, None
    return errs, compiled


def _template_labels_match(compiled: Any, tmpl: Mapping[str, Any], path: str) -> list[Cause]:
    labels = as_map(tmpl.get("metadata")).get("labels")
    if compiled is not None and not compiled.empty and not compiled.matches(as_map(labels)):
        return [invalid(f"{path}.metadata.labels", go_labels(labels),
                        "`selector` does not match template `labels`")]
    return []


def _validate_template_for_replicaset(tmpl: Mapping[str, Any], compiled: Any, path: str,
                                      kind_word: str) -> list[Cause]:
    errs = _template_labels_match(compiled, tmpl, path)
    errs.extend(_validate_pod_template_spec(tmpl, path))
    spec = as_map(tmpl.get("spec"))
    restart = as_str(spec.get("restartPolicy"))
    if restart != "Always":
        errs.append(not_supported(f"{path}.spec.restartPolicy", restart, ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(f"{path}.spec.activeDeadlineSeconds",
                              f"activeDeadlineSeconds in {kind_word} is not Supported"))
    return errs


# --- apps -----------------------------------------------------------------------------

def _selector_immutable(new: Obj, old: Obj) -> list[Cause]:
    ns = as_map(new.get("spec")).get("selector")
    os_ = as_map(old.get("spec")).get("selector")
    if semantic_equal(ns, os_):
        return []
    return [invalid("spec.selector", go_label_selector(None if ns is None else as_map(ns)),
                    FIELD_IMMUTABLE_ERROR_MSG)]


def _validate_rc_spec(spec: Mapping[str, Any]) -> list[Cause]:
    """ValidateReplicationControllerSpec: a non-empty selector matching the template."""
    errs = nonnegative_field(spec, "minReadySeconds", "spec.minReadySeconds")
    sel = as_map(spec.get("selector"))
    if not sel:
        errs.append(required("spec.selector", ""))
    errs.extend(nonnegative_field(spec, "replicas", "spec.replicas"))
    tmpl = spec.get("template")
    if tmpl is None:
        errs.append(required("spec.template", ""))
        return errs
    compiled = selector_from_label_selector({"matchLabels": dict(sel)}) if sel else None
    errs.extend(_validate_template_for_replicaset(as_map(tmpl), compiled, "spec.template",
                                                  "ReplicationController"))
    return errs


def _create_replication_controller(obj: Obj) -> list[Cause]:
    return (_validate_meta("ReplicationController", obj)
            + _validate_rc_spec(as_map(obj.get("spec"))))


def _update_replication_controller(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_rc_spec(as_map(new.get("spec"))))
    return errs


def _volume_check(name: str) -> Any:
    """The storage kinds' checks live in pykcm.apiserver.volumes (imported late)."""
    def check(*objs: Obj) -> list[Cause]:
        from pykcm.apiserver import volumes
        fn: Callable[..., list[Cause]] = getattr(volumes, name)
        return fn(*objs)
    return check


# --- batch ----------------------------------------------------------------------

# --- core -------------------------------------------------------------------------

def _validate_service(obj: Obj) -> list[Cause]:
    # v1.36 (RelaxedServiceNameValidation): a Service name is an RFC 1123 label
    return _validate_meta("Service", obj, name_is_dns_label) + _service_body(obj)


def _service_body(obj: Obj) -> list[Cause]:
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
        elif proto not in _PROTOCOLS:
            errs.append(not_supported(f"{ipath}.protocol", proto, _PROTOCOLS))
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


def _update_service(new: Obj, old: Obj) -> list[Cause]:
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


def _validate_data_keys(data: Mapping[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for key in data:
        errs.extend(invalid(f"{path}[{key}]", key, m) for m in is_config_map_key(key))
    return errs


def _b64_len(v: Any) -> int:
    s = as_str(v)
    return (len(s) * 3) // 4 - s.count("=", max(0, len(s) - 2))


def _validate_configmap(obj: Obj) -> list[Cause]:
    errs = _validate_meta("ConfigMap", obj)
    data, binary = as_map(obj.get("data")), as_map(obj.get("binaryData"))
    total = 0
    for key, value in data.items():
        errs.extend(invalid(f"data[{key}]", key, m) for m in is_config_map_key(key))
        if key in binary:
            errs.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        total += len(as_str(value).encode("utf-8"))
    for key, value in binary.items():
        errs.extend(invalid(f"binaryData[{key}]", key, m) for m in is_config_map_key(key))
        total += _b64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("[]", MAX_SECRET_SIZE))
    return errs


def _update_configmap(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        if not semantic_equal(new.get("data"), old.get("data")):
            errs.append(forbidden("data", "field is immutable when `immutable` is set"))
        if not semantic_equal(new.get("binaryData"), old.get("binaryData")):
            errs.append(forbidden("binaryData", "field is immutable when `immutable` is set"))
    errs.extend(_validate_configmap(new))
    return errs


def _validate_secret(obj: Obj) -> list[Cause]:
    errs = _validate_meta("Secret", obj)
    data = as_map(obj.get("data"))
    total = 0
    for key, value in data.items():
        errs.extend(invalid(f"data[{key}]", key, m) for m in is_config_map_key(key))
        total += _b64_len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("data", MAX_SECRET_SIZE))
    stype = as_str(obj.get("type"))
    annotations = as_map(meta_of(obj).get("annotations"))
    if stype == "kubernetes.io/service-account-token":
        if not annotations.get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif stype == "kubernetes.io/dockercfg":
        if ".dockercfg" not in data:
            errs.append(required("data[.dockercfg]"))
    elif stype == "kubernetes.io/dockerconfigjson":
        if ".dockerconfigjson" not in data:
            errs.append(required("data[.dockerconfigjson]"))
        else:
            why = _json_content_error(data[".dockerconfigjson"])
            if why:
                errs.append(invalid("data[.dockerconfigjson]", "<secret contents redacted>", why))
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(required("data[username]"))
            errs.append(required("data[password]"))
    elif stype == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(required("data[ssh-privatekey]"))
    elif stype == "kubernetes.io/tls":
        if "tls.crt" not in data:
            errs.append(required("data[tls.crt]"))
        if "tls.key" not in data:
            errs.append(required("data[tls.key]"))
    return errs


def _json_content_error(b64: Any) -> str:
    """Go's json.Unmarshal error for base64-encoded content ("" when it is JSON)."""
    import base64 as _b64

    from pykcm.apiserver import go_json

    try:
        raw = _b64.b64decode(as_str(b64), validate=True)
    except ValueError:
        return ""
    return go_json.syntax_error(raw) or ""


def _update_secret(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_immutable(as_str(new.get("type")), as_str(old.get("type")), "type"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        if not semantic_equal(new.get("data"), old.get("data")):
            errs.append(forbidden("data", "field is immutable when `immutable` is set"))
    errs.extend(_validate_secret(new))
    return errs


def _create_namespace(obj: Obj) -> list[Cause]:
    errs = _validate_meta("Namespace", obj, name_is_dns_label)
    for f in as_list(as_map(obj.get("spec")).get("finalizers")):
        fs = as_str(f)
        errs.extend(invalid("spec.finalizers", fs, m) for m in is_qualified_name(fs))
        if "/" not in fs and fs != "kubernetes":
            errs.append(invalid("spec.finalizers", fs, "name is neither a standard finalizer name "
                                                       "nor is it fully qualified"))
    return errs


def _update_namespace(new: Obj, old: Obj) -> list[Cause]:
    return validate_object_meta_update(new.get("metadata"), old.get("metadata"))


def _create_node(obj: Obj) -> list[Cause]:
    errs = _validate_meta("Node", obj)
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
        elif effect not in _TAINT_EFFECTS:
            errs.append(not_supported(f"{ipath}.effect", effect, _TAINT_EFFECTS))
        if (key, effect) in seen:
            # the internal Taint, as JSON with Go's field names
            errs.append(Cause("FieldValueDuplicate", ipath,
                              "taints must be unique by key and effect pair",
                              json.dumps({"Key": key, "Value": value, "Effect": effect,
                                          "TimeAdded": t.get("timeAdded")},
                                         separators=(",", ":"))))
        seen.add((key, effect))
    return errs


def _update_node(new: Obj, old: Obj) -> list[Cause]:
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


def _path_segment_name(name: str, prefix: bool) -> list[str]:
    """path.ValidatePathSegmentName: what every name must satisfy to sit in a URL."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    errs = []
    for ch in ("/", "%"):
        if ch in name:
            errs.append(f"may not contain '{ch}'")
    return errs


def _validate_event(obj: Obj) -> list[Cause]:
    """legacyValidateEvent, the only Event-specific check for core/v1 Events.

    Their names are free-form: only the generic check every object passes
    (a name that can sit in a URL path) applies to the metadata.
    """
    return _event_meta_errors(obj) + _event_body(obj)


def _event_meta_errors(obj: Obj) -> list[Cause]:
    return validate_object_meta(obj.get("metadata"), namespaced=True,
                                name_validator=_path_segment_name)


def _event_body(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    namespace = as_str(meta_of(obj).get("namespace"))
    inv_ns = as_str(as_map(obj.get("involvedObject")).get("namespace"))
    if not obj.get("eventTime"):
        if not inv_ns:
            if namespace not in ("", "default"):
                errs.append(invalid("involvedObject.namespace", inv_ns,
                                    "does not match event.namespace"))
        elif namespace != inv_ns:
            errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
    else:
        if not inv_ns and namespace != "kube-system":
            errs.append(invalid("involvedObject.namespace", inv_ns, "does not match event.namespace"))
        rc = as_str(obj.get("reportingComponent"))
        if not rc:
            errs.append(required("reportingComponent"))
        errs.extend(invalid("reportingComponent", rc, m) for m in is_qualified_name(rc))
        ri = as_str(obj.get("reportingInstance"))
        if not ri:
            errs.append(required("reportingInstance"))
        if len(ri) > 128:
            errs.append(invalid("reportingInstance", "", "can have at most 128 characters"))
        action = as_str(obj.get("action"))
        if not action:
            errs.append(required("action"))
        if len(action) > 128:
            errs.append(invalid("action", "", "can have at most 128 characters"))
        reason = as_str(obj.get("reason"))
        if not reason:
            errs.append(required("reason"))
        if len(reason) > 128:
            errs.append(invalid("reason", "", "can have at most 128 characters"))
        if len(as_str(obj.get("message"))) > 1024:
            errs.append(invalid("message", "", "can have at most 1024 characters"))
    errs.extend(invalid("namespace", namespace, m) for m in is_dns1123_subdomain(namespace))
    return errs


def _v1_event_body(obj: Obj) -> list[Cause]:
    """legacyValidateEvent as an events.k8s.io request sees it: the reporter's field is
    named reportingController there."""
    out = []
    for e in _event_body(obj):
        if e.field == "reportingComponent":
            e = dataclasses.replace(e, field="reportingController")
        out.append(e)
    return out


def validate_event_v1_create(obj: Obj) -> list[Cause]:
    """The strict checks an Event created through events.k8s.io/v1 gets on top of the
    legacy ones (ValidateEventCreate); `obj` is the core/v1 form it is stored in."""
    errs = _v1_event_body(obj)
    errs += validate_object_meta(obj.get("metadata"), namespaced=True,
                                 name_validator=name_is_dns_subdomain)
    series = obj.get("series")
    if isinstance(series, dict):
        if (as_int(series.get("count")) or 0) < 2:
            errs.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            errs.append(required("series.lastObservedTime"))
    if not obj.get("eventTime"):
        errs.append(required("eventTime"))
    etype = as_str(obj.get("type"))
    if etype not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {etype}"))
    for key in ("firstTimestamp", "lastTimestamp"):
        if obj.get(key):
            errs.append(invalid(key, "", "needs to be unset"))
    if as_int(obj.get("count")):
        errs.append(invalid("count", "", "needs to be unset"))
    source = as_map(obj.get("source"))
    if source.get("component") or source.get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs


# (stored core/v1 field, the path ValidateEventUpdate names) of what may not change
_V1_EVENT_IMMUTABLE: Final = (
    ("involvedObject", "involvedObject"), ("reason", "reason"), ("message", "message"),
    ("source", "source"), ("firstTimestamp", "firstTimestamp"),
    ("lastTimestamp", "lastTimestamp"), ("count", "count"), ("reason", "reason"),
    ("type", "type"), ("eventTime", "eventTime"), ("action", "action"),
    ("related", "related"), ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"))


def validate_event_v1_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateEventUpdate for events.k8s.io/v1: what an Event's reporter wrote is fixed."""
    errs = _v1_event_body(new)
    errs += validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    for key, path in _V1_EVENT_IMMUTABLE:
        errs += immutable(new.get(key), old.get(key), path)
    return errs


def _update_event(new: Obj, old: Obj) -> list[Cause]:
    return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
            + _event_body(new))


def _create_pod_template(obj: Obj) -> list[Cause]:
    errs = _validate_meta("PodTemplate", obj)
    errs.extend(_validate_pod_template_spec(as_map(obj.get("template")), "template"))
    return errs


def _update_pod_template(new: Obj, old: Obj) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_pod_template_spec(as_map(new.get("template")), "template"))
    return errs


def _create_endpoints(obj: Obj) -> list[Cause]:
    return _validate_meta("Endpoints", obj) + _endpoints_body(obj)


def _endpoints_body(obj: Obj) -> list[Cause]:
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
            elif proto not in _PROTOCOLS:
                errs.append(not_supported(f"{ppath}.protocol", proto, _PROTOCOLS))
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


def _update_endpoints(new: Obj, old: Obj) -> list[Cause]:
    return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
            + _endpoints_body(new))


# --- discovery.k8s.io/v1 EndpointSlice ---------------------------------------------------
#
# pkg/apis/discovery/validation (StrictIPCIDRValidation on, as in v1.36).

# --- status -----------------------------------------------------------------------

def _status_nonneg(status: Mapping[str, Any], keys: Sequence[str]) -> list[Cause]:
    errs: list[Cause] = []
    for k in keys:
        errs.extend(nonnegative_field(status, k, f"status.{k}"))
    return errs


def _not_greater(status: Mapping[str, Any], key: str, than: str, msg: str) -> list[Cause]:
    a, b = as_int(status.get(key)) or 0, as_int(status.get(than)) or 0
    return [invalid(f"status.{key}", a, msg)] if a > b else []


def _collision_decremented(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    n, o = as_int(new.get("collisionCount")), as_int(old.get("collisionCount"))
    if o is not None and (n is None or n < o):
        return [invalid("status.collisionCount", n or 0, "cannot be decremented")]
    return []


def _status_namespace(new: Obj, old: Obj) -> list[Cause]:
    phase = as_str(as_map(new.get("status")).get("phase"))
    if not meta_of(new).get("deletionTimestamp"):
        if phase != "Active":
            return [invalid("status.Phase", phase,
                            "may only be 'Active' if `deletionTimestamp` is empty")]
    elif phase != "Terminating":
        return [invalid("status.Phase", phase,
                        "may only be 'Terminating' if `deletionTimestamp` is not empty")]
    return []


def _status_service(new: Obj, old: Obj) -> list[Cause]:
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


# --- dispatch --------------------------------------------------------------------------

_CREATE: Final[dict[str, Callable[[Obj], list[Cause]]]] = {
    "Service": _validate_service,
    "ConfigMap": _validate_configmap,
    "Secret": _validate_secret,
    "Namespace": _create_namespace,
    "Node": _create_node,
    "Event": _validate_event,
    "PodTemplate": _create_pod_template,
    "Endpoints": _create_endpoints,
    "ReplicationController": _create_replication_controller,
    "PersistentVolume": _volume_check("validate_pv_create"),
    "PersistentVolumeClaim": _volume_check("validate_pvc_create"),
    "StorageClass": _volume_check("validate_storage_class_create"),
}

_UPDATE: Final[dict[str, Callable[[Obj, Obj], list[Cause]]]] = {
    "Service": _update_service,
    "ConfigMap": _update_configmap,
    "Secret": _update_secret,
    "Namespace": _update_namespace,
    "Node": _update_node,
    "Event": _update_event,
    "PodTemplate": _update_pod_template,
    "Endpoints": _update_endpoints,
    "ReplicationController": _update_replication_controller,
    "PersistentVolume": _volume_check("validate_pv_update"),
    "PersistentVolumeClaim": _volume_check("validate_pvc_update"),
    "StorageClass": _volume_check("validate_storage_class_update"),
}

def _rc_status(new: Obj, old: Obj) -> list[Cause]:
    # transitional: the ReplicaSet's status rules, until ReplicationControllers move too
    from pykcm.apiserver.registry.apps.replicaset import validate_status
    return validate_status(new, old)


_STATUS: Final[dict[str, Callable[[Obj, Obj], list[Cause]]]] = {
    "Namespace": _status_namespace,
    "Service": _status_service,
    "ReplicationController": _rc_status,
    "PersistentVolumeClaim": _volume_check("validate_pvc_status"),
}


def validate_create(kind: str, obj: Mapping[str, Any]) -> list[Cause]:
    """Validation of a new object of built-in `kind` (after defaulting)."""
    fn = _CREATE.get(kind)
    if fn is not None:
        return fn(obj)
    return _validate_meta(kind, obj)


def validate_update(kind: str, new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """Validation of an update of the main resource: the new object's
    validity plus the kind's immutability rules against `old`."""
    fn = _UPDATE.get(kind)
    if fn is not None:
        return fn(new, old)
    return validate_object_meta_update(new.get("metadata"), old.get("metadata"))


def validate_status_update(kind: str, new: Mapping[str, Any],
                           old: Mapping[str, Any]) -> list[Cause]:
    """Validation of an update through the ``/status`` subresource."""
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    fn = _STATUS.get(kind)
    if fn is not None:
        errs.extend(fn(new, old))
    return errs
