"""Which fields a field selector may name, per kind, and their values per object.

Two upstream mechanisms are mirrored here. A LIST/WATCH request's field
selector is first run through the kind's *field label conversion* (the
version's ``AddFieldLabelConversionFunc``, or the default that knows only
``metadata.name``/``metadata.namespace``): :func:`check_field_selector`
returns the 400 message kube-apiserver gives for a field the conversion
rejects. Matching then uses the registry's *GetAttrs* field set:
:func:`field_set` builds it from a stored object so the watch cache can call
``FieldSelector.matches(field_set(kind, obj))`` for each event.

The two sets differ in a few places, as upstream: pods accept
``status.podIPs`` but never put it in the set; replica sets expose
``status.replicas`` in their set while apps/v1 does not accept it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.fields import FieldSelector
from pykcm.api.resources import BUILTIN_RESOURCES

__all__ = ["check_field_selector", "field_set", "normalize_field_selector", "supported_fields"]

_META: Final = frozenset({"metadata.name", "metadata.namespace"})

# Field labels accepted by each kind's conversion function, and the wording
# of its rejection ("{label}" is replaced).
_CONVERSIONS: Final[dict[str, tuple[frozenset[str], str]]] = {
    "Pod": (frozenset({
        "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
        "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
        "status.podIP", "status.podIPs", "status.nominatedNodeName", "spec.host",
    }), "field label not supported: {label}"),
    "Node": (frozenset({"metadata.name", "spec.unschedulable"}),
             "field label not supported: {label}"),
    "ReplicationController": (frozenset({"metadata.name", "metadata.namespace", "status.replicas"}),
                              "field label not supported: {label}"),
    "Event": (frozenset({
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
        "metadata.namespace", "metadata.name",
    }), "field label not supported: {label}"),
    "Namespace": (frozenset({"status.phase", "metadata.name"}),
                  "field label not supported: {label}"),
    "Secret": (frozenset({"type", "metadata.namespace", "metadata.name"}),
               "field label not supported: {label}"),
    "Service": (frozenset({"metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"}),
                "field label not supported: {label}"),
    "Job": (frozenset({"metadata.name", "metadata.namespace", "status.successful"}),
            'field label "{label}" not supported for Job'),
}
_DEFAULT_MESSAGE: Final = '"{label}" is not a known field selector: only "metadata.name", "metadata.namespace"'

_CLUSTER_SCOPED: Final = frozenset(r.kind for r in BUILTIN_RESOURCES if not r.namespaced)


def supported_fields(kind: str) -> frozenset[str]:
    """The field labels a field selector on `kind` may use."""
    conv = _CONVERSIONS.get(kind)
    return conv[0] if conv else _META


def check_field_selector(kind: str, selector: FieldSelector | str) -> str | None:
    """The 400 message for the first unsupported field in `selector`, or None.

    Accepts a parsed selector or its string form (parse errors propagate as
    SelectorParseError).
    """
    if isinstance(selector, str):
        from pykcm.api.fields import parse_field_selector

        selector = parse_field_selector(selector)
    conv = _CONVERSIONS.get(kind)
    allowed, message = conv if conv else (_META, _DEFAULT_MESSAGE)
    for field, _, _ in selector.requirements:
        if field not in allowed:
            return message.replace("{label}", field)
    return None


def normalize_field_selector(kind: str, selector: FieldSelector) -> FieldSelector:
    """Apply the conversion's renames (old clients' ``spec.host`` is ``spec.nodeName``)."""
    if kind != "Pod" or not any(f == "spec.host" for f, _, _ in selector.requirements):
        return selector
    return FieldSelector(tuple(
        ("spec.nodeName" if f == "spec.host" else f, op, v) for f, op, v in selector.requirements))


def _s(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _get(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = obj.get(key)
    if v.__class__ is dict:
        return v  # wire objects: skip the slower Mapping ABC check
    return v if isinstance(v, Mapping) else {}


def field_set(kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """The selectable fields of `obj` (upstream's GetAttrs field set)."""
    meta = _get(obj, "metadata")
    out: dict[str, str] = {"metadata.name": _s(meta.get("name"))}
    if kind not in _CLUSTER_SCOPED:
        out["metadata.namespace"] = _s(meta.get("namespace"))
    spec = _get(obj, "spec")
    status = _get(obj, "status")
    if kind == "Pod":
        out["spec.nodeName"] = _s(spec.get("nodeName"))
        out["spec.restartPolicy"] = _s(spec.get("restartPolicy"))
        out["spec.schedulerName"] = _s(spec.get("schedulerName"))
        out["spec.serviceAccountName"] = _s(spec.get("serviceAccountName"))
        out["spec.hostNetwork"] = "true" if spec.get("hostNetwork") else "false"
        out["status.phase"] = _s(status.get("phase"))
        pod_ips = status.get("podIPs") or []
        first = pod_ips[0].get("ip") if pod_ips and isinstance(pod_ips[0], Mapping) else None
        # Upstream reads podIPs[0] (podIP mirrors it); fall back to podIP for
        # objects written by clients that only set the singular field.
        out["status.podIP"] = _s(first if first is not None else status.get("podIP"))
        out["status.nominatedNodeName"] = _s(status.get("nominatedNodeName"))
    elif kind == "Event":
        inv = _get(obj, "involvedObject")
        source = _get(obj, "source").get("component") or obj.get("reportingComponent") or ""
        out.update({
            "involvedObject.kind": _s(inv.get("kind")),
            "involvedObject.namespace": _s(inv.get("namespace")),
            "involvedObject.name": _s(inv.get("name")),
            "involvedObject.uid": _s(inv.get("uid")),
            "involvedObject.apiVersion": _s(inv.get("apiVersion")),
            "involvedObject.resourceVersion": _s(inv.get("resourceVersion")),
            "involvedObject.fieldPath": _s(inv.get("fieldPath")),
            "reason": _s(obj.get("reason")),
            "reportingComponent": _s(obj.get("reportingComponent")),
            "source": _s(source),
            "type": _s(obj.get("type")),
        })
    elif kind == "Namespace":
        out["status.phase"] = _s(status.get("phase"))
        # Upstream keeps a bare "name" field for backward compatibility.
        out["name"] = _s(meta.get("name"))
    elif kind == "Node":
        out["spec.unschedulable"] = "true" if spec.get("unschedulable") else "false"
    elif kind == "Secret":
        out["type"] = _s(obj.get("type"))
    elif kind == "Service":
        out["spec.clusterIP"] = _s(spec.get("clusterIP"))
        out["spec.type"] = _s(spec.get("type"))
    elif kind == "Job":
        out["status.successful"] = str(int(status.get("succeeded") or 0))
    elif kind in ("ReplicaSet", "ReplicationController"):
        out["status.replicas"] = str(int(status.get("replicas") or 0))
    return out
