"""PersistentVolumes, PersistentVolumeClaims and StorageClasses: defaults, validation, strategy.

The API server's per-kind rules for the three storage kinds, kept together
because they share the vocabulary (access modes, reclaim policies, volume
modes, class names). ``defaults``, ``validation`` and ``strategy`` dispatch
here by kind; the rules follow kube-apiserver v1.36's
``pkg/apis/core/v1/defaults.go``, ``pkg/apis/core/validation`` (the
PersistentVolume* functions), ``pkg/apis/storage/validation`` and the
registry strategies of ``pkg/registry/core/persistentvolume{,claim}`` and
``pkg/registry/storage/storageclass``.

Deliberate deviations: of the PersistentVolume sources only hostPath, local,
nfs and csi are checked field by field (the others only count as "a volume
type"); the "spec is immutable" messages carry a short field list where
upstream prints a go-cmp diff of the two specs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    Cause,
    GoValue,
    forbidden,
    go_string_map,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    not_supported,
    required,
    too_long,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from pykcm.apiserver.defaults import parse_quantity

Obj = dict[str, Any]

ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
VOLUME_MODES: Final = ("Block", "Filesystem")
BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
# The volume sources of a PersistentVolumeSpec in Go's field order.
PV_SOURCES: Final = (
    "gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi",
    "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte",
    "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi")
# The order validation counts them in (hostPath first, as ValidatePersistentVolumeSpec).
_PV_SOURCE_CHECK_ORDER: Final = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
    "quobyte", "cinder", "cephfs", "iscsi", "fc", "flexVolume", "azureFile", "vsphereVolume",
    "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi")


def _m(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _d(parent: dict[str, Any], key: str) -> dict[str, Any]:
    v = parent.get(key)
    if not isinstance(v, dict):
        v = {}
        parent[key] = v
    return v


def _order(d: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Go's field order (known keys first, in order; unknown ones after)."""
    items = [(k, d[k]) for k in keys if k in d] + [(k, v) for k, v in d.items() if k not in keys]
    d.clear()
    d.update(items)


_PVC_SPEC: Final = ("accessModes", "selector", "resources", "volumeName", "storageClassName",
                    "volumeMode", "dataSource", "dataSourceRef", "volumeAttributesClassName")
_PVC_STATUS: Final = ("phase", "accessModes", "capacity", "conditions", "allocatedResources",
                      "allocatedResourceStatuses", "currentVolumeAttributesClassName",
                      "modifyVolumeStatus")
_PV_SPEC: Final = ("capacity", *PV_SOURCES, "accessModes", "claimRef",
                   "persistentVolumeReclaimPolicy", "storageClassName", "mountOptions",
                   "volumeMode", "nodeAffinity", "volumeAttributesClassName")
_PV_STATUS: Final = ("phase", "message", "reason", "lastPhaseTransitionTime")
_SC: Final = ("kind", "apiVersion", "metadata", "provisioner", "parameters", "reclaimPolicy",
              "mountOptions", "allowVolumeExpansion", "volumeBindingMode", "allowedTopologies")
_RESOURCES: Final = ("limits", "requests", "claims")


# --- defaults ------------------------------------------------------------------------------

