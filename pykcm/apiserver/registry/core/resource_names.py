"""Resource names and quantities of ResourceLists, as core validation checks them
(``pkg/apis/core/validation``: validateResourceName, ValidateResourceQuotaResourceName,
validateContainerResourceName, ValidateResourceQuantityValue), shared by the
ResourceQuota and LimitRange strategies; and the canonical form they are stored in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pykcm.api.quantity import Quantity
from pykcm.api.validation import Cause, invalid, is_qualified_name

__all__ = ["canonical_resource_list", "validate_container_resource_name",
           "validate_quantity_value", "validate_quota_resource_name", "validate_resource_name"]

_STANDARD: Final = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers"})
_STANDARD_QUOTA: Final = _STANDARD - {"storage"}
_CONTAINER: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_INTEGER: Final = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers",
                             "secrets", "configmaps", "persistentvolumeclaims",
                             "services.nodeports", "services.loadbalancers"})


def _hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def validate_resource_name(name: str, path: str) -> list[Cause]:
    errs = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name and not (name in _STANDARD or _hugepages(name)
                                or name.startswith("requests.hugepages-")):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    return errs


def validate_quota_resource_name(name: str, path: str) -> list[Cause]:
    errs = validate_resource_name(name, path)
    if "/" not in name and not (name in _STANDARD_QUOTA or name.startswith("requests.hugepages-")):
        errs.append(invalid(path, name, "must be a standard resource for quota"))
    return errs


def validate_container_resource_name(name: str, path: str) -> list[Cause]:
    errs = validate_resource_name(name, path)
    if "/" not in name and not (name in _CONTAINER or _hugepages(name)):
        errs.append(invalid(path, name, "must be a standard resource for containers"))
    return errs


def _is_extended(name: str) -> bool:
    return ("/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")
            and not is_qualified_name("requests." + name))


def validate_quantity_value(name: str, value: Any, path: str) -> list[Cause]:
    q = Quantity.of(value)
    errs: list[Cause] = []
    if q.sign() < 0:
        errs.append(invalid(path, str(q), "must be greater than or equal to 0"))
    if (name in _INTEGER or _is_extended(name)) and (q.value * 1000) % 1000 != 0:
        errs.append(invalid(path, str(q), "must be an integer"))
    return errs


def canonical_resource_list(rl: Mapping[str, Any]) -> dict[str, Any]:
    """Each quantity in Go's canonical form (malformed ones left for validation to refuse),
    keys sorted as Go encodes a map."""
    out: dict[str, Any] = {}
    for k, v in sorted(rl.items()):
        q = Quantity.parse(v)
        out[k] = str(q) if q is not None else v
    return out
