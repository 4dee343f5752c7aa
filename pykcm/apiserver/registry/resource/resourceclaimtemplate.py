"""resource.k8s.io/v1 ResourceClaimTemplates (kube-apiserver
``pkg/registry/resource/resourceclaimtemplate``): stored with the requests' defaults (device_requests.py), printer (Name, Age).

Deviation: only the object metadata is validated (upstream checks the claim spec inside);
pykcm's controllers do not make claims from templates (no resourceclaim controller).
"""

from __future__ import annotations

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.resource.device_requests import default_device_claim
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["ResourceClaimTemplateStrategy"]


@register
class ResourceClaimTemplateStrategy(Strategy):
    group = "resource.k8s.io"
    printer = pr.Printer((pr.NAME_COLUMN, pr.AGE_COLUMN), lambda obj, now: pr.Row(
        [pr.object_name(obj), pr.age(obj, now)]))
    kind = "ResourceClaimTemplate"

    def default(self, obj: Obj, *, create: bool) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("metadata", {})  # (the template's ObjectMeta, not omitempty)
            default_device_claim(pr.as_dict(spec.get("spec")).get("devices"))
