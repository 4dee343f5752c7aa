"""What the request path needs of built-in objects outside their strategies' defaulting:
quantities as the body decoder reads them (:func:`parse_quantity`, :func:`bad_quantity`:
Go rejects an unparsable quantity while decoding), the empty object Go writes for
each kind (:func:`zero_object_fields`: the body of watch BOOKMARK events) and null
removal (:func:`drop_nulls`).

Each kind's defaulting is its strategy's (registry/<group>/<resource>.py); what
they share is registry/defaulting.py and registry/core/podspec_defaults.py.
Quantities are read by the one Quantity parser, pykcm/api/quantity.py, in its strict
mode (Go's grammar: no "NaN", no "1_000").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from pykcm.api.quantity import parse_quantity as _parse_quantity
from pykcm.apiserver.registry.defaulting import dicts_in

__all__ = ["bad_quantity", "drop_nulls", "parse_quantity", "zero_object_fields"]

Obj = dict[str, Any]

# --- quantities (just enough for requests/limits and QoS) ---------------------

def parse_quantity(q: Any) -> Decimal | None:
    """The numeric value of a resource.Quantity ("100m", "1Gi", "1e3", 2) as the body
    decoder reads it (Go's grammar); None if malformed."""
    return _parse_quantity(q, strict=True)


# --- images --------------------------------------------------------------------

# --- pod specs ------------------------------------------------------------------

# --- per kind ------------------------------------------------------------------

# NodeSystemInfo's string fields are not omitempty: Go writes every one.
NODE_INFO_FIELDS: Final = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                            "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                            "operatingSystem", "architecture")


# --- the zero object ------------------------------------------------------------

_NO_CONTAINERS: Final = {"metadata": {}, "spec": {"containers": None}}
# What Go writes for an empty object of each kind besides kind, apiVersion and
# metadata (non-omitempty fields and structs): the body of watch BOOKMARK events.
_ZERO_FIELDS: Final[dict[tuple[str, str], dict[str, Any]]] = {
    ("", "Namespace"): {"spec": {}, "status": {}},
    ("", "Node"): {"spec": {}, "status": {
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
        "nodeInfo": {k: "" for k in NODE_INFO_FIELDS}}},
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
    ("networking.k8s.io", "Ingress"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("networking.k8s.io", "IngressClass"): {"spec": {}},
    ("networking.k8s.io", "NetworkPolicy"): {"spec": {"podSelector": {}}},
    ("networking.k8s.io", "ServiceCIDR"): {"spec": {}, "status": {}},
    ("networking.k8s.io", "IPAddress"): {"spec": {}},
    ("node.k8s.io", "RuntimeClass"): {"handler": ""},
    ("scheduling.k8s.io", "PriorityClass"): {"value": 0},
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
        for c in dicts_in(spec.get(field)):
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
    for v in dicts_in(spec.get("volumes")):
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
