"""What the request path needs of built-in objects outside their strategies' defaulting:
quantities as the body decoder reads them (:func:`parse_quantity`, :func:`bad_quantity`:
Go rejects an unparsable quantity while decoding), the empty object Go writes for
each kind (:func:`zero_object_fields`: the body of watch BOOKMARK events) and null
removal (:func:`drop_nulls`).

Each kind's defaulting is its strategy's (registry/<group>/<resource>.py); what
they share is registry/defaulting.py and registry/core/podspec_defaults.py.
Deliberate duplicate: pykcm/api/quantity.py has the other layers' Quantity parser;
this one keeps the decoder's stricter grammar (no "NaN", no "1_000").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Final

from pykcm.apiserver.registry.defaulting import dicts_in

__all__ = ["bad_quantity", "drop_nulls", "parse_quantity", "zero_object_fields"]

Obj = dict[str, Any]

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
MEMO_MAX_LEN: Final = 512


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
    if q.__class__ is str and len(q) <= MEMO_MAX_LEN:
        return _parse_quantity_str(q)  # Decimals are immutable: safe to share
    if isinstance(q, bool):
        return None
    if isinstance(q, (int, float)):
        return Decimal(str(q))
    if not isinstance(q, str):
        return None
    return _parse_quantity_str.__wrapped__(q)


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
