"""Which nodes a pod may run on: node selectors, required node affinity, taints and tolerations.

The counterpart of ``k8s.io/component-helpers/scheduling/corev1`` (and its
``nodeaffinity`` package), ``v1.Toleration.ToleratesTaint`` and
``AddOrUpdateTolerationInPodSpec``, on wire-form dicts. The DaemonSet
controller decides with these where its pods should run, exactly as
kube-scheduler later filters them.

Rules (upstream's):

- ``nodeSelector``: every label must be present with that value;
- required node affinity: the terms are ORed, a term's expressions ANDed; an
  empty term matches nothing (and no terms at all: nothing); a term with an
  invalid expression (unknown operator, ``In`` without values, ``Gt`` with a
  non-integer) does not match; ``matchFields`` only know ``In``/``NotIn`` with
  exactly one value and the field ``metadata.name``;
- a toleration matches a taint when its effect is empty or equal, its key is
  empty or equal, and with ``Exists`` (or an empty key) any value, with
  ``Equal`` (or no operator) the same value; ``Gt``/``Lt`` need the
  TaintTolerationComparisonOperators feature, off by default in v1.36.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from pykcm.api.labels import (
    DOES_NOT_EXIST,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_IN,
    LabelSelector,
    Requirement,
    SelectorParseError,
    new_requirement,
)

__all__ = [
    "add_or_update_toleration",
    "find_matching_untolerated_taint",
    "match_node_selector_terms",
    "required_node_affinity_matches",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
]

_OPERATORS: Final = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS,
                     "DoesNotExist": DOES_NOT_EXIST, "Gt": GREATER_THAN, "Lt": LESS_THAN}


def toleration_tolerates_taint(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``v1.Toleration.ToleratesTaint`` (comparison operators disabled)."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    op = toleration.get("operator") or ""
    if op in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return op == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Mapping[str, Any]],
                               taint: Mapping[str, Any]) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint``."""
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


def find_matching_untolerated_taint(
        taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]],
        inclusion_filter: Callable[[Mapping[str, Any]], bool] | None = None,
) -> Mapping[str, Any] | None:
    """The first taint (of those ``inclusion_filter`` keeps) no toleration tolerates."""
    for taint in taints:
        if inclusion_filter is not None and not inclusion_filter(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def _term_matches(term: Mapping[str, Any], node_labels: Mapping[str, str],
                  node_name: str) -> bool:
    exprs = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if exprs:
        reqs: list[Requirement] = []
        for e in exprs:
            op = _OPERATORS.get(str(e.get("operator") or ""))
            if op is None:
                return False  # a parse error: the term matches nothing
            try:
                reqs.append(new_requirement(str(e.get("key") or ""), op, e.get("values") or ()))
            except SelectorParseError:
                return False
        if not LabelSelector(reqs).matches(node_labels):
            return False
    if fields:
        node_fields = {"metadata.name": node_name} if node_name else {}
        ok = True
        for f in fields:
            op, values = f.get("operator"), list(f.get("values") or ())
            if op not in ("In", "NotIn") or len(values) != 1:
                return False  # a parse error
            got = node_fields.get(str(f.get("key") or ""), "")
            if (got == values[0]) != (op == "In"):
                ok = False
        # As upstream: fields are only checked when the node has a name.
        if node_fields and not ok:
            return False
    return True


def match_node_selector_terms(node: Mapping[str, Any],
                              node_selector: Mapping[str, Any] | None) -> bool:
    """Whether ``node`` matches a ``v1.NodeSelector`` (its terms ORed; empty ones skipped)."""
    if node_selector is None:
        return False
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = str(meta.get("name") or "")
    for term in node_selector.get("nodeSelectorTerms") or ():
        if not (term.get("matchExpressions") or term.get("matchFields")):
            continue
        if _term_matches(term, labels, name):
            return True
    return False


def required_node_affinity_matches(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``: the pod's nodeSelector
    and its required node affinity both allow ``node``."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is not None:
        return match_node_selector_terms(node, required)
    return True


def _match_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "effect", "operator",
                                                               "value"))


def _semantic_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _match_toleration(a, b) and a.get("tolerationSeconds") == b.get("tolerationSeconds")


def add_or_update_toleration(spec: dict[str, Any], toleration: Mapping[str, Any]) -> bool:
    """Add ``toleration`` to a pod spec, or replace the one with the same key, effect,
    operator and value (upstream AddOrUpdateTolerationInPodSpec); False if already there."""
    current = list(spec.get("tolerations") or ())
    out: list[Any] = []
    updated = False
    for t in current:
        if _match_toleration(toleration, t):
            if _semantic_equal(toleration, t):
                return False
            out.append(dict(toleration))
            updated = True
            continue
        out.append(t)
    if not updated:
        out.append(dict(toleration))
    spec["tolerations"] = out
    return True
