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

import datetime as _dt
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from pykcm.api.labels import selector_from_label_selector

__all__ = [
    "TABLE_GROUP",
    "column_definitions",
    "has_printer",
    "human_duration",
    "negotiate_table",
    "parse_include_object",
    "parse_table_accept",
    "table",
    "translate_timestamp_since",
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


# --- durations and timestamps -------------------------------------------------

_NS: Final = 1_000_000_000
_MINUTE: Final = 60 * _NS
_HOUR: Final = 60 * _MINUTE


def _go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Go's / on integers)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _human_duration_ns(d: int) -> str:
    seconds = _go_div(d, _NS)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = d // _MINUTE
    if minutes < 10:
        s = (d // _NS) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = d // _HOUR
    if hours < 8:
        m = (d // _MINUTE) % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration for a duration in seconds.

    "45s", "119s", "3m20s", "12m", "5h7m", "47h", "2d5h", "20d", "2y30d", "9y";
    up to 1s in the future is "0s", further is "<invalid>".
    """
    return _human_duration_ns(int(seconds * _NS))


_UNIX_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_GO_ZERO_TIME: Final = _dt.datetime(1, 1, 1, tzinfo=_dt.UTC)


def _parse_ts_ns(value: Any) -> int | None:
    """A metav1.Time / MicroTime JSON string as Unix nanoseconds; None for zero/absent."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = _dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    if t == _GO_ZERO_TIME:
        return None  # Go's zero time, IsZero()
    delta = t - _UNIX_EPOCH
    return (delta.days * 86400 + delta.seconds) * _NS + delta.microseconds * 1000


def _now_ns(now: float | None) -> int:
    return time.time_ns() if now is None else int(now * _NS)


def translate_timestamp_since(timestamp: Any, now: float | None = None) -> str:
    """printers' translateTimestampSince: HumanDuration(now - ts), "<unknown>" when unset."""
    ts = _parse_ts_ns(timestamp)
    if ts is None:
        return "<unknown>"
    return _human_duration_ns(_now_ns(now) - ts)


def _rfc3339_utc(value: Any) -> str:
    """time.Time.UTC().Format(time.RFC3339) of a metav1.Time (zero time when unset)."""
    ts = _parse_ts_ns(value)
    if ts is None:
        return "0001-01-01T00:00:00Z"
    t = _UNIX_EPOCH + _dt.timedelta(microseconds=ts // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- small typed accessors over JSON -----------------------------------------

def _d(v: Any) -> Obj:
    return v if isinstance(v, Mapping) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _i(v: Any, default: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        return default
    return v


def _has(obj: Obj, key: str) -> bool:
    """A pointer field that is set (present and not null)."""
    return obj.get(key) is not None


# Go's unicode.IsSpace set, for strings.TrimSpace.
_GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _format_labels(labels: Any) -> str:
    """labels.FormatLabels: sorted "k=v,..." or "<none>"."""
    m = _d(labels)
    if not m:
        return "<none>"
    return ",".join(f"{k}={m[k]}" for k in sorted(m))


def _selector_string(selector: Any) -> str:
    """metav1.LabelSelectorAsSelector(...).String(); raises ValueError when invalid."""
    sel = selector if isinstance(selector, Mapping) else None
    try:
        return str(selector_from_label_selector(sel))
    except (ValueError, TypeError, AttributeError) as e:
        raise ValueError(str(e)) from e


def _format_label_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid."""
    try:
        s = _selector_string(selector)
    except ValueError:
        return "<error>"
    return s or "<none>"


def _layout_container_cells(containers: Any) -> tuple[str, str]:
    names: list[str] = []
    images: list[str] = []
    for c in _l(containers):
        c = _d(c)
        names.append(_s(c.get("name")))
        images.append(_s(c.get("image")))
    return ",".join(names), ",".join(images)


def _bool_ptr(value: Any) -> str:
    if value is None:
        return "<unset>"
    return "True" if value is True else "False"


def _join_host_port(host: str, port: int) -> str:
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host}:{port}"


# --- column definitions -------------------------------------------------------

def _col(name: str, type_: str, description: str, *, fmt: str = "",
         priority: int = 0) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description,
            "priority": priority}


# SwaggerDoc() texts (k8s.io/api v1.36) the upstream column definitions reference.
_D_NAME: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_D_AGE: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata"
)
_D_CONTAINERS: Final = "Names of each container in the template."
_D_IMAGES: Final = "Images referenced by each container in the template."
_D_READY_PODS: Final = "Number of the pod with ready state"
_D_LABEL_SELECTORS_URL: Final = (
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)

_NAME_COL: Final = _col("Name", "string", _D_NAME, fmt="name")
NAME_DESCRIPTION: Final = _D_NAME
CREATION_TIMESTAMP_DESCRIPTION: Final = _D_AGE
_AGE_COL: Final = _col("Age", "string", _D_AGE)

_POD_COLUMNS: Final = (
    _NAME_COL,
    _col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "string", "The aggregate status of the containers in this pod."),
    _col("Restarts", "string",
         "The number of times the containers in this pod have been restarted and when the "
         "last container in this pod has restarted."),
    _AGE_COL,
    _col("IP", "string",
         "podIP address allocated to the pod. Routable at least within the cluster. Empty if "
         "not yet allocated.", priority=1),
    _col("Node", "string",
         "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
         "candidate for scheduling by the scheduler defined in schedulerName. Once this field "
         "is set, the kubelet for this node becomes responsible for the lifecycle of this pod. "
         "This field should not be used to express a desire for the pod to be scheduled on a "
         "specific node. "
         "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
         priority=1),
    _col("Nominated Node", "string",
         "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
         "cannot be scheduled right away as preemption victims receive their graceful "
         "termination periods. This field does not guarantee that the pod will be scheduled "
         "on this node. Scheduler may decide to place the pod elsewhere if other nodes become "
         "available sooner. Scheduler may also decide to give the resources on this node to a "
         "higher priority pod that is created after preemption. As a result, this field may "
         "be different than PodSpec.nodeName when the pod is scheduled.", priority=1),
    _col("Readiness Gates", "string",
         "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
         "when all its containers are ready AND all conditions specified in the readiness gates "
         "have status equal to \"True\" More info: "
         "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
         priority=1),
)

_POD_TEMPLATE_COLUMNS: Final = (
    _NAME_COL,
    _col("Containers", "string", _D_CONTAINERS),
    _col("Images", "string", _D_IMAGES),
    _col("Pod Labels", "string", "The labels for the pod template."),
)

_REPLICA_SET_COLUMNS: Final = (
    _NAME_COL,
    _col("Desired", "integer",
         "Replicas is the number of desired pods. This is a pointer to distinguish between "
         "explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/"
         "concepts/workloads/controllers/replicaset"),
    _col("Current", "integer",
         "Replicas is the most recently observed number of non-terminating pods. More info: "
         "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
    _col("Ready", "integer",
         "The number of non-terminating pods targeted by this ReplicaSet with a Ready "
         "Condition."),
    _AGE_COL,
    _col("Containers", "string", _D_CONTAINERS, priority=1),
    _col("Images", "string", _D_IMAGES, priority=1),
    _col("Selector", "string",
         "Selector is a label query over pods that should match the replica count. Label "
         "keys and values that must match in order to be controlled by this replica set. "
         "It must match the pod template's labels. More info: " + _D_LABEL_SELECTORS_URL,
         priority=1),
)

_DAEMON_SET_COLUMNS: Final = (
    _NAME_COL,
    _col("Desired", "integer",
         "The total number of nodes that should be running the daemon pod (including nodes "
         "correctly running the daemon pod). More info: "
         "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    _col("Current", "integer",
         "The number of nodes that are running at least 1 daemon pod and are supposed to run "
         "the daemon pod. More info: "
         "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    _col("Ready", "integer",
         "numberReady is the number of nodes that should be running the daemon pod and have "
         "one or more of the daemon pod running with a Ready Condition."),
    _col("Up-to-date", "integer",
         "The total number of nodes that are running updated daemon pod"),
    _col("Available", "integer",
         "The number of nodes that should be running the daemon pod and have one or more of "
         "the daemon pod running and available (ready for at least spec.minReadySeconds)"),
    _col("Node Selector", "string",
         "NodeSelector is a selector which must be true for the pod to fit on a node. Selector "
         "which must match a node's labels for the pod to be scheduled on that node. More "
         "info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
    _AGE_COL,
    _col("Containers", "string", _D_CONTAINERS, priority=1),
    _col("Images", "string", _D_IMAGES, priority=1),
    _col("Selector", "string",
         "A label query over pods that are managed by the daemon set. Must match in order to "
         "be controlled. It must match the pod template's labels. More info: "
         + _D_LABEL_SELECTORS_URL, priority=1),
)

_D_JOB_SELECTOR: Final = (
    "A label query over pods that should match the pod count. Normally, the system sets this "
    "field for you. More info: " + _D_LABEL_SELECTORS_URL
)

_JOB_COLUMNS: Final = (
    _NAME_COL,
    _col("Status", "string", "Status of the job."),
    _col("Completions", "string",
         "The number of pods which reached phase Succeeded. The value increases monotonically "
         "for a given spec. However, it may decrease in reaction to scale down of elastic "
         "indexed jobs."),
    _col("Duration", "string", "Time required to complete the job."),
    _AGE_COL,
    _col("Containers", "string", _D_CONTAINERS, priority=1),
    _col("Images", "string", _D_IMAGES, priority=1),
    _col("Selector", "string", _D_JOB_SELECTOR, priority=1),
)

_CRON_JOB_COLUMNS: Final = (
    _NAME_COL,
    _col("Schedule", "string",
         "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    _col("Timezone", "string",
         "The time zone name for the given schedule, see "
         "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this "
         "will default to the time zone of the kube-controller-manager process. The set of "
         "valid time zone names and the time zone offset is loaded from the system-wide time "
         "zone database by the API server during CronJob validation and the controller "
         "manager during execution. If no system-wide time zone database can be found a "
         "bundled version of the database is used instead. If the time zone name becomes "
         "invalid during the lifetime of a CronJob or due to a change in host configuration, "
         "the controller will stop creating new new Jobs and will create a system event with "
         "the reason UnknownTimeZone. More information can be found in "
         "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
    _col("Suspend", "boolean",
         "This flag tells the controller to suspend subsequent executions, it does not apply "
         "to already started executions.  Defaults to false."),
    _col("Active", "integer", "A list of pointers to currently running jobs."),
    _col("Last Schedule", "string",
         "Information when was the last time the job was successfully scheduled."),
    _AGE_COL,
    _col("Containers", "string", _D_CONTAINERS, priority=1),
    _col("Images", "string", _D_IMAGES, priority=1),
    _col("Selector", "string", _D_JOB_SELECTOR, priority=1),
)

_SERVICE_COLUMNS: Final = (
    _NAME_COL,
    _col("Type", "string",
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
    _col("Cluster-IP", "string",
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
    _col("External-IP", "string",
         "externalIPs is a list of IP addresses for which nodes in the cluster will also "
         "accept traffic for this service.  These IPs are not managed by Kubernetes.  The user "
         "is responsible for ensuring that traffic arrives at a node with this IP.  A common "
         "example is external load-balancers that are not part of the Kubernetes system."),
    _col("Port(s)", "string",
         "The list of ports that are exposed by this service. More info: "
         "https://kubernetes.io/docs/concepts/services-networking/service/"
         "#virtual-ips-and-service-proxies"),
    _AGE_COL,
    _col("Selector", "string",
         "Route service traffic to pods with label keys and values matching this selector. If "
         "empty or not present, the service is assumed to have an external process managing "
         "its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, "
         "NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: "
         "https://kubernetes.io/docs/concepts/services-networking/service/", priority=1),
)

_STATEFUL_SET_COLUMNS: Final = (
    _NAME_COL,
    _col("Ready", "string", _D_READY_PODS),
    _AGE_COL,
    _col("Containers", "string", _D_CONTAINERS, priority=1),
    _col("Images", "string", _D_IMAGES, priority=1),
)

_ENDPOINTS_COLUMNS: Final = (
    _NAME_COL,
    _col("Endpoints", "string",
         "The set of all endpoints is the union of all subsets. Addresses are placed into "
         "subsets according to the IPs they share. A single address with multiple ports, some "
         "of which are ready and some of which are not (because they come from different "
         "containers) will result in the address being displayed in different subsets for the "
         "different ports. No address will appear in both Addresses and NotReadyAddresses in "
         "the same subset. Sets of addresses and ports that comprise a service."),
    _AGE_COL,
)

_ENDPOINT_SLICE_COLUMNS: Final = (
    _NAME_COL,
    _col("AddressType", "string",
         "addressType specifies the type of address carried by this EndpointSlice. All "
         "addresses in this slice must be the same type. This field is immutable after "
         "creation. The following address types are currently supported: * IPv4: Represents "
         "an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully "
         "Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and "
         "kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics "
         "are defined for the \"FQDN\" type."),
    _col("Ports", "string",
         "ports specifies the list of network ports exposed by each endpoint in this slice. "
         "Each port must have a unique name. Each slice may include a maximum of 100 ports. "
         "Services always have at least 1 port, so EndpointSlices generated by the "
         "EndpointSlice controller will likewise always have at least 1 port. EndpointSlices "
         "used for other purposes may have an empty ports list."),
    _col("Endpoints", "string",
         "endpoints is a list of unique endpoints in this slice. Each slice may include a "
         "maximum of 1000 endpoints."),
    _AGE_COL,
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
    _NAME_COL,
    _col("Status", "string", "The status of the node"),
    _col("Roles", "string", "The roles of the node"),
    _AGE_COL,
    _col("Version", "string", "Kubelet Version reported by the node."),
    _col("Internal-IP", "string", _D_NODE_ADDRESSES, priority=1),
    _col("External-IP", "string", _D_NODE_ADDRESSES, priority=1),
    _col("OS-Image", "string",
         "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
         "(wheezy)).", priority=1),
    _col("Kernel-Version", "string",
         "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
         priority=1),
    _col("Container-Runtime", "string",
         "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
         "containerd://1.4.2).", priority=1),
)

_EVENT_COLUMNS: Final = (
    _col("Last Seen", "string",
         "The time at which the most recent occurrence of this event was recorded."),
    _col("Type", "string",
         "Type of this event (Normal, Warning), new types could be added in the future"),
    _col("Reason", "string",
         "This should be a short, machine understandable string that gives the reason for the "
         "transition into the object's current status."),
    _col("Object", "string", "The object that this event is about."),
    _col("Subobject", "string",
         "If referring to a piece of an object instead of an entire object, this string should "
         "contain a valid JSON/Go field access statement, such as "
         "desiredState.manifest.containers[2]. For example, if the object reference is to a "
         "container within a pod, this would take on a value like: \"spec.containers{name}\" "
         "(where \"name\" refers to the name of the container that triggered the event) or if "
         "no container name is specified \"spec.containers[2]\" (container with index 2 in "
         "this pod). This syntax is chosen only to have some well-defined way of referencing a "
         "part of an object.", priority=1),
    _col("Source", "string",
         "The component reporting this event. Should be a short machine understandable "
         "string.", priority=1),
    _col("Message", "string", "A human-readable description of the status of this operation."),
    _col("First Seen", "string",
         "The time at which the event was first recorded. (Time of server receipt is in "
         "TypeMeta.)", priority=1),
    _col("Count", "string", "The number of times this event has occurred.", priority=1),
    _col("Name", "string", _D_NAME, fmt="name", priority=1),
)

_NAMESPACE_COLUMNS: Final = (
    _NAME_COL,
    _col("Status", "string", "The status of the namespace"),
    _AGE_COL,
)

_SECRET_COLUMNS: Final = (
    _NAME_COL,
    _col("Type", "string",
         "Used to facilitate programmatic handling of secret data. More info: "
         "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    _col("Data", "string",
         "Data contains the secret data. Each key must consist of alphanumeric characters, "
         "'-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, "
         "representing the arbitrary (possibly non-string) data value here. Described in "
         "https://tools.ietf.org/html/rfc4648#section-4"),
    _AGE_COL,
)

# v1.35 dropped the Secrets count (kubernetes/kubernetes#117160): the field is not
# populated since 1.24 and the count misled.
_SERVICE_ACCOUNT_COLUMNS: Final = (_NAME_COL, _AGE_COL)

_DEPLOYMENT_COLUMNS: Final = (
    _NAME_COL,
    _col("Ready", "string", _D_READY_PODS),
    _col("Up-to-date", "string",
         "Total number of non-terminating pods targeted by this deployment that have the "
         "desired template spec."),
    _col("Available", "string",
         "Total number of available non-terminating pods (ready for at least "
         "minReadySeconds) targeted by this deployment."),
    _AGE_COL,
    _col("Containers", "string", _D_CONTAINERS, priority=1),
    _col("Images", "string", _D_IMAGES, priority=1),
    _col("Selector", "string",
         "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
         "the ones affected by this deployment. It must match the pod template's labels.",
         priority=1),
)

_CONFIG_MAP_COLUMNS: Final = (
    _NAME_COL,
    _col("Data", "string",
         "Data contains the configuration data. Each key must consist of alphanumeric "
         "characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the "
         "BinaryData field. The keys stored in Data must not overlap with the keys in the "
         "BinaryData field, this is enforced during validation process."),
    _AGE_COL,
)

_LEASE_COLUMNS: Final = (
    _NAME_COL,
    _col("Holder", "string",
         "holderIdentity contains the identity of the holder of a current lease. If "
         "Coordinated Leader Election is used, the holder identity must be equal to the "
         "elected LeaseCandidate.metadata.name field."),
    _AGE_COL,
)

_CONTROLLER_REVISION_COLUMNS: Final = (
    _NAME_COL,
    _col("Controller", "string", "Controller of the object"),
    _col("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    _AGE_COL,
)

_SCALE_COLUMNS: Final = (
    _col("Name", "string", _D_NAME),
    _col("Desired", "integer",
         "replicas is the desired number of instances for the scaled object."),
    _col("Available", "integer",
         "replicas is the actual number of observed instances of the scaled object."),
    _AGE_COL,
)

_DEFAULT_COLUMNS: Final = (
    _NAME_COL,
    _col("Created At", "date", _D_AGE),
)


# --- printers -------------------------------------------------------------------

class _Row(NamedTuple):
    cells: Cells
    conditions: list[dict[str, str]] | None = None


_Printer = Callable[[Obj, int], _Row]


def _name(obj: Obj) -> str:
    return _s(_d(obj.get("metadata")).get("name"))


def _age(obj: Obj, now: int) -> str:
    ts = _parse_ts_ns(_d(obj.get("metadata")).get("creationTimestamp"))
    return "<unknown>" if ts is None else _human_duration_ns(now - ts)


def _since(value: Any, now: int) -> str:
    ts = _parse_ts_ns(value)
    return "<unknown>" if ts is None else _human_duration_ns(now - ts)


_POD_SUCCESS_CONDITIONS: Final = (
    {"type": "Completed", "status": "True", "reason": "Succeeded",
     "message": "The pod has completed successfully."},
)
_POD_FAILED_CONDITIONS: Final = (
    {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."},
)


def _is_restartable_init_container(container: Obj | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _term_finished_ns(cs: Obj) -> tuple[bool, int | None]:
    """(LastTerminationState.Terminated != nil, its FinishedAt or None for zero)."""
    term = _d(cs.get("lastState")).get("terminated")
    if not isinstance(term, Mapping):
        return False, None
    return True, _parse_ts_ns(term.get("finishedAt"))


def _later(current: int | None, candidate: int | None) -> int | None:
    """lastRestartDate.Before(&terminatedDate) ? terminatedDate : lastRestartDate."""
    if candidate is None:
        return current
    if current is None or current < candidate:
        return candidate
    return current


def _pod_row(pod: Obj, now: int) -> _Row:
    meta = _d(pod.get("metadata"))
    spec = _d(pod.get("spec"))
    status = _d(pod.get("status"))
    restarts = 0
    restartable_init_restarts = 0
    total_containers = len(_l(spec.get("containers")))
    ready_containers = 0
    last_restart: int | None = None
    last_restartable_init_restart: int | None = None

    phase = _s(status.get("phase"))
    reason = phase
    if _s(status.get("reason")):
        reason = _s(status.get("reason"))
    pod_conditions = [_d(c) for c in _l(status.get("conditions"))]
    for cond in pod_conditions:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    row_conditions: list[dict[str, str]] | None = None
    if phase == "Succeeded":
        row_conditions = [dict(c) for c in _POD_SUCCESS_CONDITIONS]
    elif phase == "Failed":
        row_conditions = [dict(c) for c in _POD_FAILED_CONDITIONS]

    init_containers = _l(spec.get("initContainers"))
    init_by_name: dict[str, Obj] = {}
    for c in init_containers:
        c = _d(c)
        init_by_name[_s(c.get("name"))] = c
        if _is_restartable_init_container(c):
            total_containers += 1

    initializing = False
    for i, cs in enumerate(_l(status.get("initContainerStatuses"))):
        cs = _d(cs)
        rc = _i(cs.get("restartCount"))
        restarts += rc
        has_term, finished = _term_finished_ns(cs)
        if has_term:
            last_restart = _later(last_restart, finished)
        restartable = _is_restartable_init_container(init_by_name.get(_s(cs.get("name"))))
        if restartable:
            restartable_init_restarts += rc
            if has_term:
                last_restartable_init_restart = _later(last_restartable_init_restart, finished)
        state = _d(cs.get("state"))
        term = state.get("terminated")
        waiting = state.get("waiting")
        if isinstance(term, Mapping) and _i(term.get("exitCode")) == 0:
            continue
        if restartable and cs.get("started") is True:
            if cs.get("ready") is True:
                ready_containers += 1
            continue
        if isinstance(term, Mapping):
            # initialization failed
            if not _s(term.get("reason")):
                if _i(term.get("signal")) != 0:
                    reason = f"Init:Signal:{_i(term.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{_i(term.get('exitCode'))}"
            else:
                reason = "Init:" + _s(term.get("reason"))
        elif isinstance(waiting, Mapping) and _s(waiting.get("reason")) and \
                waiting.get("reason") != "PodInitializing":
            reason = "Init:" + _s(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_containers)}"
        initializing = True
        break

    initialized = False
    for cond in pod_conditions:
        if cond.get("type") == "Initialized":
            initialized = cond.get("status") == "True"
            break

    if not initializing or initialized:
        restarts = restartable_init_restarts
        last_restart = last_restartable_init_restart
        has_running = False
        for cs in reversed(_l(status.get("containerStatuses"))):
            cs = _d(cs)
            restarts += _i(cs.get("restartCount"))
            has_term, finished = _term_finished_ns(cs)
            if has_term:
                last_restart = _later(last_restart, finished)
            state = _d(cs.get("state"))
            term = state.get("terminated")
            waiting = state.get("waiting")
            if isinstance(waiting, Mapping) and _s(waiting.get("reason")):
                reason = _s(waiting.get("reason"))
            elif isinstance(term, Mapping) and _s(term.get("reason")):
                reason = _s(term.get("reason"))
            elif isinstance(term, Mapping):
                if _i(term.get("signal")) != 0:
                    reason = f"Signal:{_i(term.get('signal'))}"
                else:
                    reason = f"ExitCode:{_i(term.get('exitCode'))}"
            elif cs.get("ready") is True and isinstance(state.get("running"), Mapping):
                has_running = True
                ready_containers += 1

        # back to "Running" while at least one container still reports running
        if reason == "Completed" and has_running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in pod_conditions)
            reason = "Running" if pod_ready else "NotReady"

    deleting = _has(meta, "deletionTimestamp")
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_str = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_str = f"{restarts} ({_human_duration_ns(now - last_restart)} ago)"

    node_name = _s(spec.get("nodeName")) or "<none>"
    nominated = _s(status.get("nominatedNodeName")) or "<none>"
    # v1 → internal conversion: a set podIP is authoritative over podIPs[0]
    pod_ip = _s(status.get("podIP"))
    if not pod_ip:
        pod_ips = _l(status.get("podIPs"))
        pod_ip = _s(_d(pod_ips[0]).get("ip")) if pod_ips else ""
    pod_ip = pod_ip or "<none>"
    readiness_gates = "<none>"
    gates = _l(spec.get("readinessGates"))
    if gates:
        true_conditions = 0
        for gate in gates:
            ctype = _d(gate).get("conditionType")
            for cond in pod_conditions:
                if cond.get("type") == ctype:
                    if cond.get("status") == "True":
                        true_conditions += 1
                    break
        readiness_gates = f"{true_conditions}/{len(gates)}"

    cells: Cells = [
        _s(meta.get("name")), f"{ready_containers}/{total_containers}", reason, restarts_str,
        _age(pod, now), pod_ip, node_name, nominated, readiness_gates,
    ]
    return _Row(cells, row_conditions)


def _pod_template_row(obj: Obj, now: int) -> _Row:
    template = _d(obj.get("template"))
    names, images = _layout_container_cells(_d(template.get("spec")).get("containers"))
    labels = _format_labels(_d(template.get("metadata")).get("labels"))
    return _Row([_name(obj), names, images, labels])


def _pod_template_spec(obj: Obj) -> Obj:
    return _d(_d(_d(obj.get("spec")).get("template")).get("spec"))


def _replica_set_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    names, images = _layout_container_cells(_pod_template_spec(obj).get("containers"))
    return _Row([
        _name(obj), _i(spec.get("replicas"), 1), _i(status.get("replicas")),
        _i(status.get("readyReplicas")), _age(obj, now),
        names, images, _format_label_selector(spec.get("selector")),
    ])


def _job_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    succeeded = _i(status.get("succeeded"))
    if _has(spec, "completions"):
        completions = f"{succeeded}/{_i(spec.get('completions'))}"
    else:
        parallelism = _i(spec.get("parallelism"))
        if parallelism > 1:
            completions = f"{succeeded}/1 of {parallelism}"
        else:
            completions = f"{succeeded}/1"
    start = _parse_ts_ns(status.get("startTime"))
    completion = _parse_ts_ns(status.get("completionTime"))
    if start is None:
        job_duration = ""
    elif completion is None:
        job_duration = _human_duration_ns(now - start)
    else:
        job_duration = _human_duration_ns(completion - start)

    def has_condition(ctype: str) -> bool:
        for cond in _l(status.get("conditions")):
            cond = _d(cond)
            if cond.get("type") == ctype:
                return cond.get("status") == "True"
        return False

    if has_condition("Complete"):
        job_status = "Complete"
    elif has_condition("Failed"):
        job_status = "Failed"
    elif _has(_d(obj.get("metadata")), "deletionTimestamp"):
        job_status = "Terminating"
    elif has_condition("Suspended"):
        job_status = "Suspended"
    elif has_condition("FailureTarget"):
        job_status = "FailureTarget"
    else:
        job_status = "Running"
    names, images = _layout_container_cells(_pod_template_spec(obj).get("containers"))
    return _Row([
        _name(obj), job_status, completions, job_duration, _age(obj, now),
        names, images, _format_label_selector(spec.get("selector")),
    ])


def _cron_job_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    last_schedule = "<none>"
    if _has(status, "lastScheduleTime"):
        last_schedule = _since(status.get("lastScheduleTime"), now)
    time_zone = _s(spec.get("timeZone")) if _has(spec, "timeZone") else "<none>"
    job_spec = _d(_d(spec.get("jobTemplate")).get("spec"))
    names, images = _layout_container_cells(
        _d(_d(job_spec.get("template")).get("spec")).get("containers"))
    return _Row([
        _name(obj), _s(spec.get("schedule")), time_zone, _bool_ptr(spec.get("suspend")),
        len(_l(status.get("active"))), last_schedule, _age(obj, now),
        names, images, _format_label_selector(job_spec.get("selector")),
    ])


def _load_balancer_status(status: Obj) -> str:
    result: set[str] = set()
    for ing in _l(_d(status.get("loadBalancer")).get("ingress")):
        ing = _d(ing)
        if _s(ing.get("ip")):
            result.add(_s(ing.get("ip")))
        elif _s(ing.get("hostname")):
            result.add(_s(ing.get("hostname")))
    # the server prints wide: no clipping to 16 characters
    return ",".join(sorted(result))


def _service_external_ip(spec: Obj, status: Obj) -> str:
    svc_type = spec.get("type")
    external_ips = [_s(ip) for ip in _l(spec.get("externalIPs"))]
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if svc_type == "LoadBalancer":
        lb_ips = _load_balancer_status(status)
        if external_ips:
            results = lb_ips.split(",") if lb_ips else []
            return ",".join(results + external_ips)
        return lb_ips or "<pending>"
    if svc_type == "ExternalName":
        return _s(spec.get("externalName"))
    return "<unknown>"


def _port_string(ports: Iterable[Any]) -> str:
    pieces = []
    for p in ports:
        p = _d(p)
        port, protocol, node_port = _i(p.get("port")), _s(p.get("protocol")), _i(p.get("nodePort"))
        if node_port > 0:
            pieces.append(f"{port}:{node_port}/{protocol}")
        else:
            pieces.append(f"{port}/{protocol}")
    return ",".join(pieces)


def _service_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    cluster_ips = _l(spec.get("clusterIPs"))
    if not cluster_ips and _s(spec.get("clusterIP")):
        cluster_ips = [spec.get("clusterIP")]  # clusterIPs is set from clusterIP on write
    internal_ip = _s(cluster_ips[0]) if cluster_ips else "<none>"
    ports = _port_string(_l(spec.get("ports"))) or "<none>"
    return _Row([
        _name(obj), _s(spec.get("type")), internal_ip,
        _service_external_ip(spec, _d(obj.get("status"))), ports, _age(obj, now),
        _format_labels(spec.get("selector")),
    ])


def _stateful_set_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    names, images = _layout_container_cells(_pod_template_spec(obj).get("containers"))
    ready = f"{_i(status.get('readyReplicas'))}/{_i(spec.get('replicas'), 1)}"
    return _Row([_name(obj), ready, _age(obj, now), names, images])


def _daemon_set_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    pod_spec = _pod_template_spec(obj)
    names, images = _layout_container_cells(pod_spec.get("containers"))
    return _Row([
        _name(obj), _i(status.get("desiredNumberScheduled")),
        _i(status.get("currentNumberScheduled")), _i(status.get("numberReady")),
        _i(status.get("updatedNumberScheduled")), _i(status.get("numberAvailable")),
        _format_labels(pod_spec.get("nodeSelector")), _age(obj, now),
        names, images, _format_label_selector(spec.get("selector")),
    ])


def _format_endpoints(obj: Obj) -> str:
    subsets = _l(obj.get("subsets"))
    if not subsets:
        return "<none>"
    items: list[str] = []
    limit = 3
    more = False
    count = 0
    for ss in subsets:
        ss = _d(ss)
        addresses = [_s(_d(a).get("ip")) for a in _l(ss.get("addresses"))]
        ports = _l(ss.get("ports"))
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
                items.append(_join_host_port(ip, _i(_d(port).get("port"))))
    ret = ",".join(items)
    if more:
        return f"{ret} + {count - limit} more..."
    return ret


def _endpoints_row(obj: Obj, now: int) -> _Row:
    return _Row([_name(obj), _format_endpoints(obj), _age(obj, now)])


def _list_with_more(items: list[str], count: int, limit: int = 3) -> str:
    """listWithMoreString: the first three, "+ N more...", or <unset>."""
    text = ",".join(items[:limit])
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or "<unset>"


def _endpoint_slice_row(obj: Obj, now: int) -> _Row:
    ports = []
    for p in _l(obj.get("ports")):
        p = _d(p)
        num = p.get("port")
        ports.append(str(num) if isinstance(num, int) else
                     _s(p.get("name")) if p.get("name") is not None else "*")
    addresses = [_s(a) for e in _l(obj.get("endpoints")) for a in _l(_d(e).get("addresses"))]
    return _Row([_name(obj), _s(obj.get("addressType")), _list_with_more(ports, len(ports)),
                 _list_with_more(addresses, len(addresses)), _age(obj, now)])


def _node_row(obj: Obj, now: int) -> _Row:
    meta = _d(obj.get("metadata"))
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    ready_status: str | None = None
    for cond in _l(status.get("conditions")):
        cond = _d(cond)
        if cond.get("type") == "Ready":  # the last one wins, as in upstream's map
            ready_status = _s(cond.get("status"))
    states = []
    if ready_status is not None:
        states.append("Ready" if ready_status == "True" else "NotReady")
    else:
        states.append("Unknown")
    if spec.get("unschedulable") is True:
        states.append("SchedulingDisabled")

    roles: set[str] = set()
    for k, v in _d(meta.get("labels")).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(_s(v))

    def address(kind: str) -> str:
        for a in _l(status.get("addresses")):
            a = _d(a)
            if a.get("type") == kind:
                return _s(a.get("address"))
        return "<none>"

    info = _d(status.get("nodeInfo"))
    return _Row([
        _s(meta.get("name")), ",".join(states), ",".join(sorted(roles)) or "<none>",
        _age(obj, now), _s(info.get("kubeletVersion")),
        address("InternalIP"), address("ExternalIP"),
        _s(info.get("osImage")) or "<unknown>",
        # the architecture goes after the kernel version (v1.36's printer)
        (_s(info.get("kernelVersion")) or "<unknown>")
        + (f" ({_s(info['architecture'])})" if info.get("architecture") else ""),
        _s(info.get("containerRuntimeVersion")) or "<unknown>",
    ])


def _event_row(obj: Obj, now: int) -> _Row:
    """core/v1 Event (events.k8s.io/v1 Events are mapped onto it first)."""
    first_ts = _parse_ts_ns(obj.get("firstTimestamp"))
    if first_ts is None:
        first = _since(obj.get("eventTime"), now)
    else:
        first = _human_duration_ns(now - first_ts)
    last_ts = _parse_ts_ns(obj.get("lastTimestamp"))
    last = first if last_ts is None else _human_duration_ns(now - last_ts)
    count = _i(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, Mapping):
        last = _since(series.get("lastObservedTime"), now)
        count = _i(series.get("count"))
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    involved = _d(obj.get("involvedObject"))
    kind = _s(involved.get("kind")).lower()
    target = f"{kind}/{_s(involved.get('name'))}" if _s(involved.get("name")) else kind
    source = _d(obj.get("source"))
    component = _s(source.get("component")) or _s(obj.get("reportingComponent"))
    instance = _s(source.get("host")) or _s(obj.get("reportingInstance"))
    source_str = f"{component}, {instance}" if instance else component
    return _Row([
        last, _s(obj.get("type")), _s(obj.get("reason")), target,
        _s(involved.get("fieldPath")), source_str, _s(obj.get("message")).strip(_GO_SPACE),
        first, count, _name(obj),
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


def _events_v1_row(obj: Obj, now: int) -> _Row:
    return _event_row(_events_v1_as_core(obj), now)


def _namespace_row(obj: Obj, now: int) -> _Row:
    return _Row([_name(obj), _s(_d(obj.get("status")).get("phase")), _age(obj, now)])


def _secret_row(obj: Obj, now: int) -> _Row:
    return _Row([_name(obj), _s(obj.get("type")), len(_d(obj.get("data"))), _age(obj, now)])


def _service_account_row(obj: Obj, now: int) -> _Row:
    return _Row([_name(obj), _age(obj, now)])


def _deployment_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    try:
        selector = _selector_string(spec.get("selector"))
    except ValueError:
        selector = "<invalid>"
    names, images = _layout_container_cells(_pod_template_spec(obj).get("containers"))
    return _Row([
        _name(obj), f"{_i(status.get('readyReplicas'))}/{_i(spec.get('replicas'), 1)}",
        _i(status.get("updatedReplicas")), _i(status.get("availableReplicas")), _age(obj, now),
        names, images, selector,
    ])


def _config_map_row(obj: Obj, now: int) -> _Row:
    n = len(_d(obj.get("data"))) + len(_d(obj.get("binaryData")))
    return _Row([_name(obj), n, _age(obj, now)])


def _lease_row(obj: Obj, now: int) -> _Row:
    holder = _s(_d(obj.get("spec")).get("holderIdentity"))
    return _Row([_name(obj), holder, _age(obj, now)])


def _controller_revision_row(obj: Obj, now: int) -> _Row:
    controller = "<none>"
    for ref in _l(_d(obj.get("metadata")).get("ownerReferences")):
        ref = _d(ref)
        if ref.get("controller") is not True:
            continue
        api_version = _s(ref.get("apiVersion"))
        if api_version in ("", "/") or api_version.count("/") == 0:
            group = ""
        elif api_version.count("/") == 1:
            group = api_version.split("/", 1)[0]
        else:
            raise ValueError(f"unexpected GroupVersion string: {api_version}")
        kind = _s(ref.get("kind"))
        name = _s(ref.get("name"))
        if not group and not kind:
            controller = name
        else:
            group_kind = f"{kind}.{group}" if group else kind
            controller = f"{group_kind.lower()}/{name}"
        break
    return _Row([_name(obj), controller, _i(obj.get("revision")), _age(obj, now)])


def _scale_row(obj: Obj, now: int) -> _Row:
    return _Row([
        _name(obj), _i(_d(obj.get("spec")).get("replicas")),
        _i(_d(obj.get("status")).get("replicas")), _age(obj, now),
    ])


_PERSISTENT_VOLUME_COLUMNS: Final = (
    _NAME_COL,
    _col("Capacity", "string",
         "capacity is the description of the persistent volume's resources and capacity. "
         "More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#capacity"),
    _col("Access Modes", "string",
         "accessModes contains all ways the volume can be mounted. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
    _col("Reclaim Policy", "string",
         "persistentVolumeReclaimPolicy defines what happens to a persistent volume when "
         "released from its claim. Valid options are Retain (default for manually created "
         "PersistentVolumes), Delete (default for dynamically provisioned "
         "PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the "
         "volume plugin underlying this PersistentVolume. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
    _col("Status", "string",
         "phase indicates if a volume is available, bound to a claim, or released by a "
         "claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#phase"),
    _col("Claim", "string",
         "claimRef is part of a bi-directional binding between PersistentVolume and "
         "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is "
         "the authoritative bind between PV and PVC. More info: "
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
    _col("StorageClass", "string",
         "StorageClass of the pv"),
    _col("VolumeAttributesClass", "string",
         "VolumeAttributesClass of the pv"),
    _col("Reason", "string",
         "reason is a brief CamelCase string that describes any failure and is meant for "
         "machine parsing and tidy display in the CLI."),
    _AGE_COL,
    _col("VolumeMode", "string",
         "volumeMode defines if a volume is intended to be used with a formatted "
         "filesystem or to remain in raw block state. Value of Filesystem is implied when "
         "not included in spec.", priority=1),
)

_PERSISTENT_VOLUME_CLAIM_COLUMNS: Final = (
    _NAME_COL,
    _col("Status", "string",
         "phase represents the current phase of PersistentVolumeClaim."),
    _col("Volume", "string",
         "volumeName is the binding reference to the PersistentVolume backing this claim."),
    _col("Capacity", "string",
         "capacity represents the actual resources of the underlying volume."),
    _col("Access Modes", "string",
         "accessModes contains the actual access modes the volume backing the PVC has. "
         "More info: https://kubernetes.io/docs/concepts/storage/persistent-"
         "volumes#access-modes-1"),
    _col("StorageClass", "string",
         "StorageClass of the pvc"),
    _col("VolumeAttributesClass", "string",
         "VolumeAttributesClass of the pvc"),
    _AGE_COL,
    _col("VolumeMode", "string",
         "volumeMode defines what type of volume is required by the claim. Value of "
         "Filesystem is implied when not included in claim spec.", priority=1),
)

_REPLICATION_CONTROLLER_COLUMNS: Final = (
    _NAME_COL,
    _col("Desired", "integer",
         "Replicas is the number of desired replicas. This is a pointer to distinguish "
         "between explicit zero and unspecified. Defaults to 1. More info: https://kuberne"
         "tes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
         "replicationcontroller"),
    _col("Current", "integer",
         "Replicas is the most recently observed number of replicas. More info: https://ku"
         "bernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
         "replicationcontroller"),
    _col("Ready", "integer",
         "The number of ready replicas for this replication controller."),
    _AGE_COL,
    _col("Containers", "string",
         "Names of each container in the template.", priority=1),
    _col("Images", "string",
         "Images referenced by each container in the template.", priority=1),
    _col("Selector", "string",
         "Selector is a label query over pods that should match the Replicas count. If "
         "Selector is empty, it is defaulted to the labels present on the Pod template. "
         "Label keys and values that must match in order to be controlled by this "
         "replication controller, if empty defaulted to labels on Pod template. More info:"
         " https://kubernetes.io/docs/concepts/overview/working-with-"
         "objects/labels/#label-selectors", priority=1),
)

_STORAGE_CLASS_COLUMNS: Final = (
    _NAME_COL,
    _col("Provisioner", "string",
         "provisioner indicates the type of the provisioner."),
    _col("ReclaimPolicy", "string",
         "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
         "PersistentVolumes of this storage class. Defaults to Delete."),
    _col("VolumeBindingMode", "string",
         "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and"
         " bound.  When unset, VolumeBindingImmediate is used. This field is only honored "
         "by servers that enable the VolumeScheduling feature."),
    _col("AllowVolumeExpansion", "string",
         "allowVolumeExpansion shows whether the storage class allow volume expand."),
    _AGE_COL,
)


_ACCESS_MODE_SHORT: Final = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"),
                             ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: Any) -> str:
    """GetAccessModesAsString: the short names in a fixed order, each once."""
    have = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _ACCESS_MODE_SHORT if mode in have)


def _deleting(obj: Obj) -> bool:
    return bool(_d(obj.get("metadata")).get("deletionTimestamp"))


def _unset(v: Any) -> str:
    return "<unset>" if v is None else str(v)


def _persistent_volume_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    ref = _d(spec.get("claimRef"))
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if spec.get("claimRef") else ""
    cls = (_d(_d(obj.get("metadata")).get("annotations"))
           .get("volume.beta.kubernetes.io/storage-class") or spec.get("storageClassName") or "")
    phase = "Terminating" if _deleting(obj) else str(status.get("phase") or "")
    return _Row([
        _name(obj), str(_d(spec.get("capacity")).get("storage") or "0"),
        _access_modes(spec.get("accessModes")),
        str(spec.get("persistentVolumeReclaimPolicy") or ""), phase, claim, str(cls),
        _unset(spec.get("volumeAttributesClassName")), str(status.get("reason") or ""),
        _age(obj, now), _unset(spec.get("volumeMode")),
    ])


def _persistent_volume_claim_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    phase = "Terminating" if _deleting(obj) else str(status.get("phase") or "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = _access_modes(status.get("accessModes"))
        capacity = str(_d(status.get("capacity")).get("storage") or "0")
    cls = (_d(_d(obj.get("metadata")).get("annotations"))
           .get("volume.beta.kubernetes.io/storage-class") or spec.get("storageClassName") or "")
    return _Row([
        _name(obj), phase, str(spec.get("volumeName") or ""), capacity, modes, str(cls),
        _unset(spec.get("volumeAttributesClassName")), _age(obj, now),
        _unset(spec.get("volumeMode")),
    ])


def _replication_controller_row(obj: Obj, now: int) -> _Row:
    spec = _d(obj.get("spec"))
    status = _d(obj.get("status"))
    names, images = _layout_container_cells(_pod_template_spec(obj).get("containers"))
    return _Row([
        _name(obj), _i(spec.get("replicas"), 1), _i(status.get("replicas")),
        _i(status.get("readyReplicas")), _age(obj, now), names, images,
        _format_labels(spec.get("selector")),
    ])


_DEFAULT_CLASS_ANNOTATIONS: Final = ("storageclass.kubernetes.io/is-default-class",
                                     "storageclass.beta.kubernetes.io/is-default-class")


def _storage_class_row(obj: Obj, now: int) -> _Row:
    annotations = _d(_d(obj.get("metadata")).get("annotations"))
    name = _name(obj)
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    expansion = obj.get("allowVolumeExpansion")
    return _Row([
        name, str(obj.get("provisioner") or ""), str(obj.get("reclaimPolicy") or "Delete"),
        str(obj.get("volumeBindingMode") or "Immediate"),
        expansion is True, _age(obj, now),
    ])


def _default_row(obj: Obj, now: int) -> _Row:
    return _Row([_name(obj), _rfc3339_utc(_d(obj.get("metadata")).get("creationTimestamp"))])


_PRINTERS: Final[dict[tuple[str, str], tuple[tuple[dict[str, Any], ...], _Printer]]] = {
    ("", "Pod"): (_POD_COLUMNS, _pod_row),
    ("", "PodTemplate"): (_POD_TEMPLATE_COLUMNS, _pod_template_row),
    ("", "Service"): (_SERVICE_COLUMNS, _service_row),
    ("", "Endpoints"): (_ENDPOINTS_COLUMNS, _endpoints_row),
    ("discovery.k8s.io", "EndpointSlice"): (_ENDPOINT_SLICE_COLUMNS, _endpoint_slice_row),
    ("", "Node"): (_NODE_COLUMNS, _node_row),
    ("", "Event"): (_EVENT_COLUMNS, _event_row),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, _events_v1_row),
    ("", "Namespace"): (_NAMESPACE_COLUMNS, _namespace_row),
    ("", "Secret"): (_SECRET_COLUMNS, _secret_row),
    ("", "ServiceAccount"): (_SERVICE_ACCOUNT_COLUMNS, _service_account_row),
    ("", "ConfigMap"): (_CONFIG_MAP_COLUMNS, _config_map_row),
    ("apps", "Deployment"): (_DEPLOYMENT_COLUMNS, _deployment_row),
    ("apps", "ReplicaSet"): (_REPLICA_SET_COLUMNS, _replica_set_row),
    ("apps", "StatefulSet"): (_STATEFUL_SET_COLUMNS, _stateful_set_row),
    ("apps", "DaemonSet"): (_DAEMON_SET_COLUMNS, _daemon_set_row),
    ("apps", "ControllerRevision"): (_CONTROLLER_REVISION_COLUMNS, _controller_revision_row),
    ("batch", "Job"): (_JOB_COLUMNS, _job_row),
    ("batch", "CronJob"): (_CRON_JOB_COLUMNS, _cron_job_row),
    ("coordination.k8s.io", "Lease"): (_LEASE_COLUMNS, _lease_row),
    ("autoscaling", "Scale"): (_SCALE_COLUMNS, _scale_row),
    ("", "PersistentVolume"): (_PERSISTENT_VOLUME_COLUMNS, _persistent_volume_row),
    ("", "PersistentVolumeClaim"): (_PERSISTENT_VOLUME_CLAIM_COLUMNS,
                                    _persistent_volume_claim_row),
    ("", "ReplicationController"): (_REPLICATION_CONTROLLER_COLUMNS,
                                    _replication_controller_row),
    ("storage.k8s.io", "StorageClass"): (_STORAGE_CLASS_COLUMNS, _storage_class_row),
}


def has_printer(kind: str, group: str) -> bool:
    """Whether (group, kind) has its own columns (else the Name/Created At default)."""
    return (group, kind) in _PRINTERS


def column_definitions(kind: str, group: str) -> list[dict[str, Any]]:
    """The column definitions the Table for this kind carries (fresh copies)."""
    columns = _PRINTERS.get((group, kind), (_DEFAULT_COLUMNS, _default_row))[0]
    return [dict(c) for c in columns]


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
    columns, printer = _PRINTERS.get((group, kind), (_DEFAULT_COLUMNS, _default_row))
    now_ns = _now_ns(now)

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
        rv = _d(objects[0].get("metadata")).get("resourceVersion")
        if rv:
            metadata["resourceVersion"] = rv

    rows: list[dict[str, Any]] = []
    for obj in objects:
        printed = printer(obj, now_ns)
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
