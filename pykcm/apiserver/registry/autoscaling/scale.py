"""autoscaling/v1 Scale: the object the scale subresources answer with (deployments/scale,
replicasets/scale, ...). Not a stored resource: only its printer (``kubectl get
--subresource=scale``) is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]

# --- printer ---------------------------------------------------------------------------

_SCALE_COLUMNS: Final = (
    pr.column("Name", "string", pr.NAME_DESCRIPTION),
    pr.column("Desired", "integer",
         "replicas is the desired number of instances for the scaled object."),
    pr.column("Available", "integer",
         "replicas is the actual number of observed instances of the scaled object."),
    pr.AGE_COLUMN,
)


def _scale_row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([
        pr.object_name(obj), pr.as_int(pr.as_dict(obj.get("spec")).get("replicas")),
        pr.as_int(pr.as_dict(obj.get("status")).get("replicas")), pr.age(obj, now),
    ])


# --- the strategy ----------------------------------------------------------------------

@register
class ScaleStrategy(Strategy):
    group = "autoscaling"
    kind = "Scale"
    printer = pr.Printer(_SCALE_COLUMNS, _scale_row)
