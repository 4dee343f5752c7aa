"""REST strategies: the per-kind rules applied around every write (upstream's `rest.RESTCreateStrategy`).

`rest_storage` runs the same pipeline for every resource; this module answers
the kind-specific questions inside it: which metadata the system owns, when
generation moves, which part a /status write may change, how the object is
defaulted and validated, and how long a graceful delete takes.
"""

from __future__ import annotations

import time
from typing import Any

from pykcm.api import validation as _api_validation
from pykcm.api.resources import ResourceInfo
from pykcm.api.timestamps import format_time
from pykcm.apiserver import crd_strategy as _crd
from pykcm.apiserver import defaults as _defaults
from pykcm.apiserver import validation as _validation
from pykcm.apiserver import volumes as _volumes
from pykcm.apiserver.custom_resources import CRD_GROUP, CustomResourceVersion


def now_rfc3339() -> str:
    # time.time(), not C time() (time.gmtime() with no argument): the coarse clock
    # runs up to a tick behind, so stamps just after a second boundary showed the last one.
    return format_time(time.time())


def rfc3339(ts: float) -> str:
    return format_time(ts)


def _as_status_causes(causes: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in causes:
        if isinstance(c, dict):
            out.append(c)
        else:
            out.append(c.to_status_cause())
    return out


def _is_crd(info: ResourceInfo) -> bool:
    return info.group == CRD_GROUP and info.kind == "CustomResourceDefinition"


def apply_defaults(info: ResourceInfo, obj: dict[str, Any], *, create: bool,
                   crv: CustomResourceVersion | None = None) -> None:
    """Defaulting; for custom resources also pruning of unknown fields (schema order)."""
    if crv is not None:
        crv.prune_and_default(obj)
    elif _is_crd(info):
        _crd.default_crd(obj)
    elif info.group in _BUILTIN_GROUPS:
        _defaults.apply_defaults(info.kind, obj, create=create)


def validate_create(info: ResourceInfo, obj: dict[str, Any],
                    crv: CustomResourceVersion | None = None) -> list[dict[str, Any]]:
    if crv is not None:
        causes = _api_validation.validate_object_meta(
            obj.get("metadata"), namespaced=info.namespaced)
        return _as_status_causes(causes + crv.validate(obj))
    if _is_crd(info):
        return _as_status_causes(_crd.validate_crd_create(obj))
    if info.group not in _BUILTIN_GROUPS:
        return []
    return _as_status_causes(_validation.validate_create(info.kind, obj))


def validate_update(
    info: ResourceInfo, new: dict[str, Any], old: dict[str, Any], subresource: str,
    crv: CustomResourceVersion | None = None,
) -> list[dict[str, Any]]:
    if crv is not None:
        causes = _api_validation.validate_object_meta(
            new.get("metadata"), namespaced=info.namespaced)
        causes += _api_validation.validate_object_meta_update(new.get("metadata"),
                                                              old.get("metadata"))
        return _as_status_causes(causes + crv.validate(new))
    if _is_crd(info):
        if subresource == "status":
            return []
        return _as_status_causes(_crd.validate_crd_update(new, old))
    if info.group not in _BUILTIN_GROUPS:
        return []
    if subresource == "status":
        return _as_status_causes(_validation.validate_status_update(info.kind, new, old))
    return _as_status_causes(_validation.validate_update(info.kind, new, old))


def validate_event_v1_create(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Validation of an Event created through events.k8s.io/v1 (stricter than core/v1)."""
    return _as_status_causes(_validation.validate_event_v1_create(obj))


def validate_event_v1_update(new: dict[str, Any], old: dict[str, Any]) -> list[dict[str, Any]]:
    return _as_status_causes(_validation.validate_event_v1_update(new, old))


_BUILTIN_GROUPS = frozenset({"", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io",
                             "storage.k8s.io"})

# Metadata the system owns: a write can never change it (BeforeUpdate).
_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


def prepare_for_create(info: ResourceInfo, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    meta.pop("deletionTimestamp", None)
    meta.pop("deletionGracePeriodSeconds", None)
    meta.pop("resourceVersion", None)
    meta.pop("selfLink", None)
    if info.track_generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    if info.status_subresource and info.kind not in (
            "Pod", "Namespace", "Node", "Service", "PersistentVolume", "PersistentVolumeClaim"):
        # Workload status is the controllers' to write, never the creator's.
        obj.pop("status", None)
    if info.kind == "DaemonSet" and info.group == "apps":
        _set_template_generation(obj, max(1, _template_generation(meta)))
    if info.kind == "EndpointSlice":
        _drop_topology_on_v1(obj, None)
    if info.kind in ("PersistentVolume", "PersistentVolumeClaim") and not info.group:
        # their PrepareForCreate: the status is the server's (phase Pending by defaulting),
        # a PersistentVolume's first phase stamped
        obj["status"] = {}
        if info.kind == "PersistentVolume":
            _volumes.prepare_pv_status(obj, None, now_rfc3339())
    elif info.kind == "Pod":
        # PodStrategy.PrepareForCreate: a new pod's status is the server's
        # (defaulting then sets phase Pending and the QoS class).
        obj["status"] = {}
    elif info.kind == "Namespace":
        obj["status"] = {"phase": "Active"}


def prepare_for_update(
    info: ResourceInfo, new: dict[str, Any], old: dict[str, Any], subresource: str,
    custom: bool = False,
) -> dict[str, Any]:
    """Carry over what this write may not change; returns the object to store."""
    old_meta = old["metadata"]
    if subresource == "status":
        result = dict(old)
        if custom or info.kind in ("Namespace", "CustomResourceDefinition"):
            # Custom resources: only status (and managedFields) come from the request.
            result["metadata"] = dict(old_meta)
        else:
            # Built-in status strategies reset the spec, not the metadata: the
            # Deployment controller writes its revision annotation with UpdateStatus,
            # and that must not bump the generation.
            result["metadata"] = _status_write_metadata(info, new, old_meta)
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        if info.kind == "PersistentVolume" and not info.group:
            _volumes.prepare_pv_status(result, old, now_rfc3339())
        if info.kind == "Namespace":
            # A namespace status write cannot revive a terminating namespace.
            pass
        return result
    if subresource == "finalize":
        # namespaceFinalizeStrategy: spec.finalizers and the metadata come from the request
        # (system fields kept), the status stays
        result = dict(old)
        result["metadata"] = _status_write_metadata(info, new, old_meta)
        spec = dict(old.get("spec") or {})
        spec["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
        if not spec["finalizers"]:
            spec.pop("finalizers")
        result["spec"] = spec
        return result
    meta = new["metadata"]
    for k in _SYSTEM_META:
        if k in old_meta:
            meta[k] = old_meta[k]
        else:
            meta.pop(k, None)
    meta.pop("selfLink", None)
    if info.status_subresource and info.kind != "Namespace":
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    if info.kind == "Service" and not info.group:
        _keep_service_addresses(new, old)
    if info.kind == "DaemonSet" and info.group == "apps":
        # spec.templateGeneration (the annotation in v1) is the server's: it moves with
        # every change of the pod template.
        tg = _template_generation(old_meta)
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            tg += 1
        _set_template_generation(new, tg)
    if info.kind == "Namespace" and "status" in old:
        # Namespace status is kept by the main resource; phase moves only via delete.
        new["status"] = old["status"]
    if info.track_generation:
        gen = old_meta.get("generation", 1)
        if custom:
            # Custom resources: every change outside metadata (and status, when
            # it is a subresource) is a new generation.
            skip = ("metadata", "status") if info.status_subresource else ("metadata",)
            changed = ({k: v for k, v in new.items() if k not in skip}
                       != {k: v for k, v in old.items() if k not in skip})
        elif info.kind == "PodTemplate":
            changed = new.get("template") != old.get("template")
        elif info.kind == "EndpointSlice":
            # everything but metadata, and the labels
            changed = (any(new.get(k) != old.get(k) for k in {*new, *old} - {"metadata"})
                       or meta.get("labels") != old_meta.get("labels"))
        else:
            changed = new.get("spec") != old.get("spec")
        if info.kind == "Deployment" and meta.get("annotations") != old_meta.get("annotations"):
            changed = True
        meta["generation"] = gen + 1 if changed else gen
    else:
        meta.pop("generation", None)
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"]
    if info.kind == "EndpointSlice":
        _drop_topology_on_v1(new, old)  # after the generation, as upstream
    return new


_HOSTNAME_LABEL = "kubernetes.io/hostname"


def _drop_topology_on_v1(new: dict[str, Any], old: dict[str, Any] | None) -> None:
    """dropTopologyOnV1: discovery.k8s.io/v1 writes cannot set deprecatedTopology. A changed
    endpoint without nodeName keeps the node its old topology named (a partial update)."""
    endpoints = new.get("endpoints")
    if not isinstance(endpoints, list):
        return
    if old is not None and endpoints == old.get("endpoints"):
        return
    previous = {str(n) for e in (old or {}).get("endpoints") or [] if isinstance(e, dict)
                for n in [(e.get("deprecatedTopology") or {}).get(_HOSTNAME_LABEL)] if n}
    for ep in endpoints:
        if not isinstance(ep, dict):
            continue
        topology = ep.pop("deprecatedTopology", None)
        node = (topology or {}).get(_HOSTNAME_LABEL) if isinstance(topology, dict) else None
        if (ep.get("nodeName") is None and isinstance(node, str) and node in previous
                and not _api_validation.is_dns1123_subdomain(node)):
            ep["nodeName"] = node


ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"
KINDS_WITH_UPDATE_WARNINGS = frozenset({"EndpointSlice", "ServiceAccount"})


def warnings(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    """The strategy's WarningsOnCreate (``old`` None) / WarningsOnUpdate of a built-in kind
    (those with warnings: EndpointSlice, ServiceAccount; Secrets' are the handlers')."""
    if info.kind == "EndpointSlice" and info.group == "discovery.k8s.io":
        return endpoint_slice_warnings(obj, old is None)
    if info.kind == "ServiceAccount" and not info.group:
        # the deprecated annotation, when a write newly sets it
        if old is not None and ENFORCE_MOUNTABLE_SECRETS in (
                (old.get("metadata") or {}).get("annotations") or {}):
            return []
        if ENFORCE_MOUNTABLE_SECRETS in ((obj.get("metadata") or {}).get("annotations") or {}):
            return [(f"metadata.annotations[{ENFORCE_MOUNTABLE_SECRETS}]: deprecated in v1.32+; "
                    "prefer separate namespaces to isolate access to mounted secrets")]
    return []


_ENDPOINT_SLICE_CONTROLLERS = ("endpointslice-controller.k8s.io",
                               "endpointslicemirroring-controller.k8s.io")


def endpoint_slice_warnings(obj: dict[str, Any], create: bool) -> list[str]:
    """WarningsOnCreate/WarningsOnUpdate: FQDN slices are deprecated; addresses in a
    non-standard form (not from the endpoint slice controllers) are warned about."""
    out = []
    if create and obj.get("addressType") == "FQDN":
        out.append("spec.addressType: FQDN endpoints are deprecated")
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get("endpointslice.kubernetes.io/managed-by") in _ENDPOINT_SLICE_CONTROLLERS:
        return out
    for i, ep in enumerate(obj.get("endpoints") or []):
        for j, addr in enumerate((ep or {}).get("addresses") or []):
            out.extend(_validation.ip_warnings(f"endpoints[{i}].addresses[{j}]", str(addr)))
    return out


_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template_generation(meta: dict[str, Any]) -> int:
    """A DaemonSet's templateGeneration, which apps/v1 carries in an annotation."""
    v = (meta.get("annotations") or {}).get(_TEMPLATE_GENERATION)
    try:
        return int(v) if v is not None else 0
    except (TypeError, ValueError):
        return 0


def _set_template_generation(obj: dict[str, Any], value: int) -> None:
    meta = obj["metadata"]
    annotations = dict(meta.get("annotations") or {})
    annotations[_TEMPLATE_GENERATION] = str(value)
    meta["annotations"] = annotations


def _status_write_metadata(info: ResourceInfo, new: dict[str, Any],
                           old_meta: dict[str, Any]) -> dict[str, Any]:
    """The metadata a built-in kind's /status write stores (its status strategy's rules)."""
    meta = dict(new.get("metadata") or old_meta)
    for k in (*_SYSTEM_META, "generation"):
        if k in old_meta:
            meta[k] = old_meta[k]
        else:
            meta.pop(k, None)
    meta.pop("selfLink", None)
    if info.kind == "Deployment":
        _keep(meta, old_meta, "labels")
    elif info.kind == "Pod":
        # Old kubelets corrupted owner references through pods/status.
        _keep(meta, old_meta, "ownerReferences")
    return meta


def _keep(meta: dict[str, Any], old_meta: dict[str, Any], key: str) -> None:
    if key in old_meta:
        meta[key] = old_meta[key]
    else:
        meta.pop(key, None)


def _keep_service_addresses(new: dict[str, Any], old: dict[str, Any]) -> None:
    """An update that leaves out the allocated addresses keeps them (upstream patches them back)."""
    spec = new.get("spec")
    old_spec = old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    if (not spec.get("clusterIP") and not spec.get("clusterIPs") and old_spec.get("clusterIP")
            and spec.get("type", "ClusterIP") != "ExternalName"):
        spec["clusterIP"] = old_spec["clusterIP"]
        if old_spec.get("clusterIPs"):
            spec["clusterIPs"] = old_spec["clusterIPs"]
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                     for p in old_spec.get("ports") or [] if isinstance(p, dict)}
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and not p.get("nodePort"):
                np = old_ports.get((p.get("port"), p.get("protocol", "TCP")))
                if np:
                    p["nodePort"] = np


def strip_for_compare(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without the fields a no-op write may differ in."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    out = dict(obj)
    out["metadata"] = meta
    return out


def pod_grace_period(pod: dict[str, Any], requested: int | None) -> int:
    """Graceful deletion period for a pod (pod strategy CheckGracefulDelete)."""
    spec = pod.get("spec") or {}
    grace = requested
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds")
        if grace is None:
            grace = 30
    # An unscheduled or finished pod has nothing to stop: delete at once.
    phase = (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        grace = 0
    return max(0, int(grace))
