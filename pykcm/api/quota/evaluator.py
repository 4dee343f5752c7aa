"""The Evaluator contract, quota scopes and the generic object-count evaluator.

Upstream: ``k8s.io/apiserver/pkg/quota/v1/interfaces.go`` and
``generic/evaluator.go``. An evaluator knows one group/resource: which quota
resource names it tracks (``matching_resources``), whether an object falls in a
quota's scopes, the object's usage, and which admission requests change usage
(``handles``). ``usage_stats`` sums the usage of a namespace's objects, listed
through a function the caller supplies (the controller: its informer cache;
the API server: its store), so the evaluators stay free of I/O.

Objects are wire-form dicts. A scope selector requirement is the wire form of
``ScopedResourceSelectorRequirement`` (``{"scopeName", "operator", "values"}``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pykcm.api.quantity import DECIMAL_SI, Quantity
from pykcm.api.quota.resources import ResourceList, add, zero_list

__all__ = [
    "Attributes",
    "Evaluator",
    "ListByNamespace",
    "ObjectCountEvaluator",
    "matches_scope_selector_values",
    "object_count_resource_name",
    "scope_selectors_of",
]

ListByNamespace = Callable[[str], Iterable[Mapping[str, Any]]]
"""The objects of one resource in a namespace (a cache or a store)."""

ONE = Quantity(Decimal(1), DECIMAL_SI)


@dataclass(frozen=True, slots=True)
class Attributes:
    """What quota admission knows of a request (admission.Attributes, the parts it reads)."""

    operation: str  # "CREATE" | "UPDATE" | "DELETE" | "CONNECT"
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    obj: Mapping[str, Any] | None
    old_obj: Mapping[str, Any] | None = None


def object_count_resource_name(group: str, resource: str) -> str:
    """``count/<resource>`` for the core group, ``count/<resource>.<group>`` otherwise."""
    return f"count/{resource}" if not group else f"count/{resource}.{group}"


def scope_selectors_of(quota: Mapping[str, Any]) -> list[dict[str, Any]]:
    """spec.scopes (as Exists requirements) followed by spec.scopeSelector's expressions."""
    spec = quota.get("spec") or {}
    out: list[dict[str, Any]] = [{"scopeName": s, "operator": "Exists"}
                                 for s in spec.get("scopes") or ()]
    out.extend(dict(r) for r in (spec.get("scopeSelector") or {}).get("matchExpressions") or ())
    return out


def matches_scope_selector_values(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A scope selector requirement as a label selector over ``{scopeName: value}``."""
    key = selector.get("scopeName") or ""
    op = selector.get("operator")
    values = selector.get("values") or ()
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def _intersection(a: Iterable[str], b: Iterable[str]) -> list[str]:
    keep = set(b)
    return [x for x in a if x in keep]


class Evaluator:
    """The usage of one group/resource; subclasses override what differs."""

    group: str = ""
    resource: str = ""

    def __init__(self, list_by_namespace: ListByNamespace | None = None) -> None:
        self.list_by_namespace = list_by_namespace

    def group_resource(self) -> tuple[str, str]:
        return self.group, self.resource

    def constraints(self, required: Sequence[str], obj: Mapping[str, Any]) -> str | None:
        """Why the object cannot be admitted under a quota tracking ``required`` (or None)."""
        return None

    def handles(self, a: Attributes) -> bool:
        return a.operation == "CREATE" and not a.subresource

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        raise NotImplementedError

    def matches_scope(self, selector: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
        """Whether the object is in the scope (resources without scopes: never)."""
        return False

    def matches(self, quota: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
        """Whether the quota tracks this object: a hard resource of ours and every scope."""
        hard = ((quota.get("status") or {}).get("hard") or {}).keys()
        if not self.matching_resources(hard):
            return False
        return all(self.matches_scope(s, obj) for s in scope_selectors_of(quota))

    def matching_scopes(self, obj: Mapping[str, Any],
                        selectors: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return []

    def usage(self, obj: Mapping[str, Any]) -> ResourceList:
        raise NotImplementedError

    def usage_stats(self, namespace: str, resources: Sequence[str], scopes: Sequence[str],
                    scope_selector: Mapping[str, Any] | None) -> ResourceList:
        """The summed usage of the namespace's objects in the quota's scopes (CalculateUsageStats)."""
        used = zero_list(resources)
        if self.list_by_namespace is None:
            return used
        selectors: list[Mapping[str, Any]] = [{"scopeName": s, "operator": "Exists"} for s in scopes]
        selectors.extend((scope_selector or {}).get("matchExpressions") or ())
        for obj in self.list_by_namespace(namespace):
            if all(self.matches_scope(s, obj) for s in selectors):
                used = add(used, self.usage(obj))
        return used


class ObjectCountEvaluator(Evaluator):
    """``count/<resource>.<group>`` (plus a legacy alias such as ``configmaps``): 1 per object."""

    def __init__(self, group: str, resource: str, list_by_namespace: ListByNamespace | None = None,
                 alias: str = "") -> None:
        super().__init__(list_by_namespace)
        self.group, self.resource = group, resource
        self.resource_names = [object_count_resource_name(group, resource)]
        if alias:
            self.resource_names.append(alias)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return _intersection(names, self.resource_names)

    def usage(self, obj: Mapping[str, Any]) -> ResourceList:
        return {n: ONE for n in self.resource_names}
