"""core/v1 ReplicationControllers (pkg/registry/core/replicationcontroller): defaults (the
selector and labels from the template's labels, one replica), validation, the
ReplicaSet's status rules, printer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.labels import selector_from_label_selector
from pykcm.api.validation import Cause, required, validate_object_meta_update
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.apps import workload_validation as wv
from pykcm.apiserver.registry.apps.replicaset import validate_status as replicaset_status
from pykcm.apiserver.registry.core.podspec_defaults import default_pod_template
from pykcm.apiserver.registry.defaulting import (
    REPLICASET_SPEC_ORDER,
    child_dict,
    go_order_object,
    set_default,
)
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy
from pykcm.apiserver.registry.validation import as_map, nonnegative_field, validate_meta

Obj = dict[str, Any]

# --- defaults --------------------------------------------------------------------------

def _default_replication_controller(obj: Obj, create: bool) -> None:
    """SetDefaults_ReplicationController: the selector and the labels default to the
    template's labels; one replica."""
    spec = child_dict(obj, "spec")
    tmpl = spec.get("template")
    if isinstance(tmpl, dict):
        tlabels = (tmpl.get("metadata") or {}).get("labels") if isinstance(
            tmpl.get("metadata"), dict) else None
        if tlabels:
            if not spec.get("selector"):
                spec["selector"] = dict(tlabels)
            meta = child_dict(obj, "metadata")
            if not meta.get("labels"):
                meta["labels"] = dict(tlabels)
        default_pod_template(tmpl)
    set_default(spec, "replicas", 1)
    REPLICASET_SPEC_ORDER.apply(spec)
    child_dict(obj, "status").setdefault("replicas", 0)


# --- validation ------------------------------------------------------------------------

def _validate_rc_spec(spec: Mapping[str, Any]) -> list[Cause]:
    """ValidateReplicationControllerSpec: a non-empty selector matching the template."""
    errs = nonnegative_field(spec, "minReadySeconds", "spec.minReadySeconds")
    sel = as_map(spec.get("selector"))
    if not sel:
        errs.append(required("spec.selector", ""))
    errs.extend(nonnegative_field(spec, "replicas", "spec.replicas"))
    tmpl = spec.get("template")
    if tmpl is None:
        errs.append(required("spec.template", ""))
        return errs
    compiled = selector_from_label_selector({"matchLabels": dict(sel)}) if sel else None
    errs.extend(wv.validate_template_for_replicaset(as_map(tmpl), compiled, "spec.template",
                                                  "ReplicationController"))
    return errs


def _create_replication_controller(obj: Mapping[str, Any]) -> list[Cause]:
    return (validate_meta(obj, True)
            + _validate_rc_spec(as_map(obj.get("spec"))))


def _update_replication_controller(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_rc_spec(as_map(new.get("spec"))))
    return errs


# --- printer ---------------------------------------------------------------------------

_REPLICATION_CONTROLLER_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Desired", "integer",
         "Replicas is the number of desired replicas. This is a pointer to distinguish "
         "between explicit zero and unspecified. Defaults to 1. More info: https://kuberne"
         "tes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
         "replicationcontroller"),
    pr.column("Current", "integer",
         "Replicas is the most recently observed number of replicas. More info: https://ku"
         "bernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-"
         "replicationcontroller"),
    pr.column("Ready", "integer",
         "The number of ready replicas for this replication controller."),
    pr.AGE_COLUMN,
    pr.column("Containers", "string",
         "Names of each container in the template.", priority=1),
    pr.column("Images", "string",
         "Images referenced by each container in the template.", priority=1),
    pr.column("Selector", "string",
         "Selector is a label query over pods that should match the Replicas count. If "
         "Selector is empty, it is defaulted to the labels present on the Pod template. "
         "Label keys and values that must match in order to be controlled by this "
         "replication controller, if empty defaulted to labels on Pod template. More info:"
         " https://kubernetes.io/docs/concepts/overview/working-with-"
         "objects/labels/#label-selectors", priority=1),
)


def _replication_controller_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    names, images = pr.layout_container_cells(pr.pod_template_spec(obj).get("containers"))
    return pr.Row([
        pr.object_name(obj), pr.as_int(spec.get("replicas"), 1), pr.as_int(status.get("replicas")),
        pr.as_int(status.get("readyReplicas")), pr.age(obj, now), names, images,
        pr.format_labels(spec.get("selector")),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class ReplicationControllerStrategy(Strategy):
    kind = "ReplicationController"
    printer = pr.Printer(_REPLICATION_CONTROLLER_COLUMNS, _replication_controller_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_replication_controller(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_replication_controller(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_replication_controller(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + replicaset_status(new, old)
