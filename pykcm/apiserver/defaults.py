"""Defaulting of built-in objects, as kube-apiserver v1.36 applies it.

kube-apiserver defaults an object when it decodes a request body (the
generated ``SetDefaults_*`` functions of every API group) and then, on create,
lets the registry strategy fill server-owned fields (``PrepareForCreate``:
the Job's generated selector, a Pod's ``Pending`` phase and QoS class, a
Namespace's ``kubernetes`` finalizer). The embedded server calls
:func:`apply_defaults` once per create/update, after it has set
``metadata.uid`` and before validation; ``create=False`` skips the
create-only steps so an update cannot, say, re-add a namespace finalizer that
``/finalize`` removed.

Objects are wire-form dicts and are mutated in place. Go serializes some
struct fields even when empty (``resources: {}``, template ``metadata: {}``,
``status: {}``) and always in struct order; the defaulted structures are
re-keyed into that order so responses read like a real server's.
Priority and default tolerations are admission-plugin work (admission.py);
the service-account token volume is admission's too. The serviceAccount /
serviceAccountName pair of every PodSpec mirrors each other as the v1
conversion makes them.

This runs on every write, so the hot paths test exact ``dict``/``list``
types (what a JSON decoder produces) and remember the results of pure
string functions (quantities, image references) for recently seen strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Final, TypeGuard

__all__ = [
    "bad_quantity",
    "default_container",
    "default_pod_spec",
    "default_pod_template",
    "drop_nulls",
    "image_pull_policy",
    "parse_quantity",
    "pod_qos_class",
    "zero_object_fields",
]

Obj = dict[str, Any]

MAX_INT32: Final = 2**31 - 1

# --- Go struct field order ----------------------------------------------------

class _GoOrder:
    """The field order of one Go struct, and how to re-key a dict into it.

    Known keys come in struct order, unknown ones after them in their
    current order. Every object written goes through several of these, and
    the key sequences repeat (a client sends the same shapes over and over),
    so the plan for each sequence seen is memoized: the usual answer is
    "already in order" or "move these few keys to the end".
    """

    __slots__ = ("_keys", "_known", "_plans")

    _MAX_PLANS: Final = 256
    _MAX_SHAPE_CHARS: Final = 1024

    def __init__(self, *keys: str) -> None:
        self._keys = keys
        self._known = frozenset(keys)
        # key sequence -> the keys to move to the end, in order (() if none)
        self._plans: dict[tuple[str, ...], tuple[str, ...]] = {}

    def _plan(self, current: tuple[str, ...]) -> tuple[str, ...]:
        present = [k for k in self._keys if k in current]
        wanted = present + [k for k in current if k not in self._known]
        # Keys already in their final place at the front need not move.
        start = 0
        for have, want in zip(current, wanted, strict=True):
            if have != want:
                break
            start += 1
        return tuple(wanted[start:])

    def apply(self, d: MutableMapping[str, Any]) -> None:
        current = tuple(d)
        move = self._plans.get(current)
        if move is None:
            move = self._plan(current)
            # Bounded memo; odd shapes (huge or non-string keys) are not kept.
            if all(k.__class__ is str for k in current) and (
                    sum(map(len, current)) <= self._MAX_SHAPE_CHARS):
                if len(self._plans) >= self._MAX_PLANS:
                    self._plans.clear()
                self._plans[current] = move
        for k in move:
            d[k] = d.pop(k)


_TOP: Final = _GoOrder(
    "kind", "apiVersion", "metadata", "immutable", "data", "binaryData", "stringData", "type",
    "spec", "status")
_META: Final = _GoOrder(
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields")
_POD_SPEC: Final = _GoOrder(
    "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName",
    "hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "securityContext",
    "imagePullSecrets", "hostname", "subdomain", "affinity", "schedulerName", "tolerations",
    "hostAliases", "priorityClassName", "priority", "dnsConfig", "readinessGates",
    "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
    "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates",
    "resourceClaims", "resources", "hostnameOverride", "workloadRef")
_CONTAINER: Final = _GoOrder(
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
    "resizePolicy", "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices",
    "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty")
_CONTAINER_PORT: Final = _GoOrder("name", "hostPort", "containerPort", "protocol", "hostIP")
_PROBE: Final = _GoOrder(
    "exec", "httpGet", "tcpSocket", "grpc", "initialDelaySeconds", "timeoutSeconds",
    "periodSeconds", "successThreshold", "failureThreshold", "terminationGracePeriodSeconds")
_HTTP_GET: Final = _GoOrder("path", "port", "host", "scheme", "httpHeaders")
_TEMPLATE: Final = _GoOrder("metadata", "spec")
_REPLICASET_SPEC: Final = _GoOrder("replicas", "minReadySeconds", "selector", "template")
_STRATEGY: Final = _GoOrder("type", "rollingUpdate")
_RESOURCES: Final = _GoOrder("limits", "requests", "claims")
_SELECTOR: Final = _GoOrder("matchLabels", "matchExpressions")


def _dict(parent: MutableMapping[str, Any], key: str) -> Obj:
    """parent[key] as a dict, creating it (or replacing a null) when missing."""
    v = parent.get(key)
    if not isinstance(v, dict):
        v = {}
        parent[key] = v
    return v


def _dicts(v: Any) -> Iterable[Obj]:
    if isinstance(v, list):
        for item in v:
            if isinstance(item, dict):
                yield item


def _setdefault(d: MutableMapping[str, Any], key: str, value: Any) -> None:
    # A JSON null means "unset" for the pointer fields defaulting fills.
    if d.get(key) is None:
        d[key] = value


# --- quantities (just enough for requests/limits and QoS) ---------------------

_QUANTITY_RE: Final = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eEinumkKMGTP]*[-+]?[0-9]*)")
_SUFFIX: Final = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


# Pure functions of a string, called for every container of every write with
# the same few strings ("100m", "128Mi", an image name): remember them.
_MEMO_MAX_LEN: Final = 512


@lru_cache(maxsize=2048)
def _parse_quantity_str(q: str) -> Decimal | None:
    m = _QUANTITY_RE.fullmatch(q.strip())
    if not m:
        return None
    num, suffix = m.groups()
    try:
        value = Decimal(num)
        if suffix in _SUFFIX:
            return value * _SUFFIX[suffix]
        if suffix[:1] in ("e", "E"):
            return value * (Decimal(10) ** int(suffix[1:]))
    except (InvalidOperation, ValueError):
        return None
    return None


def parse_quantity(q: Any) -> Decimal | None:
    """The numeric value of a resource.Quantity ("100m", "1Gi", "1e3", 2); None if malformed."""
    if q.__class__ is str and len(q) <= _MEMO_MAX_LEN:
        return _parse_quantity_str(q)  # Decimals are immutable: safe to share
    if isinstance(q, bool):
        return None
    if isinstance(q, (int, float)):
        return Decimal(str(q))
    if not isinstance(q, str):
        return None
    return _parse_quantity_str.__wrapped__(q)


# --- images --------------------------------------------------------------------

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
    if image.__class__ is str and len(image) <= _MEMO_MAX_LEN:
        return _image_pull_policy(image)
    return _image_pull_policy.__wrapped__(image)


# --- pod specs ------------------------------------------------------------------

def _default_http_get(h: Obj) -> None:
    _setdefault(h, "path", "/")
    _setdefault(h, "scheme", "HTTP")
    _HTTP_GET.apply(h)


def _default_handler(h: Obj) -> None:
    http_get = h.get("httpGet")
    if isinstance(http_get, dict):
        _default_http_get(http_get)


def _default_probe(p: Obj) -> None:
    _default_handler(p)
    grpc = p.get("grpc")
    if isinstance(grpc, dict):
        _setdefault(grpc, "service", "")
    _setdefault(p, "timeoutSeconds", 1)
    _setdefault(p, "periodSeconds", 10)
    _setdefault(p, "successThreshold", 1)
    _setdefault(p, "failureThreshold", 3)
    _PROBE.apply(p)


def _default_field_ref(holder: Mapping[str, Any]) -> None:
    ref = holder.get("fieldRef")
    if isinstance(ref, dict):
        _setdefault(ref, "apiVersion", "v1")


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
            _setdefault(s, "defaultMode", 420)
    host_path = v.get("hostPath")
    if isinstance(host_path, dict):
        _setdefault(host_path, "type", "")
    downward = v.get("downwardAPI")
    if isinstance(downward, dict):
        for item in _dicts(downward.get("items")):
            _default_field_ref(item)
    projected = v.get("projected")
    if isinstance(projected, dict):
        for source in _dicts(projected.get("sources")):
            token = source.get("serviceAccountToken")
            if isinstance(token, dict):
                _setdefault(token, "expirationSeconds", 3600)
            dapi = source.get("downwardAPI")
            if isinstance(dapi, dict):
                for item in _dicts(dapi.get("items")):
                    _default_field_ref(item)


def _default_host_network_ports(containers: Any) -> None:
    for c in _dicts(containers):
        for port in _dicts(c.get("ports")):
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
            _RESOURCES.apply(resources)


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
    _dict(tmpl, "metadata")
    default_pod_spec(_dict(tmpl, "spec"))
    _TEMPLATE.apply(tmpl)


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


# --- per kind ------------------------------------------------------------------

def _default_rolling_strategy(strategy: Obj, rolling_type: str,
                              defaults: tuple[tuple[str, Any], ...]) -> None:
    if not strategy.get("type"):
        strategy["type"] = rolling_type
    if strategy["type"] == rolling_type:
        ru = _dict(strategy, "rollingUpdate")
        for k, v in defaults:
            _setdefault(ru, k, v)
    _STRATEGY.apply(strategy)


# NodeSystemInfo's string fields are not omitempty: Go writes every one.
_NODE_INFO_FIELDS: Final = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                            "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                            "operatingSystem", "architecture")


def go_order_object(obj: Obj) -> None:
    """Re-key the top level and the metadata of a defaulted object into Go's struct order."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        _META.apply(meta)
    _TOP.apply(obj)