def default_pvc(obj: Obj, create: bool) -> None:
    """SetDefaults_PersistentVolumeClaim(Spec): Filesystem mode, phase Pending."""
    spec = _d(obj, "spec")
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    if isinstance(spec.get("resources"), dict):
        _order(spec["resources"], _RESOURCES)
    else:
        spec["resources"] = {}
    _order(spec, _PVC_SPEC)
    status = _d(obj, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
    _order(status, _PVC_STATUS)


def default_pv(obj: Obj, create: bool) -> None:
    """SetDefaults_PersistentVolume: phase Pending, Retain, Filesystem; hostPath type ""."""
    spec = _d(obj, "spec")
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    hp = spec.get("hostPath")
    if isinstance(hp, dict) and hp.get("type") is None:
        hp["type"] = ""
    _order(spec, _PV_SPEC)
    status = _d(obj, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
    _order(status, _PV_STATUS)


def default_storage_class(obj: Obj, create: bool) -> None:
    """SetDefaults_StorageClass: Delete, Immediate."""
    if not obj.get("reclaimPolicy"):
        obj["reclaimPolicy"] = "Delete"
    if not obj.get("volumeBindingMode"):
        obj["volumeBindingMode"] = "Immediate"
    obj.setdefault("provisioner", "")
    _order(obj, _SC)


# --- validation ----------------------------------------------------------------------------

def _class_name(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def _access_modes(modes: Any, path: str, required_detail: str) -> list[Cause]:
    errs: list[Cause] = []
    modes = modes if isinstance(modes, list) else []
    if not modes:
        errs.append(required(path, required_detail))
    rwop = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(not_supported(path, mode, ACCESS_MODES))
        if mode == "ReadWriteOncePod":
            rwop = True
        elif mode in ACCESS_MODES:
            other = True
    if rwop and other:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _quantity_str(q: Any) -> str:
    return str(q)


def _positive_quantity(q: Any, path: str) -> list[Cause]:
    parsed = parse_quantity(q)
    if parsed is None or parsed <= 0:
        return [invalid(path, _quantity_str(q), "must be greater than zero")]
    return []


def _pvc_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    errs = _access_modes(spec.get("accessModes"), f"{path}.accessModes",
                         "at least 1 access mode is required")
    sel = spec.get("selector")
    if sel is not None:
        errs.extend(validate_label_selector(_m(sel), f"{path}.selector"))
    requests = _m(_m(spec.get("resources")).get("requests"))
    storage_path = f"{path}.resources[storage]"
    if "storage" not in requests:
        errs.append(required(storage_path, ""))
    else:
        errs.extend(_positive_quantity(requests["storage"], storage_path))
    sc = spec.get("storageClassName")
    if isinstance(sc, str) and sc:
        errs.extend(_class_name(sc, f"{path}.storageClassName"))
    vm = spec.get("volumeMode")
    if vm is not None and vm not in VOLUME_MODES:
        errs.append(not_supported(f"{path}.volumeMode", vm, VOLUME_MODES))
    vac = spec.get("volumeAttributesClassName")
    if isinstance(vac, str) and vac:
        errs.extend(_class_name(vac, f"{path}.volumeAttributesClassName"))
    return errs


def validate_pvc_create(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=True)
    errs.extend(_pvc_spec(_m(obj.get("spec")), "spec"))
    return errs


def _without(d: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys and v not in (None, "", [], {})}


def validate_pvc_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_pvc_create(new))
    nspec, ospec = dict(_m(new.get("spec"))), dict(_m(old.get("spec")))
    if not ospec.get("volumeName"):
        # the binder sets volumeName once
        ospec["volumeName"] = nspec.get("volumeName")
    bound = _m(new.get("status")).get("phase") == "Bound"
    # resources.requests.storage may change (expansion), and volumeAttributesClassName once bound
    nres = dict(_m(nspec.get("resources")))
    nreq = dict(_m(nres.get("requests")))
    if bound and nreq:
        nreq["storage"] = _m(_m(ospec.get("resources")).get("requests")).get("storage")
        nres["requests"] = nreq
        nspec["resources"] = nres
    if bound:
        nspec["volumeAttributesClassName"] = ospec.get("volumeAttributesClassName")
    if _without(nspec) != _without(ospec) or _without(_m(nspec.get("resources"))) != _without(
            _m(ospec.get("resources"))):
        errs.append(forbidden("spec", "spec is immutable after creation except resources.requests "
                                      "and volumeAttributesClassName for bound claims"))
    new_size = parse_quantity(_m(_m(_m(new.get("spec")).get("resources")).get("requests"))
                              .get("storage", "0"))
    old_size = parse_quantity(_m(_m(ospec.get("resources")).get("requests")).get("storage", "0"))
    status_size = parse_quantity(_m(_m(old.get("status")).get("capacity")).get("storage", "0"))
    if new_size is not None and old_size is not None and new_size < old_size and (
            status_size is None or new_size <= status_size):
        errs.append(forbidden("spec.resources.requests.storage",
                              "field can not be less than status.capacity"))
    return errs


def validate_pvc_status(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    status = _m(new.get("status"))
    for key in ("capacity", "allocatedResources"):
        for r, q in _m(status.get(key)).items():
            if r == "storage":
                parsed = parse_quantity(q)
                if parsed is None or parsed < 0:
                    errs.append(invalid(f"status.{key}[{r}]", _quantity_str(q),
                                        "must be greater than or equal to 0"))
    return errs


def validate_pv_create(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    spec = _m(obj.get("spec"))
    errs.extend(_access_modes(spec.get("accessModes"), "spec.accessModes", ""))
    capacity = _m(spec.get("capacity"))
    if not capacity:
        errs.append(required("spec.capacity", ""))
    if "storage" not in capacity or len(capacity) > 1:
        shown = (GoValue("null") if spec.get("capacity") is None
                 else go_string_map({k: _quantity_str(v) for k, v in capacity.items()}))
        errs.append(not_supported("spec.capacity", shown, ("storage",)))
    for r, q in sorted(capacity.items()):
        errs.extend(_positive_quantity(q, f"spec.capacity[{r}]"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    node_affinity = spec.get("nodeAffinity")
    affinity_set = bool(_m(node_affinity).get("required"))
    count = 0
    for src in _PV_SOURCE_CHECK_ORDER:
        if spec.get(src) is None:
            continue
        if count:
            errs.append(forbidden(f"spec.{src}", "may not specify more than 1 volume type"))
            continue
        count += 1
        errs.extend(_pv_source(src, _m(spec.get(src)), f"spec.{src}"))
        if src == "local" and not affinity_set:
            errs.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if count == 0:
        errs.append(required("spec", "must specify a volume type"))
    sc = spec.get("storageClassName")
    if isinstance(sc, str) and sc:
        errs.extend(_class_name(sc, "spec.storageClassName"))
    vm = spec.get("volumeMode")
    if vm is not None and vm not in VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", vm, VOLUME_MODES))
    return errs


def _pv_source(src: str, s: Mapping[str, Any], path: str) -> list[Cause]:
    if src in ("hostPath", "local"):
        p = s.get("path")
        if not p:
            return [required(f"{path}.path", "")]
        if ".." in str(p).split("/"):
            return [invalid(f"{path}.path", p, "must not contain '..'")]
        if src == "hostPath":
            t = s.get("type")
            types = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                     "FileOrCreate", "Socket")
            if t is not None and t not in types:
                return [not_supported(f"{path}.type", t, types)]
        return []
    if src == "nfs":
        errs = []
        if not s.get("server"):
            errs.append(required(f"{path}.server", ""))
        if not s.get("path"):
            errs.append(required(f"{path}.path", ""))
        elif not str(s["path"]).startswith("/"):
            errs.append(invalid(f"{path}.path", s["path"], "must be an absolute path"))
        return errs
    if src == "csi":
        errs = []
        if not s.get("driver"):
            errs.append(required(f"{path}.driver", ""))
        if not s.get("volumeHandle"):
            errs.append(required(f"{path}.volumeHandle", ""))
        return errs
    return []


def validate_pv_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_pv_create(new))
    nspec, ospec = _m(new.get("spec")), _m(old.get("spec"))
    if any(nspec.get(s) != ospec.get(s) for s in PV_SOURCES):
        errs.append(forbidden("spec.persistentvolumesource",
                              "spec.persistentvolumesource is immutable after creation"))
    if nspec.get("volumeMode") != ospec.get("volumeMode"):
        errs.append(invalid("volumeMode", nspec.get("volumeMode"), FIELD_IMMUTABLE_ERROR_MSG))
    return errs


def validate_pv_status(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    return []


def _provisioner(p: Any) -> list[Cause]:
    if not p:
        return [required("provisioner", "")]
    p = str(p)
    errs: list[Cause] = []
    if len(p) > 63:
        errs.append(too_long("provisioner", 63))
    # ValidateProvisionerName: a qualified name, checked lower-cased
    lower = p.lower()
    errs.extend(invalid("provisioner", lower, msg) for msg in is_qualified_name(lower))
    return errs


def validate_storage_class_create(obj: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False)
    errs.extend(_provisioner(obj.get("provisioner")))
    params = _m(obj.get("parameters"))
    total = sum(len(k) + len(str(v)) for k, v in params.items())
    if len(params) > 512:
        errs.append(too_long("parameters", 512))
    if total > 256 * 1024:
        errs.append(too_long("parameters", 256 * 1024))
    for k in params:
        if not k:
            errs.append(invalid("parameters", k, "field can not be empty."))
    policy = obj.get("reclaimPolicy")
    if policy is not None and policy not in ("Delete", "Retain"):
        errs.append(not_supported("reclaimPolicy", policy, ("Delete", "Retain")))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errs.append(required("volumeBindingMode", ""))
    elif mode not in BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    return errs


def validate_storage_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(validate_storage_class_create(new))
    for key in ("parameters", "provisioner", "reclaimPolicy"):
        if (new.get(key) or None) != (old.get(key) or None):
            errs.append(invalid(key, new.get(key), FIELD_IMMUTABLE_ERROR_MSG))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(invalid("volumeBindingMode", new.get("volumeBindingMode"),
                            FIELD_IMMUTABLE_ERROR_MSG))
    return errs


# --- strategy ------------------------------------------------------------------------------

def prepare_pv_status(new: Obj, old: Mapping[str, Any] | None, now: str) -> None:
    """PersistentVolume phase transitions are stamped (lastPhaseTransitionTime, GA in 1.31)."""
    status = _d(new, "status")
    old_phase = _m((old or {}).get("status")).get("phase") if old is not None else None
    if old is None or status.get("phase") != old_phase:
        status["lastPhaseTransitionTime"] = now
        _order(status, _PV_STATUS)
