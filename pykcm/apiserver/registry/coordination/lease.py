"""coordination.k8s.io/v1 Leases (pkg/registry/coordination/lease): validation and printer.

No defaults; updates need a resourceVersion (``require_rv`` in pykcm.api.resources).
"""

from __future__ import annotations

from typing import Any, Final

from pykcm.api.validation import Cause, invalid, validate_object_meta_update
from pykcm.apiserver.registry.lookup import register
from pykcm.apiserver.registry.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Obj,
    Printer,
    Row,
    age,
    as_dict,
    as_str,
    column,
    object_name,
)
from pykcm.apiserver.registry.strategy import Strategy


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _spec_errors(obj: Obj) -> list[Cause]:
    errs: list[Cause] = []
    spec = as_dict(obj.get("spec"))
    lds = _int(spec.get("leaseDurationSeconds"))
    if lds is not None and lds <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", lds, "must be greater than 0"))
    lt = _int(spec.get("leaseTransitions"))
    if lt is not None and lt < 0:
        errs.append(invalid("spec.leaseTransitions", lt, "must be greater than or equal to 0"))
    return errs


_COLUMNS: Final = (
    NAME_COLUMN,
    column("Holder", "string",
           "holderIdentity contains the identity of the holder of a current lease. If "
           "Coordinated Leader Election is used, the holder identity must be equal to the "
           "elected LeaseCandidate.metadata.name field."),
    AGE_COLUMN,
)


def _row(obj: Obj, now: int) -> Row:
    holder = as_str(as_dict(obj.get("spec")).get("holderIdentity"))
    return Row([object_name(obj), holder, age(obj, now)])


@register
class LeaseStrategy(Strategy):
    group = "coordination.k8s.io"
    kind = "Lease"
    printer = Printer(_COLUMNS, _row)

    def validate_create(self, obj: dict[str, Any]) -> list[Cause]:
        return super().validate_create(obj) + _spec_errors(obj)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        errs.extend(_spec_errors(new))
        return errs
