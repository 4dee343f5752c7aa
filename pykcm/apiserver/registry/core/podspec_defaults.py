"""Defaulting of pod specs and pod templates, shared by every kind that carries one (Pod,
PodTemplate, the workload kinds, Job, CronJob): upstream's ``SetDefaults_PodSpec``,
``SetDefaults_Container`` and friends of ``pkg/apis/core/v1/defaults.go``, and the
pod's QoS class (``pod_qos_class``).

Priority and default tolerations are admission-plugin work (admission/mutating.py); the
service-account token volume is admission's too. The serviceAccount /
serviceAccountName pair mirror each other as the v1 conversion makes them. Pure
string functions (image references) remember recently seen strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any, Final, TypeGuard

from pykcm.api.quantity import MEMO_MAX_LEN
from pykcm.apiserver.registry.defaulting import (
    RESOURCES_ORDER,
    TEMPLATE_ORDER,
    GoOrder,
    child_dict,
    dicts_in,
    set_default,
)
from pykcm.apiserver.registry.defaults import parse_quantity

Obj = dict[str, Any]

_POD_SPEC: Final = GoOrder(
    "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName",
    "hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "securityContext",
    "imagePullSecrets", "hostname", "subdomain", "affinity", "schedulerName", "tolerations",
    "hostAliases", "priorityClassName", "priority", "dnsConfig", "readinessGates",
    "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
    "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates",
    "resourceClaims", "resources", "hostnameOverride", "workloadRef")


_CONTAINER: Final = GoOrder(
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
    "resizePolicy", "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices",
    "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty")


_CONTAINER_PORT: Final = GoOrder("name", "hostPort", "containerPort", "protocol", "hostIP")


_PROBE: Final = GoOrder(
    "exec", "httpGet", "tcpSocket", "grpc", "initialDelaySeconds", "timeoutSeconds",
    "periodSeconds", "successThreshold", "failureThreshold", "terminationGracePeriodSeconds")


_HTTP_GET: Final = GoOrder("path", "port", "host", "scheme", "httpHeaders")


_ALNUM: Final = r"[a-z0-9]+"


_SEP: Final = r"(?:[._]|__|[-]+)"


_PATH_COMPONENT: Final = _ALNUM + "(?:" + _SEP + _ALNUM + ")*"


_DOMAIN_COMPONENT: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"


_DOMAIN: Final = (r"(?:" + _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*"
                  r"|\[[a-fA-F0-9:]+\])(?::[0-9]+)?")


_REFERENCE_RE: Final = re.compile(
    "(?P<name>(?:" + _DOMAIN + "/)?" + _PATH_COMPONENT + "(?:/" + _PATH_COMPONENT + ")*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?")


_HEX64_RE: Final = re.compile("[a-f0-9]{64}")


def _image_tag(image: str) -> tuple[str, str] | None:
    """(tag, digest) of an image reference as the kubelet's ParseImageName sees it.

    An untagged, undigested image gets tag "latest"; None when unparseable.
    """
    if not image or _HEX64_RE.fullmatch(image):
        return None
    i = image.find("/")
    first = image[:i] if i >= 0 else ""
    if i == -1 or (not any(c in first for c in ".:") and first != "localhost"
                   and first.lower() == first):
        domain, remainder = "docker.io", image
    else:
        domain, remainder = first, image[i + 1:]
    if remainder.lower() != remainder:
        return None
    m = _REFERENCE_RE.fullmatch(domain + "/" + remainder)
    if not m or len(m.group("name")) > 255:
        return None
    tag, digest = m.group("tag") or "", m.group("digest") or ""
    if not tag and not digest:
        tag = "latest"
    return tag, digest


@lru_cache(maxsize=1024)
def _image_pull_policy(image: str) -> str:
    parsed = _image_tag(image)
    return "Always" if parsed is not None and parsed[0] == "latest" else "IfNotPresent"


def image_pull_policy(image: str) -> str:
    """The default imagePullPolicy: Always for ":latest" or an untagged image."""
    if image.__class__ is str and len(image) <= MEMO_MAX_LEN:
        return _image_pull_policy(image)
    return _image_pull_policy.__wrapped__(image)


def _default_http_get(h: Obj) -> None:
    set_default(h, "path", "/")
    set_default(h, "scheme", "HTTP")
    _HTTP_GET.apply(h)


def _default_handler(h: Obj) -> None:
    http_get = h.get("httpGet")
    if isinstance(http_get, dict):
        _default_http_get(http_get)


def _default_probe(p: Obj) -> None:
    _default_handler(p)
    grpc = p.get("grpc")
    if isinstance(grpc, dict):
        set_default(grpc, "service", "")
    set_default(p, "timeoutSeconds", 1)
    set_default(p, "periodSeconds", 10)
    set_default(p, "successThreshold", 1)
    set_default(p, "failureThreshold", 3)
    _PROBE.apply(p)


def _default_field_ref(holder: Mapping[str, Any]) -> None:
    ref = holder.get("fieldRef")
    if isinstance(ref, dict):
        set_default(ref, "apiVersion", "v1")


_PROBES: Final = ("livenessProbe", "readinessProbe", "startupProbe")


_LIFECYCLE_HOOKS: Final = ("postStart", "preStop")


def default_container(c: Obj) -> None:
    """SetDefaults_Container and the defaults of what a container holds."""
    # Loops are written out (no _dicts generator): this runs for every
    # container of every pod and template written. Defaults are added in Go
    # field order, so that they usually need no re-keying afterwards.
    get = c.get
    # ResourceRequirements is a struct: Go always serializes it.
    if not isinstance(get("resources"), dict):
        c["resources"] = {}
    if not get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    if not get("imagePullPolicy"):
        c["imagePullPolicy"] = image_pull_policy(str(get("image") or ""))
    ports = get("ports")
    if isinstance(ports, list):
        for port in ports:
            if isinstance(port, dict):
                if not port.get("protocol"):
                    port["protocol"] = "TCP"
                _CONTAINER_PORT.apply(port)
    env = get("env")
    if isinstance(env, list):
        for e in env:
            if isinstance(e, dict):
                value_from = e.get("valueFrom")
                if isinstance(value_from, dict):
                    _default_field_ref(value_from)
    for probe in _PROBES:
        p = get(probe)
        if isinstance(p, dict):
            _default_probe(p)
    lifecycle = get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in _LIFECYCLE_HOOKS:
            h = lifecycle.get(hook)
            if isinstance(h, dict):
                _default_handler(h)
    _CONTAINER.apply(c)


_VOLUME_SOURCES_WITH_MODE: Final = ("secret", "configMap", "downwardAPI", "projected")


_NAME_ONLY: Final = frozenset({"name"})


def _default_volume(v: Obj) -> None:
    if v.keys() <= _NAME_ONLY:
        # A volume with no source is an emptyDir.
        v["emptyDir"] = {}
    for src in _VOLUME_SOURCES_WITH_MODE:
        s = v.get(src)
        if isinstance(s, dict):
            set_default(s, "defaultMode", 420)
    host_path = v.get("hostPath")
    if isinstance(host_path, dict):
        set_default(host_path, "type", "")
    downward = v.get("downwardAPI")
    if isinstance(downward, dict):
        for item in dicts_in(downward.get("items")):
            _default_field_ref(item)
    projected = v.get("projected")
    if isinstance(projected, dict):
        for source in dicts_in(projected.get("sources")):
            token = source.get("serviceAccountToken")
            if isinstance(token, dict):
                set_default(token, "expirationSeconds", 3600)
            dapi = source.get("downwardAPI")
            if isinstance(dapi, dict):
                for item in dicts_in(dapi.get("items")):
                    _default_field_ref(item)


def _default_host_network_ports(containers: Any) -> None:
    for c in dicts_in(containers):
        for port in dicts_in(c.get("ports")):
            if not port.get("hostPort"):
                port["hostPort"] = port.get("containerPort", 0)


def _default_requests_from_limits(containers: Any) -> None:
    if not isinstance(containers, list):
        return
    for c in containers:
        if not isinstance(c, dict):
            continue
        resources = c.get("resources")
        if not isinstance(resources, dict):
            continue
        limits = resources.get("limits")
        if isinstance(limits, dict) and limits:
            requests = resources.get("requests")
            if not isinstance(requests, dict):
                requests = {}
                resources["requests"] = requests
            for name, q in limits.items():
                requests.setdefault(name, q)
            RESOURCES_ORDER.apply(resources)


def default_pod_spec(spec: Obj, *, is_pod: bool = False) -> None:
    """SetDefaults_PodSpec (every PodSpec) and, for a Pod, SetDefaults_Pod."""
    get = spec.get
    # The v1 conversion: serviceAccount is serviceAccountName's alias (the new one wins).
    sa_name = get("serviceAccountName") or get("serviceAccount")
    if sa_name:
        if get("serviceAccountName") != sa_name or get("serviceAccount") != sa_name:
            spec["serviceAccountName"] = spec["serviceAccount"] = sa_name
    elif "serviceAccountName" in spec or "serviceAccount" in spec:
        spec.pop("serviceAccountName", None)
        spec.pop("serviceAccount", None)
    # Added in Go field order (see default_container).
    if not get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if get("securityContext") is None:
        spec["securityContext"] = {}
    if not get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    volumes = get("volumes")
    if isinstance(volumes, list):
        for v in volumes:
            if isinstance(v, dict):
                _default_volume(v)
    for key in ("initContainers", "containers"):
        containers = get(key)
        if isinstance(containers, list):
            for c in containers:
                if isinstance(c, dict):
                    default_container(c)
    if is_pod:
        # Requests default to limits only on Pods, not on templates.
        _default_requests_from_limits(get("containers"))
        _default_requests_from_limits(get("initContainers"))
        if get("enableServiceLinks") is None:
            spec["enableServiceLinks"] = True
        if get("hostNetwork"):
            _default_host_network_ports(get("containers"))
            _default_host_network_ports(get("initContainers"))
    _POD_SPEC.apply(spec)


def default_pod_template(tmpl: Obj) -> None:
    """Defaults of a PodTemplateSpec: its (always serialized) metadata and its spec."""
    child_dict(tmpl, "metadata")
    default_pod_spec(child_dict(tmpl, "spec"))
    TEMPLATE_ORDER.apply(tmpl)


_QOS_RESOURCES: Final = ("cpu", "memory")


_ZERO: Final = Decimal(0)


def _is_map(v: Any) -> TypeGuard[Mapping[str, Any]]:
    # Exact dicts (all a JSON decoder makes) first: the ABC check is slower.
    return v.__class__ is dict or (v is not None and isinstance(v, Mapping))


def _qos_add(into: dict[str, Decimal], rl: Any, found: set[str] | None) -> None:
    if not _is_map(rl):
        return
    for name, q in rl.items():
        if name not in _QOS_RESOURCES:
            continue
        v = parse_quantity(q)
        if v is not None and v > _ZERO:
            if found is not None:
                found.add(name)
            into[name] = into.get(name, _ZERO) + v


def pod_qos_class(spec: Mapping[str, Any]) -> str:
    """The pod's QoS class (upstream ComputePodQOS): BestEffort, Burstable or Guaranteed."""
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    pod_resources = spec.get("resources")
    if _is_map(pod_resources) and (pod_resources.get("requests")
                                   or pod_resources.get("limits")):
        _qos_add(requests, pod_resources.get("requests"), None)
        if pod_resources.get("limits"):
            found: set[str] = set()
            _qos_add(limits, pod_resources.get("limits"), found)
            if not found.issuperset(_QOS_RESOURCES):
                guaranteed = False
    else:
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or []:
                if not _is_map(c):
                    continue
                resources = c.get("resources")
                if not _is_map(resources):
                    resources = {}
                _qos_add(requests, resources.get("requests"), None)
                found = set()
                _qos_add(limits, resources.get("limits"), found)
                if not found.issuperset(_QOS_RESOURCES):
                    guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, req in requests.items():
            if limits.get(name) != req:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