# --- the zero object ------------------------------------------------------------

_NO_CONTAINERS: Final = {"metadata": {}, "spec": {"containers": None}}
# What Go writes for an empty object of each kind besides kind, apiVersion and
# metadata (non-omitempty fields and structs): the body of watch BOOKMARK events.
_ZERO_FIELDS: Final[dict[tuple[str, str], dict[str, Any]]] = {
    ("", "Namespace"): {"spec": {}, "status": {}},
    ("", "Node"): {"spec": {}, "status": {
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
        "nodeInfo": {k: "" for k in _NODE_INFO_FIELDS}}},
    ("", "Pod"): {"spec": {"containers": None}, "status": {}},
    ("", "Event"): {"involvedObject": {}, "source": {}, "firstTimestamp": None,
                    "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
                    "reportingInstance": ""},
    ("", "Service"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("", "PodTemplate"): {"template": _NO_CONTAINERS},
    ("apps", "Deployment"): {"spec": {"replicas": 0, "selector": None,
                                      "template": _NO_CONTAINERS, "strategy": {}},
                             "status": {}},
    ("apps", "ReplicaSet"): {"spec": {"replicas": 0, "selector": None,
                                      "template": _NO_CONTAINERS}, "status": {"replicas": 0}},
    ("apps", "StatefulSet"): {"spec": {"replicas": 0, "selector": None,
                                       "template": _NO_CONTAINERS, "serviceName": "",
                                       "updateStrategy": {}},
                              "status": {"replicas": 0, "availableReplicas": 0}},
    ("apps", "DaemonSet"): {"spec": {"selector": None, "template": _NO_CONTAINERS,
                                     "updateStrategy": {}},
                            "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                       "desiredNumberScheduled": 0, "numberReady": 0}},
    ("apps", "ControllerRevision"): {"data": None, "revision": 0},
    ("batch", "Job"): {"spec": {"template": _NO_CONTAINERS}, "status": {}},
    ("batch", "CronJob"): {"spec": {"schedule": "", "jobTemplate": {
        "metadata": {}, "spec": {"template": _NO_CONTAINERS}}}, "status": {}},
    ("coordination.k8s.io", "Lease"): {"spec": {}},
    ("", "PersistentVolume"): {"spec": {}, "status": {}},
    ("", "PersistentVolumeClaim"): {"spec": {"resources": {}}, "status": {}},
    ("", "ReplicationController"): {"spec": {}, "status": {"replicas": 0}},
    ("storage.k8s.io", "StorageClass"): {"provisioner": ""},
    ("policy", "PodDisruptionBudget"): {"spec": {}, "status": {
        "currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}},
    ("discovery.k8s.io", "EndpointSlice"): {"addressType": "", "endpoints": None,
                                            "ports": None},
    ("events.k8s.io", "Event"): {"eventTime": None, "regarding": {}, "deprecatedSource": {},
                                 "deprecatedFirstTimestamp": None,
                                 "deprecatedLastTimestamp": None},
}
# Annotations the apps/v1 conversion writes even on an empty object.
_ZERO_ANNOTATIONS: Final = {("apps", "DaemonSet"): {
    "deprecated.daemonset.template.generation": "0"}}


def zero_object_fields(group: str, kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(fields, metadata annotations) of an empty object of a built-in kind as Go encodes it.

    Fresh copies; kinds without such fields (ConfigMap, Secret, ...) give empty dicts.
    """
    import copy

    return (copy.deepcopy(_ZERO_FIELDS.get((group, kind), {})),
            dict(_ZERO_ANNOTATIONS.get((group, kind), {})))


# --- quantities at decode time -----------------------------------------------------

def _pod_spec_of(kind: str, obj: Mapping[str, Any]) -> Any:
    spec = obj.get("spec")
    if kind == "Pod":
        return spec
    if kind == "PodTemplate":
        return (obj.get("template") or {}).get("spec") if isinstance(obj.get("template"),
                                                                       dict) else None
    if not isinstance(spec, dict):
        return None
    if kind == "CronJob":
        jt = spec.get("jobTemplate")
        spec = jt.get("spec") if isinstance(jt, dict) else None
        if not isinstance(spec, dict):
            return None
    tmpl = spec.get("template")
    return tmpl.get("spec") if isinstance(tmpl, dict) else None


def _quantities(spec: Mapping[str, Any]) -> Iterable[Any]:
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for c in _dicts(spec.get(field)):
            res = c.get("resources")
            if isinstance(res, dict):
                for part in ("requests", "limits"):
                    rl = res.get(part)
                    if isinstance(rl, dict):
                        yield from rl.values()
    for field in ("overhead",):
        rl = spec.get(field)
        if isinstance(rl, dict):
            yield from rl.values()
    res = spec.get("resources")
    if isinstance(res, dict):
        for part in ("requests", "limits"):
            rl = res.get(part)
            if isinstance(rl, dict):
                yield from rl.values()
    for v in _dicts(spec.get("volumes")):
        ed = v.get("emptyDir")
        if isinstance(ed, dict) and ed.get("sizeLimit") is not None:
            yield ed["sizeLimit"]


def bad_quantity(kind: str, obj: Mapping[str, Any]) -> bool:
    """Whether a resource quantity of the object's pod spec does not parse: Go rejects
    the body while decoding it (before defaults or validation)."""
    spec = _pod_spec_of(kind, obj)
    if not isinstance(spec, dict):
        return False
    for q in _quantities(spec):
        if isinstance(q, str) and parse_quantity(q) is None:
            return True
    return False


def drop_nulls(v: Any) -> None:
    """Remove the keys whose value is null, at any depth (in place)."""
    if v.__class__ is dict:
        dead = [k for k, x in v.items() if x is None]
        for k in dead:
            del v[k]
        for x in v.values():
            if x.__class__ is dict or x.__class__ is list:
                drop_nulls(x)
    elif v.__class__ is list:
        for x in v:
            if x.__class__ is dict or x.__class__ is list:
                drop_nulls(x)
