"""Server-side Table output (meta.k8s.io/v1 Table): what ``kubectl get`` prints.

Role
----
kubectl does not format built-in objects itself: every ``get`` (list, single
object or watch) asks for a Table with ::

    Accept: application/json;as=Table;v=v1;g=meta.k8s.io,
            application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json

and prints the columns and cells the server sends (``-o wide`` shows the
``priority`` 1 columns too). This module is kube-apiserver v1.36's table
conversion as a pure function over plain JSON objects: the column definitions
and cell values of ``pkg/printers/internalversion/printers.go`` (one printer per
kind, always called with ``Wide: true`` as the server does), the generic
``rest.NewDefaultTableConvertor`` (``Name``, ``Created At``) for every other kind,
and the ``includeObject`` handling of the endpoint handlers (``asTable``).

Data flow
---------
::

    request ── Accept ──────────► parse_table_accept() ─► "v1" | "v1beta1" | None
            └─ ?includeObject= ─► parse_include_object() ─► "None"|"Metadata"|"Object"
    LIST/GET result (objects as stored, already defaulted)
            └─► table(kind, group, objects, list_meta=..., include_object=...)
                  printer for (group, kind) ─► one row per object: cells
                  (+ row conditions for finished pods), row object per
                  includeObject, Table metadata from the list (or the single
                  object's resourceVersion)
    WATCH: one table() per event with that event's object; the first event
           carries the column definitions, later ones with_column_definitions=False.

Nothing here does I/O or touches the store; "now" (for the Age-like cells) is
the wall clock unless a ``now`` (epoch seconds) is injected. The returned dict
may share sub-objects (metadata, the object for includeObject=Object) with the
input: serialize it, do not mutate it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    CONTAINERS_DESCRIPTION,
    DEFAULT_COLUMNS,
    DEFAULT_PRINTER,
    GO_SPACE,
    IMAGES_DESCRIPTION,
    NAME_COLUMN,
    NAME_DESCRIPTION,
    Printer,
    Row,
    age,
    as_dict,
    as_int,
    as_list,
    as_str,
    column,
    default_row,
    format_labels,
    human_duration_ns,
    join_host_port,
    layout_container_cells,
    now_ns,
    object_name,
    parse_timestamp_ns,
    pod_template_spec,
    since,
)

__all__ = [
    "TABLE_GROUP",
    "negotiate_table",
    "parse_include_object",
    "parse_table_accept",
    "table",
]

Obj = Mapping[str, Any]
Cells = list[Any]

TABLE_GROUP: Final = "meta.k8s.io"
TABLE_VERSIONS: Final = ("v1", "v1beta1")
INCLUDE_OBJECT_POLICIES: Final = ("None", "Metadata", "Object")

# --- Accept negotiation --------------------------------------------------------

# The media types the API server serializes, in its preference order (a wildcard
# clause picks the first). Only JSON and YAML can carry a Table, only JSON and
# protobuf can stream (watch).
_SERVED_MEDIA_TYPES: Final = (
    ("application", "json"),
    ("application", "yaml"),
    ("application", "vnd.kubernetes.protobuf"),
)
_TABLE_MEDIA_TYPES: Final = frozenset({("application", "json"), ("application", "yaml")})
_STREAM_MEDIA_TYPES: Final = frozenset(
    {("application", "json"), ("application", "vnd.kubernetes.protobuf")}
)


class _Clause(NamedTuple):
    type: str
    subtype: str
    q: float
    params: dict[str, str]


def _parse_accept(header: str) -> list[_Clause]:
    """goautoneg.ParseAccept: clauses, highest q first (then non-wildcards)."""
    clauses: list[_Clause] = []
    for raw in header.split(","):
        part = raw.strip(" ")
        pieces = part.split(";")
        media = pieces[0].split("/")
        mtype = media[0].strip(" ")
        if len(media) == 1 and mtype == "*":
            subtype = "*"
        elif len(media) == 2:
            subtype = media[1].strip(" ")
        else:
            continue
        q = 1.0
        params: dict[str, str] = {}
        for param in pieces[1:]:
            kv = param.split("=", 1)
            if len(kv) != 2:
                continue
            token = kv[0].strip(" ")
            if token == "q":
                try:
                    q = float(kv[1])
                except ValueError:
                    q = 0.0
            else:
                params[token] = kv[1].strip(" ")
        clauses.append(_Clause(mtype, subtype, q, params))

    # Go's sort.Sort is an insertion sort for short slices, with this Less.
    def less(a: _Clause, b: _Clause) -> bool:
        if a.q > b.q:
            return True
        if a.type != "*" and b.type == "*":
            return True
        return a.subtype != "*" and b.subtype == "*"

    for i in range(1, len(clauses)):
        j = i
        while j > 0 and less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


# What one acceptable clause asks for: ("table", version) or ("other", "").
_Choice = tuple[str, str]


def _accept_clause(params: Mapping[str, str], media: tuple[str, str]) -> _Choice | None:
    """acceptMediaTypeOptions + AllowsMediaTypeTransform; None = clause not acceptable."""
    convert: dict[str, str] | None = None
    for k, v in params.items():
        if k in ("as", "g", "v"):
            convert = convert if convert is not None else {"as": "", "g": "", "v": ""}
            convert[k] = v
        elif k == "stream":
            if v and (media not in _STREAM_MEDIA_TYPES or v != "watch"):
                return None
        elif k == "sv" and v and v != "v1":
            return None
    if convert is None:
        return ("other", "")
    if convert["g"] == TABLE_GROUP and convert["v"] in TABLE_VERSIONS:
        if convert["as"] == "Table":
            return ("table", convert["v"]) if media in _TABLE_MEDIA_TYPES else None
        if convert["as"] in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            return ("other", "")
    return None


def negotiate_table(accept: str | None) -> tuple[str, str] | None:
    """The Table a request negotiates: (version, media type), or None.

    Mirrors the API server's NegotiateMediaTypeOptions: clauses are tried by
    q-value (wildcards last), each against the served media types; the first
    acceptable clause decides. A clause for another target (plain objects,
    PartialObjectMetadata, an unknown ``as``/``g``/``v`` combination is skipped)
    before a Table clause means no Table.
    """
    if not accept:
        return None
    for clause in _parse_accept(accept):
        for media in _SERVED_MEDIA_TYPES:
            if (clause.type == media[0] and clause.subtype in (media[1], "*")) or (
                clause.type == "*" and clause.subtype == "*"
            ):
                choice = _accept_clause(clause.params, media)
                if choice is None:
                    continue
                if choice[0] == "table":
                    return choice[1], f"{media[0]}/{media[1]}"
                return None
    return None


def parse_table_accept(accept: str | None) -> str | None:
    """"v1" or "v1beta1" when the Accept header negotiates a meta.k8s.io Table, else None."""
    negotiated = negotiate_table(accept)
    return negotiated[0] if negotiated else None


def parse_include_object(query_value: str | None) -> str:
    """The ``includeObject`` query parameter: "None", "Metadata" (the default) or "Object".

    Raises ValueError with upstream's message (a 400) for any other value.
    """
    if query_value is None or query_value == "":
        return "Metadata"
    if query_value in INCLUDE_OBJECT_POLICIES:
        return query_value
    raise ValueError(f"Unable to convert to Table as requested: includeObject: Invalid value: "
                     f"{_go_quote(query_value)}: must be 'Metadata', 'Object', 'None', or empty")


def _go_quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)



_POD_TEMPLATE_COLUMNS: Final = (
    NAME_COLUMN,
    column("Containers", "string", CONTAINERS_DESCRIPTION),
    column("Images", "string", IMAGES_DESCRIPTION),
    column("Pod Labels", "string", "The labels for the pod template."),
)

_SERVICE_COLUMNS: Final = (
    NAME_COLUMN,
    column("Type", "string",
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
    column("Cluster-IP", "string",
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
    column("External-IP", "string",
         "externalIPs is a list of IP addresses for which nodes in the cluster will also "
         "accept traffic for this service.  These IPs are not managed by Kubernetes.  The user "
         "is responsible for ensuring that traffic arrives at a node with this IP.  A common "
         "example is external load-balancers that are not part of the Kubernetes system."),
    column("Port(s)", "string",
         "The list of ports that are exposed by this service. More info: "
         "https://kubernetes.io/docs/concepts/services-networking/service/"
         "#virtual-ips-and-service-proxies"),
    AGE_COLUMN,
    column("Selector", "string",
         "Route service traffic to pods with label keys and values matching this selector. If "
         "empty or not present, the service is assumed to have an external process managing "
         "its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, "
         "NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: "
         "https://kubernetes.io/docs/concepts/services-networking/service/", priority=1),
)

_ENDPOINTS_COLUMNS: Final = (
    NAME_COLUMN,
    column("Endpoints", "string",
         "The set of all endpoints is the union of all subsets. Addresses are placed into "
         "subsets according to the IPs they share. A single address with multiple ports, some "
         "of which are ready and some of which are not (because they come from different "
         "containers) will result in the address being displayed in different subsets for the "
         "different ports. No address will appear in both Addresses and NotReadyAddresses in "
         "the same subset. Sets of addresses and ports that comprise a service."),
    AGE_COLUMN,
)

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
    NAME_COLUMN,
    column("Status", "string", "The status of the node"),
    column("Roles", "string", "The roles of the node"),
    AGE_COLUMN,
    column("Version", "string", "Kubelet Version reported by the node."),
    column("Internal-IP", "string", _D_NODE_ADDRESSES, priority=1),
    column("External-IP", "string", _D_NODE_ADDRESSES, priority=1),
    column("OS-Image", "string",
         "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
         "(wheezy)).", priority=1),
    column("Kernel-Version", "string",
         "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
         priority=1),
    column("Container-Runtime", "string",
         "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
         "containerd://1.4.2).", priority=1),
)

_EVENT_COLUMNS: Final = (
    column("Last Seen", "string",
         "The time at which the most recent occurrence of this event was recorded."),
    column("Type", "string",
         "Type of this event (Normal, Warning), new types could be added in the future"),
    column("Reason", "string",
         "This should be a short, machine understandable string that gives the reason for the "
         "transition into the object's current status."),
    column("Object", "string", "The object that this event is about."),
    column("Subobject", "string",
         "If referring to a piece of an object instead of an entire object, this string should "
         "contain a valid JSON/Go field access statement, such as "
         "desiredState.manifest.containers[2]. For example, if the object reference is to a "
         "container within a pod, this would take on a value like: \"spec.containers{name}\" "
         "(where \"name\" refers to the name of the container that triggered the event) or if "
         "no container name is specified \"spec.containers[2]\" (container with index 2 in "
         "this pod). This syntax is chosen only to have some well-defined way of referencing a "
         "part of an object.", priority=1),
    column("Source", "string",
         "The component reporting this event. Should be a short machine understandable "
         "string.", priority=1),
    column("Message", "string", "A human-readable description of the status of this operation."),
    column("First Seen", "string",
         "The time at which the event was first recorded. (Time of server receipt is in "
         "TypeMeta.)", priority=1),
    column("Count", "string", "The number of times this event has occurred.", priority=1),
    column("Name", "string", NAME_DESCRIPTION, fmt="name", priority=1),
)

_NAMESPACE_COLUMNS: Final = (
    NAME_COLUMN,
    column("Status", "string", "The status of the namespace"),
    AGE_COLUMN,
)

_SECRET_COLUMNS: Final = (
    NAME_COLUMN,
    column("Type", "string",
         "Used to facilitate programmatic handling of secret data. More info: "
         "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    column("Data", "string",
         "Data contains the secret data. Each key must consist of alphanumeric characters, "
         "'-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, "
         "representing the arbitrary (possibly non-string) data value here. Described in "
         "https://tools.ietf.org/html/rfc4648#section-4"),
    AGE_COLUMN,
)

# v1.35 dropped the Secrets count (kubernetes/kubernetes#117160): the field is not
# populated since 1.24 and the count misled.
_SERVICE_ACCOUNT_COLUMNS: Final = (NAME_COLUMN, AGE_COLUMN)

_CONFIG_MAP_COLUMNS: Final = (
    NAME_COLUMN,
    column("Data", "string",
         "Data contains the configuration data. Each key must consist of alphanumeric "
         "characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the "
         "BinaryData field. The keys stored in Data must not overlap with the keys in the "
         "BinaryData field, this is enforced during validation process."),
    AGE_COLUMN,
)

_SCALE_COLUMNS: Final = (
    column("Name", "string", NAME_DESCRIPTION),
    column("Desired", "integer",
         "replicas is the desired number of instances for the scaled object."),
    column("Available", "integer",
         "replicas is the actual number of observed instances of the scaled object."),
    AGE_COLUMN,
)

def _pod_template_row(obj: Obj, now: int) -> Row:
    template = as_dict(obj.get("template"))
    names, images = layout_container_cells(as_dict(template.get("spec")).get("containers"))
    labels = format_labels(as_dict(template.get("metadata")).get("labels"))
    return Row([object_name(obj), names, images, labels])


def _load_balancer_status(status: Obj) -> str:
    result: set[str] = set()
    for ing in as_list(as_dict(status.get("loadBalancer")).get("ingress")):
        ing = as_dict(ing)
        if as_str(ing.get("ip")):
            result.add(as_str(ing.get("ip")))
        elif as_str(ing.get("hostname")):
            result.add(as_str(ing.get("hostname")))
    # the server prints wide: no clipping to 16 characters
    return ",".join(sorted(result))


def _service_external_ip(spec: Obj, status: Obj) -> str:
    svc_type = spec.get("type")
    external_ips = [as_str(ip) for ip in as_list(spec.get("externalIPs"))]
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if svc_type == "LoadBalancer":
        lb_ips = _load_balancer_status(status)
        if external_ips:
            results = lb_ips.split(",") if lb_ips else []
            return ",".join(results + external_ips)
        return lb_ips or "<pending>"
    if svc_type == "ExternalName":
        return as_str(spec.get("externalName"))
    return "<unknown>"


def _port_string(ports: Iterable[Any]) -> str:
    pieces = []
    for p in ports:
        p = as_dict(p)
        port, protocol, node_port = as_int(p.get("port")), as_str(p.get("protocol")), as_int(p.get("nodePort"))
        if node_port > 0:
            pieces.append(f"{port}:{node_port}/{protocol}")
        else:
            pieces.append(f"{port}/{protocol}")
    return ",".join(pieces)


def _service_row(obj: Obj, now: int) -> Row:
    spec = as_dict(obj.get("spec"))
    cluster_ips = as_list(spec.get("clusterIPs"))
    if not cluster_ips and as_str(spec.get("clusterIP")):
        cluster_ips = [spec.get("clusterIP")]  # clusterIPs is set from clusterIP on write
    internal_ip = as_str(cluster_ips[0]) if cluster_ips else "<none>"
    ports = _port_string(as_list(spec.get("ports"))) or "<none>"
    return Row([
        object_name(obj), as_str(spec.get("type")), internal_ip,
        _service_external_ip(spec, as_dict(obj.get("status"))), ports, age(obj, now),
        format_labels(spec.get("selector")),
    ])


def _format_endpoints(obj: Obj) -> str:
    subsets = as_list(obj.get("subsets"))
    if not subsets:
        return "<none>"
    items: list[str] = []
    limit = 3
    more = False
    count = 0
    for ss in subsets:
        ss = as_dict(ss)
        addresses = [as_str(as_dict(a).get("ip")) for a in as_list(ss.get("addresses"))]
        ports = as_list(ss.get("ports"))
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
                items.append(join_host_port(ip, as_int(as_dict(port).get("port"))))
    ret = ",".join(items)
    if more:
        return f"{ret} + {count - limit} more..."
    return ret


def _endpoints_row(obj: Obj, now: int) -> Row:
    return Row([object_name(obj), _format_endpoints(obj), age(obj, now)])


def _node_row(obj: Obj, now: int) -> Row:
    meta = as_dict(obj.get("metadata"))
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    ready_status: str | None = None
    for cond in as_list(status.get("conditions")):
        cond = as_dict(cond)
        if cond.get("type") == "Ready":  # the last one wins, as in upstream's map
            ready_status = as_str(cond.get("status"))
    states = []
    if ready_status is not None:
        states.append("Ready" if ready_status == "True" else "NotReady")
    else:
        states.append("Unknown")
    if spec.get("unschedulable") is True:
        states.append("SchedulingDisabled")

    roles: set[str] = set()
    for k, v in as_dict(meta.get("labels")).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(as_str(v))

    def address(kind: str) -> str:
        for a in as_list(status.get("addresses")):
            a = as_dict(a)
            if a.get("type") == kind:
                return as_str(a.get("address"))
        return "<none>"

    info = as_dict(status.get("nodeInfo"))
    return Row([
        as_str(meta.get("name")), ",".join(states), ",".join(sorted(roles)) or "<none>",
        age(obj, now), as_str(info.get("kubeletVersion")),
        address("InternalIP"), address("ExternalIP"),
        as_str(info.get("osImage")) or "<unknown>",
        # the architecture goes after the kernel version (v1.36's printer)
        (as_str(info.get("kernelVersion")) or "<unknown>")
        + (f" ({as_str(info['architecture'])})" if info.get("architecture") else ""),
        as_str(info.get("containerRuntimeVersion")) or "<unknown>",
    ])


def _event_row(obj: Obj, now: int) -> Row:
    """core/v1 Event (events.k8s.io/v1 Events are mapped onto it first)."""
    first_ts = parse_timestamp_ns(obj.get("firstTimestamp"))
    if first_ts is None:
        first = since(obj.get("eventTime"), now)
    else:
        first = human_duration_ns(now - first_ts)
    last_ts = parse_timestamp_ns(obj.get("lastTimestamp"))
    last = first if last_ts is None else human_duration_ns(now - last_ts)
    count = as_int(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, Mapping):
        last = since(series.get("lastObservedTime"), now)
        count = as_int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    involved = as_dict(obj.get("involvedObject"))
    kind = as_str(involved.get("kind")).lower()
    target = f"{kind}/{as_str(involved.get('name'))}" if as_str(involved.get("name")) else kind
    source = as_dict(obj.get("source"))
    component = as_str(source.get("component")) or as_str(obj.get("reportingComponent"))
    instance = as_str(source.get("host")) or as_str(obj.get("reportingInstance"))
    source_str = f"{component}, {instance}" if instance else component
    return Row([
        last, as_str(obj.get("type")), as_str(obj.get("reason")), target,
        as_str(involved.get("fieldPath")), source_str, as_str(obj.get("message")).strip(GO_SPACE),
        first, count, object_name(obj),
    ])


def _events_v1_as_core(obj: Obj) -> dict[str, Any]:
    """events.k8s.io/v1 Event → the core fields the Event printer reads."""
    return {
        "metadata": obj.get("metadata"),
        "involvedObject": obj.get("regarding"),
        "message": obj.get("note"),
        "source": obj.get("deprecatedSource"),
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount"),
        "reportingComponent": obj.get("reportingController"),
        "reportingInstance": obj.get("reportingInstance"),
        "series": obj.get("series"),
        "eventTime": obj.get("eventTime"),
        "type": obj.get("type"),
        "reason": obj.get("reason"),
    }


def _events_v1_row(obj: Obj, now: int) -> Row:
    return _event_row(_events_v1_as_core(obj), now)


def _namespace_row(obj: Obj, now: int) -> Row:
    return Row([object_name(obj), as_str(as_dict(obj.get("status")).get("phase")), age(obj, now)])


def _secret_row(obj: Obj, now: int) -> Row:
    return Row([object_name(obj), as_str(obj.get("type")), len(as_dict(obj.get("data"))), age(obj, now)])


def _service_account_row(obj: Obj, now: int) -> Row:
    return Row([object_name(obj), age(obj, now)])


def _config_map_row(obj: Obj, now: int) -> Row:
    n = len(as_dict(obj.get("data"))) + len(as_dict(obj.get("binaryData")))
    return Row([object_name(obj), n, age(obj, now)])


def _scale_row(obj: Obj, now: int) -> Row:
    return Row([
        object_name(obj), as_int(as_dict(obj.get("spec")).get("replicas")),
        as_int(as_dict(obj.get("status")).get("replicas")), age(obj, now),
    ])


_PERSISTENT_VOLUME_COLUMNS: Final = (
    NAME_COLUMN,
    column("Capacity", "string",
         "capacity is the description of the persistent volume's resources and capacity. "
         "More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#capacity"),
    column("Access Modes", "string",
         "accessModes contains all ways the volume can be mounted. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
    column("Reclaim Policy", "string",
         "persistentVolumeReclaimPolicy defines what happens to a persistent volume when "
         "released from its claim. Valid options are Retain (default for manually created "
         "PersistentVolumes), Delete (default for dynamically provisioned "
         "PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the "
         "volume plugin underlying this PersistentVolume. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
    column("Status", "string",
         "phase indicates if a volume is available, bound to a claim, or released by a "
         "claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#phase"),
    column("Claim", "string",
         "claimRef is part of a bi-directional binding between PersistentVolume and "
         "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is "
         "the authoritative bind between PV and PVC. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
    column("StorageClass", "string",
         "StorageClass of the pv"),
    column("VolumeAttributesClass", "string",
         "VolumeAttributesClass of the pv"),
    column("Reason", "string",
         "reason is a brief CamelCase string that describes any failure and is meant for "
         "machine parsing and tidy display in the CLI."),
    AGE_COLUMN,
    column("VolumeMode", "string",
         "volumeMode defines if a volume is intended to be used with a formatted "
         "filesystem or to remain in raw block state. Value of Filesystem is implied when "
         "not included in spec.", priority=1),
)

_PERSISTENT_VOLUME_CLAIM_COLUMNS: Final = (
    NAME_COLUMN,
    column("Status", "string",
         "phase represents the current phase of PersistentVolumeClaim."),
    column("Volume", "string",
         "volumeName is the binding reference to the PersistentVolume backing this claim."),
    column("Capacity", "string",
         "capacity represents the actual resources of the underlying volume."),
    column("Access Modes", "string",
         "accessModes contains the actual access modes the volume backing the PVC has. "
         "More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#access-modes-1"),
    column("StorageClass", "string",
         "StorageClass of the pvc"),
    column("VolumeAttributesClass", "string",
         "VolumeAttributesClass of the pvc"),
    AGE_COLUMN,
    column("VolumeMode", "string",
         "volumeMode defines what type of volume is required by the claim. Value of "
         "Filesystem is implied when not included in claim spec.", priority=1),
)

_REPLICATION_CONTROLLER_COLUMNS: Final = (
    NAME_COLUMN,
    column("Desired", "integer",
         "Replicas is the number of desired replicas. This is a pointer to distinguish "
         "between explicit zero and unspecified. Defaults to 1. More info: https://kuberne"
         "tes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
         "replicationcontroller"),
    column("Current", "integer",
         "Replicas is the most recently observed number of replicas. More info: https://ku"
         "bernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
         "replicationcontroller"),
    column("Ready", "integer",
         "The number of ready replicas for this replication controller."),
    AGE_COLUMN,
    column("Containers", "string",
         "Names of each container in the template.", priority=1),
    column("Images", "string",
         "Images referenced by each container in the template.", priority=1),
    column("Selector", "string",
         "Selector is a label query over pods that should match the Replicas count. If "
         "Selector is empty, it is defaulted to the labels present on the Pod template. "
         "Label keys and values that must match in order to be controlled by this "
         "replication controller, if empty defaulted to labels on Pod template. More info:"
         " https://kubernetes.io/docs/concepts/overview/working-with-"
         "objects/labels/#label-selectors", priority=1),
)

_STORAGE_CLASS_COLUMNS: Final = (
    NAME_COLUMN,
    column("Provisioner", "string",
         "provisioner indicates the type of the provisioner."),
    column("ReclaimPolicy", "string",
         "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
         "PersistentVolumes of this storage class. Defaults to Delete."),
    column("VolumeBindingMode", "string",
         "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and"
         " bound.  When unset, VolumeBindingImmediate is used. This field is only honored "
         "by servers that enable the VolumeScheduling feature."),
    column("AllowVolumeExpansion", "string",
         "allowVolumeExpansion shows whether the storage class allow volume expand."),
    AGE_COLUMN,
)


_ACCESS_MODE_SHORT: Final = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"),
                             ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: Any) -> str:
    """GetAccessModesAsString: the short names in a fixed order, each once."""
    have = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _ACCESS_MODE_SHORT if mode in have)


def _deleting(obj: Obj) -> bool:
    return bool(as_dict(obj.get("metadata")).get("deletionTimestamp"))


def _unset(v: Any) -> str:
    return "<unset>" if v is None else str(v)


def _persistent_volume_row(obj: Obj, now: int) -> Row:
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    ref = as_dict(spec.get("claimRef"))
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if spec.get("claimRef") else ""
    cls = (as_dict(as_dict(obj.get("metadata")).get("annotations"))
           .get("volume.beta.kubernetes.io/storage-class") or spec.get("storageClassName") or "")
    phase = "Terminating" if _deleting(obj) else str(status.get("phase") or "")
    return Row([
        object_name(obj), str(as_dict(spec.get("capacity")).get("storage") or "0"),
        _access_modes(spec.get("accessModes")),
        str(spec.get("persistentVolumeReclaimPolicy") or ""), phase, claim, str(cls),
        _unset(spec.get("volumeAttributesClassName")), str(status.get("reason") or ""),
        age(obj, now), _unset(spec.get("volumeMode")),
    ])


def _persistent_volume_claim_row(obj: Obj, now: int) -> Row:
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    phase = "Terminating" if _deleting(obj) else str(status.get("phase") or "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = str(as_dict(status.get("capacity")).get("storage") or "0")
    cls = (as_dict(as_dict(obj.get("metadata")).get("annotations"))
           .get("volume.beta.kubernetes.io/storage-class") or spec.get("storageClassName") or "")
    return Row([
        object_name(obj), phase, str(spec.get("volumeName") or ""), capacity, modes, str(cls),
        _unset(spec.get("volumeAttributesClassName")), age(obj, now),
        _unset(spec.get("volumeMode")),
    ])


def _replication_controller_row(obj: Obj, now: int) -> Row:
    spec = as_dict(obj.get("spec"))
    status = as_dict(obj.get("status"))
    names, images = layout_container_cells(pod_template_spec(obj).get("containers"))
    return Row([
        object_name(obj), as_int(spec.get("replicas"), 1), as_int(status.get("replicas")),
        as_int(status.get("readyReplicas")), age(obj, now), names, images,
        format_labels(spec.get("selector")),
    ])


_DEFAULT_CLASS_ANNOTATIONS: Final = ("storageclass.kubernetes.io/is-default-class",
                                     "storageclass.beta.kubernetes.io/is-default-class")


def _storage_class_row(obj: Obj, now: int) -> Row:
    annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
    name = object_name(obj)
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    expansion = obj.get("allowVolumeExpansion")
    return Row([
        name, str(obj.get("provisioner") or ""), str(obj.get("reclaimPolicy") or "Delete"),
        str(obj.get("volumeBindingMode") or "Immediate"),
        expansion is True, age(obj, now),
    ])



_RowFn = Callable[[Obj, int], Row]
_PRINTERS: Final[dict[tuple[str, str], tuple[tuple[dict[str, Any], ...], _RowFn]]] = {
    ("", "PodTemplate"): (_POD_TEMPLATE_COLUMNS, _pod_template_row),
    ("", "Service"): (_SERVICE_COLUMNS, _service_row),
    ("", "Endpoints"): (_ENDPOINTS_COLUMNS, _endpoints_row),
    ("", "Node"): (_NODE_COLUMNS, _node_row),
    ("", "Event"): (_EVENT_COLUMNS, _event_row),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, _events_v1_row),
    ("", "Namespace"): (_NAMESPACE_COLUMNS, _namespace_row),
    ("", "Secret"): (_SECRET_COLUMNS, _secret_row),
    ("", "ServiceAccount"): (_SERVICE_ACCOUNT_COLUMNS, _service_account_row),
    ("", "ConfigMap"): (_CONFIG_MAP_COLUMNS, _config_map_row),
    ("autoscaling", "Scale"): (_SCALE_COLUMNS, _scale_row),
    ("", "PersistentVolume"): (_PERSISTENT_VOLUME_COLUMNS, _persistent_volume_row),
    ("", "PersistentVolumeClaim"): (_PERSISTENT_VOLUME_CLAIM_COLUMNS,
                                    _persistent_volume_claim_row),
    ("", "ReplicationController"): (_REPLICATION_CONTROLLER_COLUMNS,
                                    _replication_controller_row),
    ("storage.k8s.io", "StorageClass"): (_STORAGE_CLASS_COLUMNS, _storage_class_row),
}


# --- the Table ------------------------------------------------------------------

def _internal_metadata(group: str, kind: str, meta: Any) -> Mapping[str, Any]:
    """An object's metadata as the table converter sees it: the internal object's.

    The apps/v1 DaemonSet's template-generation annotation is a spec field inside
    kube-apiserver, so PartialObjectMetadata rows do not show it.
    """
    if not isinstance(meta, Mapping):
        return {}
    if kind == "DaemonSet" and group == "apps":
        ann = meta.get("annotations")
        if isinstance(ann, Mapping) and _DS_TEMPLATE_GENERATION in ann:
            out = dict(meta)
            rest = {k: v for k, v in ann.items() if k != _DS_TEMPLATE_GENERATION}
            if rest:
                out["annotations"] = rest
            else:
                del out["annotations"]
            return out
    return meta


_DS_TEMPLATE_GENERATION: Final = "deprecated.daemonset.template.generation"


def table(
    kind: str,
    group: str,
    objects: Sequence[Obj],
    *,
    printer: Printer | None = None,
    list_meta: Mapping[str, Any] | None,
    include_object: str,
    api_version: str = "meta.k8s.io/v1",
    with_column_definitions: bool = True,
    now: float | None = None,
) -> dict[str, Any]:
    """The meta.k8s.io Table for ``objects`` of one kind (a list, a GET or a watch event).

    ``list_meta`` carries the list's resourceVersion / continue / remainingItemCount;
    with None (a GET, a watch event) the Table's resourceVersion is the single
    object's. ``include_object`` is "None", "Metadata" or "Object" (see
    parse_include_object). ``api_version`` is "meta.k8s.io/v1" or
    "meta.k8s.io/v1beta1" (it also names the PartialObjectMetadata version).
    ``now`` (Unix seconds) pins the clock for Age-like cells.
    """
    if include_object not in INCLUDE_OBJECT_POLICIES:
        raise ValueError(f"unrecognized includeObject value: {_go_quote(include_object)}")
    if printer is None or printer is DEFAULT_PRINTER:
        # a kind whose printer is still in this module's table (transitional)
        columns, row_of = _PRINTERS.get((group, kind), (DEFAULT_COLUMNS, default_row))
    else:
        columns, row_of = printer.columns, printer.row
    now_stamp = now_ns(now)

    metadata: dict[str, Any] = {}
    if list_meta is not None:
        rv = list_meta.get("resourceVersion")
        if rv:
            metadata["resourceVersion"] = rv
        cont = list_meta.get("continue")
        if cont:
            metadata["continue"] = cont
        if list_meta.get("remainingItemCount") is not None:
            metadata["remainingItemCount"] = list_meta["remainingItemCount"]
    elif len(objects) == 1:
        rv = as_dict(objects[0].get("metadata")).get("resourceVersion")
        if rv:
            metadata["resourceVersion"] = rv

    rows: list[dict[str, Any]] = []
    for obj in objects:
        printed = row_of(obj, now_stamp)
        row: dict[str, Any] = {"cells": printed.cells}
        if printed.conditions:
            row["conditions"] = printed.conditions
        if include_object == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": _internal_metadata(group, kind, obj.get("metadata")),
            }
        elif include_object == "Object":
            row["object"] = obj
        else:
            row["object"] = None  # includeObject=None: an explicit null, as upstream
        rows.append(row)

    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": [dict(c) for c in columns] if with_column_definitions else [],
        "rows": rows,
    }
