"""flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfigurations (kube-apiserver
``pkg/registry/flowcontrol/prioritylevelconfiguration``): stored, with the bootstrap ones
and printer.

- the bootstrap priority levels (bootstrap.py) are created at start with an empty status,
  as kube-apiserver shows them (post_start_objects.py);
- create drops the status; generation moves on spec changes; /status writes the status;
- printer: Name, Type, NominalConcurrencyShares, Queues, HandSize, QueueLengthLimit, Age
  (``<none>`` where the level has no such setting).

Deviations: stored, not used: pykcm's request path has its own two levels
(flow_control.py); only the object metadata is validated (upstream checks the limits, the
queuing parameters and the reserved names); no defaults are applied to user objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.field_docs import field_doc
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["PriorityLevelConfigurationStrategy"]

_V1: Final = "flowcontrol.v1."
_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Type", "string", field_doc(_V1 + "PriorityLevelConfigurationSpec", "type")),
    pr.column("NominalConcurrencyShares", "string",
              field_doc(_V1 + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares")),
    pr.column("Queues", "string", field_doc(_V1 + "QueuingConfiguration", "queues")),
    pr.column("HandSize", "string", field_doc(_V1 + "QueuingConfiguration", "handSize")),
    pr.column("QueueLengthLimit", "string",
              field_doc(_V1 + "QueuingConfiguration", "queueLengthLimit")),
    pr.AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    limited = spec.get("limited")
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand: Any = "<none>"
    length: Any = "<none>"
    if isinstance(limited, dict):
        shares = pr.as_int(limited.get("nominalConcurrencyShares"))
        response = pr.as_dict(limited.get("limitResponse"))
        queuing = response.get("queuing")
        if isinstance(queuing, dict):
            queues = pr.as_int(queuing.get("queues"))
            hand = pr.as_int(queuing.get("handSize"))
            length = pr.as_int(queuing.get("queueLengthLimit"))
    return pr.Row([pr.object_name(obj), pr.as_str(spec.get("type")), shares, queues, hand,
                   length, pr.age(obj, now)])


@register
class PriorityLevelConfigurationStrategy(Strategy):
    group = "flowcontrol.apiserver.k8s.io"
    kind = "PriorityLevelConfiguration"
    printer = pr.Printer(_COLUMNS, _row)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        # the status is a struct without omitempty: an empty one is written out
        obj["status"] = {}
