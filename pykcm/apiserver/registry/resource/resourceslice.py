"""resource.k8s.io/v1 ResourceSlices (kube-apiserver ``pkg/registry/resource/resourceslice``):
stored, generation, printer (Name, Node, Driver, Pool, Age).

Deviation: only the object metadata is validated (upstream checks the pool, devices,
node selection and their limits); no driver publishes slices in pykcm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.field_docs import field_doc
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

__all__ = ["ResourceSliceStrategy"]

_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("Node", "string", field_doc("resource.v1.ResourceSliceSpec", "nodeName")),
    pr.column("Driver", "string", field_doc("resource.v1.ResourceSliceSpec", "driver")),
    pr.column("Pool", "string", field_doc("resource.v1.ResourcePool", "name")),
    pr.AGE_COLUMN,
)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    spec = pr.as_dict(obj.get("spec"))
    return pr.Row([pr.object_name(obj), pr.as_str(spec.get("nodeName")),
                   pr.as_str(spec.get("driver")),
                   pr.as_str(pr.as_dict(spec.get("pool")).get("name")), pr.age(obj, now)])


@register
class ResourceSliceStrategy(Strategy):
    group = "resource.k8s.io"
    kind = "ResourceSlice"
    printer = pr.Printer(_COLUMNS, _row)
