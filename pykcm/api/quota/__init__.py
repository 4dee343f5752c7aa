"""Resource quota evaluation shared by the resourcequota controller and quota admission.

Role: what ``k8s.io/apiserver/pkg/quota/v1`` and
``k8s.io/kubernetes/pkg/quota/v1`` are upstream: the usage of an object per
resource name (``evaluators``), the scopes a quota selects objects by, the
ResourceList arithmetic and the sum of a namespace's usage a quota tracks.

Data flow::

    object (wire-form dict) ── Evaluator.usage() ──► ResourceList {name: Quantity}
    quota spec.hard + scopes ── calculate_usage(registry, list_by_namespace) ──► status.used
    admission: Evaluator.handles(attrs) → matches(quota) → constraints → usage delta

Both layers import it from here (pykcm.api): the controller lists objects from
its informers' caches, the API server from its store; the evaluators never
know which.
"""

from pykcm.api.quota.evaluator import (
    Attributes,
    Evaluator,
    ListByNamespace,
    ObjectCountEvaluator,
    object_count_resource_name,
    scope_selectors_of,
)
from pykcm.api.quota.registry import Registry, calculate_usage, new_registry
from pykcm.api.quota.resources import (
    ResourceList,
    add,
    equals,
    from_wire,
    is_negative,
    less_than_or_equal,
    mask,
    pretty_print,
    remove_zeros,
    subtract,
    subtract_non_negative,
    to_wire,
)

__all__ = [
    "Attributes",
    "Evaluator",
    "ListByNamespace",
    "ObjectCountEvaluator",
    "Registry",
    "ResourceList",
    "add",
    "calculate_usage",
    "equals",
    "from_wire",
    "is_negative",
    "less_than_or_equal",
    "mask",
    "new_registry",
    "object_count_resource_name",
    "pretty_print",
    "remove_zeros",
    "scope_selectors_of",
    "subtract",
    "subtract_non_negative",
    "to_wire",
]
