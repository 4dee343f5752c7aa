"""Validation of pod specs and pod templates, shared by every kind that carries one (Pod,
PodTemplate, the workload kinds, Job, CronJob): upstream's ``ValidatePodSpec`` and
``ValidatePodTemplateSpec`` of ``pkg/apis/core/validation`` with their field paths,
order and messages (volumes, containers, ports, env, probes, resources, security
context ids, host ports, tolerations).

Objects are wire-form dicts; each check returns a list of
:class:`~pykcm.api.validation.Cause`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    Cause,
    GoValue,
    duplicate,
    forbidden,
    inclusive_range_error,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns_subdomain,
    not_found,
    not_supported,
    required,
    validate_annotations,
    validate_labels,
)
from pykcm.apiserver.registry.defaults import parse_quantity
from pykcm.apiserver.registry.validation import (
    as_int,
    as_list,
    as_map,
    as_str,
    nonnegative_field,
)

Obj = Mapping[str, Any]
MAX_INT32: Final = 2**31 - 1
# --- pod specs -------------------------------------------------------------------

_VOLUME_SOURCES: Final = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs",
    "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte",
    "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos",
    "csi", "ephemeral", "image")
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
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
        elif proto not in PROTOCOLS:
            errs.append(not_supported(f"{path}[{i}].protocol", proto, PROTOCOLS))
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
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{path}[{i}].effect", effect, TAINT_EFFECTS))
    return errs


def validate_pod_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
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


def validate_pod_template_spec(tmpl: Mapping[str, Any], path: str) -> list[Cause]:
    """ValidatePodTemplateSpec. Labels are reported at "<path>.labels", as upstream."""
    meta = as_map(tmpl.get("metadata"))
    errs = validate_labels(as_map(meta.get("labels")), f"{path}.labels")
    errs.extend(validate_annotations(as_map(meta.get("annotations")), f"{path}.annotations"))
    spec = as_map(tmpl.get("spec"))
    errs.extend(validate_pod_spec(spec, f"{path}.spec"))
    if spec.get("ephemeralContainers"):
        errs.append(forbidden(f"{path}.spec.ephemeralContainers",
                              "ephemeral containers not allowed in pod template"))
    return errs


# --- selectors of workloads ------------------------------------------------------

# --- apps -----------------------------------------------------------------------------

# --- batch ----------------------------------------------------------------------

# --- core -------------------------------------------------------------------------

def validate_tolerations(tolerations: list[Any], path: str) -> list[Cause]:
    """ValidateTolerations, for the other kinds that carry tolerations (RuntimeClass)."""
    return _validate_tolerations(tolerations, path)


# --- discovery.k8s.io/v1 EndpointSlice ---------------------------------------------------
#
