"""resource.k8s.io/v1 DeviceClasses (kube-apiserver ``pkg/registry/resource/deviceclass``):
stored, generation, printer (Name, Age).

Deviation: only the object metadata is validated (upstream also checks the CEL selectors,
the opaque configuration and the extended resource name); no scheduler or driver uses
them in pykcm.
"""

from __future__ import annotations

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.strategy import Strategy

__all__ = ["DeviceClassStrategy"]


@register
class DeviceClassStrategy(Strategy):
    group = "resource.k8s.io"
    printer = pr.Printer((pr.NAME_COLUMN, pr.AGE_COLUMN), lambda obj, now: pr.Row(
        [pr.object_name(obj), pr.age(obj, now)]))
    kind = "DeviceClass"
