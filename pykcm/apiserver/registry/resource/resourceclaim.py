"""resource.k8s.io/v1 ResourceClaims (kube-apiserver ``pkg/registry/resource/resourceclaim``):
stored, the spec/status split, printer.

- the requests' defaults (device_requests.py); create empties the status, the main resource keeps it, /status writes it;
- printer: Name, State (deleted / pending / allocated, reserved, as kubectl shows it), Age.

Deviation: only the object metadata is validated (upstream checks the device requests,
constraints, configuration and the allocation); nothing allocates claims in pykcm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.apiserver.registry import printers as pr
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.resource.device_requests import default_device_claim
from pykcm.apiserver.registry.strategy import Obj, Strategy

__all__ = ["ResourceClaimStrategy"]

_COLUMNS: Final = (
    pr.NAME_COLUMN,
    pr.column("State", "string",
              "A summary of the current state (allocated, pending, reserved, etc.)."),
    pr.AGE_COLUMN,
)


def claim_state(obj: Mapping[str, Any]) -> str:
    states = []
    deleting = bool(pr.as_dict(obj.get("metadata")).get("deletionTimestamp"))
    if deleting:
        states.append("deleted")
    status = pr.as_dict(obj.get("status"))
    if status.get("allocation") is None:
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if pr.as_list(status.get("reservedFor")):
            states.append("reserved")
    return ",".join(states)


def _row(obj: Mapping[str, Any], now: int) -> pr.Row:
    return pr.Row([pr.object_name(obj), claim_state(obj), pr.age(obj, now)])


@register
class ResourceClaimStrategy(Strategy):
    group = "resource.k8s.io"
    kind = "ResourceClaim"
    printer = pr.Printer(_COLUMNS, _row)

    def default(self, obj: Obj, *, create: bool) -> None:
        default_device_claim(pr.as_dict(obj.get("spec")).get("devices"))

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}  # (a struct without omitempty)
