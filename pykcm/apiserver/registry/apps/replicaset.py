"""apps/v1 ReplicaSets (pkg/registry/apps/replicaset): defaults, validation, status rules and
printer.

- Defaults: one replica, the pod template's defaults, status.replicas 0.
- Validation: selector and template (shared with Deployments and
  ReplicationControllers: ``validation._validate_template_for_replicaset``), the
  selector immutable; status counts non-negative and not above status.replicas
  (the status rules ReplicationControllers share).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.validation import Cause, go_label_selector, invalid, validate_object_meta_update
from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.apps import workload_validation as wv
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

def _default_replicaset(obj: Obj, create: bool) -> None:
    spec = child_dict(obj, "spec")
    set_default(spec, "replicas", 1)
    default_pod_template(child_dict(spec, "template"))
    REPLICASET_SPEC_ORDER.apply(spec)
    child_dict(obj, "status").setdefault("replicas", 0)


# --- validation ------------------------------------------------------------------------

def _validate_replicaset_spec(spec: Mapping[str, Any]) -> list[Cause]:
    errs = nonnegative_field(spec, "replicas", "spec.replicas")
    errs.extend(nonnegative_field(spec, "minReadySeconds", "spec.minReadySeconds"))
    # Upstream's ReplicaSet message says "deployment" too.
    sel_errs, compiled = wv.selector_and_template(spec, "deployment", require=True)
    errs.extend(sel_errs)
    if compiled is None:
        errs.append(invalid("spec.selector", go_label_selector(as_map(spec.get("selector"))),
                            "invalid label selector"))
    else:
        errs.extend(wv.validate_template_for_replicaset(as_map(spec.get("template")), compiled,
                                                      "spec.template", "ReplicaSet"))
    return errs


def _create_replicaset(obj: Mapping[str, Any]) -> list[Cause]:
    return validate_meta(obj, True) + _validate_replicaset_spec(as_map(obj.get("spec")))


def _update_replicaset(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs.extend(_validate_replicaset_spec(as_map(new.get("spec"))))
    errs.extend(wv.selector_immutable(new, old))
    return errs


def _status_replicaset(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    s = as_map(new.get("status"))
    errs = wv.status_nonnegative(s, ("replicas", "fullyLabeledReplicas", "readyReplicas",
                              "availableReplicas", "observedGeneration"))
    msg = "cannot be greater than status.replicas"
    errs.extend(wv.not_greater(s, "fullyLabeledReplicas", "replicas", msg))
    errs.extend(wv.not_greater(s, "readyReplicas", "replicas", msg))
    errs.extend(wv.not_greater(s, "availableReplicas", "replicas", msg))
    errs.extend(wv.not_greater(s, "availableReplicas", "readyReplicas",
                             "cannot be greater than readyReplicas"))
    return errs


# --- printer ---------------------------------------------------------------------------

_REPLICA_SET_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Desired", "integer",
         "Replicas is the number of desired pods. This is a pointer to distinguish between "
         "explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/"
         "concepts/workloads/controllers/replicaset"),
    pr.column("Current", "integer",
         "Replicas is the most recently observed number of non-terminating pods. More info: "
         "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
    pr.column("Ready", "integer",
         "The number of non-terminating pods targeted by this ReplicaSet with a Ready "
         "Condition."),
    pr.AGE_COLUMN,
    pr.column("Containers", "string", pr.CONTAINERS_DESCRIPTION, priority=1),
    pr.column("Images", "string", pr.IMAGES_DESCRIPTION, priority=1),
    pr.column("Selector", "string",
         "Selector is a label query over pods that should match the replica count. Label "
         "keys and values that must match in order to be controlled by this replica set. "
         "It must match the pod template's labels. More info: " + pr.LABEL_SELECTORS_URL,
         priority=1),
)


def _replica_set_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    status = pr.as_dict(obj.get("status"))
    names, images = pr.layout_container_cells(pr.pod_template_spec(obj).get("containers"))
    return pr.Row([
        pr.object_name(obj), pr.as_int(spec.get("replicas"), 1), pr.as_int(status.get("replicas")),
        pr.as_int(status.get("readyReplicas")), pr.age(obj, now),
        names, images, pr.format_label_selector(spec.get("selector")),
    ])


# --- the strategy ----------------------------------------------------------------------

validate_status = _status_replicaset


@register
class ReplicaSetStrategy(Strategy):
    group = "apps"
    kind = "ReplicaSet"
    printer = pr.Printer(_REPLICA_SET_COLUMNS, _replica_set_row)

    def default(self, obj: Obj, *, create: bool) -> None:
        _default_replicaset(obj, create)
        go_order_object(obj)

    def validate_create(self, obj: Obj) -> list[Cause]:
        return _create_replicaset(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return _update_replicaset(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[Cause]:
        return super().validate_status_update(new, old) + _status_replicaset(new, old)
