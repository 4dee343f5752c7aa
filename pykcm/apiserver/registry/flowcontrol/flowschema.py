"""flowcontrol.apiserver.k8s.io/v1 FlowSchemas (kube-apiserver
``pkg/registry/flowcontrol/flowschema``): stored, with the bootstrap ones and printer.

- the bootstrap FlowSchemas (bootstrap.py) are created at start with their Dangling
  condition (post_start_objects.py);
- create drops the status; generation moves on spec changes; /status writes the status;
- printer: Name, PriorityLevel, MatchingPrecedence, DistinguisherMethod, Age, MissingPL
  (the Dangling condition's status, ``?`` without one).

Deviations: stored, not used: pykcm's request path does not classify requests by
FlowSchema (flow_control.py); only the object metadata is validated (upstream checks
subjects, rules, precedence and the reserved names); nothing writes the Dangling condition
of a FlowSchema created later; a list's Table keeps the store's order (upstream sorts by
matching precedence).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.field_docs import field_doc
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["FlowSchemaStrategy"]

_V1: Final = "flowcontrol.v1."
_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("PriorityLevel", "string",
              field_doc(_V1 + "PriorityLevelConfigurationReference", "name")),
    pr.column("MatchingPrecedence", "string", field_doc(_V1 + "FlowSchemaSpec",
                                                        "matchingPrecedence")),
    pr.column("DistinguisherMethod", "string", field_doc(_V1 + "FlowSchemaSpec",
                                                         "distinguisherMethod")),
    pr.AGE_COLUMN,
    pr.column("MissingPL", "string",
              "references a broken or non-existent PriorityLevelConfiguration"),
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    method = spec.get("distinguisherMethod")
    missing = "?"
    for c in pr.as_list(pr.as_dict(obj.get("status")).get("conditions")):
        if pr.as_dict(c).get("type") == "Dangling":
            missing = pr.as_str(pr.as_dict(c).get("status"))
            break
    return pr.Row([pr.object_name(obj),
                   pr.as_str(pr.as_dict(spec.get("priorityLevelConfiguration")).get("name")),
                   pr.as_int(spec.get("matchingPrecedence")),
                   pr.as_str(pr.as_dict(method).get("type")) if method is not None else "<none>",
                   pr.age(obj, now), missing])


@register
class FlowSchemaStrategy(Strategy):
    group = "flowcontrol.apiserver.k8s.io"
    kind = "FlowSchema"
    printer = pr.Printer(_COLUMNS, _row)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # the status is a struct without omitempty: an empty one is written out
        obj["status"] = {}
